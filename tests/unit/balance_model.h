/* SPDX-License-Identifier: MIT */
/*
 * Test model of the balanced stream export_sessions() delivers, written apart from
 * formats/export.c so the exporter tests check it rather than repeat it. From the recorded
 * events inside the range (merged order), a return or exception is kept only when the call it
 * ends was kept (same thread, same depth, on top of that thread's open calls); every call
 * still open at the end is closed by a made-up RETURN at its thread's close time, innermost
 * first, placed after every recorded event at or before that time (ties: lower thread first).
 */
#ifndef BALANCE_MODEL_H
#define BALANCE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "atf.h"

struct bal_in {
	uint32_t thread;            /* dense index, < nthreads */
	uint64_t ts;
	uint32_t kind, depth;
};

struct bal_out {
	long src;                   /* index into the input, or -1 for a made-up close */
	long call;                  /* made-up close: the input index of the call it ends */
	uint32_t thread;
	uint64_t ts;
};

/*
 * bal_model - the balanced stream for @in[@n] (threads < @nthreads); @close_ns[t] is when
 * thread t's calls still open at the end are closed. @out needs room for 2 * @n entries.
 * Returns the number of entries written.
 */
static inline size_t bal_model(const struct bal_in *in, size_t n, uint32_t nthreads, const uint64_t *close_ns,
			       struct bal_out *out)
{
	long *stack = malloc((n + 1) * nthreads * sizeof(*stack));
	size_t *depth = calloc(nthreads + 1, sizeof(*depth)), nout = 0, nsynth = 0;
	struct bal_out *synth = malloc((n + 1) * sizeof(*synth));

	if (!stack || !depth || !synth)
		abort();
	for (size_t i = 0; i < n; i++) {
		uint32_t t = in[i].thread;
		long *st = stack + (size_t)t * (n + 1);

		if (in[i].kind == ATF_KIND_CALL) {
			st[depth[t]++] = (long)i;
		} else {
			if (!depth[t] || in[st[depth[t] - 1]].depth != in[i].depth)
				continue;       /* its call is not in the range */
			depth[t]--;
		}
		out[nout++] = (struct bal_out){ .src = (long)i, .call = -1, .thread = t, .ts = in[i].ts };
	}
	/* made-up closes, by close time, then thread, innermost first */
	for (;;) {
		uint32_t best = UINT32_MAX;

		for (uint32_t t = 0; t < nthreads; t++)
			if (depth[t] && (best == UINT32_MAX || close_ns[t] < close_ns[best]))
				best = t;
		if (best == UINT32_MAX)
			break;
		while (depth[best]) {
			long c = stack[(size_t)best * (n + 1) + --depth[best]];

			synth[nsynth++] = (struct bal_out){ .src = -1, .call = c, .thread = best, .ts = close_ns[best] };
		}
	}
	/* merge: a made-up close goes before the first recorded event later than it */
	{
		struct bal_out *all = malloc((nout + nsynth + 1) * sizeof(*all));
		size_t a = 0, b = 0, k = 0;

		if (!all)
			abort();
		while (a < nout || b < nsynth)
			all[k++] = b < nsynth && (a == nout || synth[b].ts < out[a].ts) ? synth[b++] : out[a++];
		for (size_t i = 0; i < k; i++)
			out[i] = all[i];
		nout = k;
		free(all);
	}
	free(stack);
	free(depth);
	free(synth);
	return nout;
}

/**
 * bal_close_times - when each thread of @s closes its calls still open at the end of a range
 * ending at @to_ns: at @to_ns when the thread has events after it, else at the thread's last
 * event in the range (from @in[@n], the events in the range).
 */
static inline void bal_close_times(const struct atf_session *s, const struct bal_in *in, size_t n,
				   uint64_t to_ns, uint64_t *close_ns)
{
	for (size_t t = 0; t < s->nthreads; t++) {
		const struct atf_index_file *f = &s->threads[t].index;
		struct atf_index_event last;

		close_ns[t] = 0;
		if (f->count) {
			atf_index_get(f, f->count - 1, &last);
			if (last.timestamp_ns > to_ns)
				close_ns[t] = to_ns;
		}
	}
	for (size_t i = n; i-- > 0;)
		if (!close_ns[in[i].thread])
			close_ns[in[i].thread] = in[i].ts;
}

#endif
