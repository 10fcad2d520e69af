/* SPDX-License-Identifier: MIT */
/*
 * Records shared by bpf/atftrace.bpf.c and the recorder (user/record/recorder.c). Plain __u32/__u64
 * only. Every ring record starts with a __u32 type tag; the recorder dispatches on it with one
 * switch. Pids and tids are those of the recorder's pid namespace (bpf/pidns.bpf.h). Times (ts)
 * are CLOCK_MONOTONIC ns; the recorder makes them CLOCK_BOOTTIME (struct recorder.boot_offset_ns).
 */
#ifndef ATFTRACE_RING_H
#define ATFTRACE_RING_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum {
	REC_EVENT       = 1,    /* struct rec_event: one index event */
	REC_EVENT_DETAIL = 2,   /* struct rec_event + struct rec_detail + stack bytes */
	REC_TASK_EXIT   = 3,    /* struct rec_task: a traced thread exited */
	REC_TASK_FORK   = 4,    /* struct rec_task: a traced process forked (--follow-fork) */
	REC_TASK_EXEC   = 5,    /* struct rec_task: a traced process called exec */
	REC_UNWIND_FIXUP = 6,   /* struct rec_unwind_fixup: stack writes for a C++ unwind */
	REC_DL_STATE    = 7,    /* struct rec_task: ld.so's link map changes (dlopen, dlclose, start) */
	REC_REG_GUARD   = 8,    /* struct rec_task: pid was stopped, as another thread (tid, a host
				 * tid) may be registering a uprobe (child_pid: its syscall number,
				 * comm: its name); bpf/reg_guard.bpf.h */
	REC_FORK_HOLD   = 9,    /* struct rec_task: child_pid was noted in fork_notes (a wakeup
				 * only: the map, never dropped, is what the recorder acts on) */
	REC_EVENT_BATCH = 10,   /* struct rec_batch: up to REC_BATCH_MAX index events of one thread */
	REC_PROC_INFO   = 16,   /* struct rec_proc_info: who a thread is, at its first event (-a) */
};

/*
 * Identity of a thread's process, sent once per thread before its first event in a system-wide
 * session (bpf/filter.bpf.h), so a process that exits before the recorder reads /proc still has
 * a name, a command line and a start time.
 */
#define REC_ARGS_MAX 128
struct rec_proc_info {
	__u32 type;             /* REC_PROC_INFO */
	__u32 pid;              /* tgid */
	__u32 tid;
	__u32 args_len;         /* bytes of args[] used: NUL-separated argv, maybe cut short */
	__u64 start_boottime;   /* the process's start, CLOCK_BOOTTIME ns */
	char comm[16];          /* the thread group leader's comm */
	char args[REC_ARGS_MAX];
};

/* Index event as it leaves the probe: 40 bytes, mapped 1:1 to an ATF index event. */
struct rec_event {
	__u32 type;             /* REC_EVENT / REC_EVENT_DETAIL */
	__u32 kind;             /* ATF_KIND_CALL / RETURN / EXCEPTION */
	__u32 pid;              /* tgid in the recorder's pid namespace */
	__u32 tid;              /* tid in the recorder's pid namespace */
	__u64 ts;               /* CLOCK_MONOTONIC ns (atf_now); the recorder adds the boot offset */
	__u64 function_id;      /* the link cookie: module_id << 32 | symbol_index */
	__u32 depth;            /* traced frames open below this one on the thread */
	__u32 flags;            /* detail flags (ATF_DETAIL_F_*) for REC_EVENT_DETAIL */
};

/*
 * Index events of one thread, batched in its task storage and written to the ring in one
 * record (bpf/batch.bpf.h): one ring operation per REC_BATCH_MAX events instead of one each.
 * Only the first 16 + count * 24 bytes of the record are in the ring.
 */
#define REC_BATCH_MAX   16

struct rec_batch_event {
	__u64 ts;               /* CLOCK_MONOTONIC ns (atf_now); the recorder adds the boot offset */
	__u64 function_id;
	__u32 depth;
	__u32 kind;             /* ATF_KIND_CALL / RETURN / EXCEPTION */
};

