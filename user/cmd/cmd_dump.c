// SPDX-License-Identifier: MIT
/*
 * atftrace dump SESSION [--merged] [-D N] [--min-duration T] [-F GLOB]... [-N GLOB]...
 *                       [--pid N] [--thread N] [--from T] [--to T]
 *
 * A session's events as an indented call tree, uftrace style, one line per event:
 *
 *         TIME     DURATION [   TID] | FUNCTION
 *     1.200 us              [  4242] | main() {
 *     1.900 us     0.582 us [  4242] |   leaf();
 *     9.100 us              [  4242] |   parse(char const*) {
 *    12.000 us     2.900 us [  4242] |   } <parse>
 *    12.400 us    11.200 us [  4242] | } <main> (unwound)
 *         args: rdi=0x.. rsi=0x.. ...        ret: rax=0x..
 *
 * where "} <parse>" stands for a closing brace and the name in a C comment, as uftrace prints.
 *
 * TIME is since the session start and DURATION is on the line that ends a call, both with
 * units (timefmt.h). A call whose next event in its thread is its own return is one line
 * ("leaf();"). A closing brace names the function without its parameter list, so long C++
 * names are not repeated in full. The TID column is there only when more than one thread is
 * printed. Threads are printed one after another, each headed "# thread_<id> tid=<tid>
 * name=<name> events=<n>", or with --merged as one stream in timestamp order; a session of
 * several processes prints each under "## pid_<N>". Registers of events with detail follow
 * their line; a function with typed arguments (record -A/-R/--auto-args) shows them in its line
 * instead, uftrace style: "f(1, "s") = 0;", or "f(1, "s") {" ... "} = 0; <f>".
 * tests/e2e/lib.sh's normalise_dump depends on this layout.
 *
 * Filters: -D N prints N levels of calls (below the -F match, if any); --min-duration T hides
 * calls shorter than T with everything below them; -F GLOB prints only calls matching GLOB and
 * what is below them; -N GLOB hides calls matching GLOB with everything below them.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atf.h"
#include "atf_args.h"
#include "cmd_common.h"
#include "cmd_select.h"
#include "commands.h"
#include "textfmt.h"
#include "record_filter.h"
#include "timefmt.h"

typedef unsigned long long ull;

#define MAX_TRACKED_DEPTH (1u << 20)   /* deeper frames print without a duration */
#define MAX_INDENT_DEPTH  2048         /* keeps a corrupt depth from printing megabytes of blanks */
#define NO_DEPTH          UINT32_MAX

enum { OPT_MIN_DURATION = 0x100 };

struct dump_args {
	const char *session;
	bool merged;
	uint32_t max_depth;         /* 0: no limit */
	uint64_t min_duration_ns;   /* 0: no limit */
	char **focus, **hide;       /* -F and -N globs */
	size_t nfocus, nhide;
	struct cmd_select_args sel;
};

static const struct argp_option dump_options[] = {
	{ "merged", 'm', NULL, 0, "All threads as one stream in timestamp order", 0 },
	{ "depth", 'D', "N", 0, "Print N levels of calls at most", 0 },
	{ "min-duration", OPT_MIN_DURATION, "T", 0, "Hide calls shorter than T (1500, 20us, 1.5ms) and what is below them", 0 },
	{ "function", 'F', "GLOB", 0, "Print only calls matching GLOB and what is below them (repeatable)", 0 },
	{ "notrace", 'N', "GLOB", 0, "Hide calls matching GLOB and what is below them (repeatable)", 0 },
	{ 0 }
};

static const char dump_doc[] =
	"Print a session's events as an indented call tree.\v"
	"TIME is since the session start, DURATION is on the line that ends a call. T is a time "
	"since the session start (--from, --to) or a duration: 1500 (ns), 20us, 1.5ms, 2s.";

static int push_glob(char ***v, size_t *n, char *glob)
{
	char **g = realloc(*v, (*n + 1) * sizeof(*g));

	if (!g)
		return -ENOMEM;
	g[(*n)++] = glob;
	*v = g;
	return 0;
}

