// SPDX-License-Identifier: MIT
/* Unit tests for call-site redirection's pure part: the call finder and the stub encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "callsite_plan.h"

static int32_t rel_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* e8 rel32 at @code[@off] (address @addr + @off) calling @to. */
static void put_call(uint8_t *code, size_t off, uint64_t addr, uint64_t to)
{
	int32_t rel = (int32_t)(to - (addr + off + 5));

	code[off] = 0xe8;
	memcpy(code + off + 1, &rel, 4);
}

static void test_find_calls_only_direct_to_targets(void **state)
{
	const uint64_t addr = 0x401000, f = 0x402000, g = 0x403000, other = 0x404000;
	const uint64_t targets[] = { f, g };        /* sorted */
	uint8_t code[64];
	struct cs_call out[8];
	size_t n = 0;

	memset(code, 0x90, sizeof(code));
	put_call(code, 0, addr, f);                 /* call f */
	code[5] = 0x89; code[6] = 0xc7;             /* mov %eax,%edi */
	put_call(code, 7, addr, other);             /* call other: not traced */
	code[12] = 0xff; code[13] = 0xd0;           /* call *%rax: indirect */
	code[14] = 0xe9;                            /* jmp g: a tail call, not a call */
	{ int32_t rel = (int32_t)(g - (addr + 19)); memcpy(code + 15, &rel, 4); }
	put_call(code, 19, addr, g);                /* call g */
	code[24] = 0x48; code[25] = 0xb8;           /* movabs $..., %rax holding e8 bytes */
	put_call(code, 26, addr, f);                /* inside the immediate: not an instruction */
	memset(code + 31, 0, 3);
	put_call(code, 34, addr, f);                /* call f again */
	n = cs_find_calls(code, 39, addr, targets, 2, out, 8);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].site, addr);
	assert_int_equal(out[0].target, 0);
	assert_int_equal(out[1].site, addr + 19);
	assert_int_equal(out[1].target, 1);
	assert_int_equal(out[2].site, addr + 34);
	assert_int_equal(out[2].target, 0);
	/* @cap bounds the list */
	assert_int_equal(cs_find_calls(code, 39, addr, targets, 2, out, 1), 1);
}

static void test_find_calls_stops_at_bad_bytes(void **state)
{
	const uint64_t addr = 0x1000, f = 0x2000;
	uint8_t code[16];
	struct cs_call out[4];

	memset(code, 0x90, sizeof(code));
	code[0] = 0x0f; code[1] = 0x0b;             /* ud2 decodes; then an invalid opcode */
	code[2] = 0x06;                             /* push %es: invalid in 64-bit mode */
	put_call(code, 3, addr, f);
	assert_int_equal(cs_find_calls(code, 8, addr, &f, 1, out, 4), 0);
	/* a truncated call at the end is not one */
	put_call(code, 0, addr, f);
	assert_int_equal(cs_find_calls(code, 4, addr, &f, 1, out, 4), 0);
	assert_int_equal(cs_find_calls(code, 5, addr, &f, 1, out, 4), 1);
}

static void test_stub_bytes(void **state)
{
	const uint64_t stub = 0x7f0000001040, site = 0x7f0000400123, body = 0x7f0000001000;
	static const uint8_t lea[] = { 0x48, 0x8d, 0x64, 0x24, 0x08 };
	uint8_t s[CS_STUB_SLOT];

	assert_true(cs_stub_emit(stub, site, body, s));
	assert_memory_equal(s, lea, sizeof(lea));            /* lea 8(%rsp),%rsp */
	assert_int_equal(s[CS_PROBE_A], 0x90);               /* probe A */
	assert_int_equal(s[CS_PROBE_A + 1], 0xe8);           /* call body */
	assert_int_equal(stub + CS_PROBE_A + 1 + 5 + rel_at(s + CS_PROBE_A + 2), body);
	assert_int_equal(CS_PROBE_B, CS_PROBE_A + 6);         /* where that call returns */
	assert_int_equal(s[CS_PROBE_B], 0x90);               /* probe B */
	assert_int_equal(s[CS_PROBE_B + 1], 0xe9);           /* jmp site+5 */
	assert_int_equal(stub + CS_PROBE_B + 1 + 5 + rel_at(s + CS_PROBE_B + 2), site + 5);
	for (size_t i = CS_PROBE_B + 6; i < CS_STUB_SLOT; i++)
		assert_int_equal(s[i], 0xcc);
}

