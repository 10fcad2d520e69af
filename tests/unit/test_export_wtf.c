// SPDX-License-Identifier: MIT
/*
 * wtf-trace exporters (-F wtf, -F wtf-json) checked by an independent decoder: sessions are
 * written with libatf's writer, exported through export_session(), and read back with
 * wtf_reader.h. The binary parser and the JSON parser (jansson) both produce the file's chunks;
 * the two forms must carry identical chunks, and the interpreted event stream (zones, scope
 * types, instance events, arguments) is compared event by event with the session.
 *
 * The session generator is this test's own, not export_gen.h's: the cases need shapes those
 * generators cannot make (a straight dive past the 1023-scope cap, 65600 distinct functions
 * called in turn, one 72-minute gap, a chosen exception rate, the process title "wtf-demo").
 * Only the temporary-directory setup comes from export_gen.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "atf.h"
#include "format.h"
#include "export_gen.h"
#include "wtf_reader.h"

extern const struct export_ops wtf_ops, wtf_json_ops;

#define MAX_SCOPES 1023u        /* the exporter's documented nesting cap */

/* ---- session generation ----------------------------------------------------------------------- */

struct wtf_gen {
	const char *dir;
	uint32_t threads, steps, max_depth, nfuncs;
	uint32_t detail_every;          /* 0: none */
	uint32_t exception_every;       /* 0: none */
	uint64_t start_ns, step_ns;     /* step_ns: max gap between consecutive events of a thread */
	uint32_t seed;
	bool dive;                      /* call until max_depth, then unwind: no randomness in shape */
	bool sequential_funcs;          /* call functions 1, 2, 3, ... in turn */
	uint64_t fixed_gap_ns;          /* non-zero: every gap is exactly this */
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static const char *func_name(uint32_t i, char *buf, size_t len)
{
	if (i == 1)
		return "bad\xff\xfename";       /* not UTF-8: exported as U+FFFD per bad byte */
	if (i == 2)
		return "ns::Widget<int>::draw(char const*, \"q\")";
	snprintf(buf, len, "fn_%u", i);
	return buf;
}

/* Writes a process directory: random call/return walks per thread, details and exceptions. */
static void wtf_gen_session(const struct wtf_gen *g)
{
	struct atf_manifest *m = atf_manifest__new();
	uint32_t seed = g->seed ? g->seed : 1;
	char name[64], path[600];
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + ATF_DETAIL_MAX_STACK];
	struct atf_module *mod;

