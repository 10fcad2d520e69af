// SPDX-License-Identifier: MIT
/*
 * The one reader loop behind `atftrace export`, `report` and `graph`: selects the processes,
 * threads and time range, resolves names and detail links, balances calls and returns, and
 * drives an ops table, merged by timestamp or thread by thread. Memory is O(threads x depth):
 * events are decoded one at a time from the mapped files.
 *
 * Balancing, done here once for every format: a return (or exception) whose call lies before
 * the range is dropped, and each call still open when its thread's part of the range ends is
 * closed by a made-up RETURN, at the range's end when the thread goes on past it, else at the
 * thread's last event. So every exporter sees properly nested, complete frames.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format.h"

/*
 * Direct-mapped cache of function display names: a symbol lookup is a binary search over the
 * manifest, and traces call the same few functions over and over.
 */
#define NAME_CACHE_SIZE 4096
struct name_cache {
	uint64_t id[NAME_CACHE_SIZE];
	const char *name[NAME_CACHE_SIZE];      /* NULL: empty slot */
	char hex[NAME_CACHE_SIZE][20];          /* storage for ids without a symbol */
};

static const char *cached_name(struct name_cache *c, struct atf_session *s, uint64_t id)
{
	size_t slot = (size_t)((id ^ id >> 29) * 0x9E3779B97F4A7C15ull >> 52) & (NAME_CACHE_SIZE - 1);
	const char *name;

	if (c->name[slot] && c->id[slot] == id)
		return c->name[slot];
	name = atf_session__name(s, id, c->hex[slot], sizeof(c->hex[slot]));
	c->id[slot] = id;
	c->name[slot] = name;
	return name;
}

void export_error(struct export_ctx *ctx, const char *fmt, ...)
{
	const struct export_options *o = ctx->opts;
	va_list ap;

	va_start(ap, fmt);
	if (o->error && o->error_len)
		vsnprintf(o->error, o->error_len, fmt, ap);
	else
		vfprintf(stderr, fmt, ap), fputc('\n', stderr);
	va_end(ap);
}

/* One call the exporter has seen and not yet seen return. */
struct open_call {
	struct atf_index_event ev;
};

struct thread_range {
	uint64_t lo, hi;        /* [lo, hi) index seqs inside the time range */
	uint64_t close_ns;      /* when the calls still open at hi are closed; UINT64_MAX: done */
	struct open_call *stack;
	size_t depth, cap;
};

struct reader {
	struct export_ctx *ctx;
	const struct export_ops *ops;
	struct name_cache *names;
	struct thread_range *r;         /* one per thread of ctx->session */
	uint64_t next_close_ns;         /* least close_ns of a thread with calls open (merged) */
};

static bool thread_selected(const struct export_options *o, const struct atf_thread *t)
{
	return o->thread_id < 0 || (int64_t)t->id == o->thread_id;
}

static uint64_t upper_bound(const struct atf_index_file *f, uint64_t to_ns)
{
	return to_ns == UINT64_MAX ? f->count : atf_index_lower_bound(f, to_ns + 1);
}

/* Seq range of every selected thread of @s, with ctx's totals updated. */
static void measure_process(struct export_ctx *ctx, struct atf_session *s, struct thread_range *r)
{
	const struct export_options *o = ctx->opts;
	struct atf_index_event ev;

	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_index_file *f = &s->threads[i].index;

		r[i] = (struct thread_range){ .close_ns = UINT64_MAX };
		if (!thread_selected(o, &s->threads[i]))
			continue;
		r[i].lo = atf_index_lower_bound(f, o->from_ns);
		r[i].hi = upper_bound(f, o->to_ns);
		if (r[i].hi <= r[i].lo)
			continue;
		ctx->nevents += r[i].hi - r[i].lo;
		atf_index_get(f, r[i].lo, &ev);
		if (ev.timestamp_ns < ctx->time_base_ns)
			ctx->time_base_ns = ev.timestamp_ns;
		atf_index_get(f, r[i].hi - 1, &ev);
		if (ev.timestamp_ns > ctx->time_end_ns)
			ctx->time_end_ns = ev.timestamp_ns;
		/* the thread goes on past the range: its open calls were open at the range's end */
		r[i].close_ns = r[i].hi < f->count ? o->to_ns : ev.timestamp_ns;
	}
}

