// SPDX-License-Identifier: MIT
/*
 * Unit tests for the pure part of entry trampolines (user/probe/trampoline_plan.c): which
 * functions can be patched, and the exact bytes of the trampolines written for them. The
 * rip-relative load is also decoded back (Zydis), so the moved instruction is checked for
 * where it reads, not only for its bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <Zydis/Zydis.h>
#include "trampoline_plan.h"

#define FUNC 0x401000ull
#define TRAMP 0x400000ull           /* 4 KiB below the function */

#define S 1                     /* the probe site: a 1-byte nop the kernel emulates */

static int32_t get32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The address the rel32 at the end of the @len-byte instruction at @at (in @code at @off) reaches. */
static uint64_t rel_target(const uint8_t *code, size_t off, size_t len, uint64_t at)
{
	return at + len + (uint64_t)(int64_t)get32(code + off + len - 4);
}

static void test_short_function(void **state)
{
	/* lea 1(%rdi),%eax; ret: four bytes, no room for a jmp */
	const uint8_t f[] = { 0x8d, 0x47, 0x01, 0xc3 };
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_SHORT);
}

static void test_nop5_not_needed(void **state)
{
	const uint8_t f[] = { 0x0f, 0x1f, 0x44, 0x00, 0x08, 0x8d, 0x47, 0x01, 0xc3 };
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_NOT_NEEDED);
}

static void test_sub_rsp_moved_whole(void **state)
{
	/* sub $0x18,%rsp; mov %rdi,%rbx; lea 1(%rbx),%eax; add $0x18,%rsp; ret */
	const uint8_t f[] = { 0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0xfb, 0x8d, 0x43, 0x01,
			      0x48, 0x83, 0xc4, 0x18, 0xc3 };
	uint8_t t[TRAMP_SLOT], jmp[TRAMP_JMP_LEN];
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_OK);
	assert_int_equal(p.patch_len, 7);       /* two whole instructions: 4 + 3 */
	assert_int_equal(p.ninsns, 2);
	assert_int_equal(tramp_emit(f, &p, TRAMP, t), TRAMP_OK);
	size_t site_len = 0;
	const uint8_t *site = tramp_probe_site(&site_len);

	assert_int_equal(site_len, S);
	assert_int_equal(site[0], 0x90);        /* nop: emulated, never a call into a page fork drops */
	assert_memory_equal(t, site, S);        /* the probe site opens the slot */
	assert_memory_equal(t + S, f, 7);
	assert_int_equal(t[S + 7], 0xe9);       /* jmp back to the first instruction not moved */
	assert_int_equal(rel_target(t, S + 7, 5, TRAMP + S + 7), FUNC + 7);
	assert_int_equal(t[S + 12], 0xcc);      /* the rest of the slot traps */
	assert_true(tramp_jmp(FUNC, TRAMP, jmp));
	assert_int_equal(jmp[0], 0xe9);
	assert_int_equal(rel_target(jmp, 0, 5, FUNC), TRAMP);
}

static void test_rip_relative_load(void **state)
{
	/* mov 0x1000(%rip),%eax; add %edi,%eax; ret: the load must still read FUNC+6+0x1000 */
	const uint8_t f[] = { 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, 0x01, 0xf8, 0xc3 };
	uint8_t t[TRAMP_SLOT];
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_OK);
	assert_int_equal(p.patch_len, 6);
	assert_int_equal(tramp_emit(f, &p, TRAMP, t), TRAMP_OK);
	assert_memory_equal(t + S, f, 2);       /* same opcode and ModRM */
	assert_int_equal(rel_target(t, S, 6, TRAMP + S), FUNC + 6 + 0x1000);
	{
		ZydisDecoder d;
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		ZyanU64 where = 0;

		assert_true(ZYAN_SUCCESS(ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64,
							  ZYDIS_STACK_WIDTH_64)));
		assert_true(ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, t + S, TRAMP_SLOT - S, &insn, ops)));
		assert_int_equal(insn.mnemonic, ZYDIS_MNEMONIC_MOV);
		assert_true(ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[1], TRAMP + S, &where)));
		assert_int_equal(where, FUNC + 6 + 0x1000);
	}
	assert_int_equal(rel_target(t, S + 6, 5, TRAMP + S + 6), FUNC + 6);
	/* too far for a 32-bit displacement from the trampoline */
	assert_int_equal(tramp_emit(f, &p, FUNC + 0x90000000ull, t), TRAMP_RANGE);
}

