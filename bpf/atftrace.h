/* SPDX-License-Identifier: MIT */
/*
 * Records shared by bpf/atftrace.bpf.c and the recorder (user/recorder.c). Plain __u32/__u64
 * only. Every ring record starts with a __u32 type tag; the recorder dispatches on it with one
 * switch.
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
};

/* Index event as it leaves the probe: 40 bytes, mapped 1:1 to an ATF index event. */
struct rec_event {
	__u32 type;             /* REC_EVENT / REC_EVENT_DETAIL */
	__u32 kind;             /* ATF_KIND_CALL / RETURN / EXCEPTION */
	__u32 pid;              /* tgid (host) */
	__u32 tid;              /* host tid */
	__u64 ts;               /* bpf_ktime_get_boot_ns() */
	__u64 function_id;      /* the link cookie: module_id << 32 | symbol_index */
	__u32 depth;            /* traced frames open below this one on the thread */
	__u32 flags;            /* detail flags (ATF_DETAIL_F_*) for REC_EVENT_DETAIL */
};

/* Detail payload in the ring: the ATF payload image (NOTES.md §6) minus the function id. */
struct rec_detail {
	__u64 gp[8];
	__u64 lr;
	__u64 fp;
	__u64 sp;
	__u32 stack_size;       /* bytes of stack[] that follow */
	__u32 _pad;
};

struct rec_task {
	__u32 type;
	__u32 pid;              /* tgid */
	__u32 tid;
	__u32 child_pid;        /* REC_TASK_FORK: the new process */
	__u64 ts;
};

#endif
