// SPDX-License-Identifier: MIT
/*
 * The tui's report and call graph views and search (tui.h). The report's rows are report's: one
 * per function of the flat tree, total = the outermost frames' time. The graph is graph's tree,
 * children by total time (calltree__children), and 'g' is graph FUNCTION's view
 * (calltree__function_view). The timeline and info views are in tui_timeline.c, the escaping of
 * names in tui_text.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "timefmt.h"
#include "tui.h"
#include "tui_int.h"
#include "utf8.h"

/* ---- report --------------------------------------------------------------------------------- */

static const char *const sort_names[TUI_NSORTS] = { "total", "self", "calls", "avg", "max", "name" };

const char *tui__sort_name(enum tui_sort s)
{
	return s < TUI_NSORTS ? sort_names[s] : "?";
}

static uint64_t avg_of(const struct tui_row *r)
{
	return r->calls ? r->sum_ns / r->calls : 0;
}

static const struct tui *sort_tui;

static int row_cmp(const void *pa, const void *pb)
{
	const struct tui_row *a = pa, *b = pb;
	uint64_t va = 0, vb = 0;

	switch (sort_tui->sort) {
	case TUI_SORT_TOTAL: va = a->total_ns, vb = b->total_ns; break;
	case TUI_SORT_SELF:  va = a->self_ns, vb = b->self_ns; break;
	case TUI_SORT_CALLS: va = a->calls, vb = b->calls; break;
	case TUI_SORT_AVG:   va = avg_of(a), vb = avg_of(b); break;
	case TUI_SORT_MAX:   va = a->max_ns, vb = b->max_ns; break;
	default:             break;
	}
	if (va != vb)
		return va > vb ? -1 : 1;
	return strcmp(calltree__name(sort_tui->flat, a->name), calltree__name(sort_tui->flat, b->name));
}

void tui__sort(struct tui *t, int step)
{
	t->sort = (enum tui_sort)(((int)t->sort + step + TUI_NSORTS) % TUI_NSORTS);
	sort_tui = t;
	qsort(t->rows, t->nrows, sizeof(*t->rows), row_cmp);
}

/* The report's rows, as report makes them from the flat tree: total counts outermost frames. */
static int report_build(struct tui *t)
{
	if (!(t->rows = calloc(calltree__nnodes(t->flat), sizeof(*t->rows))))
		return -ENOMEM;
	for (uint32_t i = 1; i < calltree__nnodes(t->flat); i++) {
		const struct calltree_node *nd = calltree__node(t->flat, i);

		if (nd->calls)
			t->rows[t->nrows++] = (struct tui_row){
				.name = nd->name, .calls = nd->calls, .total_ns = nd->outer_ns, .self_ns = nd->self_ns,
				.sum_ns = nd->total_ns, .min_ns = nd->min_ns, .max_ns = nd->max_ns,
				.unwound = nd->unwound, .unfinished = nd->unfinished };
	}
	t->sort = TUI_SORT_TOTAL;
	tui__sort(t, 0);
	return 0;
}

static void report_line(const struct tui *t, size_t i, char *buf, size_t len)
{
	const struct tui_row *r = &t->rows[i];
	char tm[4][TIMEFMT_LEN], name[TUI_NAME_LEN];

	tui_escape(name, sizeof(name), calltree__name(t->flat, r->name), t->utf8);
	snprintf(buf, len, "%11s %11s %9" PRIu64 " %11s %11s  %s%s%s", timefmt_format(tm[0], sizeof(tm[0]), r->total_ns),
		 timefmt_format(tm[1], sizeof(tm[1]), r->self_ns), r->calls,
		 timefmt_format(tm[2], sizeof(tm[2]), avg_of(r)), timefmt_format(tm[3], sizeof(tm[3]), r->max_ns), name,
		 r->unwound ? " (unwound)" : "", r->unfinished ? " (open at the end)" : "");
}

/* ---- graph ------------------------------------------------------------------------------------ */

static void graph_clear(struct tui_graph *g)
{
	if (g->owned)
		calltree__free(g->tree);
	free(g->function);
	free(g->order);
	free(g->depth);
	free(g->pos);
	free(g->expanded);
	free(g->last);
	free(g->has_kids);
	free(g->vis);
	*g = (struct tui_graph){ 0 };
}

/* The visible lines: the order, less the subtrees of collapsed nodes. */
static void graph_visible(struct tui_graph *g)
{
	uint32_t skip = UINT32_MAX;

	g->nvis = 0;
	for (size_t i = 0; i < g->norder; i++) {
		uint32_t n = g->order[i];

		if (g->depth[i] > skip)
			continue;
		skip = UINT32_MAX;
		g->vis[g->nvis++] = (uint32_t)i;
		if (g->has_kids[n] && !g->expanded[n])
			skip = g->depth[i];
	}
}