/* Resolves name and detail for one event and hands it to the exporter. */
static int deliver(struct reader *rd, uint32_t thread, uint64_t seq, const struct atf_index_event *ev,
		   bool unfinished)
{
	struct export_ctx *ctx = rd->ctx;
	struct atf_session *s = ctx->session;
	const struct atf_thread *t = &s->threads[thread];
	struct atf_detail_event detail;
	struct export_event e = { .thread = thread, .seq = seq, .ev = *ev, .unfinished = unfinished };

	if (!rd->ops->event)
		return 0;
	e.name = cached_name(rd->names, s, ev->function_id);
	if (ev->detail_seq != ATF_NO_DETAIL && t->has_detail &&
	    atf_detail_get(&t->detail, ev->detail_seq, &detail) == 0)
		e.detail = &detail;
	return rd->ops->event(ctx, &e);
}

/* Closes @thread's open calls down to (and including) depth @depth, at @ts, innermost first. */
static int close_calls(struct reader *rd, uint32_t thread, uint32_t depth, uint64_t ts)
{
	struct thread_range *r = &rd->r[thread];
	int err;

	while (r->depth && r->stack[r->depth - 1].ev.call_depth >= depth) {
		struct atf_index_event ret = r->stack[--r->depth].ev;

		ret.timestamp_ns = ts;
		ret.event_kind = ATF_KIND_RETURN;
		ret.detail_seq = ATF_NO_DETAIL;
		if ((err = deliver(rd, thread, UINT64_MAX, &ret, true)))
			return err;
	}
	return 0;
}

/*
 * Balances and delivers one recorded event: a call is pushed; a return or exception pops its
 * call (closing, as unfinished, any deeper call whose return was lost), or is dropped when
 * its call was not delivered.
 */
static int balance(struct reader *rd, uint32_t thread, uint64_t seq, const struct atf_index_event *ev)
{
	struct thread_range *r = &rd->r[thread];
	int err;

	if (ev->event_kind == ATF_KIND_CALL) {
		if ((err = close_calls(rd, thread, ev->call_depth, ev->timestamp_ns)))
			return err;
		if (r->depth == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 64;
			struct open_call *st = realloc(r->stack, cap * sizeof(*st));

			if (!st)
				return -ENOMEM;
			r->stack = st;
			r->cap = cap;
		}
		r->stack[r->depth++].ev = *ev;
		return deliver(rd, thread, seq, ev, false);
	}
	if (!r->depth || r->stack[r->depth - 1].ev.call_depth < ev->call_depth) {
		rd->ctx->dropped_returns++;     /* its call lies before the range */
		return 0;
	}
	if ((err = close_calls(rd, thread, ev->call_depth + 1, ev->timestamp_ns)))
		return err;
	if (!r->depth || r->stack[r->depth - 1].ev.call_depth != ev->call_depth)
		return 0;
	r->depth--;
	return deliver(rd, thread, seq, ev, false);
}

/* Closes the calls still open in @thread at its close time; the thread has no more events. */
static int finish_thread(struct reader *rd, uint32_t thread)
{
	struct thread_range *r = &rd->r[thread];
	uint64_t at = r->close_ns;

	r->close_ns = UINT64_MAX;
	return r->depth ? close_calls(rd, thread, 0, at) : 0;
}

static int run_per_thread(struct reader *rd)
{
	struct export_ctx *ctx = rd->ctx;
	const struct export_ops *ops = rd->ops;
	struct atf_session *s = ctx->session;
	struct atf_index_event ev;
	int err;

	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_thread *t = &s->threads[i];
		struct thread_range *r = &rd->r[i];

		if (!thread_selected(ctx->opts, t))
			continue;
		if (ops->thread_begin && (err = ops->thread_begin(ctx, t)))
			return err;
		for (uint64_t seq = r->lo; seq < r->hi; seq++) {
			if (((seq - r->lo) & 0xffff) == 0xffff)   /* keep memory flat: see atf_index_release */
				atf_index_release(&t->index, seq - 0xffff, seq);
			atf_index_get(&t->index, seq, &ev);
			if ((err = balance(rd, (uint32_t)i, seq, &ev)))
				return err;
		}
		if ((err = finish_thread(rd, (uint32_t)i)))
			return err;
		if (ops->thread_end && (err = ops->thread_end(ctx, t)))
			return err;
	}
	return 0;
}

/* Merged: closes, in time order, the open calls of threads whose close time is before @ts. */
static int finish_threads_before(struct reader *rd, uint64_t ts)
{
	struct atf_session *s = rd->ctx->session;
	int err;

	while (rd->next_close_ns < ts) {
		size_t first = 0;

		for (size_t i = 1; i < s->nthreads; i++)
			if (rd->r[i].close_ns < rd->r[first].close_ns)
				first = i;
		if ((err = finish_thread(rd, (uint32_t)first)))
			return err;
		rd->next_close_ns = UINT64_MAX;
		for (size_t i = 0; i < s->nthreads; i++)
			if (rd->r[i].close_ns < rd->next_close_ns)
				rd->next_close_ns = rd->r[i].close_ns;
	}
	return 0;
}

