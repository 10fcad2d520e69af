// SPDX-License-Identifier: MIT
/*
 * Jumps into traced functions that no call-site stub takes, for record --call-sites' plain
 * entries (user/patch/callsite_plain.c). Built with -O2 (targets.mk), so that the static C
 * helper ends in a tail call (`jmp tp_f`); the rest in assembly, for exact forms:
 *   tp_f        mov %edi,%eax; add $3,%eax           x + 3, its first instruction single-stepped
 *                                                    by a plain probe
 *   tp_j        jmp tp_f                             a function that begins with a jump: its
 *                                                    body's relocated jmp goes to tp_f's plain
 *                                                    entry
 *   tp_outer    calls untraced_help                  tp_f nested under tp_outer through it
 *   untraced_help (static, C)  return tp_f(x * 2)    a tail call from code not traced
 *   untraced_cond (assembly)   jne tp_f              a conditional tail call (0f 85 rel32) from
 *                                                    code not traced: x ? x + 3 : 0
 * Usage:
 *   cs_tailplain all N         N rounds of tp_j(i), untraced_help(i), tp_outer(i),
 *                              untraced_cond(i); prints the sum
 *   cs_tailplain gate CTL      reads lines from the fifo CTL: "N" runs N rounds and prints
 *                              "done N SUM"; "q" (or EOF) ends
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tp_f(int x);
int tp_j(int x);
int tp_outer(int x);
int untraced_cond(int x);

#define JMP32(f) "	.byte 0xe9\n	.long " #f " - . - 4\n"
#define JNE32(f) "	.byte 0x0f, 0x85\n	.long " #f " - . - 4\n"

__asm__(
	".text\n"
	".globl tp_f\n.type tp_f,@function\ntp_f:\n"
	"	mov %edi, %eax\n	add $3, %eax\n	ret\n.size tp_f, .-tp_f\n"
	".globl tp_j\n.type tp_j,@function\ntp_j:\n"
	JMP32(tp_f) ".size tp_j, .-tp_j\n"
	".globl untraced_cond\n.type untraced_cond,@function\nuntraced_cond:\n"
	"	xor %eax, %eax\n	test %edi, %edi\n" JNE32(tp_f)
	"	ret\n.size untraced_cond, .-untraced_cond\n");

/* a static function, not traced: -O2 makes its call a tail call, `jmp tp_f` */
static __attribute__((noinline)) int untraced_help(int x)
{
	return tp_f(x * 2);
}

__attribute__((noinline)) int tp_outer(int x)
{
	int v = untraced_help(x + 1);

	__asm__ volatile("" ::: "memory");      /* a call, not a tail call */
	return v + 1;
}

static int bad;

static long round_all(int i)
{
	long s = 0;
	int v;

	s += v = tp_j(i);
	bad |= v != i + 3;
	s += v = untraced_help(i);
	bad |= v != 2 * i + 3;
	s += v = tp_outer(i);
	bad |= v != 2 * (i + 1) + 4;
	s += v = untraced_cond(i);
	bad |= v != (i ? i + 3 : 0);
	return s;
}

int main(int argc, char **argv)
{
	long sum = 0, n;

	if (argc == 3 && !strcmp(argv[1], "all")) {
		n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			sum += round_all((int)i);
	} else if (argc == 3 && !strcmp(argv[1], "gate")) {
		FILE *ctl = fopen(argv[2], "r");
		char line[64];

		if (!ctl)
			return 2;
		while (fgets(line, sizeof(line), ctl) && line[0] != 'q') {
			n = atol(line);
			sum = 0;
			for (long i = 0; i < n; i++)
				sum += round_all((int)i);
			printf("done %ld %ld%s\n", n, sum, bad ? " WRONG" : "");
			fflush(stdout);
		}
		fclose(ctl);
		return bad;
	} else {
		fprintf(stderr, "usage: cs_tailplain all N | gate CTL\n");
		return 2;
	}
	printf("cs_tailplain: %ld%s\n", sum, bad ? " WRONG" : "");
	return bad;
}
