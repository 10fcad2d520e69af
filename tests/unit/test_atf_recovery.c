// SPDX-License-Identifier: MIT
/*
 * Crash recovery and hostile input: a small thread (index + detail) is cut at EVERY byte
 * offset, both as finalized and as a recorder that died mid-session would leave it. The
 * non-strict readers must return exactly the whole records, and atf_file_recover must turn
 * each cut into a file that opens STRICT with a correct CRC. Flipped bytes must be caught by
 * the CRC; random garbage and random mutations must never crash the readers (ASan/UBSan).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "atf.h"
#include "byteorder.h"

#define NEVENTS 8
#define MAX_FILE 4096

struct image {
	uint8_t bytes[MAX_FILE];
	size_t len;
};

static char tmpdir[64];
static char cut_path[128];
/* The session written once per test: final files, and copies taken after a flush (recorder alive). */
static struct image index_final, detail_final, index_live, detail_live;
static size_t detail_rec_end[NEVENTS];   /* end offset of each detail record in the file */
static size_t ndetail;

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void load(struct image *img, const char *path)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, img->bytes, sizeof(img->bytes));
	assert_true(n > 0 && n < (ssize_t)sizeof(img->bytes));
	img->len = (size_t)n;
	close(fd);
}

static void store(const char *path, const uint8_t *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, len), (ssize_t)len);
	close(fd);
}

static size_t size_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (size_t)st.st_size;
}

/* 8 events; detail on events 1, 2, 5, 6 with stack sizes 0, 40, 7, 256. */
static int setup(void **state)
{
	static const int stack_of[NEVENTS] = { -1, 0, 40, -1, -1, 7, 256, -1 };
	struct atf_thread_writer *w;
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + ATF_DETAIL_MAX_STACK];
	char path[160];
	size_t end = ATF_HEADER_SIZE;

	/* tmpfs when available: thousands of recoveries each fsync, and durability is not under test. */
	snprintf(tmpdir, sizeof(tmpdir), "%s/atf_rec_XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(cut_path, sizeof(cut_path), "%s/cut.atf", tmpdir);
	if (atf_thread_writer__new(&w, tmpdir, 0, 321))
		return -1;
	ndetail = 0;
	for (int i = 0; i < NEVENTS; i++) {
		struct atf_index_event e = { .timestamp_ns = 5000 + (uint64_t)i * 11, .function_id = 0x100000000ull + (uint64_t)i,
					     .thread_id = 321, .event_kind = ATF_KIND_CALL + (i & 1), .call_depth = (uint32_t)i / 2 };
		struct atf_detail_payload p = { .function_id = e.function_id, .sp = 0x7ffd0000 + (uint64_t)i };
		struct atf_detail_in din = { .event_type = ATF_DETAIL_CALL, .payload = payload };

		if (stack_of[i] >= 0) {
			p.stack_size = (uint16_t)stack_of[i];
			atf_detail_payload_encode(payload, &p);
			memset(payload + ATF_DETAIL_PAYLOAD_SIZE, 0x60 + i, (size_t)stack_of[i]);
			din.payload_len = ATF_DETAIL_PAYLOAD_SIZE + (uint32_t)stack_of[i];
			end += ATF_DETAIL_EVENT_HDR_SIZE + din.payload_len;
			detail_rec_end[ndetail++] = end;
		}
		if (atf_thread_writer__append(w, &e, stack_of[i] >= 0 ? &din : NULL) != i)
			return -1;
	}
	if (atf_thread_writer__flush(w))
		return -1;
	snprintf(path, sizeof(path), "%s/thread_0/index.atf", tmpdir);
	load(&index_live, path);
	snprintf(path, sizeof(path), "%s/thread_0/detail.atf", tmpdir);
	load(&detail_live, path);
	if (atf_thread_writer__finalize(w))
		return -1;
	atf_thread_writer__free(w);
	snprintf(path, sizeof(path), "%s/thread_0/index.atf", tmpdir);
	load(&index_final, path);
	snprintf(path, sizeof(path), "%s/thread_0/detail.atf", tmpdir);
	load(&detail_final, path);
	return 0;
}

static int teardown(void **state)
{
	return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Recovery leaves no temporary (atf_tmpfile: ".<name>.<random>.tmp") behind. */
static void check_tmp_gone(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		assert_false(n > 4 && !strcmp(de->d_name + n - 4, ".tmp"));
	}
	closedir(d);
}

