// SPDX-License-Identifier: MIT
/*
 * Per-thread ATF v2 writer: thread_<id>/index.atf and, lazily, thread_<id>/detail.atf.
 *
 * Records are encoded into large user-space buffers and written with plain write() calls,
 * so the recorder's drain loop costs one syscall per buffer rather than one per event. The
 * files always begin with a valid placeholder header, so a recorder that dies at any point
 * leaves files the non-strict readers (and atf_file_recover) can read up to the last whole
 * record. The writer records what it is given, in the order given: the recorder guarantees
 * per-thread time order and atf_session_verify() checks it.
 */
#include <errno.h>
#include <fcntl.h>
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

#define WRITER_BUF_SIZE (256u * 1024u)
/* A detail record is registers plus at most a few hundred stack bytes; anything near this is a bug. */
#define WRITER_MAX_DETAIL_PAYLOAD (16u * 1024u * 1024u)

/* One output file with its pending bytes. */
struct atf_out {
	int fd;
	uint8_t *buf;
	size_t len, cap;
	uint64_t written;           /* bytes of the events section already in the file */
	uint32_t crc;               /* CRC of those bytes */
};

struct atf_thread_writer {
	char dir[PATH_MAX];
	uint32_t dir_id, tid;
	struct atf_out index, detail;   /* detail.fd < 0 until the first detail record */
	uint64_t index_count, detail_count;
	uint64_t time_start, time_end;                  /* index events */
	uint64_t detail_time_start, detail_time_end;
	uint64_t detail_seq_start, detail_seq_end;      /* index_seq of first/last detail record */
	bool finalized;
	bool nosync;                    /* atf_thread_writer__set_durable(w, false) */
	int final_err;
};

static int pwrite_all(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/*
 * Write out the pending bytes of @o. On a failed write the bytes that did reach the file are
 * accounted (CRC, offset) and the rest stay buffered, so a later flush resumes exactly there
 * and nothing recorded is dropped.
 */
static int out_flush(struct atf_out *o)
{
	size_t done;
	int err;

	if (o->fd < 0 || o->len == 0)
		return 0;
	err = atf_write_all(o->fd, o->buf, o->len, &done);
	o->crc = atf_crc32(o->crc, o->buf, done);
	o->written += done;
	if (done < o->len)
		memmove(o->buf, o->buf + done, o->len - done);
	o->len -= done;
	return err;
}

/* Make room for @need bytes: flush when full, grow only for a record larger than the buffer. */
static int out_reserve(struct atf_out *o, size_t need)
{
	int err;

	if (o->cap - o->len >= need)
		return 0;
	err = out_flush(o);
	if (err)
		return err;
	if (o->cap < need) {
		uint8_t *nb = realloc(o->buf, need);

		if (!nb)
			return -ENOMEM;
		o->buf = nb;
		o->cap = need;
	}
	return 0;
}

static int out_init(struct atf_out *o)
{
	o->fd = -1;
	o->len = 0;
	o->cap = WRITER_BUF_SIZE;
	o->written = 0;
	o->crc = 0;
	o->buf = malloc(o->cap);
	return o->buf ? 0 : -ENOMEM;
}

static void index_header_fill(const struct atf_thread_writer *w, struct atf_index_header *h, bool final)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, ATF_INDEX_MAGIC, 4);
	h->endian = ATF_ENDIAN_LITTLE;
	h->version = ATF_VERSION;
	h->arch = ATF_HOST_ARCH;
	h->os = ATF_OS_LINUX;
	h->clock_type = ATF_CLOCK_BOOTTIME;
	h->thread_id = w->tid;
	h->event_size = ATF_INDEX_EVENT_SIZE;
	h->events_offset = ATF_HEADER_SIZE;
	h->footer_offset = ATF_HEADER_SIZE;
	h->flags = w->detail.fd >= 0 ? ATF_INDEX_FLAG_HAS_DETAIL : 0;
	if (final) {
		h->event_count = (uint32_t)w->index_count;
		h->footer_offset = ATF_HEADER_SIZE + w->index_count * ATF_INDEX_EVENT_SIZE;
		h->time_start_ns = w->time_start;
		h->time_end_ns = w->time_end;
	}
}

