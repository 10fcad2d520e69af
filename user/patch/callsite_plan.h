/* SPDX-License-Identifier: MIT */
/*
 * Call-site redirection, the pure part (user/patch/callsite_plan.c): find the direct calls
 * (`e8 rel32`) of a module's code that target traced functions, and encode the per-site stub
 * they are redirected to. Unit-tested (tests/unit/test_callsite_plan.c).
 *
 * Each traced function f with a body gets one block in its module's memfd (CS_FN_SLOT bytes),
 * shared by all of its redirected sites, so that the probes are per function, not per site:
 *     E_f:  nop              entry probe (atf_site_fn_entry, cookie f's id); the registers and
 *           jmp  body        %rsp are f's entry state, and [%rsp] is the stub's return point
 *     R_f:  nop              return probe (atf_site_fn_return, cookie f's id): reached by the
 *           ret              stub's `call R_f` right after f returned, so %rsp is f's entry sp
 *     T_f:  nop              tail entry probe (atf_site_tail): a tail call's jmp lands here,
 *           jmp  body        pushing nothing (user/patch/callsite_tail.h)
 * body is f's first instructions, relocated, then jmp f+len.
 *
 * The stub of one direct or PLT call site, in the calling module's memfd:
 *     lea  8(%rsp), %rsp     drop the return address the call pushed (site+5, a constant);
 *                            lea, not add: the flags stay as the caller left them
 *     call E_f               f runs on exactly the stack it would have had, and returns to:
 *     call R_f               (the frame's return address, CS_STUB_RET) its push lands in the
 *                            slot f's return address used, below which nothing is live
 *     jmp  site+5
 * In another module than f's (cs_stub_emit_far()) the two calls reach E_f and R_f through two
 * thunks after the jmp, `jmp *0(%rip)` and an 8-byte address each: pushing nothing, they keep
 * the stack pointer each probe relies on.
 * The probes are 1-byte nops, which the kernel emulates: a 5-byte nop would be optimised into
 * a call to the kernel's [uprobes-trampoline] page, which fork does not copy.
 */
#ifndef ATFTRACE_CALLSITE_PLAN_H
#define ATFTRACE_CALLSITE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "atftrace.h"

#define CS_CALL_LEN   5             /* e8 rel32 */
#define CS_STUB_SLOT  48            /* bytes reserved per stub (the rest int3) */
#define CS_STUB_RET   10            /* offset of `call R_f` in a stub: f's return address */
#define CS_FN_SLOT    16            /* bytes per function block (the rest int3) */
#define CS_FN_ENTRY   0             /* E_f in a function block */
#define CS_FN_RET     6             /* R_f */
#define CS_FN_TAIL    8             /* T_f */

/* One direct call whose target is a traced function. */
struct cs_call {
	uint64_t site;              /* address of the e8 */
	uint32_t target;            /* index into the caller's target list */
};

/** cs_target_index - the index of @v in @t (@n addresses, sorted ascending), or -1. */
int cs_target_index(uint64_t v, const uint64_t *t, size_t n);

/**
 * cs_find_calls - every `call rel32` (e8) in the code at @addr (@size bytes in @code) whose
 * target is one of @targets (@ntargets addresses, sorted ascending), in order, into @out (at
 * most @cap). Decoding stops at the first bytes that are not code. Returns how many were found.
 */
size_t cs_find_calls(const uint8_t *code, uint64_t size, uint64_t addr, const uint64_t *targets,
		     size_t ntargets, struct cs_call *out, size_t cap);

/** cs_call_bytes - the 5 bytes `call @to` placed at @from; false when out of rel32 range. */
bool cs_call_bytes(uint64_t from, uint64_t to, uint8_t out[CS_CALL_LEN]);

/**
 * cs_fn_block_emit - the function block at @at (E_f, R_f, T_f) of a function whose relocated
 * first instructions start at @body, into @out (CS_FN_SLOT bytes, the rest int3). False when
 * @body is out of rel32 reach.
 */
bool cs_fn_block_emit(uint64_t at, uint64_t body, uint8_t out[CS_FN_SLOT]);

/**
 * cs_stub_emit - the stub at @stub for the call site @site, whose function's block (see
 * cs_fn_block_emit()) is at @fn, into @out (CS_STUB_SLOT bytes, the rest int3). False when
 * @fn or @site+5 is out of rel32 reach from the stub.
 */
bool cs_stub_emit(uint64_t stub, uint64_t site, uint64_t fn, uint8_t out[CS_STUB_SLOT]);

/**
 * cs_stub_emit_far - the stub of a call site in another module than the function's, whose
 * block @fn (in the function's module's memfd) may be out of rel32 reach: the same layout as
 * cs_stub_emit(), its calls aimed at two thunks after the stub's jmp, each `jmp *0(%rip)`
 * followed by E_f's or R_f's 8-byte address. Never through the GOT (that would reach the
 * function's plain probe and count the call twice). False when @site+5 is out of reach.
 */
bool cs_stub_emit_far(uint64_t stub, uint64_t site, uint64_t fn, uint8_t out[CS_STUB_SLOT]);

/*
 * PLT call sites: a `call f@plt` reaches f through the PLT entry's `jmp *slot(%rip)` when the
 * GOT slot holds f's address. Such a call is redirected like a direct one only then (checked in
 * the stopped process); a GOT slot is never written.
 */

/* A relocation of a GOT slot (R_X86_64_JUMP_SLOT or GLOB_DAT) to a dynamic symbol. */
struct cs_plt_reloc {
	uint64_t slot;              /* r_offset: the slot's module address */
	uint32_t sym;               /* its dynamic symbol's index */
};

/* A PLT entry whose GOT slot has a relocation. */
struct cs_plt_entry {
	uint64_t addr;              /* the entry's module address: what `call f@plt` targets */
	uint64_t slot;              /* the GOT slot it jumps through */
	uint32_t sym;               /* the slot's dynamic symbol */
};

/**
 * cs_plt_slot - the GOT slot that the PLT entry at @addr (@size bytes at @code) jumps through:
 * its first instruction, after one optional endbr64, is `jmp *disp(%rip)` (ff 25) or `bnd jmp
 * *disp(%rip)` (f2 ff 25). 0 when the entry is not of that form (the lazy resolver's PLT0, an
 * IBT .plt entry that only pushes and jumps to PLT0).
 */
uint64_t cs_plt_slot(const uint8_t *code, size_t size, uint64_t addr);

/**
 * cs_plt_decode - the entries of a PLT section at @addr (@size bytes at @code, one entry every
 * @stride bytes) whose slot one of @relocs (@nrelocs, sorted by slot) relocates, in order, into
 * @out (at most @cap). Returns how many.
 */
size_t cs_plt_decode(const uint8_t *code, uint64_t size, uint64_t addr, uint32_t stride,
		     const struct cs_plt_reloc *relocs, size_t nrelocs, struct cs_plt_entry *out,
		     size_t cap);

#endif
