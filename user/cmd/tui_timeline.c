// SPDX-License-Identifier: MIT
/*
 * The tui's timeline, info and help views (tui.h). The timeline lists the selected threads, each
 * with a bar of when it ran over the span of the selection; expanding one reads its calls (in
 * the range) through atf_merge, as `dump` does, and lists them in time order, indented by
 * depth, each with its duration (to its return, to its EXCEPTION when unwound, or to the
 * thread's last event when still open).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "timefmt.h"
#include "tui.h"
#include "tui_int.h"

#define BAR_WIDTH 24

static struct atf_session *session_of(const struct tui *t, const struct tui_thread *th)
{
	return t->sel->s[th->process];
}

/* The first and last event of @at in [from, to]; first > last when none. */
static void thread_span(const struct atf_thread *at, uint64_t from, uint64_t to, uint64_t *first, uint64_t *last)
{
	const struct atf_index_file *f = &at->index;
	uint64_t lo = atf_index_lower_bound(f, from), hi = to == UINT64_MAX ? f->count : atf_index_lower_bound(f, to + 1);
	struct atf_index_event ev;

	*first = 1, *last = 0;
	if (lo >= hi)
		return;
	atf_index_get(f, lo, &ev);
	*first = ev.timestamp_ns;
	atf_index_get(f, hi - 1, &ev);
	*last = ev.timestamp_ns;
}

static int tl_push(struct tui *t, uint32_t thread, uint32_t call)
{
	if (t->ntl == t->tl_cap) {
		size_t cap = t->tl_cap ? t->tl_cap * 2 : 64;
		struct tui_tl_line *l = realloc(t->tl, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		t->tl = l;
		t->tl_cap = cap;
	}
	t->tl[t->ntl++] = (struct tui_tl_line){ thread, call };
	return 0;
}

/* The lines: each thread's header, and an expanded thread's calls below it. */
static int tl_lines(struct tui *t)
{
	t->ntl = 0;
	for (uint32_t i = 0; i < t->nthreads; i++) {
		const struct tui_thread *th = &t->threads[i];

		if (tl_push(t, i, TUI_TL_HEADER))
			return -ENOMEM;
		for (size_t c = 0; th->expanded && c < th->ncalls; c++)
			if (tl_push(t, i, (uint32_t)c))
				return -ENOMEM;
		if (th->expanded && th->more && tl_push(t, i, TUI_TL_MORE))
			return -ENOMEM;
	}
	return 0;
}

int tui_timeline_build(struct tui *t)
{
	const struct cmd_selection *sel = t->sel;
	size_t n = 0;

	for (size_t p = 0; p < sel->n; p++)
		n += sel->s[p]->nthreads;
	if (n && !(t->threads = calloc(n, sizeof(*t->threads))))
		return -ENOMEM;
	t->span_first = UINT64_MAX;
	for (uint32_t p = 0; p < sel->n; p++)
		for (uint32_t i = 0; i < sel->s[p]->nthreads; i++) {
			const struct atf_thread *at = &sel->s[p]->threads[i];
			struct tui_thread *th = &t->threads[t->nthreads];

			if (sel->thread_id >= 0 && at->id != (uint64_t)sel->thread_id)
				continue;
			*th = (struct tui_thread){ .process = p, .thread = i };
			thread_span(at, sel->from_ns, sel->to_ns, &th->first_ns, &th->last_ns);
			if (th->first_ns <= th->last_ns) {
				if (th->first_ns < t->span_first)
					t->span_first = th->first_ns;
				if (th->last_ns > t->span_last)
					t->span_last = th->last_ns;
			}
			t->nthreads++;
		}
	return tl_lines(t);
}

void tui_timeline_free(struct tui *t)
{
	for (size_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].calls);
	free(t->threads);
	free(t->tl);
	for (size_t i = 0; i < t->ninfo; i++)
		free(t->info[i]);
	free(t->info);
}

