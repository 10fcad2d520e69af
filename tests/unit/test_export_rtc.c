// SPDX-License-Identifier: MIT
/*
 * RTC exporter against an in-repo RTC reader. The reader walks the ruler strictly: a Marker at
 * every k*Unit, the Index right after it, an index frame at every minor grid point, a Crc frame
 * in each Unit's last 5 bytes, no frame crossing a grid point, no payload over 1024 bytes, index
 * entries pointing exactly where they should. It verifies CRC-32/IEEE per Unit and, when that
 * fails, says whether the reference writer's CRC variant matches instead. It decodes the
 * streams with no state carried across Units, so each Unit is proven self-contained, and
 * compares every event with the session (merged order, ns timestamps, names, nesting, detail).
 */
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "atf.h"
#include "byteorder.h"
#include "format.h"
#include "leb128.h"
#include "export_gen.h"

extern const struct export_ops rtc_ops;

/* ---- the RTC reader -------------------------------------------------------------------------- */

enum { K_UNKNOWN, K_OTHER, K_CLK, K_DELTA, K_NAMES, K_DETAIL, K_THREAD };
enum { CRC_NONE, CRC_IEEE, CRC_REFERENCE, CRC_BAD };
#define MAX_STREAMS 64
#define MAX_FUNCS 256
#define MAX_UNITS 4096

struct dec_event {
	uint32_t thread;                /* thread directory id, from the stream's Meta */
	uint64_t ts, fid, unit, end;    /* end: file offset just past the event frame */
	uint32_t kind, depth;
	char *name;
	bool has_detail;
	uint32_t dtype, dflags, dcrc, dlen;
};

struct stream_def {
	int kind;
	bool fixed;
	uint32_t len, thread;
};

struct rtc_dec {
	const uint8_t *p;
	size_t len;
	uint64_t U, u;
	struct stream_def defs[MAX_STREAMS];
	uint32_t nstreams;
	/* per Unit: nothing survives a Marker except the geometry and the Meta check */
	uint64_t clk, now;
	bool have_clk, have_now;
	char *names[MAX_FUNCS];
	uint64_t fids[MAX_FUNCS];
	uint8_t *acc[MAX_STREAMS];
	size_t acc_len[MAX_STREAMS];
	bool open[MAX_STREAMS];
	bool last_was_event;
	/* index checking */
	uint64_t first_in_minor[MAX_STREAMS], minor_start, index_pos, meta0, unit_no;
	bool history;                   /* reading started at offset 0 */
	/* results */
	struct dec_event *ev;
	size_t nev, cap;
	int crc[MAX_UNITS];
	uint64_t units, whole_units;
	bool stop_crc;
	char err[256];
};

static uint32_t ref_table[256];

/* The reference writer's CRC: MSB-first table for 0x04C11DB7, reflected update (NOTES §4). */
static uint32_t crc_reference(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	if (!ref_table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i << 24;

			for (int k = 0; k < 8; k++)
				v = v & 0x80000000u ? v << 1 ^ 0x04C11DB7u : v << 1;
			ref_table[i] = v;
		}
	while (n--)
		c = c >> 8 ^ ref_table[(c ^ *p++) & 0xff];
	return c ^ 0xFFFFFFFFu;
}

static bool bad(struct rtc_dec *d, uint64_t at, const char *what)
{
	if (!d->err[0])
		snprintf(d->err, sizeof(d->err), "offset %llu: %s", (unsigned long long)at, what);
	return false;
}

/* The default streams, which Meta never lists (NOTES §4). */
static void builtin_streams(struct rtc_dec *d)
{
	memset(d->defs, 0, sizeof(d->defs));
	for (uint32_t k = 0; k < 9; k++)
		d->defs[k].kind = K_OTHER;
	d->defs[0].fixed = d->defs[2].fixed = d->defs[7].fixed = d->defs[8].fixed = true;
	d->defs[2].len = 1024;
	d->defs[7].len = d->defs[8].len = 4;
	if (!d->nstreams)
		d->nstreams = 9;
}

