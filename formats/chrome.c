// SPDX-License-Identifier: MIT
/*
 * Chrome JSON trace exporter (the Trace Event Format read by chrome://tracing, Perfetto UI and
 * speedscope): {"traceEvents":[...],"displayTimeUnit":"ns"}.
 *
 * - "M" metadata events name each process (process_name) and each thread (thread_name); a
 *   session of several processes (-a, --follow-fork) is one trace, each under its own pid;
 * - a call is a "B" event and its return an "E" event carrying the same name and, like the B,
 *   no args: speedscope closes a frame only on an E whose name (and args) equal its B's, and
 *   counts args in a frame's identity, so registers on a B would make every call a frame of its
 *   own. Events are merged by timestamp within a process, one per line;
 * - an exception (a frame left by unwinding) is its "E" plus a thread-scoped instant event
 *   ("ph":"i","s":"t") named "unwound" with args.function; speedscope ignores instant events,
 *   chrome://tracing and Perfetto draw them as markers on the thread;
 * - a linked detail record is an instant event named "detail" at the event's time, with
 *   args.function, args.event ("call" or "return"), the registers as "0x..." strings (JSON
 *   numbers are doubles and would round 64-bit values), flags and stack_size, and for a
 *   function with typed arguments (record -A/-R/--auto-args) args.arguments ("42, \"s\"", as
 *   dump prints them) at a call or args.retval at a return;
 * - pid is the manifest pid, tid the OS thread id;
 * - ts is microseconds with three decimals, so the boottime nanosecond is kept exactly;
 * - names are JSON-escaped for any bytes: '"', '\\' and control characters are escaped, and
 *   each maximal invalid UTF-8 subpart becomes U+FFFD, so the output is always valid JSON.
 * Memory: a staging buffer and one short prefix string per thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atf_args.h"
#include "format.h"
#include "utf8.h"

#define STAGE_SIZE      (256u * 1024)
#define EVENT_FIXED_MAX 1024u   /* bound on one event line without its name */
#define PREFIX_MAX      64u

struct chrome_state {
	char (*prefix)[PREFIX_MAX];     /* per thread of the current process: ,"pid":P,"tid":T,"ts": */
	bool first;                     /* no event written yet: no separator */
	char *stage;
	size_t len, cap;
};

/* ---- text helpers -------------------------------------------------------------------------- */

static inline char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

static inline char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static inline char *put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	*p++ = '0';
	*p++ = 'x';
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* Microseconds with exactly three decimals: the nanosecond, without going through a double. */
static inline char *put_ts_us(char *p, uint64_t ns)
{
	uint64_t frac = ns % 1000;

	p = put_u64(p, ns / 1000);
	*p++ = '.';
	*p++ = (char)('0' + frac / 100);
	*p++ = (char)('0' + frac / 10 % 10);
	*p++ = (char)('0' + frac % 10);
	return p;
}

/* @s as a quoted JSON string; needs at most UTF8_JSON_BOUND(strlen(s)) bytes. */
static inline char *put_json_string(char *p, const char *s)
{
	return utf8_put_json(p, s, strlen(s));
}

/* ---- staging ------------------------------------------------------------------------------- */

static int stage_flush(struct export_ctx *ctx, struct chrome_state *st)
{
	int err = st->len ? obuf__write(ctx->out, st->stage, st->len) : 0;

	st->len = 0;
	return err;
}

/* Room for @n bytes; the caller advances st->len. */
static int stage_room(struct export_ctx *ctx, struct chrome_state *st, size_t n, char **p)
{
	int err;

	if (st->len + n > st->cap) {
		if ((err = stage_flush(ctx, st)))
			return err;
		if (n > st->cap) {
			char *bigger = realloc(st->stage, n);

			if (!bigger)
				return -ENOMEM;
			st->stage = bigger;
			st->cap = n;
		}
	}
	*p = st->stage + st->len;
	return 0;
}

