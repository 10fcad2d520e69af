// SPDX-License-Identifier: MIT
/*
 * Writer -> reader round trips: every field of both files, the detail_seq/index_seq links in
 * both directions, uniform and mixed detail lengths, lower_bound, empty threads and the
 * placeholder state a live recording leaves on disk.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "atf.h"

static char tmpdir[64];
static char path_buf[2][512];

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/atf_wr_XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *thread_file(int slot, uint32_t dir_id, const char *name)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/thread_%u/%s", tmpdir, dir_id, name);
	return path_buf[slot];
}

static int64_t file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* The event the test appends as number @i (before the writer fills detail_seq). */
static struct atf_index_event make_event(uint64_t i, uint32_t tid)
{
	struct atf_index_event e = {
		.timestamp_ns = 1000000 + i * 7,
		.function_id = (uint64_t)0xABCD0000u << 32 | (i % 13 + 1),
		.thread_id = tid,
		.event_kind = i % 2 ? ATF_KIND_RETURN : ATF_KIND_CALL,
		.call_depth = (uint32_t)(i % 5),
		.detail_seq = 0x5A5A5A5A,
	};
	return e;
}

/* Payload + @stack_size stack bytes, all derived from @i. Returns the byte length. */
static uint32_t make_payload(uint8_t *buf, uint64_t i, uint16_t stack_size)
{
	struct atf_detail_payload p = { .function_id = i * 3, .lr = i + 1, .fp = i + 2, .sp = i + 3,
					.stack_size = stack_size };

	for (int r = 0; r < ATF_DETAIL_GP_REGS; r++)
		p.gp[r] = i * 100 + (uint64_t)r;
	atf_detail_payload_encode(buf, &p);
	for (uint16_t s = 0; s < stack_size; s++)
		buf[ATF_DETAIL_PAYLOAD_SIZE + s] = (uint8_t)(i + s);
	return ATF_DETAIL_PAYLOAD_SIZE + stack_size;
}

static void check_payload(const struct atf_detail_event *d, uint64_t i, uint16_t stack_size)
{
	assert_true(d->has_payload);
	assert_int_equal(d->payload.function_id, i * 3);
	for (int r = 0; r < ATF_DETAIL_GP_REGS; r++)
		assert_int_equal(d->payload.gp[r], i * 100 + (uint64_t)r);
	assert_int_equal(d->payload.lr, i + 1);
	assert_int_equal(d->payload.fp, i + 2);
	assert_int_equal(d->payload.sp, i + 3);
	assert_int_equal(d->payload.stack_size, stack_size);
	for (uint16_t s = 0; s < stack_size; s++)
		assert_int_equal(d->stack[s], (uint8_t)(i + s));
	if (stack_size == 0)
		assert_null(d->stack);
}

/*
 * Write @n events, a detail record on every third, with stack sizes from @stack_of, then check
 * both files field by field after reopening them STRICT with CRC.
 */
