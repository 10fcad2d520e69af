// SPDX-License-Identifier: MIT
/*
 * libcsdetail.so: a function of eight integer arguments (the 7th and 8th on the stack), for the
 * registers, arguments and return addresses of calls that record --call-sites redirects
 * (tests/e2e/test_record_call_sites_detail.sh). Linked -Bsymbolic-functions and -z now: the
 * library's calls of its own functions are direct (e8), and the program's calls through its
 * PLT find bound slots.
 *   cd_f8      the sum of its eight arguments (in C: --auto-args types them from DWARF)
 *   cd_tail8   mov; add $0x100,%rdi; jmp cd_f8 (e9 rel32, after its first 5 bytes): a tail
 *              call with the same stack arguments
 *   cd_chain8  mov; add $0x200,%rdi; jmp cd_mid8 (eb rel8: a tail call no stub takes)
 *   cd_mid8    mov; add $0x400,%rdi; jmp cd_leaf8 (eb rel8)
 *   cd_leaf8   the sum of its eight arguments: the end of a chain of two tail calls that only
 *              plain probes see, after a call (of cd_chain8) through a stub
 *   cd_run     cd_f8 called directly, through a pointer (`call *cd_ptr(%rip)`), cd_tail8 and
 *              cd_chain8 called directly
 */
#include <stdint.h>

typedef uint64_t u64;

u64 cd_tail8(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h);
u64 cd_chain8(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h);

__attribute__((noinline)) u64 cd_f8(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h)
{
	return a + b + c + d + e + f + g + h;
}

__asm__(".text\n"
	".globl cd_tail8\n.type cd_tail8,@function\ncd_tail8:\n"
	"	mov %rdi, %rax\n	add $0x100, %rdi\n	jmp cd_f8@PLT\n"
	".size cd_tail8, .-cd_tail8\n"
	".globl cd_chain8\n.type cd_chain8,@function\ncd_chain8:\n"
	"	mov %rdi, %rax\n	add $0x200, %rdi\n	jmp 1f\n"
	".size cd_chain8, .-cd_chain8\n"
	".globl cd_mid8\n.type cd_mid8,@function\ncd_mid8:\n"
	"1:	mov %rdi, %rax\n	add $0x400, %rdi\n	jmp 2f\n"
	".size cd_mid8, .-cd_mid8\n"
	".globl cd_leaf8\n.type cd_leaf8,@function\ncd_leaf8:\n"
	"2:	mov %rdi, %rax\n	add %rsi, %rax\n	add %rdx, %rax\n	add %rcx, %rax\n"
	"	add %r8, %rax\n	add %r9, %rax\n	add 8(%rsp), %rax\n	add 16(%rsp), %rax\n"
	"	ret\n.size cd_leaf8, .-cd_leaf8\n");

/* not volatile, and set at run time: the call is `call *cd_ptr(%rip)`, 6 bytes */
static u64 (*cd_ptr)(u64, u64, u64, u64, u64, u64, u64, u64);

__attribute__((noinline)) u64 cd_run(u64 base)
{
	u64 s = 0;

	cd_ptr = cd_f8;
	__asm__ volatile("" ::: "memory");
	s += cd_f8(base + 0x21, base + 0x22, base + 0x23, base + 0x24, base + 0x25, base + 0x26,
		   base + 0x27, base + 0x28);
	s += cd_ptr(base + 0x31, base + 0x32, base + 0x33, base + 0x34, base + 0x35, base + 0x36,
		    base + 0x37, base + 0x38);
	s += cd_tail8(base + 0x41, base + 0x42, base + 0x43, base + 0x44, base + 0x45, base + 0x46,
		      base + 0x47, base + 0x48);
	s += cd_chain8(base + 0x51, base + 0x52, base + 0x53, base + 0x54, base + 0x55, base + 0x56,
		       base + 0x57, base + 0x58);
	return s;
}
