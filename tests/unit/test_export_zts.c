// SPDX-License-Identifier: MIT
/*
 * ZTS0 exporter against a decoder built on liblz4, zlib and Debian's libcbor streaming decoder.
 * The container is checked as RawTraceDataFile.read does (big-endian header and chunk heads,
 * CRC over the compressed bytes, exact lsize/csize), and the CBOR item by item as
 * TraceDataReader does (tag 8 + indefinite array, tag 14 + definite map with valid keys only,
 * tag 9 attribute maps, break closes a call). The decoded calls are turned back into
 * call/return events and compared with the session thread by thread, with CALLS, DURATION,
 * ERRORS and FLAGS recomputed from the nesting.
 */
#include <cbor.h>
#include <errno.h>
#include <ftw.h>
#include <lz4.h>
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
#include "export_gen.h"
#include "utf8.h"

extern const struct export_ops zts_ops;

#define WALL_MS 1714564800250ull        /* 2024-05-01T12:00:00.250Z */
#define T0 GEN_PARAMS_T0                 /* manifest time_start_ns */
#define TRACKED_DEPTH 16384             /* frames below this carry only TSTART/TSTOP (zts.c) */

/* ---- CBOR tokens through libcbor's streaming decoder ---------------------------------------- */

enum tok_kind { T_NONE, T_UINT, T_NINT, T_BYTES, T_TEXT, T_ARRAY, T_IARRAY, T_MAP, T_IMAP, T_TAG,
		T_BOOL, T_NULL, T_UNDEF, T_BREAK, T_OTHER };

struct tok {
	enum tok_kind kind;
	uint64_t v;
	const uint8_t *s;
	size_t len;
};

#define TOKV(fn, type, k) static void fn(void *c, type v) { *(struct tok *)c = (struct tok){ .kind = k, .v = v }; }
TOKV(t_u8, uint8_t, T_UINT)
TOKV(t_u16, uint16_t, T_UINT)
TOKV(t_u32, uint32_t, T_UINT)
TOKV(t_u64, uint64_t, T_UINT)
TOKV(t_n8, uint8_t, T_NINT)
TOKV(t_n16, uint16_t, T_NINT)
TOKV(t_n32, uint32_t, T_NINT)
TOKV(t_n64, uint64_t, T_NINT)
TOKV(t_arr, size_t, T_ARRAY)
TOKV(t_map, size_t, T_MAP)
TOKV(t_tag, uint64_t, T_TAG)
TOKV(t_bool, bool, T_BOOL)
static void t_text(void *c, cbor_data p, size_t n) { *(struct tok *)c = (struct tok){ .kind = T_TEXT, .s = p, .len = n }; }
static void t_bytes(void *c, cbor_data p, size_t n) { *(struct tok *)c = (struct tok){ .kind = T_BYTES, .s = p, .len = n }; }
static void t_iarr(void *c) { ((struct tok *)c)->kind = T_IARRAY; }
static void t_imap(void *c) { ((struct tok *)c)->kind = T_IMAP; }
static void t_brk(void *c) { ((struct tok *)c)->kind = T_BREAK; }
static void t_null(void *c) { ((struct tok *)c)->kind = T_NULL; }
static void t_undef(void *c) { ((struct tok *)c)->kind = T_UNDEF; }
static void t_other(void *c) { ((struct tok *)c)->kind = T_OTHER; }
static void t_f4(void *c, float f) { ((struct tok *)c)->kind = T_OTHER; }
static void t_f8(void *c, double f) { ((struct tok *)c)->kind = T_OTHER; }

static const struct cbor_callbacks tok_cb = {
	.uint8 = t_u8, .uint16 = t_u16, .uint32 = t_u32, .uint64 = t_u64,
	.negint8 = t_n8, .negint16 = t_n16, .negint32 = t_n32, .negint64 = t_n64,
	.byte_string_start = t_other, .byte_string = t_bytes, .string = t_text, .string_start = t_other,
	.indef_array_start = t_iarr, .array_start = t_arr, .indef_map_start = t_imap, .map_start = t_map,
	.tag = t_tag, .float2 = t_f4, .float4 = t_f4, .float8 = t_f8, .undefined = t_undef,
	.null = t_null, .boolean = t_bool, .indef_break = t_brk,
};

