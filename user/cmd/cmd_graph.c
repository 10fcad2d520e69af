// SPDX-License-Identifier: MIT
/*
 * atftrace graph SESSION [FUNCTION] [--callers] [-D N] [--pid N] [--thread N] [--from T] [--to T]
 *
 * The aggregated call graph of a recorded session, from the call tree walker (calltree.h):
 * every distinct call path with its calls, total and self time, children by total time.
 *
 *   - no FUNCTION: the tree below every root (a session of several processes: below each
 *     process, "comm [pid]");
 *   - FUNCTION: the paths below FUNCTION, all its outermost calls added together wherever
 *     they were made from;
 *   - FUNCTION --callers: the paths that lead to FUNCTION, callers below callee, each with the
 *     calls and time of FUNCTION made through it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calltree.h"
#include "cmd_common.h"
#include "cmd_select.h"
#include "commands.h"
#include "textfmt.h"
#include "timefmt.h"

enum { OPT_CALLERS = 0x100 };

struct graph_args {
	const char *session;
	const char *function;       /* NULL: every root */
	bool callers;
	uint32_t max_depth;         /* 0: no limit */
	struct cmd_select_args sel;
};

static const struct argp_option graph_options[] = {
	{ "callers", OPT_CALLERS, NULL, 0, "The callers of FUNCTION instead of its callees", 0 },
	{ "depth", 'D', "N", 0, "Print N levels at most", 0 },
	{ 0 }
};

static error_t graph_parse(int key, char *arg, struct argp_state *state)
{
	struct graph_args *a = state->input;
	char *end;
	unsigned long v;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->sel;
		return 0;
	case OPT_CALLERS:
		a->callers = true;
		return 0;
	case 'D':
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || *end || !*arg || *arg == '-' || !v || v > UINT32_MAX)
			argp_error(state, "--depth %s: expected a positive number of levels", arg);
		a->max_depth = (uint32_t)v;
		return 0;
	case ARGP_KEY_ARG:
		if (!a->session)
			a->session = arg;
		else if (!a->function)
			a->function = arg;
		else
			argp_error(state, "%s: at most SESSION and one FUNCTION", arg);
		return 0;
	case ARGP_KEY_END:
		if (!a->session)
			argp_error(state, "SESSION is required");
		if (a->callers && !a->function)
			argp_error(state, "--callers: needs a FUNCTION");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/*
 * FUNCTION as the tree names it: the display name of a recorded symbol that FUNCTION names by any
 * of its names (atf_symbol__matches: malloc finds __libc_malloc, memcpy its ifunc's choice, a
 * versioned or a demangled name its symbol). Says so on stderr when it is not FUNCTION as given.
 * Returns a malloc'd name, or NULL on ENOMEM.
 */
static char *resolve_function(const struct cmd_selection *sel, const char *function)
{
	char buf[32];

	for (size_t i = 0; i < sel->n; i++) {
		struct atf_manifest *m = sel->s[i]->manifest;

		for (size_t j = 0; j < m->nsymbols; j++) {
			struct atf_symbol *sym = &m->symbols[j];
			const char *shown;

			if (!atf_symbol__matches(sym, function, false))
				continue;
			shown = atf_session__name(sel->s[i], sym->function_id, buf, sizeof(buf));
			if (strcmp(shown, function))
				fprintf(stderr, "atftrace graph: %s: recorded as %s (another name of the same "
					"function)\n", textfmt_show(function), textfmt_show(shown));
			return strdup(shown);
		}
	}
	return strdup(function);
}

static int print_node(const struct calltree *ct, uint32_t node, char *prefix, size_t plen, bool last,
		      uint32_t depth, const struct graph_args *a);

/* Prints the children of @node (at @depth), by total time, depth first. */
static int print_children(const struct calltree *ct, uint32_t node, char *prefix, size_t plen, uint32_t depth,
			  const struct graph_args *a)
{
	uint32_t *kids;
	int64_t nk;
	int err = 0;

	if (a->max_depth && depth >= a->max_depth)
		return 0;
	if ((nk = calltree__children(ct, node, &kids)) < 0)
		return (int)nk;
	for (int64_t i = 0; i < nk && !err; i++)
		err = print_node(ct, kids[i], prefix, plen, i + 1 == nk, depth, a);
	free(kids);
	return err;
}