static void detail_header_fill(const struct atf_thread_writer *w, struct atf_detail_header *h, bool final)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, ATF_DETAIL_MAGIC, 4);
	h->endian = ATF_ENDIAN_LITTLE;
	h->version = ATF_VERSION;
	h->arch = ATF_HOST_ARCH;
	h->os = ATF_OS_LINUX;
	h->thread_id = w->tid;
	h->events_offset = ATF_HEADER_SIZE;
	if (final) {
		h->event_count = w->detail_count;
		h->bytes_length = w->detail.written;
		h->index_seq_start = w->detail_seq_start;
		h->index_seq_end = w->detail_seq_end;
	}
}

static int open_new_file(const struct atf_thread_writer *w, const char *name, const uint8_t hdr[ATF_HEADER_SIZE])
{
	char path[PATH_MAX + 16];
	size_t done;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", w->dir, name);
	/* new (O_EXCL): never clobbers a file that may hold another recording, nor follows a link */
	fd = atf_file_create(path);
	if (fd < 0)
		return fd;
	err = atf_write_all(fd, hdr, ATF_HEADER_SIZE, &done);
	if (err) {
		close(fd);
		unlink(path);
		return err;
	}
	return fd;
}

/**
 * atf_thread_writer__new - create <session_dir>/thread_<dir_id>/index.atf for OS thread @tid
 * @out: receives the writer
 * @session_dir: process directory (created with mkdir -p semantics, as is thread_<dir_id>)
 * @dir_id: manifest thread id, names the directory
 * @tid: OS thread id, stored in the headers
 *
 * Returns 0 or a negative errno (-EEXIST when index.atf already exists).
 */
int atf_thread_writer__new(struct atf_thread_writer **out, const char *session_dir,
			   uint32_t dir_id, uint32_t tid)
{
	struct atf_thread_writer *w;
	struct atf_index_header h;
	uint8_t hdr[ATF_HEADER_SIZE];
	int err, fd;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->index.fd = w->detail.fd = -1;
	w->dir_id = dir_id;
	w->tid = tid;
	if ((size_t)snprintf(w->dir, sizeof(w->dir), "%s/thread_%u", session_dir, dir_id) >= sizeof(w->dir)) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	err = out_init(&w->index);
	if (err)
		goto cleanup;
	fd = atf_dir_create(w->dir, 0, NULL);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	close(fd);
	index_header_fill(w, &h, false);
	atf_index_header_encode(hdr, &h);
	fd = open_new_file(w, "index.atf", hdr);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	w->index.fd = fd;
	*out = w;
	return 0;
cleanup:
	free(w->index.buf);
	free(w);
	return err;
}

/*
 * First detail record: create detail.atf with its placeholder header, and set the index
 * header's has_detail flag right away (as the reference writer does), so even a file the
 * recorder never finalized says a detail file belongs to it.
 */
static int detail_start(struct atf_thread_writer *w)
{
	struct atf_detail_header dh;
	struct atf_index_header ih;
	uint8_t hdr[ATF_HEADER_SIZE];
	int err, fd;

	err = out_init(&w->detail);
	if (err)
		return err;
	detail_header_fill(w, &dh, false);
	atf_detail_header_encode(hdr, &dh);
	fd = open_new_file(w, "detail.atf", hdr);
	if (fd < 0) {
		free(w->detail.buf);
		w->detail.buf = NULL;
		return fd;
	}
	w->detail.fd = fd;
	index_header_fill(w, &ih, false);
	atf_index_header_encode(hdr, &ih);
	return pwrite_all(w->index.fd, hdr, ATF_HEADER_SIZE, 0);
}

/**
 * atf_thread_writer__append - buffer one index event, and its detail record when @detail != NULL
 *
 * Sets ev->detail_seq. Returns the event's index_seq, or a negative errno: -EINVAL after
 * finalize or for an oversized payload, -ERANGE when a 32-bit sequence would overflow, or a
 * write error from flushing a full buffer (then nothing of this event was recorded).
 */
