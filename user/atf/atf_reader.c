// SPDX-License-Identifier: MIT
/*
 * ATF v2 readers: map index.atf / detail.atf read-only and validate them.
 *
 * Files are untrusted input: every offset and length read from them is checked against the
 * mapping before use, so garbage or truncated files give an error (or a recovered prefix),
 * never a crash. Both readers accept a file whose recorder died (placeholder header, no
 * footer, torn last record) unless ATF_OPEN_STRICT is given; the reference reader rules are
 * in ../shared/specs/NOTES.md §1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atf.h"
#include "atf_file.h"
#include "atf_int.h"
#include "byteorder.h"

/* Map @path read-only; files shorter than a header are -ATF_E_TRUNCATED. */
static int map_file(const char *path, int *fd_out, const uint8_t **map_out, size_t *len_out,
		    struct atf_diag *diag)
{
	struct stat st;
	void *map;
	int fd, err;

	fd = atf_open_in_dir(path);        /* never through a link out of the session */
	if (fd < 0)
		return atf_diag_set(diag, path, fd, 0, "cannot open: %s", fd == -ELOOP ?
				    "it or its directory is a symbolic link, not followed" : strerror(-fd));
	if (fstat(fd, &st) < 0) {
		err = atf_diag_set(diag, path, -errno, 0, "cannot stat: %s", strerror(errno));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = atf_diag_set(diag, path, -EINVAL, 0, "not a regular file");
		goto cleanup;
	}
	if (st.st_size < ATF_HEADER_SIZE) {
		err = atf_diag_set(diag, path, -ATF_E_TRUNCATED, (uint64_t)st.st_size,
				   "file is %lld bytes, shorter than the %d-byte header",
				   (long long)st.st_size, ATF_HEADER_SIZE);
		goto cleanup;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = atf_diag_set(diag, path, -errno, 0, "cannot map: %s", strerror(errno));
		goto cleanup;
	}
	*fd_out = fd;
	*map_out = map;
	*len_out = (size_t)st.st_size;
	return 0;
cleanup:
	close(fd);
	return err;
}

static void unmap_file(int *fd, const uint8_t **map, size_t *len)
{
	if (*map)
		munmap((void *)*map, *len);
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	*map = NULL;
	*len = 0;
}

/* Identity checks common to both files: endian and version at bytes 4 and 5. */
static int check_identity(const uint8_t *map, const char *magic, const char *path, struct atf_diag *diag)
{
	if (memcmp(map, magic, 4) != 0)
		return atf_diag_set(diag, path, -ATF_E_MAGIC, 0, "magic is not %s", magic);
	if (map[4] != ATF_ENDIAN_LITTLE)
		return atf_diag_set(diag, path, -ATF_E_VERSION, 4, "endian is %u, expected %u", map[4], ATF_ENDIAN_LITTLE);
	if (map[5] != ATF_VERSION)
		return atf_diag_set(diag, path, -ATF_E_VERSION, 5, "version is %u, expected %u", map[5], ATF_VERSION);
	return 0;
}

/* map_file and check_identity for both readers; on failure nothing stays mapped. */
static int map_checked(const char *path, const char *magic, int *fd, const uint8_t **map, size_t *len,
		       struct atf_diag *diag)
{
	int err = map_file(path, fd, map, len, diag);

	if (!err && (err = check_identity(*map, magic, path, diag)))
		unmap_file(fd, map, len);
	return err;
}

/* The CRC-32 of the @len event bytes at @off must be the footer's @want (ATF_OPEN_CHECK_CRC). */
static int check_events_crc(const uint8_t *map, uint64_t off, uint64_t len, uint32_t want, const char *path,
			    struct atf_diag *diag)
{
	uint32_t crc = atf_crc32(0, map + off, len);

	if (crc != want)
		return atf_diag_set(diag, path, -ATF_E_CRC, off, "events CRC 0x%08x, footer says 0x%08x", crc, want);
	return 0;
}

/* ---- index ----------------------------------------------------------------------------- */

/*
 * Footer lookup, at header.footer_offset only (as the reference reader). Unlike the reference
 * we also look when footer_offset == events_offset, which is where a finalized empty file has
 * its footer; the size and count checks keep a placeholder with events from matching.
 * Returns 1 with a footer, 0 without one, or a negative error for a footer that disagrees.
 */
