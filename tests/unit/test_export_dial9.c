// SPDX-License-Identifier: MIT
/*
 * dial9 exporter against a strict decoder of the 606e863 format (NOTES.md §2).
 *
 * The decoder rejects everything the reference decoder would silently stop at (unknown tags, a
 * second header, truncation, undefined type ids, unknown field types, non-UTF-8 names or pool
 * entries, over-long LEB128, timestamp overflow) and requires bytes consumed == file size. It
 * also holds the writer to its contract: pooled strings defined once, just before first use;
 * a reset only when the delta needs one, followed by an event with delta 0.
 * The session is written with libatf's writer; the expected events come from the generator's
 * own list, sorted by (timestamp, thread, seq) as the merge promises.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "byteorder.h"
#include "format.h"
#include "export_gen.h"

extern const struct export_ops dial9_ops;

/* The generator's symbol names after UTF-8 repair (Unicode maximal-subpart substitution). */
static const char *const repaired_names[GEN_NSYMS] = {
	"main", "parse_expr", "quote\"back\\slash\ttab\x01",
	"bad\xEF\xBF\xBD\xEF\xBF\xBD(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDutf8",
	"caf\xc3\xa9_\xf0\x9f\x98\x80",
};

/* ---- strict decoder -------------------------------------------------------------------------- */

#define D9_MAX_TYPES  64
#define D9_MAX_FIELDS 32

struct d9_schema {
	bool defined;
	char name[64];
	uint8_t has_ts;
	uint16_t nfields;
	char fname[D9_MAX_FIELDS][32];
	uint8_t ftype[D9_MAX_FIELDS];
};

struct d9_value {
	uint64_t u;                     /* I64, Varint, PooledString id */
	const uint8_t *bytes;           /* Bytes, String */
	uint32_t len;
};

struct d9_event {
	uint16_t type;
	uint64_t ts;
	uint16_t nvals;
	struct d9_value v[D9_MAX_FIELDS];
};

struct d9_decoder {
	const uint8_t *buf;
	size_t len, pos;
	struct d9_schema schema[D9_MAX_TYPES];
	struct { uint32_t id; const uint8_t *s; uint32_t len; } *pool;
	size_t npool;
	int64_t pending_pool;           /* defined, not yet used: the next event must use it */
	bool after_reset;
	uint64_t base;
	unsigned resets;
	struct d9_event *ev;
	size_t nev, cap;
	char err[160];
};

