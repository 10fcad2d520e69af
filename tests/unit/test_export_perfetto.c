// SPDX-License-Identifier: MIT
/*
 * Perfetto exporter against a strict protobuf decoder of the fields listed in
 * tests/data/perfetto_trace.proto: every byte is consumed, every varint is minimal, unknown
 * fields or wire types and repeated singular fields are errors. The decoded trace must hold
 * the process descriptor first (flagged SEQ_INCREMENTAL_STATE_CLEARED), one thread descriptor
 * per thread, then one TrackEvent per recorded event in the merged order with the exact
 * timestamp, the thread's track, the interned name (defined once, in or before the first packet
 * using it, which is flagged SEQ_NEEDS_INCREMENTAL_STATE), slices nested per track, an
 * exception annotation, and the detail registers as debug annotations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "format.h"
#include "export_gen.h"

extern const struct export_ops perfetto_ops;

static const char *const repaired_names[GEN_NSYMS] = {
	"main", "parse_expr", "quote\"back\\slash\ttab\x01",
	"bad\xEF\xBF\xBD\xEF\xBF\xBD(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDutf8",
	"caf\xc3\xa9_\xf0\x9f\x98\x80",
};
static const char *const repaired_thread_names[] = { "main", "work\xEF\xBF\xBD" "er", NULL, "t3" };

/* ---- strict protobuf reading ----------------------------------------------------------------- */

struct pb {
	const uint8_t *p, *end;
};

struct pb_field {
	uint32_t num, wt;
	uint64_t v;                     /* varint */
	struct pb sub;                  /* length-delimited */
};

static bool pb_varint(struct pb *r, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 10 && r->p < r->end; i++) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7F) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			return i == 0 || b != 0;        /* minimal encoding only */
		}
	}
	return false;
}

