// SPDX-License-Identifier: MIT
/*
 * The registration guard, the recorder's half (the BPF half, and why, in bpf/reg_guard.bpf.h).
 *
 * A REC_REG_GUARD record says another process entered a syscall that may register a uprobe,
 * and that BPF sent SIGSTOP to every process with entry trampolines. After the drain that read
 * it, tramp_process__check() holds the process with ptrace, ends that group stop, waits until
 * the registering syscalls are done and gives each patched function that the other tool's
 * breakpoint now sits on back to its own bytes, with a plain probe; then the process runs.
 * The records of one burst of registrations (bpftrace opens one perf event per probe) are
 * checked once, at the end of the drain that read them.
 *
 * REC_FORK_HOLD: a process on trampolines forked a child, which BPF stopped before its first
 * instruction; its copies of the optimised probe sites call a page it does not have, so the
 * kernel's int3 goes back over them (tramp_process__fix_child) before it runs.
 *
 * A record the ring had no room for is counted in lost_records; the guard's SIGSTOP was sent
 * all the same, so whenever lost_records grew the process is checked too: it is never left
 * stopped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "atftrace.h"
#include "recorder_int.h"
#include "trampoline.h"

void recorder__set_trampolines(struct recorder *r, struct tramp_process *tp)
{
	if (r)
		r->tramps = tp;
}

void rec_tramp_guard_on_record(struct recorder *r, const void *data, size_t size)
{
	struct rec_task rec;

	if (size < sizeof(rec)) {
		r->st.bad_records++;
		return;
	}
	memcpy(&rec, data, sizeof(rec));
	r->guard_pending = true;
	r->guard_events++;
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: process %u (%.16s) may be registering a uprobe "
			"(syscall %u): checking the trampolines\n", rec.pid, rec.comm, rec.child_pid);
}

void rec_tramp_guard_on_fork(struct recorder *r, const void *data, size_t size)
{
	struct rec_task rec;
	pid_t child;
	int err;

	if (size < sizeof(rec)) {
		r->st.bad_records++;
		return;
	}
	memcpy(&rec, data, sizeof(rec));
	child = (pid_t)rec.child_pid;
	if (child <= 0) {
		r->st.bad_records++;
		return;
	}
	/* BPF stopped the child: it runs again after this drain, whatever happens here */
	rec_hold(r, child);
	err = rec_hold_wait(child, child);
	if (err == -ESRCH)
		return;
	if (err) {
		fprintf(stderr, "atftrace record: process %u's child %d did not stop in time; resuming "
			"it unchanged (it dies if it calls a traced function before it execs)\n",
			rec.pid, (int)child);
		return;
	}
	err = tramp_process__fix_child(r->tramps, child);
	if (err < 0)
		fprintf(stderr, "atftrace record: process %u's child %d: cannot fix its trampolines' "
			"probe sites (%s); it dies if it calls a traced function before it execs\n",
			rec.pid, (int)child, strerror(-err));
	else if (r->opts.verbose)
		fprintf(stderr, "atftrace record: process %u forked %d: %d probe sites given back "
			"their int3\n", rec.pid, (int)child, err);
}

void rec_tramp_guard_after_drain(struct recorder *r)
{
	struct probe_losses lost;
	int n;

	if (!r->tramps)
		return;
	rec_losses(r, &lost);
	if (lost.records != r->guard_lost_records) {
		r->guard_lost_records = lost.records;
		r->guard_pending = true;
	}
	if (!r->guard_pending)
		return;
	r->guard_pending = false;
	n = tramp_process__check(r->tramps);
	if (n < 0)
		fprintf(stderr, "atftrace record: cannot check the target's trampolines after another "
			"tool's uprobe registration (%s); it was resumed\n", strerror(-n));
}