static bool load_meta(struct rtc_dec *d, const uint8_t *p, size_t n, uint64_t at)
{
	json_error_t je;
	json_t *a = json_loadb((const char *)p, n, 0, &je), *o;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) < 1)
		return bad(d, at, "Meta is not a JSON array");
	d->nstreams = (uint32_t)json_integer_value(json_array_get(a, json_array_size(a) - 1));
	if (d->nstreams > MAX_STREAMS || d->nstreams < 9)
		return bad(d, at, "Meta: bad next free id");
	builtin_streams(d);
	json_array_foreach(a, i, o) {
		const char *fmt, *name;
		json_int_t id;

		if (i + 1 == json_array_size(a))
			break;
		id = json_integer_value(json_object_get(o, "id"));
		fmt = json_string_value(json_object_get(o, "format"));
		name = json_string_value(json_object_get(o, "name"));
		if (id < 9 || id >= d->nstreams || !fmt || !name)
			return bad(d, at, "Meta: stream without id, name or format");
		d->defs[id].kind = !strcmp(name, "clk") ? K_CLK : !strcmp(name, "clk delta") ? K_DELTA :
				   !strcmp(fmt, "atftrace-name") ? K_NAMES : !strcmp(fmt, "atftrace-detail") ? K_DETAIL :
				   !strcmp(fmt, "atftrace-call") ? K_THREAD : K_OTHER;
		if (json_object_get(o, "length")) {
			d->defs[id].fixed = true;
			d->defs[id].len = (uint32_t)json_integer_value(json_object_get(o, "length"));
		}
		d->defs[id].thread = (uint32_t)json_integer_value(json_object_get(o, "thread"));
		if (d->defs[id].kind == K_DELTA && strcmp(json_string_value(json_object_get(o, "delta")), "clk"))
			return bad(d, at, "Meta: clk delta is not a delta on clk");
	}
	json_decref(a);
	return true;
}

/* A whole record of a user stream, after its `more` frames are joined. */
static bool dispatch(struct rtc_dec *d, uint32_t id, const uint8_t *p, size_t n, uint64_t unit, uint64_t end)
{
	const uint8_t *e = p + n;
	uint64_t a, b, c;
	size_t k;

	switch (d->defs[id].kind) {
	case K_CLK:
		if (n != 8)
			return bad(d, end, "clk frame not 8 bytes");
		d->clk = get_le64(p);
		d->have_clk = true;
		d->have_now = false;
		break;
	case K_DELTA:
		if (!d->have_clk || !(k = uleb128_get(p, e, &a)) || k != n)
			return bad(d, end, "clk delta without clk, or malformed");
		d->now = d->clk + a;
		d->have_now = true;
		break;
	case K_NAMES:
		if (!(k = uleb128_get(p, e, &a)) || a >= MAX_FUNCS)
			return bad(d, end, "names: bad index");
		p += k;
		if (!(k = uleb128_get(p, e, &b)))
			return bad(d, end, "names: bad function id");
		p += k;
		free(d->names[a]);
		d->names[a] = strndup((const char *)p, (size_t)(e - p));
		d->fids[a] = b;
		d->last_was_event = false;
		return true;
	case K_THREAD: {
		struct dec_event *v;

		if (!(k = uleb128_get(p, e, &a)) || !(k += uleb128_get(p + k, e, &b)) || k != n)
			return bad(d, end, "event: malformed");
		if (b >= MAX_FUNCS || !d->names[b])
			return bad(d, end, "event: function index not named in this Unit");
		if (!d->have_now)
			return bad(d, end, "event: no clk delta since the last clk");
		if (d->nev == d->cap) {
			d->cap = d->cap ? d->cap * 2 : 1024;
			d->ev = realloc(d->ev, d->cap * sizeof(*d->ev));
		}
		v = &d->ev[d->nev++];
		*v = (struct dec_event){ .thread = d->defs[id].thread, .ts = d->now, .fid = d->fids[b],
					 .unit = unit, .end = end, .kind = (uint32_t)(a & 3),
					 .depth = (uint32_t)(a >> 2), .name = strdup(d->names[b]) };
		d->last_was_event = true;
		return true;
	}
	case K_DETAIL: {
		struct dec_event *v = d->nev ? &d->ev[d->nev - 1] : NULL;

		if (!d->last_was_event || !(k = uleb128_get(p, e, &a)))
			return bad(d, end, "detail not right after its event");
		p += k;
		if (!(k = uleb128_get(p, e, &b)))
			return bad(d, end, "detail: malformed");
		p += k;
		if (!(k = uleb128_get(p, e, &c)))
			return bad(d, end, "detail: malformed");
		p += k;
		if (d->defs[a].kind != K_THREAD || d->defs[a].thread != v->thread)
			return bad(d, end, "detail names another thread than its event");
		v->has_detail = true;
		v->dtype = (uint32_t)b;
		v->dflags = (uint32_t)c;
		v->dlen = (uint32_t)(e - p);
		v->dcrc = (uint32_t)crc32(0, p, (uInt)(e - p));
		break;
	}
	default:
		break;
	}
	d->last_was_event = false;
	return true;
}

