// SPDX-License-Identifier: MIT
/*
 * Unit tests for the patch log at the start of a trampoline area (user/probe/patch_log.c): a
 * header round-trips; every kind of damage (truncation, a flipped bit anywhere, bad magic,
 * version, sizes, counts, out-of-range fields and records) is refused with its own error; and
 * what restore writes back keeps another tool's int3 and never writes over bytes not ours, for
 * an entry jmp and for a redirected call site (CALL_REL32: the whole 5-byte call) alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "byteorder.h"
#include "patch_log.h"

static const uint8_t orig[5] = { 0x48, 0x8d, 0x47, 0x01, 0xc3 };          /* lea 1(%rdi),%rax; ret */
static const uint8_t jmp[5] = { 0xe9, 0x10, 0x20, 0x30, 0x00 };

static struct patch_record recs[3];

static void sample(struct patch_log *l)
{
	memset(l, 0, sizeof(*l));
	l->state = PATCH_LOG_PATCHED;
	l->owner_pid = 4242;
	l->owner_start = 123456789;
	l->area_addr = 0x7f0000000000ull;
	l->dev = 0x801;
	l->ino = 77;
	l->map_addr = 0x555555555000ull;
	l->map_offset = 0x1000;
	l->map_size = 0x3000;
	l->build_id_len = 20;
	for (int i = 0; i < 20; i++)
		l->build_id[i] = (uint8_t)(0xa0 + i);
	strcpy(l->path, "/usr/lib/x86_64-linux-gnu/libdemo.so.1");
	for (int i = 0; i < 3; i++) {
		recs[i] = (struct patch_record){ .addr = 0x555555555100ull + 0x40 * i,
						 .file_off = 0x1100 + 0x40 * i, .len = 5,
						 .kind = PATCH_KIND_ENTRY_JMP };
		memcpy(recs[i].orig, orig, 5);
		memcpy(recs[i].written, jmp, 5);
		recs[i].written[1] = (uint8_t)i;
	}
	l->records = recs;
	l->nrecords = 3;
}

/* The bytes of @r past its length are 0 (as the layout wants them). */
static int all_zero_tail(const struct patch_record *r)
{
	for (uint32_t i = r->len; i < PATCH_LOG_MAX_BYTES; i++)
		if (r->orig[i] || r->written[i])
			return 0;
	return 1;
}

static uint8_t *encoded(size_t *size)
{
	struct patch_log l;
	uint8_t *buf;

	sample(&l);
	*size = patch_log_size(l.nrecords);
	buf = malloc(*size);
	assert_non_null(buf);
	assert_int_equal(patch_log_encode(&l, buf, *size), PATCH_LOG_OK);
	return buf;
}

static void test_round_trip(void **state)
{
	struct patch_log l, d;
	size_t size;
	uint8_t *buf = encoded(&size);
	uint32_t hsize = 0;

	sample(&l);
	assert_int_equal(size, PATCH_LOG_PAGE);
	assert_memory_equal(buf, "ATFAREA1", 8);
	assert_int_equal(patch_log_header_size(buf, PATCH_LOG_FIXED, &hsize), PATCH_LOG_OK);
	assert_int_equal(hsize, size);
	assert_int_equal(patch_log_decode(buf, size, &d), PATCH_LOG_OK);
	assert_int_equal(d.header_size, size);
	assert_int_equal(d.state, PATCH_LOG_PATCHED);
	assert_int_equal(d.owner_pid, 4242);
	assert_int_equal(d.owner_start, 123456789);
	assert_int_equal(d.area_addr, l.area_addr);
	assert_int_equal(d.dev, 0x801);
	assert_int_equal(d.ino, 77);
	assert_int_equal(d.map_addr, l.map_addr);
	assert_int_equal(d.map_offset, 0x1000);
	assert_int_equal(d.map_size, 0x3000);
	assert_int_equal(d.build_id_len, 20);
	assert_memory_equal(d.build_id, l.build_id, 20);
	assert_string_equal(d.path, l.path);
	assert_int_equal(d.nrecords, 3);
	for (int i = 0; i < 3; i++)
		assert_memory_equal(&d.records[i], &recs[i], sizeof(recs[i]));
	/* fields at the offsets the layout documents, little-endian */
	assert_int_equal(get_le32(buf + 20), 3);
	assert_int_equal(get_le64(buf + 512), recs[0].addr);
	assert_int_equal(get_le32(buf + 512 + 16), 5);
	patch_log_free(&d);
	free(buf);
}

