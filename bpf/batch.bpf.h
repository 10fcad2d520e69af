/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Per-thread event batches: emit_event() appends an index event to the thread's batch in its
 * task storage (struct task_state.batch, laid out as the ring record struct rec_batch) and
 * writes the whole batch to the ring with one bpf_ringbuf_output() when it holds REC_BATCH_MAX
 * events, when its first event is BATCH_AGE_NS old, before any other record of the thread that
 * the recorder must see after its events (a detail event, the exec record), at the thread's
 * exit, and at the end of the session (atf_flush_batches, a task iterator the recorder runs once
 * the function probes are gone). One ring operation per 16 events instead of one per event.
 *
 * Order: a thread's events reach the ring in the order it made them: every record of the thread
 * that carries events goes through its batch or flushes it first.
 *
 * Nothing is lost silently. A batch that cannot enter the ring (full) stays where it is and is
 * tried again at the next event; only an event that then finds the batch full too is lost, and
 * counted exactly as before (a lost CALL takes its RETURN with it: its frame is not pushed).
 * Where no event of the thread can follow a batch that the ring has no room for (the thread's
 * exit; the session's end, after the recorder drained the ring and tried again), or where the
 * next record must not precede it (an exec record, which ends the old image's threads), the
 * batch is parked in a map that the recorder reads when it ends the thread (and, for a process
 * it never heard of, at the session's end). Only when that map is full are its events counted
 * lost, a CALL whose RETURN is in the same batch as one lost call.
 *
 * What a recorder killed with -9 cannot get: the events still in a batch, at most
 * REC_BATCH_MAX - 1 per thread, made within BATCH_AGE_NS before the thread's last traced call
 * (or any time before, for a thread that makes no traced call after them).
 *
 * Included by bpf/atftrace.bpf.c after count_event_lost() and before the detail lane.
 */
#ifndef ATFTRACE_BATCH_BPF_H
#define ATFTRACE_BATCH_BPF_H

#ifndef PF_EXITING
#define PF_EXITING      0x00000004      /* task_struct.flags: in do_exit() (include/linux/sched.h) */
#endif

/* A batch whose first event is this old goes to the ring with the next event (1 ms). */
#define BATCH_AGE_NS    1000000ull

/* The ring record's size for @n events: n is at most REC_BATCH_MAX (the mask tells the verifier). */
static __always_inline __u64 batch_bytes(__u32 n)
{
	return REC_BATCH_HDR_SIZE + (__u64)(n & (2 * REC_BATCH_MAX - 1)) * sizeof(struct rec_batch_event);
}

/*
 * flush_batch - write @st's batch to the ring; false (the batch kept) when the ring is full.
 * The wakeup rule is that of every record (wakeup_flag): a forced wakeup only past the fill mark,
 * looked at on every 16th record of a CPU.
 */
static __always_inline bool flush_batch(struct task_state *st)
{
	__u32 n = st->batch.count;

	if (!n)
		return true;
	if (bpf_ringbuf_output(&rb, &st->batch, batch_bytes(n), wakeup_flag()))
		return false;
	st->batch.count = 0;
	st->flushed = 1;
	return true;
}

/* One index event into the thread's batch. Returns false (and counts the loss) when it is lost. */
static __always_inline bool emit_event(struct task_state *st, __u32 kind, __u64 function_id,
				       __u32 depth, __u64 pid_tgid, __u64 ts)
{
	struct rec_batch *b = &st->batch;
	__u32 n = b->count;

	/* full (the ring was full at its last try), or made under other ids (before an exec) */
	if (n && (n >= REC_BATCH_MAX || b->tid != (__u32)pid_tgid || b->pid != pid_tgid >> 32)) {
		if (!flush_batch(st)) {
			count_event_lost(kind, pid_tgid, ts);
			return false;
		}
		n = 0;
	}
	if (!n) {
		b->type = REC_EVENT_BATCH;
		b->pid = pid_tgid >> 32;
		b->tid = (__u32)pid_tgid;
	}
	struct rec_batch_event *e = &b->ev[n & (REC_BATCH_MAX - 1)];

	e->ts = ts;
	e->function_id = function_id;
	e->depth = depth;
	e->kind = kind;
	b->count = ++n;
	/*
	 * A thread's first event goes at once: the recorder numbers thread directories in the order
	 * their first events arrive, so the thread that called first stays thread_0.
	 */
	if (n == REC_BATCH_MAX || ts - b->ev[0].ts >= BATCH_AGE_NS || !st->flushed)
		flush_batch(st);        /* a full ring keeps it for the next event */
	return true;
}

/*
 * claim_batch - take @st's batch for a flush from outside the thread's function probes (its
 * exit, its exec, the session's end): the hooks that outlive the function links; false when
 * another one took it already. The function probes themselves never claim: at the exit no
 * probe of the thread runs any more, and at the session's end the links are closed.
 */
static __always_inline bool claim_batch(struct task_state *st)
{
	return __sync_val_compare_and_swap(&st->flush_claim, 0, 1) == 0;
}

/*
 * discard_batch - the exiting thread's batch cannot enter the ring: count its events lost. A
 * RETURN or EXCEPTION whose CALL is in the batch too is part of that CALL's count (two events).
 */
struct discard_ctx {
	struct task_state *st;
	__u64 pid_tgid;
	__u32 open;             /* CALLs of the batch whose RETURN has not come yet */
};

/* bpf_loop body, verified once (a plain loop made the verifier walk every branch 16 times over). */
static int discard_one(__u32 i, void *data)
{
	struct discard_ctx *c = data;
	struct rec_batch_event *e;

	if (i >= c->st->batch.count)
		return 1;
	e = &c->st->batch.ev[i & (REC_BATCH_MAX - 1)];
	if (e->kind == KIND_CALL) {
		c->open++;
		count_event_lost(KIND_CALL, c->pid_tgid, e->ts);
	} else if (c->open) {
		c->open--;
	} else {
		count_event_lost(e->kind, c->pid_tgid, e->ts);
	}
	return 0;
}

static __always_inline void discard_batch(struct task_state *st, __u64 pid_tgid)
{
	struct discard_ctx c = { .st = st, .pid_tgid = pid_tgid };

	bpf_loop(REC_BATCH_MAX, discard_one, &c, 0);
	st->batch.count = 0;
}

/*
 * Batches the ring had no room for when no event of their thread can follow them any more (its
 * exit, the session's end), by tid: the recorder takes a thread's parked batch when it ends the
 * thread, before its files are finalized (probes__take_parked).
 */
#define MAX_PARKED_BATCHES 4096

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PARKED_BATCHES);
	__type(key, __u32);             /* tid */
	__type(value, struct rec_batch);
} batch_parked SEC(".maps");

/* park_batch - keep @st's last batch for the recorder; counted lost when there is no room. */
static __always_inline void park_batch(struct task_state *st)
{
	__u32 tid = st->batch.tid;

	if (bpf_map_update_elem(&batch_parked, &tid, &st->batch, BPF_NOEXIST))
		discard_batch(st, ((__u64)st->batch.pid << 32) | tid);
	st->batch.count = 0;
}

/*
 * flush_exiting - at the exit of the current thread: its batch goes to the ring, or is parked,
 * and its state slot (bpf/state_slot.bpf.h) is freed, the state copied back with the claim that
 * keeps the session's end away. A batch the session's end has claimed is left to it, with the
 * slot: no function probe runs then, so nobody else takes the slot.
 */
static __always_inline void flush_exiting(void)
{
	struct task_state *home = task_state_of(bpf_get_current_task_btf(), false);
	struct task_state *st = live_state(home);

	if (!st)
		return;
	if (st->batch.count) {
		if (!claim_batch(st))
			return;
		if (!flush_batch(st))
			park_batch(st);
	}
	slot_leave(home);
}

/*
 * The session's end: every thread's batch to the ring, after the recorder closed the function
 * links (no probe appends any more, and no state moves between its task storage and a per-CPU
 * slot: the live copy is found through the task storage) and before its last drain. A batch the full ring does not
 * take now stays, and is counted in batches_left; the recorder drains and runs this again.
 */
__u32 batches_left;
__u32 batches_discard;          /* the recorder's last try: what does not fit is parked */

SEC("iter/task")
int atf_flush_batches(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct task_state *st;

	if (!task)
		return 0;
	st = live_state(bpf_task_storage_get(&task_states, task, NULL, 0));
	if (!st || !st->batch.count || !claim_batch(st))
		return 0;
	if (!flush_batch(st)) {
		if (batches_discard)
			park_batch(st);
		else
			__sync_fetch_and_add(&batches_left, 1);
	}
	/* links are closed: only the thread's exit can claim it now (an atomic: a full barrier) */
	__sync_fetch_and_and(&st->flush_claim, 0);
	/*
	 * An exit that found the batch claimed here has left it to us, and its task may be gone
	 * before the next try: a batch still here once the thread is exiting is parked now.
	 */
	if (st->batch.count && (task->flags & PF_EXITING) && claim_batch(st)) {
		if (st->batch.count)
			park_batch(st);
		__sync_fetch_and_and(&st->flush_claim, 0);
	}
	return 0;
}

#endif
