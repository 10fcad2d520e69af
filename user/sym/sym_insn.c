// SPDX-License-Identifier: MIT
/*
 * Probe sites (include/symbols.h: sym_probe_site): the class of a function's first instruction,
 * which decides the kernel's path for a uprobe there (nop5 optimised, emulated, single-stepped,
 * or refused), after a leading endbr64 that is hopped over (probe at +4); and the short names
 * of skip reasons and instruction classes for reports and list-functions. Pure.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "symbols.h"

const char *sym_skip_str(enum sym_skip s)
{
	switch (s) {
	case SYM_OK:             return "ok";
	case SYM_SKIP_ZERO_SIZE: return "zero-size";
	case SYM_SKIP_PLT:       return "plt";
	case SYM_SKIP_NOT_EXEC:  return "not-exec";
	case SYM_SKIP_ALIAS:     return "alias";
	case SYM_SKIP_INSN:      return "bad-insn";
	case SYM_SKIP_EXCLUDED:  return "excluded";
	case SYM_SKIP_IFUNC:     return "ifunc";
	case SYM_SKIP_ENTRY:     return "entry-point";
	}
	return "?";
}

const char *sym_insn_str(enum sym_insn i)
{
	switch (i) {
	case SYM_INSN_OTHER:    return "single-step";
	case SYM_INSN_NOP5:     return "nop5";
	case SYM_INSN_EMULATED: return "emulated";
	case SYM_INSN_ENDBR64:  return "endbr64";
	case SYM_INSN_NO_STEP:  return "evex";
	}
	return "?";
}

/* ---- first instruction ------------------------------------------------------------------- */

/* Class of the instruction at @p (@avail bytes readable); -1 when uprobes refuse it. */
static int classify_insn(const uint8_t *p, size_t avail)
{
	if (avail < 1)
		return -1;
	if (avail >= 5 && p[0] == 0x0f && p[1] == 0x1f && p[2] == 0x44 && p[3] == 0x00)
		return SYM_INSN_NOP5;           /* nopl 0(%rax,%rax,1), any displacement byte */
	if (p[0] >= 0x50 && p[0] <= 0x57)
		return SYM_INSN_EMULATED;       /* push %rax..%rdi (0x55: push %rbp) */
	if (avail >= 2 && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57)
		return SYM_INSN_EMULATED;       /* push %r8..%r15 */
	if (p[0] == 0x90 || p[0] == 0xe8 || p[0] == 0xe9 || p[0] == 0xeb)
		return SYM_INSN_EMULATED;       /* nop, call rel32, jmp rel32, jmp rel8 */
	if (p[0] == 0xcc || p[0] == 0xcd || p[0] == 0xf4 || (avail >= 2 && p[0] == 0x0f && p[1] == 0x0b))
		return -1;                      /* int3, int n, hlt, ud2 */
	/* the kernel refuses lock and es/cs/ss/ds prefixes (uprobes' is_prefix_bad): ENOTSUPP */
	for (size_t i = 0; i < avail && i < 15; i++) {
		if (p[i] == 0xf0 || p[i] == 0x26 || p[i] == 0x2e || p[i] == 0x36 || p[i] == 0x3e)
			return -1;
		/*
		 * 0x62 in 64-bit mode opens an EVEX (AVX-512) instruction: the kernel single-steps
		 * it, but the result is lost (seen on 6.18: a vpbroadcastb into ymm1 or ymm17 leaves
		 * the register as it was). Such a function can only be entered through a trampoline.
		 */
		if (p[i] == 0x62)
			return SYM_INSN_NO_STEP;
		if (p[i] != 0x66 && p[i] != 0x67 && p[i] != 0xf2 && p[i] != 0xf3 && p[i] != 0x64 &&
		    p[i] != 0x65)
			break;          /* not a legacy prefix: the opcode (or REX) */
	}
	return SYM_INSN_OTHER;                  /* single-stepped */
}

static bool is_endbr64(const uint8_t *p, size_t avail)
{
	return avail >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa;
}

int sym_probe_site(const uint8_t *code, size_t avail, size_t code_len, bool *endbr64)
{
	*endbr64 = is_endbr64(code, avail) && code_len > 4;
	return classify_insn(code + (*endbr64 ? 4 : 0), avail - (*endbr64 ? 4 : 0));
}
