// SPDX-License-Identifier: MIT
/*
 * cs_many: few functions with many call sites (test_record_call_sites_probes.sh): cm_round
 * calls cm_f and cm_g from 32 sites each and cm_h from 2; cm_h tail-calls cm_f (odd x) or cm_g;
 * cm_ind calls cm_f through a pointer in memory (`call *cm_ptr(%rip)`, an indirect site).
 * `cs_many -` reads a number of rounds per line from stdin and prints "sum S" for each.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noipa)) int cm_f(int x)
{
	return x + 1;
}

__attribute__((noipa)) int cm_g(int x)
{
	return x ^ 3;
}

int cm_h(int x);
int cm_ind(int x);
int (*volatile cm_ptr)(int) = cm_f;

/* e9 / 0f 85 with a rel32, whatever the assembler would relax them to */
#define JMP32(f) "	.byte 0xe9\n	.long " #f " - . - 4\n"
#define JNE32(f) "	.byte 0x0f, 0x85\n	.long " #f " - . - 4\n"

/* cm_h: two tail calls, `jne cm_f` and `jmp cm_g`; cm_ind: `call *cm_ptr(%rip)` */
__asm__(
	".text\n"
	".globl cm_h\n.type cm_h,@function\ncm_h:\n"
	"	mov %edi, %eax\n	test $1, %dil\n" JNE32(cm_f) JMP32(cm_g) ".size cm_h, .-cm_h\n"
	".globl cm_ind\n.type cm_ind,@function\ncm_ind:\n"
	"	sub $8, %rsp\n	call *cm_ptr(%rip)\n	add $8, %rsp\n	ret\n.size cm_ind, .-cm_ind\n");

#define F4(x) x = cm_f(x); x = cm_g(x); x = cm_f(x); x = cm_g(x);
#define F16(x) F4(x) F4(x) F4(x) F4(x)

__attribute__((noipa)) static long cm_round(int x)
{
	F16(x) F16(x) F16(x) F16(x)
	x = cm_h(x);
	x = cm_ind(x);
	x = cm_h(x);
	return x;
}

int main(int argc, char **argv)
{
	char line[64];

	if (argc < 2)
		return 2;
	while (fgets(line, sizeof(line), stdin)) {
		long sum = 0, n = atol(line);

		for (long i = 0; i < n; i++)
			sum += cm_round((int)i);
		printf("sum %ld\n", sum);
		fflush(stdout);
	}
	return 0;
}
