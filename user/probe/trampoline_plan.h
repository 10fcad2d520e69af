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
	uint32_t patch_len;         /* bytes of whole instructions moved out (>= TRAMP_JMP_LEN,
				     * but one instruction's for tramp_plan_first()) */
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
 * tramp_plan_first - the plan that moves only the instruction at @patch_addr (of the function
 * at @func_addr, its @size bytes in @code), for code that runs it elsewhere and then jumps to
 * the next one while the function itself stays as it is (a call-site stub's body): no length
 * to reach and nothing to check about branches into it. TRAMP_OK with @out filled, or
 * TRAMP_INSN (it cannot run elsewhere), TRAMP_DECODE, TRAMP_SHORT (@patch_addr outside). Pure.
 */
enum tramp_reason tramp_plan_first(const uint8_t *code, uint64_t size, uint64_t func_addr,
				   uint64_t patch_addr, struct tramp_plan *out);

/**
 * tramp_refers_into - does the code at @addr (@size bytes in @code; another function of the
 * module, such as a "f.cold" part of f) branch into, or point at, (@patch_addr, @patch_end)?
 * Undecodable bytes count as yes.
 */
bool tramp_refers_into(const uint8_t *code, uint64_t size, uint64_t addr, uint64_t patch_addr,
		       uint64_t patch_end);

/**
 * tramp_referenced_addrs - every address that the code at @addr (@size bytes in @code)
 * branches to or points at (relative branches and calls, rip-relative operands), in order, into
 * @out (at most @cap). Decoding stops at the first bytes that are not code. Returns how many.
 */
size_t tramp_referenced_addrs(const uint8_t *code, uint64_t size, uint64_t addr, uint64_t *out,
			      size_t cap);

/**
 * tramp_probe_site - the bytes of the probe site that opens every trampoline (its uprobe's
 * address), *@len of them: an instruction the kernel emulates at its int3 and never rewrites
 * into a call (a 1-byte nop), so a forked child runs it without any fix-up.
 */
const uint8_t *tramp_probe_site(size_t *len);

/**
 * tramp_emit - write the trampoline for @plan at address @tramp_addr into @out (TRAMP_SLOT
 * bytes, the rest filled with int3): the probe site (tramp_probe_site(), at offset 0), the moved instructions
 * with rip-relative displacements and relative branches fixed for their new place, and a
 * jmp back to the first instruction after them. @code holds the bytes from @plan->patch_addr.
 * Returns TRAMP_OK, or TRAMP_RANGE when a displacement does not fit in 32 bits there.
 */
enum tramp_reason tramp_emit(const uint8_t *code, const struct tramp_plan *plan,
			     uint64_t tramp_addr, uint8_t out[TRAMP_SLOT]);

/** tramp_jmp - the 5 bytes `jmp @to` placed at @from; false when out of rel32 range. */
bool tramp_jmp(uint64_t from, uint64_t to, uint8_t out[TRAMP_JMP_LEN]);

/**
 * tramp_unpatch_bytes - what to write back over @now, the patch's TRAMP_JMP_LEN bytes as they
 * are today: @orig wherever our @jmp's byte still is, anything else (another tool's int3, put
 * there after we patched) kept, so its breakpoint goes on working. Into @out; false when no
 * byte of our jmp is left (nothing to write).
 */
bool tramp_unpatch_bytes(const uint8_t *jmp, const uint8_t *orig, const uint8_t *now, uint8_t *out);

/* ---- per function of a module (user/probe/trampoline_check.c) ---- */

/** tramp_module_file - the path to open for @m (open_path when set). */
const char *tramp_module_file(const struct sym_module *m);

/**
 * tramp_module_textrel - has @m text relocations (ld.so writes its code when relocating it)?
 * True too when its dynamic section cannot be read.
 */
bool tramp_module_textrel(const struct sym_module *m);

/** tramp_wanted - is @f selected and probe-able? */
bool tramp_wanted(const struct sym_func *f);

/**
 * tramp_plan_function - tramp_plan() for function @i of @m, read from the file @fd, at the
 * file's own addresses; also refused when another symbol enters the replaced bytes (a second
 * entry point inside them, or a "f.cold" part branching into them). The replaced bytes go to
 * @moved (@cap bytes).
 */
enum tramp_reason tramp_plan_function(int fd, const struct sym_module *m, size_t i,
				      struct tramp_plan *plan, uint8_t *moved, size_t cap);

/**
 * tramp_plan_relocation - the instructions a call-site stub's body (user/patch/callsite.c) runs
 * before it jumps on into the untouched function @i of @m (read from @fd), to @moved (@cap
 * bytes): the ones an entry trampoline would replace when tramp_plan_function() (emulated first
 * instructions included) accepts the function, so that another session's entry jmp never
 * splits what the body jumps back to; else tramp_plan_first()'s single instruction.
 */
enum tramp_reason tramp_plan_relocation(int fd, const struct sym_module *m, size_t i,
					struct tramp_plan *plan, uint8_t *moved, size_t cap);

/**
 * tramp_only_breakpoint - do the process's bytes @now and the file's @file (@len each) differ
 * by no more than a uprobe: an int3 on the first byte, or the kernel's call at a 5-byte nop?
 */
bool tramp_only_breakpoint(const uint8_t *now, const uint8_t *file, size_t len);

#endif