static void test_many_records_span_pages(void **state)
{
	struct patch_log l, d;
	uint32_t n = 500;
	struct patch_record *many = calloc(n, sizeof(*many));
	size_t size = patch_log_size(n);
	uint8_t *buf = malloc(size);

	assert_non_null(many);
	assert_non_null(buf);
	assert_int_equal(size, 7 * PATCH_LOG_PAGE);          /* 512 + 500 * 56 = 28512 bytes */
	sample(&l);
	for (uint32_t i = 0; i < n; i++) {
		many[i] = recs[0];
		many[i].addr += i;
	}
	l.records = many;
	l.nrecords = n;
	assert_int_equal(patch_log_encode(&l, buf, size), PATCH_LOG_OK);
	assert_int_equal(patch_log_decode(buf, size, &d), PATCH_LOG_OK);
	assert_int_equal(d.nrecords, n);
	assert_int_equal(d.records[n - 1].addr, recs[0].addr + n - 1);
	patch_log_free(&d);
	/* one page less cannot hold them */
	assert_int_equal(patch_log_encode(&l, buf, size - PATCH_LOG_PAGE), PATCH_LOG_ERR_NO_ROOM);
	free(buf);
	free(many);
}

static void test_encode_refuses_bad_fields(void **state)
{
	struct patch_log l;
	uint8_t buf[PATCH_LOG_PAGE];

	sample(&l);
	assert_int_equal(patch_log_encode(&l, buf, 100), PATCH_LOG_ERR_SIZE);
	recs[1].len = 17;
	assert_int_equal(patch_log_encode(&l, buf, sizeof(buf)), PATCH_LOG_ERR_ARG);
	sample(&l);
	recs[2].kind = 9;
	assert_int_equal(patch_log_encode(&l, buf, sizeof(buf)), PATCH_LOG_ERR_ARG);
	sample(&l);
	l.build_id_len = 33;
	assert_int_equal(patch_log_encode(&l, buf, sizeof(buf)), PATCH_LOG_ERR_ARG);
	sample(&l);
	l.state = 0;
	assert_int_equal(patch_log_encode(&l, buf, sizeof(buf)), PATCH_LOG_ERR_ARG);
}

static void test_truncated(void **state)
{
	struct patch_log d;
	size_t size;
	uint8_t *buf = encoded(&size);
	uint32_t hsize;

	for (size_t len = 0; len < 16; len++)
		assert_int_equal(patch_log_header_size(buf, len, &hsize), PATCH_LOG_ERR_TRUNCATED);
	for (size_t len = 0; len < size; len += 97)
		assert_int_equal(patch_log_decode(buf, len, &d), PATCH_LOG_ERR_TRUNCATED);
	assert_int_equal(patch_log_decode(buf, size - 1, &d), PATCH_LOG_ERR_TRUNCATED);
	assert_null(d.records);
	free(buf);
}

/* Every single flipped bit of the header is caught (the magic, version or size by their own
 * checks, the rest by the CRC at least). */
static void test_every_bit_flip_refused(void **state)
{
	size_t size;
	uint8_t *buf = encoded(&size);

	for (size_t i = 0; i < size; i++)
		for (int b = 0; b < 8; b++) {
			struct patch_log d;

			buf[i] ^= (uint8_t)(1u << b);
			assert_int_not_equal(patch_log_decode(buf, size, &d), PATCH_LOG_OK);
			assert_null(d.records);
			buf[i] ^= (uint8_t)(1u << b);
		}
	free(buf);
}

