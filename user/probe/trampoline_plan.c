// SPDX-License-Identifier: MIT
/*
 * Entry trampolines, the pure part (user/probe/trampoline_plan.h), on the Zydis decoder.
 *
 * A function whose first instruction (after a hopped endbr64) is not a 5-byte nop gets its
 * first whole instructions, at least 5 bytes of them, moved to a trampoline
 *     nop                      the probe site (tramp_probe_site()): a 1-byte nop, which the
 *                              kernel emulates at its int3
 *     <moved instructions>     rip-relative displacements and relative branches fixed up
 *     jmp back                 to the first instruction that was not moved
 * and a `jmp trampoline` in their place. A jmp pushes nothing, so at the probe site the
 * registers and the stack are exactly those at the function's entry.
 *
 * Why not the 5-byte nop the kernel optimises (a call into its [uprobes-trampoline] page
 * after the first hit, about 80 ns per call less here: bench/bench_trampolines.sh): the
 * kernel writes that call into the process's copy of the trampoline page, and fork does not
 * copy the [uprobes-trampoline] page, so a child that called the function before it execs
 * would jump into nothing unless it were stopped and fixed first, which a stopped or dead
 * recorder cannot do. An emulated site is an int3 in the child too: nothing to fix.
 *
 * Safety rules applied here, from the bytes alone (the process-level rules are in
 * trampoline.c): the function holds the whole patch; nothing in the function branches into
 * the replaced bytes (to their first byte is fine: it is the same entry); no rip-relative
 * operand points into them; every moved instruction can run anywhere once fixed up (no call:
 * its return address would point into the trampoline; no syscall: a restart would rewind into
 * the jmp; no loop/jrcxz/xbegin, which have no 32-bit form).
 */
#include <string.h>
#include <Zydis/Zydis.h>
#include "trampoline_plan.h"

static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
/* The probe site of every trampoline: the one place its bytes are chosen. */
static const uint8_t probe_site[] = { 0x90 };       /* nop: emulated, never optimised */

const uint8_t *tramp_probe_site(size_t *len)
{
	*len = sizeof(probe_site);
	return probe_site;
}

static bool decoder_init(ZydisDecoder *d)
{
	return ZYAN_SUCCESS(ZydisDecoderInit(d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64));
}

static bool decode(const ZydisDecoder *d, const uint8_t *p, uint64_t avail,
		   ZydisDecodedInstruction *insn, ZydisDecodedOperand *ops)
{
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, p, avail, insn, ops));
}

static bool rip_relative(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	for (unsigned i = 0; i < insn->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.base == ZYDIS_REGISTER_RIP)
			return true;
	return false;
}

static bool relative_branch(const ZydisDecodedInstruction *insn)
{
	return insn->raw.imm[0].is_relative;
}

/* Where the instruction at @addr refers to, relative to it: a branch target or rip+disp. */
static bool referenced_address(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
			       uint64_t addr, uint64_t *out)
{
	uint64_t end = addr + insn->length;

	if (relative_branch(insn)) {
		*out = end + (uint64_t)insn->raw.imm[0].value.s;
		return true;
	}
	if (rip_relative(insn, ops)) {
		*out = end + (uint64_t)insn->raw.disp.value;
		return true;
	}
	return false;
}

/* Can this instruction run at another address once its relative parts are fixed up? */
static bool relocatable(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_CALL:       /* its return address would point into the trampoline */
	case ZYDIS_CATEGORY_SYSCALL:    /* a restarted syscall rewinds rip into the replaced bytes */
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSTEM:
	case ZYDIS_CATEGORY_IO:
	case ZYDIS_CATEGORY_IOSTRINGOP:
		return false;
	default:
		break;
	}
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_JRCXZ: case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE: case ZYDIS_MNEMONIC_LOOPNE:
	case ZYDIS_MNEMONIC_XBEGIN:     /* no rel32 form we can rewrite into */
	case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_ENDBR64: case ZYDIS_MNEMONIC_ENDBR32:
		return false;
	default:
		break;
	}
	if (relative_branch(insn)) {
		/* jmp rel8/rel32 and jcc rel8/rel32 only, without operand-size override */
		bool jmp = insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR;
		bool jcc = insn->meta.category == ZYDIS_CATEGORY_COND_BR;

		return (jmp || jcc) && insn->operand_width == 64;
	}
	if (rip_relative(insn, ops))
		return insn->raw.disp.size == 32;
	/* anything else that is relative to rip and not handled above */
	return !(insn->attributes & ZYDIS_ATTRIB_IS_RELATIVE);
}

