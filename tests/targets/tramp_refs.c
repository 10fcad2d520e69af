// SPDX-License-Identifier: MIT
/*
 * tramp_refs: two ways a function's first bytes cannot be moved into an entry trampoline,
 * each checked by its own result (exit 1 when a result is wrong, 0 when all are right):
 *   ref_into     jumps 3 bytes into ref_target, past its first instruction, the way glibc's
 *                __mempcpy_avx512_unaligned_erms jumps into __memcpy_avx512_unaligned_erms:
 *                ref_target must not be patched (branch-in), or ref_into lands in our jmp;
 *   ref_evex     starts with an EVEX (AVX-512) instruction: the kernel single-steps it but
 *                loses its result, so it may only be entered through a trampoline.
 *   tramp_refs N   call ref_target and ref_into N times each, and ref_evex N times when the
 *                  CPU has AVX-512 (else it says "evex: no avx512"); print the counts
 */
#include <stdio.h>
#include <stdlib.h>

/* ref_target(a, b): a + b, through a first instruction and a compare ref_into skips */
long ref_target(long a, long b);
long ref_into(long a, long b);
void ref_evex(unsigned char *dst, int c);

__asm__(".text\n"
	".globl ref_target\n.type ref_target, @function\n"
	"ref_target:\n"
	"	mov %rdi, %rax\n"          /* 3 bytes: ref_into enters after it */
	"	cmp $0x10, %rsi\n"
	"	add %rsi, %rax\n"
	"	ret\n"
	".size ref_target, .-ref_target\n"
	".globl ref_into\n.type ref_into, @function\n"
	"ref_into:\n"
	"	mov %rdi, %rax\n"
	"	nop\n"
	"	jmp ref_target + 3\n"
	".size ref_into, .-ref_into\n"
	".globl ref_evex\n.type ref_evex, @function\n"
	"ref_evex:\n"
	"	vpbroadcastb %esi, %ymm17\n" /* EVEX */
	"	vmovdqu64 %ymm17, (%rdi)\n"
	"	ret\n"
	".size ref_evex, .-ref_evex\n");

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10, bad = 0;
	int evex = __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");

	for (int i = 0; i < n; i++) {
		bad += ref_target(i, 7) != i + 7;
		bad += ref_into(i, 9) != i + 9;
		if (evex) {
			unsigned char b[32];

			ref_evex(b, i & 0x7f);
			for (int k = 0; k < 32; k++)
				if (b[k] != (i & 0x7f)) {
					bad++;
					break;
				}
		}
	}
	printf("calls %d, evex %s, wrong %d\n", n, evex ? "yes" : "no avx512", bad);
	return bad != 0;
}
