// SPDX-License-Identifier: MIT
/*
 * atf_file_recover: turn an index or detail file whose recorder died into a complete file.
 *
 * The non-strict readers already know which records are whole; recovery writes those records
 * to a random temporary name beside the file (atf_tmpfile_open: O_EXCL|O_NOFOLLOW) with a header
 * and footer that describe them (counts, times, CRC), fsyncs it and renames it over the original,
 * then fsyncs the directory so the rename itself survives a crash. At every moment either the old or the new file is in place. Nothing is
 * invented: a file whose header cannot be read is an error, not a recovery.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "atf_file.h"
#include "atf_int.h"
#include "byteorder.h"

/* Write header + events + footer to a temporary beside @path, then atomically replace @path. */
static int replace_file(const char *path, const uint8_t hdr[ATF_HEADER_SIZE], const uint8_t *events,
			uint64_t events_len, const uint8_t ftr[ATF_FOOTER_SIZE], struct atf_diag *diag)
{
	struct atf_tmpfile t;
	int err = atf_tmpfile_open(&t, path, ATF_TMP_IN_SESSION);

	if (err)
		return atf_diag_set(diag, path, err, 0, "cannot create a temporary file beside it: %s",
				    strerror(-err));
	err = atf_write_all(t.fd, hdr, ATF_HEADER_SIZE, NULL);
	if (!err)
		err = atf_write_all(t.fd, events, events_len, NULL);
	if (!err)
		err = atf_write_all(t.fd, ftr, ATF_FOOTER_SIZE, NULL);
	if (err) {
		atf_tmpfile_abort(&t);
		return atf_diag_set(diag, path, err, 0, "cannot write the recovered file: %s", strerror(-err));
	}
	err = atf_tmpfile_commit(&t);
	if (err)
		return atf_diag_set(diag, path, err, 0, "cannot replace it with the recovered file: %s",
				    strerror(-err));
	return 1;
}

/* The sibling detail.atf, if present, belongs to this index (flag bit 0). */
static bool sibling_detail_exists(const char *index_path)
{
	char buf[PATH_MAX], path[PATH_MAX + 16];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%s", index_path) >= (int)sizeof(buf))
		return false;
	snprintf(path, sizeof(path), "%s/detail.atf", dirname(buf));
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int recover_index(const char *path, struct atf_diag *diag)
{
	struct atf_index_file f;
	struct atf_index_header h;
	struct atf_index_footer ft;
	uint8_t hdr[ATF_HEADER_SIZE], ftr[ATF_FOOTER_SIZE];
	const uint8_t *events;
	uint64_t len;
	int err;

	/* a complete file whose events do not match its footer's CRC is corrupt: reported, not resealed */
	err = atf_index_open(&f, path, ATF_OPEN_CHECK_CRC, diag);
	if (err)
		return err;
	if (!f.recovered) {
		err = 0;
		goto cleanup;
	}
	if (f.count > UINT32_MAX - 1) {
		err = atf_diag_set(diag, path, -ATF_E_COUNT, 28, "%llu events do not fit the 32-bit header count",
				   (unsigned long long)f.count);
		goto cleanup;
	}
	events = f.map + f.events_offset;
	len = f.count * ATF_INDEX_EVENT_SIZE;

	h = f.hdr;
	h.event_count = (uint32_t)f.count;
	h.events_offset = ATF_HEADER_SIZE;
	h.footer_offset = ATF_HEADER_SIZE + len;
	h.time_start_ns = f.count ? get_le64(events) : 0;
	h.time_end_ns = f.count ? get_le64(events + len - ATF_INDEX_EVENT_SIZE) : 0;
	if (sibling_detail_exists(path))
		h.flags |= ATF_INDEX_FLAG_HAS_DETAIL;
	atf_index_header_encode(hdr, &h);

	memset(&ft, 0, sizeof(ft));
	memcpy(ft.magic, ATF_INDEX_FOOTER_MAGIC, 4);
	ft.checksum = atf_crc32(0, events, len);
	ft.event_count = f.count;
	ft.time_start_ns = h.time_start_ns;
	ft.time_end_ns = h.time_end_ns;
	ft.bytes_written = len;
	atf_index_footer_encode(ftr, &ft);

	err = replace_file(path, hdr, events, len, ftr, diag);
cleanup:
	atf_index_close(&f);
	return err;
}

static int recover_detail(const char *path, struct atf_diag *diag)
{
	struct atf_detail_file f;
	struct atf_detail_event first, last;
	struct atf_detail_header h;
	struct atf_detail_footer ft;
	uint8_t hdr[ATF_HEADER_SIZE], ftr[ATF_FOOTER_SIZE];
	int err;

	err = atf_detail_open(&f, path, ATF_OPEN_CHECK_CRC, diag);
	if (err)
		return err;
	if (!f.recovered) {
		err = 0;
		goto cleanup;
	}
	memset(&first, 0, sizeof(first));
	memset(&last, 0, sizeof(last));
	if (f.count) {
		atf_detail_get(&f, 0, &first);
		atf_detail_get(&f, f.count - 1, &last);
	}

	h = f.hdr;
	h.events_offset = ATF_HEADER_SIZE;
	h.event_count = f.count;
	h.bytes_length = f.bytes_length;
	h.index_seq_start = first.hdr.index_seq;
	h.index_seq_end = last.hdr.index_seq;
	atf_detail_header_encode(hdr, &h);

	memset(&ft, 0, sizeof(ft));
	memcpy(ft.magic, ATF_DETAIL_FOOTER_MAGIC, 4);
	ft.checksum = atf_crc32(0, f.map + f.events_offset, f.bytes_length);
	ft.event_count = f.count;
	ft.bytes_length = f.bytes_length;
	ft.time_start_ns = first.hdr.timestamp;
	ft.time_end_ns = last.hdr.timestamp;
	atf_detail_footer_encode(ftr, &ft);

	err = replace_file(path, hdr, f.map + f.events_offset, f.bytes_length, ftr, diag);
cleanup:
	atf_detail_close(&f);
	return err;
}

/**
 * atf_file_recover - rewrite the header and footer of an index or detail file from its whole records
 * @path: index.atf or detail.atf (told apart by magic)
 * @diag: where a failure was found, or NULL
 *
 * Returns 1 if the file was rewritten, 0 if it was already complete, or a negative error:
 * -ATF_E_MAGIC for a file that is neither, -ATF_E_TRUNCATED for one shorter than a header,
 * and the readers' errors for a complete-looking file whose footer contradicts its header or
 * whose events do not match the footer's CRC (-ATF_E_CRC): those are reported, not papered over.
 */
int atf_file_recover(const char *path, struct atf_diag *diag)
{
	uint8_t magic[4];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return atf_diag_set(diag, path, -errno, 0, "cannot open: %s", strerror(errno));
	do
		n = pread(fd, magic, sizeof(magic), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return atf_diag_set(diag, path, err, 0, "cannot read: %s", strerror(-err));
	}
	close(fd);
	if (n == (ssize_t)sizeof(magic) && memcmp(magic, ATF_INDEX_MAGIC, 4) == 0)
		return recover_index(path, diag);
	if (n == (ssize_t)sizeof(magic) && memcmp(magic, ATF_DETAIL_MAGIC, 4) == 0)
		return recover_detail(path, diag);
	return atf_diag_set(diag, path, -ATF_E_MAGIC, 0, "neither an ATF index (%s) nor detail (%s) file",
			    ATF_INDEX_MAGIC, ATF_DETAIL_MAGIC);
}
