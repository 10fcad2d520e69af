// SPDX-License-Identifier: MIT
/*
 * atf_session_verify: check one process directory completely and report the FIRST problem
 * with its file and byte offset. Opening is strict (footer required, CRC of every file checked);
 * then headers, footers and counts are compared, each index event is checked for kind, time
 * order, nesting, links and a known function id, and each detail record for its back link.
 *
 * Nesting rules: a CALL's call_depth is the number of traced frames open on the thread before
 * it; its RETURN has the same depth and function id; an EXCEPTION closes the innermost open
 * frame the same way (left by unwinding). A thread's first event must be a CALL (attach starts
 * at depth 0 on the first call seen); frames still open when the thread ends are allowed.
 *
 * Losses. A lost CALL takes its RETURN with it, which leaves the nesting whole; a lost RETURN (or
 * EXCEPTION) leaves its CALL open, and the next event of the thread is shallower than the open
 * frames say. Such frames are closed as "ended by a lost return", exactly as many as the
 * manifest's lost_returns of the thread: fewer than that only if the rest are still open at the
 * thread's end, more never. Anything else is a nesting error, losses or not.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf.h"

static int vfail(struct atf_diag *diag, int err, const char *file, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int vfail(struct atf_diag *diag, int err, const char *file, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return err;
	diag->err = err;
	snprintf(diag->file, sizeof(diag->file), "%s", file);
	diag->offset = offset;
	va_start(ap, fmt);
	vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	return err;
}

/* A reader error whose diag the reader may have left partly empty: complete it. */
static int reader_fail(struct atf_diag *diag, int err, const char *file)
{
	if (!diag)
		return err;
	diag->err = err;
	if (!diag->file[0])
		snprintf(diag->file, sizeof(diag->file), "%s", file);
	if (!diag->msg[0])
		snprintf(diag->msg, sizeof(diag->msg), "%s", atf_strerror(err));
	return err;
}

typedef unsigned long long ull;

struct thread_check {
	struct atf_manifest *m;
	const struct atf_thread_info *ti;
	struct atf_diag *diag;
	char ipath[4096], dpath[4096];
	struct atf_index_file idx;
	struct atf_detail_file det;
	bool has_det;
	uint64_t *stack;            /* function ids of the open frames */
	size_t depth, cap;
	uint64_t lost_closed;       /* frames closed because their RETURN was lost (ti->lost_returns) */
};

static uint64_t ev_off(const struct thread_check *c, uint64_t seq)
{
	return c->idx.events_offset + seq * ATF_INDEX_EVENT_SIZE;
}

static uint64_t det_off(const struct thread_check *c, const struct atf_detail_event *d)
{
	return (uint64_t)(d->raw - c->det.map);
}