static void round_trip(uint32_t dir_id, uint64_t n, uint16_t (*stack_of)(uint64_t), bool expect_uniform)
{
	struct atf_thread_writer *w;
	struct atf_index_file ix;
	struct atf_detail_file dx;
	struct atf_diag diag;
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + ATF_DETAIL_MAX_STACK];
	uint64_t ndetail = 0, detail_bytes = 0, first_detail = 0, last_detail = 0;
	const uint32_t tid = 4242;

	assert_int_equal(atf_thread_writer__new(&w, tmpdir, dir_id, tid), 0);
	for (uint64_t i = 0; i < n; i++) {
		struct atf_index_event e = make_event(i, tid);
		struct atf_detail_in din = { .event_type = i % 2 ? ATF_DETAIL_RETURN : ATF_DETAIL_CALL,
					     .flags = (uint16_t)(i & 3), .payload = payload };
		bool with_detail = i % 3 == 1;

		if (with_detail) {
			din.payload_len = make_payload(payload, i, stack_of(i));
			if (ndetail == 0)
				first_detail = i;
			last_detail = i;
			detail_bytes += ATF_DETAIL_EVENT_HDR_SIZE + din.payload_len;
		}
		assert_int_equal(atf_thread_writer__append(w, &e, with_detail ? &din : NULL), (int64_t)i);
		assert_int_equal(e.detail_seq, with_detail ? (uint32_t)ndetail : ATF_NO_DETAIL);
		ndetail += with_detail;
	}
	assert_int_equal(atf_thread_writer__index_count(w), n);
	assert_int_equal(atf_thread_writer__detail_count(w), ndetail);
	assert_int_equal(atf_thread_writer__time_start(w), 1000000);
	assert_int_equal(atf_thread_writer__time_end(w), 1000000 + (n - 1) * 7);
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	assert_int_equal(atf_thread_writer__finalize(w), 0);   /* idempotent */
	atf_thread_writer__free(w);

	const char *ipath = thread_file(0, dir_id, "index.atf"), *dpath = thread_file(1, dir_id, "detail.atf");

	assert_int_equal(file_size(ipath), 64 + 32 * (int64_t)n + 64);
	assert_int_equal(file_size(dpath), 64 + (int64_t)detail_bytes + 64);

	assert_int_equal(atf_index_open(&ix, ipath, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, &diag), 0);
	assert_memory_equal(ix.hdr.magic, "ATI2", 4);
	assert_int_equal(ix.hdr.endian, 1);
	assert_int_equal(ix.hdr.version, 1);
	assert_int_equal(ix.hdr.arch, ATF_HOST_ARCH);
	assert_int_equal(ix.hdr.os, ATF_OS_LINUX);
	assert_int_equal(ix.hdr.clock_type, ATF_CLOCK_BOOTTIME);
	assert_int_equal(ix.hdr.flags, ATF_INDEX_FLAG_HAS_DETAIL);
	assert_int_equal(ix.hdr.thread_id, tid);
	assert_int_equal(ix.hdr.event_size, 32);
	assert_int_equal(ix.hdr.event_count, n);
	assert_int_equal(ix.hdr.events_offset, 64);
	assert_int_equal(ix.hdr.footer_offset, 64 + 32 * n);
	assert_int_equal(ix.hdr.time_start_ns, 1000000);
	assert_int_equal(ix.hdr.time_end_ns, 1000000 + (n - 1) * 7);
	assert_true(ix.has_footer);
	assert_false(ix.recovered);
	assert_int_equal(ix.count, n);
	assert_int_equal(ix.torn_bytes, 0);
	assert_memory_equal(ix.footer.magic, "2ITA", 4);
	assert_int_equal(ix.footer.event_count, n);
	assert_int_equal(ix.footer.bytes_written, 32 * n);
	assert_int_equal(ix.footer.time_start_ns, ix.hdr.time_start_ns);
	assert_int_equal(ix.footer.time_end_ns, ix.hdr.time_end_ns);
	assert_int_equal(ix.footer.checksum, atf_crc32(0, ix.map + 64, 32 * n));

	assert_int_equal(atf_detail_open(&dx, dpath, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, &diag), 0);
	assert_memory_equal(dx.hdr.magic, "ATD2", 4);
	assert_int_equal(dx.hdr.endian, 1);
	assert_int_equal(dx.hdr.version, 1);
	assert_int_equal(dx.hdr.arch, ATF_HOST_ARCH);
	assert_int_equal(dx.hdr.os, ATF_OS_LINUX);
	assert_int_equal(dx.hdr.thread_id, tid);
	assert_int_equal(dx.hdr.events_offset, 64);
	assert_int_equal(dx.hdr.event_count, ndetail);
	assert_int_equal(dx.hdr.bytes_length, detail_bytes);
	assert_int_equal(dx.hdr.index_seq_start, first_detail);
	assert_int_equal(dx.hdr.index_seq_end, last_detail);
	assert_true(dx.has_footer);
	assert_false(dx.recovered);
	assert_int_equal(dx.count, ndetail);
	assert_int_equal(dx.bytes_length, detail_bytes);
	assert_memory_equal(dx.footer.magic, "2DTA", 4);
	assert_int_equal(dx.footer.event_count, ndetail);
	assert_int_equal(dx.footer.bytes_length, detail_bytes);
	assert_int_equal(dx.footer.time_start_ns, 1000000 + first_detail * 7);
	assert_int_equal(dx.footer.time_end_ns, 1000000 + last_detail * 7);
	if (expect_uniform) {
		assert_int_equal(dx.uniform_len, ATF_DETAIL_EVENT_HDR_SIZE + ATF_DETAIL_PAYLOAD_SIZE + stack_of(1));
		assert_null(dx.offsets);
	} else {
		assert_int_equal(dx.uniform_len, 0);
		assert_non_null(dx.offsets);
	}

	/* Every index event, and the links both ways in O(1). */
	for (uint64_t i = 0; i < n; i++) {
		struct atf_index_event want = make_event(i, tid), got;
		struct atf_detail_event d;

		atf_index_get(&ix, i, &got);
		assert_int_equal(got.timestamp_ns, want.timestamp_ns);
		assert_int_equal(got.function_id, want.function_id);
		assert_int_equal(got.thread_id, tid);
		assert_int_equal(got.event_kind, want.event_kind);
		assert_int_equal(got.call_depth, want.call_depth);
		if (i % 3 != 1) {
			assert_int_equal(got.detail_seq, ATF_NO_DETAIL);
			continue;
		}
		assert_int_equal(got.detail_seq, i / 3);
		assert_int_equal(atf_detail_get(&dx, got.detail_seq, &d), 0);
		assert_int_equal(d.hdr.index_seq, i);
		assert_int_equal(d.hdr.total_length, ATF_DETAIL_EVENT_HDR_SIZE + ATF_DETAIL_PAYLOAD_SIZE + stack_of(i));
		assert_int_equal(d.hdr.event_type, i % 2 ? ATF_DETAIL_RETURN : ATF_DETAIL_CALL);
		assert_int_equal(d.hdr.flags, i & 3);
		assert_int_equal(d.hdr.thread_id, tid);
		assert_int_equal(d.hdr.timestamp, want.timestamp_ns);
		check_payload(&d, i, stack_of(i));
	}
	for (uint64_t s = 0; s < dx.count; s++) {
		struct atf_detail_event d;
		struct atf_index_event back;

		assert_int_equal(atf_detail_get(&dx, s, &d), 0);
		atf_index_get(&ix, d.hdr.index_seq, &back);
		assert_int_equal(back.detail_seq, s);
	}
	struct atf_detail_event none;

	assert_int_equal(atf_detail_get(&dx, dx.count, &none), -ATF_E_RANGE);
	atf_detail_close(&dx);
	atf_index_close(&ix);
	atf_index_close(&ix);   /* a second close is harmless */
}