/* Reads @th's calls in the range, each with its duration: its end, or the thread's last event. */
static int thread_load(struct tui *t, struct tui_thread *th)
{
	struct atf_session *s = session_of(t, th);
	struct { uint32_t call, depth; } *open = NULL;
	size_t nopen = 0, cap = 0, ccap = 0;
	struct atf_merge *m;
	struct atf_merge_event me;
	int err = atf_merge__new(&m, s, t->sel->from_ns, t->sel->to_ns, s->threads[th->thread].id);

	if (err)
		return err;
	th->ncalls = 0, th->more = 0;           /* a load that failed before starts again */
	th->min_depth = UINT32_MAX;
	while (!err && atf_merge__next(m, &me) == 1) {
		const struct atf_index_event *ev = &me.ev;

		if (ev->event_kind == ATF_KIND_CALL) {
			uint32_t c = UINT32_MAX;

			if (th->ncalls < TUI_TIMELINE_MAX_CALLS) {
				if (th->ncalls == ccap) {
					struct tui_call *nc = realloc(th->calls, (ccap = ccap ? ccap * 2 : 256) * sizeof(*nc));

					if (!nc) {
						err = -ENOMEM;
						break;
					}
					th->calls = nc;
				}
				c = (uint32_t)th->ncalls++;
				th->calls[c] = (struct tui_call){ .ts = ev->timestamp_ns, .function_id = ev->function_id,
								  .depth = ev->call_depth, .end = TUI_END_OPEN };
				if (ev->call_depth < th->min_depth)
					th->min_depth = ev->call_depth;
			} else {
				th->more++;
			}
			if (nopen == cap) {
				void *no = realloc(open, (cap = cap ? cap * 2 : 64) * sizeof(*open));

				if (!no) {
					err = -ENOMEM;
					break;
				}
				open = no;
			}
			open[nopen].call = c;
			open[nopen++].depth = ev->call_depth;
			continue;
		}
		while (nopen && open[nopen - 1].depth > ev->call_depth)     /* ends that were lost */
			nopen--;
		if (!nopen || open[nopen - 1].depth != ev->call_depth)       /* its call is before the range */
			continue;
		if (open[--nopen].call != UINT32_MAX) {
			struct tui_call *c = &th->calls[open[nopen].call];

			c->dur = ev->timestamp_ns - c->ts;
			c->end = ev->event_kind == ATF_KIND_EXCEPTION ? TUI_END_UNWOUND : TUI_END_RETURN;
		}
	}
	atf_merge__free(m);
	free(open);
	for (size_t i = 0; i < th->ncalls; i++)    /* still open: up to the thread's last event */
		if (th->calls[i].end == TUI_END_OPEN)
			th->calls[i].dur = th->last_ns > th->calls[i].ts ? th->last_ns - th->calls[i].ts : 0;
	if (th->min_depth == UINT32_MAX)
		th->min_depth = 0;
	th->loaded = !err;
	return err;
}

int64_t tui_timeline_toggle(struct tui *t, size_t i, int how)
{
	struct tui_thread *th = &t->threads[t->tl[i].thread];
	size_t header = i;
	bool want = how > 0 ? true : how < 0 ? false : !th->expanded;
	int err;

	while (header && t->tl[header].call != TUI_TL_HEADER)
		header--;
	if (t->tl[i].call != TUI_TL_HEADER)     /* on a call: Left goes to its thread */
		return (int64_t)(how < 0 ? header : i);
	if (want == th->expanded)
		return (int64_t)i;
	if (want && !th->loaded && (err = thread_load(t, th)))
		return err;
	th->expanded = want;
	if ((err = tl_lines(t)))
		return err;
	return (int64_t)i;
}

size_t tui__thread_step(const struct tui *t, size_t i, int dir)
{
	for (size_t k = 1; k <= t->ntl; k++) {
		size_t j = dir > 0 ? (i + k) % t->ntl : (i + t->ntl - k % t->ntl) % t->ntl;

		if (t->tl[j].call == TUI_TL_HEADER)
			return j;
	}
	return i;
}

static void bar(const struct tui *t, const struct tui_thread *th, char *out)
{
	uint64_t span = t->span_last > t->span_first ? t->span_last - t->span_first : 0;

	for (int k = 0; k < BAR_WIDTH; k++) {
		/* column k covers [span_first + k*span/W, span_first + (k+1)*span/W] */
		uint64_t lo = t->span_first + (uint64_t)((unsigned __int128)span * (unsigned)k / BAR_WIDTH);
		uint64_t hi = t->span_first + (uint64_t)((unsigned __int128)span * (unsigned)(k + 1) / BAR_WIDTH);

		out[k] = th->first_ns <= th->last_ns && th->first_ns <= hi && th->last_ns >= lo ? '#' : '.';
	}
	out[BAR_WIDTH] = '\0';
}

