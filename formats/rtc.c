// SPDX-License-Identifier: MIT
/*
 * RTC (Ruler Trace Container) exporter: /work/shared/specs/rtc.md with the corrections of
 * NOTES.md §4 (the reference reader wins). The file is a ruler: a Marker at every k*Unit, an
 * Index right after it, an index frame at every minor grid point (Marker + 1025 + n*unit), a Crc
 * frame in each Unit's last 5 bytes. Because positions are fixed, a reader can start at any
 * Unit and a truncated file stays readable up to its last whole Unit.
 *
 * Streams (all defined up front, so Meta never changes; docs/formats-rtc-zts.md has the
 * payload encodings): clk (absolute boottime ns), clk delta (uleb128 ns on clk), names
 * (function index -> name, re-sent in every Unit that uses the function), detail (registers
 * of detail records) and one call/return stream per thread.
 *
 * Memory is O(threads + functions): a 64 KiB staging buffer (so the CRC runs over large
 * blocks), the stream table and the function table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "byteorder.h"
#include "format.h"
#include "func_index.h"
#include "leb128.h"
#include "utf8.h"

#define RTC_MARKER_BYTE   0xB9
#define RTC_MARKER_LEN    1024
#define RTC_MARKER_FRAME  (1 + RTC_MARKER_LEN)
#define RTC_MAX_PAYLOAD   1024
#define RTC_CRC_FRAME     5
#define RTC_DEFAULT_UNIT  (1u << 20)
#define RTC_DEFAULT_MINOR (1u << 17)
#define RTC_FIRST_UNITS   3           /* NOTES §4: rulert needs >= 3 Units to decode user frames */
#define RTC_CLK_SPAN      (1u << 21)  /* re-send clk when the delta would need > 3 uleb bytes */
#define RTC_NAME_MAX      1024
#define RTC_STAGE_SIZE    (64u << 10)

enum rtc_stream_id {
	RTC_S_NOP, RTC_S_PADDING, RTC_S_MARKER, RTC_S_INDEX, RTC_S_INDEX_MINOR, RTC_S_META,
	RTC_S_META_DELTA, RTC_S_PLATFORM, RTC_S_CRC,
	RTC_S_CLK, RTC_S_CLK_DELTA, RTC_S_NAMES, RTC_S_DETAIL, RTC_S_THREAD0,
};

struct rtc_writer {
	struct obuf *out;
	uint64_t U, u;
	uint64_t pos;               /* file offset of the next byte */
	uint64_t unit_no;           /* current Unit number */
	uint64_t unit_start;        /* its Marker */
	uint64_t index_pos;         /* its Index frame */
	uint64_t minor_start;       /* latest grid point (Index or index frame) */
	uint64_t next_minor;        /* next minor grid point */
	uint64_t crc_pos;           /* unit_start + U - 5 */
	bool started;
	uint32_t crc;
	uint8_t stage[RTC_STAGE_SIZE];
	size_t staged, crc_mark;    /* bytes staged; staged bytes already in crc */

	uint32_t nstreams;          /* ids 0 .. nstreams-1; the next free id is nstreams */
	uint64_t *sidx;             /* per stream: first frame in the latest minor unit it appeared */
	int32_t *thread_stream;     /* session thread index -> stream id, -1 when not exported */
	char *meta;
	size_t meta_len;
	uint64_t meta_pos;          /* the last Meta whose contents changed (Unit 0's) */
	size_t max_index;           /* bytes of the largest index, frame headers included */

	bool need_clk;              /* no clk frame in this Unit yet */
	bool have_now;              /* a clk delta frame follows the latest clk frame */
	uint64_t clk, now;          /* last clk value; effective time (clk + last delta) */

	struct func_index funcs;    /* mark: Unit number + 1 in which the name was last sent */
};

/* ---- output: staging buffer, CRC over large blocks ---------------------------------------- */