/* The file at @path holds exactly @len bytes of @bytes. */
static void assert_file_is(const char *path, const uint8_t *bytes, size_t len)
{
	uint8_t *buf = malloc(len + 1);
	FILE *f = fopen(path, "rb");

	assert_non_null(buf);
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, len + 1, f), len);
	assert_memory_equal(buf, bytes, len);
	fclose(f);
	free(buf);
}

/* Recovered-or-not, the index at @cut_path holds exactly @want whole events of the original. */
static void expect_index_events(unsigned flags, uint64_t want, bool recovered)
{
	struct atf_index_file f;
	struct atf_diag diag;

	assert_int_equal(atf_index_open(&f, cut_path, flags, &diag), 0);
	assert_int_equal(f.count, want);
	assert_int_equal(f.recovered, recovered);
	assert_memory_equal(f.map + f.events_offset, index_final.bytes + ATF_HEADER_SIZE, want * ATF_INDEX_EVENT_SIZE);
	atf_index_close(&f);
}

static void cut_index(const struct image *img, bool finalized)
{
	struct atf_diag diag;

	for (size_t len = 0; len <= img->len; len++) {
		uint64_t whole = len < ATF_HEADER_SIZE ? 0 : (len - ATF_HEADER_SIZE) / ATF_INDEX_EVENT_SIZE;
		bool complete = finalized && len == img->len;
		struct atf_index_file f;

		if (whole > NEVENTS)
			whole = NEVENTS;
		store(cut_path, img->bytes, len);
		if (len < ATF_HEADER_SIZE) {
			assert_int_equal(atf_index_open(&f, cut_path, 0, &diag), -ATF_E_TRUNCATED);
			assert_int_equal(diag.offset, len);
			assert_true(atf_file_recover(cut_path, &diag) < 0);
			assert_int_equal(size_of(cut_path), len);
			continue;
		}
		expect_index_events(0, whole, !complete);
		if (!complete)
			assert_int_equal(atf_index_open(&f, cut_path, ATF_OPEN_STRICT, &diag), -ATF_E_FOOTER);
		assert_int_equal(atf_file_recover(cut_path, &diag), complete ? 0 : 1);
		check_tmp_gone();
		assert_int_equal(size_of(cut_path), ATF_HEADER_SIZE + whole * ATF_INDEX_EVENT_SIZE + ATF_FOOTER_SIZE);
		expect_index_events(ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, whole, false);
		assert_int_equal(atf_index_open(&f, cut_path, 0, NULL), 0);
		assert_int_equal(f.hdr.flags, ATF_INDEX_FLAG_HAS_DETAIL);
		assert_int_equal(f.hdr.thread_id, 321);
		assert_int_equal(f.hdr.time_start_ns, whole ? 5000 : 0);
		assert_int_equal(f.hdr.time_end_ns, whole ? 5000 + (whole - 1) * 11 : 0);
		atf_index_close(&f);
		assert_int_equal(atf_file_recover(cut_path, &diag), 0);   /* now complete */
	}
}

static void test_cut_index_everywhere(void **state)
{
	cut_index(&index_final, true);
	cut_index(&index_live, false);
}

static void expect_detail_records(unsigned flags, size_t want, bool recovered, const struct image *img)
{
	struct atf_detail_file f;
	struct atf_diag diag;
	size_t bytes = want ? detail_rec_end[want - 1] - ATF_HEADER_SIZE : 0;

	assert_int_equal(atf_detail_open(&f, cut_path, flags, &diag), 0);
	assert_int_equal(f.count, want);
	assert_int_equal(f.recovered, recovered);
	assert_int_equal(f.bytes_length, bytes);
	assert_memory_equal(f.map + f.events_offset, img->bytes + ATF_HEADER_SIZE, bytes);
	for (size_t s = 0; s < want; s++) {
		struct atf_detail_event d;

		assert_int_equal(atf_detail_get(&f, s, &d), 0);
		assert_int_equal(d.raw - f.map, (s ? detail_rec_end[s - 1] : ATF_HEADER_SIZE));
		assert_true(d.has_payload);
	}
	atf_detail_close(&f);
}

/* Index events that carry detail, per setup(). */
static const uint64_t detail_index_seq[] = { 1, 2, 5, 6 };

