// SPDX-License-Identifier: MIT
/*
 * Tail-call sites, the pure part (user/patch/callsite_tail.h), on the Zydis decoder.
 */
#include <string.h>
#include <Zydis/Zydis.h>
#include "callsite_tail.h"

/* The length of the tail-call form at @p (@avail bytes): e9 rel32 or 0f 8x rel32, else 0. */
static uint32_t tail_form(const uint8_t *p, uint64_t avail)
{
	if (avail >= CS_TAIL_JMP_LEN && p[0] == 0xe9)
		return CS_TAIL_JMP_LEN;
	if (avail >= CS_TAIL_JCC_LEN && p[0] == 0x0f && (p[1] & 0xf0) == 0x80)
		return CS_TAIL_JCC_LEN;
	return 0;
}

size_t cs_find_tails(const uint8_t *code, uint64_t size, uint64_t addr, const uint64_t *targets,
		     size_t ntargets, struct cs_tail_call *out, size_t cap)
{
	ZydisDecodedInstruction insn;
	ZydisDecoder d;
	size_t n = 0;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return 0;
	for (uint64_t off = 0; off < size && n < cap; off += insn.length) {
		uint32_t len;
		int32_t rel;
		int i;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, code + off, size - off,
								&insn)))
			break;          /* not code from here on: nothing more is known */
		/* only the plain forms: no prefix, the opcode first, a 32-bit displacement last */
		len = tail_form(code + off, size - off);
		if (!len || insn.length != len || !insn.raw.imm[0].is_relative)
			continue;
		memcpy(&rel, code + off + len - 4, sizeof(rel));    /* x86: little-endian */
		i = cs_target_index(addr + off + len + (uint64_t)(int64_t)rel, targets, ntargets);
		if (i >= 0)
			out[n++] = (struct cs_tail_call){ .site = addr + off, .target = (uint32_t)i,
							  .len = (uint8_t)len };
	}
	return n;
}

bool cs_tail_bytes(const uint8_t *orig, uint32_t len, uint64_t from, uint64_t to, uint8_t *out)
{
	int64_t rel = (int64_t)(to - (from + len));
	int32_t v = (int32_t)rel;

	if (!len || tail_form(orig, len) != len || rel != v)
		return false;
	memcpy(out, orig, len - 4);
	memcpy(out + len - 4, &v, sizeof(v));
	return true;
}

bool cs_jump_form(const uint8_t *p, uint32_t len, int64_t *rel, uint32_t *n, bool *jcc)
{
	int32_t v;

	if (len >= CS_TAIL_JMP_LEN && p[0] == 0xe9) {
		memcpy(&v, p + 1, sizeof(v));
		*rel = v, *n = CS_TAIL_JMP_LEN, *jcc = false;
	} else if (len >= CS_TAIL_JCC_LEN && p[0] == 0x0f && (p[1] & 0xf0) == 0x80) {
		memcpy(&v, p + 2, sizeof(v));
		*rel = v, *n = CS_TAIL_JCC_LEN, *jcc = true;
	} else if (len >= 2 && (p[0] == 0xeb || (p[0] & 0xf0) == 0x70)) {
		*rel = (int8_t)p[1], *n = 2, *jcc = p[0] != 0xeb;
	} else {
		return false;
	}
	return true;
}
