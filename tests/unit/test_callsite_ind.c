// SPDX-License-Identifier: MIT
/*
 * Unit tests for indirect call sites' pure part (user/patch/callsite_ind.h): the finder, the
 * table, and the emitted code, which the tests run: a caller with `call *0x88(%rbx)` and one with
 * `call *N(%rip)` redirected to their stubs in an executable buffer, a traced target whose
 * indirect entry leads to a "body" that returns another value, and an untraced one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>
#include "callsite_ind.h"
#include "callsite_plan.h"

static void test_call_forms(void **state)
{
	static const uint8_t reg[] = { 0xff, 0xd0 };                            /* call *%rax */
	static const uint8_t disp8[] = { 0xff, 0x53, 0x18 };                    /* call *0x18(%rbx) */
	static const uint8_t disp32[] = { 0xff, 0x90, 0x88, 0, 0, 0 };          /* call *0x88(%rax) */
	static const uint8_t rip[] = { 0xff, 0x15, 0x10, 0, 0, 0 };             /* call *N(%rip) */
	static const uint8_t r12[] = { 0x41, 0xff, 0x54, 0x24, 0x18 };          /* call *0x18(%r12) */
	static const uint8_t jmp[] = { 0xff, 0xa0, 0x88, 0, 0, 0 };             /* jmp *0x88(%rax) */
	static const uint8_t fs[] = { 0x64, 0xff, 0x14, 0x25, 0x10, 0, 0, 0 };  /* call *%fs:0x10 */

	(void)state;
	assert_false(cs_ind_call_ok(reg, sizeof(reg), sizeof(reg)));
	assert_false(cs_ind_call_ok(disp8, sizeof(disp8), sizeof(disp8)));
	assert_true(cs_ind_call_ok(disp32, sizeof(disp32), sizeof(disp32)));
	assert_true(cs_ind_call_ok(rip, sizeof(rip), sizeof(rip)));
	assert_true(cs_ind_call_ok(r12, sizeof(r12), sizeof(r12)));
	assert_false(cs_ind_call_ok(jmp, sizeof(jmp), sizeof(jmp)));
	assert_false(cs_ind_call_ok(fs, sizeof(fs), sizeof(fs)));
}

static void test_find_ind_calls(void **state)
{
	static const uint8_t code[] = {
		0xff, 0xd0,                             /* call *%rax: too short */
		0xff, 0x90, 0x88, 0, 0, 0,              /* call *0x88(%rax) */
		0x89, 0xc7,                             /* mov %eax,%edi */
		0xe8, 0, 0, 0, 0,                       /* call rel32: direct */
		0xff, 0x15, 0x10, 0, 0, 0,              /* call *N(%rip) */
		0x06,                                   /* not code in 64-bit mode */
		0xff, 0x15, 0x10, 0, 0, 0,
	};
	struct cs_ind_call out[8];
	size_t nshort = 0;

	(void)state;
	assert_int_equal(cs_find_ind_calls(code, sizeof(code), 0x1000, out, 8, &nshort), 2);
	assert_int_equal(nshort, 1);
	assert_int_equal(out[0].site, 0x1002);
	assert_int_equal(out[0].len, 6);
	assert_int_equal(out[1].site, 0x100f);
	assert_int_equal(out[1].len, 6);
}

static void test_table(void **state)
{
	static uint64_t table[(1u << 4) + CS_IND_TAIL][2];
	uint32_t bits = cs_ind_table_bits(8);
	uint64_t keys[8];

	(void)state;
	assert_int_equal(bits, 4);
	assert_int_equal(cs_ind_table_bits(9), 5);
	memset(table, 0, sizeof(table));
	for (int i = 0; i < 8; i++) {
		keys[i] = 0x555555554000ull + 0x40ull * (uint64_t)i;
		assert_true(cs_ind_table_put(table, bits, keys[i], 0x7f0000000000ull + (uint64_t)i) >= 0);
	}
	assert_int_equal(cs_ind_table_put(table, bits, keys[3], 99), -1);  /* an alias keeps the first */
	assert_int_equal(cs_ind_table_put(table, bits, CS_IND_TOMBSTONE, 5), -1);
	for (int i = 0; i < 8; i++)
		assert_int_equal(cs_ind_table_find((const uint64_t (*)[2])table, bits, keys[i]),
				 0x7f0000000000ull + (uint64_t)i);
	assert_int_equal(cs_ind_table_find((const uint64_t (*)[2])table, bits, 0x1234), 0);
}