	assert_non_null(m);
	m->process_name = strdup("wtf-demo");
	m->pid = 4242;
	mod = atf_manifest__add_module(m, "/usr/bin/wtf-demo");
	assert_non_null(mod);
	/* functions past 100 stay unnamed ("0x<function id>"): still one distinct name each */
	for (uint32_t f = 1; f <= g->nfuncs && f <= 100; f++)
		assert_non_null(atf_manifest__add_symbol(m, mod->module_id, f, func_name(f, name, sizeof(name))));
	mkdir(g->dir, 0755);
	for (uint32_t t = 0; t < g->threads; t++) {
		struct atf_thread_writer *w;
		uint64_t stack[2048], ts = g->start_ns + t * 333;
		uint32_t depth = 0, ncalls = 0;
		struct atf_thread_info *ti = atf_manifest__add_thread(m, t, 1000 + t, t ? "worker" : "main");

		assert_non_null(ti);
		assert_int_equal(atf_thread_writer__new(&w, g->dir, t, 1000 + t), 0);
		for (uint32_t i = 0; i < g->steps || depth; i++) {
			bool call = i < g->steps && depth < g->max_depth &&
				    (g->dive || depth == 0 || rnd(&seed) % 3 != 0);
			struct atf_index_event ev = { .thread_id = t, .timestamp_ns = ts };
			struct atf_detail_in din = { 0 }, *dp = NULL;

			if (call) {
				stack[depth] = (uint64_t)mod->module_id << 32 |
					       (1 + (g->sequential_funcs ? ncalls++ : rnd(&seed)) % g->nfuncs);
				ev.function_id = stack[depth];
				ev.event_kind = ATF_KIND_CALL;
				ev.call_depth = depth++;
			} else {
				ev.function_id = stack[--depth];
				ev.call_depth = depth;
				ev.event_kind = g->exception_every && rnd(&seed) % g->exception_every == 0 ?
						ATF_KIND_EXCEPTION : ATF_KIND_RETURN;
			}
			if (g->detail_every && rnd(&seed) % g->detail_every == 0) {
				struct atf_detail_payload p = { .function_id = ev.function_id, .lr = 0x401000 + i,
								.fp = 0x7ffd00000000ull + i, .sp = 0x7ffd10000000ull + i,
								.stack_size = (uint16_t)(rnd(&seed) % 40) };

				for (int r = 0; r < ATF_DETAIL_GP_REGS; r++)
					p.gp[r] = (uint64_t)rnd(&seed) << 32 | (uint64_t)(i * 8 + r);
				atf_detail_payload_encode(payload, &p);
				for (uint16_t s = 0; s < p.stack_size; s++)
					payload[ATF_DETAIL_PAYLOAD_SIZE + s] = (uint8_t)(i + s);
				din = (struct atf_detail_in){ .event_type = call ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN,
							      .flags = (uint16_t)(i & 3), .payload = payload,
							      .payload_len = ATF_DETAIL_PAYLOAD_SIZE + p.stack_size };
				dp = &din;
			}
			assert_true(atf_thread_writer__append(w, &ev, dp) >= 0);
			ts += g->fixed_gap_ns ? g->fixed_gap_ns : rnd(&seed) % (g->step_ns + 1);
		}
		ti->index_events = atf_thread_writer__index_count(w);
		ti->detail_events = atf_thread_writer__detail_count(w);
		ti->has_detail = ti->detail_events > 0;
		assert_int_equal(atf_thread_writer__finalize(w), 0);
		atf_thread_writer__free(w);
	}
	snprintf(path, sizeof(path), "%s/manifest.json", g->dir);
	assert_int_equal(atf_manifest__save(m, path), 0);
	atf_manifest__free(m);
}

/* ---- comparison with the session ------------------------------------------------------------- */

static const char *expected_name(struct atf_session *s, uint64_t fid, char *buf, size_t len)
{
	if ((uint32_t)fid == 1)
		return "bad\xEF\xBF\xBD\xEF\xBF\xBDname";      /* each invalid byte -> U+FFFD */
	return atf_session__name(s, fid, buf, len);
}

static const struct dev *next_dev(const struct zone *z, size_t *k, const char *type_name)
{
	assert_non_null(z);
	if (*k >= z->n)
		fail_msg("zone %s: ran out of events, expected %s", z->name, type_name);
	if (type_name && strcmp(z->ev[*k].type->name, type_name) != 0)
		fail_msg("zone %s event %zu: expected %s, got %s", z->name, *k, type_name, z->ev[*k].type->name);
	return &z->ev[(*k)++];
}

static void expect_u64(const struct dev *d, uint32_t *w, uint64_t v)
{
	assert_int_equal(d->w[*w], (uint32_t)(v >> 32));
	assert_int_equal(d->w[*w + 1], (uint32_t)v);
	*w += 2;
}