/* Every node in graph's order (depth first, children by total), all expanded. */
static int graph_order(struct tui_graph *g)
{
	size_t nn = calltree__nnodes(g->tree), sp = 0;
	struct { uint32_t node, depth; } *todo = malloc(nn * sizeof(*todo));
	int err = -ENOMEM;

	g->order = malloc(nn * sizeof(*g->order));
	g->depth = malloc(nn * sizeof(*g->depth));
	g->vis = malloc(nn * sizeof(*g->vis));
	g->pos = calloc(nn, sizeof(*g->pos));
	g->expanded = calloc(nn, sizeof(*g->expanded));
	g->last = calloc(nn, sizeof(*g->last));
	g->has_kids = calloc(nn, sizeof(*g->has_kids));
	if (!todo || !g->order || !g->depth || !g->vis || !g->pos || !g->expanded || !g->last || !g->has_kids)
		goto cleanup;
	todo[sp++] = (typeof(*todo)){ CALLTREE_ROOT, 0 };
	while (sp) {
		uint32_t node = todo[--sp].node, depth = todo[sp].depth, *kids;
		int64_t nk = calltree__children(g->tree, node, &kids);

		if (nk < 0)
			goto cleanup;
		if (node != CALLTREE_ROOT) {
			g->pos[node] = (uint32_t)g->norder;
			g->depth[g->norder] = depth - 1;
			g->order[g->norder++] = node;
		}
		g->has_kids[node] = g->expanded[node] = nk > 0;
		for (int64_t k = nk - 1; k >= 0; k--)  /* pushed last first: popped in order */
			todo[sp++] = (typeof(*todo)){ kids[k], depth + 1 };
		if (nk)
			g->last[kids[nk - 1]] = true;
		free(kids);
	}
	graph_visible(g);
	err = 0;
cleanup:
	free(todo);
	return err;
}

int tui__graph(struct tui *t, const char *function)
{
	struct tui_graph g = { .tree = t->full };
	int64_t found;

	if (function) {
		if (!(g.tree = calltree__new(0)) || !(g.function = strdup(function))) {
			calltree__free(g.tree);
			return -ENOMEM;
		}
		g.owned = true;
		if ((found = calltree__function_view(g.tree, t->full, function, false)) <= 0) {
			graph_clear(&g);
			return found ? (int)found : -ENOENT;
		}
	}
	if (graph_order(&g)) {
		graph_clear(&g);
		return -ENOMEM;
	}
	graph_clear(&t->g);
	t->g = g;
	t->cursor[TUI_GRAPH] = t->top[TUI_GRAPH] = 0;
	return 0;
}

#define TUI_MAX_COLUMNS 64      /* ancestor columns drawn; deeper lines say how many were left out */

static void graph_line(const struct tui *t, size_t i, char *buf, size_t len)
{
	const struct tui_graph *g = &t->g;
	uint32_t node = g->order[g->vis[i]], depth = g->depth[g->vis[i]];
	const struct calltree_node *n = calltree__node(g->tree, node);
	bool lastv[TUI_MAX_COLUMNS];
	uint32_t cols = depth > 1 ? depth - 1 : 0, shown = cols < TUI_MAX_COLUMNS ? cols : TUI_MAX_COLUMNS;
	char tm[2][TIMEFMT_LEN], name[TUI_NAME_LEN], prefix[TUI_MAX_COLUMNS * 4 + 32];
	const char *bar = t->utf8 ? "│ " : "| ", *mark;
	size_t o = 0;
	uint32_t p = n->parent;

	prefix[0] = '\0';

	/* the ancestors' columns, the nearest ones when there are too many: "│ " while an
	 * ancestor has siblings below it, else blanks */
	for (uint32_t k = cols; k > cols - shown; k--, p = calltree__node(g->tree, p)->parent)
		lastv[k - 1 - (cols - shown)] = g->last[p];
	if (cols > shown)
		o += (size_t)snprintf(prefix + o, sizeof(prefix) - o, "(+%u) ", cols - shown);
	for (uint32_t k = 0; k < shown; k++)
		o += (size_t)snprintf(prefix + o, sizeof(prefix) - o, "%s", lastv[k] ? "  " : bar);
	if (depth)
		o += (size_t)snprintf(prefix + o, sizeof(prefix) - o, "%s",
				      g->last[node] ? (t->utf8 ? "└─" : "`-") : (t->utf8 ? "├─" : "|-"));
	mark = !g->has_kids[node] ? "" : g->expanded[node] ? "[-] " : "[+] ";
	tui_escape(name, sizeof(name), calltree__name(g->tree, n->name), t->utf8);
	if (n->process)
		snprintf(buf, len, "%11s %11s %9s  %s%s%s", "", "", "", prefix, mark, name);
	else
		snprintf(buf, len, "%11s %11s %9" PRIu64 "  %s%s%s%s%s", timefmt_format(tm[0], sizeof(tm[0]), n->total_ns),
			 timefmt_format(tm[1], sizeof(tm[1]), n->self_ns), n->calls, prefix, mark, name,
			 n->unwound ? " (unwound)" : "", n->unfinished ? " (open at the end)" : "");
}