/* ---- the trace decoder ------------------------------------------------------------------- */

struct dec_event {
	uint32_t tid, kind, depth;
	uint64_t ts;
	char name[64];
	bool has_args, has_ret, unfinished;
	uint64_t reg0, reg1;
};

struct frame {
	size_t call;                    /* index of its call event */
	uint64_t tstart, tstop, duration, calls, errors, flags, method;
	bool has_tstart, has_tstop, has_duration, has_calls, has_errors, has_tstamp;
	uint64_t tstamp;
	uint64_t sub_calls, sub_errors; /* recomputed from the children */
	bool error, seen_attrs;
	struct dec_event end;           /* what the closing attributes say about the return */
};

struct zdec {
	const uint8_t *p;
	size_t len, pos;
	struct dec_event *ev;
	size_t nev, cap;
	struct frame *stack;
	size_t depth, stack_cap;
	uint32_t tid;
	char *mnames[4096];             /* METHOD id -> name: must stay one-to-one */
	uint64_t traces, chunks, max_lsize;
	char err[200];
};

static bool zfail(struct zdec *z, const char *what)
{
	if (!z->err[0])
		snprintf(z->err, sizeof(z->err), "at %zu: %s", z->pos, what);
	return false;
}

static bool next(struct zdec *z, struct tok *t)
{
	struct cbor_decoder_result r;

	*t = (struct tok){ 0 };
	if (z->pos >= z->len)
		return zfail(z, "data ends inside an item");
	/*
	 * libcbor 0.8 (Debian 12) rejects the one-byte heads of the unassigned tags 6..20 with
	 * CBOR_DECODER_ERROR, and zorka uses tags 8, 9, 14 and 15. Such a head is the whole tag
	 * (major type 6, value in the low 5 bits), so take just that byte ourselves.
	 */
	if (z->p[z->pos] >= 0xC6 && z->p[z->pos] <= 0xD4) {
		t->kind = T_TAG;
		t->v = z->p[z->pos++] & 0x1f;
		return true;
	}
	r = cbor_stream_decode(z->p + z->pos, z->len - z->pos, &tok_cb, t);
	if (r.status != CBOR_DECODER_FINISHED)
		return zfail(z, "malformed or cut CBOR");
	z->pos += r.read;
	return true;
}

static struct dec_event *new_event(struct zdec *z)
{
	if (z->nev == z->cap) {
		z->cap = z->cap ? z->cap * 2 : 4096;
		z->ev = realloc(z->ev, z->cap * sizeof(*z->ev));
	}
	memset(&z->ev[z->nev], 0, sizeof(z->ev[0]));
	return &z->ev[z->nev++];
}

static bool trace_info(struct zdec *z, struct frame *f)
{
	struct tok t, k, v;

	if (!next(z, &t) || t.kind != T_MAP || t.v < 1)
		return zfail(z, "TRACE_INFO is not a definite map with an entry");
	for (uint64_t i = 0; i < t.v; i++) {
		if (!next(z, &k) || !next(z, &v) || k.kind != T_UINT || v.kind != T_UINT)
			return zfail(z, "TRACE_INFO entry not uint: uint");
		switch (k.v) {
		case 0x05: f->tstamp = v.v; f->has_tstamp = true; break;
		case 0x06: f->duration = v.v; f->has_duration = true; break;
		case 0x09: f->calls = v.v; f->has_calls = true; break;
		case 0x0A: f->errors = v.v; f->has_errors = true; break;
		case 0x0B: f->flags = v.v; break;
		case 0x0C: f->tstart = v.v; f->has_tstart = true; z->ev[f->call].ts = v.v; break;
		case 0x0D: f->tstop = v.v; f->has_tstop = true; break;
		case 0x0E: f->method = v.v; break;
		default:
			return zfail(z, "TRACE_INFO key the reference reader rejects");
		}
	}
	return true;
}

