// SPDX-License-Identifier: MIT
/* Unit tests for call-site redirection's pure part: the call finder and the stub encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <sys/mman.h>
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

/* E_f, R_f and T_f of one function block. */
static void test_fn_block_bytes(void **state)
{
	const uint64_t at = 0x7f0000002000, body = 0x7f0000001000;
	uint8_t b[CS_FN_SLOT];

	(void)state;
	assert_true(cs_fn_block_emit(at, body, b));
	assert_int_equal(b[CS_FN_ENTRY], 0x90);                  /* E_f's probe */
	assert_int_equal(b[CS_FN_ENTRY + 1], 0xe9);              /* jmp body */
	assert_int_equal(at + CS_FN_ENTRY + 6 + rel_at(b + CS_FN_ENTRY + 2), body);
	assert_int_equal(b[CS_FN_RET], 0x90);                    /* R_f's probe */
	assert_int_equal(b[CS_FN_RET + 1], 0xc3);                /* ret */
	assert_int_equal(b[CS_FN_TAIL], 0x90);                   /* T_f's probe */
	assert_int_equal(b[CS_FN_TAIL + 1], 0xe9);               /* jmp body */
	assert_int_equal(at + CS_FN_TAIL + 6 + rel_at(b + CS_FN_TAIL + 2), body);
	for (size_t i = CS_FN_TAIL + 6; i < CS_FN_SLOT; i++)
		assert_int_equal(b[i], 0xcc);
	assert_false(cs_fn_block_emit(at, at + (1ull << 31) + 16, b));
}

static void test_stub_bytes(void **state)
{
	const uint64_t stub = 0x7f0000001040, site = 0x7f0000400123, fn = 0x7f0000001000;
	static const uint8_t lea[] = { 0x48, 0x8d, 0x64, 0x24, 0x08 };
	uint8_t s[CS_STUB_SLOT];

	(void)state;
	assert_true(cs_stub_emit(stub, site, fn, s));
	assert_memory_equal(s, lea, sizeof(lea));            /* lea 8(%rsp),%rsp */
	assert_int_equal(s[5], 0xe8);                         /* call E_f */
	assert_int_equal(stub + 10 + rel_at(s + 6), fn + CS_FN_ENTRY);
	assert_int_equal(s[CS_STUB_RET], 0xe8);              /* where f returns: call R_f */
	assert_int_equal(stub + CS_STUB_RET + 5 + rel_at(s + CS_STUB_RET + 1), fn + CS_FN_RET);
	assert_int_equal(s[CS_STUB_RET + 5], 0xe9);          /* jmp site+5 */
	assert_int_equal(stub + CS_STUB_RET + 10 + rel_at(s + CS_STUB_RET + 6), site + 5);
	for (size_t i = CS_STUB_RET + 10; i < CS_STUB_SLOT; i++)
		assert_int_equal(s[i], 0xcc);
}

static void test_out_of_reach(void **state)
{
	uint8_t s[CS_STUB_SLOT], c[CS_CALL_LEN];

	(void)state;
	assert_false(cs_stub_emit(0x100000000000, 0x1000, 0x100000000100, s));   /* site far */
	assert_false(cs_stub_emit(0x100000000000, 0x100000001000, 0x1000, s));   /* block far */
	assert_false(cs_call_bytes(0x1000, 0x100000000000, c));
	assert_true(cs_call_bytes(0x401000, 0x400000, c));
	assert_int_equal(c[0], 0xe8);
	assert_int_equal(0x401005 + (int64_t)rel_at(c + 1), 0x400000);
}

/* A stub in another module: the near layout, its calls to thunks that jump to E_f and R_f. */
static void test_far_stub(void **state)
{
	const uint64_t stub = 0x55550000a000, site = 0x555500001234, fn = 0x7f0012345680;
	uint8_t s[CS_STUB_SLOT], near[CS_STUB_SLOT];
	uint64_t thunk[2], to;

	(void)state;
	assert_true(cs_stub_emit_far(stub, site, fn, s));
	thunk[0] = stub + 10 + rel_at(s + 6);
	thunk[1] = stub + CS_STUB_RET + 5 + rel_at(s + CS_STUB_RET + 1);
	assert_int_equal(thunk[0], stub + CS_STUB_RET + 10);    /* right after jmp site+5 */
	assert_int_equal(thunk[1], thunk[0] + 14);
	assert_int_equal(stub + CS_STUB_RET + 10 + rel_at(s + CS_STUB_RET + 6), site + 5);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(s[thunk[i] - stub], 0xff);     /* jmp *0(%rip) */
		assert_int_equal(s[thunk[i] - stub + 1], 0x25);
		assert_int_equal(rel_at(s + thunk[i] - stub + 2), 0);
		memcpy(&to, s + thunk[i] - stub + 6, 8);
		assert_int_equal(to, fn + (i ? CS_FN_RET : CS_FN_ENTRY));
	}
	assert_true(thunk[1] - stub + 14 <= CS_STUB_SLOT);
	/* the near stub's layout: lea, call, call, jmp */
	assert_true(cs_stub_emit(stub, site, stub + 0x100, near));
	assert_memory_equal(s, near, 5);
	assert_int_equal(s[5], 0xe8);
	assert_int_equal(s[CS_STUB_RET], 0xe8);
	assert_int_equal(s[CS_STUB_RET + 5], 0xe9);
	assert_false(cs_stub_emit_far(0x100000000000, 0x1000, fn, s));      /* site far */
}

