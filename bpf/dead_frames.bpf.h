/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Frames that unwinding left behind (C++ throw, longjmp: their return probes never run), closed
 * with EXCEPTION events by the next probe hit that sees them (bpf/atftrace.bpf.c, "Depth and
 * unwinding"). Part of bpf/atftrace.bpf.c, included after frame_at() and the record-time
 * filters (filter_end()).
 */
#ifndef ATFTRACE_DEAD_FRAMES_BPF_H
#define ATFTRACE_DEAD_FRAMES_BPF_H

/* What close_dead_frames hands to the loop body. */
struct pop_ctx {
	struct task_state *st;
	__u64 sp;
	__u64 pid_tgid;
	__u64 ts;
	bool inclusive;
};

/* A frame whose entry sp is below @sp (or equal, when @inclusive) is dead. */
static __always_inline bool frame_dead(const struct shadow_frame *f, __u64 sp, bool inclusive)
{
	return inclusive ? f->entry_sp <= sp : f->entry_sp < sp;
}

/*
 * close_one_dead_frame - bpf_loop body: close the innermost frame if it is dead; 1 stops.
 * A loop body is verified once, where an unrolled loop of 32 copies made the verifier walk
 * about 280,000 instructions (0.3-1 s of start-up) for the session program.
 */
static int close_one_dead_frame(__u32 i, void *data)
{
	struct pop_ctx *c = data;
	struct task_state *st = c->st;
	__u32 d = st->depth;

	if (d == 0)
		return 1;
	if (d > SHADOW_MAX) {
		/*
		 * Frames above SHADOW_MAX are not remembered. If the deepest remembered one is
		 * dead, so are they: forget them and go on with the remembered ones.
		 */
		if (!frame_dead(frame_at(st, SHADOW_MAX - 1), c->sp, c->inclusive))
			return 1;
		st->depth = d = SHADOW_MAX;
	}
	struct shadow_frame *f = frame_at(st, d - 1);

	if (!frame_dead(f, c->sp, c->inclusive))
		return 1;
	if (call_filter_on)
		filter_end(NULL, NULL, st, d - 1, KIND_EXCEPTION, f->function_id, c->pid_tgid, c->ts);
	else
		emit_event(st, KIND_EXCEPTION, f->function_id, d - 1, c->pid_tgid, c->ts);
	st->depth = d - 1;
	return 0;
}

/*
 * close_dead_frames - close frames that unwinding left behind, innermost first
 * @sp: a live stack pointer; frames with entry sp below it (or equal, when @inclusive) are dead.
 * The usual case, a live innermost frame, is decided here without entering the loop.
 */
static __always_inline void close_dead_frames(struct task_state *st, __u64 sp, bool inclusive,
					      __u64 pid_tgid, __u64 ts)
{
	__u32 d = st->depth;

	if (d == 0 || (d <= SHADOW_MAX && !frame_dead(frame_at(st, d - 1), sp, inclusive)))
		return;

	struct pop_ctx c = { .st = st, .sp = sp, .pid_tgid = pid_tgid, .ts = ts,
			     .inclusive = inclusive };

	bpf_loop(MAX_POPS, close_one_dead_frame, &c, 0);
}

#endif
