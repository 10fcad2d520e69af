/* SPDX-License-Identifier: MIT */
/*
 * In-repo RTC reader for test_export_rtc.c. It walks the ruler strictly: a Marker at every
 * k*Unit, the Index right after it, an index frame at every minor grid point, a Crc frame in
 * each Unit's last 5 bytes, no frame crossing a grid point, no payload over 1024 bytes, index
 * entries pointing exactly where they should. It verifies CRC-32/IEEE per Unit and, when that
 * fails, says whether the reference writer's CRC variant matches instead. It decodes the
 * streams with no state carried across Units, so each Unit is proven self-contained.
 * rtc_read() returns false with d->err set at the first violation; results are in d->ev.
 */
#ifndef RTC_READER_H
#define RTC_READER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "byteorder.h"
#include "leb128.h"

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

#endif
