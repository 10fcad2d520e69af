// SPDX-License-Identifier: MIT
/*
 * ATF v2 codec: every field lands at the byte offset the reference reader uses
 * (../shared/specs/NOTES.md §1 and §6), little-endian, and decodes back unchanged.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "atf.h"

/* Expected little-endian bytes of @v at @off in @buf. */
static void expect_le(const uint8_t *buf, size_t off, uint64_t v, size_t width)
{
	for (size_t i = 0; i < width; i++) {
		if (buf[off + i] != (uint8_t)(v >> (8 * i)))
			fail_msg("byte %zu: got 0x%02x, expected 0x%02x (field at %zu, width %zu)",
				 off + i, buf[off + i], (uint8_t)(v >> (8 * i)), off, width);
	}
}

static void expect_zero(const uint8_t *buf, size_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		assert_int_equal(buf[off + i], 0);
}

static void test_index_header(void **state)
{
	struct atf_index_header h = {0}, d;
	uint8_t b[ATF_HEADER_SIZE];

	memcpy(h.magic, "ATI2", 4);
	h.endian = 1; h.version = 1; h.arch = 2; h.os = 4;
	h.flags = 0x01020304; h.thread_id = 0xA1B2C3D4; h.clock_type = 3;
	h.event_size = 32; h.event_count = 0x11223344;
	h.events_offset = 0x0102030405060708ull; h.footer_offset = 0x1112131415161718ull;
	h.time_start_ns = 0x2122232425262728ull; h.time_end_ns = 0x3132333435363738ull;
	memset(b, 0xEE, sizeof(b));
	atf_index_header_encode(b, &h);
	assert_memory_equal(b, "ATI2", 4);
	expect_le(b, 4, 1, 1); expect_le(b, 5, 1, 1); expect_le(b, 6, 2, 1); expect_le(b, 7, 4, 1);
	expect_le(b, 8, 0x01020304, 4);
	expect_le(b, 12, 0xA1B2C3D4, 4);
	expect_le(b, 16, 3, 1);
	expect_zero(b, 17, 7);
	expect_le(b, 24, 32, 4);
	expect_le(b, 28, 0x11223344, 4);
	expect_le(b, 32, 0x0102030405060708ull, 8);
	expect_le(b, 40, 0x1112131415161718ull, 8);
	expect_le(b, 48, 0x2122232425262728ull, 8);
	expect_le(b, 56, 0x3132333435363738ull, 8);
	atf_index_header_decode(&d, b);
	assert_memory_equal(&d, &h, sizeof(h));
}

static void test_index_event(void **state)
{
	struct atf_index_event e = {
		.timestamp_ns = 0x0102030405060708ull, .function_id = 0xDEADBEEF00000007ull,
		.thread_id = 0x11223344, .event_kind = ATF_KIND_RETURN, .call_depth = 0x55667788,
		.detail_seq = ATF_NO_DETAIL,
	}, d;
	uint8_t b[ATF_INDEX_EVENT_SIZE];

	atf_index_event_encode(b, &e);
	static const uint8_t want[32] = {
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		0x07, 0x00, 0x00, 0x00, 0xEF, 0xBE, 0xAD, 0xDE,
		0x44, 0x33, 0x22, 0x11, 0x02, 0x00, 0x00, 0x00,
		0x88, 0x77, 0x66, 0x55, 0xFF, 0xFF, 0xFF, 0xFF,
	};
	assert_memory_equal(b, want, 32);
	atf_index_event_decode(&d, b);
	assert_memory_equal(&d, &e, sizeof(e));
}

/* NOTES.md §1: reserved[24], so bytes_written is at 32 and the footer is 64 bytes. */
static void test_index_footer(void **state)
{
	struct atf_index_footer f = {0}, d;
	uint8_t b[ATF_FOOTER_SIZE];

	memcpy(f.magic, "2ITA", 4);
	f.checksum = 0xCBF43926; f.event_count = 0x0102030405060708ull;
	f.time_start_ns = 0x1112131415161718ull; f.time_end_ns = 0x2122232425262728ull;
	f.bytes_written = 0x3132333435363738ull;
	memset(b, 0xEE, sizeof(b));
	atf_index_footer_encode(b, &f);
	assert_memory_equal(b, "2ITA", 4);
	expect_le(b, 4, 0xCBF43926, 4);
	expect_le(b, 8, 0x0102030405060708ull, 8);
	expect_le(b, 16, 0x1112131415161718ull, 8);
	expect_le(b, 24, 0x2122232425262728ull, 8);
	expect_le(b, 32, 0x3132333435363738ull, 8);
	expect_zero(b, 40, 24);
	atf_index_footer_decode(&d, b);
	assert_memory_equal(&d, &f, sizeof(f));
}

