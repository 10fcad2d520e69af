/* SPDX-License-Identifier: MIT */
/*
 * Test helper for the exporter tests: writes synthetic sessions with libatf's writer.
 *
 * gen_session (test_export_dial9/perfetto/chrome.c) keeps every event it wrote, so a test can
 * compare an exporter's output with what was recorded without going through the readers.
 * gen_params_session (test_export_rtc/zts.c) is shaped by struct gen_params (size, depth, detail
 * rate, function count, deep nesting, a very long name) and is compared through the readers.
 *
 * The gen_session session: one process (pid GEN_PID) with N threads (tids GEN_TID0 + i), a random but
 * well-nested call tree per thread (calls, returns, exceptions; frames may stay open at the
 * end), timestamps stepping by gaps drawn from a caller's table, a detail record with
 * registers and 0-180 stack bytes on every third call or return, and function names that
 * need escaping or UTF-8 repair plus one function id missing from the manifest.
 */
#ifndef EXPORT_GEN_H
#define EXPORT_GEN_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "atf.h"
#include "balance_model.h"
#include "format.h"

#define GEN_PID            4242u
#define GEN_TID0           100u
#define GEN_TS0            10000000000000ull   /* 10^13 ns: a boottime of ~2.8 hours */
#define GEN_NSYMS          5
#define GEN_UNKNOWN_INDEX  99u                  /* symbol index not in the manifest */
#define GEN_MAX_DEPTH      6

static const char *const gen_symbols[GEN_NSYMS] = {
	"main", "parse_expr", "quote\"back\\slash\ttab\x01", "bad\xff\xc3(\xed\xa0\x80utf8",
	"caf\xc3\xa9_\xf0\x9f\x98\x80",
};
static const char *const gen_thread_names[] = { "main", "work\xff" "er", NULL, "t3" };
static const char gen_process_name[] = "gen\"demo";

struct gen_event {
	uint32_t thread;                /* index in the manifest and the session */
	uint64_t seq;
	struct atf_index_event ev;      /* as written (detail_seq filled by the writer) */
	bool has_detail;
	uint16_t detail_flags;
	struct atf_detail_payload pl;
	uint8_t stack[ATF_DETAIL_MAX_STACK];
	bool unfinished;                /* a made-up close of a call still open at the end */
};

struct gen {
	char root[64];                  /* temporary directory */
	char dir[128];                  /* root/pid_<GEN_PID>: the process directory */
	uint32_t nthreads;
	struct gen_event *ev;           /* every event, sorted by (timestamp, thread, seq) */
	size_t n;
	struct gen_event *synth;        /* gen_select's made-up closes */
};

static inline uint64_t gen_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline int gen_cmp(const void *a, const void *b)
{
	const struct gen_event *x = a, *y = b;

	if (x->ev.timestamp_ns != y->ev.timestamp_ns)
		return x->ev.timestamp_ns < y->ev.timestamp_ns ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static inline void gen_thread(struct gen *g, struct atf_thread_writer *w, uint32_t t, uint32_t count,
			      const uint64_t *gaps, size_t ngaps, uint64_t *rng, uint32_t module_id)
{
	uint64_t stack[GEN_MAX_DEPTH], ts = GEN_TS0 + t * 7;
	uint32_t depth = 0;
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + ATF_DETAIL_MAX_STACK];

	for (uint32_t i = 0; i < count; i++) {
		struct gen_event *e = &g->ev[g->n++];
		uint64_t r = gen_rand(rng);
		struct atf_detail_in din = { 0 };

		memset(e, 0, sizeof(*e));
		e->thread = t;
		if (depth == 0 || (depth < GEN_MAX_DEPTH && r % 100 < 55)) {
			uint32_t idx = (uint32_t)(r >> 8) % (GEN_NSYMS + 1) + 1;

			e->ev.function_id = (uint64_t)module_id << 32 | (idx > GEN_NSYMS ? GEN_UNKNOWN_INDEX : idx);
			e->ev.event_kind = ATF_KIND_CALL;
			e->ev.call_depth = depth;
			stack[depth++] = e->ev.function_id;
		} else {
			e->ev.function_id = stack[--depth];
			e->ev.event_kind = r % 100 < 62 ? ATF_KIND_EXCEPTION : ATF_KIND_RETURN;
			e->ev.call_depth = depth;
		}
		ts += gaps[(r >> 24) % ngaps];
		e->ev.timestamp_ns = ts;
		e->ev.thread_id = t;
		e->has_detail = e->ev.event_kind != ATF_KIND_EXCEPTION && i % 3 == 0;
		if (e->has_detail) {
			e->pl.function_id = e->ev.function_id;
			for (int k = 0; k < ATF_DETAIL_GP_REGS; k++)
				e->pl.gp[k] = gen_rand(rng) >> (k * 7);   /* small and full-width values */
			e->pl.lr = 0x7f0000001000ull + i;
			e->pl.fp = 0x7ffc00000000ull + i * 16;
			e->pl.sp = UINT64_MAX - i;
			e->pl.stack_size = (uint16_t)((i % 4) * 60);
			for (uint16_t b = 0; b < e->pl.stack_size; b++)
				e->stack[b] = (uint8_t)(i * 31 + b);
			e->detail_flags = (uint16_t)(i & 3);
			atf_detail_payload_encode(payload, &e->pl);
			memcpy(payload + ATF_DETAIL_PAYLOAD_SIZE, e->stack, e->pl.stack_size);
			din.event_type = e->ev.event_kind == ATF_KIND_CALL ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN;
			din.flags = e->detail_flags;
			din.payload = payload;
			din.payload_len = ATF_DETAIL_PAYLOAD_SIZE + e->pl.stack_size;
		}
		int64_t seq = atf_thread_writer__append(w, &e->ev, e->has_detail ? &din : NULL);

		if (seq < 0) {
			fprintf(stderr, "gen: append: %s\n", atf_strerror((int)seq));
			abort();
		}
		e->seq = (uint64_t)seq;
	}
}

