// SPDX-License-Identifier: MIT
/*
 * atf_file_recover: turn an index or detail file whose recorder died into a complete file.
 *
 * The non-strict readers already know which records are whole; recovery writes those records
 * to a random temporary name beside the file (atf_tmpfile_open: O_EXCL|O_NOFOLLOW) with a header
 * and footer that describe them (counts, times, CRC), fsyncs it and renames it over the original,
 * then fsyncs the directory so the rename itself survives a crash. At every moment either the old
 * or the new file is in place. Nothing is invented: a file whose header cannot be read is an
 * error, not a recovery. Files are read and replaced only in their own thread directory, never
 * through a link (ATF_TMP_IN_SESSION), and the new file belongs to the directory's owner.
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
	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Rewrite index @path with @count events @events (f's header otherwise), sealed with a new footer. */
static int write_index(const char *path, const struct atf_index_file *f, const uint8_t *events,
		       uint64_t count, struct atf_diag *diag)
{
	struct atf_index_header h;
	struct atf_index_footer ft;
	uint8_t hdr[ATF_HEADER_SIZE], ftr[ATF_FOOTER_SIZE];
	uint64_t len = count * ATF_INDEX_EVENT_SIZE;

	if (count > UINT32_MAX - 1)
		return atf_diag_set(diag, path, -ATF_E_COUNT, 28, "%llu events do not fit the 32-bit header count",
				    (unsigned long long)count);
	h = f->hdr;
	h.event_count = (uint32_t)count;
	h.events_offset = ATF_HEADER_SIZE;
	h.footer_offset = ATF_HEADER_SIZE + len;
	h.time_start_ns = count ? get_le64(events) : 0;
	h.time_end_ns = count ? get_le64(events + len - ATF_INDEX_EVENT_SIZE) : 0;
	if (sibling_detail_exists(path))
		h.flags |= ATF_INDEX_FLAG_HAS_DETAIL;
	atf_index_header_encode(hdr, &h);

	memset(&ft, 0, sizeof(ft));
	memcpy(ft.magic, ATF_INDEX_FOOTER_MAGIC, 4);
	ft.checksum = atf_crc32(0, events, len);
	ft.event_count = count;
	ft.time_start_ns = h.time_start_ns;
	ft.time_end_ns = h.time_end_ns;
	ft.bytes_written = len;
	atf_index_footer_encode(ftr, &ft);
	return replace_file(path, hdr, events, len, ftr, diag);
}

static int recover_index(const char *path, struct atf_diag *diag)
{
	struct atf_index_file f;
	int err;

	/* a complete file whose events do not match its footer's CRC is corrupt: reported, not resealed */
	err = atf_index_open(&f, path, ATF_OPEN_CHECK_CRC, diag);
	if (err)
		return err;
	err = f.recovered ? write_index(path, &f, f.map + f.events_offset, f.count, diag) : 0;
	atf_index_close(&f);
	return err;
}

/* Rewrite detail @path with its first @count records, sealed with a new header and footer. */
static int write_detail(const char *path, const struct atf_detail_file *f, uint64_t count,
			struct atf_diag *diag)
{
	struct atf_detail_event first, last, next;
	struct atf_detail_header h;
	struct atf_detail_footer ft;
	uint8_t hdr[ATF_HEADER_SIZE], ftr[ATF_FOOTER_SIZE];
	uint64_t len = f->bytes_length;

	memset(&first, 0, sizeof(first));
	memset(&last, 0, sizeof(last));
	if (count) {
		atf_detail_get(f, 0, &first);
		atf_detail_get(f, count - 1, &last);
	}
	if (count < f->count && !atf_detail_get(f, count, &next))
		len = (uint64_t)(next.raw - f->map) - f->events_offset;

	h = f->hdr;
	h.events_offset = ATF_HEADER_SIZE;
	h.event_count = count;
	h.bytes_length = len;
	h.index_seq_start = first.hdr.index_seq;
	h.index_seq_end = last.hdr.index_seq;
	atf_detail_header_encode(hdr, &h);

	memset(&ft, 0, sizeof(ft));
	memcpy(ft.magic, ATF_DETAIL_FOOTER_MAGIC, 4);
	ft.checksum = atf_crc32(0, f->map + f->events_offset, len);
	ft.event_count = count;
	ft.bytes_length = len;
	ft.time_start_ns = first.hdr.timestamp;
	ft.time_end_ns = last.hdr.timestamp;
	atf_detail_footer_encode(ftr, &ft);
	return replace_file(path, hdr, f->map + f->events_offset, len, ftr, diag);
}

static int recover_detail(const char *path, struct atf_diag *diag)
{
	struct atf_detail_file f;
	int err;

	err = atf_detail_open(&f, path, ATF_OPEN_CHECK_CRC, diag);
	if (err)
		return err;
	err = f.recovered ? write_detail(path, &f, f.count, diag) : 0;
	atf_detail_close(&f);
	return err;
}

/*
 * A thread's index and detail records are buffered and written separately, so a recorder cut
 * short can leave either file ahead of the other: detail records whose index event never reached
 * the index (their index_seq is past its end), or index events whose detail record was cut. Those detail records are dropped (they describe no recorded event), those index events
 * lose their link (ATF_NO_DETAIL) but stay: no whole event is lost.
 */
int atf_thread_recover_links(const char *index_path, const char *detail_path, struct atf_diag *diag)
{
	struct atf_index_file f;
	struct atf_detail_file d;
	uint8_t *events = NULL;
	uint64_t keep = 0;
	int err, ret = 0;
	bool patch = false;

	err = atf_index_open(&f, index_path, ATF_OPEN_STRICT, diag);
	if (err)
		return err;
	err = atf_detail_open(&d, detail_path, ATF_OPEN_STRICT, diag);
	if (err) {
		atf_index_close(&f);
		return err;
	}
	for (struct atf_detail_event e; keep < d.count && !atf_detail_get(&d, keep, &e) &&
					 e.hdr.index_seq < f.count; keep++)
		;
	if (keep < d.count) {
		err = write_detail(detail_path, &d, keep, diag);
		if (err < 0)
			goto cleanup;
		ret = 1;
	}
	for (uint64_t seq = 0; seq < f.count && !patch; seq++) {
		uint32_t link = get_le32(f.map + f.events_offset + seq * ATF_INDEX_EVENT_SIZE + 28);

		patch = link != ATF_NO_DETAIL && link >= keep;
	}
	if (patch) {
		uint64_t len = f.count * ATF_INDEX_EVENT_SIZE;

		events = malloc(len ? len : 1);
		if (!events) {
			err = atf_diag_set(diag, index_path, -ENOMEM, 0, "out of memory");
			goto cleanup;
		}
		memcpy(events, f.map + f.events_offset, len);
		for (uint64_t seq = 0; seq < f.count; seq++) {
			uint8_t *link = events + seq * ATF_INDEX_EVENT_SIZE + 28;

			if (get_le32(link) != ATF_NO_DETAIL && get_le32(link) >= keep)
				put_le32(link, ATF_NO_DETAIL);
		}
		err = write_index(index_path, &f, events, f.count, diag);
		if (err < 0)
			goto cleanup;
		ret = 1;
	}
	err = ret;
cleanup:
	free(events);
	atf_detail_close(&d);
	atf_index_close(&f);
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

	fd = atf_open_in_dir(path);         /* never through a link out of the session */
	if (fd < 0)
		return atf_diag_set(diag, path, fd, 0, "cannot open: %s", fd == -ELOOP ?
				    "it or its directory is a symbolic link, not followed" : strerror(-fd));
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