static void test_out_of_reach(void **state)
{
	uint8_t s[CS_STUB_SLOT], c[CS_CALL_LEN];

	assert_false(cs_stub_emit(0x100000000000, 0x1000, 0x100000000100, s));   /* site far */
	assert_false(cs_stub_emit(0x100000000000, 0x100000001000, 0x1000, s));   /* body far */
	assert_false(cs_call_bytes(0x1000, 0x100000000000, c));
	assert_true(cs_call_bytes(0x401000, 0x400000, c));
	assert_int_equal(c[0], 0xe8);
	assert_int_equal(0x401005 + (int64_t)rel_at(c + 1), 0x400000);
}

/* A stub in another module: the near layout, its call to a thunk that jumps to an absolute body. */
static void test_far_stub(void **state)
{
	const uint64_t stub = 0x55550000a000, site = 0x555500001234, body = 0x7f0012345680;
	uint8_t s[CS_STUB_SLOT], near[CS_STUB_SLOT];
	uint64_t thunk, to;

	(void)state;
	assert_true(cs_stub_emit_far(stub, site, body, s));
	assert_int_equal(s[CS_PROBE_A], 0x90);
	assert_int_equal(s[CS_PROBE_A + 1], 0xe8);
	thunk = stub + CS_PROBE_A + 1 + 5 + rel_at(s + CS_PROBE_A + 2);
	assert_int_equal(thunk, stub + CS_PROBE_B + 6);       /* right after jmp site+5 */
	assert_int_equal(s[CS_PROBE_B], 0x90);
	assert_int_equal(stub + CS_PROBE_B + 1 + 5 + rel_at(s + CS_PROBE_B + 2), site + 5);
	assert_int_equal(s[thunk - stub], 0xff);               /* jmp *0(%rip) */
	assert_int_equal(s[thunk - stub + 1], 0x25);
	assert_int_equal(rel_at(s + thunk - stub + 2), 0);
	memcpy(&to, s + thunk - stub + 6, 8);
	assert_int_equal(to, body);
	assert_true(thunk - stub + 14 <= CS_STUB_SLOT);
	/* the same bytes up to the thunk as a near stub whose body is the thunk */
	assert_true(cs_stub_emit(stub, site, thunk, near));
	assert_memory_equal(s, near, CS_PROBE_B + 6);
	assert_false(cs_stub_emit_far(0x100000000000, 0x1000, body, s));      /* site far */
}

/* A 16-byte PLT entry at @code: [endbr64] [bnd] jmp *slot(%rip), the rest @fill. */
static void put_plt(uint8_t *code, uint64_t addr, bool ibt, bool bnd, uint64_t slot, uint8_t fill)
{
	size_t o = 0;
	int32_t disp;

	memset(code, fill, 16);
	if (ibt) {
		code[0] = 0xf3; code[1] = 0x0f; code[2] = 0x1e; code[3] = 0xfa;
		o = 4;
	}
	if (bnd)
		code[o++] = 0xf2;
	code[o] = 0xff;
	code[o + 1] = 0x25;
	disp = (int32_t)(slot - (addr + o + 6));
	memcpy(code + o + 2, &disp, 4);
}