/* Well-sealed headers whose fields are out of range: each refused with its own error. */
static void test_fields_out_of_range(void **state)
{
	struct {
		size_t off;
		uint32_t value;
		int err;
	} cases[] = {
		{ 0, 0x58585858, PATCH_LOG_ERR_MAGIC },
		{ 8, 2, PATCH_LOG_ERR_VERSION },
		{ 12, 4095, PATCH_LOG_ERR_SIZE },
		{ 12, 0, PATCH_LOG_ERR_SIZE },
		{ 12, 128u << 20, PATCH_LOG_ERR_SIZE },
		{ 12, 8192, PATCH_LOG_ERR_TRUNCATED },         /* larger than the bytes read */
		{ 16, 48, PATCH_LOG_ERR_RECORD_SIZE },
		{ 20, 74, PATCH_LOG_ERR_COUNT },               /* (4096 - 512) / 56 = 64 fit */
		{ 20, 0xffffffff, PATCH_LOG_ERR_COUNT },
		{ 24, 0, PATCH_LOG_ERR_CHECKSUM },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct patch_log d;
		size_t size;
		uint8_t *buf = encoded(&size);

		put_le32(buf + cases[i].off, cases[i].value);
		assert_int_equal(patch_log_decode(buf, size, &d), cases[i].err);
		assert_null(d.records);
		free(buf);
	}
}

/* Fields checked after the CRC: made by an encoder given them (bypassing its checks). */
static void test_sealed_but_out_of_range(void **state)
{
	struct patch_log l, d;
	uint8_t buf[PATCH_LOG_PAGE];

	/* a record whose original and written bytes are the same is no patch */
	sample(&l);
	memcpy(recs[1].written, recs[1].orig, 5);
	assert_int_equal(patch_log_encode(&l, buf, sizeof(buf)), PATCH_LOG_OK);
	assert_int_equal(patch_log_decode(buf, sizeof(buf), &d), PATCH_LOG_ERR_RECORD);
	assert_null(d.records);
	/* a record wrapping around the address space */
	sample(&l);
	recs[0].addr = UINT64_MAX - 2;
	assert_int_equal(patch_log_encode(&l, buf, sizeof(buf)), PATCH_LOG_OK);
	assert_int_equal(patch_log_decode(buf, sizeof(buf), &d), PATCH_LOG_ERR_RECORD);
	/* a mapping wrapping around */
	sample(&l);
	l.map_size = UINT64_MAX;
	assert_int_equal(patch_log_encode(&l, buf, sizeof(buf)), PATCH_LOG_OK);
	assert_int_equal(patch_log_decode(buf, sizeof(buf), &d), PATCH_LOG_ERR_FIELD);
}

static void test_set_state(void **state)
{
	struct patch_log d;
	size_t size;
	uint8_t *buf = encoded(&size);

	assert_int_equal(patch_log_set_state(buf, size, PATCH_LOG_RESTORED), PATCH_LOG_OK);
	assert_int_equal(patch_log_decode(buf, size, &d), PATCH_LOG_OK);
	assert_int_equal(d.state, PATCH_LOG_RESTORED);
	assert_int_equal(d.nrecords, 3);
	patch_log_free(&d);
	assert_int_equal(patch_log_set_state(buf, size, 7), PATCH_LOG_ERR_ARG);
	assert_int_equal(patch_log_set_state(buf, size - 1, PATCH_LOG_PATCHED), PATCH_LOG_ERR_SIZE);
	buf[0] = 'X';
	assert_int_equal(patch_log_set_state(buf, size, PATCH_LOG_PATCHED), PATCH_LOG_ERR_MAGIC);
	free(buf);
}