static void crc_fold(struct rtc_writer *w)
{
	w->crc = (uint32_t)crc32(w->crc, w->stage + w->crc_mark, (uInt)(w->staged - w->crc_mark));
	w->crc_mark = w->staged;
}

static int stage_flush(struct rtc_writer *w)
{
	int err;

	crc_fold(w);
	err = obuf__write(w->out, w->stage, w->staged);
	w->staged = w->crc_mark = 0;
	return err;
}

static int put(struct rtc_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	int err;

	w->pos += n;
	while (n) {
		size_t room = RTC_STAGE_SIZE - w->staged, c = n < room ? n : room;

		memcpy(w->stage + w->staged, b, c);
		w->staged += c;
		b += c;
		n -= c;
		if (w->staged == RTC_STAGE_SIZE && (err = stage_flush(w)))
			return err;
	}
	return 0;
}

static int put_header(struct rtc_writer *w, uint32_t id, bool more, bool has_len, size_t len)
{
	uint8_t h[2 * ULEB128_MAX_LEN];
	size_t n = uleb128_put(h, (uint64_t)id << 1 | more);

	if (has_len)
		n += uleb128_put(h + n, len);
	return put(w, h, n);
}

static bool stream_fixed(uint32_t id, size_t *len)
{
	switch (id) {
	case RTC_S_NOP: *len = 0; return true;
	case RTC_S_MARKER: *len = RTC_MARKER_LEN; return true;
	case RTC_S_PLATFORM: case RTC_S_CRC: *len = 4; return true;
	case RTC_S_CLK: *len = 8; return true;
	default: return false;
	}
}

/* Padding of exactly @n bytes, in frames whose payload never exceeds 1024 bytes. */
static int pad(struct rtc_writer *w, uint64_t n)
{
	static const uint8_t zeros[RTC_MAX_PAYLOAD];
	int err;

	while (n) {
		uint64_t c = n < RTC_MAX_PAYLOAD + 3 ? n : RTC_MAX_PAYLOAD + 3;
		size_t len;

		if (c == 1)                     /* a lone nop byte */
			return put(w, zeros, 1);
		if (c == 130)                   /* 129 = 1 + 1 + 127; 131 = 1 + 2 + 128: 130 has no form */
			c = 129;
		len = c <= 129 ? (size_t)c - 2 : (size_t)c - 3;
		if ((err = put_header(w, RTC_S_PADDING, false, true, len)) || (err = put(w, zeros, len)))
			return err;
		n -= c;
	}
	return 0;
}

/* ---- index frames ---------------------------------------------------------------------------- */

static size_t index_entry(uint8_t *p, uint32_t id, uint64_t off)
{
	size_t n = uleb128_put(p, (uint64_t)id << 1 | 1);

	return n + uleb128_put(p + n, off << 1);
}

/* Writes the Index (@full) or an index at w->pos, in consecutive frames of <= 1024 bytes. */
static int write_index(struct rtc_writer *w, bool full)
{
	uint64_t here = w->pos;
	uint8_t *buf, *p;
	size_t len, done;
	uint32_t fid = full ? RTC_S_INDEX : RTC_S_INDEX_MINOR;
	int err = 0;

	buf = malloc(ULEB128_MAX_LEN + (size_t)w->nstreams * 2 * ULEB128_MAX_LEN);
	if (!buf)
		return -ENOMEM;
	p = buf;
	if (full) {
		p += uleb128_put(p, w->unit_no);
		/* Index and index point at imaginary predecessors: that is how readers learn U and u. */
		p += index_entry(p, RTC_S_INDEX, w->U);
		p += index_entry(p, RTC_S_INDEX_MINOR, w->u);
		p += index_entry(p, RTC_S_META, w->meta_pos ? here - w->meta_pos : 0);
	} else {
		p += index_entry(p, RTC_S_INDEX, here - w->index_pos);
		if (w->meta_pos >= w->index_pos)
			p += index_entry(p, RTC_S_META, here - w->meta_pos);
	}
	for (uint32_t id = RTC_S_PLATFORM; id < w->nstreams; id++) {
		if (full)
			p += index_entry(p, id, w->sidx[id] ? here - w->sidx[id] : 0);
		else if (w->sidx[id] >= w->index_pos)
			p += index_entry(p, id, here - w->sidx[id]);
	}
	len = (size_t)(p - buf);
	for (done = 0; !err && done < len; ) {
		size_t c = len - done < RTC_MAX_PAYLOAD ? len - done : RTC_MAX_PAYLOAD;

		err = put_header(w, fid, done + c < len, true, c);
		if (!err)
			err = put(w, buf + done, c);
		done += c;
	}
	free(buf);
	w->minor_start = here;
	return err;
}

