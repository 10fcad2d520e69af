/* SPDX-License-Identifier: MIT */
/*
 * BPF-only helpers for bpf/atftrace.bpf.c: limits, drop counting, the per-thread shadow stack,
 * the clock, kfunc declarations, the link's run context and the architecture's return-site stack
 * adjustment. Nothing here is seen by user space; the ring records shared with the recorder are
 * in bpf/atftrace.h.
 */
#ifndef ATFTRACE_BPF_H
#define ATFTRACE_BPF_H

/* Per-CPU drop counters are indexed by CPU number masked to this power of two. */
#define MAX_CPUS        1024
/* Traced frames remembered per thread. Deeper frames still count in depth (see atftrace.bpf.c). */
#define SHADOW_MAX      512
/* Dead frames popped (as EXCEPTION events) per probe hit; the rest go on the next hit. */
#define MAX_POPS        (SHADOW_MAX + 1)   /* every remembered frame: one hit closes all the dead */
/* Pending kernel return instances walked per unwind hook (the kernel keeps at most 64). */
#define MAX_RETURN_INSTANCES 64
/* Threads with losses remembered at once (thread_losses); more are counted as unattributed. */
#define MAX_LOSS_THREADS 16384
/* Processes in the tgid filter. */
#define MAX_TGIDS       65536

/* count_lost_n - add @n to this CPU's slot of a per-CPU drop counter array (MAX_CPUS slots). */
static __always_inline void count_lost_n(__u64 *counters, __u64 n)
{
	__u32 cpu = bpf_get_smp_processor_id() & (MAX_CPUS - 1);

	/* Atomic: two CPUs may share a slot when there are more than MAX_CPUS. */
	__sync_fetch_and_add(&counters[cpu], n);
}

static __always_inline void count_lost(__u64 *counters)
{
	count_lost_n(counters, 1);
}

/*
 * One open traced frame: which function, the stack pointer at its entry, and, for a frame
 * entered through a call-site stub, the return address its slot holds (the stub's return point,
 * its `call R`; 0 for a frame entered at the function itself).
 */
struct shadow_frame {
	__u64 function_id;
	__u64 entry_sp;
	__u64 site_ret;
};

/*
 * Per-thread state in BPF_MAP_TYPE_TASK_STORAGE; freed by the kernel when the thread dies. While
 * the thread owns a CPU's state slot, the live copy is there (bpf/state_slot.bpf.h).
 */
struct task_state {
	__u32 depth;    /* traced frames open on this thread (may exceed SHADOW_MAX) */
	__u32 traced;   /* 1: this thread's process passed the tgid filter (cached, see on_entry) */
	__u64 pid_tgid; /* current_pid_tgid() of the thread, taken when traced was set */
	__u64 trampoline;   /* the uretprobe trampoline address, seen while an exception unwinds */
	__u64 flush_claim;  /* 1 while the thread's exit or the session's end has the batch */
	__u32 flushed;      /* 1 once a batch of this thread went to the ring */
	__u32 in_slot;      /* CPU + 1 of the slot holding the live copy; 0: this is it */
	struct rec_batch batch;  /* events not yet in the ring (bpf/batch.bpf.h) */
	struct shadow_frame frames[SHADOW_MAX];  /* frames[i] was called at depth i */
};

/*
 * Stack pointer at a return probe minus this = the returning frame's entry sp. On x86_64 the
 * entry probe sees sp pointing at the return address, which `ret` has popped at the return
 * probe; on arm64 the return address is in a register and sp is unchanged.
 */
#if defined(__TARGET_ARCH_x86)
#define RET_SP_ADJUST   8
#else
#define RET_SP_ADJUST   0
#endif

/*
 * atf_now - an event's time: CLOCK_MONOTONIC ns, for every ts a record carries. The recorder adds
 * the boot clock's offset to it (user/record/recorder_ring.c), so the files hold CLOCK_BOOTTIME
 * as before. bpf_ktime_get_boot_ns() is one call deeper in the kernel: about 7 ns more per
 * program run here, and every traced call pair takes the time twice.
 */
#define atf_now() bpf_ktime_get_ns()

/* Session kfuncs (kernel 6.12+). Weak, so the object still loads where they are missing. */
extern bool bpf_session_is_return(void) __ksym __weak;
extern __u64 *bpf_session_cookie(void) __ksym __weak;
/* A plain load through a kernel pointer (6.2+); the verifier replaces the call by nothing. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/*
 * The run context of a uprobe_multi or uprobe-session link's program run, read in place.
 * bpf_session_is_return() and bpf_get_attach_cookie() read exactly these fields (the kernel's
 * bpf_trace.c: current->bpf_ctx is the link's struct bpf_uprobe_multi_run_ctx), but as calls:
 * with the retpolines and Safe-RET of this kernel a call costs about 7 ns per program run,
 * and these two were 12 of the 85 ns a traced call pair added. Where the kernel lacks these
 * types (CO-RE says so at load) the calls are made as before.
 */
static __always_inline bool multi_run_ctx_readable(void)
{
	return bpf_core_type_exists(struct bpf_uprobe_multi_run_ctx) &&
	       bpf_core_field_exists(struct task_struct, bpf_ctx);
}

static __always_inline struct bpf_uprobe_multi_run_ctx *multi_run_ctx(struct task_struct *task)
{
	return bpf_rdonly_cast(task->bpf_ctx, bpf_core_type_id_kernel(struct bpf_uprobe_multi_run_ctx));
}

/* hit_is_return - is this run of a session program the return run? @task: current. */
static __always_inline bool hit_is_return(struct task_struct *task)
{
	if (multi_run_ctx_readable())
		return multi_run_ctx(task)->session_ctx.is_return;
	return bpf_session_is_return();
}

/*
 * hit_cookie - the link cookie (function_id) of the probed offset
 * @multi: the program runs on a uprobe_multi or session link (else a perf-event uprobe).
 */
static __always_inline __u64 hit_cookie(struct pt_regs *ctx, struct task_struct *task, bool multi)
{
	if (multi && multi_run_ctx_readable())
		return multi_run_ctx(task)->uprobe->cookie;
	return bpf_get_attach_cookie(ctx);
}

#endif
