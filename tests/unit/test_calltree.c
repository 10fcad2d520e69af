// SPDX-License-Identifier: MIT
/*
 * The call tree walker (calltree.h) on hand-made balanced streams: per-path calls, total, self,
 * min and max; flat trees with a recursive function's time counted once; unwound and unfinished
 * calls counted; process nodes; views built with calltree__child/calltree__add.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "calltree.h"

struct fake {
	struct atf_manifest m;
	struct atf_thread threads[2];
	struct atf_session s;
	struct export_options o;
	struct export_ctx ctx;
};

static void fake_init(struct fake *f, uint32_t pid, const char *comm)
{
	memset(f, 0, sizeof(*f));
	f->m.pid = pid;
	f->m.process_name = (char *)comm;
	f->s.manifest = &f->m;
	f->s.threads = f->threads;
	f->s.nthreads = 2;
	f->ctx.session = &f->s;
	f->ctx.opts = &f->o;
}

/* One event: kind C(all), R(eturn), X (exception), U (made-up close) of @name at @ts on @thread. */
static void ev(struct calltree *ct, uint32_t thread, char kind, const char *name, uint64_t ts, uint32_t depth)
{
	struct export_event e = { .thread = thread, .name = name };

	e.ev.timestamp_ns = ts;
	e.ev.function_id = (uint64_t)(unsigned char)name[0] << 8 | (unsigned char)name[1];
	e.ev.call_depth = depth;
	e.ev.event_kind = kind == 'C' ? ATF_KIND_CALL : kind == 'X' ? ATF_KIND_EXCEPTION : ATF_KIND_RETURN;
	e.unfinished = kind == 'U';
	assert_int_equal(calltree__event(ct, &e), 0);
}

/* The node reached from the root by the names in @path ("main;a;b"), or 0. */
static uint32_t find(const struct calltree *ct, const char *path)
{
	char buf[128], *save, *tok;
	uint32_t node = CALLTREE_ROOT;

	strcpy(buf, path);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		uint32_t c = calltree__node(ct, node)->first_child;

		while (c && strcmp(calltree__name(ct, calltree__node(ct, c)->name), tok))
			c = calltree__node(ct, c)->next_sibling;
		if (!c)
			return 0;
		node = c;
	}
	return node;
}

static void check(const struct calltree *ct, const char *path, uint64_t calls, uint64_t total, uint64_t self,
		  uint64_t min, uint64_t max)
{
	uint32_t n = find(ct, path);
	const struct calltree_node *nd;

	if (!n)
		fail_msg("no node %s", path);
	nd = calltree__node(ct, n);
	if (nd->calls != calls || nd->total_ns != total || nd->self_ns != self || nd->min_ns != min || nd->max_ns != max)
		fail_msg("%s: calls %llu total %llu self %llu min %llu max %llu", path, (unsigned long long)nd->calls,
			 (unsigned long long)nd->total_ns, (unsigned long long)nd->self_ns,
			 (unsigned long long)nd->min_ns, (unsigned long long)nd->max_ns);
}

static void test_paths(void **state)
{
	struct calltree *ct = calltree__new(0);
	struct fake f;

	fake_init(&f, 7, "demo");
	assert_int_equal(calltree__process_begin(ct, &f.ctx), 0);
	ev(ct, 0, 'C', "main", 0, 0);
	ev(ct, 0, 'C', "a", 10, 1);
	ev(ct, 0, 'C', "b", 20, 2);
	ev(ct, 1, 'C', "w", 25, 0);         /* another thread, interleaved */
	ev(ct, 0, 'R', "b", 50, 2);
	ev(ct, 0, 'R', "a", 60, 1);
	ev(ct, 0, 'C', "a", 70, 1);
	ev(ct, 1, 'C', "a", 75, 1);
	ev(ct, 0, 'R', "a", 80, 1);
	ev(ct, 1, 'X', "a", 90, 1);         /* left by unwinding: counts up to the exception */
	ev(ct, 1, 'U', "w", 95, 0);         /* still open at the end */
	ev(ct, 0, 'R', "main", 100, 0);
	check(ct, "main", 1, 100, 40, 100, 100);
	check(ct, "main;a", 2, 60, 30, 10, 50);
	check(ct, "main;a;b", 1, 30, 30, 30, 30);
	check(ct, "w", 1, 70, 55, 70, 70);
	check(ct, "w;a", 1, 15, 15, 15, 15);
	assert_int_equal(calltree__node(ct, find(ct, "w;a"))->unwound, 1);
	assert_int_equal(calltree__node(ct, find(ct, "w"))->unfinished, 1);
	assert_int_equal(calltree__traced_ns(ct), 170);
	assert_int_equal(calltree__nnodes(ct), 6);      /* root + 5 paths */
	calltree__free(ct);
}

