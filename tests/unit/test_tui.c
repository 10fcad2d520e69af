// SPDX-License-Identifier: MIT
/*
 * The tui's model (user/cmd/tui.h) without a terminal: names escaped for the screen, the
 * report's rows and sorting, the graph's lines expanded and collapsed, search opening collapsed
 * nodes, and 'g' (a function's graph), on hand-made call trees.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "calltree.h"
#include "tui.h"

static void escaped(const char *in, bool utf8, size_t len, const char *want)
{
	char out[256];

	tui_escape(out, len, in, utf8);
	assert_string_equal(out, want);
}

static void test_escape(void **state)
{
	escaped("main", true, 256, "main");
	escaped("a\033[2Jb", true, 256, "a\\x1b[2Jb");                /* ESC: never raw */
	escaped("a\nb\tc\177", true, 256, "a\\x0ab\\x09c\\x7f");
	escaped("csi\302\233x", true, 256, "csi\\u009bx");            /* C1 CSI as UTF-8 */
	escaped("caf\303\251", true, 256, "caf\303\251");             /* é kept in UTF-8 */
	escaped("caf\303\251", false, 256, "caf\\xc3\\xa9");          /* not without it */
	escaped("bad\377\300x", true, 256, "bad\\xff\\xc0x");          /* not UTF-8: each byte */
	escaped("\342\224", true, 256, "\\xe2\\x94");                 /* a cut sequence */
	escaped("abc\033", true, 6, "abc");                           /* cut at a whole escape */
	escaped("ab\303\251", true, 4, "ab");                         /* and a whole character */
	escaped("x", true, 1, "");
}

/* A flat tree (report's) of @n functions with their calls and total times. */
static struct calltree *flat_tree(const char *const *names, const uint64_t *calls, const uint64_t *total, size_t n)
{
	struct calltree *ct = calltree__new(CALLTREE_FLAT);

	assert_non_null(ct);
	for (size_t i = 0; i < n; i++) {
		int64_t node = calltree__child(ct, CALLTREE_ROOT, names[i]);

		assert_true(node > 0);
		calltree__add(ct, (uint32_t)node, &(struct calltree_node){ .calls = calls[i], .total_ns = total[i],
			.self_ns = total[i] / 2, .min_ns = 1, .max_ns = total[i], .outer_ns = total[i] });
	}
	return ct;
}

static int64_t add(struct calltree *ct, uint32_t parent, const char *name, uint64_t calls, uint64_t total)
{
	int64_t node = calltree__child(ct, parent, name);

	assert_true(node > 0);
	calltree__add(ct, (uint32_t)node, &(struct calltree_node){ .calls = calls, .total_ns = total, .min_ns = 1,
		.max_ns = total });
	return node;
}

/*
 * main(1) -> b(2, 50 ns) -> c(1, 10 ns), main -> a(3, 30 ns) -> c(4, 20 ns); a below b is a
 * child with less time, so the graph is main, b, c, a, c (children by total).
 */
static struct calltree *graph_tree(void)
{
	struct calltree *ct = calltree__new(0);
	int64_t main_, a, b;

	assert_non_null(ct);
	main_ = add(ct, CALLTREE_ROOT, "main", 1, 100);
	b = add(ct, (uint32_t)main_, "b", 2, 50);
	a = add(ct, (uint32_t)main_, "a", 3, 30);
	add(ct, (uint32_t)b, "c", 1, 10);
	add(ct, (uint32_t)a, "c", 4, 20);
	return ct;
}

/* Line @i of the current view from the Calls column on (columns 25-), trailing blanks cut. */
static const char *line(struct tui *t, size_t i)
{
	static char buf[512];

	tui__line(t, i, buf, sizeof(buf));
	assert_true(strlen(buf) > 24);
	return buf + 24;
}

static struct cmd_selection no_processes;

static void model(struct tui *t)
{
	static const char *const names[] = { "main", "b", "a", "c" };
	static const uint64_t calls[] = { 1, 2, 3, 5 }, total[] = { 100, 50, 30, 30 };

	assert_int_equal(tui__init(t, "S", &no_processes, flat_tree(names, calls, total, 4), graph_tree(), false), 0);
}

static void test_report(void **state)
{
	struct tui t;
	char buf[256];

	model(&t);
	assert_int_equal(t.view, TUI_REPORT);
	assert_int_equal(tui__nlines(&t), 4);
	tui__title(&t, buf, sizeof(buf));
	assert_string_equal(buf, "Report: S: 4 functions, sorted by total");
	/* by total, ties by name: main, b, a, c */
	assert_string_equal(tui__function(&t, 0, NULL, 0), "main");
	assert_string_equal(tui__function(&t, 1, NULL, 0), "b");
	assert_string_equal(tui__function(&t, 2, NULL, 0), "a");
	assert_string_equal(tui__function(&t, 3, NULL, 0), "c");
	assert_string_equal(line(&t, 3), "        5        6 ns       30 ns  c");
	tui__sort(&t, 1);                       /* self: total / 2 here, same order */
	tui__sort(&t, 1);                       /* calls */
	assert_string_equal(tui__sort_name(t.sort), "calls");
	assert_string_equal(tui__function(&t, 0, NULL, 0), "c");
	assert_string_equal(tui__function(&t, 3, NULL, 0), "main");
	tui__sort(&t, -2);
	assert_string_equal(tui__sort_name(t.sort), "total");
	assert_int_equal(tui__search(&t, "a", 0, 1), 2);                /* from main: a */
	assert_int_equal(tui__search(&t, "a", 2, 1), 0);                /* then main, wrapping */
	assert_int_equal(tui__search(&t, "a", 0, -1), 2);
	tui__free(&t);
}

