// SPDX-License-Identifier: MIT
/*
 * RTC exporter against the in-repo RTC reader (rtc_reader.h), which checks the ruler, the index,
 * the per-Unit CRCs and that every Unit decodes on its own. Every decoded event is compared with
 * the session (merged order, ns timestamps, names, nesting, detail), also for truncated files,
 * reads starting at any Unit and every export length.
 */
#include <errno.h>
#include <ftw.h>
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
#include "rtc_reader.h"

extern const struct export_ops rtc_ops;

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

/* @x (the recorded events in the range, merged) as export_sessions() balances them. */
static struct expect balanced(struct atf_session *s, struct expect x, uint64_t to_ns)
{
	struct bal_in *in = calloc(x.n + 1, sizeof(*in));
	struct bal_out *o = calloc(2 * x.n + 1, sizeof(*o));
	uint64_t *close_ns = calloc(s->nthreads + 1, sizeof(*close_ns));
	struct expect y = { .ev = calloc(2 * x.n + 1, sizeof(*y.ev)) };

	assert_true(in && o && close_ns && y.ev);
	for (size_t i = 0; i < x.n; i++)        /* thread ids are the dense thread_<N> numbers here */
		in[i] = (struct bal_in){ x.ev[i].thread, x.ev[i].ts, x.ev[i].kind, x.ev[i].depth };
	bal_close_times(s, in, x.n, to_ns, close_ns);
	y.n = bal_model(in, x.n, (uint32_t)s->nthreads, close_ns, o);
	for (size_t i = 0; i < y.n; i++) {
		y.ev[i] = x.ev[o[i].src >= 0 ? o[i].src : o[i].call];
		y.ev[i].name = strdup(y.ev[i].name);
		if (o[i].src >= 0)
			continue;
		y.ev[i].kind = ATF_KIND_RETURN;
		y.ev[i].ts = o[i].ts;
		y.ev[i].has_detail = false;
	}
	for (size_t i = 0; i < x.n; i++)
		free(x.ev[i].name);
	free(x.ev);
	free(in);
	free(o);
	free(close_ns);
	return y;
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
	return balanced(s, x, to_ns);
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
	o.force = true;         /* a name may be exported again */
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