static void test_strerror(void **state)
{
	assert_string_equal(patch_log_strerror(PATCH_LOG_OK), "no error");
	assert_non_null(strstr(patch_log_strerror(PATCH_LOG_ERR_CHECKSUM), "damaged"));
	for (int e = 0; e < PATCH_LOG_ERR_LAST + 2; e++)
		assert_non_null(patch_log_strerror(e));
	assert_string_equal(patch_log_strerror(-1), "unknown patch log error");
	assert_string_equal(patch_log_strerror(PATCH_LOG_ERR_READ_LAST), "unknown patch log error");
}

static void test_unpatch(void **state)
{
	struct patch_log l;
	uint8_t now[5], out[5];

	sample(&l);
	/* our jmp: the original goes back */
	memcpy(now, recs[0].written, 5);
	assert_int_equal(patch_log_unpatch(&recs[0], now, out), PATCH_NOW_OURS);
	assert_memory_equal(out, orig, 5);
	/* another tool's int3 over our jmp: it stays, the rest is the original */
	now[0] = 0xcc;
	assert_int_equal(patch_log_unpatch(&recs[0], now, out), PATCH_NOW_OURS);
	assert_int_equal(out[0], 0xcc);
	assert_memory_equal(out + 1, orig + 1, 4);
	/* already the original, with or without another tool's int3 */
	memcpy(now, orig, 5);
	assert_int_equal(patch_log_unpatch(&recs[0], now, out), PATCH_NOW_ORIGINAL);
	now[0] = 0xcc;
	assert_int_equal(patch_log_unpatch(&recs[0], now, out), PATCH_NOW_ORIGINAL);
	/* someone else's jmp (another session's, to another trampoline): never written */
	memcpy(now, recs[0].written, 5);
	now[2] ^= 0x40;
	assert_int_equal(patch_log_unpatch(&recs[0], now, out), PATCH_NOW_FOREIGN);
	/* half ours: not ours */
	memcpy(now, orig, 5);
	now[3] = recs[0].written[3];
	now[3] ^= orig[3] == recs[0].written[3] ? 1 : 0;
	assert_int_equal(patch_log_unpatch(&recs[0], now, out), PATCH_NOW_FOREIGN);
}

/* A call site's records: the file's `call f` and ours, `call stub`, both whole 5-byte calls. */
static const uint8_t call_f[5] = { 0xe8, 0x88, 0xdd, 0xff, 0xff };
static const uint8_t call_stub[5] = { 0xe8, 0x41, 0xff, 0x0f, 0x00 };

static void test_call_rel32_round_trip(void **state)
{
	struct patch_record mixed[3], r;
	struct patch_log l, d;
	uint8_t *buf;
	size_t size;

	sample(&l);
	mixed[0] = recs[0];
	assert_int_equal(patch_record_init(&mixed[1], PATCH_KIND_CALL_REL32, 0x555555556333ull,
					   0x2333, call_f, call_stub, 5), PATCH_LOG_OK);
	assert_int_equal(mixed[1].kind, PATCH_KIND_CALL_REL32);
	assert_int_equal(mixed[1].len, 5);
	assert_memory_equal(mixed[1].orig, call_f, 5);
	assert_memory_equal(mixed[1].written, call_stub, 5);
	assert_true(all_zero_tail(&mixed[1]));
	assert_int_equal(patch_record_init(&mixed[2], PATCH_KIND_CALL_REL32, 0x555555556356ull,
					   0x2356, call_f, call_stub, 5), PATCH_LOG_OK);
	mixed[2].written[1] ^= 0x10;            /* another stub */
	l.records = mixed;
	l.nrecords = 3;
	size = patch_log_size(3);
	buf = malloc(size);
	assert_non_null(buf);
	assert_int_equal(patch_log_encode(&l, buf, size), PATCH_LOG_OK);
	assert_int_equal(patch_log_decode(buf, size, &d), PATCH_LOG_OK);
	assert_int_equal(d.nrecords, 3);
	for (int i = 0; i < 3; i++)
		assert_memory_equal(&d.records[i], &mixed[i], sizeof(mixed[i]));
	/* the kind at its documented offset of the second record */
	assert_int_equal(get_le32(buf + 512 + 56 + 20), PATCH_KIND_CALL_REL32);
	assert_memory_equal(buf + 512 + 56 + 24, call_f, 5);
	assert_memory_equal(buf + 512 + 56 + 40, call_stub, 5);
	patch_log_free(&d);
	free(buf);
	/* what the constructor refuses: no kind, a kind past the last, no change, too long */
	assert_int_equal(patch_record_init(&r, 0, 0x1000, 0, call_f, call_stub, 5), PATCH_LOG_ERR_ARG);
	assert_int_equal(patch_record_init(&r, PATCH_KIND_MAX + 1, 0x1000, 0, call_f, call_stub, 5),
			 PATCH_LOG_ERR_ARG);
	assert_int_equal(patch_record_init(&r, PATCH_KIND_CALL_REL32, 0x1000, 0, call_f, call_f, 5),
			 PATCH_LOG_ERR_ARG);
	assert_int_equal(patch_record_init(&r, PATCH_KIND_CALL_REL32, 0x1000, 0, call_f, call_stub,
					   PATCH_LOG_MAX_BYTES + 1), PATCH_LOG_ERR_ARG);
	assert_int_equal(patch_record_init(&r, PATCH_KIND_CALL_REL32, UINT64_MAX - 2, 0, call_f,
					   call_stub, 5), PATCH_LOG_ERR_ARG);
	(void)state;
}