static int run_merged(struct reader *rd)
{
	struct export_ctx *ctx = rd->ctx;
	const struct export_ops *ops = rd->ops;
	struct atf_session *s = ctx->session;
	const struct export_options *o = ctx->opts;
	struct atf_merge *m = NULL;
	struct atf_merge_event me;
	int err, more;

	rd->next_close_ns = UINT64_MAX;
	for (size_t i = 0; i < s->nthreads; i++) {
		if (rd->r[i].close_ns < rd->next_close_ns)
			rd->next_close_ns = rd->r[i].close_ns;
		if (thread_selected(o, &s->threads[i]) && ops->thread_begin &&
		    (err = ops->thread_begin(ctx, &s->threads[i])))
			return err;
	}
	err = atf_merge__new(&m, s, o->from_ns, o->to_ns, o->thread_id);
	if (err)
		return err;
	while ((more = atf_merge__next(m, &me)) > 0)
		if ((err = finish_threads_before(rd, me.ev.timestamp_ns)) ||
		    (err = balance(rd, me.thread, me.seq, &me.ev)))
			goto cleanup;
	err = more < 0 ? more : finish_threads_before(rd, UINT64_MAX);
	for (size_t i = 0; !err && i < s->nthreads; i++)
		if (thread_selected(o, &s->threads[i]) && ops->thread_end)
			err = ops->thread_end(ctx, &s->threads[i]);
cleanup:
	atf_merge__free(m);
	return err;
}

static void free_ranges(struct thread_range *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		free(r[i].stack);
	free(r);
}

int export_open(struct export_ctx *ctx, struct obuf **out, const char *path)
{
	struct atf_diag diag = { 0 };
	int err = obuf__open(out, path, 0, ctx->opts->force ? OBUF_FORCE : 0, &diag);

	if (err && diag.msg[0])
		export_error(ctx, "%s", diag.msg);
	return err;
}

int export_sessions(struct atf_session *const *sessions, size_t n, const struct export_ops *ops,
		    const struct export_options *opts)
{
	struct export_ctx ctx = { .opts = opts, .nprocesses = n, .time_base_ns = UINT64_MAX, .priv = opts->priv };
	struct thread_range **ranges;
	struct reader rd = { .ctx = &ctx, .ops = ops };
	int err = 0;

	if (!n || (n > 1 && !ops->processes))
		return -EINVAL;
	ranges = calloc(n, sizeof(*ranges));
	rd.names = calloc(1, sizeof(*rd.names));
	if (!ranges || !rd.names) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t p = 0; p < n; p++) {
		if (!(ranges[p] = calloc(sessions[p]->nthreads ? sessions[p]->nthreads : 1, sizeof(**ranges)))) {
			err = -ENOMEM;
			goto cleanup;
		}
		measure_process(&ctx, sessions[p], ranges[p]);
	}
	if (ctx.time_base_ns == UINT64_MAX)
		ctx.time_base_ns = ctx.time_end_ns = 0;
	ctx.session = sessions[0];
	if (!ops->writes_directory && opts->out_path && (err = export_open(&ctx, &ctx.out, opts->out_path)))
		goto cleanup;
	if (ops->begin && (err = ops->begin(&ctx)))
		goto cleanup;
	for (size_t p = 0; p < n && !err; p++) {
		ctx.process = p;
		ctx.session = sessions[p];
		rd.r = ranges[p];
		memset(rd.names, 0, sizeof(*rd.names));         /* function ids are per process */
		if (ops->process_begin && (err = ops->process_begin(&ctx)))
			break;
		err = ops->per_thread ? run_per_thread(&rd) : run_merged(&rd);
		if (!err && ops->process_end)
			err = ops->process_end(&ctx);
	}
	if (!err && ops->end)
		err = ops->end(&ctx);
	if (!err && ctx.out) {
		err = obuf__close(ctx.out);
		ctx.out = NULL;
	}
cleanup:
	if (ctx.out)
		obuf__abort(ctx.out);
	if (ops->cleanup)
		ops->cleanup(&ctx);
	for (size_t p = 0; ranges && p < n; p++)
		free_ranges(ranges[p], sessions[p]->nthreads);
	free(rd.names);
	free(ranges);
	return err;
}

int export_session(struct atf_session *s, const struct export_ops *ops, const struct export_options *opts)
{
	return export_sessions(&s, 1, ops, opts);
}
