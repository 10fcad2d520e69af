// SPDX-License-Identifier: MIT
/*
 * Symbol-resolution target for tests/unit/test_symbols.c: function symbols in places uprobes
 * must not (or cannot usefully) be put, next to ordinary ones:
 *   plt_stub      a sized STT_FUNC symbol inside .plt         -> SYM_SKIP_PLT
 *   trap_first    starts with int3                            -> SYM_SKIP_INSN
 *   alias_b       second name of alias_a (same address)       -> SYM_SKIP_ALIAS
 *   data_func     STT_FUNC in a non-executable section        -> SYM_SKIP_NOT_EXEC
 *   pick_ifunc    STT_GNU_IFUNC                               -> SYM_SKIP_IFUNC
 *   plain_one, plain_two: ordinary probe-able functions
 */
#include <stdio.h>

__asm__(
	".section .plt,\"ax\",@progbits\n"
	".globl plt_stub\n.type plt_stub,@function\n"
	"plt_stub:\n	push %rbp\n	pop %rbp\n	ret\n"
	".size plt_stub, .-plt_stub\n"
	".text\n"
	".globl trap_first\n.type trap_first,@function\n"
	"trap_first:\n	int3\n	ret\n"
	".size trap_first, .-trap_first\n"
	".globl alias_a\n.type alias_a,@function\n"
	".globl alias_b\n.type alias_b,@function\n"
	"alias_a:\nalias_b:\n	push %rbp\n	pop %rbp\n	ret\n"
	".size alias_a, .-alias_a\n.size alias_b, .-alias_b\n"
	".section .rodata\n"
	".globl data_func\n.type data_func,@function\n"
	"data_func:\n	.byte 0x55, 0x5d, 0xc3\n"
	".size data_func, .-data_func\n"
	".text\n");

__attribute__((noinline, noipa)) int plain_one(int x)
{
	return x + 1;
}

__attribute__((noinline, noipa)) int plain_two(int x)
{
	return plain_one(x) * 2;
}

static int impl(int x)
{
	return x;
}

static int (*resolve_pick(void))(int)
{
	return impl;
}

int pick_ifunc(int x) __attribute__((ifunc("resolve_pick")));

int main(int argc, char **argv)
{
	printf("%d\n", plain_two(argc) + pick_ifunc(argc));
	return 0;
}