static uint16_t stack_fixed(uint64_t i) { return 16; }
static uint16_t stack_varied(uint64_t i) { return (uint16_t)(i * 37 % (ATF_DETAIL_MAX_STACK + 1)); }

/* 20000 events cross the 256 KiB buffer (8192 events) twice. */
static void test_round_trip_uniform(void **state) { round_trip(0, 20000, stack_fixed, true); }
static void test_round_trip_mixed(void **state) { round_trip(7, 5000, stack_varied, false); }

static void test_empty_thread(void **state)
{
	struct atf_thread_writer *w;
	struct atf_index_file ix;
	struct atf_diag diag;

	assert_int_equal(atf_thread_writer__new(&w, tmpdir, 1, 99), 0);
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	atf_thread_writer__free(w);
	assert_int_equal(file_size(thread_file(0, 1, "index.atf")), 128);
	assert_int_equal(file_size(thread_file(1, 1, "detail.atf")), -1);
	assert_int_equal(atf_index_open(&ix, thread_file(0, 1, "index.atf"),
					ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, &diag), 0);
	assert_true(ix.has_footer);
	assert_false(ix.recovered);
	assert_int_equal(ix.count, 0);
	assert_int_equal(ix.hdr.flags, 0);
	assert_int_equal(ix.hdr.footer_offset, 64);
	assert_int_equal(ix.footer.checksum, 0);
	assert_int_equal(atf_index_lower_bound(&ix, 0), 0);
	assert_int_equal(atf_index_lower_bound(&ix, UINT64_MAX), 0);
	atf_index_close(&ix);
}

