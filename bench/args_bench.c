// SPDX-License-Identifier: MIT
/*
 * args_bench N ROUNDS: the target of bench/bench_args.sh. Three identical functions that start
 * with a 5-byte nop (the cheapest probe site, kernel-facts: so the figure is the record, not the
 * probe), called N times each in turn for ROUNDS rounds with a string and an int; prints the
 * median ns per call of each: h_plain (traced, no spec), h_int (-A arg1/x,arg2/i32, -R
 * retval/i32: registers only), h_str (-A arg1/s,arg2/i32, -R retval/i32: a string read at
 * the call). Interleaving the three in one session cancels the host's drift.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOP5_FUNCTION(name)                                                              \
	__asm__(".pushsection .text\n.globl " #name "\n.type " #name ", @function\n" #name \
		":\n\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\tmov %esi, %eax\n\tret\n"          \
		".size " #name ", .-" #name "\n.popsection\n");                                 \
	int name(const char *s, int i)

NOP5_FUNCTION(h_plain);
NOP5_FUNCTION(h_int);
NOP5_FUNCTION(h_str);

#define MAX_ROUNDS 101

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	static const char s[] = "SELECT * FROM t WHERE a = ?";
	double plain[MAX_ROUNDS], ints[MAX_ROUNDS], strs[MAX_ROUNDS];
	int n = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 15;
	volatile int sink = 0;

	if (n < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: args_bench N ROUNDS (1-%d)\n", MAX_ROUNDS);
		return 2;
	}
	for (int w = 0; w < 1000; w++)  /* the first hits turn the nops into trampoline calls */
		sink += h_plain(s, w) + h_int(s, w) + h_str(s, w);
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns(), t1, t2, t3;

		for (int k = 0; k < n; k++)
			sink += h_plain(s, k);
		t1 = now_ns();
		for (int k = 0; k < n; k++)
			sink += h_int(s, k);
		t2 = now_ns();
		for (int k = 0; k < n; k++)
			sink += h_str(s, k);
		t3 = now_ns();
		plain[r] = (t1 - t0) / n;
		ints[r] = (t2 - t1) / n;
		strs[r] = (t3 - t2) / n;
	}
	printf("plain %.0f int %.0f str %.0f\n", median(plain, rounds), median(ints, rounds),
	       median(strs, rounds));
	return 0;
}
