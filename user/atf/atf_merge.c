// SPDX-License-Identifier: MIT
/*
 * k-way merge of a session's per-thread index files by (timestamp, thread order, seq).
 * A binary min-heap holds one cursor per thread, so memory is O(threads) and each event costs
 * O(log threads). Per-thread files are already in time order (verify checks it), which is what
 * makes a heap merge correct - the same assumption the reference readers make.
 */
#include <errno.h>
#include <stdlib.h>
#include "atf.h"

/* Release consumed pages every 2 MiB of events: memory stays flat however long the session. */
#define MERGE_RELEASE_EVENTS (65536u)

struct merge_cursor {
	uint32_t thread;            /* index into session->threads */
	uint64_t seq;               /* next event to hand out */
	uint64_t end;               /* one past the last event of the thread */
	uint64_t released;          /* events before this were released from the resident set */
	struct atf_index_event ev;  /* decoded event at seq */
};

struct atf_merge {
	const struct atf_session *s;
	uint64_t to_ns;
	struct merge_cursor *heap;
	size_t n;
};

static bool cursor_less(const struct merge_cursor *a, const struct merge_cursor *b)
{
	if (a->ev.timestamp_ns != b->ev.timestamp_ns)
		return a->ev.timestamp_ns < b->ev.timestamp_ns;
	if (a->thread != b->thread)
		return a->thread < b->thread;
	return a->seq < b->seq;
}

static void sift_down(struct atf_merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		struct merge_cursor tmp;

		if (l < m->n && cursor_less(&m->heap[l], &m->heap[min]))
			min = l;
		if (r < m->n && cursor_less(&m->heap[r], &m->heap[min]))
			min = r;
		if (min == i)
			return;
		tmp = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = tmp;
		i = min;
	}
}

/* Load the event at the cursor's seq; false when the thread is exhausted or past to_ns. */
static bool cursor_load(const struct atf_merge *m, struct merge_cursor *c)
{
	if (c->seq >= c->end)
		return false;
	atf_index_get(&m->s->threads[c->thread].index, c->seq, &c->ev);
	return c->ev.timestamp_ns <= m->to_ns;
}

int atf_merge__new(struct atf_merge **out, const struct atf_session *s, uint64_t from_ns,
		   uint64_t to_ns, int64_t thread_id)
{
	struct atf_merge *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->s = s;
	m->to_ns = to_ns;
	m->heap = calloc(s->nthreads ?: 1, sizeof(*m->heap));
	if (!m->heap) {
		free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_thread *t = &s->threads[i];
		struct merge_cursor *c = &m->heap[m->n];

		if (thread_id >= 0 && t->id != (uint64_t)thread_id)
			continue;
		c->thread = (uint32_t)i;
		c->seq = from_ns ? atf_index_lower_bound(&t->index, from_ns) : 0;
		c->released = c->seq;
		c->end = t->index.count;
		if (cursor_load(m, c))
			m->n++;
	}
	for (size_t i = m->n / 2; i-- > 0;)
		sift_down(m, i);
	*out = m;
	return 0;
}

int atf_merge__next(struct atf_merge *m, struct atf_merge_event *out)
{
	struct merge_cursor *top;

	if (!m->n)
		return 0;
	top = &m->heap[0];
	out->thread = top->thread;
	out->seq = top->seq;
	out->ev = top->ev;
	top->seq++;
	if (top->seq - top->released >= MERGE_RELEASE_EVENTS) {
		atf_index_release(&m->s->threads[top->thread].index, top->released, top->seq);
		top->released = top->seq;
	}
	if (!cursor_load(m, top))
		m->heap[0] = m->heap[--m->n];
	sift_down(m, 0);
	return 1;
}

void atf_merge__free(struct atf_merge *m)
{
	if (!m)
		return;
	free(m->heap);
	free(m);
}