/* Next field of @r: 1, 0 at the end, -1 on malformed input. */
static int pb_next(struct pb *r, struct pb_field *f)
{
	uint64_t key, len;

	if (r->p == r->end)
		return 0;
	if (!pb_varint(r, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wt = key & 7;
	if (f->wt == 0)
		return pb_varint(r, &f->v) ? 1 : -1;
	if (f->wt != 2 || !pb_varint(r, &len) || len > (uint64_t)(r->end - r->p))
		return -1;
	f->sub.p = r->p;
	f->sub.end = r->p + len;
	r->p += len;
	return 1;
}

static bool pb_str_eq(const struct pb *s, const char *want)
{
	return want && (size_t)(s->end - s->p) == strlen(want) && !memcmp(s->p, want, strlen(want));
}

/* ---- decoded trace ------------------------------------------------------------------------------- */

struct annotation {
	char name[16];
	uint32_t value_field;           /* 2 bool, 3 uint, 7 pointer */
	uint64_t v;
};

struct packet {
	uint64_t seen;                  /* bit per field number < 64 */
	uint64_t ts, seq_id, flags;
	struct pb track_event, interned, track_descriptor;
};

#define SEEN(n) (1ull << (n))

static void parse_packet(struct pb *r, struct packet *k)
{
	struct pb_field f;
	int rc;

	memset(k, 0, sizeof(*k));
	while ((rc = pb_next(r, &f)) > 0) {
		uint32_t n = f.num == 60 ? 14 : f.num;  /* track_descriptor: a free bit */

		if (n >= 64 || (k->seen & SEEN(n)))
			fail_msg("packet field %u unknown or repeated", f.num);
		k->seen |= SEEN(n);
		switch (f.num) {
		case 8: assert_int_equal(f.wt, 0); k->ts = f.v; break;
		case 10: assert_int_equal(f.wt, 0); k->seq_id = f.v; break;
		case 13: assert_int_equal(f.wt, 0); k->flags = f.v; break;
		case 11: assert_int_equal(f.wt, 2); k->track_event = f.sub; break;
		case 12: assert_int_equal(f.wt, 2); k->interned = f.sub; break;
		case 60: assert_int_equal(f.wt, 2); k->track_descriptor = f.sub; break;
		default: fail_msg("unexpected TracePacket field %u", f.num);
		}
	}
	assert_int_equal(rc, 0);
	assert_int_equal(k->seq_id, 1);
}

/* TrackDescriptor: uuid, parent_uuid, and a process or thread descriptor. */
static void check_descriptor(struct pb td, uint64_t uuid, uint64_t parent, bool process, uint32_t tid,
			     const char *name)
{
	struct pb_field f, g;
	bool got_uuid = false, got_parent = false, got_desc = false, got_name = false, got_tid = false;
	bool got_pid = false;

	while (pb_next(&td, &f) > 0) {
		if (f.num == 1) {
			assert_int_equal(f.v, uuid);
			got_uuid = true;
		} else if (f.num == 5) {
			assert_int_equal(f.v, parent);
			got_parent = true;
		} else if (f.num == (process ? 3u : 4u) && f.wt == 2) {
			got_desc = true;
			while (pb_next(&f.sub, &g) > 0) {
				if (g.num == 1) {
					assert_int_equal(g.v, GEN_PID);
					got_pid = true;
				} else if (!process && g.num == 2) {
					assert_int_equal(g.v, tid);
					got_tid = true;
				} else if (g.num == (process ? 6u : 5u)) {
					assert_true(pb_str_eq(&g.sub, name));
					got_name = true;
				} else {
					fail_msg("descriptor field %u", g.num);
				}
			}
			assert_true(f.sub.p == f.sub.end);
		} else {
			fail_msg("TrackDescriptor field %u", f.num);
		}
	}
	assert_true(td.p == td.end);
	assert_true(got_uuid && got_desc && got_pid);
	assert_int_equal(got_parent, !process);
	assert_int_equal(got_tid, !process);
	assert_int_equal(got_name, name != NULL);
}

struct interned {
	uint64_t iid;
	struct pb name;
};

struct decoded {
	struct interned names[64];
	size_t nnames;
	struct pb stack[16][64];        /* per track: names of open slices */
	size_t depth[16];
};

static void read_interned(struct decoded *d, struct pb in)
{
	struct pb_field f, g;

	while (pb_next(&in, &f) > 0) {
		struct interned *it = &d->names[d->nnames];

		assert_int_equal(f.num, 2);
		assert_true(d->nnames < 64);
		memset(it, 0, sizeof(*it));
		while (pb_next(&f.sub, &g) > 0) {
			if (g.num == 1)
				it->iid = g.v;
			else if (g.num == 2)
				it->name = g.sub;
			else
				fail_msg("EventName field %u", g.num);
		}
		assert_int_not_equal(it->iid, 0);
		for (size_t i = 0; i < d->nnames; i++)
			assert_int_not_equal(d->names[i].iid, it->iid);    /* each name defined once */
		d->nnames++;
	}
	assert_true(in.p == in.end);
}

static const struct pb *lookup_iid(const struct decoded *d, uint64_t iid)
{
	for (size_t i = 0; i < d->nnames; i++)
		if (d->names[i].iid == iid)
			return &d->names[i].name;
	return NULL;
}

/* One TrackEvent against the expected event. */
static void check_track_event(struct decoded *d, const struct packet *k, const struct gen_event *w, bool nesting)
{
	static const char *const reg_names[11] = { "gp0", "gp1", "gp2", "gp3", "gp4", "gp5", "gp6", "gp7",
						  "lr", "fp", "sp" };
	struct annotation ann[16];
	size_t nann = 0;
	struct pb te = k->track_event;
	struct pb_field f, g;
	uint64_t type = 0, track = 0, iid = 0;
	bool begin = w->ev.event_kind == ATF_KIND_CALL;
	uint32_t t = w->thread;

	while (pb_next(&te, &f) > 0) {
		switch (f.num) {
		case 9: type = f.v; break;
		case 11: track = f.v; break;
		case 10: iid = f.v; break;
		case 4:
			assert_true(nann < 16);
			memset(&ann[nann], 0, sizeof(ann[0]));
			while (pb_next(&f.sub, &g) > 0) {
				if (g.num == 10) {
					assert_true(g.sub.end - g.sub.p < 16);
					memcpy(ann[nann].name, g.sub.p, (size_t)(g.sub.end - g.sub.p));
				} else if (g.num == 2 || g.num == 3 || g.num == 7) {
					ann[nann].value_field = g.num;
					ann[nann].v = g.v;
				} else {
					fail_msg("DebugAnnotation field %u", g.num);
				}
			}
			nann++;
			break;
		default: fail_msg("TrackEvent field %u", f.num);
		}
	}
	assert_true(te.p == te.end);
	assert_int_equal(k->ts, w->ev.timestamp_ns);
	assert_int_equal(type, begin ? 1 : 2);
	assert_int_equal(track, 2 + t);
	assert_int_equal(k->flags, begin ? 2 : 0);
	assert_int_equal(!!(k->seen & SEEN(13)), begin);
	if (begin) {
		const struct pb *n = lookup_iid(d, iid);
		char buf[32];
		uint32_t idx = (uint32_t)w->ev.function_id;
		const char *want = idx >= 1 && idx <= GEN_NSYMS ? repaired_names[idx - 1] : buf;

		snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)w->ev.function_id);
		assert_non_null(n);
		assert_true(pb_str_eq(n, want));
		if (nesting) {
			assert_true(d->depth[t] < 64);
			d->stack[t][d->depth[t]++] = *n;
		}
	} else {
		assert_int_equal(iid, 0);
		if (nesting) {
			assert_int_equal(d->depth[t], w->ev.call_depth + 1);
			d->depth[t]--;
		}
	}
	size_t a = 0;

	if (w->ev.event_kind == ATF_KIND_EXCEPTION) {
		assert_string_equal(ann[0].name, "exception");
		assert_int_equal(ann[0].value_field, 2);
		assert_int_equal(ann[0].v, 1);
		a = 1;
	}
	if (w->has_detail) {
		for (int r = 0; r < 11; r++, a++) {
			assert_true(a < nann);
			assert_string_equal(ann[a].name, reg_names[r]);
			assert_int_equal(ann[a].value_field, r < 8 ? 3 : 7);
			assert_int_equal(ann[a].v, r < 8 ? w->pl.gp[r] : r == 8 ? w->pl.lr : r == 9 ? w->pl.fp : w->pl.sp);
		}
	}
	assert_int_equal(a, nann);
}