/* ---- Units ----------------------------------------------------------------------------------- */

static int write_frame(struct rtc_writer *w, uint32_t id, const void *p, size_t len, bool stay);

static int start_unit(struct rtc_writer *w)
{
	static const uint32_t platform = 0x01020304;    /* native order, by definition */
	uint8_t marker[RTC_MARKER_FRAME];
	int err;

	if (w->started)
		w->unit_no++;
	w->started = true;
	w->unit_start = w->pos;
	marker[0] = RTC_S_MARKER << 1;
	memset(marker + 1, RTC_MARKER_BYTE, RTC_MARKER_LEN);
	if ((err = put(w, marker, sizeof(marker))))
		return err;
	crc_fold(w);
	w->crc = 0;                 /* the CRC covers what follows the Marker */
	w->index_pos = w->pos;
	w->next_minor = w->pos + w->u;
	w->crc_pos = w->unit_start + w->U - RTC_CRC_FRAME;
	if ((err = write_index(w, true)))
		return err;
	if (w->unit_no == 0)
		w->meta_pos = w->pos;
	if ((err = write_frame(w, RTC_S_META, w->meta, w->meta_len, true)))
		return err;
	w->need_clk = true;
	return write_frame(w, RTC_S_PLATFORM, &platform, 4, true);
}

static int write_crc(struct rtc_writer *w)
{
	uint8_t f[RTC_CRC_FRAME];
	uint32_t crc;

	crc_fold(w);
	crc = w->crc;
	f[0] = RTC_S_CRC << 1;
	memcpy(f + 1, &crc, 4);                 /* native order (NOTES §4) */
	w->sidx[RTC_S_CRC] = w->pos;
	return put(w, f, sizeof(f));
}

static uint64_t next_stop(const struct rtc_writer *w)
{
	return w->next_minor < w->crc_pos ? w->next_minor : w->crc_pos;
}

/* At a grid point: the Unit's Crc plus the next Unit's header, or a minor index. */
static int boundary(struct rtc_writer *w)
{
	int err;

	if (w->pos == w->crc_pos) {
		if ((err = write_crc(w)))
			return err;
		return start_unit(w);
	}
	err = write_index(w, false);
	w->next_minor += w->u;
	return err;
}

static void mark_index(struct rtc_writer *w, uint32_t id)
{
	if (id >= RTC_S_PLATFORM && w->sidx[id] < w->minor_start)
		w->sidx[id] = w->pos;
}

/*
 * write_frame - one logical frame of stream @id. Variable-length payloads are split into
 * frames of <= 1024 bytes and around grid points (`more` set on all but the last part); a
 * fixed-length frame is never split: the gap is padded and the frame moves past the boundary.
 * With @stay, reaching the Unit's Crc position is an error (callers reserve room first).
 */
