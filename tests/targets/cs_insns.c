// SPDX-License-Identifier: MIT
/*
 * First-instruction classes for record --call-sites: one function per class, in assembly so the
 * bytes do not depend on the compiler, each called directly (a call site the recorder may
 * redirect) and through a pointer (an indirect call: never redirected, it reaches f's own
 * entry); each result is checked (a wrongly moved instruction shows as a wrong result, exit 1):
 *   ci_mov     mov %edi,%eax; add $3,%eax               x + 3 (the plain case)
 *   ci_rip     mov ci_total(%rip),%eax; add; store       running total (rip-relative load, store)
 *   ci_jcc     test; js +4 (a short jcc in the moved bytes) x + 5, or -1 for x < 0
 *   ci_target  mov %rdi,%rax; cmp; add                   a + b; ci_into jumps to ci_target + 3
 *              (branch-in: its first bytes stay the file's, it keeps its plain probe)
 *   ci_into    mov %rdi,%rax; nop; jmp ci_target + 3     a + b
 *   ci_loop    xor; L: add; cmp; jl L (branches into its own first bytes: branch-in)
 *   ci_evex    vpbroadcastb %esi,%ymm17; vmovdqu64 (EVEX: the kernel's single-step loses the
 *              result, so its entry is never probed); called only when the CPU has AVX-512
 *              (avx512vl, avx512bw)
 *
 *   cs_insns all N        N rounds (x = i % 64); print one line per function with the sum of its
 *                         results (the output an untraced run must match) and "evex yes|no"
 *   cs_insns serve READY  create READY, run rounds until SIGTERM; print "served N bad B"
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ci_mov(int x);
int ci_rip(int x);
int ci_jcc(int x);
long ci_target(long a, long b);
long ci_into(long a, long b);
int ci_loop(int x);
void ci_evex(unsigned char *dst, int c);
int ci_total;

__asm__(".text\n"
	".globl ci_mov\n.type ci_mov,@function\nci_mov:\n"
	"	mov %edi, %eax\n	add $3, %eax\n	ret\n.size ci_mov, .-ci_mov\n"
	".globl ci_rip\n.type ci_rip,@function\nci_rip:\n"
	"	mov ci_total(%rip), %eax\n	add %edi, %eax\n	mov %eax, ci_total(%rip)\n	ret\n"
	".size ci_rip, .-ci_rip\n"
	".globl ci_jcc\n.type ci_jcc,@function\nci_jcc:\n"
	"	test %edi, %edi\n	.byte 0x78, 0x04\n	lea 5(%rdi), %eax\n	ret\n"
	"	mov $-1, %eax\n	ret\n.size ci_jcc, .-ci_jcc\n"
	".globl ci_target\n.type ci_target,@function\nci_target:\n"
	"	mov %rdi, %rax\n	cmp $0x10, %rsi\n	add %rsi, %rax\n	ret\n"
	".size ci_target, .-ci_target\n"
	".globl ci_into\n.type ci_into,@function\nci_into:\n"
	"	mov %rdi, %rax\n	nop\n	jmp ci_target + 3\n.size ci_into, .-ci_into\n"
	".globl ci_loop\n.type ci_loop,@function\nci_loop:\n"
	"	xor %eax, %eax\n1:	add $1, %eax\n	cmp %edi, %eax\n	jl 1b\n	ret\n"
	".size ci_loop, .-ci_loop\n"
	".globl ci_evex\n.type ci_evex,@function\nci_evex:\n"
	"	vpbroadcastb %esi, %ymm17\n	vmovdqu64 %ymm17, (%rdi)\n	vzeroupper\n	ret\n"
	".size ci_evex, .-ci_evex\n");

/* The indirect calls: through pointers the compiler cannot see through. */
static int (*volatile mov_ptr)(int) = ci_mov;
static int (*volatile rip_ptr)(int) = ci_rip;
static int (*volatile jcc_ptr)(int) = ci_jcc;
static long (*volatile target_ptr)(long, long) = ci_target;
static long (*volatile into_ptr)(long, long) = ci_into;
static int (*volatile loop_ptr)(int) = ci_loop;
static void (*volatile evex_ptr)(unsigned char *, int) = ci_evex;

static volatile sig_atomic_t stop;
static long bad, sum_mov, sum_jcc, sum_target, sum_into, sum_loop, sum_evex;
static int evex;

static long check(const char *what, long x, long got, long want)
{
	if (got != want && bad++ < 5)
		fprintf(stderr, "cs_insns: %s(%ld) = %ld, expected %ld\n", what, x, got, want);
	return got;
}

static int evex_sum(unsigned char *b, int c)
{
	int s = 0;

	for (int k = 0; k < 32; k++)
		s += b[k];
	check("ci_evex", c, s, 32 * c);
	return s;
}

/* One round: every function once directly and once through its pointer. */
static void round_all(int x)
{
	unsigned char b[32];
	int before;

	sum_mov += check("ci_mov", x, ci_mov(x), x + 3);
	sum_mov += check("ci_mov", x, mov_ptr(x), x + 3);
	before = ci_total;
	check("ci_rip", x, ci_rip(x), before + x);
	before = ci_total;
	check("ci_rip", x, rip_ptr(x), before + x);
	sum_jcc += check("ci_jcc", x, ci_jcc(x), x + 5);
	sum_jcc += check("ci_jcc", -x - 1, jcc_ptr(-x - 1), -1);
	sum_target += check("ci_target", x, ci_target(x, 7), x + 7);
	sum_target += check("ci_target", x, target_ptr(x, 8), x + 8);
	sum_into += check("ci_into", x, ci_into(x, 9), x + 9);
	sum_into += check("ci_into", x, into_ptr(x, 10), x + 10);
	sum_loop += check("ci_loop", x, ci_loop(x), x > 1 ? x : 1);
	sum_loop += check("ci_loop", x + 1, loop_ptr(x + 1), x + 1 > 1 ? x + 1 : 1);
	if (evex) {
		ci_evex(b, x & 0x7f);
		sum_evex += evex_sum(b, x & 0x7f);
		evex_ptr(b, (x + 1) & 0x7f);
		sum_evex += evex_sum(b, (x + 1) & 0x7f);
	}
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	evex = __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
	if (argc == 3 && !strcmp(argv[1], "all")) {
		int n = atoi(argv[2]);

		for (int i = 0; i < n; i++)
			round_all(i % 64);
		printf("ci_mov %ld\nci_rip %d\nci_jcc %ld\nci_target %ld\nci_into %ld\nci_loop %ld\n"
		       "ci_evex %ld\nevex %s\n", sum_mov, ci_total, sum_jcc, sum_target, sum_into,
		       sum_loop, sum_evex, evex ? "yes" : "no");
		return bad ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		long n = 0;
		int fd;

		signal(SIGTERM, on_term);
		fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return 2;
		close(fd);
		while (!stop)
			round_all((int)(n++ % 64));
		printf("served %ld bad %ld\n", n, bad);
		return bad ? 1 : 0;
	}
	fprintf(stderr, "usage: cs_insns all N | serve READY\n");
	return 2;
}
