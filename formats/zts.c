// SPDX-License-Identifier: MIT
/*
 * ZTS0 exporter: a zorka-tdb trace store directory (spec trace-store-zts.md with NOTES.md §5;
 * the reference reader wins). Layout: <out>/000001/ holding config.props and traces.dat, the
 * raw trace data file: a 16-byte big-endian header, then chunks "ZCH0" csize lsize crc32 data.
 *
 * Each top-level call of a thread is one trace: tag 8 + an indefinite array, TRACE_INFO maps
 * (tag 14) with TSTART/TSTOP in ticks (= ns boottime), DURATION, CALLS, ERRORS and FLAGS, and
 * tag-9 attribute maps with the function name (plain strings: a standalone ZTS0 file cannot
 * resolve method ids, so names travel as attributes — a project decision). Nested calls are
 * nested records.
 *
 * Streaming: items are written the moment the event arrives (TSTOP and the counts follow the
 * children, as TraceDataReader allows), so no trace is buffered. A chunk is cut after a trace
 * once it holds ZTS_CHUNK_TARGET bytes, or between two items of a trace at ZTS_CHUNK_MAX
 * (TraceDataReader reads items, not whole traces, so a trace may span chunks as in the agent's
 * own chunked traces). Per-frame counters are kept for the first ZTS_TRACKED_DEPTH levels;
 * deeper frames carry TSTART/TSTOP only. Memory: O(threads + functions + that cap).
 */
#include <errno.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "atf_file.h"
#include "byteorder.h"
#include "cbor_writer.h"
#include "format.h"
#include "func_index.h"
#include "utf8.h"

#define ZTS_FLAG_DEFLATE   0x01u
#define ZTS_FLAG_LZ4       0x02u
#define ZTS_FLAG_CRC       0x10u
#define ZTS_CHUNK_TARGET   (256u << 10)
#define ZTS_CHUNK_MAX      (1u << 20)
#define ZTS_TRACKED_DEPTH  16384u
#define ZTS_STORE_ID       "000001"

/* Tags and TRACE_INFO keys accepted by TraceDataReader (NOTES §5). */
#define ZTS_TAG_TRACE_START 8
#define ZTS_TAG_TRACE_ATTR  9
#define ZTS_TAG_TRACE_INFO  14
#define ZTS_TI_TSTAMP   0x05
#define ZTS_TI_DURATION 0x06
#define ZTS_TI_CALLS    0x09
#define ZTS_TI_ERRORS   0x0A
#define ZTS_TI_FLAGS    0x0B
#define ZTS_TI_TSTART   0x0C
#define ZTS_TI_TSTOP    0x0D
#define ZTS_TI_METHOD   0x0E
#define ZTS_TF_ERROR_MARK 0x08  /* zorka TraceRecordFlags: the call ended by an exception */

struct zts_frame {
	uint64_t tstart, calls, errors;     /* counters at entry */
};

struct zts_writer {
	char *store_dir, *data_path, *props_path;
	const char *compress;
	struct obuf *out;
	uint32_t flags;
	bool finished;

	struct cbor_buf cb;                 /* the chunk being filled (logical bytes) */
	uint8_t *zbuf;                      /* compressed chunk */
	size_t zcap;
	z_stream z;
	bool z_ready;
	uint64_t nchunks, ntraces;

	const struct atf_thread *thread;
	uint64_t depth, calls, errors, last_ts;
	struct zts_frame *stack;            /* ZTS_TRACKED_DEPTH entries */

	bool have_wall;                     /* manifest gives wall clock <-> boottime */
	uint64_t wall_ms, boot_ns;

	struct func_index funcs;            /* METHOD numbers (names travel as attributes) */
};

/* ---- output ------------------------------------------------------------------------------ */

