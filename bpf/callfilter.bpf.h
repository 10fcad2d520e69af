/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Record-time call filters (record -D, -t, -F, -N, -T, --trace), uftrace's record options acting
 * before the ring. Included by bpf/atftrace.bpf.c after frame_at() and detail.bpf.h; on_entry,
 * on_return and close_one_dead_frame hand over to filter_entry/filter_return/filter_unwound when
 * call_filter_on (rodata) is set, and the verifier drops all of this when it is not.
 *
 * Which calls are kept (uftrace's libmcount rules, over the traced functions):
 *   -F FUNC    only FUNC's subtree: calls outside every -F subtree are not recorded;
 *   -N FUNC    never FUNC and its subtree (wins over -F);
 *   -D N       N levels: counted from the thread's first traced frame, or from the -F root
 *              (the root is level 1); -T FUNC@depth=N sets N levels from FUNC on, in its subtree;
 *   trace_on/trace_off (-T) and --trace=off: one switch for the whole session; a call made while
 *              it is off is not recorded (calls already recorded still get their RETURN);
 *   -t TIME    a call is kept when it lasted at least TIME, or when something below it was kept.
 *
 * Frames. A call that is not recorded and changes nothing for its subtree is not pushed at all
 * (its children see the same context as it did), and on a uprobe-session link its return run is
 * skipped: that is where -D, -F and -N save the uretprobe too. A -N root is pushed (its subtree
 * must know), and so is every kept or pending call. Per pushed frame, struct filter_frame holds
 * its state, the recorded depth it has (kept frames open below it), its entry time and the
 * context its children start from.
 *
 * -t without a copy. A pending call (-t) is not in the ring until its RETURN decides. A call that
 * passes first writes the CALLs of its pending ancestors (outermost first, with their own entry
 * times and no detail: the registers are gone), then its own CALL and its RETURN. Nothing of a
 * pending call's subtree was written before that, so each thread's events stay in time order.
 * A CALL written late that does not fit the ring is counted lost with its RETURN (as at entry),
 * and the recorded depths above it close up. A pending call closed by unwinding (exception,
 * longjmp) is decided like a return, by its time until the unwinding was seen; its pending
 * callers are written from inside close_dead_frames' loop (a bpf_loop within a bpf_loop).
 *
 * Counting. Every call not recorded is counted once, per thread and reason, in thread_filtered
 * (struct thread_filtered in atftrace.h), which the recorder takes at the thread's end into the
 * manifest; a thread the map has no room for counts in filtered_unattributed.
 */
#ifndef ATFTRACE_CALLFILTER_BPF_H
#define ATFTRACE_CALLFILTER_BPF_H

/* ---- configuration (rodata, set by user/probe/probes.c before load) ------------------------ */
const volatile bool call_filter_on = false;   /* any of the filters below */
const volatile __u32 filter_max_depth = 0;    /* -D: levels kept (0: no limit) */
const volatile __u64 filter_min_ns = 0;       /* -t: shortest call kept (0: no time filter) */
const volatile bool filter_focus = false;     /* -F given: calls start outside */
const volatile bool filter_funcs = false;     /* filter_fns holds functions */
const volatile bool filter_depth_fns = false; /* some function has depth=: depth-cut calls are pushed */

/* The trace_on/trace_off switch (--trace=off starts it at 0); written by triggers and the recorder. */
__u32 filter_tracing = 1;

__u64 filtered_unattributed[MAX_CPUS];

#define FRAME_HIDDEN    0       /* not recorded (a -N root, the only hidden frame pushed) */
#define FRAME_PENDING   1       /* -t: its CALL waits for its RETURN */
#define FRAME_WRITTEN   2       /* its CALL is in the ring */
#define FRAME_LOST      3       /* its late CALL did not fit the ring (counted lost) */

#define MODE_IN         0       /* children may be recorded */
#define MODE_OUT        1       /* -F: outside every -F subtree */
#define MODE_HIDE       2       /* -N: inside a notrace subtree */

#define NO_LIMIT        0xffffffffu

struct filter_frame {
	__u64 ts;               /* entry time (a pending call's CALL timestamp) */
	__u32 kdepth;           /* recorded depth: kept or pending frames open below it */
	__u32 limit;            /* frames at this index or deeper are cut by depth (its subtree) */
	__u16 state;            /* FRAME_* */
	__u16 mode;             /* MODE_* its children start in */
	__u32 _pad;
};

struct filter_state {
	__u32 flushed;          /* pushed frames below this index are written, lost or hidden */
	__u32 _pad;
	struct filter_frame frames[SHADOW_MAX];     /* by shadow-stack index */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);         /* resized before load to the number of functions */
	__type(key, __u64);             /* function_id */
	__type(value, struct filter_fn);
} filter_fns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct filter_state);
} filter_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_LOSS_THREADS);
	__type(key, __u32);             /* tid */
	__type(value, struct thread_filtered);
} thread_filtered SEC(".maps");

