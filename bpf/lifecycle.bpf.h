/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Process lifecycle hooks: fork, exit, exec and ld.so's debug-state call (a library mapped),
 * with the holds at exec and at dlopen. Part of bpf/atftrace.bpf.c, included last: it uses the
 * batches (batch.bpf.h), the unwind holds' state (cxx_unwind.bpf.h) and the fork holds
 * (fork_hold.bpf.h).
 */
#ifndef ATFTRACE_LIFECYCLE_BPF_H
#define ATFTRACE_LIFECYCLE_BPF_H

/* ---- process lifecycle ----------------------------------------------------------------- */

static __always_inline void emit_task(__u32 type, __u32 tgid, __u32 tid, __u32 arg)
{
	struct rec_task *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);

	if (!r) {
		count_lost(lost_records);
		return;
	}
	r->type = type;
	r->pid = tgid;
	r->tid = tid;
	r->child_pid = arg;     /* or exit_code */
	r->ts = atf_now();
	/* every caller runs in the context of the thread the record is about */
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_ringbuf_submit(r, wakeup_flag());
}

/*
 * A process forked: a child the recorder must fix or guard is noted (fork_hold.bpf.h); with
 * follow_fork the child of a traced process is traced from its first instruction.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(atf_fork, struct task_struct *parent, struct task_struct *child)
{
	__u64 parent_ids;
	__u32 ptgid, ctgid;
	__u8 one = 1;

#if defined(__TARGET_ARCH_x86)
	fork_note(parent, child);
#endif
	if (!follow_fork || parent->tgid == child->tgid)    /* a new thread is not a new process */
		return 0;
	parent_ids = task_pid_tgid(parent);
	ptgid = parent_ids >> 32;
	if (!tgid_traced(ptgid))
		return 0;
	/* a child is in its parent's pid namespace or below it: visible when the parent is */
	ctgid = task_pid_tgid(child) >> 32;
	if (!system_wide)
		bpf_map_update_elem(&tgid_filter, &ctgid, &one, BPF_ANY);
	emit_task(REC_TASK_FORK, ptgid, (__u32)parent_ids, ctgid);
	return 0;
}

/* A thread of a traced process exits; when it was the last one, the tgid leaves the filter. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(atf_exit, struct task_struct *p)
{
	__u64 ids = task_pid_tgid(p);
	__u32 tgid = ids >> 32;

	/*
	 * Its last events before its exit record, whether or not the filter still lists its
	 * process: another thread of the group that ran this hook after the last decrement of
	 * signal->live (below) may already have taken the tgid out while this one was between
	 * its own decrement and here. A thread with a batch was traced.
	 */
	flush_exiting();
	if (!tgid_traced(tgid))
		return 0;
	/* do_exit() has set exit_code: the signal that killed the group, or the exit status << 8 */
	emit_task(REC_TASK_EXIT, tgid, (__u32)ids, (__u32)p->exit_code);
	/* signal->live is decremented before this tracepoint: 0 means the whole group is dead. */
	if (!system_wide && BPF_CORE_READ(p, signal, live.counter) == 0)
		bpf_map_delete_elem(&tgid_filter, &tgid);
	return 0;
}

/*
 * Holds for modules that appear later (user/record/record_watch.c). The recorder must attach the
 * probes of a new program image (at exec) or of a library just mapped (ld.so's debug-state hook)
 * before the process runs them, so the hook stops the process (SIGSTOP, delivered before it
 * returns to user space) and says so in its record; the recorder resumes it after attaching.
 * Holds obey unwind_holds_off / unwind_inflight like the C++ unwind holds above, so once the
 * recorder has stopped holds, no process is left stopped after its last drain.
 */
__u32 exec_hold;                /* written by the recorder (mmaped .bss): hold at exec */
__u32 dl_hold;                  /* hold at ld.so's debug-state call (a library was mapped) */

/*
 * emit_held_task - a REC_TASK_EXEC / REC_DL_STATE record, holding the process when @want_hold.
 * @stuck: the thread's batch that the ring had no room for at an exec (else NULL). The recorder
 * ends the old image's threads at the exec record, so those events must not follow it in the
 * ring: with the record in hand they are parked (the recorder takes them as it ends the
 * thread, before it reads on); without it the recorder never learns of the exec, and they go
 * with the thread's next events as usual.
 */
static __always_inline void emit_held_task(__u32 type, __u32 tgid, __u32 tid, bool want_hold,
					   struct task_state *stuck)
{
	struct rec_task *r;

	__sync_fetch_and_add(&unwind_inflight, 1);
	r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count_lost(lost_events);        /* and not held: nobody would resume it */
		goto out;
	}
	r->type = type;
	r->pid = tgid;
	r->tid = tid;
	r->child_pid = 0;
	r->hold_seq = 0;
	r->ts = atf_now();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	if (stuck && stuck->batch.count)
		park_batch(stuck);
	/* signal only with the record in hand: a held process always has its record */
	if (want_hold && !*(volatile __u32 *)&unwind_holds_off &&
	    (r->hold_seq = hold_begin(bpf_get_current_task_btf(), tgid)) &&
	    !bpf_send_signal_thread(ATF_SIGSTOP))
		r->child_pid = REC_TASK_HELD;
	bpf_ringbuf_submit(r, r->child_pid ? BPF_RB_FORCE_WAKEUP : wakeup_flag());
out:
	__sync_fetch_and_add(&unwind_inflight, -1);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(atf_exec, struct task_struct *p, pid_t old_pid)
{
	__u64 ids = task_pid_tgid(p);      /* p is current */
	__u32 tgid = ids >> 32;

	if (!tgid_traced(tgid))
		return 0;
	/*
	 * The old image's frames died with it; a system-wide session records the new image. A
	 * thread other than the leader that calls exec takes the leader's pid (de_thread).
	 */
	struct task_state *st = current_state();
	bool claimed = false, stuck = false;

	if (st) {
		/* this hook outlives the function links: the session's end may be taking the batch
		 * right now (atf_flush_batches), and only one of the two may write it */
		claimed = st->batch.count && claim_batch(st);
		if (claimed)
			stuck = !flush_batch(st);       /* under the old ids, before the exec record */
		st->depth = 0;
		st->pid_tgid = ids;
	}
	emit_held_task(REC_TASK_EXEC, tgid, (__u32)ids, exec_hold, stuck ? st : NULL);
	if (claimed && st)
		__sync_fetch_and_and(&st->flush_claim, 0);
	announce_exec(ids);
	return 0;
}

/* Entry of ld.so's _dl_debug_state (r_debug.r_brk): called before and after each change of
 * the link map, at start-up, dlopen and dlclose. */
SEC("uprobe")
int atf_dl_state(struct pt_regs *ctx)
{
	__u64 pid_tgid = current_pid_tgid();

	if (!tgid_traced(pid_tgid >> 32))
		return 0;
	emit_held_task(REC_DL_STATE, pid_tgid >> 32, (__u32)pid_tgid, dl_hold, NULL);
	return 0;
}

#endif
