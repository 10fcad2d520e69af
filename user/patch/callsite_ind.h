/* SPDX-License-Identifier: MIT */
/*
 * Indirect call sites (`call *0x88(%rax)`, `call *N(%rip)`), the pure part
 * (user/patch/callsite_ind_plan.c), unit-tested in tests/unit/test_callsite_ind.c. The process
 * part is user/patch/callsite_ind.c.
 *
 * A traced module's memfd gets, after its bodies and direct stubs, an indirect block:
 *   - a lookup table of its traced entries: open addressing with linear probing and no wrap
 *     (a tail of CS_IND_TAIL slots past the hashed range; the last slot always stays empty),
 *     16-byte slots { key: f's entry address in the process (what a function pointer holds),
 *     value: f's entry block E_f }; key 0 is empty, key CS_IND_TOMBSTONE a function handed back
 *     (never an address, and not empty: the chains through it stay intact);
 *   - the lookup routine: in %r11 the target; out, on a hit, %r11 = the entry block and
 *     ZF=1, on a miss %r11 unchanged and ZF=0; it pushes and pops %rax and %rcx below %rsp
 *     (nothing below %rsp is live at a call site) and clobbers the flags (dead across a call);
 *   - one return block R for all of the module's indirect stubs: `nop` (probed by
 *     atf_site_fn_return, cookie 0: the function is taken from the thread's shadow stack) then
 *     `ret`;
 *   - one stub per redirected site `call *OP` (L >= 5 bytes), which the site now jumps to:
 *         mov  OP, %r11          OP relocated if rip-relative; %rsp-relative as it was (the
 *                                site reaches the stub by jmp, which pushes nothing)
 *         call lookup
 *         jne  miss
 *         call *%r11             the traced function, through its entry block E_f (the
 *                                table's value: user/patch/callsite_plan.h)
 *         call R                 the return, seen at f's entry sp (the frame's return point)
 *         jmp  site+L
 *   miss: call *%r11             any other target, called exactly as before
 *         jmp  site+L
 *     The site is `jmp stub` with the rest of its L bytes int3 (never run: the return target,
 *     site+L, is unchanged, so frames already inside the callee return as before).
 * %r11 is free at a call in the SysV ABI (%r10 is the static chain and %rax the vararg count:
 * neither is touched). Sites shorter than 5 bytes (`call *%rax`, `call *0x18(%rbx)`) are not
 * redirected: a 5-byte jmp would cover the instructions after them.
 */
#ifndef ATFTRACE_CALLSITE_IND_H
#define ATFTRACE_CALLSITE_IND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CS_IND_MIN_LEN      5       /* the jmp that replaces the call */
#define CS_IND_MAX_LEN      15
#define CS_IND_STUB_SLOT    48      /* bytes per stub (the rest int3) */
#define CS_IND_LOOKUP_SIZE  96      /* bytes reserved for the lookup routine */
#define CS_IND_RET_SIZE     16      /* bytes reserved for the return block R */
#define CS_IND_TAIL         64      /* table slots past the hashed range */
#define CS_IND_TOMBSTONE    1ull    /* a handed-back function's key: never an address */
#define CS_IND_HASH_MUL     0x9e3779b97f4a7c15ull

/* One `call *OP` of at least CS_IND_MIN_LEN bytes. */
struct cs_ind_call {
	uint64_t site;              /* its address (module addresses as decoded) */
	uint8_t len;
};

/**
 * cs_ind_call_ok - is the instruction at @code (@size bytes, @len its decoded length) a
 * `call *mem` we can redirect: an optional REX, ff /2 with a memory operand, no other prefix,
 * at least CS_IND_MIN_LEN bytes.
 */
bool cs_ind_call_ok(const uint8_t *code, size_t size, uint32_t len);

/**
 * cs_find_ind_calls - every such call in the code at @addr (@size bytes at @code), in order,
 * into @out (at most @cap); *@nshort counts the indirect calls too short for a jmp (through a
 * register, or a memory operand of less than 5 bytes). Decoding stops at the first bytes that
 * are not code. How many.
 */
size_t cs_find_ind_calls(const uint8_t *code, uint64_t size, uint64_t addr,
			 struct cs_ind_call *out, size_t cap, size_t *nshort);

/** cs_ind_hash - the table's home slot of @key for a hashed range of 2^@bits slots. */
static inline uint64_t cs_ind_hash(uint64_t key, uint32_t bits)
{
	return (key * CS_IND_HASH_MUL) >> (64 - bits);
}

/** cs_ind_table_bits - the hashed range's bits for @n keys (at most half full, at least 16 slots). */
uint32_t cs_ind_table_bits(size_t n);

/** cs_ind_table_slots - slots of a table of @bits (the hashed range and its tail). */
static inline uint64_t cs_ind_table_slots(uint32_t bits)
{
	return (1ull << bits) + CS_IND_TAIL;
}

/**
 * cs_ind_table_put - insert @key -> @value into @table (cs_ind_table_slots(@bits) pairs, zeroed
 * first). A key already there is kept (an alias). The slot index, or -1 when its chain would
 * reach the last slot (which stays empty: the lookup's loop ends there): such a key is a miss.
 */
int64_t cs_ind_table_put(uint64_t (*table)[2], uint32_t bits, uint64_t key, uint64_t value);

/** cs_ind_table_find - what the lookup routine does, in C: @key's value, or 0. */
uint64_t cs_ind_table_find(const uint64_t (*table)[2], uint32_t bits, uint64_t key);

/**
 * cs_ind_lookup_emit - the lookup routine for the table at process address @table of @bits
 * into @out (CS_IND_LOOKUP_SIZE bytes, the rest int3).
 */
void cs_ind_lookup_emit(uint64_t table, uint32_t bits, uint8_t out[CS_IND_LOOKUP_SIZE]);

/** cs_ind_ret_emit - the return block R: `nop; ret` (the rest int3). */
void cs_ind_ret_emit(uint8_t out[CS_IND_RET_SIZE]);

/**
 * cs_ind_stub_emit - the stub at @stub for the call `@insn` (@len bytes, accepted by
 * cs_ind_call_ok()) at @site, calling the lookup routine at @lookup and the return block at
 * @ret, into @out (CS_IND_STUB_SLOT bytes, the rest int3); *@ret_point the offset in the stub
 * where a traced function returns (its `call R`), *@miss_ret the offset its miss path's call
 * returns to. False when something is out of rel32 reach.
 */
bool cs_ind_stub_emit(uint64_t stub, uint64_t site, const uint8_t *insn, uint32_t len,
		      uint64_t lookup, uint64_t ret, uint8_t out[CS_IND_STUB_SLOT],
		      uint32_t *ret_point, uint32_t *miss_ret);

/** cs_ind_site_bytes - what the site gets: `jmp @stub`, the rest of its @len bytes int3. */
bool cs_ind_site_bytes(uint64_t site, uint32_t len, uint64_t stub, uint8_t *out);

#endif