/* count_filtered - one call of the current thread not recorded, for @reason (FILTERED_*). */
static __noinline void count_filtered(__u64 pid_tgid, __u32 reason)
{
	struct thread_filtered zero = { .pid = pid_tgid >> 32 }, *tf;
	__u32 tid = (__u32)pid_tgid;

	tf = bpf_map_lookup_elem(&thread_filtered, &tid);
	if (!tf) {
		bpf_map_update_elem(&thread_filtered, &tid, &zero, BPF_NOEXIST);
		tf = bpf_map_lookup_elem(&thread_filtered, &tid);
	}
	if (!tf) {
		count_lost(filtered_unattributed);
		return;
	}
	__sync_fetch_and_add(&tf->calls[reason & (FILTERED_REASONS - 1)], 1);
}

static __always_inline struct filter_frame *fframe_at(struct filter_state *fs, __u64 i)
{
	asm volatile("" : "+r"(i));
	return &fs->frames[i & (SHADOW_MAX - 1)];
}

static __always_inline struct filter_state *filter_state_get(bool create)
{
	return bpf_task_storage_get(&filter_states, bpf_get_current_task_btf(), NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* What flush_one hands to the loop body: write the pending CALLs of frames [from, to). */
struct flush_ctx {
	struct task_state *st;
	struct filter_state *fs;
	__u64 pid_tgid;
	__u32 from;
	__u32 shift;            /* late CALLs lost so far: the depths above close up */
};

static int flush_one(__u32 i, void *data)
{
	struct flush_ctx *c = data;
	__u32 j = c->from + i;
	struct filter_frame *ff;

	if (j >= SHADOW_MAX)
		return 1;
	ff = fframe_at(c->fs, j);
	ff->kdepth -= c->shift;
	if (ff->state != FRAME_PENDING)
		return 0;
	if (emit_event(c->st, KIND_CALL, frame_at(c->st, j)->function_id, ff->kdepth, c->pid_tgid, ff->ts)) {
		ff->state = FRAME_WRITTEN;
	} else {
		ff->state = FRAME_LOST;
		c->shift++;
	}
	return 0;
}

/*
 * write_pending - frame @i is kept: first write the CALLs still pending below it (-t), in order.
 * Its own kdepth is corrected for late CALLs that were lost on the way.
 */
static __always_inline void write_pending(struct task_state *st, struct filter_state *fs, __u32 i,
					  __u64 pid_tgid)
{
	__u32 from = fs->flushed;
	struct flush_ctx c = { .st = st, .fs = fs, .pid_tgid = pid_tgid, .from = from };

	if (!filter_min_ns || from >= i)
		return;
	bpf_loop(i - from, flush_one, &c, 0);
	fframe_at(fs, i)->kdepth -= c.shift;
	fs->flushed = i;
}

/* A pushed frame @i goes: nothing below it stays pending on its account. */
static __always_inline void filter_pop(struct filter_state *fs, __u32 i)
{
	if (fs->flushed > i)
		fs->flushed = i;
}

/*
 * filter_entry - on_entry's part when filters are on: decide, record or not, push or not.
 * @d: the new frame's index on the shadow stack. Returns on_entry's value (1: no return run).
 */
static __always_inline int filter_entry(struct pt_regs *ctx, const struct probe_hit *hit,
					struct task_state *st, __u32 d, __u64 function_id, __u64 sp,
					__u64 pid_tgid, __u64 ts)
{
	struct filter_state *fs = filter_state_get(true);
	__u32 mode, limit, kdepth, state, reason = FILTERED_FUNCTION;
	struct filter_fn *fn = NULL;

	if (!fs) {      /* no memory for the thread's filter state: lost, and counted */
		count_event_lost(KIND_CALL, pid_tgid, ts);
		return 1;
	}
	if (d >= SHADOW_MAX) {  /* not remembered: its return could not be decided */
		count_filtered(pid_tgid, FILTERED_DEPTH);
		return 1;
	}
	if (d == 0) {
		fs->flushed = 0;        /* no frame open (a thread's start, or after exec) */
		mode = filter_focus ? MODE_OUT : MODE_IN;
		limit = filter_max_depth ? filter_max_depth : NO_LIMIT;
		kdepth = 0;
	} else {
		struct filter_frame *p = fframe_at(fs, d - 1);

		mode = p->mode;
		limit = p->limit;
		kdepth = p->kdepth + (p->state == FRAME_PENDING || p->state == FRAME_WRITTEN);
	}
	if (mode == MODE_HIDE)
		goto hidden;
	if (filter_funcs)
		fn = bpf_map_lookup_elem(&filter_fns, &function_id);
	if (fn) {
		__u32 fl = fn->flags;

		if (fl & FILTER_FN_NOTRACE) {
			mode = MODE_HIDE;
			state = FRAME_HIDDEN;
			goto push;
		}
		if (mode == MODE_OUT && !(fl & FILTER_FN_FOCUS))
			goto hidden;
		if (fl & FILTER_FN_FOCUS) {
			/* uftrace: a -F function starts the -D levels again from itself */
			if (filter_max_depth)
				limit = d + filter_max_depth;
			else
				limit = NO_LIMIT;
			mode = MODE_IN;
		}
		if (fl & FILTER_FN_DEPTH)
			limit = d + fn->depth;
		if (fl & FILTER_FN_TRACE_ON)
			*(volatile __u32 *)&filter_tracing = 1;
		if (fl & FILTER_FN_TRACE_OFF)
			*(volatile __u32 *)&filter_tracing = 0;
	} else if (mode == MODE_OUT) {
		goto hidden;
	}
	if (d >= limit) {
		reason = FILTERED_DEPTH;
		if (filter_depth_fns) {     /* a depth= below may open levels again: keep the context */
			state = FRAME_HIDDEN;
			count_filtered(pid_tgid, reason);
			goto push_counted;
		}
		goto hidden;
	}
	if (!*(volatile __u32 *)&filter_tracing) {
		reason = FILTERED_TRACE_OFF;
		goto hidden;
	}
	if (filter_min_ns) {
		state = FRAME_PENDING;
	} else {
		if (!emit_traced(ctx, hit, st, KIND_CALL, function_id, kdepth, pid_tgid, ts))
			return 1;       /* lost, counted; not pushed (as without filters) */
		state = FRAME_WRITTEN;
	}
	goto push_counted;
push:
	count_filtered(pid_tgid, reason);
push_counted:
	{
		struct filter_frame *ff = fframe_at(fs, d);
		struct shadow_frame *f = frame_at(st, d);

		ff->ts = ts;
		ff->kdepth = kdepth;
		ff->limit = limit;
		ff->state = state;
		ff->mode = mode;
		f->function_id = function_id;
		f->entry_sp = sp;
		if (state == FRAME_WRITTEN && fs->flushed == d)
			fs->flushed = d + 1;
	}
	st->depth = d + 1;
	return 0;
hidden:
	count_filtered(pid_tgid, reason);
	return 1;
}

/*
 * filter_end - frame @i (the innermost) ends with @kind (RETURN, or EXCEPTION when unwound) at
 * @ts: record its end if it is kept. @ctx (and @hit) are NULL for an unwound frame (no
 * registers of its own).
 */
static __always_inline void filter_end(struct pt_regs *ctx, const struct probe_hit *hit,
				       struct task_state *st, __u32 i, __u32 kind,
				       __u64 function_id, __u64 pid_tgid, __u64 ts)
{
	struct filter_state *fs = filter_state_get(false);
	struct filter_frame *ff;

	if (!fs || i >= SHADOW_MAX)
		return;
	ff = fframe_at(fs, i);
	if (ff->state == FRAME_PENDING) {
		if (ts - ff->ts < filter_min_ns) {
			count_filtered(pid_tgid, FILTERED_TIME);
			goto out;
		}
		write_pending(st, fs, i, pid_tgid);
		if (!emit_event(st, KIND_CALL, function_id, ff->kdepth, pid_tgid, ff->ts))
			goto out;       /* counted lost with its end */
		ff->state = FRAME_WRITTEN;
	}
	if (ff->state == FRAME_WRITTEN) {
		if (ctx && hit)
			emit_traced(ctx, hit, st, kind, function_id, ff->kdepth, pid_tgid, ts);
		else
			emit_event(st, kind, function_id, ff->kdepth, pid_tgid, ts);
	}
out:
	filter_pop(fs, i);
}

#endif