static void expect_detail(const struct zone *z, size_t *k, const struct atf_thread *t,
			  const struct atf_index_event *ev, bool is_return, uint32_t t_us)
{
	struct atf_detail_event de;
	const struct dev *d;
	uint32_t w = 0;

	if (ev->detail_seq == ATF_NO_DETAIL)
		return;
	assert_int_equal(atf_detail_get(&t->detail, ev->detail_seq, &de), 0);
	assert_true(de.has_payload);
	d = next_dev(z, k, is_return ? "atftrace#returnDetail" : "atftrace#callDetail");
	assert_int_equal(d->t, t_us);
	assert_int_equal(d->type->cls, 0);
	assert_string_equal(d->type->arg_name[2], is_return ? "rax_hi" : "rdi_hi");   /* x86_64 names */
	expect_u64(d, &w, de.payload.function_id);
	for (int r = 0; r < (is_return ? 2 : ATF_DETAIL_GP_REGS); r++)
		expect_u64(d, &w, de.payload.gp[r]);
	expect_u64(d, &w, de.payload.lr);
	expect_u64(d, &w, de.payload.fp);
	expect_u64(d, &w, de.payload.sp);
	assert_int_equal(d->w[w++], de.hdr.flags);
	assert_int_equal(w, d->nw);             /* the stack count belongs to the uint8[] argument */
	assert_int_equal(d->arr_len, de.payload.stack_size);
	assert_memory_equal(d->arr, de.stack, de.payload.stack_size);
}

struct verify_stats {
	uint64_t index_events, scopes, deep, fallback_enters, details, exceptions;
};