static size_t name_bound(const char *s)
{
	return s ? UTF8_JSON_BOUND(strlen(s)) : 2;
}

/* Separator before every event but the first. */
static char *put_separator(struct chrome_state *st, char *p)
{
	if (!st->first)
		p = put_str(p, ",\n");
	st->first = false;
	return p;
}

/* {"ph":"M","name":"<what>","pid":P,"tid":T,"args":{"name":<name>}} */
static int put_metadata(struct export_ctx *ctx, const char *what, uint64_t tid, const char *name)
{
	struct chrome_state *st = ctx->priv;
	char *p, *start;
	int err = stage_room(ctx, st, EVENT_FIXED_MAX + name_bound(name), &p);

	if (err)
		return err;
	start = p;
	p = put_separator(st, p);
	p = put_str(p, "{\"ph\":\"M\",\"name\":\"");
	p = put_str(p, what);
	p = put_str(p, "\",\"pid\":");
	p = put_u64(p, ctx->session->manifest->pid);
	p = put_str(p, ",\"tid\":");
	p = put_u64(p, tid);
	p = put_str(p, ",\"args\":{\"name\":");
	p = put_json_string(p, name);
	p = put_str(p, "}}");
	st->len += (size_t)(p - start);
	return 0;
}

/* ---- ops ----------------------------------------------------------------------------------- */

static int chrome_begin(struct export_ctx *ctx)
{
	struct chrome_state *st = calloc(1, sizeof(*st));
	char *p;
	int err;

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	st->first = true;
	st->cap = STAGE_SIZE;
	st->stage = malloc(st->cap);
	if (!st->stage)
		return -ENOMEM;
	if ((err = stage_room(ctx, st, 64, &p)))
		return err;
	st->len += (size_t)(put_str(p, "{\"traceEvents\":[\n") - p);
	return 0;
}

static int chrome_process_begin(struct export_ctx *ctx)
{
	struct chrome_state *st = ctx->priv;
	struct atf_session *s = ctx->session;

	free(st->prefix);
	st->prefix = calloc(s->nthreads ? s->nthreads : 1, sizeof(*st->prefix));
	if (!st->prefix)
		return -ENOMEM;
	for (size_t i = 0; i < s->nthreads; i++)
		snprintf(st->prefix[i], PREFIX_MAX, ",\"pid\":%u,\"tid\":%u,\"ts\":",
			 s->manifest->pid, s->threads[i].tid);
	if (s->manifest->process_name)
		return put_metadata(ctx, "process_name", s->manifest->pid, s->manifest->process_name);
	return 0;
}

static int chrome_thread_begin(struct export_ctx *ctx, const struct atf_thread *t)
{
	return t->name ? put_metadata(ctx, "thread_name", t->tid, t->name) : 0;
}

static char *put_detail_args(char *p, const struct atf_detail_event *d)
{
	static const char *const gp_names[ATF_DETAIL_GP_REGS] = {
		"gp0", "gp1", "gp2", "gp3", "gp4", "gp5", "gp6", "gp7",
	};
	const struct atf_detail_payload *pl = &d->payload;

	for (int i = 0; i < ATF_DETAIL_GP_REGS; i++) {
		*p++ = '"';
		p = put_str(p, gp_names[i]);
		p = put_str(p, "\":\"");
		p = put_hex(p, pl->gp[i]);
		*p++ = '"';
		*p++ = ',';
	}
	p = put_str(p, "\"lr\":\"");
	p = put_hex(p, pl->lr);
	p = put_str(p, "\",\"fp\":\"");
	p = put_hex(p, pl->fp);
	p = put_str(p, "\",\"sp\":\"");
	p = put_hex(p, pl->sp);
	p = put_str(p, "\",\"flags\":");
	p = put_u64(p, d->hdr.flags);
	p = put_str(p, ",\"stack_size\":");
	return put_u64(p, pl->stack_size);
}