static void test_no_detail_file_without_detail(void **state)
{
	struct atf_thread_writer *w;
	struct atf_index_file ix;

	/* free() without finalize() finalizes; a nested session dir is created (mkdir -p). */
	char nested[128];

	snprintf(nested, sizeof(nested), "%s/a/b", tmpdir);
	assert_int_equal(atf_thread_writer__new(&w, nested, 2, 5), 0);
	for (uint64_t i = 0; i < 10; i++) {
		struct atf_index_event e = make_event(i, 5);

		assert_int_equal(atf_thread_writer__append(w, &e, NULL), (int64_t)i);
		assert_int_equal(e.detail_seq, ATF_NO_DETAIL);
	}
	atf_thread_writer__free(w);
	snprintf(path_buf[0], sizeof(path_buf[0]), "%s/thread_2/detail.atf", nested);
	assert_int_equal(file_size(path_buf[0]), -1);
	snprintf(path_buf[0], sizeof(path_buf[0]), "%s/thread_2/index.atf", nested);
	assert_int_equal(atf_index_open(&ix, path_buf[0], ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL), 0);
	assert_int_equal(ix.count, 10);
	assert_int_equal(ix.hdr.flags, 0);
	atf_index_close(&ix);
}

static void test_lower_bound(void **state)
{
	struct atf_thread_writer *w;
	struct atf_index_file ix;
	/* Duplicates and gaps: 100 100 110 110 120 120 ... 190 190. */
	const uint64_t n = 20;

	assert_int_equal(atf_thread_writer__new(&w, tmpdir, 3, 1), 0);
	for (uint64_t i = 0; i < n; i++) {
		struct atf_index_event e = make_event(i, 1);

		e.timestamp_ns = 100 + i / 2 * 10;
		assert_int_equal(atf_thread_writer__append(w, &e, NULL), (int64_t)i);
	}
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	atf_thread_writer__free(w);
	assert_int_equal(atf_index_open(&ix, thread_file(0, 3, "index.atf"), ATF_OPEN_STRICT, NULL), 0);
	assert_int_equal(atf_index_lower_bound(&ix, 0), 0);
	assert_int_equal(atf_index_lower_bound(&ix, 100), 0);
	assert_int_equal(atf_index_lower_bound(&ix, 101), 2);
	assert_int_equal(atf_index_lower_bound(&ix, 110), 2);
	assert_int_equal(atf_index_lower_bound(&ix, 155), 12);
	assert_int_equal(atf_index_lower_bound(&ix, 190), 18);
	assert_int_equal(atf_index_lower_bound(&ix, 191), 20);
	assert_int_equal(atf_index_lower_bound(&ix, UINT64_MAX), 20);
	atf_index_close(&ix);
}

/* Short detail records: no payload, and a payload whose stack_size overruns the record. */
static void test_detail_without_payload(void **state)
{
	struct atf_thread_writer *w;
	struct atf_detail_file dx;
	struct atf_detail_event d;
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + 8];
	struct atf_index_event e0 = make_event(0, 9), e1 = make_event(1, 9), e2 = make_event(2, 9);
	struct atf_detail_in empty = { .event_type = ATF_DETAIL_CALL };
	struct atf_detail_in lying = { .event_type = ATF_DETAIL_RETURN, .payload = payload,
				       .payload_len = sizeof(payload) };
	struct atf_detail_in raw = { .event_type = ATF_DETAIL_CALL, .payload = "abc", .payload_len = 3 };

	make_payload(payload, 5, 8);
	payload[96] = 9;   /* stack_size 9 > the 8 stack bytes present */
	assert_int_equal(atf_thread_writer__new(&w, tmpdir, 4, 9), 0);
	assert_int_equal(atf_thread_writer__append(w, &e0, &empty), 0);
	assert_int_equal(atf_thread_writer__append(w, &e1, &lying), 1);
	assert_int_equal(atf_thread_writer__append(w, &e2, &raw), 2);
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	atf_thread_writer__free(w);

	assert_int_equal(atf_detail_open(&dx, thread_file(0, 4, "detail.atf"),
					 ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL), 0);
	assert_int_equal(dx.count, 3);
	assert_int_equal(dx.uniform_len, 0);
	assert_int_equal(atf_detail_get(&dx, 0, &d), 0);
	assert_int_equal(d.hdr.total_length, 24);
	assert_false(d.has_payload);
	assert_int_equal(atf_detail_get(&dx, 1, &d), 0);
	assert_int_equal(d.hdr.total_length, 24 + 108);
	assert_int_equal(d.hdr.index_seq, 1);
	assert_false(d.has_payload);
	assert_null(d.stack);
	assert_int_equal(atf_detail_get(&dx, 2, &d), 0);
	assert_int_equal(d.hdr.total_length, 27);
	assert_false(d.has_payload);
	assert_memory_equal(d.raw + 24, "abc", 3);
	atf_detail_close(&dx);
}

