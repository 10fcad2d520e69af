// SPDX-License-Identifier: MIT
/*
 * Call-site redirection, the pure part (user/patch/callsite_plan.h), on the Zydis decoder.
 */
#include <string.h>
#include <Zydis/Zydis.h>
#include "callsite_plan.h"

static const uint8_t lea_rsp8[] = { 0x48, 0x8d, 0x64, 0x24, 0x08 };   /* lea 8(%rsp),%rsp */

_Static_assert(CS_STUB_RET == sizeof(lea_rsp8) + CS_CALL_LEN, "f returns to the stub's call R_f");
_Static_assert(ATF_SITE_JMP_FROM_RET == CS_CALL_LEN, "the jmp back follows the call R_f");

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

/* `jmp @to` (e9 rel32) at @from into @out; false when out of reach. */
static bool jmp_bytes(uint64_t from, uint64_t to, uint8_t out[5])
{
	out[0] = 0xe9;
	return rel32(from + 5, to, out + 1);
}

bool cs_fn_block_emit(uint64_t at, uint64_t body, uint8_t out[CS_FN_SLOT])
{
	_Static_assert(CS_FN_RET == CS_FN_ENTRY + 6 && CS_FN_TAIL == CS_FN_RET + 2 &&
		       CS_FN_TAIL + 6 <= CS_FN_SLOT, "the block's layout");
	memset(out, 0xcc, CS_FN_SLOT);
	out[CS_FN_ENTRY] = 0x90;                                /* E_f's probe */
	out[CS_FN_RET] = 0x90;                                  /* R_f's probe */
	out[CS_FN_RET + 1] = 0xc3;                              /* ret */
	out[CS_FN_TAIL] = 0x90;                                 /* T_f's probe */
	return jmp_bytes(at + CS_FN_ENTRY + 1, body, out + CS_FN_ENTRY + 1) &&
	       jmp_bytes(at + CS_FN_TAIL + 1, body, out + CS_FN_TAIL + 1);
}

/* The stub's layout, its calls aimed at @entry and @ret. */
static bool stub_emit(uint64_t stub, uint64_t site, uint64_t entry, uint64_t ret,
		      uint8_t out[CS_STUB_SLOT])
{
	uint32_t o = 0;

	memset(out, 0xcc, CS_STUB_SLOT);
	memcpy(out + o, lea_rsp8, sizeof(lea_rsp8));
	o += sizeof(lea_rsp8);
	if (!cs_call_bytes(stub + o, entry, out + o))            /* call E_f */
		return false;
	o += CS_CALL_LEN;
	if (!cs_call_bytes(stub + o, ret, out + o))              /* call R_f */
		return false;
	o += CS_CALL_LEN;
	return jmp_bytes(stub + o, site + CS_CALL_LEN, out + o);  /* jmp site+5 */
}

bool cs_stub_emit(uint64_t stub, uint64_t site, uint64_t fn, uint8_t out[CS_STUB_SLOT])
{
	return stub_emit(stub, site, fn + CS_FN_ENTRY, fn + CS_FN_RET, out);
}

bool cs_stub_emit_far(uint64_t stub, uint64_t site, uint64_t fn, uint8_t out[CS_STUB_SLOT])
{
	static const uint8_t jmp_abs[] = { 0xff, 0x25, 0, 0, 0, 0 };    /* jmp *0(%rip) */
	const uint64_t thunk = CS_STUB_RET + CS_CALL_LEN + 5, size = sizeof(jmp_abs) + 8;
	const uint64_t to[2] = { fn + CS_FN_ENTRY, fn + CS_FN_RET };

	_Static_assert(CS_STUB_RET + CS_CALL_LEN + 5 + 2 * (6 + 8) <= CS_STUB_SLOT, "the thunks fit");
	/* the near stub's layout, its calls aimed at the thunks after it */
	if (!stub_emit(stub, site, stub + thunk, stub + thunk + size, out))
		return false;
	for (int i = 0; i < 2; i++) {
		memcpy(out + thunk + i * size, jmp_abs, sizeof(jmp_abs));
		memcpy(out + thunk + i * size + sizeof(jmp_abs), &to[i], 8);  /* x86: little-endian */
	}
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