static void test_graph(void **state)
{
	struct tui t;
	char buf[256];

	model(&t);
	t.view = TUI_GRAPH;
	assert_int_equal(tui__nlines(&t), 5);
	assert_string_equal(line(&t, 0), "        1  [-] main");
	assert_string_equal(line(&t, 1), "        2  |-[-] b");
	assert_string_equal(line(&t, 2), "        1  | `-c");
	assert_string_equal(line(&t, 3), "        3  `-[-] a");
	assert_string_equal(line(&t, 4), "        4    `-c");
	/* collapse b: its c goes; collapsing c (a leaf) goes to its parent */
	assert_int_equal(tui__toggle(&t, 1, 0), 1);
	assert_int_equal(tui__nlines(&t), 4);
	assert_string_equal(line(&t, 1), "        2  |-[+] b");
	assert_string_equal(line(&t, 2), "        3  `-[-] a");
	assert_int_equal(tui__toggle(&t, 3, -1), 2);
	assert_int_equal(tui__toggle(&t, 1, 1), 1);
	assert_int_equal(tui__nlines(&t), 5);
	/* everything collapsed; a search opens the way to its match */
	tui__expand_all(&t, false);
	assert_int_equal(tui__nlines(&t), 1);
	assert_int_equal(tui__search(&t, "c", 0, 1), 2);               /* the c below b, opened */
	assert_int_equal(tui__nlines(&t), 4);              /* main, b, c, a */
	assert_int_equal(tui__search(&t, "c", 2, 1), 4);               /* the next one, below a */
	assert_int_equal(tui__search(&t, "c", 4, -1), 2);
	assert_int_equal(tui__search(&t, "zz", 0, 1), -1);
	tui__detail(&t, 4, buf, sizeof(buf));
	assert_string_equal(buf, "c (depth 2): 4 calls, total 20 ns, self 0 ns, min 1 ns, max 20 ns, 0 unwound, 0 open");
	/* g: c's graph, its calls from every path added together */
	assert_int_equal(tui__graph(&t, "c"), 0);
	tui__title(&t, buf, sizeof(buf));
	assert_string_equal(buf, "Graph: S: call graph below c");
	assert_int_equal(tui__nlines(&t), 1);
	assert_string_equal(line(&t, 0), "        5  c");
	assert_int_equal(tui__graph(&t, "nothing"), -ENOENT);
	assert_int_equal(tui__nlines(&t), 1);                            /* the view it had stays */
	assert_int_equal(tui__graph(&t, NULL), 0);
	assert_int_equal(tui__nlines(&t), 5);
	tui__free(&t);
}

static void test_utf8_lines(void **state)
{
	struct tui t;
	struct calltree *g = calltree__new(0);
	int64_t m;

	assert_non_null(g);
	m = add(g, CALLTREE_ROOT, "main", 1, 10);
	add(g, (uint32_t)m, "x\033]0;title\007", 1, 5);
	assert_int_equal(tui__init(&t, "S", &no_processes, calltree__new(CALLTREE_FLAT), g, true), 0);
	t.view = TUI_GRAPH;
	assert_string_equal(line(&t, 1), "        1  └─x\\x1b]0;title\\x07");
	t.view = TUI_REPORT;
	assert_int_equal(tui__nlines(&t), 0);
	assert_null(tui__function(&t, 0, NULL, 0));
	t.view = TUI_TIMELINE;
	assert_int_equal(tui__nlines(&t), 0);
	tui__free(&t);
}

/* A chain deeper than the columns drawn: the nearest ancestors' columns, and how many are left out. */
static void test_deep(void **state)
{
	struct tui t;
	struct calltree *g = calltree__new(0);
	int64_t node = CALLTREE_ROOT;
	char name[16], want[512];
	const char *l;

	assert_non_null(g);
	for (int i = 0; i < 70; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		node = add(g, (uint32_t)node, name, 1, 100);
	}
	add(g, 1, "side", 1, 1);                /* f0's last child: f1 has a sibling below it */
	assert_int_equal(tui__init(&t, "S", &no_processes, calltree__new(CALLTREE_FLAT), g, false), 0);
	t.view = TUI_GRAPH;
	assert_int_equal(tui__nlines(&t), 71);
	l = line(&t, 69);                       /* f69: 68 ancestor columns, 64 drawn */
	snprintf(want, sizeof(want), "        1  (+4) %*s`-f69", 128, "");
	assert_string_equal(l, want);
	l = line(&t, 2);                        /* f2: below f1, which has side below it */
	assert_string_equal(l, "        1  | `-[-] f2");
	tui__free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_graph),
		cmocka_unit_test(test_utf8_lines),
		cmocka_unit_test(test_deep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