/* Every index event in [from, to] of every thread, in order, against the thread's zone. */
static void verify(const char *dir, const struct trace *tr, uint64_t from, uint64_t to, struct verify_stats *vs)
{
	struct atf_session *s;
	struct atf_diag diag;
	uint64_t base = UINT64_MAX;
	char buf[64];
	json_t *h = tr->header, *ci = json_object_get(h, "contextInfo");

	memset(vs, 0, sizeof(*vs));
	assert_int_equal(atf_session__open(&s, dir, 0, &diag), 0);
	for (size_t i = 0; i < s->nthreads; i++) {
		struct atf_index_event ev;
		uint64_t lo = atf_index_lower_bound(&s->threads[i].index, from);

		if (lo < s->threads[i].index.count) {
			atf_index_get(&s->threads[i].index, lo, &ev);
			if (ev.timestamp_ns <= to && ev.timestamp_ns < base)
				base = ev.timestamp_ns;
		}
	}
	/* times count from one microsecond before the first event: no scope ends at time 0, which
	 * the reference loader would take for an instance event */
	if (base != UINT64_MAX)
		base = base > 1000 ? base - 1000 : 0;
	/* file header: required fields the loader reads */
	assert_true(json_is_number(json_object_get(h, "timebase")));
	assert_true(json_is_array(json_object_get(h, "flags")));
	assert_string_equal(json_string_value(json_object_get(ci, "contextType")), "script");
	assert_string_equal(json_string_value(json_object_get(ci, "title")), "wtf-demo");
	assert_true(json_is_array(json_object_get(ci, "args")));
	if (base != UINT64_MAX) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)base);
		assert_string_equal(json_string_value(json_object_get(json_object_get(h, "metadata"),
								      "atftrace_time_base_ns")), buf);
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_thread *t = &s->threads[i];
		const struct zone *z = NULL;
		uint32_t open = 0, deep = 0;
		size_t k = 0;

		for (uint32_t zi = 0; zi < tr->nzones; zi++)
			if (tr->zones[zi].thread_dir_id == t->id)
				z = &tr->zones[zi];
		if (z) {
			snprintf(buf, sizeof(buf), "%s:%u", t->name, t->tid);
			assert_string_equal(z->name, buf);
			assert_true(z->max_depth <= MAX_SCOPES);
		}
		/* the thread's events in the range, balanced as export_sessions() delivers them */
		struct atf_index_event *evs = calloc(t->index.count + 1, sizeof(*evs));
		struct bal_in *in = calloc(t->index.count + 1, sizeof(*in));
		struct bal_out *bo = calloc(2 * t->index.count + 1, sizeof(*bo));
		size_t nin = 0, nb;
		uint64_t close_ns = 0;

		assert_true(evs && in && bo);
		for (uint64_t seq = atf_index_lower_bound(&t->index, from); seq < t->index.count; seq++) {
			atf_index_get(&t->index, seq, &evs[nin]);
			if (evs[nin].timestamp_ns > to) {
				close_ns = to;
				break;
			}
			in[nin] = (struct bal_in){ 0, evs[nin].timestamp_ns, evs[nin].event_kind, evs[nin].call_depth };
			nin++;
		}
		if (!close_ns && nin)
			close_ns = in[nin - 1].ts;
		nb = bal_model(in, nin, 1, &close_ns, bo);
		vs->index_events += nin;
		for (size_t b = 0; b < nb; b++) {
			struct atf_index_event ev = evs[bo[b].src >= 0 ? bo[b].src : bo[b].call];
			const char *name;
			const struct dev *d;
			uint32_t t_us;

			if (bo[b].src < 0) {    /* a made-up close: a plain return at the close time */
				ev.event_kind = ATF_KIND_RETURN;
				ev.timestamp_ns = bo[b].ts;
				ev.detail_seq = ATF_NO_DETAIL;
			}

			name = expected_name(s, ev.function_id, buf, sizeof(buf));
			t_us = (uint32_t)((ev.timestamp_ns - base) / 1000);
			if (ev.event_kind == ATF_KIND_CALL) {
				if (open >= MAX_SCOPES) {
					d = next_dev(z, &k, "atftrace#deepCall");
					assert_string_equal(d->s[0], name);
					assert_int_equal(d->w[0], ev.call_depth);
					deep++;
					vs->deep++;
				} else {
					d = next_dev(z, &k, NULL);
					if (!strcmp(d->type->name, "atftrace#scope")) {
						assert_string_equal(d->s[0], name);
						vs->fallback_enters++;
					} else {
						assert_string_equal(d->type->name, name);
						assert_int_equal(d->type->nargs, 0);
					}
					assert_int_equal(d->type->cls, 1);
					open++;
					vs->scopes++;
				}
				assert_int_equal(d->t, t_us);
				vs->details += ev.detail_seq != ATF_NO_DETAIL;
				expect_detail(z, &k, t, &ev, false, t_us);
				continue;
			}
			assert_true(ev.event_kind == ATF_KIND_RETURN || ev.event_kind == ATF_KIND_EXCEPTION);
			if (ev.event_kind == ATF_KIND_EXCEPTION) {
				d = next_dev(z, &k, "atftrace#exception");
				assert_string_equal(d->s[0], name);
				assert_int_equal(d->t, t_us);
				assert_int_equal(d->nw, 3);
				assert_int_equal(d->w[0], (uint32_t)(ev.function_id >> 32));
				assert_int_equal(d->w[1], (uint32_t)ev.function_id);
				assert_int_equal(d->w[2], ev.call_depth);
				vs->exceptions++;
			}
			vs->details += ev.detail_seq != ATF_NO_DETAIL;
			expect_detail(z, &k, t, &ev, true, t_us);
			if (deep) {
				d = next_dev(z, &k, "atftrace#deepReturn");
				assert_string_equal(d->s[0], name);
				assert_int_equal(d->w[0], ev.call_depth);
				deep--;
			} else {
				d = next_dev(z, &k, "wtf.scope#leave");
				if (open)
					open--;
			}
			assert_int_equal(d->t, t_us);
		}
		free(evs);
		free(in);
		free(bo);
		if (z)
			assert_int_equal(k, z->n);      /* nothing extra in the zone */
	}
	atf_session__close(s);
}

/* ---- tests -------------------------------------------------------------------------------------- */

static int run_export(const char *sdir, const struct export_ops *ops, const char *out, uint32_t chunk_size,
		      bool partial, uint64_t from, uint64_t to)
{
	struct atf_session *s;
	struct atf_diag diag;
	struct export_options o = { .out_path = out, .thread_id = -1, .from_ns = from, .to_ns = to,
				    .chunk_size = chunk_size, .json_partial = partial, .force = true };
	int err;

	assert_int_equal(atf_session__open(&s, sdir, 0, &diag), 0);
	err = export_session(s, ops, &o);
	atf_session__close(s);
	return err;
}

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", gen_tmpdir, name);
}