/* The first attribute map of a call describes the call; a later one, its return. */
static bool attrs(struct zdec *z, struct frame *f)
{
	struct tok t, k, v, x;
	bool closing = f->seen_attrs;
	struct dec_event *e = closing ? &f->end : &z->ev[f->call];

	f->seen_attrs = true;
	if (!next(z, &t) || t.kind != T_MAP)
		return zfail(z, "attributes are not a definite map");
	for (uint64_t i = 0; i < t.v; i++) {
		if (!next(z, &k) || k.kind != T_TEXT || !next(z, &v))
			return zfail(z, "attribute key not a string");
		if (k.len == 6 && !memcmp(k.s, "method", 6) && v.kind == T_TEXT && !closing) {
			snprintf(e->name, sizeof(e->name), "%.*s", (int)v.len, (const char *)v.s);
		} else if (k.len == 6 && !memcmp(k.s, "thread", 6) && v.kind == T_TEXT) {
			continue;
		} else if (k.len == 3 && !memcmp(k.s, "tid", 3) && v.kind == T_UINT && z->depth == 1) {
			z->tid = (uint32_t)v.v;
			e->tid = z->tid;
		} else if ((k.len == 4 && !memcmp(k.s, "args", 4)) || (k.len == 3 && !memcmp(k.s, "ret", 3))) {
			if (v.kind != T_ARRAY)
				return zfail(z, "args/ret not an array");
			for (uint64_t j = 0; j < v.v; j++) {
				if (!next(z, &x) || x.kind != T_UINT)
					return zfail(z, "register not a uint");
				if (j == 0)
					e->reg0 = x.v;
				if (j == 1)
					e->reg1 = x.v;
			}
			if (k.len == 4)
				e->has_args = true;
			else
				e->has_ret = true;
		} else if (k.len == 10 && !memcmp(k.s, "unfinished", 10) && v.kind == T_BOOL) {
			e->unfinished = true;
		} else {
			return zfail(z, "unexpected attribute");
		}
	}
	return true;
}

/* One chunk's logical bytes, item by item, as TraceDataReader.process() reads them. */
static bool decode_items(struct zdec *z, const uint8_t *p, size_t len)
{
	struct tok t, u;

	z->p = p;
	z->len = len;
	z->pos = 0;
	while (z->pos < z->len) {
		struct frame *f = z->depth ? &z->stack[z->depth - 1] : NULL;

		if (!next(z, &t))
			return false;
		if (t.kind == T_BREAK) {
			struct dec_event *e;

			if (!f)
				return zfail(z, "break outside a call");
			if (!f->has_tstart || !f->has_tstop || f->tstop < f->tstart)
				return zfail(z, "call without TSTART/TSTOP");
			if (f->has_tstamp != (z->depth == 1) ||
			    (f->has_tstamp && f->tstamp != WALL_MS + (f->tstart - T0) / 1000000))
				return zfail(z, "TSTAMP wrong, missing, or not on a top-level call");
			if (z->depth - 1 < TRACKED_DEPTH) {
				if (!f->has_duration || f->duration != f->tstop - f->tstart ||
				    !f->has_calls || f->calls != f->sub_calls + 1 ||
				    (f->sub_errors + f->error) != (f->has_errors ? f->errors : 0))
					return zfail(z, "DURATION, CALLS or ERRORS disagree with the nesting");
			}
			e = new_event(z);
			*e = f->end;
			e->tid = z->tid;
			e->kind = f->flags & 0x08 ? ATF_KIND_EXCEPTION : ATF_KIND_RETURN;
			e->ts = f->tstop;
			e->depth = (uint32_t)z->depth - 1;
			snprintf(e->name, sizeof(e->name), "%s", z->ev[f->call].name);
			if (f->method >= 4096 || !f->method)
				return zfail(z, "METHOD missing or huge");
			if (!z->mnames[f->method])
				z->mnames[f->method] = strdup(e->name);
			else if (strcmp(z->mnames[f->method], e->name))
				return zfail(z, "one METHOD id, two names");
			if (z->depth >= 2) {
				z->stack[z->depth - 2].sub_calls += f->sub_calls + 1;
				z->stack[z->depth - 2].sub_errors += f->sub_errors + (f->flags & 0x08 ? 1 : 0);
			}
			z->depth--;
			continue;
		}
		if (t.kind != T_TAG)
			return zfail(z, "expected a tagged item");
		switch (t.v) {
		case 8:
			if (!next(z, &u) || u.kind != T_IARRAY)
				return zfail(z, "tag 8 without an indefinite array");
			if (z->depth == z->stack_cap) {
				z->stack_cap = z->stack_cap ? z->stack_cap * 2 : 64;
				z->stack = realloc(z->stack, z->stack_cap * sizeof(*z->stack));
			}
			z->stack[z->depth] = (struct frame){ .call = z->nev };
			new_event(z)->kind = ATF_KIND_CALL;
			z->ev[z->nev - 1].depth = (uint32_t)z->depth;
			z->ev[z->nev - 1].tid = z->tid;
			if (++z->depth == 1)
				z->traces++;
			break;
		case 14:
			if (!f || !trace_info(z, f))
				return zfail(z, "TRACE_INFO outside a call");
			if (f->flags & 0x08)
				f->error = true;
			break;
		case 9:
			if (!f || !attrs(z, f))
				return zfail(z, "attributes outside a call");
			break;
		default:
			return zfail(z, "tag TraceDataReader rejects");
		}
	}
	return true;
}