/* {"ph":"<ph>",<prefix><ts>,"name":<name> */
static char *put_event_head(struct chrome_state *st, char *p, const char *ph, const struct export_event *e,
			    const char *name)
{
	p = put_separator(st, p);
	p = put_str(p, "{\"ph\":\"");
	p = put_str(p, ph);
	p = put_str(p, "\"");
	p = put_str(p, st->prefix[e->thread]);
	p = put_ts_us(p, e->ev.timestamp_ns);
	p = put_str(p, ",\"name\":");
	return put_json_string(p, name);
}

/* A thread-scoped instant event @what about @e's function, with its detail registers if any. */
static char *put_instant(struct chrome_state *st, char *p, const char *what, const struct export_event *e,
			 const char *typed)
{
	p = put_event_head(st, p, "i\",\"s\":\"t", e, what);
	p = put_str(p, ",\"args\":{\"function\":");
	p = put_json_string(p, e->name);
	if (!strcmp(what, "detail")) {
		p = put_str(p, e->ev.event_kind == ATF_KIND_CALL ? ",\"event\":\"call\"," : ",\"event\":\"return\",");
		p = put_detail_args(p, e->detail);
		if (typed) {
			p = put_str(p, e->ev.event_kind == ATF_KIND_CALL ? ",\"arguments\":" : ",\"retval\":");
			p = put_json_string(p, typed);
		}
	}
	return put_str(p, "}}");
}

static int chrome_event(struct export_ctx *ctx, const struct export_event *e)
{
	struct chrome_state *st = ctx->priv;
	bool call = e->ev.event_kind == ATF_KIND_CALL;
	bool exception = e->ev.event_kind == ATF_KIND_EXCEPTION;
	bool has_detail = e->detail && e->detail->has_payload;
	char *p, *start, typed[2048];
	bool has_typed = has_detail && atf_args_detail_text(ctx->session->args, e->detail, e->ev.event_kind,
			 ctx->session->threads[e->thread].index.hdr.arch == ATF_ARCH_ARM64, typed, sizeof(typed)) == 1;
	int err;

	if (!call && !exception && e->ev.event_kind != ATF_KIND_RETURN)
		return -ATF_E_RECORD;
	if ((err = stage_room(ctx, st, 3 * (EVENT_FIXED_MAX + name_bound(e->name)) +
			      (has_typed ? name_bound(typed) + 16 : 0), &p)))
		return err;
	start = p;
	if (has_detail && !call)        /* the return's registers, before the frame closes */
		p = put_instant(st, p, "detail", e, has_typed ? typed : NULL);
	if (exception)
		p = put_instant(st, p, "unwound", e, NULL);
	p = put_event_head(st, p, call ? "B" : "E", e, e->name);
	*p++ = '}';
	if (has_detail && call)         /* the arguments, inside the frame they belong to */
		p = put_instant(st, p, "detail", e, has_typed ? typed : NULL);
	st->len += (size_t)(p - start);
	return 0;
}

static int chrome_end(struct export_ctx *ctx)
{
	struct chrome_state *st = ctx->priv;
	char *p;
	int err = stage_room(ctx, st, 64, &p);

	if (err)
		return err;
	st->len += (size_t)(put_str(p, "\n],\"displayTimeUnit\":\"ns\"}\n") - p);
	return stage_flush(ctx, st);
}

static void chrome_cleanup(struct export_ctx *ctx)
{
	struct chrome_state *st = ctx->priv;

	if (!st)
		return;
	free(st->prefix);
	free(st->stage);
	free(st);
	ctx->priv = NULL;
}

const struct export_ops chrome_ops = {
	.name = "chrome",
	.description = "Chrome JSON trace events (B/E, process and thread names; chrome://tracing, Perfetto UI, speedscope)",
	.per_thread = false,
	.processes = true,
	.begin = chrome_begin,
	.process_begin = chrome_process_begin,
	.thread_begin = chrome_thread_begin,
	.event = chrome_event,
	.end = chrome_end,
	.cleanup = chrome_cleanup,
};