static int write_frame(struct rtc_writer *w, uint32_t id, const void *payload, size_t len, bool stay)
{
	const uint8_t *p = payload;
	size_t flen;
	bool fixed = stream_fixed(id, &flen), first = true;
	int err;

	for (;;) {
		uint64_t avail = next_stop(w) - w->pos;
		size_t c, hdr;

		if (avail == 0) {
			if (stay && w->pos == w->crc_pos)
				return -E2BIG;
			if ((err = boundary(w)))
				return err;
			continue;
		}
		if (fixed) {
			if (1 + flen > avail) {
				if ((err = pad(w, avail)))
					return err;
				continue;
			}
			mark_index(w, id);
			if ((err = put_header(w, id, false, false, 0)) || (err = put(w, p, flen)))
				return err;
			return 0;
		}
		c = len < RTC_MAX_PAYLOAD ? len : RTC_MAX_PAYLOAD;
		hdr = uleb128_size((uint64_t)id << 1) + uleb128_size(c);
		if (hdr + c > avail) {
			/* Split at the grid point: as much as fits, the rest after the index. */
			size_t h1 = uleb128_size((uint64_t)id << 1 | 1);

			c = avail > h1 + 1 ? (size_t)(avail - h1 - 1) : 0;
			while (c && h1 + uleb128_size(c) + c > avail)
				c--;
			if (!c) {
				if ((err = pad(w, avail)))
					return err;
				continue;
			}
		}
		if (first)
			mark_index(w, id);
		first = false;
		if ((err = put_header(w, id, c < len, true, c)) || (err = put(w, p, c)))
			return err;
		p += c;
		len -= c;
		if (!len)
			return 0;
	}
}

/* Finishes the current Unit: padding and index frames up to the Crc, then the next header. */
static int next_unit(struct rtc_writer *w)
{
	uint64_t unit = w->unit_no;
	int err;

	while (w->unit_no == unit) {
		if ((err = pad(w, next_stop(w) - w->pos)) || (err = boundary(w)))
			return err;
	}
	return 0;
}

/* Makes sure @need bytes of frames fit in this Unit, index frames they may cross included. */
static int reserve(struct rtc_writer *w, size_t need)
{
	uint64_t slack = ((uint64_t)need / (w->u / 2) + 2) * (w->max_index + 16);

	if (w->pos + need + slack <= w->crc_pos)
		return 0;
	return next_unit(w);
}

/* ---- stream definitions ---------------------------------------------------------------------- */

/* @s as a JSON string (escaped, invalid UTF-8 repaired: Meta must parse as JSON). */
static int json_str(FILE *f, const char *s)
{
	size_t len = strlen(s);
	char *buf = malloc(UTF8_JSON_BOUND(len));

	if (!buf)
		return -ENOMEM;
	fwrite(buf, 1, (size_t)(utf8_put_json(buf, s, len) - buf), f);
	free(buf);
	return 0;
}

static int build_meta(struct rtc_writer *w, struct export_ctx *ctx)
{
	struct atf_session *s = ctx->session;
	FILE *f = open_memstream(&w->meta, &w->meta_len);

	if (!f)
		return -errno;
	fprintf(f, "[{\"id\":%d,\"name\":\"clk\",\"clock\":true,\"format\":\"uint64le\",\"length\":8,"
		"\"gain\":1e-9,\"epoch\":\"boottime\"},", RTC_S_CLK);
	fprintf(f, "{\"id\":%d,\"name\":\"clk delta\",\"clock\":true,\"format\":\"uleb128\","
		"\"gain\":1e-9,\"delta\":\"clk\"},", RTC_S_CLK_DELTA);
	fprintf(f, "{\"id\":%d,\"name\":\"names\",\"format\":\"atftrace-name\"},", RTC_S_NAMES);
	fprintf(f, "{\"id\":%d,\"name\":\"detail\",\"format\":\"atftrace-detail\",\"clock\":\"clk delta\","
		"\"arch\":%d},", RTC_S_DETAIL, ATF_HOST_ARCH);
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_thread *t = &s->threads[i];

		if (w->thread_stream[i] < 0)
			continue;
		fprintf(f, "{\"id\":%d,\"name\":\"thread %u\",\"format\":\"atftrace-call\","
			"\"clock\":\"clk delta\",\"thread\":%u,\"tid\":%u,\"comm\":", w->thread_stream[i],
			t->id, t->id, t->tid);
		if (json_str(f, t->name ? t->name : "")) {
			fclose(f);
			return -ENOMEM;
		}
		fputs("},", f);
	}
	fprintf(f, "%u]", w->nstreams);
	if (fclose(f))
		return -ENOMEM;
	return 0;
}