static void thread_label(const struct tui *t, const struct tui_thread *th, char *buf, size_t len)
{
	const struct atf_thread *at = &session_of(t, th)->threads[th->thread];
	char name[TUI_NAME_LEN / 4], pid[32] = "";

	tui_escape(name, sizeof(name), at->name ? at->name : "-", t->utf8);
	if (t->sel->n > 1)
		snprintf(pid, sizeof(pid), "pid %" PRId64 " ", cmd_pid_of_dir(session_of(t, th)->dir));
	snprintf(buf, len, "%sthread_%u tid=%u name=%s", pid, at->id, at->tid, name);
}

static uint64_t since_start(const struct tui *t, uint64_t ts)
{
	return ts > t->sel->start_ns ? ts - t->sel->start_ns : 0;
}

void tui_timeline_line(struct tui *t, size_t i, char *buf, size_t len)
{
	const struct tui_tl_line *l = &t->tl[i];
	const struct tui_thread *th = &t->threads[l->thread];
	char tm[2][TIMEFMT_LEN], label[TUI_NAME_LEN], b[BAR_WIDTH + 1], name[TUI_NAME_LEN], raw[32];
	const struct tui_call *c;
	unsigned indent;

	if (l->call == TUI_TL_HEADER) {
		bool any = th->first_ns <= th->last_ns;

		thread_label(t, th, label, sizeof(label));
		bar(t, th, b);
		snprintf(buf, len, "%11s %11s  %s %s  %" PRIu64 " events  |%s|",
			 any ? timefmt_format(tm[0], sizeof(tm[0]), since_start(t, th->first_ns)) : "-",
			 any ? timefmt_format(tm[1], sizeof(tm[1]), th->last_ns - th->first_ns) : "-",
			 th->expanded ? "[-]" : "[+]", label, session_of(t, th)->threads[th->thread].index.count, b);
		return;
	}
	if (l->call == TUI_TL_MORE) {
		snprintf(buf, len, "%11s %11s    ... %" PRIu64 " more calls: narrow the range with --from/--to", "", "",
			 th->more);
		return;
	}
	c = &th->calls[l->call];
	indent = 2 * (c->depth - th->min_depth + 1);
	tui_escape(name, sizeof(name), atf_session__name(session_of(t, th), c->function_id, raw, sizeof(raw)), t->utf8);
	snprintf(buf, len, "%11s %11s  %*s%s%s", timefmt_format(tm[0], sizeof(tm[0]), since_start(t, c->ts)),
		 timefmt_format(tm[1], sizeof(tm[1]), c->dur), indent > 200 ? 200 : (int)indent, "", name,
		 c->end == TUI_END_UNWOUND ? " (unwound)" : c->end == TUI_END_OPEN ? " (open at the end)" : "");
}

const char *tui_timeline_function(struct tui *t, size_t i, char *buf, size_t len)
{
	const struct tui_thread *th = &t->threads[t->tl[i].thread];

	if (t->tl[i].call >= TUI_TL_MORE)
		return NULL;
	return atf_session__name(session_of(t, th), th->calls[t->tl[i].call].function_id, buf, len);
}

void tui_timeline_detail(struct tui *t, size_t i, char *buf, size_t len)
{
	const struct tui_thread *th = &t->threads[t->tl[i].thread];
	char tm[3][TIMEFMT_LEN], label[TUI_NAME_LEN], name[TUI_NAME_LEN], raw[32];
	const struct tui_call *c;

	thread_label(t, th, label, sizeof(label));
	if (t->tl[i].call >= TUI_TL_MORE) {
		snprintf(buf, len, "%s: events from %s to %s%s", label,
			 timefmt_format(tm[0], sizeof(tm[0]), since_start(t, th->first_ns)),
			 timefmt_format(tm[1], sizeof(tm[1]), since_start(t, th->last_ns)),
			 th->loaded ? "" : " (Enter lists its calls)");
		return;
	}
	c = &th->calls[t->tl[i].call];
	tui_escape(name, sizeof(name), atf_session__name(session_of(t, th), c->function_id, raw, sizeof(raw)), t->utf8);
	snprintf(buf, len, "%s: called at %s, depth %u, %s %s, in %s", name,
		 timefmt_format(tm[0], sizeof(tm[0]), since_start(t, c->ts)), c->depth,
		 c->end == TUI_END_RETURN ? "returned after" : c->end == TUI_END_UNWOUND ? "unwound after" :
		 "still open after", timefmt_format(tm[1], sizeof(tm[1]), c->dur), label);
}

