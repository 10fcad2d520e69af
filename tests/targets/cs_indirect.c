// SPDX-License-Identifier: MIT
/*
 * Indirect call sites target (record --call-sites, user/patch/callsite_ind.h): traced
 * functions called through pointers, from sites of each form; each caller returns its
 * callee's result + 1 and the results are checked (a wrong redirection shows as a wrong
 * result, exit 1). The forms, as gcc -O1 emits them here (tests/e2e/test_record_call_sites_indirect.sh
 * checks them with objdump):
 *   via_disp32   call *0x88(%rdi)         a struct with more than 128 bytes before the pointer
 *   via_rip      call *g_ptr(%rip)        a global pointer
 *   in_rec       call *g_big+0x90(%rip)   recursion through a pointer, x levels deep
 *   via_reg      call *%rdi               a register: too short for a jmp, never redirected
 *   via_small    call *0x8(%rdi)          a disp8: too short, never redirected
 * The targets: in_mov (mov %edi,%eax first: the kernel single-steps its plain probe) x + 3,
 * in_sub (sub first) x + 4, and ut_add x + 5 (untraced by the test's filters); via_disp32 and
 * via_rip call traced and untraced targets through the same site.
 *
 *   cs_indirect all N          N rounds (below); in_rec(200) every 10th; print the sums
 *   cs_indirect serve READY    create READY, run rounds until SIGTERM; print "served N"
 *   cs_indirect time N         N calls of in_mov through via_rip's site; "ind N ns_per_call"
 *   cs_indirect gate FILE N    wait (up to 60 s) until FILE exists, then N rounds (no in_rec)
 * One round: via_disp32 -> in_mov, -> ut_add, -> in_sub; via_rip -> in_sub, -> ut_add;
 * via_reg -> in_mov; via_small -> in_sub: per round 3 via_disp32, 2 via_rip, 1 via_reg,
 * 1 via_small, 2 in_mov, 3 in_sub.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int in_mov(int x);
int in_sub(int x);

__asm__(
	".text\n"
	".globl in_mov\n.type in_mov,@function\nin_mov:\n"
	"	mov %edi, %eax\n	add $3, %eax\n	ret\n.size in_mov, .-in_mov\n"
	".globl in_sub\n.type in_sub,@function\nin_sub:\n"
	"	sub $0x18, %rsp\n	mov %edi, 8(%rsp)\n	mov 8(%rsp), %eax\n	add $4, %eax\n"
	"	add $0x18, %rsp\n	ret\n.size in_sub, .-in_sub\n");

struct big {
	char pad[0x88];
	int (*fn)(int);
	int (*rec)(int);
};

struct small {
	int (*a)(int);
	int (*b)(int);
};

struct big g_big;
int (*g_ptr)(int);
static volatile sig_atomic_t stop;
static int bad;

__attribute__((noinline, noipa)) int ut_add(int x) { return x + 5; }
__attribute__((noinline, noipa)) int via_disp32(struct big *b, int x) { return b->fn(x) + 1; }
__attribute__((noinline, noipa)) int via_rip(int x) { return g_ptr(x) + 1; }
__attribute__((noinline, noipa)) int via_reg(int (*f)(int), int x) { return f(x) + 1; }
__attribute__((noinline, noipa)) int via_small(struct small *s, int x) { return s->b(x) + 1; }
__attribute__((noinline, noipa)) int in_rec(int x) { return x > 0 ? g_big.rec(x - 1) + 1 : 0; }

static long check(int got, int want)
{
	if (got != want) {
		fprintf(stderr, "cs_indirect: got %d, want %d\n", got, want);
		bad = 1;
	}
	return got;
}

static long sum_disp32, sum_rip, sum_reg, sum_small, sum_rec;

static void round_all(int i)
{
	struct small s = { .a = ut_add, .b = in_sub };

	g_big.fn = in_mov;
	sum_disp32 += check(via_disp32(&g_big, i), i + 4);
	g_big.fn = ut_add;
	sum_disp32 += check(via_disp32(&g_big, i), i + 6);
	g_big.fn = in_sub;
	sum_disp32 += check(via_disp32(&g_big, i), i + 5);
	g_ptr = in_sub;
	sum_rip += check(via_rip(i), i + 5);
	g_ptr = ut_add;
	sum_rip += check(via_rip(i), i + 6);
	sum_reg += check(via_reg(in_mov, i), i + 4);
	sum_small += check(via_small(&s, i), i + 5);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	g_big.rec = in_rec;
	if (argc == 3 && !strcmp(argv[1], "all")) {
		int n = atoi(argv[2]);

		for (int i = 0; i < n; i++) {
			round_all(i);
			if (i % 10 == 0)
				sum_rec += check(in_rec(200), 200);
		}
		printf("disp32 %ld\nrip %ld\nreg %ld\nsmall %ld\nrec %ld\n", sum_disp32, sum_rip,
		       sum_reg, sum_small, sum_rec);
		return bad;
	}
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		long n = 0;
		int fd;

		signal(SIGTERM, on_signal);
		fd = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return 2;
		close(fd);
		while (!stop) {
			round_all((int)(n % 64));
			if (n++ % 64 == 0)
				check(in_rec(100), 100);
		}
		printf("served %ld\n", n);
		return bad;
	}
	if (argc == 4 && !strcmp(argv[1], "gate")) {
		int n = atoi(argv[3]);

		for (int i = 0; i < 60000 && access(argv[2], F_OK); i++)
			usleep(1000);
		if (access(argv[2], F_OK))
			return 2;
		for (int i = 0; i < n; i++)
			round_all(i);
		printf("gate %d\n", n);
		return bad;
	}
	if (argc == 3 && !strcmp(argv[1], "time")) {
		int n = atoi(argv[2]);
		struct timespec a, b;

		g_ptr = in_mov;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < n; i++)
			via_rip(i & 1);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("ind %d %.1f\n", n, ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) /
		       (n ? n : 1));
		return 0;
	}
	fprintf(stderr, "usage: cs_indirect all N | serve READY | time N | gate FILE N\n");
	return 2;
}