static int check_geometry(struct rtc_writer *w, struct export_ctx *ctx)
{
	const struct export_options *o = ctx->opts;
	uint64_t index_payload, header;

	w->U = o->unit_size ? o->unit_size : RTC_DEFAULT_UNIT;
	w->u = o->minor_unit_size ? o->minor_unit_size : RTC_DEFAULT_MINOR;
	if (w->u & (w->u - 1) || w->u <= RTC_MARKER_FRAME + 9) {
		export_error(ctx, "--minor-unit-size %llu: must be a power of two above 1034",
			(unsigned long long)w->u);
		return -EINVAL;
	}
	if (w->U & (w->U - 1) || w->U < w->u) {
		export_error(ctx, "--unit-size %llu: must be a power of two >= --minor-unit-size (%llu)",
			(unsigned long long)w->U, (unsigned long long)w->u);
		return -EINVAL;
	}
	index_payload = ULEB128_MAX_LEN + (uint64_t)w->nstreams * 2 * ULEB128_MAX_LEN;
	w->max_index = index_payload + (index_payload / RTC_MAX_PAYLOAD + 1) * 3;
	header = RTC_MARKER_FRAME + w->max_index + w->meta_len + (w->meta_len / RTC_MAX_PAYLOAD + 1) * 3 +
		 (w->meta_len / (w->u / 2) + 1) * (w->max_index + 16) + 5 + 9 + RTC_CRC_FRAME;
	if (w->max_index > w->u / 4 || header + 4096 > w->U) {
		export_error(ctx, "--unit-size %llu / --minor-unit-size %llu: too small for %u streams",
			(unsigned long long)w->U, (unsigned long long)w->u, w->nstreams);
		return -EINVAL;
	}
	w->funcs.name_max = (w->U - header) / 8 < RTC_NAME_MAX ? (size_t)(w->U - header) / 8 : RTC_NAME_MAX;
	return 0;
}

/* ---- export ops ------------------------------------------------------------------------------ */

static int rtc_begin(struct export_ctx *ctx)
{
	struct atf_session *s = ctx->session;
	struct rtc_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	ctx->priv = w;
	w->out = ctx->out;
	w->thread_stream = malloc((s->nthreads ? s->nthreads : 1) * sizeof(*w->thread_stream));
	if (!w->thread_stream)
		return -ENOMEM;
	w->nstreams = RTC_S_THREAD0;
	for (size_t i = 0; i < s->nthreads; i++) {
		bool sel = ctx->opts->thread_id < 0 || (int64_t)s->threads[i].id == ctx->opts->thread_id;

		w->thread_stream[i] = sel ? (int32_t)w->nstreams++ : -1;
	}
	w->sidx = calloc(w->nstreams, sizeof(*w->sidx));
	if (!w->sidx)
		return -ENOMEM;
	if ((err = build_meta(w, ctx)) || (err = check_geometry(w, ctx)))
		return err;
	return start_unit(w);
}

