// SPDX-License-Identifier: MIT
/*
 * speedscope's own file format (https://www.speedscope.app/file-format-schema.json, the
 * schema in speedscope's repository at src/lib/file-format-spec.ts):
 *
 *   {"$schema":"https://www.speedscope.app/file-format-schema.json","exporter":"atftrace ...",
 *    "name":"<process>","activeProfileIndex":0,
 *    "profiles":[{"type":"evented","name":"<comm> (pid P) tid T","unit":"nanoseconds",
 *                 "events":[{"type":"O","frame":F,"at":NS},{"type":"C","frame":F,"at":NS},...],
 *                 "startValue":NS,"endValue":NS}, ...],
 *    "shared":{"frames":[{"name":"main"}, ...]}}
 *
 * One evented profile per thread (threads are delivered one after another), in every process
 * of a multi-process session; a thread with no event in the range gets none (as in the Chrome
 * export), since speedscope opens on the first profile and an empty one shows a blank page. A
 * profile is begun at its thread's first event. A call opens its function's frame, a return or an exception
 * closes it; export_sessions() balances the stream, which speedscope requires (it refuses a
 * profile that ends with frames open). "at" is nanoseconds since the first exported event.
 * Frames are shared by name across threads and processes; they are written last, once all are
 * known (JSON objects are unordered). Memory: one entry per distinct function name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format.h"
#include "func_index.h"
#include "utf8.h"

#define ID_CACHE_SIZE 4096
#define NAME_MAX_KEPT (1u << 20)

struct speedscope_state {
	struct func_index frames;       /* key: hash of the name; index = frame number */
	uint64_t cache_id[ID_CACHE_SIZE];       /* function id -> frame + 1, this process */
	uint32_t cache_frame[ID_CACHE_SIZE];
	bool first_profile, first_event;
	bool in_profile;                /* this thread's profile is begun (it has an event) */
	char label[512];                /* this thread's profile name, until its first event */
	uint64_t first_at, last_at;     /* this thread's */
	char *json;                     /* scratch for one quoted name */
	size_t json_cap;
};

/* @s as a quoted JSON string in st->json; NULL on ENOMEM. */
static const char *quoted(struct speedscope_state *st, const char *s)
{
	size_t need = UTF8_JSON_BOUND(strlen(s)) + 1;

	if (need > st->json_cap) {
		char *j = realloc(st->json, need);

		if (!j)
			return NULL;
		st->json = j;
		st->json_cap = need;
	}
	*utf8_put_json(st->json, s, strlen(s)) = '\0';
	return st->json;
}

static int put(struct export_ctx *ctx, const char *s)
{
	return obuf__write(ctx->out, s, strlen(s));
}

static int speedscope_begin(struct export_ctx *ctx)
{
	struct speedscope_state *st = calloc(1, sizeof(*st));
	const char *name = ctx->session->manifest->process_name;
	const char *q;
	char buf[128];
	int err;

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	st->frames.name_max = NAME_MAX_KEPT;
	st->first_profile = true;
	snprintf(buf, sizeof(buf), "atftrace %s", ATFTRACE_VERSION);
	if ((err = put(ctx, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":")))
		return err;
	if (!(q = quoted(st, buf)) || (err = put(ctx, q)) || (err = put(ctx, ",\"name\":")))
		return q ? err : -ENOMEM;
	if (!(q = quoted(st, ctx->nprocesses > 1 ? "whole system" : name ? name : "atftrace")) ||
	    (err = put(ctx, q)))
		return q ? err : -ENOMEM;
	return put(ctx, ",\"activeProfileIndex\":0,\"profiles\":[");
}

static int speedscope_process_begin(struct export_ctx *ctx)
{
	struct speedscope_state *st = ctx->priv;

	memset(st->cache_frame, 0, sizeof(st->cache_frame));    /* function ids are per process */
	return 0;
}

static int speedscope_thread_begin(struct export_ctx *ctx, const struct atf_thread *t)
{
	struct speedscope_state *st = ctx->priv;
	const struct atf_manifest *m = ctx->session->manifest;

	snprintf(st->label, sizeof(st->label), "%s (pid %u) tid %u%s%s", m->process_name ? m->process_name : "?",
		 m->pid, t->tid, t->name ? " " : "", t->name ? t->name : "");
	st->in_profile = false;
	st->first_event = true;
	st->first_at = st->last_at = 0;
	return 0;
}

