// SPDX-License-Identifier: MIT
/*
 * The one reader loop behind `atftrace export`: selects the threads and time range, resolves
 * names and detail links, and drives an exporter's ops table, merged by timestamp or thread by
 * thread. Memory is O(threads): events are decoded one at a time from the mapped files.
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

struct thread_range {
	uint64_t lo, hi;        /* [lo, hi) index seqs inside the time range */
};

static bool thread_selected(const struct export_options *o, const struct atf_thread *t)
{
	return o->thread_id < 0 || (int64_t)t->id == o->thread_id;
}

static uint64_t upper_bound(const struct atf_index_file *f, uint64_t to_ns)
{
	return to_ns == UINT64_MAX ? f->count : atf_index_lower_bound(f, to_ns + 1);
}

/* Fills ctx->nevents, time_base_ns and time_end_ns for the selected range. */
static void measure_range(struct export_ctx *ctx, struct thread_range *r)
{
	struct atf_session *s = ctx->session;
	const struct export_options *o = ctx->opts;
	struct atf_index_event ev;

	ctx->time_base_ns = UINT64_MAX;
	ctx->time_end_ns = 0;
	ctx->nevents = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_index_file *f = &s->threads[i].index;

		r[i].lo = r[i].hi = 0;
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
	}
	if (ctx->time_base_ns == UINT64_MAX)
		ctx->time_base_ns = ctx->time_end_ns = 0;
}

/* Resolves name and detail for one event and hands it to the exporter. */
static int deliver(struct export_ctx *ctx, const struct export_ops *ops, struct name_cache *names,
		   uint32_t thread, uint64_t seq, const struct atf_index_event *ev)
{
	struct atf_session *s = ctx->session;
	const struct atf_thread *t = &s->threads[thread];
	struct atf_detail_event detail;
	struct export_event e = { .thread = thread, .seq = seq, .ev = *ev };

	if (!ops->event)
		return 0;
	e.name = cached_name(names, s, ev->function_id);
	if (ev->detail_seq != ATF_NO_DETAIL && t->has_detail &&
	    atf_detail_get(&t->detail, ev->detail_seq, &detail) == 0)
		e.detail = &detail;
	return ops->event(ctx, &e);
}

static int run_per_thread(struct export_ctx *ctx, const struct export_ops *ops, struct name_cache *names,
			  const struct thread_range *r)
{
	struct atf_session *s = ctx->session;
	struct atf_index_event ev;
	int err;

	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_thread *t = &s->threads[i];

		if (!thread_selected(ctx->opts, t))
			continue;
		if (ops->thread_begin && (err = ops->thread_begin(ctx, t)))
			return err;
		for (uint64_t seq = r[i].lo; seq < r[i].hi; seq++) {
			if (((seq - r[i].lo) & 0xffff) == 0xffff)   /* keep memory flat: see atf_index_release */
				atf_index_release(&t->index, seq - 0xffff, seq);
			atf_index_get(&t->index, seq, &ev);
			if ((err = deliver(ctx, ops, names, (uint32_t)i, seq, &ev)))
				return err;
		}
		if (ops->thread_end && (err = ops->thread_end(ctx, t)))
			return err;
	}
	return 0;
}

static int run_merged(struct export_ctx *ctx, const struct export_ops *ops, struct name_cache *names)
{
	struct atf_session *s = ctx->session;
	const struct export_options *o = ctx->opts;
	struct atf_merge *m = NULL;
	struct atf_merge_event me;
	int err, more;

	for (size_t i = 0; i < s->nthreads; i++)
		if (thread_selected(o, &s->threads[i]) && ops->thread_begin &&
		    (err = ops->thread_begin(ctx, &s->threads[i])))
			return err;
	err = atf_merge__new(&m, s, o->from_ns, o->to_ns, o->thread_id);
	if (err)
		return err;
	while ((more = atf_merge__next(m, &me)) > 0)
		if ((err = deliver(ctx, ops, names, me.thread, me.seq, &me.ev)))
			goto cleanup;
	err = more < 0 ? more : 0;
	for (size_t i = 0; !err && i < s->nthreads; i++)
		if (thread_selected(o, &s->threads[i]) && ops->thread_end)
			err = ops->thread_end(ctx, &s->threads[i]);
cleanup:
	atf_merge__free(m);
	return err;
}

int export_session(struct atf_session *s, const struct export_ops *ops, const struct export_options *opts)
{
	struct export_ctx ctx = { .session = s, .opts = opts };
	struct thread_range *ranges;
	struct name_cache *names;
	int err;

	ranges = calloc(s->nthreads ? s->nthreads : 1, sizeof(*ranges));
	names = calloc(1, sizeof(*names));
	if (!ranges || !names) {
		err = -ENOMEM;
		goto cleanup;
	}
	measure_range(&ctx, ranges);
	if (!ops->writes_directory && (err = obuf__open(&ctx.out, opts->out_path, 0)))
		goto cleanup;
	if (ops->begin && (err = ops->begin(&ctx)))
		goto cleanup;
	err = ops->per_thread ? run_per_thread(&ctx, ops, names, ranges) : run_merged(&ctx, ops, names);
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
	free(names);
	free(ranges);
	return err;
}