/*
 * Parses the Index (@full, of the Unit whose Marker is at @base) or an index at @pos and checks
 * every entry against where the streams really were. Returns the bytes used, or 0.
 */
static size_t read_index(struct rtc_dec *d, uint64_t pos, bool full, uint64_t base)
{
	uint8_t buf[8192];
	bool listed[MAX_STREAMS] = { false };
	size_t n = 0, at = (size_t)pos, k;
	uint64_t x, len, last = 0, cnt = 0;
	const uint8_t *q, *e;

	for (bool more = true; more; ) {        /* join the consecutive frames */
		if (!(k = uleb128_get(d->p + at, d->p + d->len, &x)) || (x >> 1) != (full ? 3u : 4u))
			return bad(d, at, full ? "no Index after the Marker" : "no index at a grid point"), 0;
		more = x & 1;
		at += k;
		if (!(k = uleb128_get(d->p + at, d->p + d->len, &len)) || len > 1024 || at + k + len > d->len ||
		    n + len > sizeof(buf))
			return 0;               /* cut (or too long: caught by the frame walk) */
		at += k;
		memcpy(buf + n, d->p + at, len);
		n += len;
		at += len;
	}
	q = buf;
	e = buf + n;
	if (full) {
		if (!(k = uleb128_get(q, e, &cnt)))
			return bad(d, pos, "Index without Unit count"), 0;
		q += k;
		d->unit_no = cnt;
	}
	while (q < e) {
		uint64_t id, off, want;
		bool check = true;

		if (!(k = uleb128_get(q, e, &id)) || !(id & 1))
			return bad(d, pos, "index: entry id without LSb"), 0;
		q += k;
		if (!(k = uleb128_get(q, e, &off)) || (off & 1))
			return bad(d, pos, "index: offset with LSb"), 0;
		q += k;
		id >>= 1;
		off >>= 1;
		if (id >= MAX_STREAMS || (last && id <= last) || id == 0 || id == 1 || id == 2 || id == 6 ||
		    (!full && id == 4) || (!last && id != 3))
			return bad(d, pos, "index: ids not 3 first then ascending, or a hidden id"), 0;
		last = id;
		listed[id] = true;
		if (id == 3) {
			if (full && !d->U)
				d->U = off;
			want = full ? d->U : pos - d->index_pos;
		} else if (id == 4) {
			if (!d->u)
				d->u = off;
			want = d->u;
		} else if (id == 5) {
			want = full && d->unit_no == 0 ? 0 : pos - d->meta0;
			check = d->history || !full;
		} else if (full) {
			want = d->first_in_minor[id] ? pos - d->first_in_minor[id] : 0;
			check = d->history;
		} else {
			want = pos - d->first_in_minor[id];
		}
		if (check && off != want)
			return bad(d, pos, "index entry points to the wrong place"), 0;
	}
	if (full && (!d->U || base % d->U || cnt != base / d->U))
		return bad(d, pos, "Index count does not match the Marker's position"), 0;
	for (uint32_t id = 3; id < d->nstreams; id++) {
		bool want = full ? id != 6 : id == 3 || (id == 5 && d->meta0 >= d->index_pos) ||
			    (id >= 7 && d->first_in_minor[id] >= d->index_pos && d->first_in_minor[id]);

		if (d->nstreams && listed[id] != want)
			return bad(d, pos, full ? "Index does not list every stream" :
				    "index does not list exactly the streams seen since the Index"), 0;
	}
	d->minor_start = pos;
	return at - (size_t)pos;
}