static int check_index_header(struct thread_check *c)
{
	const struct atf_index_file *f = &c->idx;
	struct atf_index_event first, last;
	uint64_t end = f->events_offset + f->count * ATF_INDEX_EVENT_SIZE;

	/* ATF v2: flags has one defined bit (has_detail_file); clock_type is 1, 2 or 3 */
	if (f->hdr.flags & ~ATF_INDEX_FLAG_HAS_DETAIL)
		return vfail(c->diag, -ATF_E_RECORD, c->ipath, 8, "header flags 0x%x: only bit 0 (has_detail) "
			     "is defined", f->hdr.flags);
	if (f->hdr.clock_type < 1 || f->hdr.clock_type > 3)
		return vfail(c->diag, -ATF_E_RECORD, c->ipath, 16, "header clock_type %u is not 1 "
			     "(mach_continuous), 2 (qpc) or 3 (boottime)", f->hdr.clock_type);
	if (f->hdr.event_count != f->count)
		return vfail(c->diag, -ATF_E_COUNT, c->ipath, 28, "header event_count %u, but the file holds %llu events",
			     f->hdr.event_count, (ull)f->count);
	if (f->footer.event_count != f->count)
		return vfail(c->diag, -ATF_E_COUNT, c->ipath, end + 8, "footer event_count %llu, but the file holds %llu events",
			     (ull)f->footer.event_count, (ull)f->count);
	if (f->footer.bytes_written != f->count * ATF_INDEX_EVENT_SIZE)
		return vfail(c->diag, -ATF_E_FOOTER, c->ipath, end + 32, "footer bytes_written %llu, expected %llu",
			     (ull)f->footer.bytes_written, (ull)(f->count * ATF_INDEX_EVENT_SIZE));
	if (f->hdr.footer_offset != end)
		return vfail(c->diag, -ATF_E_FOOTER, c->ipath, 40, "header footer_offset %llu, expected %llu",
			     (ull)f->hdr.footer_offset, (ull)end);
	if (!f->count)
		return 0;
	atf_index_get(f, 0, &first);
	atf_index_get(f, f->count - 1, &last);
	if (f->hdr.time_start_ns != first.timestamp_ns || f->hdr.time_end_ns != last.timestamp_ns)
		return vfail(c->diag, -ATF_E_FOOTER, c->ipath, 48,
			     "header time range %llu..%llu, but the events span %llu..%llu", (ull)f->hdr.time_start_ns,
			     (ull)f->hdr.time_end_ns, (ull)first.timestamp_ns, (ull)last.timestamp_ns);
	if (f->footer.time_start_ns != first.timestamp_ns || f->footer.time_end_ns != last.timestamp_ns)
		return vfail(c->diag, -ATF_E_FOOTER, c->ipath, end + 16,
			     "footer time range %llu..%llu, but the events span %llu..%llu", (ull)f->footer.time_start_ns,
			     (ull)f->footer.time_end_ns, (ull)first.timestamp_ns, (ull)last.timestamp_ns);
	if (!!(f->hdr.flags & ATF_INDEX_FLAG_HAS_DETAIL) != c->has_det)
		return vfail(c->diag, -ATF_E_LINK, c->ipath, 8, "header has_detail flag is %s, but detail.atf %s",
			     c->has_det ? "clear" : "set", c->has_det ? "exists" : "does not exist");
	return 0;
}

static int check_detail_header(struct thread_check *c)
{
	const struct atf_detail_file *f = &c->det;
	uint64_t end = f->events_offset + f->bytes_length;
	struct atf_detail_event first, last;
	int err;

	if (f->hdr.flags)
		return vfail(c->diag, -ATF_E_RECORD, c->dpath, 8, "header flags 0x%x: reserved, must be 0",
			     f->hdr.flags);
	if (f->hdr.thread_id != c->idx.hdr.thread_id)
		return vfail(c->diag, -ATF_E_RECORD, c->dpath, 12, "header thread_id %u, but the index header says %u",
			     f->hdr.thread_id, c->idx.hdr.thread_id);
	if (f->hdr.event_count != f->count)
		return vfail(c->diag, -ATF_E_COUNT, c->dpath, 28, "header event_count %llu, but the file holds %llu records",
			     (ull)f->hdr.event_count, (ull)f->count);
	if (f->footer.event_count != f->count)
		return vfail(c->diag, -ATF_E_COUNT, c->dpath, end + 8, "footer event_count %llu, but the file holds %llu records",
			     (ull)f->footer.event_count, (ull)f->count);
	if (f->hdr.bytes_length != f->bytes_length || f->footer.bytes_length != f->bytes_length)
		return vfail(c->diag, -ATF_E_FOOTER, c->dpath, 36, "bytes_length %llu (header) / %llu (footer), expected %llu",
			     (ull)f->hdr.bytes_length, (ull)f->footer.bytes_length, (ull)f->bytes_length);
	if (!f->count)
		return 0;
	err = atf_detail_get(f, 0, &first);
	err = err ?: atf_detail_get(f, f->count - 1, &last);
	if (err)
		return vfail(c->diag, err, c->dpath, f->events_offset, "cannot read records: %s", atf_strerror(err));
	if (f->hdr.index_seq_start != first.hdr.index_seq || f->hdr.index_seq_end != last.hdr.index_seq)
		return vfail(c->diag, -ATF_E_LINK, c->dpath, 44,
			     "header index_seq range %llu..%llu, but the records link %u..%u",
			     (ull)f->hdr.index_seq_start, (ull)f->hdr.index_seq_end, first.hdr.index_seq, last.hdr.index_seq);
	if (f->footer.time_start_ns != first.hdr.timestamp || f->footer.time_end_ns != last.hdr.timestamp)
		return vfail(c->diag, -ATF_E_FOOTER, c->dpath, end + 24,
			     "footer time range %llu..%llu, but the records span %llu..%llu", (ull)f->footer.time_start_ns,
			     (ull)f->footer.time_end_ns, (ull)first.hdr.timestamp, (ull)last.hdr.timestamp);
	return 0;
}

