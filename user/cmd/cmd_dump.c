// SPDX-License-Identifier: MIT
/*
 * atftrace dump SESSION [--thread N] [--merged] [--from NS --to NS]
 *
 * One line per event as an indented call tree (2 spaces per call depth), times in seconds since
 * the session start, the duration on each return, and the registers of events with detail:
 *
 *     %14.9f tid=%u  %*s<name>() {
 *     %14.9f tid=%u  %*s} <name>  %.3f us
 *     %14.9f tid=%u  %*s} <name>  (unwound) %.3f us
 *         args: rdi=0x.. rsi=0x.. ...        ret: rax=0x..
 *
 * Threads are printed one after another, each headed "# thread_<id> tid=<tid> name=<name>
 * events=<n>", or with --merged as one stream in timestamp order. tests/e2e/lib.sh's
 * normalise_dump depends on this layout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atf.h"
#include "cmd_common.h"
#include "commands.h"

typedef unsigned long long ull;

#define MAX_TRACKED_DEPTH (1u << 20)   /* deeper frames print without a duration */
#define MAX_INDENT_DEPTH  2048         /* keeps a corrupt depth from printing megabytes of blanks */

struct dump_args {
	const char *session;
	int64_t thread;             /* -1: all */
	bool merged;
	uint64_t from_ns, to_ns;
	bool have_from, have_to;
};

enum { OPT_FROM = 0x100, OPT_TO };

static const struct argp_option dump_options[] = {
	{ "thread", 't', "N", 0, "Only thread_N (the directory id)", 0 },
	{ "merged", 'm', NULL, 0, "All threads as one stream in timestamp order", 0 },
	{ "from", OPT_FROM, "NS", 0, "Only events with timestamp >= NS (nanoseconds, the session clock)", 0 },
	{ "to", OPT_TO, "NS", 0, "Only events with timestamp <= NS", 0 },
	{ 0 }
};

static const char dump_doc[] = "Print a session's events as an indented call tree.";

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