/** gen_session - write a session of @nthreads threads x @per_thread events into a new temp dir. */
static inline void gen_session(struct gen *g, uint32_t nthreads, uint32_t per_thread, const uint64_t *gaps,
			       size_t ngaps, uint64_t seed)
{
	struct atf_manifest *m = atf_manifest__new();
	uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
	char path[256];
	struct atf_module *mod;
	uint32_t module_id;

	memset(g, 0, sizeof(*g));
	snprintf(g->root, sizeof(g->root), "/tmp/atf_export_test_XXXXXX");
	if (!m || !mkdtemp(g->root))
		abort();
	snprintf(g->dir, sizeof(g->dir), "%s/pid_%u", g->root, GEN_PID);
	if (mkdir(g->dir, 0755))
		abort();
	g->nthreads = nthreads;
	g->ev = calloc((size_t)nthreads * per_thread + 1, sizeof(*g->ev));
	mod = atf_manifest__add_module(m, "/usr/bin/gen-demo");
	if (!g->ev || !mod)
		abort();
	module_id = mod->module_id;
	for (uint32_t i = 0; i < GEN_NSYMS; i++)
		if (!atf_manifest__add_symbol(m, module_id, i + 1, gen_symbols[i]))
			abort();
	for (uint32_t t = 0; t < nthreads; t++) {
		struct atf_thread_writer *w;
		struct atf_thread_info *ti;

		if (atf_thread_writer__new(&w, g->dir, t, GEN_TID0 + t))
			abort();
		gen_thread(g, w, t, per_thread, gaps, ngaps, &rng, module_id);
		if (atf_thread_writer__finalize(w))
			abort();
		ti = atf_manifest__add_thread(m, t, GEN_TID0 + t, gen_thread_names[t % 4]);
		if (!ti)
			abort();
		ti->index_events = atf_thread_writer__index_count(w);
		ti->detail_events = atf_thread_writer__detail_count(w);
		ti->has_detail = ti->detail_events > 0;
		atf_thread_writer__free(w);
	}
	m->pid = GEN_PID;
	m->process_name = strdup(gen_process_name);
	m->time_start_ns = GEN_TS0 - 5000;
	snprintf(path, sizeof(path), "%s/manifest.json", g->dir);
	if (atf_manifest__save(m, path))
		abort();
	atf_manifest__free(m);
	qsort(g->ev, g->n, sizeof(*g->ev), gen_cmp);
}

/**
 * gen_select - pointers to the events an export of (@thread, @from..@to) holds, in order: the
 * balanced stream of balance_model.h, whose made-up closes live in g->synth (valid until the
 * next call). @out needs room for 2 * g->n entries.
 */
