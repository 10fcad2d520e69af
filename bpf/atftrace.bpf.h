/* SPDX-License-Identifier: MIT */
/*
 * BPF-only helpers for bpf/atftrace.bpf.c: limits, the per-thread shadow stack, kfunc
 * declarations and the architecture's return-site stack adjustment. Nothing here is seen by
 * user space; the ring records shared with the recorder are in bpf/atftrace.h.
 */
#ifndef ATFTRACE_BPF_H
#define ATFTRACE_BPF_H

/* Per-CPU drop counters are indexed by CPU number masked to this power of two. */
#define MAX_CPUS        1024
/* Traced frames remembered per thread. Deeper frames still count in depth (see atftrace.bpf.c). */
#define SHADOW_MAX      512
/* Dead frames popped (as EXCEPTION events) per probe hit; the rest go on the next hit. */
#define MAX_POPS        32
/* Pending kernel return instances walked per unwind hook (the kernel keeps at most 64). */
#define MAX_RETURN_INSTANCES 64
/* Threads with losses remembered at once (thread_losses); more are counted as unattributed. */
#define MAX_LOSS_THREADS 16384
/* Processes in the tgid filter. */
#define MAX_TGIDS       65536

/*
 * One open traced frame: which function, the stack pointer at its entry, and, for a frame
 * entered through a call-site stub, the return address its slot holds (the stub's probe B;
 * 0 for a frame entered at the function itself).
 */
struct shadow_frame {
	__u64 function_id;
	__u64 entry_sp;
	__u64 site_ret;
};

/* Per-thread state in BPF_MAP_TYPE_TASK_STORAGE; freed by the kernel when the thread dies. */
struct task_state {
	__u32 depth;    /* traced frames open on this thread (may exceed SHADOW_MAX) */
	__u32 traced;   /* 1: this thread's process passed the tgid filter (cached, see on_entry) */
	__u64 pid_tgid; /* current_pid_tgid() of the thread, taken when traced was set */
	__u64 trampoline;   /* the uretprobe trampoline address, seen while an exception unwinds */
	__u64 flush_claim;  /* 1 while the thread's exit or the session's end has the batch */
	__u32 flushed;      /* 1 once a batch of this thread went to the ring */
	__u32 _pad;
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

/* Session kfuncs (kernel 6.12+). Weak, so the object still loads where they are missing. */
extern bool bpf_session_is_return(void) __ksym __weak;
extern __u64 *bpf_session_cookie(void) __ksym __weak;

#endif
