// SPDX-License-Identifier: MIT
/* Unit tests for tail-call sites' pure part: the jmp/jcc finder, the tail stub encoder, and the
 * jump forms a function may begin with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "callsite_tail.h"

static int32_t rel_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* @op (@oplen bytes) then a rel32 at @code[@off] (address @addr + @off) aimed at @to. */
static size_t put_branch(uint8_t *code, size_t off, uint64_t addr, const uint8_t *op, size_t oplen,
			 uint64_t to)
{
	int32_t rel = (int32_t)(to - (addr + off + oplen + 4));

	memcpy(code + off, op, oplen);
	memcpy(code + off + oplen, &rel, 4);
	return off + oplen + 4;
}

static const uint8_t jmp[] = { 0xe9 }, jne[] = { 0x0f, 0x85 }, jle[] = { 0x0f, 0x8e };
static const uint8_t call[] = { 0xe8 };

static void test_find_tails_jmp_and_jcc_to_targets(void **state)
{
	const uint64_t addr = 0x401000, f = 0x402000, g = 0x403000, other = 0x404000;
	const uint64_t targets[] = { f, g };        /* sorted */
	uint8_t code[96];
	struct cs_tail_call out[8];
	size_t o = 0, n;

	(void)state;
	memset(code, 0x90, sizeof(code));
	o = put_branch(code, o, addr, jmp, 1, f);           /* 0: jmp f */
	o = put_branch(code, o, addr, call, 1, g);          /* 5: call g: a call, not a tail call */
	o = put_branch(code, o, addr, jne, 2, g);           /* 10: jne g */
	o = put_branch(code, o, addr, jmp, 1, other);       /* 16: jmp other: not traced */
	code[o++] = 0xeb; code[o++] = 0x00;                 /* 21: jmp .+2: rel8, not redirectable */
	code[o++] = 0x3e;                                   /* 23: ds prefix: not the plain form */
	o = put_branch(code, o, addr, jmp, 1, f);
	code[o++] = 0x48; code[o++] = 0xb8;                 /* 29: movabs holding a jmp's bytes */
	o = put_branch(code, o, addr, jmp, 1, f);
	memset(code + o, 0, 3);
	o += 3;
	o = put_branch(code, o, addr, jle, 2, f);           /* 39: jle f */
	assert_int_equal(o, 45);
	n = cs_find_tails(code, o, addr, targets, 2, out, 8);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].site, addr);
	assert_int_equal(out[0].target, 0);
	assert_int_equal(out[0].len, CS_TAIL_JMP_LEN);
	assert_int_equal(out[1].site, addr + 10);
	assert_int_equal(out[1].target, 1);
	assert_int_equal(out[1].len, CS_TAIL_JCC_LEN);
	assert_int_equal(out[2].site, addr + 39);
	assert_int_equal(out[2].target, 0);
	assert_int_equal(out[2].len, CS_TAIL_JCC_LEN);
	/* @cap bounds the list; a truncated jump at the end is not one */
	assert_int_equal(cs_find_tails(code, o, addr, targets, 2, out, 1), 1);
	assert_int_equal(cs_find_tails(code, 4, addr, targets, 2, out, 8), 0);
}

static void test_tail_bytes_keep_the_opcode(void **state)
{
	const uint64_t site = 0x555555556000, stub = 0x555555400040;
	uint8_t orig[6], out[6];

	(void)state;
	put_branch(orig, 0, site, jmp, 1, 0x555555556100);
	assert_true(cs_tail_bytes(orig, 5, site, stub, out));
	assert_int_equal(out[0], 0xe9);
	assert_int_equal(rel_at(out + 1), (int32_t)(stub - (site + 5)));
	put_branch(orig, 0, site, jne, 2, 0x555555556100);
	assert_true(cs_tail_bytes(orig, 6, site, stub, out));
	assert_int_equal(out[0], 0x0f);
	assert_int_equal(out[1], 0x85);
	assert_int_equal(rel_at(out + 2), (int32_t)(stub - (site + 6)));
	/* out of rel32 reach, a length that is not the form's, not a jump at all */
	assert_false(cs_tail_bytes(orig, 6, site, site + (1ull << 32), out));
	assert_false(cs_tail_bytes(orig, 5, site, stub, out));
	put_branch(orig, 0, site, call, 1, stub);
	assert_false(cs_tail_bytes(orig, 5, site, stub, out));
}

/* The forms a function's first jump may take (user/patch/callsite_plain.c aims it). */
static void test_jump_form(void **state)
{
	static const uint8_t e9[] = { 0xe9, 0xfb, 0xff, 0xff, 0xff };      /* jmp .-0 (rel -5) */
	static const uint8_t jne32[] = { 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00 };
	static const uint8_t eb[] = { 0xeb, 0x80 }, jl8[] = { 0x7c, 0x05 };
	static const uint8_t bnd[] = { 0xf2, 0xe9, 0, 0, 0, 0 }, mov[] = { 0x89, 0xf8 };
	int64_t rel;
	uint32_t n;
	bool jcc;

	(void)state;
	assert_true(cs_jump_form(e9, sizeof(e9), &rel, &n, &jcc));
	assert_int_equal(rel, -5);
	assert_int_equal(n, 5);
	assert_false(jcc);
	assert_true(cs_jump_form(jne32, sizeof(jne32), &rel, &n, &jcc));
	assert_int_equal(rel, 16);
	assert_int_equal(n, 6);
	assert_true(jcc);
	assert_true(cs_jump_form(eb, sizeof(eb), &rel, &n, &jcc));
	assert_int_equal(rel, -128);
	assert_int_equal(n, 2);
	assert_false(jcc);
	assert_true(cs_jump_form(jl8, sizeof(jl8), &rel, &n, &jcc));
	assert_int_equal(rel, 5);
	assert_true(jcc);
	assert_false(cs_jump_form(e9, 4, &rel, &n, &jcc));         /* cut short */
	assert_false(cs_jump_form(jne32, 5, &rel, &n, &jcc));
	assert_false(cs_jump_form(bnd, sizeof(bnd), &rel, &n, &jcc));   /* prefixed: not taken */
	assert_false(cs_jump_form(mov, sizeof(mov), &rel, &n, &jcc));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_tails_jmp_and_jcc_to_targets),
		cmocka_unit_test(test_tail_bytes_keep_the_opcode),
		cmocka_unit_test(test_jump_form),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