static void test_short_jcc_widened(void **state)
{
	/* test %edi,%edi; je +0x10; ... a jcc rel8 becomes a jcc rel32 to the same target */
	uint8_t f[32];
	uint8_t t[TRAMP_SLOT];
	struct tramp_plan p;

	memset(f, 0x90, sizeof(f));
	f[0] = 0x85; f[1] = 0xff;               /* test %edi,%edi */
	f[2] = 0x74; f[3] = 0x10;               /* je FUNC+0x14 */
	f[4] = 0x89; f[5] = 0xf8;               /* mov %edi,%eax */
	f[31] = 0xc3;
	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_OK);
	assert_int_equal(p.patch_len, 6);
	assert_int_equal(tramp_emit(f, &p, TRAMP, t), TRAMP_OK);
	assert_memory_equal(t + S, f, 2);
	assert_int_equal(t[S + 2], 0x0f);
	assert_int_equal(t[S + 3], 0x84);       /* je rel32 */
	assert_int_equal(rel_target(t, S + 2, 6, TRAMP + S + 2), FUNC + 0x14);
	assert_memory_equal(t + S + 8, f + 4, 2);
	assert_int_equal(rel_target(t, S + 10, 5, TRAMP + S + 10), FUNC + 6);
}

static void test_call_not_moved(void **state)
{
	/* call rel32 first: its return address would point into the trampoline */
	const uint8_t f[] = { 0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3, 0x90, 0x90 };
	const uint8_t g[] = { 0x31, 0xc0, 0xff, 0xd0, 0x90, 0x90, 0xc3 };    /* xor; call *%rax */
	const uint8_t s[] = { 0xb8, 0x27, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3 }; /* mov $39; syscall */
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_INSN);
	assert_int_equal(tramp_plan(g, sizeof(g), FUNC, FUNC, &p), TRAMP_INSN);
	/* mov is 5 bytes: the syscall is not moved, so the function can be patched */
	assert_int_equal(tramp_plan(s, sizeof(s), FUNC, FUNC, &p), TRAMP_OK);
	assert_int_equal(p.patch_len, 5);
	/* with a 3-byte first instruction the syscall would be moved: refused */
	const uint8_t s2[] = { 0x31, 0xc0, 0x90, 0x0f, 0x05, 0xc3 };
	assert_int_equal(tramp_plan(s2, sizeof(s2), FUNC, FUNC, &p), TRAMP_INSN);
}

static void test_loop_into_first_bytes(void **state)
{
	/* xor %eax,%eax; L: add $1,%eax; cmp $10,%eax; jne L; ret: L is inside the patch */
	const uint8_t f[] = { 0x31, 0xc0, 0x83, 0xc0, 0x01, 0x83, 0xf8, 0x0a, 0x75, 0xf8, 0xc3 };
	/* a branch back to the first byte is the same entry, and fine */
	const uint8_t g[] = { 0x83, 0xc7, 0x01, 0x83, 0xff, 0x0a, 0x75, 0xf8, 0x89, 0xf8, 0xc3 };
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_BRANCH_IN);
	assert_int_equal(tramp_plan(g, sizeof(g), FUNC, FUNC, &p), TRAMP_OK);
}

static void test_cold_part_into_first_bytes(void **state)
{
	/* f.cold at FUNC+0x100: jmp FUNC+3 (inside a 6-byte patch at FUNC), or jmp FUNC (the entry) */
	uint8_t cold[5] = { 0xe9 };
	int32_t rel = (int32_t)(FUNC + 3 - (FUNC + 0x100 + 5));

	memcpy(cold + 1, &rel, 4);
	assert_true(tramp_refers_into(cold, sizeof(cold), FUNC + 0x100, FUNC, FUNC + 6));
	rel = (int32_t)(FUNC - (FUNC + 0x100 + 5));
	memcpy(cold + 1, &rel, 4);
	assert_false(tramp_refers_into(cold, sizeof(cold), FUNC + 0x100, FUNC, FUNC + 6));
}

static void test_endbr64_hop(void **state)
{
	/* endbr64; push %rbp; mov %rsp,%rbp; mov %edi,%eax; pop %rbp; ret: patch at +4 */
	const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x89, 0xf8, 0x5d, 0xc3 };
	uint8_t t[TRAMP_SLOT];
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC + 4, &p), TRAMP_OK);
	assert_int_equal(p.patch_addr, FUNC + 4);
	assert_int_equal(p.patch_len, 6);       /* push 1 + mov 3 + mov 2 */
	assert_int_equal(tramp_emit(f + 4, &p, TRAMP, t), TRAMP_OK);
	assert_memory_equal(t + S, f + 4, 6);
	assert_int_equal(rel_target(t, S + 6, 5, TRAMP + S + 6), FUNC + 10);
	/* the endbr64 itself is never moved */
	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_INSN);
}

