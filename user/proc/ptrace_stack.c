// SPDX-License-Identifier: MIT
/*
 * The stacks of a process held still with ptrace (include/ptrace_target.h): which ranges a
 * stack word points into (pt_stack_holds: is a thread's return address in code we are about to
 * change?), and rewriting the words that hold given values (pt_stack_replace: return addresses
 * moved out of call-site stubs). Both walk every stopped thread's stack from its sp to the end
 * of its mapping, at most STACK_SCAN_MAX bytes, through pt_stack_walk().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptrace_target.h"

#define STACK_SCAN_MAX (8u << 20)

/* The end of the mapping that holds @addr, from /proc/PID/maps; 0 if none. */
static uint64_t mapping_end(pid_t pid, uint64_t addr)
{
	char path[64], line[512];
	uint64_t end = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!end && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			end = hi;
	}
	fclose(f);
	return end;
}

/* One range of pt_stack_holds(), sorted by start. */
struct hold_range {
	uint64_t lo, hi;
	size_t idx;
};

static int cmp_range(const void *a, const void *b)
{
	const struct hold_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Mark every range that holds @v (ranges do not overlap: functions do not). */
static void mark_holder(const struct hold_range *r, size_t n, uint64_t v, bool *hit)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {                       /* the last range starting at or below v */
		size_t mid = (lo + hi) / 2;

		if (r[mid].lo <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && v < r[lo - 1].hi)
		hit[r[lo - 1].idx] = true;
}

/*
 * Each stack word of every stopped thread, from its sp up to the end of its stack's mapping (at
 * most STACK_SCAN_MAX bytes): @visit(@ctx, its address, its value); a negative return stops the
 * walk and is returned. 0 when every word was seen (or a read failed: that thread's rest is
 * left).
 */
static int pt_stack_walk(struct pt_target *t, int (*visit)(void *ctx, uint64_t addr, uint64_t v),
			 void *ctx)
{
	uint64_t buf[4096];

	for (size_t k = 0; k < t->nthreads; k++) {
		uint64_t sp = t->threads[k].regs.rsp & ~7ull, end = mapping_end(t->pid, sp);

		if (end > sp + STACK_SCAN_MAX)
			end = sp + STACK_SCAN_MAX;
		for (uint64_t a = sp; a < end; a += sizeof(buf)) {
			size_t len = end - a < sizeof(buf) ? end - a : sizeof(buf);

			if (pt_read(t, a, buf, len))
				break;
			for (size_t w = 0; w < len / 8; w++) {
				int err = visit(ctx, a + w * 8, buf[w]);

				if (err < 0)
					return err;
			}
		}
	}
	return 0;
}

/* What pt_stack_holds() hands to the walk. */
struct holds_ctx {
	const struct hold_range *r;
	size_t nr;
	bool *hit;
};

static int visit_holds(void *ctx, uint64_t addr, uint64_t v)
{
	struct holds_ctx *h = ctx;

	(void)addr;
	mark_holder(h->r, h->nr, v, h->hit);
	return 0;
}

int pt_stack_holds(struct pt_target *t, const uint64_t (*ranges)[2], size_t n, bool *hit)
{
	struct hold_range *r;
	size_t nr = 0;

	memset(hit, 0, n * sizeof(*hit));
	r = malloc((n ? n : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (ranges[i][1] > ranges[i][0])
			r[nr++] = (struct hold_range){ ranges[i][0], ranges[i][1], i };
	qsort(r, nr, sizeof(*r), cmp_range);
	if (nr)
		pt_stack_walk(t, visit_holds, &(struct holds_ctx){ r, nr, hit });
	free(r);
	return 0;
}

/* The index of @v in @pairs (sorted by [0]), or -1. */
static long pair_of(const uint64_t (*pairs)[2], size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (pairs[mid][0] == v)
			return (long)mid;
		if (pairs[mid][0] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* What pt_stack_replace() hands to the walk. */
struct replace_ctx {
	struct pt_target *t;
	const uint64_t (*pairs)[2];
	size_t n;
	int written;
};

static int visit_replace(void *ctx, uint64_t addr, uint64_t v)
{
	struct replace_ctx *c = ctx;
	long i = pair_of(c->pairs, c->n, v);

	if (i < 0)
		return 0;
	if (pt_write(c->t, addr, &c->pairs[i][1], sizeof(c->pairs[i][1])))
		return -EIO;
	c->written++;
	return 0;
}

int pt_stack_replace(struct pt_target *t, const uint64_t (*pairs)[2], size_t n)
{
	struct replace_ctx c = { t, pairs, n, 0 };
	int err = n ? pt_stack_walk(t, visit_replace, &c) : 0;

	return err < 0 ? err : c.written;
}