static int index_find_footer(struct atf_index_file *f, const char *path, struct atf_diag *diag)
{
	const struct atf_index_header *h = &f->hdr;
	uint64_t n = h->event_count, fo = h->footer_offset;

	if (fo < f->events_offset || fo > f->map_len || f->map_len - fo < ATF_FOOTER_SIZE)
		return 0;
	if (memcmp(f->map + fo, ATF_INDEX_FOOTER_MAGIC, 4) != 0)
		return 0;
	atf_index_footer_decode(&f->footer, f->map + fo);
	if (f->footer.event_count != n)
		return atf_diag_set(diag, path, -ATF_E_COUNT, fo + 8,
				    "footer event_count %llu, header says %llu",
				    (unsigned long long)f->footer.event_count, (unsigned long long)n);
	if (fo != f->events_offset + n * ATF_INDEX_EVENT_SIZE)
		return atf_diag_set(diag, path, -ATF_E_FOOTER, 40,
				    "footer_offset %llu does not follow %llu events",
				    (unsigned long long)fo, (unsigned long long)n);
	if (f->footer.bytes_written != n * ATF_INDEX_EVENT_SIZE)
		return atf_diag_set(diag, path, -ATF_E_FOOTER, fo + 32,
				    "footer bytes_written %llu, expected %llu",
				    (unsigned long long)f->footer.bytes_written,
				    (unsigned long long)(n * ATF_INDEX_EVENT_SIZE));
	if (f->map_len != fo + ATF_FOOTER_SIZE)
		return atf_diag_set(diag, path, -ATF_E_FOOTER, fo + ATF_FOOTER_SIZE,
				    "%llu bytes after the footer", (unsigned long long)(f->map_len - fo - ATF_FOOTER_SIZE));
	if (f->footer.time_start_ns != h->time_start_ns || f->footer.time_end_ns != h->time_end_ns)
		return atf_diag_set(diag, path, -ATF_E_FOOTER, fo + 16, "footer time range disagrees with the header");
	return 1;
}

/**
 * atf_index_open - map an index file and validate it
 * @f: filled on success; on failure left safe to pass to atf_index_close()
 * @flags: ATF_OPEN_CHECK_CRC, ATF_OPEN_STRICT
 * @diag: where a failure was found, or NULL
 *
 * Without a valid footer the events are counted from the file size (recovered); when the
 * header was already finalized (footer_offset past the events, consistent with event_count)
 * the count stops at footer_offset, so a partly written footer is never read as events.
 */
int atf_index_open(struct atf_index_file *f, const char *path, unsigned flags, struct atf_diag *diag)
{
	const struct atf_index_header *h = &f->hdr;
	uint64_t end;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	err = map_checked(path, ATF_INDEX_MAGIC, &f->fd, &f->map, &f->map_len, diag);
	if (err)
		return err;
	atf_index_header_decode(&f->hdr, f->map);
	if (h->event_size != ATF_INDEX_EVENT_SIZE) {
		err = atf_diag_set(diag, path, -ATF_E_VERSION, 24, "event_size is %u, expected %d",
				   h->event_size, ATF_INDEX_EVENT_SIZE);
		goto cleanup;
	}
	if (h->events_offset < ATF_HEADER_SIZE || h->events_offset > f->map_len) {
		err = atf_diag_set(diag, path, -ATF_E_TRUNCATED, 32, "events_offset %llu outside the %zu-byte file",
				   (unsigned long long)h->events_offset, f->map_len);
		goto cleanup;
	}
	f->events_offset = h->events_offset;

	err = index_find_footer(f, path, diag);
	if (err < 0)
		goto cleanup;
	if (err == 1) {
		f->has_footer = true;
		f->count = h->event_count;
		err = 0;
	} else {
		if (flags & ATF_OPEN_STRICT) {
			err = atf_diag_set(diag, path, -ATF_E_FOOTER, h->footer_offset,
					   "no valid footer at offset %llu (recorder did not finish)",
					   (unsigned long long)h->footer_offset);
			goto cleanup;
		}
		end = f->map_len;
		if (h->footer_offset > f->events_offset && h->footer_offset <= end &&
		    h->footer_offset == f->events_offset + (uint64_t)h->event_count * ATF_INDEX_EVENT_SIZE)
			end = h->footer_offset;
		f->count = (end - f->events_offset) / ATF_INDEX_EVENT_SIZE;
		f->torn_bytes = f->map_len - f->events_offset - f->count * ATF_INDEX_EVENT_SIZE;
		f->recovered = true;
	}

	if ((flags & ATF_OPEN_CHECK_CRC) && f->has_footer &&
	    (err = check_events_crc(f->map, f->events_offset, f->count * ATF_INDEX_EVENT_SIZE,
				    f->footer.checksum, path, diag)))
		goto cleanup;
	return 0;
cleanup:
	atf_index_close(f);
	return err;
}

