// SPDX-License-Identifier: MIT
/*
 * Indirect call sites, the pure part (user/patch/callsite_ind.h): which `call *mem` can be
 * redirected, the lookup table, and the code of the lookup routine, the indirect entries and
 * the stubs.
 */
#include <string.h>
#include <Zydis/Zydis.h>
#include "callsite_ind.h"

static bool is_rex(uint8_t b)
{
	return (b & 0xf0) == 0x40;
}

bool cs_ind_call_ok(const uint8_t *code, size_t size, uint32_t len)
{
	uint32_t o = 0;
	uint8_t modrm;

	if (len < CS_IND_MIN_LEN || len > CS_IND_MAX_LEN || len > size)
		return false;
	if (is_rex(code[0]))
		o++;
	/* ff /2 with a memory operand; any other prefix (a segment, 66, notrack) is left alone */
	if (o + 2 > len || code[o] != 0xff)
		return false;
	modrm = code[o + 1];
	return (modrm >> 3 & 7) == 2 && (modrm >> 6) != 3;
}

size_t cs_find_ind_calls(const uint8_t *code, uint64_t size, uint64_t addr,
			 struct cs_ind_call *out, size_t cap, size_t *nshort)
{
	ZydisDecodedInstruction insn;
	ZydisDecoder d;
	size_t n = 0;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return 0;
	for (uint64_t off = 0; off < size && n < cap; off += insn.length) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, code + off, size - off,
								&insn)))
			break;          /* not code from here on: nothing more is known */
		if (insn.mnemonic != ZYDIS_MNEMONIC_CALL)
			continue;
		if (cs_ind_call_ok(code + off, size - off, insn.length))
			out[n++] = (struct cs_ind_call){ .site = addr + off, .len = insn.length };
		else if (insn.length < CS_IND_MIN_LEN && code[off] != 0xe8)
			++*nshort;      /* call *%rax, call *0x18(%rbx): a jmp would cover the next */
	}
	return n;
}

uint32_t cs_ind_table_bits(size_t n)
{
	uint32_t bits = 4;

	while (bits < 40 && (1ull << bits) < 2 * (uint64_t)n)
		bits++;
	return bits;
}

int64_t cs_ind_table_put(uint64_t (*table)[2], uint32_t bits, uint64_t key, uint64_t value)
{
	uint64_t last = cs_ind_table_slots(bits) - 1;

	if (key <= CS_IND_TOMBSTONE)
		return -1;
	for (uint64_t i = cs_ind_hash(key, bits); i < last; i++) {
		if (table[i][0] == key)
			return -1;      /* an alias: the first one stays */
		if (!table[i][0]) {
			table[i][0] = key;
			table[i][1] = value;
			return (int64_t)i;
		}
	}
	return -1;
}

uint64_t cs_ind_table_find(const uint64_t (*table)[2], uint32_t bits, uint64_t key)
{
	for (uint64_t i = cs_ind_hash(key, bits); table[i][0]; i++)
		if (table[i][0] == key)
			return table[i][1];
	return 0;
}

/* Appends @n bytes to @out at *@o. */
static void put(uint8_t *out, uint32_t *o, const void *bytes, uint32_t n)
{
	memcpy(out + *o, bytes, n);
	*o += n;
}

static void put64(uint8_t *out, uint32_t *o, uint64_t v)
{
	put(out, o, &v, sizeof(v));             /* x86: little-endian */
}

static bool rel32_at(uint8_t *p, uint64_t from_end, uint64_t to)
{
	int64_t rel = (int64_t)(to - from_end);
	int32_t v = (int32_t)rel;

	if (rel != v)
		return false;
	memcpy(p, &v, sizeof(v));
	return true;
}

