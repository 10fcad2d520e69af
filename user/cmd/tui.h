/* SPDX-License-Identifier: MIT */
/*
 * The model behind `atftrace tui` (cmd_tui.c draws it with ncurses): the lines of its views
 * (report, call graph, per-thread timeline, info, help), what expanding and collapsing shows,
 * sorting and search. No terminal code here: every line comes out as plain text with names
 * escaped (tui_escape), so what the screen shows is decided, and unit-testable, in one place.
 *
 * The report and graph come from the call tree walker (calltree.h) that `report` and `graph`
 * use; the timeline reads each thread's events through atf_merge, like `dump`.
 */
#ifndef ATFTRACE_TUI_H
#define ATFTRACE_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "calltree.h"
#include "cmd_select.h"

enum tui_view { TUI_REPORT, TUI_GRAPH, TUI_TIMELINE, TUI_INFO, TUI_HELP, TUI_NVIEWS };
enum tui_sort { TUI_SORT_TOTAL, TUI_SORT_SELF, TUI_SORT_CALLS, TUI_SORT_AVG, TUI_SORT_MAX, TUI_SORT_NAME,
		TUI_NSORTS };

#define TUI_TIMELINE_MAX_CALLS (1u << 20)   /* calls a thread's timeline holds; the rest are counted */

struct tui_row {                /* one function of the report (a flat tree's node) */
	uint32_t name;
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns, unwound, unfinished;
};

struct tui_graph {
	struct calltree *tree;      /* shown: the full graph (borrowed) or a function's view (owned) */
	bool owned;
	char *function;             /* NULL: the full graph */
	uint32_t *order;            /* every node but the root, depth first, children by total */
	uint32_t *depth;            /* per order entry */
	uint32_t *pos;              /* node -> its index in order */
	bool *expanded, *last, *has_kids;       /* per node */
	size_t norder;
	uint32_t *vis;              /* visible lines: indexes into order */
	size_t nvis;
};

struct tui_call {               /* one call of a thread's timeline */
	uint64_t ts, dur, function_id;
	uint32_t depth;
	uint8_t end;                /* TUI_END_* */
};
enum { TUI_END_RETURN, TUI_END_UNWOUND, TUI_END_OPEN };

struct tui_thread {
	uint32_t process, thread;   /* indexes into the selection and its session's threads */
	bool expanded, loaded;
	struct tui_call *calls;
	size_t ncalls;
	uint64_t more;              /* calls past TUI_TIMELINE_MAX_CALLS */
	uint32_t min_depth;         /* of its calls: the range may start deep in the stack */
	uint64_t first_ns, last_ns; /* its events in the range; first > last: none */
};

struct tui_tl_line {
	uint32_t thread;
	uint32_t call;              /* TUI_TL_HEADER, TUI_TL_MORE, or an index into its calls */
};
#define TUI_TL_HEADER UINT32_MAX
#define TUI_TL_MORE   (UINT32_MAX - 1)

struct tui {
	const char *session;
	const struct cmd_selection *sel;
	struct calltree *flat;      /* report's: one node per function */
	struct calltree *full;      /* graph's: one node per call path */
	bool utf8;                  /* the terminal takes UTF-8: names and tree lines may use it */
	enum tui_view view, back;   /* back: the view help and info return to */
	size_t cursor[TUI_NVIEWS], top[TUI_NVIEWS];

	struct tui_row *rows;
	size_t nrows;
	enum tui_sort sort;

	struct tui_graph g;

	struct tui_thread *threads;
	size_t nthreads;
	struct tui_tl_line *tl;
	size_t ntl, tl_cap;
	uint64_t span_first, span_last;         /* the timeline's time span, for the bars */

	char **info;
	size_t ninfo;
};

/**
 * tui__init - the model of @sel (already opened), with @flat (CALLTREE_FLAT) and @full (the
 * graph's tree) from the call tree walker; @t takes both trees. Starts on the report.
 * Returns 0 or -ENOMEM.
 */
int tui__init(struct tui *t, const char *session, const struct cmd_selection *sel, struct calltree *flat,
	      struct calltree *full, bool utf8);
void tui__free(struct tui *t);

/** tui__sort - order the report by the next (@step 1) or previous (-1) key. */
void tui__sort(struct tui *t, int step);
const char *tui__sort_name(enum tui_sort s);

/** tui__graph - show the full graph (@function NULL) or @function's; -ENOENT: never called. */
int tui__graph(struct tui *t, const char *function);

/** tui__nlines - lines of the current view. */
size_t tui__nlines(const struct tui *t);

/** tui__line - line @i of the current view, as text for the screen, in @buf. */
void tui__line(struct tui *t, size_t i, char *buf, size_t len);

/** tui__title, tui__header - the view's title and its column header (empty when none). */
void tui__title(const struct tui *t, char *buf, size_t len);
void tui__header(const struct tui *t, char *buf, size_t len);

/**
 * tui__toggle - expand (@how 1), collapse (-1) or toggle (0) line @i: a graph node or a
 * timeline thread. Returns the line the cursor goes to (a collapsed child's parent for -1 on
 * a node that has nothing to collapse), or @i. Negative on ENOMEM (a thread's calls).
 */
int64_t tui__toggle(struct tui *t, size_t i, int how);

/** tui__expand_all - expand (@expand) or collapse every node of the graph. */
void tui__expand_all(struct tui *t, bool expand);

/** tui__function - the raw name of the function on line @i, or NULL. */
const char *tui__function(struct tui *t, size_t i, char *buf, size_t len);

/** tui__detail - one line about line @i: every count of its function, node or thread. */
void tui__detail(struct tui *t, size_t i, char *buf, size_t len);

/**
 * tui__search - the next (@dir 1) or previous (-1) line after @from whose function name holds
 * @pattern, wrapping around; in the graph, collapsed nodes are searched too and opened.
 * Returns the line, or -1.
 */
int64_t tui__search(struct tui *t, const char *pattern, size_t from, int dir);

/** tui__thread_step - the timeline line of the next (@dir 1) or previous (-1) thread after @i. */
size_t tui__thread_step(const struct tui *t, size_t i, int dir);

/**
 * tui_escape - @in for the screen: control characters (C0, DEL, C1) and bytes that are not
 * UTF-8 (with @utf8; every byte past ASCII without it) as \xNN or \u00NN, never raw. Always
 * NUL-terminates @out (when @len > 0); cuts at a whole character.
 */
void tui_escape(char *out, size_t len, const char *in, bool utf8);

#endif
