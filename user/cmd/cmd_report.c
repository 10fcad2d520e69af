// SPDX-License-Identifier: MIT
/*
 * atftrace report SESSION [-s KEY] [--limit N] [--json | --csv] [--by process] [--pid N]
 *                         [--thread N] [--from T] [--to T]
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
 *
 * --by process: the same table for each process of the session in turn (pid_* order), each
 * headed by its process, with pid and process columns in --csv and a "processes" array in --json.
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
enum { OPT_LIMIT = 0x100, OPT_JSON, OPT_CSV, OPT_BY };

struct report_args {
	const char *session;
	enum sort_key sort;
	uint64_t limit;             /* 0: all */
	bool json, csv;
	bool by_process;            /* --by process */
	struct cmd_select_args sel;
	const struct atf_session *first_process;    /* the first table's (no blank line above it) */
};

/* One table: a process's rows (--by process), or the whole selection's. */
struct table {
	const struct calltree *ct;
	const struct atf_session *process;  /* NULL: the whole selection */
	struct row *rows;
	size_t n, all;                      /* rows shown (--limit), rows in all */
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
	{ "by", OPT_BY, "process", 0, "A table for each process of the session (e.g. one recorded with -a)", 0 },
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
	case OPT_BY:
		if (strcmp(arg, "process"))
			argp_error(state, "--by %s: expected process", arg);
		a->by_process = true;
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

/* "comm [pid]" of a process, as graph labels it. */
static const char *process_label(const struct atf_session *p, char *buf, size_t len)
{
	const struct atf_manifest *m = p->manifest;

	snprintf(buf, len, "%s [%u]", m->process_name ? m->process_name : m->argc ? m->argv[0] : "?", m->pid);
	return buf;
}

static void print_text(const struct report_args *a, const struct table *tb)
{
	char t[6][TIMEFMT_LEN], label[300];
	uint64_t traced = calltree__traced_ns(tb->ct);

	if (tb->process)
		printf("%s## %s\n", tb->process == a->first_process ? "" : "\n",
		       textfmt_show(process_label(tb->process, label, sizeof(label))));
	printf("# %s: traced time %s, ", textfmt_show(a->session), timefmt_format(t[0], sizeof(t[0]), traced));
	print_count(tb->n, tb->all);
	printf(", sorted by %s\n", (const char *[]){ "total", "self", "calls", "avg", "max", "name" }[a->sort]);
	printf("%14s %14s %10s %14s %14s %14s %7s  %s\n", "Total", "Self", "Calls", "Average", "Min", "Max",
	       "Share", "Function");
	for (size_t i = 0; i < tb->n; i++) {
		const struct row *r = &tb->rows[i];

		printf("%14s %14s %10" PRIu64 " %14s %14s %14s %6.2f%%  %s",
		       timefmt_format(t[0], sizeof(t[0]), r->total_ns), timefmt_format(t[1], sizeof(t[1]), r->self_ns),
		       r->calls, timefmt_format(t[2], sizeof(t[2]), avg_of(r)),
		       timefmt_format(t[3], sizeof(t[3]), r->min_ns), timefmt_format(t[4], sizeof(t[4]), r->max_ns),
		       share_of(r, traced), textfmt_show(calltree__name(tb->ct, r->name)));
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

static void print_csv(const struct report_args *a, const struct table *tb)
{
	uint64_t traced = calltree__traced_ns(tb->ct);

	if (tb->process == a->first_process)
		printf("%sfunction,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,share_percent,unwound,open_at_end\n",
		       a->by_process ? "pid,process," : "");
	for (size_t i = 0; i < tb->n; i++) {
		const struct row *r = &tb->rows[i];

		if (tb->process) {
			printf("%u,", tb->process->manifest->pid);
			print_csv_name(tb->process->manifest->process_name ? tb->process->manifest->process_name : "");
			putchar(',');
		}
		print_csv_name(calltree__name(tb->ct, r->name));
		printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.4f,%" PRIu64
		       ",%" PRIu64 "\n", r->calls, r->total_ns, r->self_ns, avg_of(r), r->min_ns, r->max_ns,
		       share_of(r, traced), r->unwound, r->unfinished);
	}
}

/* The rows of one table as a JSON array; NULL on ENOMEM. */
static json_t *json_rows(const struct table *tb)
{
	json_t *arr = json_array();
	uint64_t traced = calltree__traced_ns(tb->ct);
	int bad = !arr;

	for (size_t i = 0; i < tb->n && !bad; i++) {
		const struct row *r = &tb->rows[i];
		const char *name = calltree__name(tb->ct, r->name);
		json_t *o = json_object();

		bad |= !o;
		bad |= json_object_set_new(o, "function", json_stringn_nocheck(name, strlen(name)));
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
	if (bad) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

/* Adds "traced_ns" and "functions" of @tb to @o. */
static int json_table(json_t *o, const struct table *tb)
{
	json_t *arr = json_rows(tb);

	if (!arr)
		return -ENOMEM;
	return json_object_set_new(o, "traced_ns", json_integer((json_int_t)calltree__traced_ns(tb->ct))) ||
	       json_object_set_new(o, "functions", arr) ? -ENOMEM : 0;
}

/*
 * One JSON object: {"session", "traced_ns", "functions"}, or with --by process
 * {"session", "processes":[{"pid", "process", "traced_ns", "functions"}, ...]}.
 */
static int print_json(const struct report_args *a, const struct table *tbs, size_t ntb)
{
	json_t *root = json_object(), *procs = a->by_process ? json_array() : NULL;
	int bad = !root || (a->by_process && !procs);

	bad |= json_object_set_new(root, "session", json_string(a->session));
	for (size_t i = 0; i < ntb && !bad; i++) {
		const struct atf_manifest *m = tbs[i].process ? tbs[i].process->manifest : NULL;
		json_t *o = m ? json_object() : root;

		bad |= !o;
		if (m && !bad) {
			const char *comm = m->process_name ? m->process_name : "";

			bad |= json_object_set_new(o, "pid", json_integer(m->pid));
			bad |= json_object_set_new(o, "process", json_stringn_nocheck(comm, strlen(comm)));
			bad |= json_array_append_new(procs, o);
		}
		bad |= !bad && json_table(o, &tbs[i]);
	}
	if (procs)
		bad |= json_object_set_new(root, "processes", procs);
	if (!bad)
		bad = json_dumpf(root, stdout, JSON_INDENT(1) | JSON_ENSURE_ASCII) || putchar('\n') == EOF;
	json_decref(root);
	return bad ? -ENOMEM : 0;
}

/* The rows of @ct (a flat tree), sorted, cut to --limit. */
static int table_fill(const struct report_args *a, struct table *tb)
{
	const struct calltree *ct = tb->ct;

	if (!(tb->rows = calloc(calltree__nnodes(ct), sizeof(*tb->rows))))
		return -ENOMEM;
	for (uint32_t i = 1; i < calltree__nnodes(ct); i++) {  /* flat: one node per function */
		const struct calltree_node *nd = calltree__node(ct, i);

		if (nd->calls)
			tb->rows[tb->n++] = (struct row){ .name = nd->name, .calls = nd->calls, .total_ns = nd->outer_ns,
							  .self_ns = nd->self_ns, .sum_ns = nd->total_ns,
							  .min_ns = nd->min_ns, .max_ns = nd->max_ns,
							  .unwound = nd->unwound, .unfinished = nd->unfinished };
	}
	sort_tree = ct;
	sort_by = a->sort;
	qsort(tb->rows, tb->n, sizeof(*tb->rows), row_cmp);
	tb->all = tb->n;
	if (a->limit && a->limit < tb->n)
		tb->n = (size_t)a->limit;
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cmd_select_argp, 0, NULL, 0 }, { 0 } };
	static const char doc[] =
		"Per-function calls and times of a recorded session.\v"
		"Every process of SESSION unless --pid, added together unless --by process; T is a time "
		"since the session start (1500, 20us, 1.5ms, 2s, 1m30s). Total counts a recursive "
		"function's outermost calls; share is total over the traced time (every thread's "
		"outermost frames added up).";
	struct argp argp = { report_options, report_parse, "SESSION", doc, children, NULL, NULL };
	struct report_args a = { 0 };
	struct cmd_selection sel = { 0 };
	struct table *tbs = NULL;
	struct export_options o = { 0 };
	size_t ntb = 0;
	int err = 0, rc = 1;

	if (cmd_parse(&argp, "report", argc, argv, &a))
		return 2;
	if (!a.by_process) {
		struct calltree *ct = cmd_select_calltree("report", a.session, &a.sel, CALLTREE_FLAT, &sel);

		if (!ct)
			return 1;
		if (!(tbs = calloc(1, sizeof(*tbs)))) {
			calltree__free(ct);
			err = -ENOMEM;
			goto cleanup;
		}
		tbs[ntb++].ct = ct;
	} else {
		/* one walk per process, over that process alone */
		if (cmd_select("report", a.session, &a.sel, false, NULL, &sel))
			return 1;
		if (!(tbs = calloc(sel.n, sizeof(*tbs)))) {
			err = -ENOMEM;
			goto cleanup;
		}
		o.thread_id = sel.thread_id;
		o.from_ns = sel.from_ns;
		o.to_ns = sel.to_ns;
		for (size_t i = 0; i < sel.n && !err; i++) {
			struct calltree *ct = calltree__new(CALLTREE_FLAT);

			tbs[ntb].process = sel.s[i];
			if (!(tbs[ntb++].ct = ct))
				err = -ENOMEM;
			else
				err = calltree__run(ct, &sel.s[i], 1, &o);
		}
		if (err) {
			fprintf(stderr, "atftrace report: %s: %s\n", a.session, atf_strerror(err));
			goto cleanup;
		}
		a.first_process = sel.s[0];
	}
	for (size_t i = 0; i < ntb && !err; i++)
		err = table_fill(&a, &tbs[i]);
	if (err) {
		fprintf(stderr, "atftrace report: %s\n", strerror(-err));
		goto cleanup;
	}
	if (a.json)
		err = print_json(&a, tbs, ntb);
	for (size_t i = 0; i < ntb && !a.json; i++)
		(a.csv ? print_csv : print_text)(&a, &tbs[i]);
	rc = err || fflush(stdout) ? 1 : 0;
cleanup:
	for (size_t i = 0; tbs && i < ntb; i++) {
		free(tbs[i].rows);
		calltree__free((struct calltree *)tbs[i].ct);
	}
	free(tbs);
	cmd_selection_free(&sel);
	return rc;
}