/* ---- the container ----------------------------------------------------------------------- */

static bool read_store(struct zdec *z, const char *out, uint32_t want_flags)
{
	char path[400], line[200];
	uint8_t *file, *lbuf;
	size_t len, pos = 16;
	struct stat st;
	bool ok = true, props = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/000001/config.props", out);
	f = fopen(path, "r");
	if (!f)
		return zfail(z, "no config.props");
	while (fgets(line, sizeof(line), f)) {
		unsigned v;

		if (sscanf(line, "store.dflags=%u", &v) == 1 && v == want_flags)
			props = true;
	}
	fclose(f);
	if (!props)
		return zfail(z, "config.props without the data flags");
	snprintf(path, sizeof(path), "%s/000001/traces.dat", out);
	if (stat(path, &st))
		return zfail(z, "no traces.dat");
	len = (size_t)st.st_size;
	file = malloc(len + 1);
	f = fopen(path, "rb");
	assert_int_equal(fread(file, 1, len, f), len);
	fclose(f);
	if (len < 16 || memcmp(file, "ZTS0", 4) || get_be32(file + 4) != want_flags || get_be32(file + 8) ||
	    get_be32(file + 12)) {
		free(file);
		return zfail(z, "bad file header");
	}
	while (ok && pos < len) {
		uint32_t csize, lsize, cksum;
		const uint8_t *c = file + pos + 16;

		if (len - pos < 16 || memcmp(file + pos, "ZCH0", 4))
			return free(file), zfail(z, "bad chunk header");
		csize = get_be32(file + pos + 4);
		lsize = get_be32(file + pos + 8);
		cksum = get_be32(file + pos + 12);
		if (csize > len - pos - 16)
			return free(file), zfail(z, "chunk longer than the file");
		if (cksum != (uint32_t)crc32(0, c, csize))
			return free(file), zfail(z, "chunk CRC (over the compressed bytes) wrong");
		lbuf = malloc(lsize ? lsize : 1);
		if ((want_flags & 0x0f) == 0x02) {
			ok = LZ4_decompress_safe((const char *)c, (char *)lbuf, (int)csize, (int)lsize) == (int)lsize;
		} else if ((want_flags & 0x0f) == 0x01) {
			z_stream zs = { 0 };

			inflateInit2(&zs, -15);
			zs.next_in = (Bytef *)c;
			zs.avail_in = csize;
			zs.next_out = lbuf;
			zs.avail_out = lsize;
			ok = inflate(&zs, Z_FINISH) == Z_STREAM_END && zs.total_out == lsize && zs.avail_in == 0;
			inflateEnd(&zs);
		} else {
			ok = csize == lsize;
			memcpy(lbuf, c, lsize);
		}
		if (!ok)
			zfail(z, "chunk does not decompress to exactly lsize bytes");
		else
			ok = decode_items(z, lbuf, lsize);
		free(lbuf);
		if (lsize > z->max_lsize)
			z->max_lsize = lsize;
		z->chunks++;
		pos += 16 + csize;
	}
	free(file);
	if (ok && z->depth)
		return zfail(z, "a trace is still open at the end of the file");
	return ok;
}

static void zdec_free(struct zdec *z)
{
	for (int i = 0; i < 4096; i++)
		free(z->mnames[i]);
	free(z->ev);
	free(z->stack);
	memset(z, 0, sizeof(*z));
}

/* ---- expected events: the session replayed through a call stack ---------------------------- */

struct expect {
	struct dec_event *ev;
	size_t n, cap, orphans;
};