/* Layout of the buffer the stubs run in. */
enum {
	R_CALLER = 0x00, R_SITE = 0x04,         /* sub $8,%rsp; call f; add $8,%rsp; ret */
	R_F = 0x40, R_BODY = 0x50, R_BLOCK = 0x80, R_STUB = 0xc0, R_FAR = 0x100, R_SIZE = 0x1000,
};

/* A redirected call runs f's body once, returns through R_f with the caller's own stack. */
static void test_stubs_run(void **state)
{
	static const uint8_t caller[] = { 0x48, 0x83, 0xec, 0x08, 0xe8, 0, 0, 0, 0,
					  0x48, 0x83, 0xc4, 0x08, 0xc3 };
	/* f's plain entry returns 1; its "body" returns 2 plus what the stack held at its entry
	 * minus the stub's return point (0 when f runs on exactly its own stack) */
	static const uint8_t ret1[] = { 0xb8, 1, 0, 0, 0, 0xc3 };
	static const uint8_t body[] = { 0x48, 0x8b, 0x04, 0x24,        /* mov (%rsp),%rax */
					0x4c, 0x29, 0xd8,              /* sub %r11,%rax */
					0x48, 0x83, 0xc0, 0x02,        /* add $2,%rax */
					0xc3 };
	uint8_t *x = mmap(NULL, R_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)x;
	long (*call)(void) = (long (*)(void))(uintptr_t)(base + R_CALLER);

	(void)state;
	assert_true(x != MAP_FAILED);
	memset(x, 0xcc, R_SIZE);
	memcpy(x + R_CALLER, caller, sizeof(caller));
	put_call(x, R_SITE, base, base + R_F);
	memcpy(x + R_F, ret1, sizeof(ret1));
	memcpy(x + R_BODY, body, sizeof(body));
	assert_true(cs_fn_block_emit(base + R_BLOCK, base + R_BODY, x + R_BLOCK));
	assert_true(cs_stub_emit(base + R_STUB, base + R_SITE, base + R_BLOCK, x + R_STUB));
	assert_true(cs_stub_emit_far(base + R_FAR, base + R_SITE, base + R_BLOCK, x + R_FAR));
	for (int far = 0; far < 2; far++) {
		uint64_t stub = base + (far ? R_FAR : R_STUB);
		long v;

		put_call(x, R_SITE, base, base + R_F);
		__asm__ volatile("sub $128, %%rsp\n\t"          /* the red zone stays ours */
				 "mov %[ret], %%r11\n\tcall *%[fn]\n\tadd $128, %%rsp"
				 : "=a"(v) : [fn] "r"(call), [ret] "r"(stub + CS_STUB_RET)
				 : "r11", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "memory", "cc");
		assert_int_equal(v, 1);                          /* not redirected: f itself */
		assert_true(cs_call_bytes(base + R_SITE, stub, x + R_SITE));
		__asm__ volatile("sub $128, %%rsp\n\t"          /* the red zone stays ours */
				 "mov %[ret], %%r11\n\tcall *%[fn]\n\tadd $128, %%rsp"
				 : "=a"(v) : [fn] "r"(call), [ret] "r"(stub + CS_STUB_RET)
				 : "r11", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "memory", "cc");
		assert_int_equal(v, 2);                          /* the body, returning to call R_f */
	}
	munmap(x, R_SIZE);
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
		cmocka_unit_test(test_fn_block_bytes),
		cmocka_unit_test(test_stub_bytes),
		cmocka_unit_test(test_stubs_run),
		cmocka_unit_test(test_out_of_reach),
		cmocka_unit_test(test_far_stub),
		cmocka_unit_test(test_plt_slot_forms),
		cmocka_unit_test(test_plt_decode_maps_slots_to_symbols),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
