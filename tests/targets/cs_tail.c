// SPDX-License-Identifier: MIT
/*
 * Tail calls for record --call-sites (user/patch/callsite_tail.c). The functions are written
 * in assembly so that each tail call is the rel32 form on every compiler (`jmp f` as e9 rel32,
 * `jne f` as 0f 85 rel32) and the tail-called functions start with an instruction the kernel
 * single-steps (mov). Each tail call comes after the first 5 bytes of its function: those are
 * moved into the function's body for its redirected callers, and a jump moved with them goes
 * to its target's plain entry.
 *   tl_f      mov %edi,%eax; add $3,%eax              x + 3
 *   tl_g      mov %edi,%eax; add $1,%edi; jmp tl_f    a tail call: x + 4
 *   tl_cond   mov; mov; test; jne tl_f; ret           a conditional tail call: x ? x + 3 : 0
 *   tl_cg     mov %edi,%eax; add $1,%edi; jmp tl_cf   a chain of tail calls, g -> f -> h:
 *   tl_cf     mov %edi,%eax; add $1,%edi; jmp tl_ch   x + 2 + 5
 *   tl_ch     mov %edi,%eax; add $5,%eax
 *   tl_u      mov %edi,%eax; jmp tl_f                 a tail call from a function not traced
 *   tl_deep   recursion through a tail call: tl_deep(n) calls tl_dt(n - 1), which (mov; mov;
 *   tl_dt     mov) tail-calls tl_deep; 2n + 1 frames deep; returns n
 * Usage:
 *   cs_tail all N        N rounds of: tl_g(i) directly and through a pointer, tl_cond(i),
 *                        tl_cg(i), tl_u(i); prints the sum
 *   cs_tail deep N D     N times tl_deep(D); prints the sum
 *   cs_tail serve READY  create READY, then rounds until SIGTERM; prints "served N"
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tl_f(int x);
int tl_g(int x);
int tl_cond(int x);
int tl_cg(int x);
int tl_cf(int x);
int tl_ch(int x);
int tl_u(int x);
int tl_deep(int x);
int tl_dt(int x);

/* e9 / 0f 85 with a rel32, whatever the assembler would relax them to */
#define JMP32(f) "	.byte 0xe9\n	.long " #f " - . - 4\n"
#define JNE32(f) "	.byte 0x0f, 0x85\n	.long " #f " - . - 4\n"

__asm__(
	".text\n"
	".globl tl_f\n.type tl_f,@function\ntl_f:\n"
	"	mov %edi, %eax\n	add $3, %eax\n	ret\n.size tl_f, .-tl_f\n"
	".globl tl_g\n.type tl_g,@function\ntl_g:\n"
	"	mov %edi, %eax\n	add $1, %edi\n" JMP32(tl_f) ".size tl_g, .-tl_g\n"
	".globl tl_cond\n.type tl_cond,@function\ntl_cond:\n"
	"	mov %edi, %eax\n	mov %eax, %edi\n	test %edi, %edi\n" JNE32(tl_f)
	"	ret\n.size tl_cond, .-tl_cond\n"
	".globl tl_cg\n.type tl_cg,@function\ntl_cg:\n"
	"	mov %edi, %eax\n	add $1, %edi\n" JMP32(tl_cf) ".size tl_cg, .-tl_cg\n"
	".globl tl_cf\n.type tl_cf,@function\ntl_cf:\n"
	"	mov %edi, %eax\n	add $1, %edi\n" JMP32(tl_ch) ".size tl_cf, .-tl_cf\n"
	".globl tl_ch\n.type tl_ch,@function\ntl_ch:\n"
	"	mov %edi, %eax\n	add $5, %eax\n	ret\n.size tl_ch, .-tl_ch\n"
	".globl tl_u\n.type tl_u,@function\ntl_u:\n"
	"	mov %edi, %eax\n" JMP32(tl_f) ".size tl_u, .-tl_u\n"
	".globl tl_deep\n.type tl_deep,@function\ntl_deep:\n"
	"	mov %edi, %eax\n	test %edi, %edi\n	jle 1f\n	push %rbx\n"
	"	lea -1(%rdi), %edi\n	call tl_dt\n	add $1, %eax\n	pop %rbx\n1:	ret\n"
	".size tl_deep, .-tl_deep\n"
	".globl tl_dt\n.type tl_dt,@function\ntl_dt:\n"
	"	mov %edi, %eax\n	mov %eax, %edi\n	mov %edi, %eax\n" JMP32(tl_deep)
	".size tl_dt, .-tl_dt\n");

static int (*volatile tl_g_ptr)(int) = tl_g;
static volatile sig_atomic_t stop;
static int bad;

static long round_all(int i)
{
	long s = 0;
	int v;

	s += v = tl_g(i);
	bad |= v != i + 4;
	s += v = tl_g_ptr(i);
	bad |= v != i + 4;
	s += v = tl_cond(i);
	bad |= v != (i ? i + 3 : 0);
	s += v = tl_cg(i);
	bad |= v != i + 7;
	s += v = tl_u(i);
	bad |= v != i + 3;
	return s;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	long sum = 0, n;

	if (argc == 3 && !strcmp(argv[1], "all")) {
		n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			sum += round_all((int)i);
	} else if (argc == 4 && !strcmp(argv[1], "deep")) {
		int d = atoi(argv[3]);

		n = atol(argv[2]);
		for (long i = 0; i < n; i++) {
			int v = tl_deep(d);

			bad |= v != d;
			sum += v;
		}
	} else if (argc == 3 && !strcmp(argv[1], "serve")) {
		int fd;

		signal(SIGTERM, on_signal);
		fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return 2;
		close(fd);
		for (n = 0; !stop; n++)
			round_all((int)(n % 64));
		printf("served %ld\n", n);
		return bad;
	} else {
		fprintf(stderr, "usage: cs_tail all N | deep N D | serve READY\n");
		return 2;
	}
	printf("cs_tail: %ld%s\n", sum, bad ? " WRONG" : "");
	return bad;
}