static void reset_unit(struct rtc_dec *d)
{
	d->have_clk = d->have_now = d->last_was_event = false;
	for (int i = 0; i < MAX_FUNCS; i++) {
		free(d->names[i]);
		d->names[i] = NULL;
	}
}

/*
 * rtc_read - decode @len bytes (a whole file, or a cut one) starting at the Marker at @start.
 * Returns false on a structural error (d->err); a cut end is not an error.
 */
static bool rtc_read(struct rtc_dec *d, const uint8_t *p, size_t len, uint64_t start)
{
	uint64_t pos = start;

	d->p = p;
	d->len = len;
	d->history = start == 0;
	builtin_streams(d);
	while (pos < len) {
		uint64_t base = pos, unit_no, crc_start, grid, crc_pos;
		size_t k;

		if (len - pos < 1025)
			break;          /* cut inside the Marker */
		if (p[pos] != 0x04 || p[pos + 1] != 0xB9 || p[pos + 1024] != 0xB9 || (pos + 1025 < len && p[pos + 1025] == 0xB9))
			return bad(d, pos, "no Marker at a Unit boundary");
		for (int i = 1; i <= 1024; i++)
			if (p[pos + i] != 0xB9)
				return bad(d, pos, "Marker damaged");
		reset_unit(d);
		pos += 1025;
		crc_start = d->index_pos = pos;
		if (pos >= len)
			break;
		if (!(k = read_index(d, pos, true, base)))
			return !d->err[0];
		unit_no = d->unit_no;
		if (unit_no >= MAX_UNITS)
			return bad(d, pos, "too many Units for the test reader");
		if (d->units < unit_no + 1)
			d->units = unit_no + 1;
		pos += k;
		grid = crc_start + d->u;
		crc_pos = base + d->U - 5;
		for (;;) {
			uint64_t x, flen, id, hdr = pos, stop = grid < crc_pos ? grid : crc_pos;
			bool more;

			if (pos >= len)
				return true;
			if (pos == grid && grid < crc_pos) {
				if (!(k = read_index(d, pos, false, base)))
					return !d->err[0];
				pos += k;
				grid += d->u;
				continue;
			}
			if (!(k = uleb128_get(p + pos, p + len, &x)))
				return true;    /* cut inside a header */
			id = x >> 1;
			more = x & 1;
			if (id >= d->nstreams || d->defs[id].kind == K_UNKNOWN)
				return bad(d, pos, "frame of an undefined stream");
			if (id == 2 || id == 3 || id == 4)
				return bad(d, pos, "Marker or index frame off the grid");
			pos += k;
			if (d->defs[id].fixed) {
				flen = d->defs[id].len;
				if (more)
					return bad(d, hdr, "fixed-length frame split");
			} else {
				if (!(k = uleb128_get(p + pos, p + len, &flen)))
					return true;
				if (flen > 1024)
					return bad(d, hdr, "payload over 1024 bytes");
				pos += k;
			}
			if (pos + flen > len)
				return true;    /* cut inside the payload */
			if (id == 8) {          /* Crc: at the Unit's end, or the stop Crc */
				uint32_t want = (uint32_t)crc32(0, p + crc_start, (uInt)(hdr - crc_start)), got;

				memcpy(&got, p + pos, 4);
				d->crc[unit_no] = got == want ? CRC_IEEE :
						  got == crc_reference(p + crc_start, hdr - crc_start) ? CRC_REFERENCE : CRC_BAD;
				if (hdr != crc_pos) {
					if (pos + 4 != len)
						return bad(d, hdr, "data after the stop Crc");
					d->stop_crc = true;
					return true;
				}
				d->whole_units = unit_no + 1;
				d->first_in_minor[8] = hdr;
				pos += 4;
				break;
			}
			if (pos + flen > stop)
				return bad(d, hdr, "frame crosses a grid point");
			if (id >= 5 && id != 6 && !d->open[id] && d->first_in_minor[id] < d->minor_start)
				d->first_in_minor[id] = hdr;
			if (id == 5 && unit_no == 0 && !d->open[id])
				d->meta0 = hdr;
			if (id >= 5 && id != 6 && id != 7) {
				d->acc[id] = realloc(d->acc[id], d->acc_len[id] + flen + 1);
				memcpy(d->acc[id] + d->acc_len[id], p + pos, flen);
				d->acc_len[id] += flen;
				d->open[id] = more;
				if (!more) {
					bool ok = id == 5 ? load_meta(d, d->acc[id], d->acc_len[id], hdr) :
						  dispatch(d, (uint32_t)id, d->acc[id], d->acc_len[id], unit_no, pos + flen);

					d->acc_len[id] = 0;
					if (!ok)
						return false;
				}
			}
			pos += flen;
		}
		for (uint32_t id = 0; id < MAX_STREAMS; id++)
			if (d->open[id])
				return bad(d, pos, "a record continues across a Unit boundary");
	}
	return true;
}