static void test_flat_recursion(void **state)
{
	struct calltree *ct = calltree__new(CALLTREE_FLAT);
	const struct calltree_node *r;
	struct fake f;

	fake_init(&f, 7, "demo");
	assert_int_equal(calltree__process_begin(ct, &f.ctx), 0);
	ev(ct, 0, 'C', "main", 0, 0);
	ev(ct, 0, 'C', "r", 10, 1);
	ev(ct, 0, 'C', "r", 20, 2);
	ev(ct, 0, 'C', "r", 30, 3);
	ev(ct, 0, 'R', "r", 40, 3);
	ev(ct, 0, 'R', "r", 60, 2);
	ev(ct, 0, 'R', "r", 90, 1);
	ev(ct, 0, 'C', "r", 95, 1);
	ev(ct, 0, 'R', "r", 99, 1);
	ev(ct, 0, 'R', "main", 100, 0);
	assert_int_equal(calltree__nnodes(ct), 3);      /* flat: root, main, r */
	r = calltree__node(ct, find(ct, "r"));
	assert_int_equal(r->calls, 4);
	assert_int_equal(r->total_ns, 80 + 40 + 10 + 4);        /* every call's duration */
	assert_int_equal(r->outer_ns, 80 + 4);                  /* the outermost frames' only */
	assert_int_equal(r->self_ns, 40 + 30 + 10 + 4);
	assert_int_equal(r->min_ns, 4);
	assert_int_equal(r->max_ns, 80);
	check(ct, "main", 1, 100, 16, 100, 100);
	calltree__free(ct);
}

static void test_process_nodes_and_views(void **state)
{
	struct calltree *ct = calltree__new(CALLTREE_PROCESS_NODES), *view = calltree__new(0);
	struct fake f;
	int64_t top;

	fake_init(&f, 7, "demo");
	assert_int_equal(calltree__process_begin(ct, &f.ctx), 0);
	ev(ct, 0, 'C', "f", 0, 0);
	ev(ct, 0, 'R', "f", 5, 0);
	fake_init(&f, 8, NULL);             /* no comm: named by its first thread, else "?" */
	f.threads[0].name = "t0";
	assert_int_equal(calltree__process_begin(ct, &f.ctx), 0);
	ev(ct, 1, 'C', "f", 0, 0);
	ev(ct, 1, 'R', "f", 7, 0);
	check(ct, "demo [7];f", 1, 5, 5, 5, 5);
	check(ct, "t0 [8];f", 1, 7, 7, 7, 7);
	assert_true(calltree__node(ct, find(ct, "demo [7]"))->process);
	/* a view: both f nodes added below one */
	top = calltree__child(view, CALLTREE_ROOT, "f");
	assert_true(top > 0);
	calltree__add(view, (uint32_t)top, calltree__node(ct, find(ct, "demo [7];f")));
	calltree__add(view, (uint32_t)top, calltree__node(ct, find(ct, "t0 [8];f")));
	check(view, "f", 2, 12, 12, 5, 7);
	assert_int_equal(calltree__child(view, CALLTREE_ROOT, "f"), top);       /* found, not added */
	calltree__free(view);
	calltree__free(ct);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_flat_recursion),
		cmocka_unit_test(test_process_nodes_and_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
