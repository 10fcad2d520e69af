// SPDX-License-Identifier: MIT
/* Unit tests for the function bounds of a stripped module: .eh_frame_hdr's table and its FDEs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "callsite_bounds.h"

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);       /* x86: little-endian */
}

/* An FDE at @frame + @off (module address @frame_addr + @off): @loc, @range, pcrel sdata4. */
static void put_fde(uint8_t *frame, uint64_t frame_addr, uint32_t off, uint64_t loc, uint32_t range)
{
	put32(frame + off, 20);                                         /* length */
	put32(frame + off + 4, off + 4);                                /* CIE pointer (to 0) */
	put32(frame + off + 8, (uint32_t)(loc - (frame_addr + off + 8)));
	put32(frame + off + 12, range);
}

static void test_eh_frame_ranges(void **state)
{
	const uint64_t hdr_addr = 0x2000, frame_addr = 0x2100;
	uint8_t hdr[12 + 4 * 8], frame[256];
	struct cs_range r[4];
	/* the table: (initial location, FDE address), datarel to the header */
	const uint64_t loc[4] = { 0x1100, 0x1180, 0x1200, 0x1300 };
	const uint32_t fde[4] = { 0x20, 0x40, 0x60, 0xf8 };

	(void)state;
	memset(frame, 0, sizeof(frame));
	hdr[0] = 1;
	hdr[1] = 0x1b;
	hdr[2] = 0x03;
	hdr[3] = 0x3b;
	put32(hdr + 4, (uint32_t)(frame_addr - (hdr_addr + 4)));
	put32(hdr + 8, 4);
	for (int i = 0; i < 4; i++) {
		put32(hdr + 12 + i * 8, (uint32_t)(loc[i] - hdr_addr));
		put32(hdr + 16 + i * 8, (uint32_t)(frame_addr + fde[i] - hdr_addr));
	}
	put_fde(frame, frame_addr, fde[0], loc[0], 0x50);
	put_fde(frame, frame_addr, fde[1], loc[1] + 4, 0x30);  /* its location is not the table's */
	put_fde(frame, frame_addr, fde[2], loc[2], 0x90);
	/* fde[3] runs past the end of the frame bytes: not read */
	assert_int_equal(cs_eh_frame_ranges(hdr, sizeof(hdr), hdr_addr, frame, sizeof(frame),
					    frame_addr, r, 4), 2);
	assert_int_equal(r[0].addr, 0x1100);
	assert_int_equal(r[0].size, 0x50);
	assert_int_equal(r[1].addr, 0x1200);
	assert_int_equal(r[1].size, 0x90);
	/* an encoding this reader does not know: nothing */
	hdr[3] = 0x1b;
	assert_int_equal(cs_eh_frame_ranges(hdr, sizeof(hdr), hdr_addr, frame, sizeof(frame),
					    frame_addr, r, 4), 0);
	hdr[3] = 0x3b;
	put32(hdr + 8, 1000);   /* more entries than the header holds */
	assert_int_equal(cs_eh_frame_ranges(hdr, sizeof(hdr), hdr_addr, frame, sizeof(frame),
					    frame_addr, r, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eh_frame_ranges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
