// SPDX-License-Identifier: MIT
/*
 * Calls the record-time filters left out (bpf/callfilter.bpf.h), counted per thread and reason
 * in the probes' thread_filtered map, into the manifests: each thread's counts are taken at its
 * end (like its losses), and the counts of threads that recorded nothing (so have no files) go
 * to their process's totals. A tid reused by another process is not the thread's: the map entry
 * carries its tgid.
 */
#include <string.h>
#include "atftrace.h"
#include "recorder_int.h"

_Static_assert(FILTERED_REASONS == ATF_FILTERED_REASONS, "filter reasons: BPF and manifest differ");

void rec_thread_filtered(struct recorder *r, struct rec_thread *t, bool take, uint64_t *out)
{
	struct thread_filtered tf;
	int n;

	if (out != t->filtered)
		memcpy(out, t->filtered, sizeof(t->filtered));
	if (t->ended && !take)
		return;
	n = probes__thread_filtered(r->opts.probes, t->tid, false, &tf);
	if (n <= 0 || tf.pid != (uint32_t)t->proc->pid)
		return;
	if (take && probes__thread_filtered(r->opts.probes, t->tid, true, &tf) <= 0)
		return;
	for (unsigned i = 0; i < ATF_FILTERED_REASONS; i++)
		out[i] += tf.calls[i];
}

void rec_filtered_manifest(struct recorder *r, struct rec_process *p)
{
	struct atf_manifest *man = p->man;

	if (!r->opts.record_filter)
		return;
	memcpy(man->filtered, p->filtered_other, sizeof(man->filtered));
	for (size_t i = 0; i < p->nthreads && i < man->nthreads; i++) {
		struct atf_thread_info *ti = &man->threads[i];

		rec_thread_filtered(r, p->threads[i], false, ti->filtered);
		for (unsigned k = 0; k < ATF_FILTERED_REASONS; k++)
			man->filtered[k] += ti->filtered[k];
	}
}