/* ---- info and help ------------------------------------------------------------------------ */

static int info_add(struct tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int info_add(struct tui *t, const char *fmt, ...)
{
	char **v = realloc(t->info, (t->ninfo + 1) * sizeof(*v));
	va_list ap;
	int n;

	if (!v)
		return -ENOMEM;
	t->info = v;
	va_start(ap, fmt);
	n = vasprintf(&t->info[t->ninfo], fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	t->ninfo++;
	return 0;
}

int tui_info_build(struct tui *t)
{
	char tm[2][TIMEFMT_LEN], a[TUI_NAME_LEN], b[TUI_NAME_LEN];
	int bad = 0;

	tui_escape(a, sizeof(a), t->session, t->utf8);
	bad |= info_add(t, "session:     %s", a);
	bad |= info_add(t, "processes:   %zu", t->sel->n);
	bad |= info_add(t, "threads:     %zu", t->nthreads);
	bad |= info_add(t, "traced time: %s (every thread's outermost calls)",
			timefmt_format(tm[0], sizeof(tm[0]), calltree__traced_ns(t->full)));
	bad |= info_add(t, "functions:   %zu called, %zu call paths", t->nrows, calltree__nnodes(t->full) - 1);
	for (size_t p = 0; p < t->sel->n && !bad; p++) {
		const struct atf_session *s = t->sel->s[p];
		const struct atf_manifest *m = s->manifest;
		uint64_t events = 0;
		size_t o = 0;

		for (size_t i = 0; i < s->nthreads; i++)
			events += s->threads[i].index.count;
		for (size_t i = 0; i < m->argc && o + 2 < sizeof(b); i++) {
			tui_escape(b + o, sizeof(b) - o, m->argv[i], t->utf8);
			o += strlen(b + o);
			if (i + 1 < m->argc && o + 1 < sizeof(b))
				b[o++] = ' ', b[o] = '\0';
		}
		if (!m->argc)
			snprintf(b, sizeof(b), "-");
		tui_escape(a, sizeof(a), m->process_name ? m->process_name : "-", t->utf8);
		bad |= info_add(t, "%s", "");
		bad |= info_add(t, "pid %u: %s", m->pid, a);
		bad |= info_add(t, "  argv:       %s", b);
		tui_escape(a, sizeof(a), m->end_reason ? m->end_reason : "-", t->utf8);
		bad |= info_add(t, "  end reason: %s", a);
		bad |= info_add(t, "  recorded:   %s (%zu thread%s, %" PRIu64 " events, %" PRIu64 " lost)",
				timefmt_format(tm[1], sizeof(tm[1]), m->time_end_ns > m->time_start_ns ?
					       m->time_end_ns - m->time_start_ns : 0),
				s->nthreads, s->nthreads == 1 ? "" : "s", events, m->lost_events);
	}
	return bad ? -ENOMEM : 0;
}

static const char *const help[] = {
	"Up, Down, PgUp, PgDn, Home, End, j, k   move",
	"Enter       expand or collapse a graph node or a timeline thread;",
	"            on a report line: the graph of its function",
	"Right, Left expand; collapse (or go to the parent)",
	"E, C        expand, collapse every node of the graph",
	"R           report: one line per function",
	"G           the full call graph",
	"g           the call graph below the selected function",
	"T           timeline: each thread's calls in time order",
	"t, Tab      next thread (timeline); Shift-Tab: previous",
	"s, S        sort the report by the next, previous column",
	"/           search a function name (substring); n, N: next, previous match",
	"i           every count of the selected line",
	"I           session info",
	"h, ?        this help (in help and info, any other key goes back)",
	"q           quit",
};

size_t tui_help_lines(void)
{
	return sizeof(help) / sizeof(help[0]);
}

const char *tui_help_line(size_t i)
{
	return i < tui_help_lines() ? help[i] : "";
}