int64_t atf_thread_writer__append(struct atf_thread_writer *w, struct atf_index_event *ev,
				  const struct atf_detail_in *detail)
{
	uint8_t rec[ATF_DETAIL_EVENT_HDR_SIZE];
	uint64_t seq = w->index_count;
	int err;

	if (w->finalized)
		return -EINVAL;
	/* index_seq and detail_seq are u32 on disk and UINT32_MAX means "no detail". */
	if (seq >= UINT32_MAX)
		return -ERANGE;
	/* Reserve index space first, so a failure leaves neither record half-recorded. */
	err = out_reserve(&w->index, ATF_INDEX_EVENT_SIZE);
	if (err)
		return err;

	if (detail) {
		struct atf_detail_event_header dh;
		size_t total;

		if (w->detail_count >= UINT32_MAX)
			return -ERANGE;
		if (detail->payload_len > WRITER_MAX_DETAIL_PAYLOAD || (detail->payload_len && !detail->payload))
			return -EINVAL;
		if (w->detail.fd < 0) {
			err = detail_start(w);
			if (err)
				return err;
		}
		total = ATF_DETAIL_EVENT_HDR_SIZE + (size_t)detail->payload_len;
		err = out_reserve(&w->detail, total);
		if (err)
			return err;
		dh.total_length = (uint32_t)total;
		dh.event_type = detail->event_type;
		dh.flags = detail->flags;
		dh.index_seq = (uint32_t)seq;
		dh.thread_id = ev->thread_id;
		dh.timestamp = ev->timestamp_ns;
		atf_detail_event_header_encode(rec, &dh);
		memcpy(w->detail.buf + w->detail.len, rec, sizeof(rec));
		if (detail->payload_len)
			memcpy(w->detail.buf + w->detail.len + sizeof(rec), detail->payload, detail->payload_len);
		w->detail.len += total;
		if (w->detail_count == 0) {
			w->detail_seq_start = seq;
			w->detail_time_start = ev->timestamp_ns;
		}
		w->detail_seq_end = seq;
		w->detail_time_end = ev->timestamp_ns;
		ev->detail_seq = (uint32_t)w->detail_count++;
	} else {
		ev->detail_seq = ATF_NO_DETAIL;
	}

	atf_index_event_encode(w->index.buf + w->index.len, ev);
	w->index.len += ATF_INDEX_EVENT_SIZE;
	if (seq == 0)
		w->time_start = ev->timestamp_ns;
	w->time_end = ev->timestamp_ns;
	w->index_count++;
	return (int64_t)seq;
}

/**
 * atf_thread_writer__flush - write buffered records to the files
 *
 * Detail goes first: a crash between the two writes then leaves, at worst, detail records
 * whose index events are missing, never index events pointing at unwritten detail.
 */
int atf_thread_writer__flush(struct atf_thread_writer *w)
{
	int err;

	if (w->finalized)
		return w->final_err;
	err = out_flush(&w->detail);
	if (err)
		return err;
	return out_flush(&w->index);
}

static int sync_fd(int fd, bool nosync)
{
	return !nosync && fsync(fd) < 0 ? -errno : 0;
}

void atf_thread_writer__set_durable(struct atf_thread_writer *w, bool durable)
{
	w->nosync = !durable;
}

/*
 * Close out one file. Order, for crash safety:
 *  1. the events are already flushed;
 *  2. pwrite the final header (counts, footer_offset, times): a crash now leaves a header whose
 *     footer_offset is the end of the events and no footer, which readers treat as recovered
 *     with exactly the events (a partial footer past footer_offset is ignored as torn bytes);
 *  3. fsync, so header and events are durable before anything claims the file complete;
 *  4. append the footer and fsync again: only now does the file read as complete.
 * The reference writer appends the footer first while the header still says footer_offset = 64;
 * a crash there makes readers count the footer as two bogus events, hence the different order.
 */
static int finalize_file(int fd, const uint8_t hdr[ATF_HEADER_SIZE], const uint8_t ftr[ATF_FOOTER_SIZE],
			 uint64_t footer_offset, bool nosync)
{
	int err;

	err = pwrite_all(fd, hdr, ATF_HEADER_SIZE, 0);
	if (!err)
		err = sync_fd(fd, nosync);
	if (!err)
		err = pwrite_all(fd, ftr, ATF_FOOTER_SIZE, footer_offset);
	if (!err)
		err = sync_fd(fd, nosync);
	return err;
}