static void test_plt_slot_forms(void **state)
{
	const uint64_t addr = 0x1020, slot = 0x4018;
	uint8_t e[16];

	put_plt(e, addr, false, false, slot, 0x90);  /* .plt: jmp *slot; push; jmp PLT0 */
	assert_int_equal(cs_plt_slot(e, sizeof(e), addr), slot);
	put_plt(e, addr, true, true, slot, 0x90);    /* .plt.sec: endbr64; bnd jmp *slot; nop */
	assert_int_equal(cs_plt_slot(e, sizeof(e), addr), slot);
	put_plt(e, addr, true, false, slot, 0x90);   /* endbr64; jmp *slot */
	assert_int_equal(cs_plt_slot(e, sizeof(e), addr), slot);
	put_plt(e, addr, false, true, slot, 0x90);   /* bnd jmp *slot */
	assert_int_equal(cs_plt_slot(e, sizeof(e), addr), slot);
	/* an IBT .plt entry: endbr64; push $n; bnd jmp PLT0 (no slot of its own) */
	memset(e, 0x90, sizeof(e));
	e[0] = 0xf3; e[1] = 0x0f; e[2] = 0x1e; e[3] = 0xfa;
	e[4] = 0x68; e[9] = 0xf2; e[10] = 0xe9;
	assert_int_equal(cs_plt_slot(e, sizeof(e), addr), 0);
	/* PLT0: push GOT+8(%rip) first */
	e[0] = 0xff; e[1] = 0x35;
	assert_int_equal(cs_plt_slot(e, sizeof(e), addr), 0);
	/* truncated */
	put_plt(e, addr, true, true, slot, 0x90);
	assert_int_equal(cs_plt_slot(e, 10, addr), 0);
	assert_int_equal(cs_plt_slot(e, 11, addr), slot);
}

static void test_plt_decode_maps_slots_to_symbols(void **state)
{
	const uint64_t addr = 0x1000;
	const struct cs_plt_reloc relocs[] = { { 0x4000, 7 }, { 0x4008, 3 }, { 0x4010, 9 } };
	struct cs_plt_entry out[8];
	uint8_t plt[5 * 16];

	/* PLT0, then entries for 0x4008, an unrelocated slot, 0x4000, 0x4010 */
	memset(plt, 0x90, 16);
	plt[0] = 0xff; plt[1] = 0x35;
	put_plt(plt + 16, addr + 16, true, true, 0x4008, 0x90);
	put_plt(plt + 32, addr + 32, true, true, 0x5000, 0x90);
	put_plt(plt + 48, addr + 48, true, true, 0x4000, 0x90);
	put_plt(plt + 64, addr + 64, true, true, 0x4010, 0x90);
	assert_int_equal(cs_plt_decode(plt, sizeof(plt), addr, 16, relocs, 3, out, 8), 3);
	assert_int_equal(out[0].addr, addr + 16);
	assert_int_equal(out[0].slot, 0x4008);
	assert_int_equal(out[0].sym, 3);
	assert_int_equal(out[1].addr, addr + 48);
	assert_int_equal(out[1].sym, 7);
	assert_int_equal(out[2].addr, addr + 64);
	assert_int_equal(out[2].sym, 9);
	/* @cap bounds it; a zero stride or a section shorter than one entry gives none */
	assert_int_equal(cs_plt_decode(plt, sizeof(plt), addr, 16, relocs, 3, out, 1), 1);
	assert_int_equal(cs_plt_decode(plt, sizeof(plt), addr, 0, relocs, 3, out, 8), 0);
	assert_int_equal(cs_plt_decode(plt, 15, addr, 16, relocs, 3, out, 8), 0);
	/* 8-byte .plt.got entries: jmp *slot(%rip); xchg %ax,%ax */
	put_plt(plt, addr, false, false, 0x4010, 0x66);
	put_plt(plt + 8, addr + 8, false, false, 0x4000, 0x66);
	assert_int_equal(cs_plt_decode(plt, 16, addr, 8, relocs, 3, out, 8), 2);
	assert_int_equal(out[0].sym, 9);
	assert_int_equal(out[1].addr, addr + 8);
	assert_int_equal(out[1].sym, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_calls_only_direct_to_targets),
		cmocka_unit_test(test_find_calls_stops_at_bad_bytes),
		cmocka_unit_test(test_stub_bytes),
		cmocka_unit_test(test_out_of_reach),
		cmocka_unit_test(test_far_stub),
		cmocka_unit_test(test_plt_slot_forms),
		cmocka_unit_test(test_plt_decode_maps_slots_to_symbols),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