/* The visible line of order entry @o (opening its ancestors when @open), or -1 when hidden. */
static int64_t graph_line_of(struct tui_graph *g, size_t o, bool open)
{
	if (open) {
		for (uint32_t p = calltree__node(g->tree, g->order[o])->parent; p != CALLTREE_ROOT;
		     p = calltree__node(g->tree, p)->parent)
			g->expanded[p] = true;
		graph_visible(g);
	}
	for (size_t i = 0; i < g->nvis; i++)
		if (g->vis[i] == o)
			return (int64_t)i;
	return -1;
}

static int64_t graph_toggle(struct tui_graph *g, size_t i, int how)
{
	uint32_t node = g->order[g->vis[i]], parent;

	if (g->has_kids[node] && (how == 0 || (how > 0) != g->expanded[node])) {
		g->expanded[node] = !g->expanded[node];
		graph_visible(g);
		return (int64_t)i;
	}
	parent = calltree__node(g->tree, node)->parent;
	if (how < 0 && parent != CALLTREE_ROOT)    /* nothing to close here: go to the parent */
		return graph_line_of(g, g->pos[parent], false);
	return (int64_t)i;
}

void tui__expand_all(struct tui *t, bool expand)
{
	for (size_t i = 0; i < t->g.norder; i++)
		t->g.expanded[t->g.order[i]] = expand && t->g.has_kids[t->g.order[i]];
	graph_visible(&t->g);
}

/* ---- the views together -------------------------------------------------------------------- */

int tui__init(struct tui *t, const char *session, const struct cmd_selection *sel, struct calltree *flat,
	      struct calltree *full, bool utf8)
{
	*t = (struct tui){ .session = session, .sel = sel, .flat = flat, .full = full, .utf8 = utf8 };
	if (report_build(t) || tui__graph(t, NULL) || tui_timeline_build(t) || tui_info_build(t))
		return -ENOMEM;
	return 0;
}

void tui__free(struct tui *t)
{
	graph_clear(&t->g);
	tui_timeline_free(t);
	free(t->rows);
	calltree__free(t->flat);
	calltree__free(t->full);
	*t = (struct tui){ 0 };
}

size_t tui__nlines(const struct tui *t)
{
	switch (t->view) {
	case TUI_REPORT:   return t->nrows;
	case TUI_GRAPH:    return t->g.nvis;
	case TUI_TIMELINE: return t->ntl;
	case TUI_INFO:     return t->ninfo;
	case TUI_HELP:     return tui_help_lines();
	default:           return 0;
	}
}

void tui__line(struct tui *t, size_t i, char *buf, size_t len)
{
	*buf = '\0';
	if (i >= tui__nlines(t))
		return;
	switch (t->view) {
	case TUI_REPORT:   report_line(t, i, buf, len); break;
	case TUI_GRAPH:    graph_line(t, i, buf, len); break;
	case TUI_TIMELINE: tui_timeline_line(t, i, buf, len); break;
	case TUI_INFO:     snprintf(buf, len, "%s", t->info[i]); break;
	case TUI_HELP:     snprintf(buf, len, "%s", tui_help_line(i)); break;
	default:           break;
	}
}

void tui__title(const struct tui *t, char *buf, size_t len)
{
	char s[TUI_NAME_LEN], f[TUI_NAME_LEN];

	tui_escape(s, sizeof(s), t->session, t->utf8);
	switch (t->view) {
	case TUI_REPORT:
		snprintf(buf, len, "Report: %s: %zu function%s, sorted by %s", s, t->nrows, t->nrows == 1 ? "" : "s",
			 tui__sort_name(t->sort));
		break;
	case TUI_GRAPH:
		if (t->g.function)
			tui_escape(f, sizeof(f), t->g.function, t->utf8);
		snprintf(buf, len, "Graph: %s: call graph %s%s", s, t->g.function ? "below " : "below every root",
			 t->g.function ? f : "");
		break;
	case TUI_TIMELINE:
		snprintf(buf, len, "Timeline: %s: %zu thread%s, calls in time order", s, t->nthreads,
			 t->nthreads == 1 ? "" : "s");
		break;
	case TUI_INFO:
		snprintf(buf, len, "Info: %s", s);
		break;
	default:
		snprintf(buf, len, "Help: atftrace tui keys");
		break;
	}
}

