/* SPDX-License-Identifier: MIT */
/*
 * Entry trampolines, the pure part (user/probe/trampoline_plan.c): decide from a function's own
 * bytes whether its first instructions can be moved out of line, and write the trampoline
 * `nop; <relocated instructions>; jmp back` for a given address. Private to user/probe/.
 */
#ifndef ATFTRACE_TRAMPOLINE_PLAN_H
#define ATFTRACE_TRAMPOLINE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "trampoline.h"

#define TRAMP_JMP_LEN 5             /* jmp rel32: what replaces the function's first bytes */
#define TRAMP_SLOT 64               /* bytes reserved per trampoline (16-byte aligned) */

/* What tramp_plan found: where the patch goes and how long the moved instructions are. */
struct tramp_plan {
	uint64_t patch_addr;        /* address of the first replaced byte (function + 4 after endbr64) */
	uint32_t patch_len;         /* bytes of whole instructions moved out (>= TRAMP_JMP_LEN) */
	uint32_t ninsns;
};

/**
 * tramp_plan - can the function at @func_addr (its @size bytes in @code) be entered through a
 * trampoline, with the patch at @patch_addr (@func_addr, or +4 after a hopped endbr64)?
 * Decodes the whole function: refuses a function shorter than the patch, one with a branch (or
 * a rip-relative address) from anywhere in it into the replaced bytes, and moved instructions
 * that cannot run elsewhere (calls, syscalls, loop/jrcxz, ...). Pure; unit-tested.
 * Returns TRAMP_OK with @out filled, or the reason it is not patched.
 */
enum tramp_reason tramp_plan(const uint8_t *code, uint64_t size, uint64_t func_addr,
			     uint64_t patch_addr, struct tramp_plan *out);

/**
 * tramp_emit - write the trampoline for @plan at address @tramp_addr into @out (TRAMP_SLOT
 * bytes, the rest filled with int3): a 1-byte nop (the probe site, at offset 0), the moved instructions
 * with rip-relative displacements and relative branches fixed for their new place, and a
 * jmp back to the first instruction after them. @code holds the bytes from @plan->patch_addr.
 * Returns TRAMP_OK, or TRAMP_RANGE when a displacement does not fit in 32 bits there.
 */
enum tramp_reason tramp_emit(const uint8_t *code, const struct tramp_plan *plan,
			     uint64_t tramp_addr, uint8_t out[TRAMP_SLOT]);

/** tramp_jmp - the 5 bytes `jmp @to` placed at @from; false when out of rel32 range. */
bool tramp_jmp(uint64_t from, uint64_t to, uint8_t out[TRAMP_JMP_LEN]);

#endif