static error_t dump_parse(int key, char *arg, struct argp_state *state)
{
	struct dump_args *a = state->input;
	int err;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->sel;
		return 0;
	case 'm':
		a->merged = true;
		return 0;
	case 'D':       /* the one -D syntax of record and dump */
		if (filter_parse_depth(arg, &a->max_depth))
			argp_error(state, "--depth %s: expected a positive number of levels", arg);
		return 0;
	case OPT_MIN_DURATION:
		if ((err = timefmt_parse(arg, TIMEFMT_NS, &a->min_duration_ns)))
			argp_error(state, "--min-duration %s: %s", arg, timefmt_strerror(err));
		return 0;
	case 'F':
	case 'N':
		if (key == 'F' ? push_glob(&a->focus, &a->nfocus, arg) : push_glob(&a->hide, &a->nhide, arg))
			argp_failure(state, 1, ENOMEM, "%s", arg);
		return 0;
	default:
		return cmd_session_arg(key, arg, state, &a->session);
	}
}

/* Whether a glob names the function shown as @name: by that name or any other of its symbol's
 * (atf_symbol__matches: aliases, ifunc, versioned and demangled forms). */
static bool matches(struct atf_session *s, uint64_t function_id, char *const *globs, size_t n, const char *name)
{
	struct atf_symbol *sym = (struct atf_symbol *)atf_manifest__symbol(s->manifest, function_id);

	for (size_t i = 0; i < n; i++)
		if (!fnmatch(globs[i], name, 0) || (sym && atf_symbol__matches(sym, globs[i], true)))
			return true;
	return false;
}

/* Per-thread state: call times by depth (for durations) and the filters' open windows. */
struct thread_state {
	uint64_t *ts;
	bool *valid;
	size_t cap;
	uint32_t hide_depth;        /* hiding the subtree of a call at this depth, or NO_DEPTH */
	uint32_t focus_depth;       /* inside the -F call at this depth, or NO_DEPTH */
	uint64_t folded_seq;        /* the return already printed in a "leaf();" line, or UINT64_MAX */
};

struct dumper {
	struct atf_session *s;
	const struct dump_args *a;
	uint64_t base_ns, to_ns;
	bool tid_column;
	struct thread_state *th;    /* one per session thread */
	char namebuf[32];
};

static void frame_set(struct thread_state *f, uint32_t depth, uint64_t ts)
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
static bool frame_take(struct thread_state *f, uint32_t depth, uint64_t *ts)
{
	if (depth >= f->cap || !f->valid[depth])
		return false;
	f->valid[depth] = false;
	*ts = f->ts[depth];
	return true;
}