static int finalize_detail(struct atf_thread_writer *w)
{
	struct atf_detail_header h;
	struct atf_detail_footer f;
	uint8_t hdr[ATF_HEADER_SIZE], ftr[ATF_FOOTER_SIZE];

	detail_header_fill(w, &h, true);
	atf_detail_header_encode(hdr, &h);
	memset(&f, 0, sizeof(f));
	memcpy(f.magic, ATF_DETAIL_FOOTER_MAGIC, 4);
	f.checksum = w->detail.crc;
	f.event_count = w->detail_count;
	f.bytes_length = w->detail.written;
	f.time_start_ns = w->detail_time_start;
	f.time_end_ns = w->detail_time_end;
	atf_detail_footer_encode(ftr, &f);
	return finalize_file(w->detail.fd, hdr, ftr, ATF_HEADER_SIZE + w->detail.written, w->nosync);
}

static int finalize_index(struct atf_thread_writer *w)
{
	struct atf_index_header h;
	struct atf_index_footer f;
	uint8_t hdr[ATF_HEADER_SIZE], ftr[ATF_FOOTER_SIZE];

	index_header_fill(w, &h, true);
	atf_index_header_encode(hdr, &h);
	memset(&f, 0, sizeof(f));
	memcpy(f.magic, ATF_INDEX_FOOTER_MAGIC, 4);
	f.checksum = w->index.crc;
	f.event_count = w->index_count;
	f.time_start_ns = w->time_start;
	f.time_end_ns = w->time_end;
	f.bytes_written = w->index.written;
	atf_index_footer_encode(ftr, &f);
	return finalize_file(w->index.fd, hdr, ftr, h.footer_offset, w->nosync);
}

static int close_fd(int *fd)
{
	int err = 0;

	if (*fd >= 0 && close(*fd) < 0)
		err = -errno;
	*fd = -1;
	return err;
}

/* Close both files and drop the buffers; the writer accepts nothing afterwards. */
static int writer_close(struct atf_thread_writer *w)
{
	int err = close_fd(&w->detail.fd), err2 = close_fd(&w->index.fd);

	free(w->index.buf);
	free(w->detail.buf);
	w->index.buf = w->detail.buf = NULL;
	w->index.len = w->detail.len = 0;
	w->finalized = true;
	return err ? err : err2;
}

/**
 * atf_thread_writer__finalize - flush, write final headers and footers, fsync and close
 *
 * The detail file is completed before the index file, so a complete index implies a complete
 * detail file. On failure nothing is closed or dropped: the files keep what reached them
 * (placeholder headers if the flush failed, so they never claim counts that are not on disk)
 * and a later call retries from where this one stopped, e.g. once disk space is freed; every
 * step rewrites the same bytes at the same offsets, so repeating one is harmless. After
 * success, later calls return 0 (or the error from closing the files).
 */
int atf_thread_writer__finalize(struct atf_thread_writer *w)
{
	int err;

	if (w->finalized)
		return w->final_err;
	err = out_flush(&w->detail);
	if (!err)
		err = out_flush(&w->index);
	if (!err && w->detail.fd >= 0)
		err = finalize_detail(w);
	if (!err)
		err = finalize_index(w);
	if (err)
		return err;
	w->final_err = writer_close(w);
	return w->final_err;
}

/**
 * atf_thread_writer__free - finalize if needed, then release. NULL is ignored.
 * If finalizing fails here, the files are closed as they are (readable as recovered); a
 * caller that must know calls atf_thread_writer__finalize() first.
 */
void atf_thread_writer__free(struct atf_thread_writer *w)
{
	if (!w)
		return;
	if (atf_thread_writer__finalize(w))
		(void)writer_close(w);
	free(w);
}

uint64_t atf_thread_writer__index_count(const struct atf_thread_writer *w) { return w->index_count; }
uint64_t atf_thread_writer__index_written(const struct atf_thread_writer *w)
{
	return w->index.written / ATF_INDEX_EVENT_SIZE;
}
uint64_t atf_thread_writer__detail_count(const struct atf_thread_writer *w) { return w->detail_count; }
uint64_t atf_thread_writer__time_start(const struct atf_thread_writer *w) { return w->time_start; }
uint64_t atf_thread_writer__time_end(const struct atf_thread_writer *w) { return w->time_end; }
