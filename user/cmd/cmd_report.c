// SPDX-License-Identifier: MIT
/*
 * atftrace report SESSION [-s KEY] [--limit N] [--json | --csv] [--pid N] [--thread N]
 *                         [--from T] [--to T]
 *
 * One row per function: calls, total time, self time, average, min and max per call, and the
 * share of the traced time (the summed time of every thread's outermost frames). Built by the
 * call tree walker (calltree.h), flat, in one streaming pass: memory O(functions) plus O(depth)
 * per thread, whatever the number of events.
 *
 * Total counts a recursive function's outermost frames only, so it never exceeds the time
 * the function was on the stack; average, min and max are over every call. A call left by
 * unwinding counts up to its EXCEPTION ("unwound"); one still open at the end counts up to the
 * end of its thread or of the range ("open"), both noted after the name.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calltree.h"
#include "cmd_common.h"
#include "cmd_select.h"
#include "commands.h"
#include "textfmt.h"
#include "timefmt.h"

enum sort_key { SORT_TOTAL, SORT_SELF, SORT_CALLS, SORT_AVG, SORT_MAX, SORT_NAME };
enum { OPT_LIMIT = 0x100, OPT_JSON, OPT_CSV };

struct report_args {
	const char *session;
	enum sort_key sort;
	uint64_t limit;             /* 0: all */
	bool json, csv;
	struct cmd_select_args sel;
};

struct row {
	uint32_t name;
	uint64_t calls, total_ns, self_ns, sum_ns, min_ns, max_ns, unwound, unfinished;
};

static const struct argp_option report_options[] = {
	{ "sort", 's', "KEY", 0, "Order rows by total (default), self, calls, avg, max or name", 0 },
	{ "limit", OPT_LIMIT, "N", 0, "Print the first N rows only", 0 },
	{ "json", OPT_JSON, NULL, 0, "One JSON object (times in ns)", 0 },
	{ "csv", OPT_CSV, NULL, 0, "CSV with a header line (times in ns)", 0 },
	{ 0 }
};

static error_t report_parse(int key, char *arg, struct argp_state *state)
{
	static const char *const keys[] = { "total", "self", "calls", "avg", "max", "name" };
	struct report_args *a = state->input;
	char *end;
	size_t i;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->sel;
		return 0;
	case 's':
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]) && strcmp(arg, keys[i]); i++)
			;
		if (i == sizeof(keys) / sizeof(keys[0]))
			argp_error(state, "--sort %s: expected total, self, calls, avg, max or name", arg);
		a->sort = (enum sort_key)i;
		return 0;
	case OPT_LIMIT:
		errno = 0;
		a->limit = strtoull(arg, &end, 10);
		if (errno || *end || !*arg || *arg == '-' || !a->limit)
			argp_error(state, "--limit %s: expected a positive number of rows", arg);
		return 0;
	case OPT_JSON:
	case OPT_CSV:
		*(key == OPT_JSON ? &a->json : &a->csv) = true;
		if (a->json && a->csv)
			argp_error(state, "--json and --csv: choose one");
		return 0;
	default:
		return cmd_session_arg(key, arg, state, &a->session);
	}
}

static const struct calltree *sort_tree;
static enum sort_key sort_by;

static uint64_t avg_of(const struct row *r)
{
	return r->calls ? r->sum_ns / r->calls : 0;
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	uint64_t va = 0, vb = 0;

	switch (sort_by) {
	case SORT_TOTAL: va = a->total_ns, vb = b->total_ns; break;
	case SORT_SELF:  va = a->self_ns, vb = b->self_ns; break;
	case SORT_CALLS: va = a->calls, vb = b->calls; break;
	case SORT_AVG:   va = avg_of(a), vb = avg_of(b); break;
	case SORT_MAX:   va = a->max_ns, vb = b->max_ns; break;
	case SORT_NAME:  break;
	}
	if (va != vb)
		return va > vb ? -1 : 1;
	return strcmp(calltree__name(sort_tree, a->name), calltree__name(sort_tree, b->name));
}

static double share_of(const struct row *r, uint64_t traced)
{
	return traced ? 100.0 * (double)r->total_ns / (double)traced : 0.0;
}

/* "12 of 533 functions" when --limit cut the rows, else "533 functions" (or "1 function"). */
static void print_count(size_t shown, size_t all)
{
	if (shown < all)
		printf("%zu of ", shown);
	printf("%zu %s", all, textfmt_plural(all, "function", "functions"));
}

static void print_text(const struct report_args *a, const struct calltree *ct, const struct row *rows, size_t n,
		       size_t all)
{
	char t[6][TIMEFMT_LEN];
	uint64_t traced = calltree__traced_ns(ct);

	printf("# %s: traced time %s, ", textfmt_show(a->session), timefmt_format(t[0], sizeof(t[0]), traced));
	print_count(n, all);
	printf(", sorted by %s\n", (const char *[]){ "total", "self", "calls", "avg", "max", "name" }[a->sort]);
	printf("%14s %14s %10s %14s %14s %14s %7s  %s\n", "Total", "Self", "Calls", "Average", "Min", "Max",
	       "Share", "Function");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		printf("%14s %14s %10" PRIu64 " %14s %14s %14s %6.2f%%  %s",
		       timefmt_format(t[0], sizeof(t[0]), r->total_ns), timefmt_format(t[1], sizeof(t[1]), r->self_ns),
		       r->calls, timefmt_format(t[2], sizeof(t[2]), avg_of(r)),
		       timefmt_format(t[3], sizeof(t[3]), r->min_ns), timefmt_format(t[4], sizeof(t[4]), r->max_ns),
		       share_of(r, traced), textfmt_show(calltree__name(ct, r->name)));
		if (r->unwound)
			printf("  (%" PRIu64 " unwound)", r->unwound);
		if (r->unfinished)
			printf("  (%" PRIu64 " open at the end)", r->unfinished);
		putchar('\n');
	}
}