/* While recording: placeholder headers, files readable (recovered) up to the last flush. */
static void test_live_files_and_misuse(void **state)
{
	struct atf_thread_writer *w, *w2;
	struct atf_index_file ix;
	struct atf_detail_file dx;
	struct atf_diag diag;
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE];
	struct atf_detail_in din = { .event_type = ATF_DETAIL_CALL, .payload = payload,
				     .payload_len = make_payload(payload, 1, 0) };

	assert_int_equal(atf_thread_writer__new(&w, tmpdir, 5, 77), 0);
	assert_int_equal(atf_thread_writer__new(&w2, tmpdir, 5, 77), -EEXIST);
	for (uint64_t i = 0; i < 4; i++) {
		struct atf_index_event e = make_event(i, 77);

		assert_int_equal(atf_thread_writer__append(w, &e, i == 2 ? &din : NULL), (int64_t)i);
	}
	/* Nothing flushed yet: only the placeholder header, already flagged has_detail. */
	assert_int_equal(atf_index_open(&ix, thread_file(0, 5, "index.atf"), 0, &diag), 0);
	assert_true(ix.recovered);
	assert_int_equal(ix.count, 0);
	assert_int_equal(ix.hdr.flags, ATF_INDEX_FLAG_HAS_DETAIL);
	atf_index_close(&ix);

	assert_int_equal(atf_thread_writer__flush(w), 0);
	assert_int_equal(atf_index_open(&ix, thread_file(0, 5, "index.atf"), ATF_OPEN_CHECK_CRC, &diag), 0);
	assert_true(ix.recovered);
	assert_false(ix.has_footer);
	assert_int_equal(ix.count, 4);
	assert_int_equal(ix.torn_bytes, 0);
	atf_index_close(&ix);
	memset(&diag, 0, sizeof(diag));
	assert_int_equal(atf_index_open(&ix, thread_file(0, 5, "index.atf"), ATF_OPEN_STRICT, &diag), -ATF_E_FOOTER);
	assert_int_equal(diag.err, -ATF_E_FOOTER);
	assert_int_equal(diag.offset, 64);
	assert_string_equal(diag.file, thread_file(0, 5, "index.atf"));
	assert_true(diag.msg[0] != '\0');
	atf_index_close(&ix);   /* safe after a failed open */
	assert_int_equal(atf_detail_open(&dx, thread_file(1, 5, "detail.atf"), 0, &diag), 0);
	assert_true(dx.recovered);
	assert_int_equal(dx.count, 1);
	atf_detail_close(&dx);

	assert_int_equal(atf_thread_writer__finalize(w), 0);
	struct atf_index_event late = make_event(9, 77);

	assert_int_equal(atf_thread_writer__append(w, &late, NULL), -EINVAL);
	assert_int_equal(atf_thread_writer__flush(w), 0);
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	atf_thread_writer__free(w);
	atf_thread_writer__free(NULL);
	assert_int_equal(atf_index_open(&ix, thread_file(0, 5, "index.atf"), ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, &diag), 0);
	assert_int_equal(ix.count, 4);
	atf_index_close(&ix);
}

static void set_file_size_limit(rlim_t soft)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = soft;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

/*
 * A write that fails part-way (here: RLIMIT_FSIZE, EFBIG) loses nothing: the bytes not written
 * stay buffered, the append that needed room reports the error, and once the disk accepts
 * data again the file continues exactly where it stopped, with a CRC over every byte.
 */