void tui__header(const struct tui *t, char *buf, size_t len)
{
	switch (t->view) {
	case TUI_REPORT:
		snprintf(buf, len, "%11s %11s %9s %11s %11s  %s", "Total", "Self", "Calls", "Average", "Max", "Function");
		break;
	case TUI_GRAPH:
		snprintf(buf, len, "%11s %11s %9s  %s", "Total", "Self", "Calls", "Function");
		break;
	case TUI_TIMELINE:
		snprintf(buf, len, "%11s %11s  %s", "Time", "Duration", "Thread / Function");
		break;
	default:
		*buf = '\0';
	}
}

int64_t tui__toggle(struct tui *t, size_t i, int how)
{
	if (i >= tui__nlines(t))
		return (int64_t)i;
	if (t->view == TUI_GRAPH)
		return graph_toggle(&t->g, i, how);
	if (t->view == TUI_TIMELINE)
		return tui_timeline_toggle(t, i, how);
	return (int64_t)i;
}

const char *tui__function(struct tui *t, size_t i, char *buf, size_t len)
{
	const struct calltree_node *n;

	if (i >= tui__nlines(t))
		return NULL;
	switch (t->view) {
	case TUI_REPORT:
		return calltree__name(t->flat, t->rows[i].name);
	case TUI_GRAPH:
		n = calltree__node(t->g.tree, t->g.order[t->g.vis[i]]);
		return n->process ? NULL : calltree__name(t->g.tree, n->name);
	case TUI_TIMELINE:
		return tui_timeline_function(t, i, buf, len);
	default:
		return NULL;
	}
}

void tui__detail(struct tui *t, size_t i, char *buf, size_t len)
{
	char tm[6][TIMEFMT_LEN], name[TUI_NAME_LEN];
	const struct calltree_node *n;
	const char *raw;

	*buf = '\0';
	if (i >= tui__nlines(t))
		return;
	if (t->view == TUI_TIMELINE) {
		tui_timeline_detail(t, i, buf, len);
		return;
	}
	if (t->view == TUI_REPORT) {
		const struct tui_row *r = &t->rows[i];

		tui_escape(name, sizeof(name), calltree__name(t->flat, r->name), t->utf8);
		snprintf(buf, len, "%s: %" PRIu64 " calls, total %s, self %s, avg %s, min %s, max %s, %" PRIu64
			 " unwound, %" PRIu64 " open", name, r->calls, timefmt_format(tm[0], sizeof(tm[0]), r->total_ns),
			 timefmt_format(tm[1], sizeof(tm[1]), r->self_ns), timefmt_format(tm[2], sizeof(tm[2]), avg_of(r)),
			 timefmt_format(tm[3], sizeof(tm[3]), r->min_ns), timefmt_format(tm[4], sizeof(tm[4]), r->max_ns),
			 r->unwound, r->unfinished);
		return;
	}
	if (t->view != TUI_GRAPH || !(raw = tui__function(t, i, NULL, 0)))
		return;
	n = calltree__node(t->g.tree, t->g.order[t->g.vis[i]]);
	tui_escape(name, sizeof(name), raw, t->utf8);
	snprintf(buf, len, "%s (depth %u): %" PRIu64 " calls, total %s, self %s, min %s, max %s, %" PRIu64
		 " unwound, %" PRIu64 " open", name, t->g.depth[t->g.vis[i]], n->calls,
		 timefmt_format(tm[0], sizeof(tm[0]), n->total_ns), timefmt_format(tm[1], sizeof(tm[1]), n->self_ns),
		 timefmt_format(tm[2], sizeof(tm[2]), n->calls ? n->min_ns : 0),
		 timefmt_format(tm[3], sizeof(tm[3]), n->max_ns), n->unwound, n->unfinished);
}

int64_t tui__search(struct tui *t, const char *pattern, size_t from, int dir)
{
	char buf[TUI_NAME_LEN];
	size_t n = t->view == TUI_GRAPH ? t->g.norder : tui__nlines(t), start;

	if (!n || !*pattern)
		return -1;
	if (t->view == TUI_GRAPH)       /* search the whole order, hidden nodes too */
		start = from < t->g.nvis ? t->g.vis[from] : 0;
	else
		start = from < n ? from : 0;
	for (size_t k = 1; k <= n; k++) {
		size_t i = dir > 0 ? (start + k) % n : (start + n - k % n) % n;
		const char *name;

		if (t->view == TUI_GRAPH) {
			const struct calltree_node *nd = calltree__node(t->g.tree, t->g.order[i]);

			if (!nd->process && strstr(calltree__name(t->g.tree, nd->name), pattern))
				return graph_line_of(&t->g, i, true);
			continue;
		}
		if ((name = tui__function(t, i, buf, sizeof(buf))) && strstr(name, pattern))
			return (int64_t)i;
	}
	return -1;
}