static int flush_chunk(struct zts_writer *w)
{
	uint8_t hdr[16];
	const uint8_t *data = w->cb.data;
	size_t lsize = w->cb.len, csize = lsize;

	if (w->cb.err)
		return w->cb.err;
	if (!lsize)
		return 0;
	if (w->flags & (ZTS_FLAG_LZ4 | ZTS_FLAG_DEFLATE)) {
		size_t bound = (w->flags & ZTS_FLAG_LZ4) ? (size_t)LZ4_compressBound((int)lsize)
							  : deflateBound(&w->z, lsize);
		if (bound > w->zcap) {
			uint8_t *p = realloc(w->zbuf, bound);

			if (!p)
				return -ENOMEM;
			w->zbuf = p;
			w->zcap = bound;
		}
		if (w->flags & ZTS_FLAG_LZ4) {
			int n = LZ4_compress_default((const char *)data, (char *)w->zbuf, (int)lsize, (int)w->zcap);

			if (n <= 0)
				return -EIO;
			csize = (size_t)n;
		} else {
			/* Raw DEFLATE (windowBits -15), finished per chunk: Java's Inflater(true) reads it. */
			deflateReset(&w->z);
			w->z.next_in = (Bytef *)data;
			w->z.avail_in = (uInt)lsize;
			w->z.next_out = w->zbuf;
			w->z.avail_out = (uInt)w->zcap;
			if (deflate(&w->z, Z_FINISH) != Z_STREAM_END)
				return -EIO;
			csize = w->zcap - w->z.avail_out;
		}
		data = w->zbuf;
	}
	memcpy(hdr, "ZCH0", 4);
	put_be32(hdr + 4, (uint32_t)csize);
	put_be32(hdr + 8, (uint32_t)lsize);
	put_be32(hdr + 12, (uint32_t)crc32(0, data, (uInt)csize));   /* over the compressed bytes */
	w->cb.len = 0;
	w->nchunks++;
	int err = obuf__write(w->out, hdr, sizeof(hdr));
	return err ? err : obuf__write(w->out, data, csize);
}

/* ---- items ------------------------------------------------------------------------------- */

/* A text string; names may hold any bytes but CBOR text must be UTF-8, so those are repaired. */
static void text(struct cbor_buf *b, const char *s)
{
	size_t len = strlen(s);
	char *fixed;

	if (utf8_valid(s, len)) {
		cbw_text(b, s, len);
		return;
	}
	if (!(fixed = malloc(UTF8_LOSSY_BOUND(len)))) {
		b->err = b->err ?: -ENOMEM;
		return;
	}
	cbw_text(b, fixed, (size_t)(utf8_put_lossy(fixed, s, len) - fixed));
	free(fixed);
}

/* METHOD: a dense function number from 1 (TraceDataReader reads it as a plain number). */
static uint32_t method_index(struct zts_writer *w, uint64_t fid)
{
	int64_t i = func_index__get(&w->funcs, fid, NULL);

	if (i < 0) {
		w->cb.err = (int)i;
		return 0;
	}
	return (uint32_t)i + 1;
}

static void info_pair(struct cbor_buf *b, unsigned key, uint64_t v)
{
	cbw_uint(b, key);
	cbw_uint(b, v);
}

static void open_call(struct zts_writer *w, const struct export_event *e)
{
	struct cbor_buf *b = &w->cb;
	const struct atf_detail_event *d = e->detail;
	bool top = w->depth == 0, wall = top && w->have_wall && e->ev.timestamp_ns >= w->boot_ns;
	bool args = d && d->has_payload && d->hdr.event_type == ATF_DETAIL_CALL;
	uint64_t ts = e->ev.timestamp_ns;

	cbw_tag(b, ZTS_TAG_TRACE_START);
	cbw_array_indef(b);
	cbw_tag(b, ZTS_TAG_TRACE_INFO);
	cbw_map(b, 2 + wall);
	if (wall)
		info_pair(b, ZTS_TI_TSTAMP, w->wall_ms + (ts - w->boot_ns) / 1000000);
	info_pair(b, ZTS_TI_TSTART, ts);
	info_pair(b, ZTS_TI_METHOD, method_index(w, e->ev.function_id));
	cbw_tag(b, ZTS_TAG_TRACE_ATTR);
	cbw_map(b, 1 + (top ? 2 : 0) + args);
	text(b, "method");
	text(b, e->name);
	if (top) {
		text(b, "thread");
		text(b, w->thread->name ? w->thread->name : "");
		text(b, "tid");
		cbw_uint(b, w->thread->tid);
		w->ntraces++;
	}
	if (args) {
		text(b, "args");
		cbw_array(b, ATF_DETAIL_GP_REGS);
		for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
			cbw_uint(b, d->payload.gp[i]);
	}
	if (w->depth < ZTS_TRACKED_DEPTH)
		w->stack[w->depth] = (struct zts_frame){ .tstart = ts, .calls = w->calls, .errors = w->errors };
	w->depth++;
	w->calls++;
}