/* Every key hashed to the same home slot: the chain stops before the last slot. */
static void test_table_full_chain(void **state)
{
	static uint64_t table[(1u << 4) + CS_IND_TAIL][2];
	uint64_t home = cs_ind_hash(0x400000, 4), n = 0;

	(void)state;
	memset(table, 0, sizeof(table));
	for (uint64_t k = 0x400000; k < 0x400000 + 100000 && n < 200; k++)
		if (cs_ind_hash(k, 4) == home)
			n += cs_ind_table_put(table, 4, k, k) >= 0;
	assert_int_equal(n, cs_ind_table_slots(4) - 1 - home);
	assert_int_equal(table[cs_ind_table_slots(4) - 1][0], 0);
}

/* The executable buffer's layout (offsets). */
enum {
	X_CALLER_MEM = 0x00, X_SITE_MEM = 0x04,         /* push rbx; mov rdi,rbx; call *0x88(%rbx) */
	X_CALLER_RIP = 0x10, X_SITE_RIP = 0x14,         /* sub $8,rsp; call *slot(%rip) */
	X_F = 0x40, X_BODY = 0x50, X_G = 0x60, X_ENTRY = 0x70, X_RET = 0x1e0,
	X_STUB_MEM = 0x80, X_STUB_RIP = 0xc0, X_LOOKUP = 0x100, X_SLOT = 0x200, X_TABLE = 0x400,
	X_SIZE = 0x1000,
};

static uint8_t *make_buffer(uint32_t bits)
{
	static const uint8_t caller_mem[] = { 0x53, 0x48, 0x89, 0xfb, 0xff, 0x93, 0x88, 0, 0, 0,
					      0x5b, 0xc3 };
	static const uint8_t caller_rip[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0x15, 0, 0, 0, 0,
					      0x48, 0x83, 0xc4, 0x08, 0xc3 };
	static const uint8_t ret1[] = { 0xb8, 1, 0, 0, 0, 0xc3 }, ret2[] = { 0xb8, 2, 0, 0, 0, 0xc3 };
	static const uint8_t ret3[] = { 0xb8, 3, 0, 0, 0, 0xc3 };
	uint8_t *x = mmap(NULL, X_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)x;
	int32_t rel = X_SLOT - (X_SITE_RIP + 6);

	assert_true(x != MAP_FAILED);
	memset(x, 0xcc, X_SIZE);
	memcpy(x + X_CALLER_MEM, caller_mem, sizeof(caller_mem));
	memcpy(x + X_CALLER_RIP, caller_rip, sizeof(caller_rip));
	memcpy(x + X_SITE_RIP + 2, &rel, sizeof(rel));
	memcpy(x + X_F, ret1, sizeof(ret1));            /* f, as its plain call finds it */
	memcpy(x + X_BODY, ret2, sizeof(ret2));         /* f's body: tells the fast path apart */
	memcpy(x + X_G, ret3, sizeof(ret3));            /* an untraced target */
	assert_true(cs_fn_block_emit(base + X_ENTRY, base + X_BODY, x + X_ENTRY));
	cs_ind_ret_emit(x + X_RET);
	memset(x + X_TABLE, 0, X_SIZE - X_TABLE);
	assert_true(cs_ind_table_put((uint64_t (*)[2])(x + X_TABLE), bits, base + X_F,
				     base + X_ENTRY) >= 0);
	cs_ind_lookup_emit(base + X_TABLE, bits, x + X_LOOKUP);
	return x;
}