/*
 * Does the code at @addr (@size bytes) branch into, or point at, (@patch_addr, @patch_end)?
 * With @own (the patched function itself), a moved branch back to @patch_addr counts too.
 * 1: yes; 0: no; -1: bytes that do not decode (nothing is known about them).
 */
static int refers_into(const ZydisDecoder *d, const uint8_t *code, uint64_t size, uint64_t addr,
			uint64_t patch_addr, uint64_t patch_end, bool own)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	uint64_t off;

	for (off = 0; off < size; off += insn.length) {
		uint64_t at = addr + off, target;

		if (!decode(d, code + off, size - off, &insn, ops))
			return -1;
		if (!referenced_address(&insn, ops, at, &target))
			continue;
		if (target > patch_addr && target < patch_end)
			return 1;
		if (own && at >= patch_addr && at < patch_end && relative_branch(&insn) &&
		    target == patch_addr)
			return 1;
	}
	return off != size ? -1 : 0;
}

size_t tramp_referenced_addrs(const uint8_t *code, uint64_t size, uint64_t addr, uint64_t *out,
			      size_t cap)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisDecoder d;
	size_t n = 0;

	if (!decoder_init(&d))
		return 0;
	for (uint64_t off = 0; off < size && n < cap; off += insn.length) {
		uint64_t target;

		if (!decode(&d, code + off, size - off, &insn, ops))
			break;          /* not code from here on: nothing more is known */
		if (referenced_address(&insn, ops, addr + off, &target))
			out[n++] = target;
	}
	return n;
}

bool tramp_refers_into(const uint8_t *code, uint64_t size, uint64_t addr, uint64_t patch_addr,
		       uint64_t patch_end)
{
	ZydisDecoder d;

	return !decoder_init(&d) || refers_into(&d, code, size, addr, patch_addr, patch_end, false) != 0;
}

enum tramp_reason tramp_plan(const uint8_t *code, uint64_t size, uint64_t func_addr,
			     uint64_t patch_addr, struct tramp_plan *out)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisDecoder d;
	uint64_t patch_off = patch_addr - func_addr, patch_end;
	uint32_t len = 0, n = 0;

	memset(out, 0, sizeof(*out));
	if (!decoder_init(&d))
		return TRAMP_DECODE;
	if (patch_addr < func_addr || patch_off + TRAMP_JMP_LEN > size)
		return TRAMP_SHORT;
	if (!memcmp(code + patch_off, nop5, 4))     /* nopl 0(%rax,%rax,1): any last byte */
		return TRAMP_NOT_NEEDED;
	/* the instructions to move: whole ones, at least the jmp's 5 bytes */
	while (len < TRAMP_JMP_LEN) {
		if (!decode(&d, code + patch_off + len, size - patch_off - len, &insn, ops))
			return patch_off + len >= size ? TRAMP_SHORT : TRAMP_DECODE;
		if (!relocatable(&insn, ops))
			return TRAMP_INSN;
		len += insn.length;
		n++;
	}
	patch_end = patch_addr + len;
	/* every instruction of the function: nothing may land inside the replaced bytes */
	switch (refers_into(&d, code, size, func_addr, patch_addr, patch_end, true)) {
	case 1:
		return TRAMP_BRANCH_IN;
	case -1:
		return TRAMP_DECODE;
	}
	out->patch_addr = patch_addr;
	out->patch_len = len;
	out->ninsns = n;
	return TRAMP_OK;
}