static inline size_t gen_select(struct gen *g, int64_t thread, uint64_t from, uint64_t to,
				const struct gen_event **out)
{
	const struct gen_event **in = calloc(g->n + 1, sizeof(*in));
	struct bal_in *b = calloc(g->n + 1, sizeof(*b));
	struct bal_out *o = calloc(2 * g->n + 1, sizeof(*o));
	uint64_t close_ns[64] = { 0 };
	size_t n = 0, k, ns = 0;

	if (!in || !b || !o || g->nthreads > 64)
		abort();
	for (size_t i = 0; i < g->n; i++) {
		const struct gen_event *e = &g->ev[i];

		if (thread >= 0 && e->thread != (uint64_t)thread)
			continue;
		if (e->ev.timestamp_ns > to && !close_ns[e->thread])
			close_ns[e->thread] = to;               /* the thread goes on past the range */
		if (e->ev.timestamp_ns < from || e->ev.timestamp_ns > to)
			continue;
		in[n] = e;
		b[n++] = (struct bal_in){ e->thread, e->ev.timestamp_ns, e->ev.event_kind, e->ev.call_depth };
	}
	for (size_t i = n; i-- > 0;)            /* else: at the thread's last event in the range */
		if (close_ns[b[i].thread] == 0)
			close_ns[b[i].thread] = b[i].ts;
	k = bal_model(b, n, g->nthreads, close_ns, o);
	free(g->synth);
	g->synth = calloc(k + 1, sizeof(*g->synth));
	if (!g->synth)
		abort();
	for (size_t i = 0; i < k; i++) {
		struct gen_event *s;

		if (o[i].src >= 0) {
			out[i] = in[o[i].src];
			continue;
		}
		s = &g->synth[ns++];
		*s = *in[o[i].call];
		s->seq = UINT64_MAX;
		s->ev.event_kind = ATF_KIND_RETURN;
		s->ev.timestamp_ns = o[i].ts;
		s->ev.detail_seq = ATF_NO_DETAIL;
		s->has_detail = false;
		s->unfinished = true;
		out[i] = s;
	}
	free(in);
	free(b);
	free(o);
	return k;
}