/** atf_index_close - unmap; safe after a failed open and when called twice. */
void atf_index_close(struct atf_index_file *f)
{
	unmap_file(&f->fd, &f->map, &f->map_len);
	f->count = 0;
}

uint64_t atf_index_lower_bound(const struct atf_index_file *f, uint64_t ts)
{
	uint64_t lo = 0, hi = f->count;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (get_le64(f->map + f->events_offset + mid * ATF_INDEX_EVENT_SIZE) < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void atf_index_release(const struct atf_index_file *f, uint64_t from, uint64_t to)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t start, end;

	if (!f->map || page <= 0 || to <= from)
		return;
	/* whole pages strictly inside the consumed range, so no event still ahead is touched */
	start = (f->events_offset + from * ATF_INDEX_EVENT_SIZE + (uint64_t)page - 1) & ~((uint64_t)page - 1);
	end = (f->events_offset + to * ATF_INDEX_EVENT_SIZE) & ~((uint64_t)page - 1);
	if (end > start)
		madvise((void *)(f->map + start), (size_t)(end - start), MADV_DONTNEED);
}

/* ---- detail ---------------------------------------------------------------------------- */

/*
 * Walk records in [events_offset, end) by total_length. Stops at the first record that is
 * incomplete or shorter than its own header. Sets count, bytes_length and uniform_len; when
 * @offsets is non-NULL also fills it (the second pass, for non-uniform files).
 */
static void detail_walk(struct atf_detail_file *f, uint64_t end, uint64_t *offsets)
{
	uint64_t off = f->events_offset, n = 0;
	uint32_t uniform = 0;
	bool mixed = false;

	while (end - off >= ATF_DETAIL_EVENT_HDR_SIZE) {
		uint32_t len = get_le32(f->map + off);

		if (len < ATF_DETAIL_EVENT_HDR_SIZE || len > end - off)
			break;
		if (offsets)
			offsets[n] = off;
		if (n == 0)
			uniform = len;
		else if (len != uniform)
			mixed = true;
		n++;
		off += len;
	}
	f->count = n;
	f->bytes_length = off - f->events_offset;
	f->uniform_len = mixed ? 0 : uniform;
}

/*
 * A detail footer sits at EOF - 64. Its magic alone is weak evidence (payload bytes could
 * spell it), so it counts as a footer only when its bytes_length also reaches exactly to it.
 */
static bool detail_has_footer(struct atf_detail_file *f)
{
	uint64_t fo;

	if (f->map_len - f->events_offset < ATF_FOOTER_SIZE)
		return false;
	fo = f->map_len - ATF_FOOTER_SIZE;
	if (memcmp(f->map + fo, ATF_DETAIL_FOOTER_MAGIC, 4) != 0)
		return false;
	atf_detail_footer_decode(&f->footer, f->map + fo);
	return f->footer.bytes_length == fo - f->events_offset;
}

static int detail_check_footer(struct atf_detail_file *f, const char *path, struct atf_diag *diag)
{
	uint64_t fo = f->map_len - ATF_FOOTER_SIZE;

	if (f->events_offset + f->bytes_length != fo)
		return atf_diag_set(diag, path, -ATF_E_RECORD, f->events_offset + f->bytes_length,
				    "malformed record before the footer");
	if (f->footer.event_count != f->count)
		return atf_diag_set(diag, path, -ATF_E_COUNT, fo + 8, "footer event_count %llu, %llu records found",
				    (unsigned long long)f->footer.event_count, (unsigned long long)f->count);
	if (f->hdr.event_count != f->count)
		return atf_diag_set(diag, path, -ATF_E_COUNT, 28, "header event_count %llu, %llu records found",
				    (unsigned long long)f->hdr.event_count, (unsigned long long)f->count);
	if (f->hdr.bytes_length != f->bytes_length)
		return atf_diag_set(diag, path, -ATF_E_FOOTER, 36, "header bytes_length %llu, records span %llu",
				    (unsigned long long)f->hdr.bytes_length, (unsigned long long)f->bytes_length);
	return 0;
}

/**
 * atf_detail_open - map a detail file, validate it and index its records
 * @f: filled on success; on failure left safe to pass to atf_detail_close()
 * @flags: ATF_OPEN_CHECK_CRC, ATF_OPEN_STRICT
 * @diag: where a failure was found, or NULL
 *
 * Records are walked once at open. When all have the same length, seq -> offset is a multiply
 * and no table is allocated; otherwise f->offsets holds one offset per record.
 */
int atf_detail_open(struct atf_detail_file *f, const char *path, unsigned flags, struct atf_diag *diag)
{
	uint64_t end;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	err = map_checked(path, ATF_DETAIL_MAGIC, &f->fd, &f->map, &f->map_len, diag);
	if (err)
		return err;
	atf_detail_header_decode(&f->hdr, f->map);
	if (f->hdr.events_offset < ATF_HEADER_SIZE || f->hdr.events_offset > f->map_len) {
		err = atf_diag_set(diag, path, -ATF_E_TRUNCATED, 20, "events_offset %llu outside the %zu-byte file",
				   (unsigned long long)f->hdr.events_offset, f->map_len);
		goto cleanup;
	}
	f->events_offset = f->hdr.events_offset;

	f->has_footer = detail_has_footer(f);
	if (!f->has_footer)
		memset(&f->footer, 0, sizeof(f->footer));
	end = f->has_footer ? f->map_len - ATF_FOOTER_SIZE : f->map_len;
	detail_walk(f, end, NULL);
	if (f->has_footer) {
		err = detail_check_footer(f, path, diag);
		if (err)
			goto cleanup;
	} else {
		f->torn_bytes = f->map_len - f->events_offset - f->bytes_length;
		f->recovered = true;
		if (flags & ATF_OPEN_STRICT) {
			err = atf_diag_set(diag, path, -ATF_E_FOOTER, f->events_offset + f->bytes_length,
					   "no valid footer; records end at offset %llu",
					   (unsigned long long)(f->events_offset + f->bytes_length));
			goto cleanup;
		}
	}

	if ((flags & ATF_OPEN_CHECK_CRC) && f->has_footer &&
	    (err = check_events_crc(f->map, f->events_offset, f->bytes_length, f->footer.checksum, path, diag)))
		goto cleanup;

	if (f->count > 0 && f->uniform_len == 0) {
		f->offsets = malloc(f->count * sizeof(*f->offsets));
		if (!f->offsets) {
			err = atf_diag_set(diag, path, -ENOMEM, 0, "no memory for %llu record offsets",
					   (unsigned long long)f->count);
			goto cleanup;
		}
		detail_walk(f, end, f->offsets);
	}
	return 0;
cleanup:
	atf_detail_close(f);
	return err;
}

/** atf_detail_close - unmap and free; safe after a failed open and when called twice. */
void atf_detail_close(struct atf_detail_file *f)
{
	unmap_file(&f->fd, &f->map, &f->map_len);
	free(f->offsets);
	f->offsets = NULL;
	f->count = 0;
}

/**
 * atf_detail_get - decode detail record @seq in O(1)
 *
 * The payload is decoded when the record is long enough to hold one; its stack bytes are
 * exposed only when stack_size fits inside the record (else has_payload is false).
 */
int atf_detail_get(const struct atf_detail_file *f, uint64_t seq, struct atf_detail_event *out)
{
	const uint8_t *rec;
	uint64_t off;
	uint32_t body;

	memset(out, 0, sizeof(*out));
	if (seq >= f->count)
		return -ATF_E_RANGE;
	off = f->uniform_len ? f->events_offset + seq * f->uniform_len : f->offsets[seq];
	rec = f->map + off;
	atf_detail_event_header_decode(&out->hdr, rec);
	out->raw = rec;
	if (out->hdr.total_length < ATF_DETAIL_EVENT_HDR_SIZE + ATF_DETAIL_PAYLOAD_SIZE)
		return 0;
	atf_detail_payload_decode(&out->payload, rec + ATF_DETAIL_EVENT_HDR_SIZE);
	body = out->hdr.total_length - ATF_DETAIL_EVENT_HDR_SIZE - ATF_DETAIL_PAYLOAD_SIZE;
	if (out->payload.stack_size > body) {
		memset(&out->payload, 0, sizeof(out->payload));
		return 0;
	}
	out->has_payload = true;
	if (out->payload.stack_size)
		out->stack = rec + ATF_DETAIL_EVENT_HDR_SIZE + ATF_DETAIL_PAYLOAD_SIZE;
	return 0;
}