enum tramp_reason tramp_plan_first(const uint8_t *code, uint64_t size, uint64_t func_addr,
				   uint64_t patch_addr, struct tramp_plan *out)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisDecoder d;
	uint64_t patch_off = patch_addr - func_addr;

	memset(out, 0, sizeof(*out));
	if (!decoder_init(&d))
		return TRAMP_DECODE;
	if (patch_addr < func_addr || patch_off >= size)
		return TRAMP_SHORT;
	if (!decode(&d, code + patch_off, size - patch_off, &insn, ops))
		return TRAMP_DECODE;
	if (!relocatable(&insn, ops))
		return TRAMP_INSN;
	out->patch_addr = patch_addr;
	out->patch_len = insn.length;
	out->ninsns = 1;
	return TRAMP_OK;
}

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);           /* x86: little-endian */
}

bool tramp_jmp(uint64_t from, uint64_t to, uint8_t out[TRAMP_JMP_LEN])
{
	int64_t rel = (int64_t)(to - (from + TRAMP_JMP_LEN));

	if (!fits32(rel))
		return false;
	out[0] = 0xe9;
	put32(out + 1, (int32_t)rel);
	return true;
}

/* One moved instruction at @at (its original address @orig), written to @o. Returns its size. */
static int emit_one(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
		    const uint8_t *src, uint64_t orig, uint64_t at, uint8_t *o)
{
	uint64_t target;

	if (relative_branch(insn)) {
		int64_t rel;
		int n;

		target = orig + insn->length + (uint64_t)insn->raw.imm[0].value.s;
		if (insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
			o[0] = 0xe9;                        /* jmp rel32 */
			n = 5;
		} else {
			/* jcc rel8 is 7x, jcc rel32 is 0f 8x: the condition is the low nibble */
			uint8_t op = insn->raw.imm[0].size == 8 ? src[insn->length - 2]
							       : src[insn->length - 5];
			o[0] = 0x0f;
			o[1] = 0x80 | (op & 0x0f);
			n = 6;
		}
		rel = (int64_t)(target - (at + (uint64_t)n));
		if (!fits32(rel))
			return -1;
		put32(o + n - 4, (int32_t)rel);
		return n;
	}
	memcpy(o, src, insn->length);
	if (rip_relative(insn, ops)) {
		int64_t disp;

		target = orig + insn->length + (uint64_t)insn->raw.disp.value;
		disp = (int64_t)(target - (at + insn->length));
		if (!fits32(disp))
			return -1;
		put32(o + insn->raw.disp.offset, (int32_t)disp);
	}
	return insn->length;
}

enum tramp_reason tramp_emit(const uint8_t *code, const struct tramp_plan *plan,
			     uint64_t tramp_addr, uint8_t out[TRAMP_SLOT])
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZydisDecoder d;
	uint32_t in = 0, o = sizeof(probe_site);

	memset(out, 0xcc, TRAMP_SLOT);
	if (!decoder_init(&d))
		return TRAMP_DECODE;
	memcpy(out, probe_site, sizeof(probe_site));
	while (in < plan->patch_len) {
		int n;

		if (!decode(&d, code + in, plan->patch_len - in, &insn, ops))
			return TRAMP_DECODE;
		/* a jcc grows from 2 to 6 bytes; the planner bounds the moved bytes to < 20 */
		if (o + 15 + 1 + TRAMP_JMP_LEN > TRAMP_SLOT)
			return TRAMP_INSN;
		n = emit_one(&insn, ops, code + in, plan->patch_addr + in, tramp_addr + o, out + o);
		if (n < 0)
			return TRAMP_RANGE;
		in += insn.length;
		o += (uint32_t)n;
	}
	if (!tramp_jmp(tramp_addr + o, plan->patch_addr + plan->patch_len, out + o))
		return TRAMP_RANGE;
	return TRAMP_OK;
}

bool tramp_unpatch_bytes(const uint8_t *jmp, const uint8_t *orig, const uint8_t *now, uint8_t *out)
{
	bool ours = false;

	for (size_t i = 0; i < TRAMP_JMP_LEN; i++) {
		bool mine = now[i] == jmp[i];

		out[i] = mine ? orig[i] : now[i];
		ours |= mine;
	}
	return ours;
}