/* Decodes @buf (all of it) and compares it with @want[0..n). */
static int decode_and_compare(const uint8_t *buf, size_t len, const struct gen *g, int64_t thread,
			      const struct gen_event *const *want, size_t n, bool nesting)
{
	struct decoded *d = calloc(1, sizeof(*d));
	struct pb trace = { buf, buf + len };
	struct pb_field f;
	struct packet k;
	size_t pkt = 0, ev = 0;
	uint32_t nthreads = thread < 0 ? g->nthreads : 1;
	int rc;

	while ((rc = pb_next(&trace, &f)) > 0) {
		if (f.num != 1 || f.wt != 2)
			break;
		parse_packet(&f.sub, &k);
		if (pkt == 0) {
			assert_int_equal(k.flags, 1);               /* SEQ_INCREMENTAL_STATE_CLEARED */
			check_descriptor(k.track_descriptor, 1, 0, true, 0, gen_process_name);
		} else if (pkt <= nthreads) {
			uint32_t t = thread < 0 ? (uint32_t)pkt - 1 : (uint32_t)thread;

			assert_int_equal(k.seen, SEEN(10) | SEEN(14));
			check_descriptor(k.track_descriptor, 2 + t, 1, false, GEN_TID0 + t,
					 repaired_thread_names[t % 4]);
		} else {
			assert_true(ev < n);
			if (k.seen & SEEN(12))
				read_interned(d, k.interned);
			check_track_event(d, &k, want[ev++], nesting);
		}
		pkt++;
	}
	free(d);
	if (rc != 0 || trace.p != trace.end)
		return -1;
	assert_int_equal(ev, n);
	return 0;
}

static void export_and_check(struct gen *g, int64_t thread, uint64_t from, uint64_t to, size_t min_events,
			     bool nesting)
{
	const struct gen_event **want = calloc(2 * g->n + 1, sizeof(*want));
	size_t n = gen_select(g, thread, from, to, want), len;
	uint8_t *out = gen_export(g, &perfetto_ops, thread, from, to, &len);

	assert_true(n >= min_events);
	assert_int_equal(decode_and_compare(out, len, g, thread, want, n, nesting), 0);
	free(out);
	free(want);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_roundtrip_three_threads(void **state)
{
	static const uint64_t gaps[] = { 0, 1, 7, 300, 40000, 0x1000000, 0x7FFFFFFFull };
	struct gen g;

	gen_session(&g, 3, 700, gaps, 7, 0x4321);
	export_and_check(&g, -1, 0, UINT64_MAX, 2100, true);
	gen_free(&g);
}

static void test_thread_and_range(void **state)
{
	static const uint64_t gaps[] = { 3, 1000, 20000000 };
	struct gen g;

	gen_session(&g, 4, 300, gaps, 3, 11);
	uint64_t from = g.ev[g.n / 3].ev.timestamp_ns, to = g.ev[g.n / 2].ev.timestamp_ns;

	export_and_check(&g, 2, from, to, 20, false);
	export_and_check(&g, 1, 0, UINT64_MAX, 300, true);
	gen_free(&g);
}

/* The decoder must not accept a cut or extended file. */
static void test_decoder_rejects_damage(void **state)
{
	static const uint64_t gaps[] = { 100 };
	const struct gen_event *want[64];
	struct gen g;
	size_t len, n;

	gen_session(&g, 1, 40, gaps, 1, 5);
	n = gen_select(&g, -1, 0, UINT64_MAX, want);
	uint8_t *out = gen_export(&g, &perfetto_ops, -1, 0, UINT64_MAX, &len);

	assert_int_equal(decode_and_compare(out, len, &g, -1, want, n, true), 0);
	/* cutting inside the last packet's length-delimited field */
	assert_int_not_equal(decode_and_compare(out, len - 1, &g, -1, want, n - 1, true), 0);
	out = realloc(out, len + 1);
	out[len] = 0x0a;                /* a packet key with no length */
	assert_int_not_equal(decode_and_compare(out, len + 1, &g, -1, want, n, true), 0);
	free(out);
	gen_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_three_threads),
		cmocka_unit_test(test_thread_and_range),
		cmocka_unit_test(test_decoder_rejects_damage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
