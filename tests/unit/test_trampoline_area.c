// SPDX-License-Identifier: MIT
/*
 * Unit tests for where trampolines go (user/probe/trampoline_area.c: ta_find_gap, ta_file_addr):
 * below the module when there is room, never into the room brk needs above the heap or the
 * executable, never into the room the stack grows into, always within rel32 reach.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "trampoline_area.h"

#define GiB (1ull << 30)
#define LIB_DEV 0x801
#define LIB_INO 42

/* A PIE with its heap, packed libraries (one of them ours), and the stack. */
static struct ta_map layout[] = {
	{ .lo = 0x555555554000, .hi = 0x555555580000, .exec = true, .kind = 'x', .ino = 7 },
	{ .lo = 0x555555580000, .hi = 0x5555555a1000, .kind = 'h' },
	{ .lo = 0x7ffff7d00000, .hi = 0x7ffff7d80000, .exec = true, .ino = 9 },
	{ .lo = 0x7ffff7d80000, .hi = 0x7ffff7e00000, .offset = 0, .dev = LIB_DEV, .ino = LIB_INO },
	{ .lo = 0x7ffff7e00000, .hi = 0x7ffff7f00000, .offset = 0x80000, .exec = true,
	  .dev = LIB_DEV, .ino = LIB_INO },
	{ .lo = 0x7ffff7f00000, .hi = 0x7ffff7f10000, .exec = true, .ino = 11 },
	{ .lo = 0x7ffffffde000, .hi = 0x7ffffffff000, .kind = 's' },
};

static void test_below_the_module(void **state)
{
	struct ta_maps maps = { layout, sizeof(layout) / sizeof(layout[0]) };
	uint64_t lo, hi, a;

	assert_true(ta_module_span(&maps, LIB_DEV, LIB_INO, &lo, &hi));
	assert_int_equal(lo, 0x7ffff7d80000ull);
	assert_int_equal(hi, 0x7ffff7f00000ull);
	a = ta_find_gap(&maps, lo, hi, 0x3000);
	/* the libraries are packed: the highest free place below them, under the lowest one */
	assert_int_equal(a, 0x7ffff7d00000ull - 0x3000);
	assert_true(hi - a < 2 * GiB);
}

static void test_not_above_the_heap(void **state)
{
	/* the executable's own trampolines: below it, never in the heap's room above */
	struct ta_maps maps = { layout, sizeof(layout) / sizeof(layout[0]) };
	uint64_t a = ta_find_gap(&maps, 0x555555554000, 0x555555580000, 0x1000);

	assert_int_equal(a, 0x555555554000ull - 0x1000);
	/* with nothing free below in reach, above the heap only past 1 GiB of brk room */
	struct ta_map low[] = {
		{ .lo = 0x10000, .hi = 0x555555554000 },        /* everything below is taken */
		layout[0], layout[1], layout[2],
	};
	struct ta_maps m2 = { low, 4 };

	a = ta_find_gap(&m2, 0x555555554000, 0x555555580000, 0x1000);
	assert_true(a >= 0x5555555a1000ull + GiB);
	assert_true(a + 0x1000 - 0x555555554000ull < 2 * GiB);
}

static void test_not_below_the_stack(void **state)
{
	/* a module right under the stack: the gap the stack grows into is not used */
	struct ta_map m[] = {
		{ .lo = 0x7ffff7000000, .hi = 0x7ffffff00000 },             /* taken */
		{ .lo = 0x7ffffff00000, .hi = 0x7ffffff10000, .exec = true, .dev = 1, .ino = 2 },
		{ .lo = 0x7ffffffde000, .hi = 0x7ffffffff000, .kind = 's' },
	};
	struct ta_maps maps = { m, 3 };
	uint64_t a = ta_find_gap(&maps, 0x7ffffff00000, 0x7ffffff10000, 0x1000);

	/* below the taken block, never between the module and the stack */
	assert_true(a == 0 || a + 0x1000 <= 0x7ffff7000000ull);
}

static void test_out_of_reach(void **state)
{
	/* the only free room is more than 2 GiB away: none */
	struct ta_map m[] = {
		{ .lo = 0x100000000, .hi = 0x700000000000 },
		{ .lo = 0x700000000000, .hi = 0x700000010000, .exec = true, .dev = 1, .ino = 2 },
		{ .lo = 0x700000010000, .hi = 0x7ffffffde000 },
		{ .lo = 0x7ffffffde000, .hi = 0x7ffffffff000, .kind = 's' },
	};
	struct ta_maps maps = { m, 4 };

	assert_int_equal(ta_find_gap(&maps, 0x700000000000, 0x700000010000, 0x1000), 0);
}

static void test_file_addr(void **state)
{
	struct ta_maps maps = { layout, sizeof(layout) / sizeof(layout[0]) };

	/* file offset 0x80000 + 0x1234 sits in the executable mapping of the library */
	assert_int_equal(ta_file_addr(&maps, LIB_DEV, LIB_INO, 0x81234), 0x7ffff7e01234ull);
	/* offset 0x100 is only in its read-only mapping: no code there */
	assert_int_equal(ta_file_addr(&maps, LIB_DEV, LIB_INO, 0x100), 0);
	assert_int_equal(ta_file_addr(&maps, LIB_DEV, LIB_INO + 1, 0x81234), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_below_the_module),
		cmocka_unit_test(test_not_above_the_heap),
		cmocka_unit_test(test_not_below_the_stack),
		cmocka_unit_test(test_out_of_reach),
		cmocka_unit_test(test_file_addr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
