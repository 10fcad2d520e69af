// SPDX-License-Identifier: MIT
/*
 * longjmp out of frames that record --call-sites enters through per-site stubs: every call
 * below is a direct call to a traced function. Round i calls lj_a -> lj_b -> lj_c -> lj_rec
 * K+1 levels deep (lj_rec(K) ... lj_rec(0)); at the bottom, when i % 3 is not 0, lj_rec(0)
 * longjmps, else it calls lj_leaf and every frame returns its value:
 *   - to the round (J < 0): its K + 4 traced frames never return;
 *   - to lj_rec(J) (0 < J <= K), which called setjmp before it called lj_rec(J - 1): the J
 *     frames below it never return, lj_rec(J) and every frame above it return.
 * The round then calls lj_after with the result, which the program checks (a wrong one prints a
 * line and exits 1):
 *   returned:                 i + K + 4 (lj_leaf's i + 1, one more per frame above lj_rec(0))
 *   longjmp'd to the round:   -(i + 1) (setjmp's value)
 *   longjmp'd to lj_rec(J):   -(i + 1) + K - J + 4
 *
 *   cs_longjmp all N K [J]    N rounds (i = 0..N-1); print "rounds N returned R longjmp J
 *                             sum S entered E" (E: calls of lj_ functions, counted by them)
 *   cs_longjmp serve K READY  create READY, run rounds until SIGTERM; print "served N bad B";
 *                             at SIGUSR1, create READY.more after 1000 more rounds
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static jmp_buf env, inner;
static int jump_level = -1;
static volatile sig_atomic_t stop, more;
static long sum, returned, jumped, bad;
static volatile long entered;   /* each lj_ function counts itself first (a rip-relative load) */

__attribute__((noinline)) int lj_leaf(int x) { entered++; return x + 1; }

__attribute__((noinline)) int lj_rec(int k, int x)
{
	int r;

	entered++;
	if (k == 0) {
		if (x % 3)
			longjmp(jump_level < 0 ? env : inner, x + 1);
		return lj_leaf(x);
	}
	if (k == jump_level) {
		int v = setjmp(inner);

		r = v ? -v : lj_rec(k - 1, x);
	} else {
		r = lj_rec(k - 1, x);
	}
	__asm__ volatile("" : "+r"(r));         /* a real call at each level, not a loop */
	return r + 1;
}

__attribute__((noinline)) int lj_c(int x, int k) { entered++; int r = lj_rec(k, x); __asm__ volatile("" : "+r"(r)); return r + 1; }
__attribute__((noinline)) int lj_b(int x, int k) { entered++; int r = lj_c(x, k); __asm__ volatile("" : "+r"(r)); return r + 1; }
__attribute__((noinline)) int lj_a(int x, int k) { entered++; int r = lj_b(x, k); __asm__ volatile("" : "+r"(r)); return r + 1; }
__attribute__((noinline)) void lj_after(int r) { entered++; sum += r; }

static void round_one(int i, int k)
{
	volatile int r;
	int v = setjmp(env);

	if (!v) {
		r = lj_a(i, k);
		if (i % 3 == 0)
			returned++;
		else
			jumped++;
	} else {
		r = -v;
		jumped++;
	}
	if (r != (i % 3 == 0 ? i + k + 4 : jump_level < 0 ? -(i + 1) : -(i + 1) + k - jump_level + 4) &&
	    bad++ < 5)
		fprintf(stderr, "cs_longjmp: round %d gave %d\n", i, r);
	lj_after(r);
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		more = 1;
	else
		stop = 1;
}

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "all")) {
		int n = atoi(argv[2]), k = atoi(argv[3]);

		jump_level = argc == 5 ? atoi(argv[4]) : -1;
		if (jump_level == 0 || jump_level > k)
			return 2;

		for (int i = 0; i < n; i++)
			round_one(i, k);
		printf("rounds %d returned %ld longjmp %ld sum %ld entered %ld\n", n, returned, jumped, sum,
		       entered);
		return bad ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "serve")) {
		int k = atoi(argv[2]);
		long n = 0, mark = -1;
		char path[4096];

		signal(SIGTERM, on_signal);
		signal(SIGUSR1, on_signal);
		snprintf(path, sizeof(path), "%s.more", argv[3]);
		if (touch(argv[3]))
			return 2;
		while (!stop) {
			round_one((int)(n++ % 300), k);
			if (more && mark < 0)
				mark = n;
			if (mark >= 0 && n == mark + 1000 && touch(path))
				return 2;
		}
		printf("served %ld bad %ld\n", n, bad);
		return bad ? 1 : 0;
	}
	fprintf(stderr, "usage: cs_longjmp all N K [J] | serve K READY\n");
	return 2;
}