static void test_garbage_refused(void **state)
{
	/* 0x06 (push %es) is invalid in 64-bit mode */
	const uint8_t f[] = { 0x48, 0x89, 0xfb, 0x48, 0x89, 0xf8, 0x06, 0xc3 };
	struct tramp_plan p;

	assert_int_equal(tramp_plan(f, sizeof(f), FUNC, FUNC, &p), TRAMP_DECODE);
}

/* Restoring a patch: our jmp bytes go back to the original, another tool's int3 stays. */
static void test_unpatch_keeps_other_breakpoint(void **state)
{
	const uint8_t jmp[5] = { 0xe9, 0x10, 0x20, 0x30, 0x00 };
	const uint8_t orig[5] = { 0x48, 0x83, 0xec, 0x08, 0x89 };
	uint8_t now[5], out[5];
	(void)state;

	memcpy(now, jmp, 5);
	assert_true(tramp_unpatch_bytes(jmp, orig, now, out));
	assert_memory_equal(out, orig, 5);
	now[0] = 0xcc;                  /* a uprobe registered since, on the function */
	assert_true(tramp_unpatch_bytes(jmp, orig, now, out));
	const uint8_t want[5] = { 0xcc, 0x83, 0xec, 0x08, 0x89 };
	assert_memory_equal(out, want, 5);
	memcpy(now, orig, 5);           /* written back already: nothing of ours is left */
	assert_false(tramp_unpatch_bytes(jmp, orig, now, out));
}

/*
 * A call-site body moves only the first instruction: a function too short for a jmp, one whose
 * loop branches back into its first bytes, or one with a call right after its first
 * instruction, all have one; a first instruction that cannot run elsewhere does not.
 */
static void test_first_instruction_only(void **state)
{
	/* lea 1(%rdi),%eax; ret */
	const uint8_t shortf[] = { 0x8d, 0x47, 0x01, 0xc3 };
	/* push %rbx; mov %edi,%ebx; call .+0; pop %rbx; ret */
	const uint8_t callf[] = { 0x53, 0x89, 0xfb, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x5b, 0xc3 };
	/* 1: dec %edi; jnz 1b; ret: the loop enters the first instruction's end */
	const uint8_t loopf[] = { 0xff, 0xcf, 0x75, 0xfc, 0xc3 };
	/* call .+0 first */
	const uint8_t callfirst[] = { 0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3 };
	uint8_t t[TRAMP_SLOT];
	struct tramp_plan p;

	assert_int_equal(tramp_plan_first(shortf, sizeof(shortf), FUNC, FUNC, &p), TRAMP_OK);
	assert_int_equal(p.patch_len, 3);
	assert_int_equal(p.ninsns, 1);
	assert_int_equal(tramp_emit(shortf, &p, TRAMP, t), TRAMP_OK);
	assert_memory_equal(t + S, shortf, 3);
	assert_int_equal(t[S + 3], 0xe9);
	assert_int_equal(rel_target(t, S + 3, 5, TRAMP + S + 3), FUNC + 3);

	assert_int_equal(tramp_plan_first(callf, sizeof(callf), FUNC, FUNC, &p), TRAMP_OK);
	assert_int_equal(p.patch_len, 1);
	assert_int_equal(tramp_plan_first(loopf, sizeof(loopf), FUNC, FUNC, &p), TRAMP_OK);
	assert_int_equal(p.patch_len, 2);
	assert_int_equal(tramp_plan(loopf, sizeof(loopf), FUNC, FUNC, &p), TRAMP_BRANCH_IN);
	assert_int_equal(tramp_plan_first(callfirst, sizeof(callfirst), FUNC, FUNC, &p), TRAMP_INSN);
	assert_int_equal(tramp_plan_first(shortf, sizeof(shortf), FUNC, FUNC + 4, &p), TRAMP_SHORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_function),
		cmocka_unit_test(test_nop5_not_needed),
		cmocka_unit_test(test_sub_rsp_moved_whole),
		cmocka_unit_test(test_rip_relative_load),
		cmocka_unit_test(test_short_jcc_widened),
		cmocka_unit_test(test_call_not_moved),
		cmocka_unit_test(test_loop_into_first_bytes),
		cmocka_unit_test(test_cold_part_into_first_bytes),
		cmocka_unit_test(test_endbr64_hop),
		cmocka_unit_test(test_garbage_refused),
		cmocka_unit_test(test_unpatch_keeps_other_breakpoint),
		cmocka_unit_test(test_first_instruction_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