static int rtc_event(struct export_ctx *ctx, const struct export_event *e)
{
	struct rtc_writer *w = ctx->priv;
	uint64_t ts = e->ev.timestamp_ns;
	uint8_t buf[4 * ULEB128_MAX_LEN], clk[8];
	int32_t sid = w->thread_stream[e->thread];
	const struct atf_detail_event *d = e->detail;
	size_t dlen = d && d->hdr.total_length > ATF_DETAIL_EVENT_HDR_SIZE ?
		      d->hdr.total_length - ATF_DETAIL_EVENT_HDR_SIZE : 0;
	int64_t fidx;
	struct func_entry *fn;
	size_t n, need;
	int err;

	if (sid < 0)
		return 0;
	if ((fidx = func_index__get(&w->funcs, e->ev.function_id, e->name)) < 0)
		return (int)fidx;
	fn = &w->funcs.funcs[fidx];
	need = 16 + 16 + 32 + (fn->mark != w->unit_no + 1 ? 32 + strlen(fn->name) : 0) +
	       (d ? 48 + dlen : 0);
	if ((err = reserve(w, need)))
		return err;
	if (w->need_clk || ts < w->clk || ts - w->clk >= RTC_CLK_SPAN) {
		put_le64(clk, ts);
		if ((err = write_frame(w, RTC_S_CLK, clk, 8, true)))
			return err;
		w->clk = ts;
		w->need_clk = false;
		w->have_now = false;    /* a clk frame alone does not move the effective time */
	}
	if (!w->have_now || ts != w->now) {
		n = uleb128_put(buf, ts - w->clk);
		if ((err = write_frame(w, RTC_S_CLK_DELTA, buf, n, true)))
			return err;
		w->now = ts;
		w->have_now = true;
	}
	if (fn->mark != w->unit_no + 1) {
		size_t len = strlen(fn->name);
		uint8_t *rec = malloc(2 * ULEB128_MAX_LEN + len);

		if (!rec)
			return -ENOMEM;
		n = uleb128_put(rec, (uint64_t)fidx);
		n += uleb128_put(rec + n, fn->function_id);
		memcpy(rec + n, fn->name, len);
		err = write_frame(w, RTC_S_NAMES, rec, n + len, true);
		free(rec);
		if (err)
			return err;
		fn->mark = w->unit_no + 1;
	}
	n = uleb128_put(buf, (uint64_t)e->ev.call_depth << 2 | (e->ev.event_kind & 3));
	n += uleb128_put(buf + n, (uint64_t)fidx);
	if ((err = write_frame(w, (uint32_t)sid, buf, n, true)))
		return err;
	if (d) {
		uint8_t *rec = malloc(3 * ULEB128_MAX_LEN + dlen);

		if (!rec)
			return -ENOMEM;
		n = uleb128_put(rec, (uint64_t)sid);
		n += uleb128_put(rec + n, d->hdr.event_type);
		n += uleb128_put(rec + n, d->hdr.flags);
		memcpy(rec + n, d->raw + ATF_DETAIL_EVENT_HDR_SIZE, dlen);
		err = write_frame(w, RTC_S_DETAIL, rec, n + dlen, true);
		free(rec);
	}
	return err;
}

static int rtc_end(struct export_ctx *ctx)
{
	struct rtc_writer *w = ctx->priv;
	int err;

	/* NOTES §4: rulert loads Meta two Units ahead, so make sure the third Unit has begun. */
	while (w->unit_no + 1 < RTC_FIRST_UNITS)
		if ((err = next_unit(w)))
			return err;
	/* The stop Crc must not straddle a grid point either. */
	while (next_stop(w) - w->pos < RTC_CRC_FRAME) {
		if ((err = pad(w, next_stop(w) - w->pos)) || (err = boundary(w)))
			return err;
	}
	if ((err = write_crc(w)))
		return err;
	return stage_flush(w);
}

static void rtc_cleanup(struct export_ctx *ctx)
{
	struct rtc_writer *w = ctx->priv;

	if (!w)
		return;
	func_index__free(&w->funcs);
	free(w->sidx);
	free(w->thread_stream);
	free(w->meta);
	free(w);
	ctx->priv = NULL;
}

const struct export_ops rtc_ops = {
	.name = "rtc",
	.description = "Ruler Trace Container (jhrutgers/ruler-trace; CRC-32/IEEE per Unit)",
	.begin = rtc_begin,
	.event = rtc_event,
	.end = rtc_end,
	.cleanup = rtc_cleanup,
};