/* Writes the head of the profile named st->label. */
static int profile_begin(struct export_ctx *ctx, struct speedscope_state *st)
{
	const char *q;
	int err;

	if ((err = put(ctx, st->first_profile ? "\n{" : ",\n{")))
		return err;
	st->first_profile = false;
	st->in_profile = true;
	if ((err = put(ctx, "\"type\":\"evented\",\"name\":")))
		return err;
	if (!(q = quoted(st, st->label)))
		return -ENOMEM;
	if ((err = put(ctx, q)))
		return err;
	return put(ctx, ",\"unit\":\"nanoseconds\",\"events\":[");
}

/* Closes the current profile. */
static int profile_end(struct export_ctx *ctx, struct speedscope_state *st)
{
	char buf[96];

	snprintf(buf, sizeof(buf), "],\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64 "}", st->first_at,
		 st->last_at);
	st->in_profile = false;
	return put(ctx, buf);
}

static int64_t frame_of(struct speedscope_state *st, const struct export_event *e)
{
	size_t slot = (size_t)((e->ev.function_id ^ e->ev.function_id >> 29) * 0x9E3779B97F4A7C15ull >> 52) &
		      (ID_CACHE_SIZE - 1);
	int64_t f;

	if (st->cache_frame[slot] && st->cache_id[slot] == e->ev.function_id)
		return st->cache_frame[slot] - 1;
	if ((f = func_index__get(&st->frames, func_name_hash(e->name), e->name)) < 0)
		return f;
	st->cache_id[slot] = e->ev.function_id;
	st->cache_frame[slot] = (uint32_t)f + 1;
	return f;
}

static int speedscope_event(struct export_ctx *ctx, const struct export_event *e)
{
	struct speedscope_state *st = ctx->priv;
	uint64_t at = e->ev.timestamp_ns - ctx->time_base_ns;
	int64_t frame = frame_of(st, e);
	char buf[96];
	int n;

	if (frame < 0)
		return (int)frame;
	if (!st->in_profile && (n = profile_begin(ctx, st)))
		return n;
	if (st->first_event)
		st->first_at = at;
	st->last_at = at;
	n = snprintf(buf, sizeof(buf), "%s{\"type\":\"%c\",\"frame\":%" PRId64 ",\"at\":%" PRIu64 "}",
		     st->first_event ? "\n" : ",\n", e->ev.event_kind == ATF_KIND_CALL ? 'O' : 'C', frame, at);
	st->first_event = false;
	return obuf__write(ctx->out, buf, (size_t)n);
}

static int speedscope_thread_end(struct export_ctx *ctx, const struct atf_thread *t)
{
	struct speedscope_state *st = ctx->priv;

	return st->in_profile ? profile_end(ctx, st) : 0;
}

static int speedscope_end(struct export_ctx *ctx)
{
	struct speedscope_state *st = ctx->priv;
	const char *q;
	int err;

	/* nothing in the range: one empty profile, so the file still opens */
	if (st->first_profile && ((err = profile_begin(ctx, st)) || (err = profile_end(ctx, st))))
		return err;
	if ((err = put(ctx, "\n],\"shared\":{\"frames\":[")))
		return err;
	for (size_t i = 0; i < st->frames.n; i++) {
		const char *name = st->frames.funcs[i].name ? st->frames.funcs[i].name : "?";

		if ((err = put(ctx, i ? ",\n{\"name\":" : "\n{\"name\":")))
			return err;
		if (!(q = quoted(st, name)))
			return -ENOMEM;
		if ((err = put(ctx, q)) || (err = put(ctx, "}")))
			return err;
	}
	return put(ctx, "\n]}}\n");
}

static void speedscope_cleanup(struct export_ctx *ctx)
{
	struct speedscope_state *st = ctx->priv;

	if (!st)
		return;
	func_index__free(&st->frames);
	free(st->json);
	free(st);
	ctx->priv = NULL;
}

const struct export_ops speedscope_ops = {
	.name = "speedscope",
	.description = "speedscope JSON: an evented profile per thread, every process (speedscope.app)",
	.per_thread = true,
	.processes = true,
	.begin = speedscope_begin,
	.process_begin = speedscope_process_begin,
	.thread_begin = speedscope_thread_begin,
	.event = speedscope_event,
	.thread_end = speedscope_thread_end,
	.end = speedscope_end,
	.cleanup = speedscope_cleanup,
};