static int push_frame(struct thread_check *c, uint64_t fid)
{
	if (c->depth == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		uint64_t *p = realloc(c->stack, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->stack = p, c->cap = cap;
	}
	c->stack[c->depth++] = fid;
	return 0;
}

/*
 * close_lost - an event at @depth (a CALL's, or the depth its end's CALL had + 1) with more
 * frames open: close the frames above it as ended by lost RETURNs, if the thread lost that many.
 */
static void close_lost(struct thread_check *c, size_t depth)
{
	if (depth < c->depth && c->depth - depth <= c->ti->lost_returns - c->lost_closed) {
		c->lost_closed += c->depth - depth;
		c->depth = depth;
	}
}

static int check_nesting(struct thread_check *c, uint64_t seq, const struct atf_index_event *ev)
{
	uint64_t off = ev_off(c, seq);
	const char *what = ev->event_kind == ATF_KIND_RETURN ? "return" : "exception";

	close_lost(c, ev->event_kind == ATF_KIND_CALL ? ev->call_depth : (size_t)ev->call_depth + 1);
	if (ev->event_kind == ATF_KIND_CALL) {
		if (ev->call_depth != c->depth)
			return vfail(c->diag, -ATF_E_NESTING, c->ipath, off,
				     "event %llu: call of 0x%016llx at depth %u, but %zu frames are open",
				     (ull)seq, (ull)ev->function_id, ev->call_depth, c->depth);
		return push_frame(c, ev->function_id);
	}
	if (!c->depth)
		return vfail(c->diag, -ATF_E_NESTING, c->ipath, off,
			     "event %llu: %s of 0x%016llx without a matching call", (ull)seq, what, (ull)ev->function_id);
	if (ev->call_depth != c->depth - 1)
		return vfail(c->diag, -ATF_E_NESTING, c->ipath, off,
			     "event %llu: %s at depth %u, but its call was at depth %zu", (ull)seq, what, ev->call_depth,
			     c->depth - 1);
	if (ev->function_id != c->stack[c->depth - 1])
		return vfail(c->diag, -ATF_E_NESTING, c->ipath, off,
			     "event %llu: %s of 0x%016llx, but the open frame is 0x%016llx", (ull)seq, what,
			     (ull)ev->function_id, (ull)c->stack[c->depth - 1]);
	c->depth--;
	return 0;
}

/* Forward link of index event @seq: in range, linked back, same time, matching type. */
static int check_forward_link(struct thread_check *c, uint64_t seq, const struct atf_index_event *ev)
{
	struct atf_detail_event d;
	uint64_t off = ev_off(c, seq) + 28;
	uint16_t want;
	int err;

	if (!c->has_det || ev->detail_seq >= c->det.count)
		return vfail(c->diag, -ATF_E_LINK, c->ipath, off,
			     "event %llu: dangling detail_seq %u (detail file holds %llu records)", (ull)seq,
			     ev->detail_seq, (ull)(c->has_det ? c->det.count : 0));
	err = atf_detail_get(&c->det, ev->detail_seq, &d);
	if (err)
		return vfail(c->diag, err, c->dpath, c->det.events_offset, "record %u: %s", ev->detail_seq, atf_strerror(err));
	if (d.hdr.index_seq != seq)
		return vfail(c->diag, -ATF_E_LINK, c->ipath, off,
			     "event %llu: detail_seq %u, but that record links back to index event %u", (ull)seq,
			     ev->detail_seq, d.hdr.index_seq);
	if (d.hdr.timestamp != ev->timestamp_ns)
		return vfail(c->diag, -ATF_E_LINK, c->dpath, det_off(c, &d) + 16,
			     "record %u: timestamp %llu, but index event %llu has %llu", ev->detail_seq,
			     (ull)d.hdr.timestamp, (ull)seq, (ull)ev->timestamp_ns);
	want = ev->event_kind == ATF_KIND_CALL ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN;
	if (ev->event_kind != ATF_KIND_EXCEPTION && d.hdr.event_type != want)
		return vfail(c->diag, -ATF_E_RECORD, c->dpath, det_off(c, &d) + 4,
			     "record %u: event_type %u, but index event %llu is kind %u", ev->detail_seq,
			     d.hdr.event_type, (ull)seq, ev->event_kind);
	if (d.has_payload && d.payload.function_id != ev->function_id)
		return vfail(c->diag, -ATF_E_LINK, c->dpath, det_off(c, &d) + ATF_DETAIL_EVENT_HDR_SIZE,
			     "record %u: payload function_id 0x%016llx, but index event %llu has 0x%016llx",
			     ev->detail_seq, (ull)d.payload.function_id, (ull)seq, (ull)ev->function_id);
	return 0;
}

static int check_index_events(struct thread_check *c)
{
	const struct atf_index_file *f = &c->idx;
	uint64_t prev_ts = 0;
	int err;

	for (uint64_t seq = 0; seq < f->count; seq++) {
		struct atf_index_event ev;
		uint64_t off = ev_off(c, seq);

		atf_index_get(f, seq, &ev);
		if (ev.event_kind < ATF_KIND_CALL || ev.event_kind > ATF_KIND_EXCEPTION)
			return vfail(c->diag, -ATF_E_RECORD, c->ipath, off + 20, "event %llu: event_kind %u is not 1..3",
				     (ull)seq, ev.event_kind);
		if (ev.thread_id != f->hdr.thread_id)
			return vfail(c->diag, -ATF_E_RECORD, c->ipath, off + 16,
				     "event %llu: thread_id %u, but the header says %u", (ull)seq, ev.thread_id,
				     f->hdr.thread_id);
		if (ev.timestamp_ns < prev_ts)
			return vfail(c->diag, -ATF_E_TIME_ORDER, c->ipath, off,
				     "event %llu: timestamp %llu is before the previous event's %llu", (ull)seq,
				     (ull)ev.timestamp_ns, (ull)prev_ts);
		prev_ts = ev.timestamp_ns;
		if (!atf_manifest__symbol(c->m, ev.function_id))
			return vfail(c->diag, -ATF_E_SYMBOL, c->ipath, off + 8,
				     "event %llu: function id 0x%016llx not in the manifest symbols", (ull)seq,
				     (ull)ev.function_id);
		err = check_nesting(c, seq, &ev);
		if (err == -ATF_E_NESTING && c->diag && (c->ti->lost_returns || c->m->lost_events)) {
			/* say how far the losses go, next to the place they do not explain */
			size_t n = strlen(c->diag->msg);

			if (c->ti->lost_returns)
				snprintf(c->diag->msg + n, sizeof(c->diag->msg) - n,
					 " (this thread lost %llu returns, which do not explain it)",
					 (ull)c->ti->lost_returns);
			else
				snprintf(c->diag->msg + n, sizeof(c->diag->msg) - n,
					 " (the recording lost %llu events, none of them a return of this thread)",
					 (ull)c->m->lost_events);
		}
		if (!err && ev.detail_seq != ATF_NO_DETAIL)
			err = check_forward_link(c, seq, &ev);
		if (err)
			return err == -ENOMEM ? vfail(c->diag, err, c->ipath, off, "out of memory") : err;
	}
	/* every lost RETURN left a frame open: closed on the way, or still open at the end */
	if (c->ti->lost_returns > c->lost_closed + c->depth)
		return vfail(c->diag, -ATF_E_NESTING, c->ipath, ev_off(c, c->idx.count),
			     "thread %u lost %llu returns, but only %llu frames were left open by them and %zu "
			     "are open at its end", c->ti->id, (ull)c->ti->lost_returns, (ull)c->lost_closed,
			     c->depth);
	return 0;
}

static int check_detail_records(struct thread_check *c)
{
	for (uint64_t seq = 0; seq < c->det.count; seq++) {
		struct atf_detail_event d;
		struct atf_index_event ev;
		int err = atf_detail_get(&c->det, seq, &d);

		if (err)
			return vfail(c->diag, err, c->dpath, c->det.events_offset, "record %llu: %s", (ull)seq,
				     atf_strerror(err));
		if (d.hdr.event_type != ATF_DETAIL_CALL && d.hdr.event_type != ATF_DETAIL_RETURN)
			return vfail(c->diag, -ATF_E_RECORD, c->dpath, det_off(c, &d) + 4,
				     "record %llu: event_type %u is not 3 or 4", (ull)seq, d.hdr.event_type);
		if (d.hdr.thread_id != c->det.hdr.thread_id)
			return vfail(c->diag, -ATF_E_RECORD, c->dpath, det_off(c, &d) + 12,
				     "record %llu: thread_id %u, but the header says %u", (ull)seq, d.hdr.thread_id,
				     c->det.hdr.thread_id);
		if (d.hdr.index_seq >= c->idx.count)
			return vfail(c->diag, -ATF_E_LINK, c->dpath, det_off(c, &d) + 8,
				     "record %llu: dangling index_seq %u (index holds %llu events)", (ull)seq,
				     d.hdr.index_seq, (ull)c->idx.count);
		atf_index_get(&c->idx, d.hdr.index_seq, &ev);
		if (ev.detail_seq != seq)
			return vfail(c->diag, -ATF_E_LINK, c->dpath, det_off(c, &d) + 8,
				     "record %llu: index_seq %u, but that event links to detail %u", (ull)seq,
				     d.hdr.index_seq, ev.detail_seq);
	}
	return 0;
}

static int check_manifest_counts(struct thread_check *c)
{
	const struct atf_thread_info *ti = c->ti;
	uint64_t ndet = c->has_det ? c->det.count : 0;

	/* Zero means "not recorded" (reference manifests have no counts). */
	if (ti->index_events && ti->index_events != c->idx.count)
		return vfail(c->diag, -ATF_E_MANIFEST, c->ipath, 0,
			     "manifest thread %u: index_events %llu, but the file holds %llu", ti->id,
			     (ull)ti->index_events, (ull)c->idx.count);
	if (ti->detail_events && ti->detail_events != ndet)
		return vfail(c->diag, -ATF_E_MANIFEST, c->has_det ? c->dpath : c->ipath, 0,
			     "manifest thread %u: detail_events %llu, but the files hold %llu", ti->id,
			     (ull)ti->detail_events, (ull)ndet);
	if (!ti->has_detail && ndet)
		return vfail(c->diag, -ATF_E_MANIFEST, c->dpath, 0,
			     "manifest thread %u: has_detail is false, but detail.atf holds %llu records", ti->id, (ull)ndet);
	return 0;
}

static int verify_thread(struct atf_manifest *m, const char *dir, const struct atf_thread_info *ti,
			 struct atf_diag *diag)
{
	const unsigned flags = ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC;
	struct thread_check c = { .m = m, .ti = ti, .diag = diag };
	bool idx_open = false;
	struct stat st;
	int err;

	snprintf(c.ipath, sizeof(c.ipath), "%s/thread_%u/index.atf", dir, ti->id);
	snprintf(c.dpath, sizeof(c.dpath), "%s/thread_%u/detail.atf", dir, ti->id);
	err = atf_index_open(&c.idx, c.ipath, flags, diag);
	if (err) {
		err = reader_fail(diag, err, c.ipath);
		goto cleanup;
	}
	idx_open = true;
	if (lstat(c.dpath, &st) == 0 || errno != ENOENT) {     /* a link there is an error, not "none" */
		err = atf_detail_open(&c.det, c.dpath, flags, diag);
		if (err) {
			err = reader_fail(diag, err, c.dpath);
			goto cleanup;
		}
		c.has_det = true;
	}
	err = check_index_header(&c);
	if (!err && c.has_det)
		err = check_detail_header(&c);
	err = err ?: check_index_events(&c);
	if (!err && c.has_det)
		err = check_detail_records(&c);
	err = err ?: check_manifest_counts(&c);
cleanup:
	if (c.has_det)
		atf_detail_close(&c.det);
	if (idx_open)
		atf_index_close(&c.idx);
	free(c.stack);
	return err;
}

/* A function id names one symbol: a second entry for it makes the name of its events ambiguous. */
static int check_duplicate_symbols(struct atf_manifest *m, const char *mpath, struct atf_diag *diag)
{
	atf_manifest__symbol(m, 0);         /* sorts the symbols by function id */
	for (size_t i = 1; i < m->nsymbols; i++)
		if (m->symbols[i].function_id == m->symbols[i - 1].function_id)
			return vfail(diag, -ATF_E_MANIFEST, mpath, 0,
				     "symbols: function id 0x%016llx (%s) listed twice",
				     (ull)m->symbols[i].function_id, m->symbols[i].name ? m->symbols[i].name : "?");
	return 0;
}

/* Every thread_<id> directory on disk must be listed in the manifest (else recover is needed). */
static int check_unlisted_threads(const struct atf_manifest *m, const char *dir, const char *mpath,
				  struct atf_diag *diag)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return vfail(diag, -errno, dir, 0, "cannot list: %s", strerror(errno));
	while (!err && (de = readdir(d))) {
		unsigned id;
		char tail;
		bool listed = false;

		if (sscanf(de->d_name, "thread_%u%c", &id, &tail) != 1)
			continue;
		for (size_t i = 0; i < m->nthreads && !listed; i++)
			listed = m->threads[i].id == id;
		if (!listed)
			err = vfail(diag, -ATF_E_MANIFEST, mpath, 0,
				    "directory %s is not listed in \"threads\" (run atftrace recover)", de->d_name);
	}
	closedir(d);
	return err;
}

int atf_session_verify(const char *dir, struct atf_diag *diag)
{
	struct atf_diag local;
	struct atf_manifest *m = NULL;
	char mpath[4096];
	int err;

	if (!diag)
		diag = &local;
	memset(diag, 0, sizeof(*diag));
	snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
	err = atf_manifest__load(&m, mpath, diag);
	if (err)
		return reader_fail(diag, err, mpath);
	for (size_t i = 0; i < m->nthreads && !err; i++)
		for (size_t j = 0; j < i && !err; j++)
			if (m->threads[i].id == m->threads[j].id)
				err = vfail(diag, -ATF_E_MANIFEST, mpath, 0, "threads[%zu]: id %u listed twice", i,
					    m->threads[i].id);
	err = err ?: check_duplicate_symbols(m, mpath, diag);
	err = err ?: check_unlisted_threads(m, dir, mpath, diag);
	for (size_t i = 0; i < m->nthreads && !err; i++)
		err = verify_thread(m, dir, &m->threads[i], diag);
	atf_manifest__free(m);
	return err;
}