static error_t dump_parse(int key, char *arg, struct argp_state *state)
{
	struct dump_args *a = state->input;
	uint64_t v;

	switch (key) {
	case 't':
		if (parse_u64(arg, &v) || v > UINT32_MAX)
			argp_error(state, "--thread: '%s': not a thread directory id", arg);
		a->thread = (int64_t)v;
		return 0;
	case 'm':
		a->merged = true;
		return 0;
	case OPT_FROM:
	case OPT_TO:
		if (parse_u64(arg, &v))
			argp_error(state, "--%s: '%s': not a number of nanoseconds", key == OPT_FROM ? "from" : "to", arg);
		if (key == OPT_FROM)
			a->from_ns = v, a->have_from = true;
		else
			a->to_ns = v, a->have_to = true;
		return 0;
	case ARGP_KEY_ARG:
		return cmd_session_arg(key, arg, state, &a->session);
	case ARGP_KEY_END:
		cmd_session_arg(key, arg, state, &a->session);          /* SESSION is required */
		if (a->have_from && a->have_to && a->from_ns > a->to_ns)
			argp_error(state, "--from %llu is after --to %llu", (ull)a->from_ns, (ull)a->to_ns);
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/* Per-thread call timestamps by depth, for the duration printed on each return. */
struct frame_times {
	uint64_t *ts;
	bool *valid;
	size_t cap;
};

struct dumper {
	struct atf_session *s;
	uint64_t base_ns;
	struct frame_times *frames;  /* one per session thread */
	char namebuf[32];
};

static void frame_set(struct frame_times *f, uint32_t depth, uint64_t ts)
{
	if (depth >= MAX_TRACKED_DEPTH)
		return;
	if (depth >= f->cap) {
		size_t cap = f->cap ? f->cap : 64;
		uint64_t *t;
		bool *v;

		while (cap <= depth)
			cap *= 2;
		t = realloc(f->ts, cap * sizeof(*t));
		if (t)
			f->ts = t;
		v = t ? realloc(f->valid, cap * sizeof(*v)) : NULL;
		if (!v)
			return;   /* out of memory: this return just prints without a duration */
		f->valid = v;
		memset(f->valid + f->cap, 0, cap - f->cap);
		f->cap = cap;
	}
	f->ts[depth] = ts;
	f->valid[depth] = true;
}

/* Call time of the frame at @depth, consumed; false when its call was not seen. */
static bool frame_take(struct frame_times *f, uint32_t depth, uint64_t *ts)
{
	if (depth >= f->cap || !f->valid[depth])
		return false;
	f->valid[depth] = false;
	*ts = f->ts[depth];
	return true;
}

static void print_detail(const struct atf_thread *t, const struct atf_index_event *ev)
{
	static const char *const x86_args[] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9", "arg7", "arg8" };
	struct atf_detail_event d;
	bool arm64 = t->index.hdr.arch == ATF_ARCH_ARM64;
	unsigned nargs;

	if (ev->detail_seq == ATF_NO_DETAIL || !t->has_detail || atf_detail_get(&t->detail, ev->detail_seq, &d) ||
	    !d.has_payload)
		return;
	if (ev->event_kind != ATF_KIND_CALL) {
		printf("    ret: %s=0x%llx\n", arm64 ? "x0" : "rax", (ull)d.payload.gp[0]);
		return;
	}
	nargs = arm64 || (d.hdr.flags & ATF_DETAIL_F_STACK_ARGS) ? 8 : 6;
	printf("    args:");
	for (unsigned i = 0; i < nargs; i++) {
		if (arm64)
			printf(" x%u=0x%llx", i, (ull)d.payload.gp[i]);
		else
			printf(" %s=0x%llx", x86_args[i], (ull)d.payload.gp[i]);
	}
	printf("\n");
}

static void print_event(struct dumper *D, const struct atf_merge_event *me)
{
	const struct atf_index_event *ev = &me->ev;
	const struct atf_thread *t = &D->s->threads[me->thread];
	struct frame_times *f = &D->frames[me->thread];
	const char *name = atf_session__name(D->s, ev->function_id, D->namebuf, sizeof(D->namebuf));
	double secs = ((double)ev->timestamp_ns - (double)D->base_ns) / 1e9;
	int indent = (int)(ev->call_depth < MAX_INDENT_DEPTH ? ev->call_depth : MAX_INDENT_DEPTH) * 2;
	uint64_t call_ts;

	if (ev->event_kind == ATF_KIND_CALL) {
		/* demangled C++ names carry their own parameter list */
		printf("%14.9f tid=%u  %*s%s%s {\n", secs, t->tid, indent, "", name, strchr(name, '(') ? "" : "()");
		frame_set(f, ev->call_depth, ev->timestamp_ns);
	} else {
		const char *how = ev->event_kind == ATF_KIND_EXCEPTION ? "(unwound) " : "";

		if (frame_take(f, ev->call_depth, &call_ts))
			printf("%14.9f tid=%u  %*s} %s  %s%.3f us\n", secs, t->tid, indent, "", name, how,
			       (double)(ev->timestamp_ns - call_ts) / 1e3);
		else   /* its call is outside the range shown */
			printf("%14.9f tid=%u  %*s} %s  %s\n", secs, t->tid, indent, "", name, how);
	}
	print_detail(t, ev);
}

/* Session start: the manifest's when it precedes every event, else the earliest event. */
static uint64_t session_base(const struct atf_session *s)
{
	uint64_t base = UINT64_MAX;
	struct atf_index_event ev;

	for (size_t i = 0; i < s->nthreads; i++) {
		if (!s->threads[i].index.count)
			continue;
		atf_index_get(&s->threads[i].index, 0, &ev);
		if (ev.timestamp_ns < base)
			base = ev.timestamp_ns;
	}
	if (s->manifest->time_start_ns && s->manifest->time_start_ns <= base)
		return s->manifest->time_start_ns;
	return base == UINT64_MAX ? 0 : base;
}

static int dump_stream(struct dumper *D, const struct dump_args *a, int64_t thread)
{
	struct atf_merge *m;
	struct atf_merge_event me;
	int err = atf_merge__new(&m, D->s, a->from_ns, a->have_to ? a->to_ns : UINT64_MAX, thread);

	if (err)
		return err;
	while (atf_merge__next(m, &me) == 1)
		print_event(D, &me);
	atf_merge__free(m);
	return 0;
}

static int dump_session(struct atf_session *s, const struct dump_args *a)
{
	struct dumper D = { .s = s, .base_ns = session_base(s) };
	int err = 0;

	D.frames = calloc(s->nthreads ?: 1, sizeof(*D.frames));
	if (!D.frames)
		return -ENOMEM;
	if (a->merged) {
		err = dump_stream(&D, a, a->thread);
	} else {
		for (size_t i = 0; i < s->nthreads && !err; i++) {
			const struct atf_thread *t = &s->threads[i];

			if (a->thread >= 0 && t->id != (uint64_t)a->thread)
				continue;
			printf("# thread_%u tid=%u name=%s events=%llu\n", t->id, t->tid, t->name ? t->name : "-",
			       (ull)t->index.count);
			err = dump_stream(&D, a, t->id);
		}
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		free(D.frames[i].ts);
		free(D.frames[i].valid);
	}
	free(D.frames);
	return err;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_args args = { .thread = -1 };
	struct argp argp = { .options = dump_options, .parser = dump_parse, .args_doc = "SESSION", .doc = dump_doc };
	char **dirs;
	int n, rc = 0;

	if (cmd_parse(&argp, "dump", argc, argv, &args))
		return 2;
	if ((n = cmd_resolve("dump", args.session, &dirs)) < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		struct atf_diag diag = { 0 };
		struct atf_session *s;
		int err = atf_session__open(&s, dirs[i], 0, &diag);

		if (n > 1)
			printf("## %s\n", strrchr(dirs[i], '/') ? strrchr(dirs[i], '/') + 1 : dirs[i]);
		if (err) {
			fflush(stdout);
			cmd_print_diag("dump", dirs[i], err, &diag, false);
			rc = 1;
			continue;
		}
		err = dump_session(s, &args);
		if (err) {
			fflush(stdout);
			cmd_print_diag("dump", dirs[i], err, NULL, false);
			rc = 1;
		}
		atf_session__close(s);
	}
	atf_session_resolve_free(dirs, n);
	return rc;
}