/** gen_export - run @ops over the session; returns the output bytes (malloc'd) and their length. */
static inline uint8_t *gen_export(const struct gen *g, const struct export_ops *ops, int64_t thread,
				  uint64_t from, uint64_t to, size_t *len)
{
	struct export_options o = { .thread_id = thread, .from_ns = from, .to_ns = to };
	struct atf_session *s = NULL;
	struct atf_diag diag = { 0 };
	char out[256];
	uint8_t *buf;
	FILE *f;
	long size;
	int err;

	snprintf(out, sizeof(out), "%s/out.%s", g->root, ops->name);
	o.out_path = out;
	o.force = true;         /* one output path, written again by each test */
	if ((err = atf_session__open(&s, g->dir, 0, &diag)) ||
	    (err = export_session(s, ops, &o))) {
		fprintf(stderr, "gen_export: %s (%s)\n", atf_strerror(err), diag.msg);
		abort();
	}
	atf_session__close(s);
	f = fopen(out, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		abort();
	buf = malloc((size_t)size + 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
		abort();
	fclose(f);
	buf[size] = 0;
	*len = (size_t)size;
	return buf;
}

static inline int gen_rm(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static inline void gen_free(struct gen *g)
{
	free(g->synth);
	g->synth = NULL;
	nftw(g->root, gen_rm, 16, FTW_DEPTH | FTW_PHYS);
	free(g->ev);
}

/* ---- parameterised sessions (test_export_rtc.c, test_export_zts.c) --------------------------- */

#define GEN_PARAMS_T0      5000000000ull        /* manifest time_start_ns */
#define GEN_PARAMS_TID0    1000u
#define GEN_BAD_UTF8_FUNC  3u                   /* function 3's name and thread 1's are not UTF-8 */

struct gen_params {
	uint32_t threads, events, depth, detail_every, nfuncs, seed;
	uint32_t deep;          /* non-zero: D calls down, then D returns, repeated (depth unused) */
	bool long_name;         /* function 2 gets a 1500-byte name */
};

static char gen_tmpdir[64];     /* one per test program: gen_tmp_setup / gen_tmp_teardown */

static inline int gen_tmp_setup(void **state)
{
	snprintf(gen_tmpdir, sizeof(gen_tmpdir), "/tmp/atf_export_test_XXXXXX");
	return mkdtemp(gen_tmpdir) ? 0 : -1;
}

static inline int gen_tmp_teardown(void **state)
{
	return nftw(gen_tmpdir, gen_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Registers derived from @i, and 64 stack bytes on every third record. */
static inline void gen_params_payload(uint8_t *buf, uint32_t *len, uint64_t i)
{
	struct atf_detail_payload p = { .function_id = i, .lr = i + 1, .fp = i + 2, .sp = i + 3,
					.stack_size = (uint16_t)(i % 3 ? 0 : 64) };

	for (int r = 0; r < ATF_DETAIL_GP_REGS; r++)
		p.gp[r] = i * 1000 + (uint64_t)r;
	atf_detail_payload_encode(buf, &p);
	for (int k = 0; k < p.stack_size; k++)
		buf[ATF_DETAIL_PAYLOAD_SIZE + k] = (uint8_t)(i + (uint64_t)k);
	*len = ATF_DETAIL_PAYLOAD_SIZE + p.stack_size;
}

static inline void gen_params_thread(const struct gen_params *g, struct atf_thread_writer *w, uint32_t t,
				     uint32_t mod, uint64_t *rng)
{
	uint64_t ts = GEN_PARAMS_T0 + t * 3, *fstack = malloc((g->events + 1) * sizeof(*fstack));
	uint32_t depth = 0;
	bool down = true;

	if (!fstack)
		abort();
	for (uint32_t i = 0; i < g->events; i++) {
		uint32_t r = (uint32_t)(gen_rand(rng) >> 32);
		struct atf_index_event ev = { .thread_id = GEN_PARAMS_TID0 + t };
		uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + 256];
		struct atf_detail_in din = { .payload = payload };
		bool call;

		if (g->deep) {
			down = depth == g->deep ? false : depth == 0 ? true : down;
			call = down;
		} else {
			call = depth == 0 || (depth < g->depth && r % 2);
		}
		if (i % 7 != 3)
			ts += 300 + r % 1500;   /* else a tie with the previous event */
		if (r % 211 == 0)
			ts += 5000000;          /* beyond RTC's 2^21 ns clk span */
		ev.timestamp_ns = ts;
		if (call) {
			ev.function_id = (uint64_t)mod << 32 | (1 + (r >> 8) % g->nfuncs);
			ev.event_kind = ATF_KIND_CALL;
			fstack[depth] = ev.function_id;
			ev.call_depth = depth++;
		} else {                /* a return names the function its call entered */
			ev.event_kind = r % 13 == 0 ? ATF_KIND_EXCEPTION : ATF_KIND_RETURN;
			ev.call_depth = --depth;
			ev.function_id = fstack[depth];
		}
		din.event_type = call ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN;
		din.flags = (uint16_t)(i & 1);
		gen_params_payload(payload, &din.payload_len, (uint64_t)i * 10 + t);
		if (atf_thread_writer__append(w, &ev, g->detail_every && i % g->detail_every == 0 ? &din : NULL) < 0)
			abort();
	}
	free(fstack);
}

/**
 * gen_params_session - write a session shaped by @g under gen_tmpdir/<@name>.<n> and open it.
 * Functions 1..nfuncs-1 have symbols ("func_<i>"; the last one has none, so it exports as 0x...),
 * threads are "worker-<t>" with tids GEN_PARAMS_TID0 + t.
 */
static inline struct atf_session *gen_params_session(const char *name, const struct gen_params *g)
{
	static int serial;
	struct atf_manifest *m = atf_manifest__new();
	char dir[256], path[300], fname[1600];
	uint32_t mod = atf_module_id("/usr/bin/gen");
	uint64_t rng = g->seed * 0x9E3779B97F4A7C15ull + 1;
	struct atf_session *s = NULL;

	snprintf(dir, sizeof(dir), "%s/%s.%d", gen_tmpdir, name, serial++);
	if (!m || mkdir(dir, 0755) || !atf_manifest__add_module(m, "/usr/bin/gen"))
		abort();
	m->time_start_ns = GEN_PARAMS_T0;
	m->start_time = strdup("2024-05-01T12:00:00.250Z");
	for (uint32_t f = 1; f < g->nfuncs; f++) {
		if (f == 2 && g->long_name) {
			memset(fname, 'L', 1500);
			fname[1500] = 0;
		} else {
			snprintf(fname, sizeof(fname), f == GEN_BAD_UTF8_FUNC ? "bad\xff\xc3(func_%u" : "func_%u", f);
		}
		if (!atf_manifest__add_symbol(m, mod, f, fname))
			abort();
	}
	for (uint32_t t = 0; t < g->threads; t++) {
		struct atf_thread_writer *w;
		struct atf_thread_info *ti;
		char tname[32];

		snprintf(tname, sizeof(tname), t == 1 ? "worker\xff-%u" : "worker-%u", t);
		if (!(ti = atf_manifest__add_thread(m, t, GEN_PARAMS_TID0 + t, tname)) ||
		    atf_thread_writer__new(&w, dir, t, GEN_PARAMS_TID0 + t))
			abort();
		gen_params_thread(g, w, t, mod, &rng);
		ti->index_events = atf_thread_writer__index_count(w);
		ti->detail_events = atf_thread_writer__detail_count(w);
		ti->has_detail = ti->detail_events > 0;
		if (atf_thread_writer__finalize(w))
			abort();
		atf_thread_writer__free(w);
	}
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	if (atf_manifest__save(m, path) || atf_session__open(&s, dir, 0, NULL))
		abort();
	atf_manifest__free(m);
	return s;
}

#endif