/* Closes the innermost open call at @ts; @error for an exception, @unfinished at thread end. */
static void close_call(struct zts_writer *w, uint64_t ts, const struct atf_detail_event *d,
		       bool error, bool unfinished)
{
	struct cbor_buf *b = &w->cb;
	bool ret = d && d->has_payload && d->hdr.event_type == ATF_DETAIL_RETURN;
	const struct zts_frame *f;
	uint64_t errs;

	w->depth--;
	if (error)
		w->errors++;
	if (ret || unfinished) {
		cbw_tag(b, ZTS_TAG_TRACE_ATTR);
		cbw_map(b, 1);
		if (ret) {
			text(b, "ret");
			cbw_array(b, 2);
			cbw_uint(b, d->payload.gp[0]);
			cbw_uint(b, d->payload.gp[1]);
		} else {
			text(b, "unfinished");
			cbw_bool(b, true);
		}
	}
	cbw_tag(b, ZTS_TAG_TRACE_INFO);
	if (w->depth >= ZTS_TRACKED_DEPTH) {
		cbw_map(b, 1 + error);
		info_pair(b, ZTS_TI_TSTOP, ts);
	} else {
		f = &w->stack[w->depth];
		errs = w->errors - f->errors;
		cbw_map(b, 3 + (errs > 0) + error);
		info_pair(b, ZTS_TI_TSTOP, ts);
		info_pair(b, ZTS_TI_DURATION, ts - f->tstart);
		info_pair(b, ZTS_TI_CALLS, w->calls - f->calls);
		if (errs)
			info_pair(b, ZTS_TI_ERRORS, errs);
	}
	if (error)
		info_pair(b, ZTS_TI_FLAGS, ZTS_TF_ERROR_MARK);
	cbw_break(b);
}

/* ---- export ops -------------------------------------------------------------------------- */