static void test_write_error_keeps_data(void **state)
{
	struct atf_thread_writer *w;
	struct atf_index_file ix;
	struct rlimit saved;
	const uint64_t n = 10000, limit = 64 + 32 * 1000;
	uint64_t i = 0;
	int64_t rc = 0;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(atf_thread_writer__new(&w, tmpdir, 6, 8), 0);
	set_file_size_limit(limit);
	for (; i < n; i++) {
		struct atf_index_event e = make_event(i, 8);

		rc = atf_thread_writer__append(w, &e, NULL);
		if (rc < 0)
			break;
	}
	/* The 256 KiB buffer holds 8192 events; the 8193rd append must flush and hit the limit. */
	assert_int_equal(rc, -EFBIG);
	assert_int_equal(i, 8192);
	assert_int_equal(atf_thread_writer__flush(w), -EFBIG);
	assert_int_equal(file_size(thread_file(0, 6, "index.atf")), limit);

	set_file_size_limit(saved.rlim_cur);
	for (; i < n; i++) {
		struct atf_index_event e = make_event(i, 8);

		assert_int_equal(atf_thread_writer__append(w, &e, NULL), (int64_t)i);
	}
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	atf_thread_writer__free(w);
	assert_int_equal(atf_index_open(&ix, thread_file(0, 6, "index.atf"),
					ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL), 0);
	assert_int_equal(ix.count, n);
	for (uint64_t s = 0; s < n; s++) {
		struct atf_index_event want = make_event(s, 8), got;

		atf_index_get(&ix, s, &got);
		assert_int_equal(got.timestamp_ns, want.timestamp_ns);
		assert_int_equal(got.function_id, want.function_id);
	}
	atf_index_close(&ix);

	/*
	 * A finalize that cannot flush leaves the placeholder header (readable, never claiming
	 * counts that are not on disk) and keeps the rest buffered; a retry completes the file.
	 */
	const char *p9 = thread_file(0, 9, "index.atf");

	assert_int_equal(atf_thread_writer__new(&w, tmpdir, 9, 8), 0);
	for (i = 0; i < 2000; i++) {
		struct atf_index_event e = make_event(i, 8);

		assert_int_equal(atf_thread_writer__append(w, &e, NULL), (int64_t)i);
	}
	set_file_size_limit(limit);
	assert_int_equal(atf_thread_writer__finalize(w), -EFBIG);
	assert_int_equal(atf_index_open(&ix, p9, 0, NULL), 0);
	assert_true(ix.recovered);
	assert_int_equal(ix.hdr.event_count, 0);
	assert_int_equal(ix.count, 1000);
	atf_index_close(&ix);
	set_file_size_limit(saved.rlim_cur);
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	atf_thread_writer__free(w);
	assert_int_equal(atf_index_open(&ix, p9, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL), 0);
	assert_int_equal(ix.count, 2000);
	atf_index_close(&ix);

	/* free() after a failed finalize still releases everything and leaves a recoverable file. */
	assert_int_equal(atf_thread_writer__new(&w, tmpdir, 10, 8), 0);
	for (i = 0; i < 1500; i++) {
		struct atf_index_event e = make_event(i, 8);

		assert_int_equal(atf_thread_writer__append(w, &e, NULL), (int64_t)i);
	}
	set_file_size_limit(limit);
	atf_thread_writer__free(w);
	set_file_size_limit(saved.rlim_cur);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(atf_file_recover(thread_file(0, 10, "index.atf"), NULL), 1);
	assert_int_equal(atf_index_open(&ix, thread_file(0, 10, "index.atf"),
					ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL), 0);
	assert_int_equal(ix.count, 1000);
	atf_index_close(&ix);
}

static void test_open_errors(void **state)
{
	struct atf_index_file ix;
	struct atf_detail_file dx;
	struct atf_diag diag;
	char p[128];

	snprintf(p, sizeof(p), "%s/missing.atf", tmpdir);
	assert_int_equal(atf_index_open(&ix, p, 0, &diag), -ENOENT);
	assert_int_equal(diag.err, -ENOENT);
	assert_int_equal(atf_detail_open(&dx, p, 0, &diag), -ENOENT);
	/* A directory is not an ATF file. */
	assert_int_equal(atf_index_open(&ix, tmpdir, 0, &diag), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip_uniform, setup, teardown),
		cmocka_unit_test_setup_teardown(test_round_trip_mixed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_thread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_detail_file_without_detail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lower_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detail_without_payload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_files_and_misuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error_keeps_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