static struct dec_event *push(struct expect *x)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 4096;
		x->ev = realloc(x->ev, x->cap * sizeof(*x->ev));
	}
	memset(&x->ev[x->n], 0, sizeof(x->ev[0]));
	return &x->ev[x->n++];
}

static struct expect expected(struct atf_session *s, uint64_t from_ns)
{
	struct expect x = { 0 };
	char buf[32];

	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_thread *t = &s->threads[i];
		size_t *open = malloc((t->index.count + 1) * sizeof(*open)), depth = 0;
		uint64_t last = 0;

		for (uint64_t q = atf_index_lower_bound(&t->index, from_ns); q < t->index.count; q++) {
			struct atf_index_event ev;
			struct atf_detail_event de;
			struct dec_event *e;
			bool det;

			atf_index_get(&t->index, q, &ev);
			last = ev.timestamp_ns;
			det = ev.detail_seq != ATF_NO_DETAIL && t->has_detail &&
			      atf_detail_get(&t->detail, ev.detail_seq, &de) == 0 && de.has_payload;
			if (ev.event_kind != ATF_KIND_CALL && depth == 0) {
				x.orphans++;
				continue;
			}
			e = push(&x);
			e->tid = t->tid;
			e->kind = ev.event_kind;
			e->ts = ev.timestamp_ns;
			/* CBOR text is UTF-8: a name that is not arrives repaired (export_gen.h's function 3) */
			char *repaired = utf8_lossy_dup(atf_session__name(s, ev.function_id, buf, sizeof(buf)));

			assert_non_null(repaired);
			snprintf(e->name, sizeof(e->name), "%s", repaired);
			free(repaired);
			if (ev.event_kind == ATF_KIND_CALL) {
				e->depth = (uint32_t)depth;
				open[depth++] = x.n - 1;
				e->has_args = det && de.hdr.event_type == ATF_DETAIL_CALL;
			} else {
				e->depth = (uint32_t)--depth;
				e->has_ret = det && de.hdr.event_type == ATF_DETAIL_RETURN;
			}
			if (e->has_args || e->has_ret) {
				e->reg0 = de.payload.gp[0];
				e->reg1 = de.payload.gp[1];
			}
		}
		while (depth) {         /* still open at the end: closed at the last timestamp */
			struct dec_event *e = push(&x);

			depth--;
			*e = x.ev[open[depth]];
			e->kind = ATF_KIND_RETURN;
			e->ts = last;
			e->has_args = e->has_ret = false;
			e->reg0 = e->reg1 = 0;
			e->unfinished = true;
		}
		free(open);
	}
	return x;
}

static void compare(const struct zdec *z, const struct expect *x)
{
	assert_int_equal(z->nev, x->n);
	for (size_t i = 0; i < x->n; i++) {
		const struct dec_event *g = &z->ev[i], *w = &x->ev[i];

		if (g->tid != w->tid || g->kind != w->kind || g->depth != w->depth || g->ts != w->ts ||
		    strcmp(g->name, w->name) || g->has_args != w->has_args || g->has_ret != w->has_ret ||
		    g->reg0 != w->reg0 || g->reg1 != w->reg1 || g->unfinished != w->unfinished)
			fail_msg("event %zu: got tid %u kind %u depth %u ts %llu %s args %d ret %d unf %d; "
				 "want tid %u kind %u depth %u ts %llu %s args %d ret %d unf %d", i,
				 g->tid, g->kind, g->depth, (unsigned long long)g->ts, g->name, g->has_args,
				 g->has_ret, g->unfinished, w->tid, w->kind, w->depth, (unsigned long long)w->ts,
				 w->name, w->has_args, w->has_ret, w->unfinished);
	}
}

