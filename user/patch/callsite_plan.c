// SPDX-License-Identifier: MIT
/*
 * Call-site redirection, the pure part (user/patch/callsite_plan.h), on the Zydis decoder.
 */
#include <string.h>
#include <Zydis/Zydis.h>
#include "callsite_plan.h"

static const uint8_t probe_nop[] = { 0x90 };
static const uint8_t lea_rsp8[] = { 0x48, 0x8d, 0x64, 0x24, 0x08 };   /* lea 8(%rsp),%rsp */

_Static_assert(sizeof(lea_rsp8) == CS_PROBE_A, "probe A follows the lea");
_Static_assert(ATF_SITE_RET_FROM_PROBE_A == sizeof(probe_nop) + CS_CALL_LEN,
	       "probe B is where the stub's call returns");
_Static_assert(ATF_SITE_JMP_FROM_RET == sizeof(probe_nop), "the jmp back follows probe B");

int cs_target_index(uint64_t v, const uint64_t *t, size_t n)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid] == v)
			return (int)mid;
		if (t[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

size_t cs_find_calls(const uint8_t *code, uint64_t size, uint64_t addr, const uint64_t *targets,
		     size_t ntargets, struct cs_call *out, size_t cap)
{
	ZydisDecodedInstruction insn;
	ZydisDecoder d;
	size_t n = 0;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return 0;
	for (uint64_t off = 0; off < size && n < cap; off += insn.length) {
		uint64_t target;
		int i;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, code + off, size - off,
								&insn)))
			break;          /* not code from here on: nothing more is known */
		/* only the plain 5-byte form: no prefix, e8, a 32-bit displacement */
		if (insn.mnemonic != ZYDIS_MNEMONIC_CALL || insn.length != CS_CALL_LEN ||
		    code[off] != 0xe8 || !insn.raw.imm[0].is_relative)
			continue;
		target = addr + off + CS_CALL_LEN + (uint64_t)insn.raw.imm[0].value.s;
		i = cs_target_index(target, targets, ntargets);
		if (i >= 0)
			out[n++] = (struct cs_call){ .site = addr + off, .target = (uint32_t)i };
	}
	return n;
}

static bool rel32(uint64_t from_end, uint64_t to, uint8_t *p)
{
	int64_t rel = (int64_t)(to - from_end);
	int32_t v = (int32_t)rel;

	if (rel != v)
		return false;
	memcpy(p, &v, 4);       /* x86: little-endian */
	return true;
}

bool cs_call_bytes(uint64_t from, uint64_t to, uint8_t out[CS_CALL_LEN])
{
	out[0] = 0xe8;
	return rel32(from + CS_CALL_LEN, to, out + 1);
}

bool cs_stub_emit(uint64_t stub, uint64_t site, uint64_t body, uint8_t out[CS_STUB_SLOT])
{
	uint32_t o = 0;

	memset(out, 0xcc, CS_STUB_SLOT);
	memcpy(out + o, lea_rsp8, sizeof(lea_rsp8));
	o += sizeof(lea_rsp8);
	memcpy(out + o, probe_nop, sizeof(probe_nop));          /* probe A */
	o += sizeof(probe_nop);
	if (!cs_call_bytes(stub + o, body, out + o))
		return false;
	o += CS_CALL_LEN;
	memcpy(out + o, probe_nop, sizeof(probe_nop));          /* probe B */
	o += sizeof(probe_nop);
	out[o] = 0xe9;                                          /* jmp site+5 */
	return rel32(stub + o + 5, site + CS_CALL_LEN, out + o + 1);
}

bool cs_stub_emit_far(uint64_t stub, uint64_t site, uint64_t body, uint8_t out[CS_STUB_SLOT])
{
	static const uint8_t jmp_abs[] = { 0xff, 0x25, 0, 0, 0, 0 };    /* jmp *0(%rip) */
	const uint64_t thunk = CS_PROBE_B + sizeof(probe_nop) + CS_CALL_LEN;

	_Static_assert(CS_PROBE_B + 1 + CS_CALL_LEN + 6 + 8 <= CS_STUB_SLOT, "the thunk fits");
	/* the near stub's layout, its call aimed at the thunk after it */
	if (!cs_stub_emit(stub, site, stub + thunk, out))
		return false;
	memcpy(out + thunk, jmp_abs, sizeof(jmp_abs));
	memcpy(out + thunk + sizeof(jmp_abs), &body, sizeof(body));    /* x86: little-endian */
	return true;
}

uint64_t cs_plt_slot(const uint8_t *code, size_t size, uint64_t addr)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t o = 0;
	int32_t disp;

	if (size >= sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64)))
		o = sizeof(endbr64);
	if (o < size && code[o] == 0xf2)          /* bnd (MPX): the jump is the same */
		o++;
	if (size < o + 6 || code[o] != 0xff || code[o + 1] != 0x25)
		return 0;
	memcpy(&disp, code + o + 2, 4);
	return addr + o + 6 + (uint64_t)(int64_t)disp;
}

size_t cs_plt_decode(const uint8_t *code, uint64_t size, uint64_t addr, uint32_t stride,
		     const struct cs_plt_reloc *relocs, size_t nrelocs, struct cs_plt_entry *out,
		     size_t cap)
{
	size_t n = 0;

	if (!stride)
		return 0;
	for (uint64_t off = 0; off + stride <= size && n < cap; off += stride) {
		uint64_t slot = cs_plt_slot(code + off, stride, addr + off);
		size_t lo = 0, hi = nrelocs;

		while (slot && lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (relocs[mid].slot == slot) {
				out[n++] = (struct cs_plt_entry){ .addr = addr + off, .slot = slot,
								  .sym = relocs[mid].sym };
				break;
			}
			if (relocs[mid].slot < slot)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return n;
}
