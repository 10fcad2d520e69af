// SPDX-License-Identifier: MIT
/*
 * The registration guard, the recorder's half (the BPF half, and why, in bpf/reg_guard.bpf.h).
 *
 * A REC_REG_GUARD record says another process entered a syscall that may register a uprobe,
 * and that BPF sent SIGSTOP to the process it names, one of those with entry trampolines. It is
 * held like the C++ unwind stops (rec_hold: one SIGCONT after the drain); waiting for it to be
 * quiet inside the drain means that whatever another hold of it put in the ring meanwhile (a
 * C++ raise just before the stop) is read in this drain too. At the end of the drain,
 * tramp_process__check() waits until the registering syscalls are done and gives each patched
 * function that the other tool's breakpoint now sits on back to its own bytes, with a plain
 * probe; then the processes run again.
 * The records of one burst of registrations (bpftrace opens one perf event per probe) are
 * checked once, at the end of the drain that read them.
 *
 * A child forked by a guarded process is guarded too (user/record/record_forks.c).
 *
 * A stop the ring had no room to announce is counted in lost_records and in the guard's own
 * guard_unannounced; whenever that grew, every guarded process is held and checked: none is
 * left stopped. (Other lost records are no reason to stop anything.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "atftrace.h"
#include "recorder_int.h"
#include "trampoline.h"

void recorder__set_trampolines(struct recorder *r, struct tramp_process *tp)
{
	if (r)
		r->tramps = tp;
}

/*
 * hold_guarded - a guard record may have been lost (the ring was full): hold every process the
 * guard may have stopped, so that none is left stopped, and check them all.
 */
static void hold_guarded(struct recorder *r)
{
	size_t cap = tramp_process__pids(r->tramps, NULL, 0);
	pid_t *pids = calloc(cap ? cap : 1, sizeof(*pids));
	size_t n = pids ? tramp_process__pids(r->tramps, pids, cap) : 0;

	for (size_t i = 0; i < n; i++) {
		if (!rec_holds_ours(r, pids[i]))
			continue;       /* not stopped by us: nothing to wait for, nothing to resume */
		rec_holds_seen_all(r, pids[i]);      /* its record may be the lost one */
		rec_hold(r, pids[i]);
		rec_hold_wait(pids[i], pids[i]);
	}
	free(pids);
}

void rec_tramp_guard_on_record(struct recorder *r, const void *data, size_t size)
{
	struct rec_task rec;

	if (size < sizeof(rec)) {
		r->st.bad_records++;
		return;
	}
	memcpy(&rec, data, sizeof(rec));
	r->guard_events++;
	if (rec.pid == 0) {
		r->st.bad_records++;
		return;
	}
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: thread %u (%.16s) may be registering a uprobe "
			"(syscall %u): process %u stopped to check its trampolines\n", rec.tid,
			rec.comm, rec.child_pid, rec.pid);
	/* BPF stopped it: it runs again after this drain, whatever happens here */
	rec_holds_seen(r, (pid_t)rec.pid, rec.hold_seq);
	rec_hold(r, (pid_t)rec.pid);
	if (rec_hold_wait((pid_t)rec.pid, (pid_t)rec.pid) == -ETIMEDOUT)
		fprintf(stderr, "atftrace record: process %u did not stop for the registration guard "
			"within %llu s\n", rec.pid, REC_STOP_WAIT_NS / 1000000000ull);
	r->guard_pending = true;
}

void rec_tramp_guard_after_drain(struct recorder *r)
{
	uint64_t unannounced;
	int n;

	if (!r->tramps)
		return;
	/* stops the ring had no room to announce: which processes is not known, so all of them */
	unannounced = probes__guard_unannounced(r->opts.probes);
	if (unannounced != r->guard_unannounced) {
		r->guard_unannounced = unannounced;
		hold_guarded(r);
		r->guard_pending = true;
	}
	if (!r->guard_pending)
		return;
	r->guard_pending = false;
	n = tramp_process__check(r->tramps);
	if (n < 0)
		fprintf(stderr, "atftrace record: cannot check the target's trampolines after another "
			"tool's uprobe registration (%s)\n", strerror(-n));
}

void rec_tramp_guard_after_resume(struct recorder *r)
{
	static struct timespec last;
	struct timespec now;

	if (!r->tramps)
		return;
	/* a tracepoint event opened by an id the guard did not know: tracefs has new events
	 * (read once the processes it stopped for that run again: it takes tens of ms) */
	probes__guard_tp_ids_stale(r->opts.probes);
	/* and, once a second, the CLONE_VM processes that exited leave the guard */
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec != last.tv_sec) {
		last = now;
		probes__guard_prune(r->opts.probes);
	}
}