static void test_call_rel32_unpatch(void **state)
{
	struct patch_record r;
	uint8_t now[5], out[5];

	assert_int_equal(patch_record_init(&r, PATCH_KIND_CALL_REL32, 0x555555556333ull, 0x2333,
					   call_f, call_stub, 5), PATCH_LOG_OK);
	/* our call: the file's call goes back, whole */
	memcpy(now, call_stub, 5);
	assert_int_equal(patch_log_unpatch(&r, now, out), PATCH_NOW_OURS);
	assert_memory_equal(out, call_f, 5);
	/* another tool's int3 on the call's first byte (its uprobe on the call): it stays, and the
	 * rel32 behind it is the file's again, which is what the kernel runs for it anyway */
	now[0] = 0xcc;
	assert_int_equal(patch_log_unpatch(&r, now, out), PATCH_NOW_OURS);
	assert_int_equal(out[0], 0xcc);
	assert_memory_equal(out + 1, call_f + 1, 4);
	/* already the file's call, with or without that int3 */
	memcpy(now, call_f, 5);
	assert_int_equal(patch_log_unpatch(&r, now, out), PATCH_NOW_ORIGINAL);
	now[0] = 0xcc;
	assert_int_equal(patch_log_unpatch(&r, now, out), PATCH_NOW_ORIGINAL);
	/* a call to another stub (another session's redirection): not ours, never written */
	memcpy(now, call_stub, 5);
	now[2] ^= 0x01;
	assert_int_equal(patch_log_unpatch(&r, now, out), PATCH_NOW_FOREIGN);
	now[0] = 0xcc;
	assert_int_equal(patch_log_unpatch(&r, now, out), PATCH_NOW_FOREIGN);
	/* the rel32 ours but not a call any more (a jmp written over it): not ours */
	memcpy(now, call_stub, 5);
	now[0] = 0xe9;
	assert_int_equal(patch_log_unpatch(&r, now, out), PATCH_NOW_FOREIGN);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_many_records_span_pages),
		cmocka_unit_test(test_encode_refuses_bad_fields),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_every_bit_flip_refused),
		cmocka_unit_test(test_fields_out_of_range),
		cmocka_unit_test(test_sealed_but_out_of_range),
		cmocka_unit_test(test_set_state),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_unpatch),
		cmocka_unit_test(test_call_rel32_round_trip),
		cmocka_unit_test(test_call_rel32_unpatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
