// SPDX-License-Identifier: MIT
/*
 * Forked children that BPF noted in fork_notes (the why is in bpf/fork_hold.bpf.h):
 *
 *  - FORK_NOTE_HELD: the child of a process in which the kernel optimised a probe site of ours
 *    (a function that starts with a 5-byte nop) was stopped before its first instruction. Its
 *    copies of those sites call a [uprobes-trampoline] page it does not have: the kernel's
 *    int3 goes back over them (nop5_sites_fix), and it runs again after this drain,
 *    like every hold (rec_hold).
 *  - FORK_NOTE_PATCHED: the child of a process with entry trampolines runs the same patched
 *    text: it is guarded, and its text restored at the end (tramp_process__add_child).
 *
 * The notes are taken at every drain tick and at the last one, whatever the ring lost: a
 * recorder that was stopped or slow finds every child that waits for it. The REC_FORK_HOLD
 * ring record only makes it look sooner.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "atftrace.h"
#include "probes.h"
#include "recorder_int.h"
#include "trampoline.h"

/* One held child: wait for its stop, then fix its optimised sites; it stays held. */
static void fix_held(struct recorder *r, pid_t child, uint32_t parent)
{
	size_t n;
	int err;

	/* BPF stopped the child: it runs again after this drain, whatever happens here. Its fork's
	 * stop is the first of its entry in the held set (a new process): count 1. */
	rec_holds_seen(r, child, 1);
	rec_hold(r, child);
	err = rec_hold_wait(child, child);
	if (err == -ESRCH)
		return;
	if (err) {
		fprintf(stderr, "atftrace record: process %u's child %d did not stop in time; resuming "
			"it unchanged (it dies if it calls a traced function that starts with a 5-byte "
			"nop before it execs)\n", parent, (int)child);
		return;
	}
	const struct nop5_site *sites = rec_holds_sites(r, &n);

	err = nop5_sites_fix(child, sites, n, true);
	if (err < 0)
		fprintf(stderr, "atftrace record: process %u's child %d: cannot give its probe sites "
			"their int3 back (%s); it dies if it calls a traced function that starts with "
			"a 5-byte nop before it execs\n", parent, (int)child, strerror(-err));
	else if (r->opts.verbose)
		fprintf(stderr, "atftrace record: process %u forked %d: %d probe sites given back "
			"their int3\n", parent, (int)child, err);
}

void rec_forks_take(struct recorder *r)
{
	uint32_t pids[64];
	uint64_t notes[64];
	int n;

	while ((n = probes__fork_notes_take(r->opts.probes, pids, notes, 64)) > 0) {
		for (int i = 0; i < n; i++) {
			pid_t child = (pid_t)pids[i];
			uint32_t parent = (uint32_t)(notes[i] & FORK_NOTE_PID);

			if (notes[i] & FORK_NOTE_PATCHED)
				tramp_process__add_child(r->tramps, child);
			if (notes[i] & FORK_NOTE_HELD)
				fix_held(r, child, parent);
		}
	}
}

void rec_forks_report(struct recorder *r)
{
	uint64_t n = probes__forks_unnoted(r->opts.probes);

	if (n)
		fprintf(stderr, "atftrace record: %llu forked %s could not be noted (%d were waiting "
			"for the recorder already): not stopped and not guarded; such a child dies if "
			"it calls a traced function that starts with a 5-byte nop before it execs\n",
			(unsigned long long)n, n == 1 ? "child" : "children", FORK_NOTES_MAX);
}
