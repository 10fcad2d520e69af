/* SPDX-License-Identifier: MIT */
/*
 * Tail-call sites, the pure part (user/patch/callsite_tail_plan.c): find the tail calls
 * (`jmp rel32`, e9, and `jcc rel32`, 0f 80..8f) of a function's code that target traced
 * functions, and aim them at the function's tail entry. Unit-tested
 * (tests/unit/test_callsite_tail.c).
 *
 * A tail site's rel32 points at f's tail entry T_f in the module's memfd, one per function
 * (its function block, user/patch/callsite_plan.h):
 *     nop                    probe T, entry: the link cookie is the function id; the jmp
 *                            pushed nothing, so the entry sp is the tail-caller's
 *     jmp  body              the function's first instructions, relocated, then jmp f+len
 * No return probe of its own: f returns where its tail-caller would have, through that
 * caller's return slot, which holds the caller's own return capture (its stub's return point,
 * or the uretprobe trampoline of its plain probe); that return closes both frames
 * (bpf/atftrace.bpf.c, on_return). The site keeps its kind and length (e9 stays e9, 0f 8x
 * stays 0f 8x); only its rel32 changes.
 */
#ifndef ATFTRACE_CALLSITE_TAIL_H
#define ATFTRACE_CALLSITE_TAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "callsite_plan.h"

#define CS_TAIL_JMP_LEN  5          /* e9 rel32 */
#define CS_TAIL_JCC_LEN  6          /* 0f 8x rel32 */
#define CS_SITE_MAX_LEN  6          /* the longest site instruction redirected */

/* One tail call whose target is a traced function. */
struct cs_tail_call {
	uint64_t site;              /* address of the e9 or 0f */
	uint32_t target;            /* index into the caller's target list */
	uint8_t len;                /* CS_TAIL_JMP_LEN or CS_TAIL_JCC_LEN */
};

/**
 * cs_find_tails - every `jmp rel32` (e9) and `jcc rel32` (0f 80..8f) in the code at @addr
 * (@size bytes in @code) whose target is one of @targets (@ntargets addresses, sorted
 * ascending), in order, into @out (at most @cap). Short jumps (rel8) and prefixed forms are
 * not taken. Decoding stops at the first bytes that are not code. Returns how many.
 */
size_t cs_find_tails(const uint8_t *code, uint64_t size, uint64_t addr, const uint64_t *targets,
		     size_t ntargets, struct cs_tail_call *out, size_t cap);

/**
 * cs_tail_bytes - the site @orig (@len bytes at @from: e9 rel32 or 0f 8x rel32) aimed at @to,
 * into @out: the same opcode, a new rel32. False when @orig is neither form or @to is out of
 * rel32 reach.
 */
bool cs_tail_bytes(const uint8_t *orig, uint32_t len, uint64_t from, uint64_t to, uint8_t *out);

/**
 * cs_jump_form - is the instruction at @p (@len bytes available) a relative jump: `jmp rel32`
 * (e9), `jcc rel32` (0f 8x), `jmp rel8` (eb) or `jcc rel8` (7x), unprefixed? Then its length
 * in *@n, its displacement in *@rel, and whether it is conditional in *@jcc. A function that
 * begins with one has it emitted in its body as the rel32 form (a jcc as 0f 8x): see
 * user/patch/callsite_plain.c.
 */
bool cs_jump_form(const uint8_t *p, uint32_t len, int64_t *rel, uint32_t *n, bool *jcc);

#endif