static void print_detail(const struct atf_session *s, const struct atf_thread *t, const struct atf_index_event *ev)
{
	static const char *const x86_args[] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9", "arg7", "arg8" };
	struct atf_detail_event d;
	bool arm64 = t->index.hdr.arch == ATF_ARCH_ARM64;
	unsigned nargs;

	if (ev->detail_seq == ATF_NO_DETAIL || !t->has_detail || atf_detail_get(&t->detail, ev->detail_seq, &d) ||
	    !d.has_payload || atf_args_find(s->args, ev->function_id))   /* typed: on the call's line */
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

/*
 * The event that ends the call at @seq (same depth, a return or exception), within the range;
 * false when the thread or the range ends first.
 */
static bool find_end(const struct atf_thread *t, uint64_t seq, uint64_t to_ns, uint64_t *end_seq,
		     struct atf_index_event *end)
{
	struct atf_index_event call;

	atf_index_get(&t->index, seq, &call);
	for (uint64_t i = seq + 1; i < t->index.count; i++) {
		atf_index_get(&t->index, i, end);
		if (end->timestamp_ns > to_ns || end->call_depth < call.call_depth)
			return false;
		if (end->call_depth == call.call_depth) {
			*end_seq = i;
			return end->event_kind != ATF_KIND_CALL;
		}
	}
	return false;
}

/* Whether the call at @seq is a leaf: its thread's next event, in the range, is its return. */
static bool leaf_return(const struct atf_thread *t, uint64_t seq, const struct atf_index_event *call,
			uint64_t to_ns, struct atf_index_event *ret)
{
	if (seq + 1 >= t->index.count)
		return false;
	atf_index_get(&t->index, seq + 1, ret);
	return ret->event_kind == ATF_KIND_RETURN && ret->call_depth == call->call_depth && ret->timestamp_ns <= to_ns;
}

/* One line: TIME, DURATION (or blanks), the TID column when shown, the indented body. */
static void print_line(const struct dumper *D, const struct atf_thread *t, uint64_t ts, const uint64_t *dur,
		       uint32_t level, const char *body, const char *name, const char *tail)
{
	char tbuf[TIMEFMT_LEN], dbuf[TIMEFMT_LEN], tid[16] = "";
	int indent = (int)(level < MAX_INDENT_DEPTH ? level : MAX_INDENT_DEPTH) * 2;

	if (D->tid_column)
		snprintf(tid, sizeof(tid), "[%6u] ", t->tid);
	printf("%12s %12s %s| %*s", timefmt_format(tbuf, sizeof(tbuf), ts >= D->base_ns ? ts - D->base_ns : 0),
	       dur ? timefmt_format(dbuf, sizeof(dbuf), *dur) : "", tid, indent, "");
	printf(body, textfmt_show(name));      /* the target's names, escaped for the terminal */
	fputs(tail, stdout);
	putchar('\n');
}

/* Whether @ev is hidden by the filters; updates the thread's filter windows. */
static bool filtered(struct dumper *D, const struct atf_thread *t, struct thread_state *f, uint64_t seq,
		     const struct atf_index_event *ev, const char *name, uint32_t *level)
{
	const struct dump_args *a = D->a;
	bool call = ev->event_kind == ATF_KIND_CALL;
	uint32_t d = ev->call_depth;

	if (f->hide_depth != NO_DEPTH) {
		if (d > f->hide_depth || (d == f->hide_depth && !call)) {
			if (d == f->hide_depth)
				f->hide_depth = NO_DEPTH;
			return true;
		}
		f->hide_depth = NO_DEPTH;       /* its end was lost: the window closes here */
	}
	if (a->nfocus) {
		if (f->focus_depth != NO_DEPTH && (d < f->focus_depth || (d == f->focus_depth && call)))
			f->focus_depth = NO_DEPTH;
		if (f->focus_depth == NO_DEPTH) {
			if (!call || !matches(D->s, ev->function_id, a->focus, a->nfocus, name))
				return true;
			f->focus_depth = d;
		}
		*level = d - f->focus_depth;
	} else {
		*level = d;
	}
	if (a->max_depth && *level >= a->max_depth)
		return true;
	if (call && a->nhide && matches(D->s, ev->function_id, a->hide, a->nhide, name)) {
		f->hide_depth = d;
		return true;
	}
	if (call && a->min_duration_ns) {
		struct atf_index_event end;
		uint64_t end_seq;

		if (find_end(t, seq, D->to_ns, &end_seq, &end) &&
		    end.timestamp_ns - ev->timestamp_ns < a->min_duration_ns) {
			f->hide_depth = d;
			return true;
		}
	}
	if (!call && f->focus_depth == d)
		f->focus_depth = NO_DEPTH;
	return false;
}

/* The function's name without its parameter list, for closing lines. */
static const char *short_name(const char *name, char *buf, size_t len)
{
	const char *paren = strchr(name, '(');

	if (!paren || paren == name)
		return name;
	snprintf(buf, len, "%.*s", (int)(paren - name < (long)len - 1 ? paren - name : (long)len - 1), name);
	return buf;
}

/*
 * typed_text - the typed arguments (a CALL) or return value (a RETURN) of @ev, from its detail
 * record and the session's -A/-R/--auto-args specs; false when it has none.
 */
static bool typed_text(const struct atf_session *s, const struct atf_thread *t, const struct atf_index_event *ev,
		       char *buf, size_t len)
{
	struct atf_detail_event d;

	buf[0] = '\0';
	if (!s->args || ev->detail_seq == ATF_NO_DETAIL || !t->has_detail ||
	    atf_detail_get(&t->detail, ev->detail_seq, &d))
		return false;
	return atf_args_detail_text(s->args, &d, ev->event_kind, t->index.hdr.arch == ATF_ARCH_ARM64, buf, len) == 1;
}

/*
 * print_typed - a call line of a function with typed arguments, uftrace style: "f(1, "s") {",
 * or for a call folded with its return @end, "f(1, "s") = 0;". Returns false (nothing printed)
 * when the function has no spec. A call's arguments that were not recorded print as "?".
 */
static bool print_typed(const struct dumper *D, const struct atf_thread *t, const struct atf_index_event *ev,
			const uint64_t *dur, uint32_t level, const char *name, const struct atf_index_event *end)
{
	const struct atf_arg_spec *spec = atf_args_find(D->s->args, ev->function_id);
	char args[2048], ret[1024], line[4096 + 512], shortbuf[512];

	if (!spec)
		return false;
	/* no detail record: its arguments were not recorded ("?"), or none were asked for (-R) */
	if (!typed_text(D->s, t, ev, args, sizeof(args)))
		snprintf(args, sizeof(args), "%s", atf_args_has_args(spec) ? "?" : "");
	if (end && typed_text(D->s, t, end, ret, sizeof(ret)))
		snprintf(line, sizeof(line), "%s(%s) = %s;", short_name(name, shortbuf, sizeof(shortbuf)), args, ret);
	else
		snprintf(line, sizeof(line), "%s(%s)%s", short_name(name, shortbuf, sizeof(shortbuf)), args,
			 end ? ";" : " {");
	print_line(D, t, ev->timestamp_ns, dur, level, "%s", line, "");
	return true;
}

/* The closing line of a typed call with a return value: "} = 0; /\* f *\/". */
static bool print_typed_return(const struct dumper *D, const struct atf_thread *t, const struct atf_index_event *ev,
			       const uint64_t *dur, uint32_t level, const char *name, const char *how)
{
	char ret[1024], line[2048], shortbuf[512];

	if (!typed_text(D->s, t, ev, ret, sizeof(ret)))
		return false;
	snprintf(line, sizeof(line), "} = %s; /* %s */%s", ret, short_name(name, shortbuf, sizeof(shortbuf)), how);
	print_line(D, t, ev->timestamp_ns, dur, level, "%s", line, "");
	return true;
}

static void print_event(struct dumper *D, uint32_t thread, uint64_t seq, const struct atf_index_event *ev)
{
	const struct atf_thread *t = &D->s->threads[thread];
	struct thread_state *f = &D->th[thread];
	const char *name = atf_session__name(D->s, ev->function_id, D->namebuf, sizeof(D->namebuf));
	const char *args = strchr(name, '(') ? "" : "()";       /* demangled C++ names carry their own */
	struct atf_index_event end;
	uint64_t call_ts, dur;
	uint32_t level;
	char body[32], shortbuf[512];

	if (seq == f->folded_seq)
		return;
	if (filtered(D, t, f, seq, ev, name, &level))
		return;
	if (ev->event_kind == ATF_KIND_CALL) {
		if (leaf_return(t, seq, ev, D->to_ns, &end)) {
			dur = end.timestamp_ns - ev->timestamp_ns;
			snprintf(body, sizeof(body), "%%s%s;", args);
			if (!print_typed(D, t, ev, &dur, level, name, &end))
				print_line(D, t, ev->timestamp_ns, &dur, level, body, name, "");
			print_detail(D->s, t, ev);
			print_detail(D->s, t, &end);
			f->folded_seq = seq + 1;
			return;
		}
		snprintf(body, sizeof(body), "%%s%s {", args);
		if (!print_typed(D, t, ev, NULL, level, name, NULL))
			print_line(D, t, ev->timestamp_ns, NULL, level, body, name, "");
		frame_set(f, ev->call_depth, ev->timestamp_ns);
	} else {
		const char *how = ev->event_kind == ATF_KIND_EXCEPTION ? " (unwound)" : "";
		bool known = frame_take(f, ev->call_depth, &call_ts);

		dur = known ? ev->timestamp_ns - call_ts : 0;
		if (!print_typed_return(D, t, ev, known ? &dur : NULL, level, name, how))
			print_line(D, t, ev->timestamp_ns, known ? &dur : NULL, level, "} /* %s */",
				   short_name(name, shortbuf, sizeof(shortbuf)), how);
	}
	print_detail(D->s, t, ev);
}

static int dump_stream(struct dumper *D, const struct cmd_selection *sel, int64_t thread)
{
	struct atf_merge *m;
	struct atf_merge_event me;
	int err = atf_merge__new(&m, D->s, sel->from_ns, sel->to_ns, thread);

	if (err)
		return err;
	while (atf_merge__next(m, &me) == 1)
		print_event(D, me.thread, me.seq, &me.ev);
	atf_merge__free(m);
	return 0;
}

static int dump_session(struct atf_session *s, const struct dump_args *a, const struct cmd_selection *sel,
			bool tid_column)
{
	struct dumper D = { .s = s, .a = a, .base_ns = sel->start_ns, .to_ns = sel->to_ns, .tid_column = tid_column };
	int err = 0;

	D.th = calloc(s->nthreads ?: 1, sizeof(*D.th));
	if (!D.th)
		return -ENOMEM;
	for (size_t i = 0; i < s->nthreads; i++)
		D.th[i] = (struct thread_state){ .hide_depth = NO_DEPTH, .focus_depth = NO_DEPTH,
						 .folded_seq = UINT64_MAX };
	if (a->merged) {
		err = dump_stream(&D, sel, sel->thread_id);
	} else {
		for (size_t i = 0; i < s->nthreads && !err; i++) {
			const struct atf_thread *t = &s->threads[i];

			if (sel->thread_id >= 0 && t->id != (uint64_t)sel->thread_id)
				continue;
			printf("# thread_%u tid=%u name=%s events=%llu\n", t->id, t->tid, textfmt_show(t->name),
			       (ull)t->index.count);
			err = dump_stream(&D, sel, t->id);
		}
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		free(D.th[i].ts);
		free(D.th[i].valid);
	}
	free(D.th);
	return err;
}

int cmd_dump(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cmd_select_argp, 0, NULL, 0 }, { 0 } };
	struct dump_args args = { 0 };
	struct argp argp = { dump_options, dump_parse, "SESSION", dump_doc, children, NULL, NULL };
	struct cmd_selection sel;
	size_t threads = 0;
	int rc = 0;

	if (cmd_parse(&argp, "dump", argc, argv, &args)) {
		rc = 2;
		goto out;
	}
	if (cmd_select("dump", args.session, &args.sel, false, NULL, &sel)) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < sel.n; i++)
		threads += sel.thread_id >= 0 ? 1 : sel.s[i]->nthreads;
	for (size_t i = 0; i < sel.n; i++) {
		const char *dir = sel.s[i]->dir;
		int err;

		if (sel.n > 1)
			printf("## %s\n", textfmt_show(strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir));
		err = dump_session(sel.s[i], &args, &sel, threads > 1);
		if (err) {
			fflush(stdout);
			cmd_print_diag("dump", dir, err, NULL, false);
			rc = 1;
		}
	}
	cmd_selection_free(&sel);
out:
	free(args.focus);
	free(args.hide);
	return rc;
}