/* Prints @node's line with its tree-drawing prefix, then its subtree. */
static int print_node(const struct calltree *ct, uint32_t node, char *prefix, size_t plen, bool last,
		      uint32_t depth, const struct graph_args *a)
{
	const struct calltree_node *n = calltree__node(ct, node);
	const char *branch = depth ? (last ? "└─" : "├─") : "";
	char t[2][TIMEFMT_LEN];

	if (n->process)
		printf("%14s %14s %8s  %.*s%s%s\n", "", "", "", (int)plen, prefix, branch, textfmt_show(calltree__name(ct, n->name)));
	else
		printf("%14s %14s %8" PRIu64 "  %.*s%s%s%s%s\n", timefmt_format(t[0], sizeof(t[0]), n->total_ns),
		       a->callers ? "" : timefmt_format(t[1], sizeof(t[1]), n->self_ns), n->calls, (int)plen, prefix,
		       branch, textfmt_show(calltree__name(ct, n->name)), n->unwound ? " (unwound)" : "",
		       n->unfinished ? " (open at the end)" : "");
	if (depth) {            /* this node's column for its children: "│ " or "  " */
		memcpy(prefix + plen, last ? "  " : "│ ", last ? 2 : 4);
		plen += last ? 2 : 4;
	}
	return print_children(ct, node, prefix, plen, depth + 1, a);
}

int cmd_graph(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cmd_select_argp, 0, NULL, 0 }, { 0 } };
	static const char doc[] =
		"The aggregated call graph of a recorded session: below every root, below FUNCTION, "
		"or (--callers) above it.\v"
		"Every process of SESSION unless --pid; T is a time since the session start (1500, 20us, "
		"1.5ms, 2s). Children are ordered by total time. With --callers, each line is a caller "
		"chain with the calls and time of FUNCTION made through it.";
	struct argp argp = { graph_options, graph_parse, "SESSION [FUNCTION]", doc, children, NULL, NULL };
	struct graph_args a = { 0 };
	struct cmd_selection sel = { 0 };
	struct calltree *ct, *view = NULL;
	const struct calltree *shown;
	char *prefix = NULL, *resolved = NULL;
	int64_t found = 1;
	int err = 0, rc = 1;

	if (cmd_parse(&argp, "graph", argc, argv, &a))
		return 2;
	if (!(ct = cmd_select_calltree("graph", a.session, &a.sel, CALLTREE_PROCESS_NODES, &sel)))
		return 1;
	if (a.function) {
		if (!(resolved = resolve_function(&sel, a.function))) {
			err = -ENOMEM;
			goto cleanup;
		}
		a.function = resolved;
		found = (view = calltree__new(0)) ? calltree__function_view(view, ct, a.function, a.callers) : -ENOMEM;
		err = found < 0 ? (int)found : 0;
	}
	if (err) {
		fprintf(stderr, "atftrace graph: %s: %s\n", a.session, atf_strerror(err));
		goto cleanup;
	}
	if (!found) {
		fprintf(stderr, "atftrace graph: %s: not called in %s (in the selected range)\n", a.function, a.session);
		goto cleanup;
	}
	shown = view ? view : ct;
	if (!(prefix = malloc(4 * (calltree__nnodes(shown) + 1)))) {
		fprintf(stderr, "atftrace graph: %s\n", strerror(ENOMEM));
		goto cleanup;
	}
	printf("# %s: call graph %s%s\n", a.session, !a.function ? "below every root" : a.callers ? "of the callers of " :
	       "below ", a.function ? textfmt_show(a.function) : "");
	printf("%14s %14s %8s  %s\n", "Total", a.callers ? "" : "Self", "Calls", a.callers ? "Function <- caller" : "Function");
	err = print_children(shown, CALLTREE_ROOT, prefix, 0, 0, &a);
	rc = err || fflush(stdout) ? 1 : 0;
cleanup:
	free(prefix);
	free(resolved);
	calltree__free(view);
	calltree__free(ct);
	cmd_selection_free(&sel);
	return rc;
}