/* All three forms of one export: binary, JSON COMPLETE, JSON PARTIAL; identical chunks. */
static struct trace *export_all_forms(const char *sdir, uint32_t chunk_size, uint64_t from, uint64_t to,
				      size_t *nchunks)
{
	char bin[600], jc[600], jp[600];
	struct file fb = { 0 }, fc = { 0 }, fp = { 0 };
	struct trace *tr;

	path_in(bin, sizeof(bin), "out.wtf-trace");
	path_in(jc, sizeof(jc), "out.wtf-json");
	path_in(jp, sizeof(jp), "out-partial.wtf-json");
	assert_int_equal(run_export(sdir, &wtf_ops, bin, chunk_size, false, from, to), 0);
	assert_int_equal(run_export(sdir, &wtf_json_ops, jc, chunk_size, false, from, to), 0);
	assert_int_equal(run_export(sdir, &wtf_json_ops, jp, chunk_size, true, from, to), 0);
	parse_binary(bin, &fb);
	parse_json(jc, false, &fc);
	parse_json(jp, true, &fp);
	assert_same_chunks(&fb, &fc);
	assert_same_chunks(&fb, &fp);
	tr = interpret(&fb);
	*nchunks = fb.n;
	free_file(&fb);
	free_file(&fc);
	free_file(&fp);
	return tr;
}

static void test_three_threads_match_session(void **state)
{
	char sdir[600];
	struct wtf_gen g = { .threads = 3, .steps = 4000, .max_depth = 12, .nfuncs = 50, .detail_every = 4,
			 .exception_every = 15, .start_ns = 5000000000ull, .step_ns = 3000, .seed = 7 };
	struct verify_stats vs;
	size_t nchunks;
	struct trace *tr;

	path_in(sdir, sizeof(sdir), "s1");
	g.dir = sdir;
	wtf_gen_session(&g);
	tr = export_all_forms(sdir, 4096, 0, UINT64_MAX, &nchunks);
	verify(sdir, tr, 0, UINT64_MAX, &vs);
	assert_true(nchunks > 20);              /* a long trace becomes many chunks */
	assert_int_equal(tr->nzones, 3);
	assert_true(vs.index_events >= 3 * 4000);
	assert_true(vs.details > 1000 && vs.exceptions > 50);
	assert_int_equal(vs.deep, 0);
	assert_int_equal(vs.fallback_enters, 0);
	free_trace(tr);
}

static void test_range_starts_inside_frames(void **state)
{
	char sdir[600];
	struct wtf_gen g = { .threads = 2, .steps = 3000, .max_depth = 8, .nfuncs = 20, .detail_every = 3,
			 .exception_every = 10, .start_ns = 1000000000ull, .step_ns = 2000, .seed = 99 };
	uint64_t from = g.start_ns + 1000000, to = g.start_ns + 2500000;
	struct verify_stats vs;
	size_t nchunks;
	struct trace *tr;

	path_in(sdir, sizeof(sdir), "s2");
	g.dir = sdir;
	wtf_gen_session(&g);
	tr = export_all_forms(sdir, 0, from, to, &nchunks);
	verify(sdir, tr, from, to, &vs);
	assert_int_equal(nchunks, 2);           /* default 1 MiB chunk: header + one event chunk */
	assert_true(vs.index_events > 500 && vs.index_events < 2 * 3000);
	free_trace(tr);
}