/* Wall clock of the manifest's time_start_ns, from its ISO-8601 UTC start_time. */
static void wall_clock(struct zts_writer *w, const struct atf_manifest *m)
{
	struct tm tm = { 0 };
	const char *rest;
	unsigned ms = 0;

	if (!m || !m->start_time || !m->time_start_ns)
		return;
	rest = strptime(m->start_time, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return;
	if (*rest == '.') {
		unsigned scale = 100;

		for (rest++; *rest >= '0' && *rest <= '9'; rest++, scale /= 10)
			ms += (unsigned)(*rest - '0') * scale;
	}
	w->wall_ms = (uint64_t)timegm(&tm) * 1000 + ms;
	w->boot_ns = m->time_start_ns;
	w->have_wall = true;
}

static int zts_begin(struct export_ctx *ctx)
{
	const char *c = ctx->opts->compress ? ctx->opts->compress : "lz4";
	struct zts_writer *w = calloc(1, sizeof(*w));
	uint8_t hdr[16] = "ZTS0";
	int err;

	if (!w)
		return -ENOMEM;
	ctx->priv = w;
	if (!strcmp(c, "lz4")) {
		w->flags = ZTS_FLAG_LZ4 | ZTS_FLAG_CRC;
	} else if (!strcmp(c, "zlib")) {
		w->flags = ZTS_FLAG_DEFLATE | ZTS_FLAG_CRC;
		if (deflateInit2(&w->z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return -ENOMEM;
		w->z_ready = true;
	} else if (!strcmp(c, "none")) {
		w->flags = ZTS_FLAG_CRC;
	} else {
		export_error(ctx, "--compress %s: expected lz4, zlib or none", c);
		return -EINVAL;
	}
	w->compress = c;
	w->stack = malloc(ZTS_TRACKED_DEPTH * sizeof(*w->stack));
	if (!w->stack ||
	    asprintf(&w->store_dir, "%s/%s", ctx->opts->out_path, ZTS_STORE_ID) < 0 ||
	    asprintf(&w->data_path, "%s/traces.dat", w->store_dir) < 0 ||
	    asprintf(&w->props_path, "%s/config.props", w->store_dir) < 0)
		return -ENOMEM;
	{
		struct atf_diag diag = { 0 };
		int fd = atf_dir_create(w->store_dir, 0, &diag);     /* and out_path: atf_file.h */

		if (fd < 0) {
			export_error(ctx, "%s", diag.msg);
			return fd;
		}
		close(fd);
	}
	if ((err = export_open(ctx, &w->out, w->data_path)))
		return err;
	wall_clock(w, ctx->session->manifest);
	put_be32(hdr + 4, w->flags);        /* master checksum and reserved stay 0 */
	return obuf__write(w->out, hdr, sizeof(hdr));
}

static int zts_thread_begin(struct export_ctx *ctx, const struct atf_thread *t)
{
	struct zts_writer *w = ctx->priv;

	w->thread = t;
	w->depth = w->calls = w->errors = 0;
	return 0;
}

static int zts_event(struct export_ctx *ctx, const struct export_event *e)
{
	struct zts_writer *w = ctx->priv;

	w->last_ts = e->ev.timestamp_ns;
	switch (e->ev.event_kind) {
	case ATF_KIND_CALL:
		open_call(w, e);
		break;
	case ATF_KIND_RETURN:
	case ATF_KIND_EXCEPTION:
		if (!w->depth)          /* export_sessions() balances: never happens */
			return 0;
		close_call(w, e->ev.timestamp_ns, e->detail, e->ev.event_kind == ATF_KIND_EXCEPTION, e->unfinished);
		break;
	default:
		return 0;
	}
	if (w->cb.err)
		return w->cb.err;
	if ((w->depth == 0 && w->cb.len >= ZTS_CHUNK_TARGET) || w->cb.len >= ZTS_CHUNK_MAX)
		return flush_chunk(w);
	return 0;
}

static int zts_thread_end(struct export_ctx *ctx, const struct atf_thread *t)
{
	struct zts_writer *w = ctx->priv;

	while (w->depth)        /* calls still open when recording stopped */
		close_call(w, w->last_ts, NULL, false, true);
	if (w->cb.err)
		return w->cb.err;
	return w->cb.len >= ZTS_CHUNK_TARGET ? flush_chunk(w) : 0;
}

static int zts_end(struct export_ctx *ctx)
{
	struct zts_writer *w = ctx->priv;
	char *props;
	int err;

	if ((err = flush_chunk(w)))
		return err;
	err = obuf__close(w->out);
	w->out = NULL;
	if (err)
		return err;
	if (asprintf(&props, "# atftrace ZTS0 trace store (zorka-tdb layout), store id %s\n"
		     "store.iflags=1\nstore.dflags=%u\n"
		     "atftrace.data-file=traces.dat\natftrace.compression=%s\natftrace.ticks=ns-boottime\n"
		     "atftrace.names=attributes\natftrace.chunks=%llu\natftrace.traces=%llu\n"
		     "atftrace.orphan-returns=%llu\n", ZTS_STORE_ID, w->flags, w->compress,
		     (unsigned long long)w->nchunks, (unsigned long long)w->ntraces,
		     (unsigned long long)ctx->dropped_returns) < 0)
		return -ENOMEM;
	err = atf_file_replace(w->props_path, props, strlen(props), ATF_TMP_FRESH_MODE);
	free(props);
	if (!err)
		w->finished = true;
	return err;
}

static void zts_cleanup(struct export_ctx *ctx)
{
	struct zts_writer *w = ctx->priv;

	if (!w)
		return;
	if (!w->finished) {     /* remove the partial store */
		if (w->out)
			obuf__abort(w->out);
		if (w->props_path)
			unlink(w->props_path);
		if (w->store_dir)
			rmdir(w->store_dir);
		if (ctx->opts->out_path)
			rmdir(ctx->opts->out_path);     /* only if we left it empty */
	}
	if (w->z_ready)
		deflateEnd(&w->z);
	cbw_free(&w->cb);
	free(w->zbuf);
	free(w->stack);
	func_index__free(&w->funcs);
	free(w->store_dir);
	free(w->data_path);
	free(w->props_path);
	free(w);
	ctx->priv = NULL;
}

const struct export_ops zts_ops = {
	.name = "zts",
	.description = "zorka-tdb ZTS0 trace store directory (--compress lz4|zlib|none)",
	.per_thread = true,
	.writes_directory = true,
	.begin = zts_begin,
	.thread_begin = zts_thread_begin,
	.event = zts_event,
	.thread_end = zts_thread_end,
	.end = zts_end,
	.cleanup = zts_cleanup,
};