/* NOTES.md §1: events_offset at 20, index_seq_end at 52, _reserved2[4] at 60. */
static void test_detail_header(void **state)
{
	struct atf_detail_header h = {0}, d;
	uint8_t b[ATF_HEADER_SIZE];

	memcpy(h.magic, "ATD2", 4);
	h.endian = 1; h.version = 1; h.arch = 1; h.os = 4;
	h.flags = 0x0A0B0C0D; h.thread_id = 0x01020304; h._reserved1 = 0;
	h.events_offset = 0x1112131415161718ull; h.event_count = 0x2122232425262728ull;
	h.bytes_length = 0x3132333435363738ull; h.index_seq_start = 0x4142434445464748ull;
	h.index_seq_end = 0x5152535455565758ull;
	memset(b, 0xEE, sizeof(b));
	atf_detail_header_encode(b, &h);
	assert_memory_equal(b, "ATD2", 4);
	expect_le(b, 4, 1, 1); expect_le(b, 5, 1, 1); expect_le(b, 6, 1, 1); expect_le(b, 7, 4, 1);
	expect_le(b, 8, 0x0A0B0C0D, 4);
	expect_le(b, 12, 0x01020304, 4);
	expect_zero(b, 16, 4);
	expect_le(b, 20, 0x1112131415161718ull, 8);
	expect_le(b, 28, 0x2122232425262728ull, 8);
	expect_le(b, 36, 0x3132333435363738ull, 8);
	expect_le(b, 44, 0x4142434445464748ull, 8);
	expect_le(b, 52, 0x5152535455565758ull, 8);
	expect_zero(b, 60, 4);
	atf_detail_header_decode(&d, b);
	assert_memory_equal(&d, &h, sizeof(h));
}

static void test_detail_event_header(void **state)
{
	struct atf_detail_event_header h = {
		.total_length = 380, .event_type = ATF_DETAIL_RETURN, .flags = 0x0203,
		.index_seq = 0x11223344, .thread_id = 0x55667788, .timestamp = 0x0102030405060708ull,
	}, d;
	uint8_t b[ATF_DETAIL_EVENT_HDR_SIZE];
	static const uint8_t want[24] = {
		0x7C, 0x01, 0x00, 0x00, 0x04, 0x00, 0x03, 0x02,
		0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	};

	atf_detail_event_header_encode(b, &h);
	assert_memory_equal(b, want, 24);
	atf_detail_event_header_decode(&d, b);
	assert_memory_equal(&d, &h, sizeof(h));
}

/* NOTES.md §6: gp[0..7] at 8..71, lr 72, fp 80, sp 88, stack_size 96, reserved 98. */
static void test_detail_payload(void **state)
{
	struct atf_detail_payload p = {0}, d;
	uint8_t b[ATF_DETAIL_PAYLOAD_SIZE];

	p.function_id = 0x0102030405060708ull;
	for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
		p.gp[i] = 0x1000000000000000ull * (uint64_t)(i + 1) + (uint64_t)i;
	p.lr = 0xA1A2A3A4A5A6A7A8ull; p.fp = 0xB1B2B3B4B5B6B7B8ull; p.sp = 0xC1C2C3C4C5C6C7C8ull;
	p.stack_size = 256; p._reserved = 0;
	memset(b, 0xEE, sizeof(b));
	atf_detail_payload_encode(b, &p);
	expect_le(b, 0, 0x0102030405060708ull, 8);
	for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
		expect_le(b, 8 + 8 * (size_t)i, p.gp[i], 8);
	expect_le(b, 72, 0xA1A2A3A4A5A6A7A8ull, 8);
	expect_le(b, 80, 0xB1B2B3B4B5B6B7B8ull, 8);
	expect_le(b, 88, 0xC1C2C3C4C5C6C7C8ull, 8);
	expect_le(b, 96, 256, 2);
	expect_zero(b, 98, 2);
	atf_detail_payload_decode(&d, b);
	assert_memory_equal(&d, &p, sizeof(p));
}