static void cut_detail(const struct image *img, bool finalized)
{
	struct atf_diag diag;

	for (size_t len = 0; len <= img->len; len++) {
		bool complete = finalized && len == img->len;
		struct atf_detail_file f;
		size_t whole = 0;

		while (whole < ndetail && detail_rec_end[whole] <= len)
			whole++;
		store(cut_path, img->bytes, len);
		if (len < ATF_HEADER_SIZE) {
			assert_int_equal(atf_detail_open(&f, cut_path, 0, &diag), -ATF_E_TRUNCATED);
			assert_true(atf_file_recover(cut_path, &diag) < 0);
			assert_int_equal(size_of(cut_path), len);
			continue;
		}
		expect_detail_records(0, whole, !complete, img);
		if (!complete) {
			assert_int_equal(atf_detail_open(&f, cut_path, ATF_OPEN_STRICT, &diag), -ATF_E_FOOTER);
			assert_int_equal(diag.offset, whole ? detail_rec_end[whole - 1] : ATF_HEADER_SIZE);
		}
		assert_int_equal(atf_file_recover(cut_path, &diag), complete ? 0 : 1);
		check_tmp_gone();
		expect_detail_records(ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, whole, false, img);
		assert_int_equal(atf_detail_open(&f, cut_path, 0, NULL), 0);
		assert_int_equal(f.hdr.event_count, whole);
		assert_int_equal(f.hdr.index_seq_start, whole ? 1 : 0);
		if (whole)
			assert_int_equal(f.hdr.index_seq_end, detail_index_seq[whole - 1]);
		atf_detail_close(&f);
	}
}

static void test_cut_detail_everywhere(void **state)
{
	cut_detail(&detail_final, true);
	cut_detail(&detail_live, false);
}

/* Every single flipped byte in an events section fails CHECK_CRC. */
static void test_flipped_byte_caught_by_crc(void **state)
{
	struct image img;
	struct atf_diag diag;

	for (size_t off = ATF_HEADER_SIZE; off < index_final.len - ATF_FOOTER_SIZE; off++) {
		struct atf_index_file f;

		img = index_final;
		img.bytes[off] ^= 0x10;
		store(cut_path, img.bytes, img.len);
		assert_int_equal(atf_index_open(&f, cut_path, ATF_OPEN_STRICT, &diag), 0);
		atf_index_close(&f);
		assert_int_equal(atf_index_open(&f, cut_path, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, &diag), -ATF_E_CRC);
		assert_int_equal(diag.offset, ATF_HEADER_SIZE);
		/* corruption, not a cut: recovery reports it and never seals it with a new checksum */
		assert_int_equal(atf_file_recover(cut_path, &diag), -ATF_E_CRC);
		assert_file_is(cut_path, img.bytes, img.len);
	}
	for (size_t off = ATF_HEADER_SIZE; off < detail_final.len - ATF_FOOTER_SIZE; off++) {
		struct atf_detail_file f;
		bool length_field = off < ATF_HEADER_SIZE + 4;
		int err;

		for (size_t s = 0; s < ndetail; s++)
			length_field |= off >= detail_rec_end[s] && off < detail_rec_end[s] + 4;
		img = detail_final;
		img.bytes[off] ^= 0x10;
		store(cut_path, img.bytes, img.len);
		err = atf_detail_open(&f, cut_path, ATF_OPEN_CHECK_CRC, &diag);
		/* A flipped record length breaks the walk before the CRC is even reached. */
		if (length_field)
			assert_true(err < 0);
		else
			assert_int_equal(err, -ATF_E_CRC);
		assert_true(atf_file_recover(cut_path, &diag) < 0);
		assert_file_is(cut_path, img.bytes, img.len);
	}
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* How far the fuzzed inputs got, so a test whose inputs all die at the magic check fails. */
static unsigned opened_index, opened_detail, recovered_files;

/* Open @cut_path every way, touch every record, recover; a recovered file must open STRICT+CRC. */
static void exercise(void)
{
	static const unsigned modes[] = { 0, ATF_OPEN_CHECK_CRC, ATF_OPEN_STRICT, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC };
	struct atf_diag diag;
	volatile uint64_t sink = 0;
	int rc;

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct atf_index_file ix;
		struct atf_detail_file dx;

		if (atf_index_open(&ix, cut_path, modes[m], &diag) == 0) {
			for (uint64_t s = 0; s < ix.count; s++) {
				struct atf_index_event e;

				atf_index_get(&ix, s, &e);
				sink += e.timestamp_ns + e.detail_seq;
			}
			opened_index += ix.count > 0;
			sink += atf_index_lower_bound(&ix, rng());
			atf_index_close(&ix);
		} else {
			assert_true(diag.err < 0);
		}
		if (atf_detail_open(&dx, cut_path, modes[m], &diag) == 0) {
			for (uint64_t s = 0; s < dx.count; s++) {
				struct atf_detail_event d;

				assert_int_equal(atf_detail_get(&dx, s, &d), 0);
				sink += d.raw[d.hdr.total_length - 1];
				if (d.has_payload && d.payload.stack_size)
					sink += d.stack[d.payload.stack_size - 1];
			}
			opened_detail += dx.count > 0;
			atf_detail_close(&dx);
		}
	}
	rc = atf_file_recover(cut_path, &diag);
	assert_true(rc == 0 || rc == 1 || diag.err == rc);
	if (rc == 1) {
		recovered_files++;
		struct atf_index_file ix;
		struct atf_detail_file dx;

		if (atf_index_open(&ix, cut_path, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, &diag) == 0) {
			atf_index_close(&ix);
		} else {
			assert_int_equal(atf_detail_open(&dx, cut_path, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, &diag), 0);
			atf_detail_close(&dx);
		}
		assert_int_equal(atf_file_recover(cut_path, &diag), 0);
	}
	(void)sink;
}