static void print_csv_name(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void print_csv(const struct calltree *ct, const struct row *rows, size_t n)
{
	uint64_t traced = calltree__traced_ns(ct);

	printf("function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,share_percent,unwound,open_at_end\n");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		print_csv_name(calltree__name(ct, r->name));
		printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.4f,%" PRIu64
		       ",%" PRIu64 "\n", r->calls, r->total_ns, r->self_ns, avg_of(r), r->min_ns, r->max_ns,
		       share_of(r, traced), r->unwound, r->unfinished);
	}
}

static int print_json(const struct report_args *a, const struct calltree *ct, const struct row *rows, size_t n)
{
	json_t *root = json_object(), *arr = json_array();
	uint64_t traced = calltree__traced_ns(ct);
	int bad = !root || !arr;

	bad |= json_object_set_new(root, "session", json_string(a->session));
	bad |= json_object_set_new(root, "traced_ns", json_integer((json_int_t)traced));
	for (size_t i = 0; i < n && !bad; i++) {
		const struct row *r = &rows[i];
		json_t *o = json_object();

		bad |= !o;
		bad |= json_object_set_new(o, "function", json_stringn_nocheck(calltree__name(ct, r->name),
									  strlen(calltree__name(ct, r->name))));
		bad |= json_object_set_new(o, "calls", json_integer((json_int_t)r->calls));
		bad |= json_object_set_new(o, "total_ns", json_integer((json_int_t)r->total_ns));
		bad |= json_object_set_new(o, "self_ns", json_integer((json_int_t)r->self_ns));
		bad |= json_object_set_new(o, "avg_ns", json_integer((json_int_t)avg_of(r)));
		bad |= json_object_set_new(o, "min_ns", json_integer((json_int_t)r->min_ns));
		bad |= json_object_set_new(o, "max_ns", json_integer((json_int_t)r->max_ns));
		bad |= json_object_set_new(o, "share_percent", json_real(share_of(r, traced)));
		bad |= json_object_set_new(o, "unwound", json_integer((json_int_t)r->unwound));
		bad |= json_object_set_new(o, "open_at_end", json_integer((json_int_t)r->unfinished));
		bad |= json_array_append_new(arr, o);
	}
	bad |= json_object_set_new(root, "functions", arr);
	if (!bad)
		bad = json_dumpf(root, stdout, JSON_INDENT(1) | JSON_ENSURE_ASCII) || putchar('\n') == EOF;
	json_decref(root);
	return bad ? -ENOMEM : 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cmd_select_argp, 0, NULL, 0 }, { 0 } };
	static const char doc[] =
		"Per-function calls and times of a recorded session.\v"
		"Every process of SESSION unless --pid; T is a time since the session start "
		"(1500, 20us, 1.5ms, 2s). Total counts a recursive function's outermost calls; share "
		"is total over the traced time (every thread's outermost frames added up).";
	struct argp argp = { report_options, report_parse, "SESSION", doc, children, NULL, NULL };
	struct report_args a = { 0 };
	struct cmd_selection sel = { 0 };
	struct calltree *ct;
	struct row *rows = NULL;
	size_t n = 0, all;
	int err = 0, rc = 1;

	if (cmd_parse(&argp, "report", argc, argv, &a))
		return 2;
	if (!(ct = cmd_select_calltree("report", a.session, &a.sel, CALLTREE_FLAT, &sel)))
		return 1;
	if (!(rows = calloc(calltree__nnodes(ct), sizeof(*rows)))) {
		fprintf(stderr, "atftrace report: %s\n", strerror(ENOMEM));
		goto cleanup;
	}
	for (uint32_t i = 1; i < calltree__nnodes(ct); i++) {  /* flat: one node per function */
		const struct calltree_node *nd = calltree__node(ct, i);

		if (nd->calls)
			rows[n++] = (struct row){ .name = nd->name, .calls = nd->calls, .total_ns = nd->outer_ns,
						  .self_ns = nd->self_ns, .sum_ns = nd->total_ns, .min_ns = nd->min_ns,
						  .max_ns = nd->max_ns, .unwound = nd->unwound,
						  .unfinished = nd->unfinished };
	}
	sort_tree = ct;
	sort_by = a.sort;
	qsort(rows, n, sizeof(*rows), row_cmp);
	all = n;
	if (a.limit && a.limit < n)
		n = (size_t)a.limit;
	if (a.json)
		err = print_json(&a, ct, rows, n);
	else if (a.csv)
		print_csv(ct, rows, n);
	else
		print_text(&a, ct, rows, n, all);
	rc = err || fflush(stdout) ? 1 : 0;
cleanup:
	free(rows);
	calltree__free(ct);
	cmd_selection_free(&sel);
	return rc;
}