static void test_frames_past_loader_depth_become_instances(void **state)
{
	char sdir[600];
	struct wtf_gen g = { .threads = 1, .steps = 1100, .max_depth = 1100, .nfuncs = 5, .detail_every = 50,
			 .start_ns = 1000, .step_ns = 1500, .dive = true };
	struct verify_stats vs;
	size_t nchunks;
	struct trace *tr;

	path_in(sdir, sizeof(sdir), "s3");
	g.dir = sdir;
	wtf_gen_session(&g);
	tr = export_all_forms(sdir, 8192, 0, UINT64_MAX, &nchunks);
	verify(sdir, tr, 0, UINT64_MAX, &vs);
	assert_int_equal(vs.index_events, 2200);
	assert_int_equal(vs.scopes, MAX_SCOPES);
	assert_int_equal(vs.deep, 1100 - MAX_SCOPES);
	assert_int_equal(tr->zones[0].max_depth, MAX_SCOPES);
	free_trace(tr);
}

static void test_more_functions_than_wire_ids(void **state)
{
	char sdir[600];
	struct wtf_gen g = { .threads = 1, .steps = 2 * 65600, .max_depth = 1, .nfuncs = 65600, .start_ns = 1000,
			 .step_ns = 200, .dive = true, .sequential_funcs = true };
	struct verify_stats vs;
	size_t nchunks;
	struct trace *tr;
	uint32_t scope_types = 0;

	path_in(sdir, sizeof(sdir), "s4");
	g.dir = sdir;
	wtf_gen_session(&g);
	tr = export_all_forms(sdir, 0, 0, UINT64_MAX, &nchunks);
	verify(sdir, tr, 0, UINT64_MAX, &vs);
	for (size_t w = 0; w < 65536; w++)
		scope_types += tr->types[w] && tr->types[w]->cls == 1 && strcmp(tr->types[w]->name, "atftrace#scope");
	assert_int_equal(vs.scopes, 65600);
	assert_int_equal(scope_types, 65000 - 10);      /* wire ids 11..65000 */
	assert_int_equal(vs.fallback_enters, 65600 - scope_types);
	free_trace(tr);
}

static void test_empty_range_is_a_valid_file(void **state)
{
	char sdir[600];
	struct wtf_gen g = { .threads = 1, .steps = 10, .max_depth = 3, .nfuncs = 3, .start_ns = 1000000,
			     .step_ns = 10 };
	struct verify_stats vs;
	size_t nchunks;
	struct trace *tr;

	path_in(sdir, sizeof(sdir), "s5");
	g.dir = sdir;
	wtf_gen_session(&g);
	tr = export_all_forms(sdir, 0, 1, 2, &nchunks);
	assert_int_equal(nchunks, 1);           /* the file-header chunk only */
	verify(sdir, tr, 1, 2, &vs);
	assert_int_equal(vs.index_events, 0);
	free_trace(tr);
}

static void test_range_over_71_minutes_is_refused(void **state)
{
	char sdir[600], out[600];
	/* one call and its return 72 minutes later */
	struct wtf_gen g = { .threads = 1, .steps = 1, .max_depth = 1, .nfuncs = 2, .start_ns = 1000,
			 .fixed_gap_ns = 72ull * 60 * 1000000000ull, .dive = true };

	path_in(sdir, sizeof(sdir), "s6");
	g.dir = sdir;
	wtf_gen_session(&g);
	path_in(out, sizeof(out), "long.wtf-trace");
	assert_int_equal(run_export(sdir, &wtf_ops, out, 0, false, 0, UINT64_MAX), -ERANGE);
	assert_int_equal(access(out, F_OK), -1);        /* no partial output left behind */
	/* the first 71 minutes export */
	assert_int_equal(run_export(sdir, &wtf_ops, out, 0, false, 0, 1000 + 71ull * 60 * 1000000000ull), 0);
}

/* each case gets a fresh temporary directory: the sessions and exports are large */
#define WTF_TEST(fn) cmocka_unit_test_setup_teardown(fn, gen_tmp_setup, gen_tmp_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		WTF_TEST(test_three_threads_match_session),
		WTF_TEST(test_range_starts_inside_frames),
		WTF_TEST(test_frames_past_loader_depth_become_instances),
		WTF_TEST(test_more_functions_than_wire_ids),
		WTF_TEST(test_empty_range_is_a_valid_file),
		WTF_TEST(test_range_over_71_minutes_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