static int export_zts(struct atf_session *s, const char *out, const char *compress, uint64_t from_ns)
{
	struct export_options o = { .out_path = out, .thread_id = -1, .from_ns = from_ns,
				    .to_ns = UINT64_MAX, .compress = compress, .force = true };

	return export_session(s, &zts_ops, &o);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void roundtrip(const char *compress, uint32_t flags)
{
	struct gen_params g = { .threads = 3, .events = 6000, .depth = 8, .detail_every = 3, .nfuncs = 30,
				.seed = 21 };
	struct atf_session *s = gen_params_session(compress, &g);
	struct expect x = expected(s, 0);
	struct zdec z = { 0 };
	char out[300];

	snprintf(out, sizeof(out), "%s/store-%s", gen_tmpdir, compress);
	assert_int_equal(export_zts(s, out, strcmp(compress, "default") ? compress : NULL, 0), 0);
	if (!read_store(&z, out, flags))
		fail_msg("decoder: %s", z.err);
	compare(&z, &x);
	assert_true(z.traces > 100);
	assert_true(x.ev[x.n - 1].unfinished || x.ev[x.n - 1].kind != ATF_KIND_CALL);
	zdec_free(&z);
	free(x.ev);
	atf_session__close(s);
}

static void test_roundtrip_lz4(void **state) { roundtrip("lz4", 0x12); }
static void test_roundtrip_zlib(void **state) { roundtrip("zlib", 0x11); }
static void test_roundtrip_none(void **state) { roundtrip("none", 0x10); }
static void test_roundtrip_default_is_lz4(void **state) { roundtrip("default", 0x12); }

/* Five traces each 40000 events long and 20000 calls deep: chunks stay bounded, traces span them. */
static void test_long_deep_calls_bounded_chunks(void **state)
{
	struct gen_params g = { .threads = 1, .events = 200000, .nfuncs = 7, .seed = 3, .deep = 20000,
				.detail_every = 1000 };
	struct atf_session *s = gen_params_session("deep", &g);
	struct expect x = expected(s, 0);
	struct zdec z = { 0 };
	char out[300];

	snprintf(out, sizeof(out), "%s/store-deep", gen_tmpdir);
	assert_int_equal(export_zts(s, out, "lz4", 0), 0);
	if (!read_store(&z, out, 0x12))
		fail_msg("decoder: %s", z.err);
	compare(&z, &x);
	assert_int_equal(z.traces, 5);
	assert_true(z.chunks > 5);
	assert_true(z.max_lsize <= (1u << 20) + 4096);
	zdec_free(&z);
	free(x.ev);
	atf_session__close(s);
}

/* A range that starts inside calls: their returns have nothing to close and are counted. */
static void test_range_inside_calls(void **state)
{
	struct gen_params g = { .threads = 2, .events = 3000, .depth = 6, .detail_every = 5, .nfuncs = 9, .seed = 8 };
	struct atf_session *s = gen_params_session("range", &g);
	struct atf_index_event mid;
	struct expect x;
	struct zdec z = { 0 };
	char out[300], path[400], line[128];
	unsigned long long orphans = ~0ull;
	FILE *f;

	atf_index_get(&s->threads[0].index, 1501, &mid);
	x = expected(s, mid.timestamp_ns);
	assert_true(x.orphans > 0);
	snprintf(out, sizeof(out), "%s/store-range", gen_tmpdir);
	assert_int_equal(export_zts(s, out, "zlib", mid.timestamp_ns), 0);
	if (!read_store(&z, out, 0x11))
		fail_msg("decoder: %s", z.err);
	compare(&z, &x);
	snprintf(path, sizeof(path), "%s/000001/config.props", out);
	assert_non_null(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f))
		sscanf(line, "atftrace.orphan-returns=%llu", &orphans);
	fclose(f);
	assert_int_equal(orphans, x.orphans);
	zdec_free(&z);
	free(x.ev);
	atf_session__close(s);
}

static void test_bad_compress_leaves_nothing(void **state)
{
	struct gen_params g = { .threads = 1, .events = 10, .depth = 3, .nfuncs = 3, .seed = 1 };
	struct atf_session *s = gen_params_session("bad", &g);
	char out[300];

	snprintf(out, sizeof(out), "%s/store-bad", gen_tmpdir);
	assert_int_equal(export_zts(s, out, "gzip", 0), -EINVAL);
	assert_int_equal(access(out, F_OK), -1);
	atf_session__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_lz4),
		cmocka_unit_test(test_roundtrip_zlib),
		cmocka_unit_test(test_roundtrip_none),
		cmocka_unit_test(test_roundtrip_default_is_lz4),
		cmocka_unit_test(test_long_deep_calls_bounded_chunks),
		cmocka_unit_test(test_range_inside_calls),
		cmocka_unit_test(test_bad_compress_leaves_nothing),
	};

	return cmocka_run_group_tests(tests, gen_tmp_setup, gen_tmp_teardown);
}