struct rec_batch {
	__u32 type;             /* REC_EVENT_BATCH */
	__u32 count;            /* events in ev[], 1..REC_BATCH_MAX in the ring */
	__u32 pid;              /* tgid in the recorder's pid namespace, as in struct rec_event */
	__u32 tid;
	struct rec_batch_event ev[REC_BATCH_MAX];
};

#define REC_BATCH_HDR_SIZE 16u

/* Detail payload in the ring: the ATF payload image (NOTES.md §6) minus the function id. */
struct rec_detail {
	__u64 gp[8];
	__u64 lr;
	__u64 fp;
	__u64 sp;
	__u32 stack_size;       /* bytes of stack[] that follow */
	__u32 args_off;         /* 0, or where struct rec_args (bpf/args.h) starts, from the ring
				 * record's start (struct rec_event) */
};

/*
 * Events of one thread that could not be written (ring full, no memory for the thread's state),
 * in the thread_losses map under the thread's id: made at its first loss, read and deleted by the
 * recorder when it ends the thread. A CALL that is not written takes its RETURN (or EXCEPTION)
 * with it, so the thread's events = written + 2 * calls + returns.
 */
struct thread_loss {
	__u32 pid;              /* tgid */
	__u32 _pad;
	__u64 calls;            /* CALLs not written (their RETURN is not written either) */
	__u64 returns;          /* RETURN/EXCEPTION events not written although their CALL was */
	__u64 first_ts;         /* the time of the first and of the last event not written (atf_now) */
	__u64 last_ts;
};

/*
 * Record-time call filters (bpf/callfilter.bpf.h). Calls of one thread that were not recorded,
 * by reason, in the thread_filtered map under the thread's id; read and deleted by the recorder
 * when it ends the thread. Not losses: nothing of a filtered call is in the files, on purpose.
 */
#define FILTERED_DEPTH          0       /* -D, or a depth= trigger */
#define FILTERED_TIME           1       /* -t: shorter than the threshold, nothing below kept */
#define FILTERED_FUNCTION       2       /* -F (outside every -F subtree) or -N (inside one) */
#define FILTERED_TRACE_OFF      3       /* made while the trace_on/trace_off switch was off */
#define FILTERED_REASONS        4

struct thread_filtered {
	__u32 pid;              /* tgid */
	__u32 _pad;
	__u64 calls[FILTERED_REASONS];
};

/* filter_fns values: what a -F/-N/-T function does at its call. */
#define FILTER_FN_FOCUS         0x1u    /* -F, or -T FUNC@filter */
#define FILTER_FN_NOTRACE       0x2u    /* -N, or -T FUNC@notrace */
#define FILTER_FN_DEPTH         0x4u    /* -T FUNC@depth=N */
#define FILTER_FN_TRACE_ON      0x8u    /* -T FUNC@trace_on */
#define FILTER_FN_TRACE_OFF     0x10u   /* -T FUNC@trace_off */

struct filter_fn {
	__u32 flags;            /* FILTER_FN_* */
	__u32 depth;            /* FILTER_FN_DEPTH: levels kept from this function on */
};

/*
 * Call-site stubs (user/patch/callsite_plan.h, callsite_ind.h): a frame entered through a stub
 * holds the stub's return point in its return-address slot, a `call R` to the function's (or
 * the module's) return block, and the stub's `jmp site+L` (e9 rel32) follows it this many
 * bytes later (bpf/site_unwind.bpf.h).
 */
#define ATF_SITE_JMP_FROM_RET 5

/* Processes with entry trampolines that the registration guard stops (bpf/reg_guard.bpf.h):
 * the traced process, the children it forks, the processes that share its memory. */
