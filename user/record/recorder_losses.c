// SPDX-License-Identifier: MIT
/*
 * Events the probes lost (bpf/atftrace.h: struct thread_loss), for the manifests: the
 * session's totals, and each thread's counts, taken at its end. A tid reused by another process
 * is not the thread's: the map entry carries its tgid.
 */
#include "atftrace.h"
#include "recorder_int.h"

void rec_losses(const struct recorder *r, struct probe_losses *out)
{
	if (r->lost_final)
		*out = r->lost;
	else
		probes__lost(r->opts.probes, out);
}

void rec_thread_losses(struct recorder *r, struct rec_thread *t, bool take, struct rec_loss *out)
{
	struct thread_loss tl;
	int n;

	*out = t->lost;
	if (t->ended && !take)
		return;         /* already taken at its end */
	/* a tid reused by another process since is not this thread's: leave its counts alone */
	n = probes__thread_lost(r->opts.probes, t->tid, false, &tl);
	if (n > 0 && tl.pid == (uint32_t)t->proc->pid && take)
		n = probes__thread_lost(r->opts.probes, t->tid, true, &tl);
	if (n <= 0 || tl.pid != (uint32_t)t->proc->pid)
		return;
	out->calls += tl.calls;
	out->returns += tl.returns;
	if (tl.first_ts)        /* the probes' clock to the files', as for events (append_event) */
		tl.first_ts += r->boot_offset_ns;
	if (tl.last_ts)
		tl.last_ts += r->boot_offset_ns;
	if (tl.first_ts && (!out->first_ns || tl.first_ts < out->first_ns))
		out->first_ns = tl.first_ts;
	if (tl.last_ts > out->last_ns)
		out->last_ns = tl.last_ts;
}