static int d9_fail(struct d9_decoder *d, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(d->err, sizeof(d->err), "offset %zu: ", d->pos);

	va_start(ap, fmt);
	vsnprintf(d->err + n, sizeof(d->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Strict UTF-8: no overlongs, surrogates or code points above U+10FFFF. */
static bool valid_utf8(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp, min;
		unsigned extra;

		if (s[i] < 0x80) { i++; continue; }
		if ((s[i] & 0xE0) == 0xC0) { cp = s[i] & 0x1F; extra = 1; min = 0x80; }
		else if ((s[i] & 0xF0) == 0xE0) { cp = s[i] & 0x0F; extra = 2; min = 0x800; }
		else if ((s[i] & 0xF8) == 0xF0) { cp = s[i] & 0x07; extra = 3; min = 0x10000; }
		else return false;
		if (i + extra >= n)
			return false;
		for (unsigned k = 1; k <= extra; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += extra + 1;
	}
	return true;
}

static bool need(struct d9_decoder *d, size_t n)
{
	return d->len - d->pos >= n;
}

static int d9_leb128(struct d9_decoder *d, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 10; i++) {
		if (!need(d, 1))
			return d9_fail(d, "truncated LEB128");
		uint8_t b = d->buf[d->pos++];

		if (i == 9 && b > 1)
			return d9_fail(d, "LEB128 overflows 64 bits");
		v |= (uint64_t)(b & 0x7F) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return d9_fail(d, "LEB128 longer than 10 bytes");
}

static int d9_schema_frame(struct d9_decoder *d)
{
	struct d9_schema s = { .defined = true };
	uint16_t type_id, nlen;

	if (!need(d, 4))
		return d9_fail(d, "truncated schema");
	type_id = get_le16(d->buf + d->pos);
	nlen = get_le16(d->buf + d->pos + 2);
	d->pos += 4;
	if (type_id >= D9_MAX_TYPES || nlen >= sizeof(s.name))
		return d9_fail(d, "schema %u beyond this decoder's limits", type_id);
	if (!need(d, (size_t)nlen + 3) || !valid_utf8(d->buf + d->pos, nlen))
		return d9_fail(d, "schema name truncated or not UTF-8");
	memcpy(s.name, d->buf + d->pos, nlen);
	d->pos += nlen;
	s.has_ts = d->buf[d->pos++];
	s.nfields = get_le16(d->buf + d->pos);
	d->pos += 2;
	if (s.nfields > D9_MAX_FIELDS)
		return d9_fail(d, "too many fields");
	for (uint16_t i = 0; i < s.nfields; i++) {
		uint16_t flen;
		uint8_t t;

		if (!need(d, 2) || (flen = get_le16(d->buf + d->pos)) >= sizeof(s.fname[0]) ||
		    !need(d, 3u + flen) || !valid_utf8(d->buf + d->pos + 2, flen))
			return d9_fail(d, "field name truncated, too long or not UTF-8");
		memcpy(s.fname[i], d->buf + d->pos + 2, flen);
		d->pos += 2u + flen;
		t = d->buf[d->pos++];
		/* 606e863 knows 1-5 and 7-13; 11-13 are read as varints by Rust, so refuse them too. */
		if (t == 0 || t == 6 || t > 10)
			return d9_fail(d, "field type %u not usable at 606e863", t);
		s.ftype[i] = t;
	}
	if (d->schema[type_id].defined && memcmp(&d->schema[type_id], &s, sizeof(s)))
		return d9_fail(d, "schema %u re-registered differently", type_id);
	d->schema[type_id] = s;
	return 0;
}

static int d9_pool_frame(struct d9_decoder *d)
{
	uint32_t count;

	if (!need(d, 4))
		return d9_fail(d, "truncated pool");
	count = get_le32(d->buf + d->pos);
	d->pos += 4;
	if (count != 1 || d->pending_pool >= 0)
		return d9_fail(d, "pool frame of %u entries, or before the last one was used", count);
	if (!need(d, 8))
		return d9_fail(d, "truncated pool entry");
	uint32_t id = get_le32(d->buf + d->pos), len = get_le32(d->buf + d->pos + 4);

	d->pos += 8;
	if (!need(d, len) || !valid_utf8(d->buf + d->pos, len))
		return d9_fail(d, "pool entry %u truncated or not UTF-8", id);
	for (size_t i = 0; i < d->npool; i++)
		if (d->pool[i].id == id)
			return d9_fail(d, "pool id %u defined twice", id);
	d->pool = realloc(d->pool, (d->npool + 1) * sizeof(*d->pool));
	d->pool[d->npool].id = id;
	d->pool[d->npool].s = d->buf + d->pos;
	d->pool[d->npool++].len = len;
	d->pos += len;
	d->pending_pool = id;
	return 0;
}

static const uint8_t *d9_pool_lookup(const struct d9_decoder *d, uint32_t id, uint32_t *len)
{
	for (size_t i = 0; i < d->npool; i++)
		if (d->pool[i].id == id) {
			*len = d->pool[i].len;
			return d->pool[i].s;
		}
	return NULL;
}

static int d9_value(struct d9_decoder *d, uint8_t type, struct d9_value *v)
{
	uint32_t n;

	switch (type) {
	case 1: case 2:         /* I64, F64 */
		if (!need(d, 8))
			return d9_fail(d, "truncated I64");
		v->u = get_le64(d->buf + d->pos);
		d->pos += 8;
		return 0;
	case 3:
		if (!need(d, 1))
			return d9_fail(d, "truncated Bool");
		v->u = d->buf[d->pos++];
		return 0;
	case 4: case 5:         /* String, Bytes */
		if (!need(d, 4) || (n = get_le32(d->buf + d->pos), !need(d, 4 + (size_t)n)))
			return d9_fail(d, "truncated String/Bytes");
		v->bytes = d->buf + d->pos + 4;
		v->len = n;
		d->pos += 4 + (size_t)n;
		return 0;
	case 7:
		if (!need(d, 4))
			return d9_fail(d, "truncated PooledString");
		v->u = get_le32(d->buf + d->pos);
		d->pos += 4;
		if (!d9_pool_lookup(d, (uint32_t)v->u, &n))
			return d9_fail(d, "PooledString %u used before its definition", (unsigned)v->u);
		if (d->pending_pool == (int64_t)v->u)
			d->pending_pool = -1;
		return 0;
	case 9:
		return d9_leb128(d, &v->u);
	default:
		return d9_fail(d, "field type %u not produced by our writer", type);
	}
}

static int d9_event_frame(struct d9_decoder *d)
{
	struct d9_event e = { 0 };
	const struct d9_schema *s;

	if (!need(d, 2))
		return d9_fail(d, "truncated event");
	e.type = get_le16(d->buf + d->pos);
	d->pos += 2;
	if (e.type >= D9_MAX_TYPES || !(s = &d->schema[e.type])->defined)
		return d9_fail(d, "event of undefined type %u", e.type);
	if (!s->has_ts)
		return d9_fail(d, "our schemas all carry timestamps");
	if (!need(d, 3))
		return d9_fail(d, "truncated delta");
	uint32_t delta = d->buf[d->pos] | d->buf[d->pos + 1] << 8 | (uint32_t)d->buf[d->pos + 2] << 16;

	d->pos += 3;
	if (d->after_reset && delta)
		return d9_fail(d, "event after a reset has delta %u", delta);
	if (d->base > UINT64_MAX - delta)
		return d9_fail(d, "timestamp overflows");
	e.ts = d->base + delta;
	d->base = e.ts;
	d->after_reset = false;
	e.nvals = s->nfields;
	for (uint16_t i = 0; i < s->nfields; i++)
		if (d9_value(d, s->ftype[i], &e.v[i]))
			return -1;
	if (d->pending_pool >= 0)
		return d9_fail(d, "pool id %lld not used by the event after it", (long long)d->pending_pool);
	if (d->nev == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 1024;
		d->ev = realloc(d->ev, d->cap * sizeof(*d->ev));
		assert_non_null(d->ev);
	}
	d->ev[d->nev++] = e;
	return 0;
}

static int d9_reset_frame(struct d9_decoder *d)
{
	uint64_t ts;

	if (!need(d, 8))
		return d9_fail(d, "truncated reset");
	ts = get_le64(d->buf + d->pos);
	d->pos += 8;
	if (d->after_reset)
		return d9_fail(d, "two resets in a row");
	if (ts >= d->base && ts - d->base <= 0xFFFFFF)
		return d9_fail(d, "reset to %llu not needed from base %llu", (unsigned long long)ts,
			       (unsigned long long)d->base);
	d->base = ts;
	d->after_reset = true;
	d->resets++;
	return 0;
}

/* Decodes the whole of @buf; 0, or -1 with d->err. */
static int d9_decode(struct d9_decoder *d, const uint8_t *buf, size_t len)
{
	static const uint8_t header[5] = { 'T', 'R', 'C', 0, 1 };

	memset(d, 0, sizeof(*d));
	d->buf = buf;
	d->len = len;
	d->pending_pool = -1;
	if (len < 5 || memcmp(buf, header, 5))
		return d9_fail(d, "bad header");
	d->pos = 5;
	while (d->pos < d->len) {
		uint8_t tag = d->buf[d->pos++];
		int err;

		if (d->after_reset && tag != 0x02)
			return d9_fail(d, "a reset must be followed by its event");
		switch (tag) {
		case 0x01: err = d9_schema_frame(d); break;
		case 0x02: err = d9_event_frame(d); break;
		case 0x03: err = d9_pool_frame(d); break;
		case 0x05: err = d9_reset_frame(d); break;
		default: return d9_fail(d, "unknown tag 0x%02x", tag);
		}
		if (err)
			return err;
	}
	if (d->after_reset || d->pending_pool >= 0)
		return d9_fail(d, "stream ends after a reset or an unused pool entry");
	return d->pos == d->len ? 0 : d9_fail(d, "consumed %zu of %zu bytes", d->pos, d->len);
}

static void d9_free(struct d9_decoder *d)
{
	free(d->pool);
	free(d->ev);
}

/* ---- comparison with the session ------------------------------------------------------------- */

static const char *expected_name(const struct gen_event *e, char *buf)
{
	uint32_t idx = (uint32_t)e->ev.function_id;

	if (idx >= 1 && idx <= GEN_NSYMS)
		return repaired_names[idx - 1];
	sprintf(buf, "0x%016llx", (unsigned long long)e->ev.function_id);
	return buf;
}

static void check_name(const struct d9_decoder *d, uint64_t pool_id, const char *want)
{
	uint32_t len;
	const uint8_t *s = d9_pool_lookup(d, (uint32_t)pool_id, &len);

	assert_non_null(s);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(s, want, len);
}

/*
 * The schemas name every field as compare() reads it by position: a value under the wrong name
 * (say lr and fp swapped in the schema) would mislead every reader that goes by names.
 */
static void check_schemas(const struct d9_decoder *d)
{
	static const char *const type_names[4] = { "call", "return", "exception", "detail" };
	static const char *const field_names[17] = {
		"thread", "function", "depth", "kind", "flags", "gp0", "gp1", "gp2", "gp3",
		"gp4", "gp5", "gp6", "gp7", "lr", "fp", "sp", "stack",
	};

	for (int t = 0; t < 4; t++) {
		const struct d9_schema *s = &d->schema[t];

		assert_true(s->defined);
		assert_string_equal(s->name, type_names[t]);
		assert_int_equal(s->nfields, t < 3 ? 3 : 17);
		for (uint16_t i = 0; i < s->nfields; i++)
			assert_string_equal(s->fname[i], field_names[i]);
	}
}

/* Decoded events == the expected events (with a detail event after each detailed one). */
static void compare(const struct d9_decoder *d, const struct gen *g, const struct gen_event *const *want, size_t n)
{
	size_t k = 0;
	char buf[32];

	check_schemas(d);

	for (size_t i = 0; i < n; i++) {
		const struct gen_event *w = want[i];
		const struct d9_event *e;

		assert_true(k < d->nev);
		e = &d->ev[k++];
		assert_int_equal(e->type, w->ev.event_kind - 1);     /* call 0, return 1, exception 2 */
		assert_int_equal(e->ts, w->ev.timestamp_ns);
		assert_int_equal(e->v[0].u, GEN_TID0 + w->thread);
		check_name(d, e->v[1].u, expected_name(w, buf));
		assert_int_equal(e->v[2].u, w->ev.call_depth);
		if (!w->has_detail)
			continue;
		assert_true(k < d->nev);
		const struct d9_event *x = &d->ev[k++];

		assert_int_equal(x->type, 3);
		assert_int_equal(x->ts, w->ev.timestamp_ns);
		assert_int_equal(x->v[0].u, GEN_TID0 + w->thread);
		assert_int_equal(x->v[1].u, e->v[1].u);
		assert_int_equal(x->v[2].u, w->ev.call_depth);
		assert_int_equal(x->v[3].u, w->ev.event_kind == ATF_KIND_CALL ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN);
		assert_int_equal(x->v[4].u, w->detail_flags);
		for (int r = 0; r < ATF_DETAIL_GP_REGS; r++)
			assert_int_equal(x->v[5 + r].u, w->pl.gp[r]);
		assert_int_equal(x->v[13].u, w->pl.lr);
		assert_int_equal(x->v[14].u, w->pl.fp);
		assert_int_equal(x->v[15].u, w->pl.sp);
		assert_int_equal(x->v[16].len, w->pl.stack_size);
		if (w->pl.stack_size)
			assert_memory_equal(x->v[16].bytes, w->stack, w->pl.stack_size);
	}
	assert_int_equal(k, d->nev);
	(void)g;
}

/* Resets the stream needs: the first event, and every gap above 0xFFFFFF (order is by time). */
static unsigned needed_resets(const struct gen_event *const *want, size_t n)
{
	unsigned r = 0;

	for (size_t i = 0; i < n; i++)
		r += want[i]->ev.timestamp_ns - (i ? want[i - 1]->ev.timestamp_ns : 0) > 0xFFFFFF;
	return r;
}

static void export_and_check(struct gen *g, int64_t thread, uint64_t from, uint64_t to, size_t min_events)
{
	struct d9_decoder d;
	const struct gen_event **want = calloc(2 * g->n + 1, sizeof(*want));
	size_t n = gen_select(g, thread, from, to, want), len;
	uint8_t *out = gen_export(g, &dial9_ops, thread, from, to, &len);

	assert_true(n >= min_events);
	if (d9_decode(&d, out, len))
		fail_msg("decoder: %s", d.err);
	compare(&d, g, want, n);
	assert_int_equal(d.resets, needed_resets(want, n));
	d9_free(&d);
	free(out);
	free(want);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_roundtrip_three_threads(void **state)
{
	static const uint64_t gaps[] = { 0, 1, 7, 300, 40000, 0xFFFFFF, 0x1000000, 0x7FFFFFFFull };
	struct gen g;

	gen_session(&g, 3, 700, gaps, 8, 0x1234);
	export_and_check(&g, -1, 0, UINT64_MAX, 2100);
	gen_free(&g);
}

/* Single thread: gaps of exactly 0xFFFFFF keep the base, 0x1000000 needs a reset. */
static void test_delta_boundaries(void **state)
{
	static const uint64_t gaps[] = { 0xFFFFFF, 0x1000000 };
	struct gen g;
	unsigned exact = 0;

	gen_session(&g, 1, 300, gaps, 2, 99);
	for (size_t i = 1; i < g.n; i++)
		exact += g.ev[i].ev.timestamp_ns - g.ev[i - 1].ev.timestamp_ns == 0xFFFFFF;
	assert_true(exact > 50 && exact < 250);
	export_and_check(&g, -1, 0, UINT64_MAX, 300);
	gen_free(&g);
}

static void test_thread_and_range(void **state)
{
	static const uint64_t gaps[] = { 3, 1000, 20000000 };
	struct gen g;

	gen_session(&g, 2, 400, gaps, 3, 7);
	uint64_t from = g.ev[g.n / 4].ev.timestamp_ns, to = g.ev[g.n / 2].ev.timestamp_ns;

	export_and_check(&g, 1, from, to, 50);
	export_and_check(&g, -1, to + 1, to + 1, 0);    /* maybe empty: header and schemas only */
	gen_free(&g);
}

/* Hand-built streams: one valid, then one per thing the reference would stop at silently. */
static size_t put_schema(uint8_t *p, uint16_t id, uint8_t ftype)
{
	uint8_t *s = p;

	*p++ = 1; put_le16(p, id); p += 2; put_le16(p, 1); p += 2; *p++ = 'e';
	*p++ = 1; put_le16(p, 1); p += 2; put_le16(p, 1); p += 2; *p++ = 'f'; *p++ = ftype;
	return (size_t)(p - s);
}

static void test_decoder_rejects(void **state)
{
	uint8_t base[64], buf[128];
	struct d9_decoder d;
	size_t n;

	/* header, schema 0 "e" { f: PooledString } with timestamps */
	memcpy(base, "TRC\0\1", 5);
	n = 5 + put_schema(base + 5, 0, 7);
#define TRY(expect_ok, ...) do { \
		const uint8_t extra[] = { __VA_ARGS__ }; \
		memcpy(buf, base, n); \
		memcpy(buf + n, extra, sizeof(extra)); \
		int rc_ = d9_decode(&d, buf, n + sizeof(extra)); \
		if ((rc_ == 0) != (expect_ok)) \
			fail_msg("line %d: rc %d %s", __LINE__, rc_, d.err); \
		d9_free(&d); \
	} while (0)
#define POOL_X 3, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'x'      /* pool { 0: "x" } */
#define RESET_2_24 5, 0, 0, 0, 1, 0, 0, 0, 0                   /* reset to 0x1000000 */
#define EVENT0_X 2, 0, 0, 0, 0, 0, 0, 0, 0, 0                  /* type 0, delta 0, pool 0 */
	TRY(true, POOL_X, RESET_2_24, EVENT0_X);
	TRY(false, POOL_X, RESET_2_24, EVENT0_X, 4);                   /* unknown tag */
	TRY(false, POOL_X, RESET_2_24, 2, 0, 0, 0, 0, 0, 0, 0, 0);     /* truncated event */
	TRY(false, POOL_X, RESET_2_24, EVENT0_X, 'T', 'R', 'C', 0, 1); /* second header */
	TRY(false, 3, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0xff);      /* non-UTF-8 pool entry */
	TRY(false, POOL_X, POOL_X);                                    /* redefined, unused */
	TRY(false, RESET_2_24, EVENT0_X);                              /* pool id never defined */
	TRY(false, POOL_X, RESET_2_24, 2, 9, 0, 0, 0, 0, 0, 0, 0, 0);  /* undefined type id */
	TRY(false, POOL_X, 5, 0, 0, 0, 0, 0, 0, 0, 0, EVENT0_X);       /* reset not needed */
	TRY(false, RESET_2_24, POOL_X, EVENT0_X);                      /* reset not followed by event */
	TRY(false, POOL_X, RESET_2_24, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0);  /* delta after a reset */
	TRY(false, 1, 0, 0, 1, 0, 'e', 1, 1, 0, 1, 0, 'f', 9);         /* schema 0 re-registered */
	TRY(true, 1, 0, 0, 1, 0, 'e', 1, 1, 0, 1, 0, 'f', 7);          /* identically: allowed */
	TRY(false, 1, 1, 0, 1, 0, 'e', 1, 1, 0, 1, 0, 'f', 6);         /* field type 6 */
	TRY(false, 1, 1, 0, 1, 0, 'e', 1, 1, 0, 1, 0, 'f', 14);        /* field type 14 */
	TRY(false, 1, 1, 0, 1, 0, 'e', 1, 1, 0, 1, 0, 'f', 0x89);      /* optional flag 0x80 */
	TRY(false, 1, 1, 0, 1, 0, 0xc0, 1, 0, 0);                      /* non-UTF-8 schema name */
	TRY(true, 1, 1, 0, 1, 0, 'v', 1, 1, 0, 1, 0, 'f', 9, RESET_2_24, 2, 1, 0, 0, 0, 0, 1);
	TRY(false, 1, 1, 0, 1, 0, 'v', 1, 1, 0, 1, 0, 'f', 9, RESET_2_24, 2, 1, 0, 0, 0, 0,
	    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);  /* 11-byte LEB128 */
	TRY(false, 1, 1, 0, 1, 0, 'v', 1, 1, 0, 1, 0, 'f', 9, 5, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    2, 1, 0, 0, 0, 0, 1, 2, 1, 0, 10, 0, 0, 1);                  /* timestamp overflow */
#undef TRY
#undef POOL_X
#undef RESET_2_24
#undef EVENT0_X

	/* A real export with a byte cut off or one byte appended. */
	static const uint64_t gaps[] = { 5, 0x2000000 };
	struct gen g;
	size_t len;

	gen_session(&g, 1, 40, gaps, 2, 3);
	uint8_t *out = gen_export(&g, &dial9_ops, -1, 0, UINT64_MAX, &len);

	assert_int_equal(d9_decode(&d, out, len), 0);
	d9_free(&d);
	assert_int_not_equal(d9_decode(&d, out, len - 1), 0);
	d9_free(&d);
	out = realloc(out, len + 1);
	out[len] = 0x04;
	assert_int_not_equal(d9_decode(&d, out, len + 1), 0);
	assert_non_null(strstr(d.err, "unknown tag 0x04"));
	d9_free(&d);
	free(out);
	gen_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_three_threads),
		cmocka_unit_test(test_delta_boundaries),
		cmocka_unit_test(test_thread_and_range),
		cmocka_unit_test(test_decoder_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