static void rtc_dec_free(struct rtc_dec *d)
{
	reset_unit(d);
	for (size_t i = 0; i < d->nev; i++)
		free(d->ev[i].name);
	for (int i = 0; i < MAX_STREAMS; i++)
		free(d->acc[i]);
	free(d->ev);
	memset(d, 0, sizeof(*d));
}

/* ---- expected events, export, comparison ------------------------------------------------- */

struct expect {
	struct dec_event *ev;
	size_t n;
};

static struct expect expected_range(struct atf_session *s, int64_t thread_id, uint64_t to_ns);

static struct expect expected(struct atf_session *s, int64_t thread_id)
{
	return expected_range(s, thread_id, UINT64_MAX);
}

static struct expect expected_range(struct atf_session *s, int64_t thread_id, uint64_t to_ns)
{
	struct expect x = { 0 };
	struct atf_merge *m;
	struct atf_merge_event me;
	size_t cap = 0;
	char buf[32];

	assert_int_equal(atf_merge__new(&m, s, 0, to_ns, thread_id), 0);
	while (atf_merge__next(m, &me) > 0) {
		const struct atf_thread *t = &s->threads[me.thread];
		struct atf_detail_event de;
		struct dec_event *v;

		if (x.n == cap) {
			cap = cap ? cap * 2 : 1024;
			x.ev = realloc(x.ev, cap * sizeof(*x.ev));
		}
		v = &x.ev[x.n++];
		*v = (struct dec_event){ .thread = t->id, .ts = me.ev.timestamp_ns, .fid = me.ev.function_id,
					 .kind = me.ev.event_kind, .depth = me.ev.call_depth,
					 .name = strdup(atf_session__name(s, me.ev.function_id, buf, sizeof(buf))) };
		if (me.ev.detail_seq != ATF_NO_DETAIL && t->has_detail &&
		    atf_detail_get(&t->detail, me.ev.detail_seq, &de) == 0) {
			v->has_detail = true;
			v->dtype = de.hdr.event_type;
			v->dflags = de.hdr.flags;
			v->dlen = de.hdr.total_length - ATF_DETAIL_EVENT_HDR_SIZE;
			v->dcrc = (uint32_t)crc32(0, de.raw + ATF_DETAIL_EVENT_HDR_SIZE, v->dlen);
		}
	}
	atf_merge__free(m);
	return x;
}

static void expect_free(struct expect *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->ev[i].name);
	free(x->ev);
}