/* Redirect the site at @site (@len bytes) to its stub at @stub. */
static void redirect(uint8_t *x, uint32_t site, uint32_t len, uint32_t stub)
{
	uint64_t base = (uint64_t)(uintptr_t)x;
	uint8_t insn[16];
	uint32_t b = 0, miss = 0;
	int32_t rel;

	memcpy(insn, x + site, len);
	assert_true(cs_ind_stub_emit(base + stub, base + site, insn, len, base + X_LOOKUP,
				     base + X_RET, x + stub, &b, &miss));
	assert_int_equal(x[stub + b], 0xe8);                    /* call R */
	memcpy(&rel, x + stub + b + 1, sizeof(rel));
	assert_int_equal(base + stub + b + 5 + rel, base + X_RET);
	assert_int_equal(x[stub + b + 5], 0xe9);                /* then jmp site+L */
	assert_memory_equal(x + stub + miss - 3, "\x41\xff\xd3", 3);
	assert_true(cs_ind_site_bytes(base + site, len, base + stub, x + site));
	assert_int_equal(x[site + len - 1], 0xcc);
}

static void test_stubs_run(void **state)
{
	uint8_t *x = make_buffer(4);
	uint64_t base = (uint64_t)(uintptr_t)x;
	uint64_t obj[0x90 / 8] = { 0 };
	int (*mem)(void *) = (int (*)(void *))(uintptr_t)(base + X_CALLER_MEM);
	int (*rip)(void) = (int (*)(void))(uintptr_t)(base + X_CALLER_RIP);

	(void)state;
	obj[0x88 / 8] = base + X_F;
	memcpy(x + X_SLOT, &obj[0x88 / 8], 8);
	assert_int_equal(mem(obj), 1);                  /* not redirected: f itself */
	assert_int_equal(rip(), 1);
	redirect(x, X_SITE_MEM, 6, X_STUB_MEM);
	redirect(x, X_SITE_RIP, 6, X_STUB_RIP);
	assert_int_equal(mem(obj), 2);                  /* through f's indirect entry */
	assert_int_equal(rip(), 2);
	obj[0x88 / 8] = base + X_G;
	memcpy(x + X_SLOT, &obj[0x88 / 8], 8);
	assert_int_equal(mem(obj), 3);                  /* another target: called as before */
	assert_int_equal(rip(), 3);
	/* handed back: the tombstone makes f a miss */
	obj[0x88 / 8] = base + X_F;
	for (uint64_t i = 0; i < cs_ind_table_slots(4); i++) {
		uint64_t *slot = (uint64_t *)(x + X_TABLE + 16 * i);

		if (slot[0] == base + X_F)
			slot[0] = CS_IND_TOMBSTONE;
	}
	assert_int_equal(mem(obj), 1);
	munmap(x, X_SIZE);
}

/* The lookup routine keeps every register but %r11 and the flags. */
static void test_lookup_registers(void **state)
{
	uint8_t *x = make_buffer(4);
	uint64_t base = (uint64_t)(uintptr_t)x, fn = base + X_LOOKUP;
	uint64_t r11, rax, rcx;
	uint8_t zf;

	(void)state;
	for (int hit = 0; hit < 2; hit++) {
		uint64_t key = hit ? base + X_F : base + X_G;

		__asm__ volatile("sub $128, %%rsp\n\t"          /* the red zone stays ours */
				 "mov %[key], %%r11\n\t"
				 "mov $0x1111, %%rax\n\t"
				 "mov $0x2222, %%rcx\n\t"
				 "call *%[fn]\n\t"
				 "setz %[zf]\n\t"
				 "add $128, %%rsp\n\t"
				 "mov %%r11, %[r11]\n\t"
				 : [r11] "=r"(r11), [zf] "=q"(zf), "=&a"(rax), "=&c"(rcx)
				 : [key] "r"(key), [fn] "r"(fn)
				 : "r11", "cc", "memory");
		assert_int_equal(rax, 0x1111);
		assert_int_equal(rcx, 0x2222);
		assert_int_equal(zf, hit);
		assert_int_equal(r11, hit ? base + X_ENTRY : key);
	}
	munmap(x, X_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call_forms),
		cmocka_unit_test(test_find_ind_calls),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_table_full_chain),
		cmocka_unit_test(test_stubs_run),
		cmocka_unit_test(test_lookup_registers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