static void test_random_garbage(void **state)
{
	uint8_t buf[1024];
	struct atf_diag diag;

	opened_index = opened_detail = recovered_files = 0;
	for (int iter = 0; iter < 1500; iter++) {
		size_t len = rng() % sizeof(buf);

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rng();
		/* Most garbage dies at the magic; give two thirds of it a plausible identity. */
		if (len >= 6 && iter % 3) {
			memcpy(buf, iter % 3 == 1 ? "ATI2" : "ATD2", 4);
			buf[4] = 1;
			buf[5] = 1;
			if (len >= 28 && iter % 2)
				put_le32(buf + 24, 32);
			if (len >= 40 && iter % 4 < 2)
				put_le64(buf + (iter % 3 == 1 ? 32 : 20), 64);
			/* Detail: mostly plausible record lengths, so the walk gets past the first record. */
			for (size_t off = 64; iter % 3 == 2 && iter % 4 < 2 && off + 4 <= len;) {
				uint32_t rec = rng() % 16 ? 24 + (uint32_t)(rng() % 200) : (uint32_t)rng();

				put_le32(buf + off, rec);
				if (rec > len - off)
					break;
				off += rec;
			}
		}
		store(cut_path, buf, len);
		exercise();
	}
	/* Garbage magic is never "recovered" into a file. */
	assert_true(opened_index > 0 && opened_detail > 0 && recovered_files > 0);
	memset(buf, 0x41, 200);
	store(cut_path, buf, 200);
	assert_int_equal(atf_file_recover(cut_path, &diag), -ATF_E_MAGIC);
	assert_int_equal(diag.offset, 0);
	assert_int_equal(size_of(cut_path), 200);
}

static void test_random_mutations(void **state)
{
	const struct image *src[] = { &index_final, &detail_final, &index_live, &detail_live };
	struct image img;

	opened_index = opened_detail = recovered_files = 0;
	for (int iter = 0; iter < 2000; iter++) {
		int nflip = 1 + (int)(rng() % 6);

		img = *src[iter % 4];
		for (int k = 0; k < nflip; k++) {
			/* Favour the header and footer, where the structure lives. */
			size_t off = rng() % 3 ? rng() % ATF_HEADER_SIZE : rng() % img.len;

			if (rng() % 4 == 0 && img.len > ATF_FOOTER_SIZE)
				off = img.len - ATF_FOOTER_SIZE + rng() % ATF_FOOTER_SIZE;
			img.bytes[off] = (uint8_t)rng();
		}
		if (iter % 7 == 0)
			img.len = rng() % (img.len + 1);
		store(cut_path, img.bytes, img.len);
		exercise();
	}
	assert_true(opened_index > 0 && opened_detail > 0 && recovered_files > 0);
}

/* Header fields pushed to extremes must be rejected or clamped, never followed out of the map. */
static void test_extreme_header_fields(void **state)
{
	static const uint64_t values[] = { 0, 63, 64, 65, 96, 1ull << 32, UINT64_MAX - 63, UINT64_MAX };
	static const size_t index_fields[] = { 28, 32, 40 };   /* event_count (u32), events_offset, footer_offset */
	static const size_t detail_fields[] = { 20, 28, 36 };  /* events_offset, event_count, bytes_length */
	struct image img;

	for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
		for (size_t k = 0; k < 3; k++) {
			img = index_final;
			if (index_fields[k] == 28)
				put_le32(img.bytes + 28, (uint32_t)values[v]);
			else
				put_le64(img.bytes + index_fields[k], values[v]);
			store(cut_path, img.bytes, img.len);
			exercise();
			img = detail_final;
			put_le64(img.bytes + detail_fields[k], values[v]);
			store(cut_path, img.bytes, img.len);
			exercise();
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cut_index_everywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_detail_everywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flipped_byte_caught_by_crc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_mutations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extreme_header_fields, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