/* Event @got equals @want; @detail_too false for a last event whose detail may be cut off. */
static void same_event(const struct dec_event *got, const struct dec_event *want, bool detail_too, size_t i)
{
	if (got->ts != want->ts || got->thread != want->thread || got->fid != want->fid ||
	    got->kind != want->kind || got->depth != want->depth ||
	    strncmp(got->name, want->name, 1024) ||
	    (detail_too && (got->has_detail != want->has_detail || (want->has_detail &&
	     (got->dtype != want->dtype || got->dflags != want->dflags || got->dlen != want->dlen ||
	      got->dcrc != want->dcrc)))))
		fail_msg("event %zu differs: got thread %u ts %llu kind %u depth %u name %.40s detail %d; "
			 "want thread %u ts %llu kind %u depth %u name %.40s detail %d", i, got->thread,
			 (unsigned long long)got->ts, got->kind, got->depth, got->name, got->has_detail,
			 want->thread, (unsigned long long)want->ts, want->kind, want->depth, want->name,
			 want->has_detail);
}

static uint8_t *export_rtc_range(struct atf_session *s, const char *name, uint32_t U, uint32_t u,
				 int64_t thread_id, uint64_t to_ns, size_t *len)
{
	struct export_options o = { .thread_id = thread_id, .to_ns = to_ns, .unit_size = U,
				    .minor_unit_size = u };
	char path[300];
	struct stat st;
	uint8_t *buf;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.rtc", gen_tmpdir, name);
	o.out_path = path;
	assert_int_equal(export_session(s, &rtc_ops, &o), 0);
	assert_int_equal(stat(path, &st), 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

static uint8_t *export_rtc(struct atf_session *s, const char *name, uint32_t U, uint32_t u,
			   int64_t thread_id, size_t *len)
{
	return export_rtc_range(s, name, U, u, thread_id, UINT64_MAX, len);
}

/* Reads the whole file and checks it event by event against the session. */
static void check_whole(const uint8_t *p, size_t len, struct rtc_dec *d, const struct expect *x)
{
	memset(d, 0, sizeof(*d));
	if (!rtc_read(d, p, len, 0))
		fail_msg("reader: %s", d->err);
	assert_true(d->stop_crc);
	assert_true(d->units >= 3);     /* NOTES §4: the third Unit has begun */
	assert_int_equal(len % d->U > 0, 1);
	for (uint64_t k = 0; k < d->units; k++)
		if (d->crc[k] != CRC_IEEE)
			fail_msg("Unit %llu: CRC status %d", (unsigned long long)k, d->crc[k]);
	assert_int_equal(d->nev, x->n);
	for (size_t i = 0; i < x->n; i++)
		same_event(&d->ev[i], &x->ev[i], true, i);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_crc_variants(void **state)
{
	assert_int_equal(crc32(0, (const uint8_t *)"123456789", 9), 0xCBF43926u);
	assert_int_equal(crc_reference((const uint8_t *)"123456789", 9), 0x7EAD5C77u);
}

static void test_roundtrip_long_names(void **state)
{
	struct gen_params g = { .threads = 3, .events = 4000, .depth = 6, .detail_every = 5, .nfuncs = 20,
				.seed = 7, .long_name = true };
	struct atf_session *s = gen_params_session("rt", &g);
	struct expect x = expected(s, -1);
	struct rtc_dec d;
	size_t len;
	uint8_t *p = export_rtc(s, "rt", 64 << 10, 4 << 10, -1, &len);
	bool split = false;

	check_whole(p, len, &d, &x);
	assert_int_equal(d.U, 64 << 10);
	assert_int_equal(d.u, 4 << 10);
	for (size_t i = 0; i < d.nev; i++)
		if (strlen(d.ev[i].name) == 1024)
			split = true;   /* the 1500-byte name, cut to 1024, needed two frames */
	assert_true(split);
	rtc_dec_free(&d);
	expect_free(&x);
	free(p);
	atf_session__close(s);
}

static struct atf_session *small_units_session(struct expect *x)
{
	struct gen_params g = { .threads = 3, .events = 3000, .depth = 9, .detail_every = 4, .nfuncs = 40,
				.seed = 99 };
	struct atf_session *s = gen_params_session("small", &g);

	*x = expected(s, -1);
	return s;
}

static void test_truncated_stays_readable(void **state)
{
	struct expect x;
	struct atf_session *s = small_units_session(&x);
	struct rtc_dec full, d;
	size_t len, cuts = 0;
	uint8_t *p = export_rtc(s, "trunc", 8192, 2048, -1, &len);

	check_whole(p, len, &full, &x);
	assert_true(full.units > 20);
	for (uint64_t c = 0; c <= len; c += len / 37 + 1) {
		uint64_t cuts_at[] = { c, (c / 8192) * 8192, (c / 8192) * 8192 + 1, (c / 8192) * 8192 - 1,
				       (c / 8192) * 8192 + 1030, (c / 8192) * 8192 + 2048 + 1025 };

		for (size_t j = 0; j < sizeof(cuts_at) / sizeof(cuts_at[0]); j++) {
			uint64_t cut = cuts_at[j], whole_end = cut / 8192 * 8192;
			uint8_t *q;
			size_t lo = 0, hi = 0;

			if (cut > len)
				continue;
			q = malloc(cut ? cut : 1);     /* exact size: ASan catches any read past the cut */
			memcpy(q, p, cut);
			memset(&d, 0, sizeof(d));
			if (!rtc_read(&d, q, cut, 0))
				fail_msg("cut at %llu: %s", (unsigned long long)cut, d.err);
			while (lo < full.nev && full.ev[lo].end <= whole_end)
				lo++;
			while (hi < full.nev && full.ev[hi].end <= cut)
				hi++;
			if (d.nev < lo || d.nev > hi)
				fail_msg("cut at %llu: %zu events, want %zu..%zu", (unsigned long long)cut, d.nev, lo, hi);
			for (size_t i = 0; i < d.nev; i++)
				same_event(&d.ev[i], &x.ev[i], i + 1 < d.nev, i);
			for (uint64_t k = 0; k < d.whole_units; k++)
				assert_int_equal(d.crc[k], CRC_IEEE);
			assert_true(d.whole_units >= (cut >= 8192 ? cut / 8192 : 0));
			rtc_dec_free(&d);
			free(q);
			cuts++;
		}
	}
	assert_true(cuts > 150);
	rtc_dec_free(&full);
	expect_free(&x);
	free(p);
	atf_session__close(s);
}

static void test_start_at_any_unit(void **state)
{
	struct expect x;
	struct atf_session *s = small_units_session(&x);
	struct rtc_dec full, d;
	size_t len;
	uint8_t *p = export_rtc(s, "start", 8192, 2048, -1, &len);

	check_whole(p, len, &full, &x);
	for (uint64_t k = 1; k < full.units; k++) {
		size_t first = 0;

		while (first < full.nev && full.ev[first].unit < k)
			first++;
		memset(&d, 0, sizeof(d));
		if (!rtc_read(&d, p, len, k * 8192))
			fail_msg("start at Unit %llu: %s", (unsigned long long)k, d.err);
		assert_int_equal(d.nev, full.nev - first);
		for (size_t i = 0; i < d.nev; i++)
			same_event(&d.ev[i], &x.ev[first + i], true, first + i);
		rtc_dec_free(&d);
	}
	rtc_dec_free(&full);
	expect_free(&x);
	free(p);
	atf_session__close(s);
}

static void test_reference_crc_variant_named(void **state)
{
	struct expect x;
	struct atf_session *s = small_units_session(&x);
	struct rtc_dec d;
	size_t len;
	uint8_t *p = export_rtc(s, "crcvar", 8192, 2048, -1, &len);
	uint32_t ref = crc_reference(p + 8192 + 1025, 8192 - 1025 - 5);

	memcpy(p + 2 * 8192 - 4, &ref, 4);      /* Unit 1 as the reference writer would seal it */
	p[3 * 8192 - 2] ^= 0x5a;                /* Unit 2: a damaged Crc */
	memset(&d, 0, sizeof(d));
	assert_true(rtc_read(&d, p, len, 0));
	assert_int_equal(d.crc[0], CRC_IEEE);
	assert_int_equal(d.crc[1], CRC_REFERENCE);
	assert_int_equal(d.crc[2], CRC_BAD);
	assert_int_equal(d.crc[3], CRC_IEEE);
	rtc_dec_free(&d);
	expect_free(&x);
	free(p);
	atf_session__close(s);
}

static void test_geometry_validated(void **state)
{
	struct gen_params g = { .threads = 1, .events = 10, .depth = 3, .nfuncs = 3, .seed = 1 };
	struct atf_session *s = gen_params_session("geom", &g);
	static const uint32_t bad[][2] = { { 3000, 2048 }, { 8192, 1024 }, { 4096, 8192 }, { 8192, 3000 },
					   { 4096, 2048 } };
	char path[300];

	snprintf(path, sizeof(path), "%s/geom.rtc", gen_tmpdir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct export_options o = { .out_path = path, .thread_id = -1, .to_ns = UINT64_MAX,
					    .unit_size = bad[i][0], .minor_unit_size = bad[i][1] };

		assert_int_equal(export_session(s, &rtc_ops, &o), -EINVAL);
		assert_int_equal(access(path, F_OK), -1);       /* no partial file left */
	}
	atf_session__close(s);
}

static void test_default_geometry_three_units(void **state)
{
	struct gen_params g = { .threads = 2, .events = 50, .depth = 4, .detail_every = 3, .nfuncs = 5, .seed = 3 };
	struct atf_session *s = gen_params_session("dflt", &g);
	struct expect x = expected(s, -1);
	struct rtc_dec d;
	size_t len;
	uint8_t *p = export_rtc(s, "dflt", 0, 0, -1, &len);

	check_whole(p, len, &d, &x);
	assert_int_equal(d.U, 1 << 20);
	assert_int_equal(d.u, 128 << 10);
	assert_int_equal(d.units, 3);
	assert_true(len > 2u << 20 && len < (2u << 20) + 4096);
	rtc_dec_free(&d);
	expect_free(&x);
	free(p);
	atf_session__close(s);
}

static void test_thread_filter(void **state)
{
	struct gen_params g = { .threads = 3, .events = 500, .depth = 5, .detail_every = 2, .nfuncs = 8, .seed = 5 };
	struct atf_session *s = gen_params_session("filter", &g);
	struct expect x = expected(s, 1);
	struct rtc_dec d;
	size_t len;
	uint8_t *p = export_rtc(s, "filter", 8192, 2048, 1, &len);

	check_whole(p, len, &d, &x);
	assert_int_equal(d.nstreams, 14);       /* clk, clk delta, names, detail, one thread */
	rtc_dec_free(&d);
	expect_free(&x);
	free(p);
	atf_session__close(s);
}

/* Every length of export from 1 to 400 events: padding of every size up to the grid points. */
static void test_every_padding_size(void **state)
{
	struct gen_params g = { .threads = 2, .events = 200, .depth = 5, .detail_every = 9, .nfuncs = 6, .seed = 11 };
	struct atf_session *s = gen_params_session("pad", &g);
	struct expect all = expected(s, -1);

	for (size_t k = 0; k < all.n; k++) {
		struct expect x = expected_range(s, -1, all.ev[k].ts);
		struct rtc_dec d;
		size_t len;
		uint8_t *p = export_rtc_range(s, "pad", 8192, 2048, -1, all.ev[k].ts, &len);

		check_whole(p, len, &d, &x);
		rtc_dec_free(&d);
		expect_free(&x);
		free(p);
	}
	expect_free(&all);
	atf_session__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_variants),
		cmocka_unit_test(test_roundtrip_long_names),
		cmocka_unit_test(test_truncated_stays_readable),
		cmocka_unit_test(test_start_at_any_unit),
		cmocka_unit_test(test_reference_crc_variant_named),
		cmocka_unit_test(test_geometry_validated),
		cmocka_unit_test(test_default_geometry_three_units),
		cmocka_unit_test(test_thread_filter),
		cmocka_unit_test(test_every_padding_size),
	};

	return cmocka_run_group_tests(tests, gen_tmp_setup, gen_tmp_teardown);
}
