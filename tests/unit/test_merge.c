// SPDX-License-Identifier: MIT
/*
 * k-way merge (user/atf/atf_merge.c): order across threads by (timestamp, thread order, seq),
 * from/to ranges, thread selection, single and empty threads. Sessions are built in memory:
 * each thread's index is a buffer of encoded events, as a mapped file would be.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "atf.h"

#define MAX_THREADS 4
#define MAX_EVENTS 16

struct fake {
	struct atf_session s;
	struct atf_thread threads[MAX_THREADS];
	uint8_t bufs[MAX_THREADS][MAX_EVENTS * ATF_INDEX_EVENT_SIZE];
};

/* Thread @i (directory id @id) with @n events at @ts[]; function_id encodes (thread, seq). */
static void fake_thread(struct fake *f, size_t i, uint32_t id, const uint64_t *ts, size_t n)
{
	struct atf_thread *t = &f->threads[i];

	assert_true(i < MAX_THREADS && n <= MAX_EVENTS);
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->tid = 100 + id;
	for (size_t k = 0; k < n; k++) {
		struct atf_index_event ev = { .timestamp_ns = ts[k], .function_id = (uint64_t)id << 32 | k,
					      .thread_id = t->tid, .event_kind = ATF_KIND_CALL,
					      .detail_seq = ATF_NO_DETAIL };

		atf_index_event_encode(f->bufs[i] + k * ATF_INDEX_EVENT_SIZE, &ev);
	}
	t->index.fd = -1;
	t->index.map = f->bufs[i];
	t->index.map_len = n * ATF_INDEX_EVENT_SIZE;
	t->index.events_offset = 0;
	t->index.count = n;
	f->s.threads = f->threads;
	if (f->s.nthreads < i + 1)
		f->s.nthreads = i + 1;
}

/* Run a merge and compare the (thread index, seq) pairs it yields with @want (pairs, -1 ends). */
static void expect_merge(const struct fake *f, uint64_t from, uint64_t to, int64_t thread, const int *want)
{
	struct atf_merge *m = NULL;
	struct atf_merge_event me;
	size_t k = 0;

	assert_int_equal(atf_merge__new(&m, &f->s, from, to, thread), 0);
	while (atf_merge__next(m, &me) == 1) {
		struct atf_index_event ev;

		assert_true(want[2 * k] >= 0);   /* more events than expected */
		assert_int_equal(me.thread, want[2 * k]);
		assert_int_equal(me.seq, want[2 * k + 1]);
		atf_index_get(&f->threads[me.thread].index, me.seq, &ev);
		assert_memory_equal(&ev, &me.ev, sizeof(ev));
		k++;
	}
	assert_int_equal(want[2 * k], -1);   /* fewer events than expected */
	assert_int_equal(atf_merge__next(m, &me), 0);   /* stays at the end */
	atf_merge__free(m);
}

static void test_order_with_ties(void **state)
{
	static const uint64_t t0[] = { 10, 20, 20, 40 }, t1[] = { 5, 20, 30 }, t2[] = { 20, 50 };
	/* ties at 20: thread order first (0 before 1 before 2), then seq within a thread */
	static const int want[] = { 1, 0, 0, 0, 0, 1, 0, 2, 1, 1, 2, 0, 1, 2, 0, 3, 2, 1, -1 };
	struct fake *f = calloc(1, sizeof(*f));

	(void)state;
	fake_thread(f, 0, 0, t0, 4);
	fake_thread(f, 1, 1, t1, 3);
	fake_thread(f, 2, 2, t2, 2);
	expect_merge(f, 0, UINT64_MAX, -1, want);
	free(f);
}

static void test_from_to_ranges(void **state)
{
	static const uint64_t t0[] = { 10, 20, 30, 40 }, t1[] = { 15, 25, 35 };
	static const int inner[] = { 0, 1, 1, 1, 0, 2, -1 };          /* 20..30 inclusive */
	static const int from_only[] = { 1, 2, 0, 3, -1 };            /* >= 31 */
	static const int to_only[] = { 0, 0, -1 };                    /* <= 14 */
	static const int exact[] = { 1, 1, -1 };                      /* 25..25 */
	static const int none[] = { -1 };
	struct fake *f = calloc(1, sizeof(*f));

	(void)state;
	fake_thread(f, 0, 0, t0, 4);
	fake_thread(f, 1, 1, t1, 3);
	expect_merge(f, 20, 30, -1, inner);
	expect_merge(f, 31, UINT64_MAX, -1, from_only);
	expect_merge(f, 0, 14, -1, to_only);
	expect_merge(f, 25, 25, -1, exact);
	expect_merge(f, 41, UINT64_MAX, -1, none);
	expect_merge(f, 0, 4, -1, none);
	expect_merge(f, 21, 24, -1, none);
	free(f);
}

static void test_thread_selection(void **state)
{
	static const uint64_t t0[] = { 1, 3 }, t1[] = { 2, 4 }, t2[] = { 0 };
	static const int only7[] = { 1, 0, 1, 1, -1 };
	static const int only7_ranged[] = { 1, 1, -1 };
	static const int none[] = { -1 };
	struct fake *f = calloc(1, sizeof(*f));

	(void)state;
	fake_thread(f, 0, 3, t0, 2);   /* directory ids need not equal positions */
	fake_thread(f, 1, 7, t1, 2);
	fake_thread(f, 2, 9, t2, 1);
	expect_merge(f, 0, UINT64_MAX, 7, only7);
	expect_merge(f, 3, UINT64_MAX, 7, only7_ranged);
	expect_merge(f, 0, UINT64_MAX, 1, none);   /* position 1 is not id 1 */
	free(f);
}

static void test_single_thread(void **state)
{
	static const uint64_t t0[] = { 7, 7, 8, 100 };
	static const int all[] = { 0, 0, 0, 1, 0, 2, 0, 3, -1 };
	static const int from8[] = { 0, 2, 0, 3, -1 };
	struct fake *f = calloc(1, sizeof(*f));

	(void)state;
	fake_thread(f, 0, 0, t0, 4);
	expect_merge(f, 0, UINT64_MAX, -1, all);
	expect_merge(f, 8, UINT64_MAX, -1, from8);
	free(f);
}

static void test_empty_threads(void **state)
{
	static const uint64_t t1[] = { 5, 6 };
	static const int want[] = { 1, 0, 1, 1, -1 };
	static const int none[] = { -1 };
	struct fake *f = calloc(1, sizeof(*f));

	(void)state;
	expect_merge(f, 0, UINT64_MAX, -1, none);   /* no threads at all */
	fake_thread(f, 0, 0, NULL, 0);
	fake_thread(f, 1, 1, t1, 2);
	fake_thread(f, 2, 2, NULL, 0);
	expect_merge(f, 0, UINT64_MAX, -1, want);
	expect_merge(f, 0, UINT64_MAX, 0, none);   /* the selected thread is empty */
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_with_ties),
		cmocka_unit_test(test_from_to_ranges),
		cmocka_unit_test(test_thread_selection),
		cmocka_unit_test(test_single_thread),
		cmocka_unit_test(test_empty_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