void cs_ind_lookup_emit(uint64_t table, uint32_t bits, uint8_t out[CS_IND_LOOKUP_SIZE])
{
	static const uint8_t head[] = { 0x50, 0x51, 0x48, 0xb8 };      /* push rax; push rcx; movabs rax */
	static const uint8_t mul[] = { 0x49, 0x0f, 0xaf, 0xc3,        /* imul %r11,%rax */
				       0x48, 0xc1, 0xe8 };             /* shr $ib,%rax */
	static const uint8_t scale[] = { 0x48, 0xc1, 0xe0, 0x04,      /* shl $4,%rax */
					 0x48, 0xb9 };                 /* movabs $table,%rcx */
	static const uint8_t loop[] = {
		0x48, 0x01, 0xc1,               /* add %rax,%rcx */
		0x48, 0x8b, 0x01,               /* loop: mov (%rcx),%rax */
		0x4c, 0x39, 0xd8,               /* cmp %r11,%rax */
		0x74, 0x0b,                     /* je hit */
		0x48, 0x85, 0xc0,               /* test %rax,%rax */
		0x74, 0x10,                     /* je miss */
		0x48, 0x83, 0xc1, 0x10,         /* add $16,%rcx */
		0xeb, 0xed,                     /* jmp loop */
		0x4c, 0x8b, 0x59, 0x08,         /* hit: mov 8(%rcx),%r11 */
		0x59, 0x58,                     /* pop %rcx; pop %rax */
		0x4d, 0x39, 0xdb,               /* cmp %r11,%r11: ZF=1 */
		0xc3,                           /* ret */
		0x59, 0x58,                     /* miss: pop %rcx; pop %rax */
		0x48, 0x85, 0xe4,               /* test %rsp,%rsp: ZF=0 */
		0xc3,                           /* ret */
	};
	uint8_t shift = (uint8_t)(64 - bits);
	uint32_t o = 0;

	_Static_assert(4 + 8 + 7 + 1 + 6 + 8 + sizeof(loop) <= CS_IND_LOOKUP_SIZE, "it fits");
	memset(out, 0xcc, CS_IND_LOOKUP_SIZE);
	put(out, &o, head, sizeof(head));
	put64(out, &o, CS_IND_HASH_MUL);
	put(out, &o, mul, sizeof(mul));
	put(out, &o, &shift, 1);
	put(out, &o, scale, sizeof(scale));
	put64(out, &o, table);
	put(out, &o, loop, sizeof(loop));
}

void cs_ind_ret_emit(uint8_t out[CS_IND_RET_SIZE])
{
	memset(out, 0xcc, CS_IND_RET_SIZE);
	out[0] = 0x90;                          /* the return block's probe */
	out[1] = 0xc3;                          /* ret */
}

/* `mov OP,%r11` from `call *OP` (@insn, @len bytes) at @site, placed at @at; its length or 0. */
static uint32_t mov_r11(const uint8_t *insn, uint32_t len, uint64_t site, uint64_t at, uint8_t *out)
{
	uint32_t o = is_rex(insn[0]) ? 1 : 0, rest = len - o - 1, n;
	uint8_t modrm = insn[o + 1];

	/* REX.W and REX.R (the register is r11), the operand's REX.X and REX.B kept */
	out[0] = (uint8_t)(0x4c | (o ? insn[0] & 0x03 : 0));
	out[1] = 0x8b;
	memcpy(out + 2, insn + o + 1, rest);    /* modrm, sib, displacement */
	out[2] = (uint8_t)((modrm & 0xc7) | 3 << 3);
	n = 2 + rest;
	if ((modrm & 0xc7) == 0x05) {           /* rip-relative: the same address from here */
		int32_t disp;

		memcpy(&disp, insn + o + 2, sizeof(disp));
		if (!rel32_at(out + 3, at + n, site + len + (uint64_t)(int64_t)disp))
			return 0;
	}
	return n;
}

bool cs_ind_stub_emit(uint64_t stub, uint64_t site, const uint8_t *insn, uint32_t len,
		      uint64_t lookup, uint64_t ret, uint8_t out[CS_IND_STUB_SLOT],
		      uint32_t *ret_point, uint32_t *miss_ret)
{
	static const uint8_t call_r11[] = { 0x41, 0xff, 0xd3 };        /* call *%r11 */
	uint32_t o, jne;

	memset(out, 0xcc, CS_IND_STUB_SLOT);
	if (!cs_ind_call_ok(insn, len, len))
		return false;
	o = mov_r11(insn, len, site, stub, out);
	if (!o)
		return false;
	out[o] = 0xe8;                                          /* call lookup */
	if (!rel32_at(out + o + 1, stub + o + 5, lookup))
		return false;
	o += 5;
	jne = o;
	out[o] = 0x75;                                          /* jne miss */
	o += 2;
	put(out, &o, call_r11, sizeof(call_r11));
	*ret_point = o;
	out[o] = 0xe8;                                          /* call R */
	if (!rel32_at(out + o + 1, stub + o + 5, ret))
		return false;
	o += 5;
	out[o] = 0xe9;                                          /* jmp site+L */
	if (!rel32_at(out + o + 1, stub + o + 5, site + len))
		return false;
	o += 5;
	out[jne + 1] = (uint8_t)(o - (jne + 2));
	put(out, &o, call_r11, sizeof(call_r11));               /* miss: the target itself */
	*miss_ret = o;
	out[o] = 0xe9;                                          /* jmp site+L */
	if (!rel32_at(out + o + 1, stub + o + 5, site + len))
		return false;
	return o + 5 <= CS_IND_STUB_SLOT;
}

bool cs_ind_site_bytes(uint64_t site, uint32_t len, uint64_t stub, uint8_t *out)
{
	if (len < CS_IND_MIN_LEN || len > CS_IND_MAX_LEN)
		return false;
	memset(out, 0xcc, len);
	out[0] = 0xe9;
	return rel32_at(out + 1, site + 5, stub);
}
