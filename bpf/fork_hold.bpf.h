/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Forked children that the recorder must look at before, or soon after, they run. Part of
 * bpf/atftrace.bpf.c (x86_64: it uses the registration guard's list and the held set).
 *
 * Optimised probe sites. The kernel (6.18) rewrites a probed 5-byte nop (0f 1f 44 00 00) into
 * a call to its [uprobes-trampoline] page after the first hit, in the process's own copy of
 * the page, and fork does not copy that page: a child that runs such a site before it execs
 * jumps into nothing (SIGSEGV). Our only such sites are functions that start with a 5-byte
 * nop, probed where they are (the entry trampolines' own probe site is a nop the kernel
 * emulates: user/probe/trampoline_plan.c). So when a process of ours whose mm has a
 * [uprobes-trampoline] page (something in it was optimised) forks, and the session probes a
 * 5-byte nop (nop5_sites), the child is stopped before its first instruction (this
 * tracepoint runs before the child is woken) and noted FORK_NOTE_HELD; the recorder writes
 * the kernel's int3 back over those calls in the child and resumes it.
 *
 * Entry trampolines. A child of a guarded process runs the same patched text; it is guarded
 * here at once (the registration guard's map), and noted FORK_NOTE_PATCHED (not stopped: its
 * trampolines need nothing) so that the recorder keeps it guarded and restores its text at
 * the end.
 *
 * Lossless. The note goes into fork_notes, a hash map the recorder empties at every drain
 * tick and at its end: unlike a ring record it is not lost when the ring is full (the
 * recorder stopped, or slow). A REC_FORK_HOLD ring record follows as a wakeup only. If even
 * the map is full (FORK_NOTES_MAX children waiting), the child is not stopped, since nobody
 * would know to fix and resume it, and it is counted in forks_unnoted, reported at the end:
 * a stopped child that nobody resumes hangs for good, while an unfixed one dies only if it
 * calls such a function before it execs.
 */
#ifndef ATFTRACE_FORK_HOLD_BPF_H
#define ATFTRACE_FORK_HOLD_BPF_H

__u32 nop5_sites;               /* written by the recorder (mmaped .bss): a probe on a 5-byte nop */
__u64 forks_unnoted;            /* children the full fork_notes could not take (not stopped) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FORK_NOTES_MAX);
	__type(key, __u32);         /* the child's pid in the recorder's namespace */
	__type(value, __u64);       /* the parent's pid | FORK_NOTE_* */
} fork_notes SEC(".maps");

/* mm_struct.uprobes_state.head_tramps: the process's [uprobes-trampoline] pages (6.18 on) */
struct uprobes_state___tramps {
	struct hlist_head head_tramps;
} __attribute__((preserve_access_index));

struct mm_struct___tramps {
	struct uprobes_state___tramps uprobes_state;
} __attribute__((preserve_access_index));

/* Has the kernel optimised a probe site in @task's memory (it has a [uprobes-trampoline])? */
static __always_inline bool has_optimised_sites(struct task_struct *task)
{
	struct mm_struct___tramps *mm = (void *)BPF_CORE_READ(task, mm);

	/* a kernel without the field does not optimise uprobes */
	if (!mm || !bpf_core_field_exists(mm->uprobes_state.head_tramps))
		return false;
	return BPF_CORE_READ(mm, uprobes_state.head_tramps.first) != NULL;
}

/* A wakeup for the recorder; when the ring is full the note waits for its next tick. */
static __always_inline void fork_notify(__u64 parent_ids, __u32 child_pid)
{
	struct rec_task *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);

	if (!r)
		return;
	r->type = REC_FORK_HOLD;
	r->pid = parent_ids >> 32;
	r->tid = (__u32)parent_ids;
	r->child_pid = child_pid;
	r->hold_seq = 0;
	r->_pad = 0;
	r->ts = atf_now();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

/* fork_note - @parent forked @child (sched_process_fork, in @parent's context). */
static __always_inline void fork_note(struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid = parent->tgid, child_pid;
	__u64 parent_ids, note;
	bool patched, hold;

	if (parent->tgid == child->tgid)
		return;         /* a thread: its process is guarded */
	patched = bpf_map_lookup_elem(&guarded, &tgid) != NULL;
	/*
	 * A vfork child, or any clone(CLONE_VM) one, shares its parent's memory: its jmps and its
	 * [uprobes-trampoline] page. Nothing to fix, but it runs the patched text under another
	 * pid: guarded like a thread of the parent while it has that memory.
	 */
	if (parent->mm == child->mm) {
		__u32 ctgid = child->tgid;
		__u64 mm = (__u64)child->mm;

		if (patched && mm)
			bpf_map_update_elem(&guarded, &ctgid, &mm, BPF_ANY);
		return;
	}
	parent_ids = task_pid_tgid(parent);
	/* guarded from its first instruction on: the registration guard must not wait for the
	 * recorder to read the note (value 0: whatever its memory, as the recorder's own entries) */
	if (patched) {
		__u32 ctgid = child->tgid;
		__u64 any_mm = 0;

		bpf_map_update_elem(&guarded, &ctgid, &any_mm, BPF_NOEXIST);
	}
	hold = *(volatile __u32 *)&nop5_sites && (patched || tgid_traced(parent_ids >> 32)) &&
	       has_optimised_sites(parent);
	if (!patched && !hold)
		return;
	child_pid = task_pid_tgid(child) >> 32;
	if (!child_pid)
		return;
	/* a hold like the C++ unwind holds: none after the recorder's last drain */
	__sync_fetch_and_add(&unwind_inflight, 1);
	if (*(volatile __u32 *)&unwind_holds_off)
		hold = false;
	note = (parent_ids >> 32) | (patched ? FORK_NOTE_PATCHED : 0) | (hold ? FORK_NOTE_HELD : 0);
	/* noted before it is stopped: a stopped child is always in the map */
	if (bpf_map_update_elem(&fork_notes, &child_pid, &note, BPF_ANY)) {
		__sync_fetch_and_add(&forks_unnoted, 1);
		goto out;
	}
	if (hold && (!hold_begin(child, child_pid) ||
		     bpf_send_signal_task(child, ATF_SIGSTOP, PIDTYPE_TGID, 0))) {
		/* not stopped after all (never seen for a new child): only the other flags stand */
		note &= ~FORK_NOTE_HELD;
		bpf_map_update_elem(&fork_notes, &child_pid, &note, BPF_EXIST);
	}
	fork_notify(parent_ids, child_pid);
out:
	__sync_fetch_and_add(&unwind_inflight, -1);
}

#endif