static void test_detail_footer(void **state)
{
	struct atf_detail_footer f = {0}, d;
	uint8_t b[ATF_FOOTER_SIZE];

	memcpy(f.magic, "2DTA", 4);
	f.checksum = 0x12345678; f.event_count = 0x0102030405060708ull;
	f.bytes_length = 0x1112131415161718ull; f.time_start_ns = 0x2122232425262728ull;
	f.time_end_ns = 0x3132333435363738ull;
	memset(b, 0xEE, sizeof(b));
	atf_detail_footer_encode(b, &f);
	assert_memory_equal(b, "2DTA", 4);
	expect_le(b, 4, 0x12345678, 4);
	expect_le(b, 8, 0x0102030405060708ull, 8);
	expect_le(b, 16, 0x1112131415161718ull, 8);
	expect_le(b, 24, 0x2122232425262728ull, 8);
	expect_le(b, 32, 0x3132333435363738ull, 8);
	expect_zero(b, 40, 24);
	atf_detail_footer_decode(&d, b);
	assert_memory_equal(&d, &f, sizeof(f));
}

static void test_crc32(void **state)
{
	const char *check = "123456789";

	assert_int_equal(atf_crc32(0, check, 9), 0xCBF43926u);
	/* Chainable: two pieces give the same CRC as one. */
	assert_int_equal(atf_crc32(atf_crc32(0, check, 4), check + 4, 5), 0xCBF43926u);
	assert_int_equal(atf_crc32(0, NULL, 0), 0u);
	assert_int_equal(atf_crc32(0, "a", 1), 0xE8B7BE43u);
}

static void test_strerror(void **state)
{
	static const struct { int code; const char *msg; } want[] = {
		{ ATF_E_MAGIC, "wrong magic bytes" },
		{ ATF_E_VERSION, "unsupported endian, version or event size" },
		{ ATF_E_TRUNCATED, "file truncated" },
		{ ATF_E_FOOTER, "footer missing or disagreeing with the header" },
		{ ATF_E_COUNT, "event count disagrees with the data" },
		{ ATF_E_CRC, "checksum mismatch" },
		{ ATF_E_TIME_ORDER, "timestamps go backwards within a thread" },
		{ ATF_E_RECORD, "malformed record" },
		{ ATF_E_NESTING, "call nesting inconsistent" },
		{ ATF_E_LINK, "index/detail link dangling or not reciprocal" },
		{ ATF_E_SYMBOL, "function id not in the manifest" },
		{ ATF_E_MANIFEST, "manifest missing, malformed or inconsistent" },
		{ ATF_E_RANGE, "sequence number out of range" },
		{ ATF_E_NOT_SESSION, "not a session: no manifest.json and no pid_* directories" },
	};

	assert_int_equal(sizeof(want) / sizeof(want[0]), ATF_E_END - ATF_E_BASE);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(want[i].code, ATF_E_BASE + (int)i);
		assert_string_equal(atf_strerror(-want[i].code), want[i].msg);
		assert_string_equal(atf_strerror(want[i].code), want[i].msg);
	}
	assert_string_equal(atf_strerror(-ENOENT), strerror(ENOENT));
	assert_string_equal(atf_strerror(-EIO), strerror(EIO));
	assert_string_equal(atf_strerror(0), "success");
	assert_string_equal(atf_strerror(-ATF_E_END), "unknown error");
	assert_string_equal(atf_strerror(-100000), "unknown error");
	assert_string_equal(atf_strerror(INT32_MIN), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_header),
		cmocka_unit_test(test_index_event),
		cmocka_unit_test(test_index_footer),
		cmocka_unit_test(test_detail_header),
		cmocka_unit_test(test_detail_event_header),
		cmocka_unit_test(test_detail_payload),
		cmocka_unit_test(test_detail_footer),
		cmocka_unit_test(test_crc32),
		cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