#define GUARD_MAX_PIDS 16384
/* Tracepoint ids the guard knows (bpf/reg_guard.bpf.h): TP_ID_STATIC, TP_ID_DYNAMIC. */
#define GUARD_MAX_TP_IDS 32768
#define TP_ID_STATIC  1u        /* a tracepoint compiled into the kernel: never a uprobe */
#define TP_ID_DYNAMIC 2u        /* a tracefs dynamic event (uprobe, kprobe, synthetic, ...) */
/* Processes held at once (bpf/holds.bpf.h); a power of two. */
#define HELD_MAX_PIDS 1024
/* A held_pids entry with this bit: someone else stopped the process during our hold (the
 * user's kill -STOP, job control), so our hold's end does not continue it. */
#define HELD_STOPPED_BY_OTHER (1ull << 63)
/*
 * The rest of an entry: the pid (bits 0-31) and, in bits 32-62, how many stops of ours it has
 * had since it entered the set. Each hold record carries the count its stop made (hold_seq), so
 * the recorder resumes a process only once it has read the record of every stop of ours: a
 * hold that stops it again while another one's record is being handled keeps it stopped.
 */
#define HELD_PID_MASK  0xffffffffull
#define HELD_SEQ_SHIFT 32
#define HELD_SEQ_ONE   (1ull << HELD_SEQ_SHIFT)
#define HELD_SEQ_MASK  0x7fffffffull

/*
 * fork_notes (bpf/fork_hold.bpf.h): children (pid in the recorder's namespace) that the
 * recorder has to look at, value = the parent's pid | FORK_NOTE_* flags.
 */
#define FORK_NOTES_MAX 8192
#define FORK_NOTE_PID       0xffffffffull
#define FORK_NOTE_HELD      (1ull << 32)    /* stopped: unoptimise its nop5 sites, then resume */
#define FORK_NOTE_PATCHED   (1ull << 33)    /* its parent has entry trampolines: guard it too */

/* REC_TASK_EXEC and REC_DL_STATE: child_pid holds REC_TASK_HELD when the process was stopped
 * (SIGSTOP) for the recorder, which sends SIGCONT once it has attached what is new. */
#define REC_TASK_HELD 1u

struct rec_task {
	__u32 type;
	__u32 pid;              /* tgid */
	__u32 tid;
	union {
		__u32 child_pid;        /* REC_TASK_FORK: the new process; EXEC/DL_STATE: REC_TASK_HELD or 0 */
		__u32 exit_code;        /* REC_TASK_EXIT: the thread's exit code, as a wait status */
	};
	__u64 ts;
	char comm[16];          /* the thread's name (REC_TASK_EXIT: its last one) */
	__u32 hold_seq;         /* a hold's record (EXEC/DL_STATE held, REG_GUARD): its stop's count */
	__u32 _pad;
};

/*
 * C++ exceptions through uretprobed frames (bpf/cxx_unwind.bpf.h, "C++ exceptions and
 * uretprobes"; user/record/recorder_unwind.c). The thread that raised or caught an exception
 * has been sent SIGSTOP; the recorder waits until it is stopped, writes value to each stack
 * slot that still holds expect, and resumes it with SIGCONT.
 */
#define REC_UNWIND_MAX_SLOTS    64      /* = the kernel's uretprobe depth limit per thread */
#define REC_UNWIND_F_REARM      1u      /* at the catch: frames still alive get the trampoline back */
#define REC_UNWIND_F_TRUNCATED  2u      /* more pending return instances than REC_UNWIND_MAX_SLOTS */

struct rec_unwind_slot {
	__u64 addr;             /* user address of a return-address slot on the thread's stack */
	__u64 expect;           /* what it holds now; written only if it still holds this */
	__u64 value;            /* what to write */
};

struct rec_unwind_fixup {
	__u32 type;             /* REC_UNWIND_FIXUP */
	__u32 pid;              /* tgid in the recorder's pid namespace */
	__u32 tid;              /* tid of the stopped thread (recorder's pid namespace) */
	__u32 count;            /* pairs[] in use, <= REC_UNWIND_MAX_SLOTS */
	__u32 flags;            /* REC_UNWIND_F_* */
	__u32 hold_seq;         /* the count of the stop that holds the thread (HELD_SEQ_*) */
	__u64 ts;
	struct rec_unwind_slot pairs[REC_UNWIND_MAX_SLOTS];
};

#endif
