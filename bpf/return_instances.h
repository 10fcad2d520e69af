/* SPDX-License-Identifier: MIT */
/*
 * Records of bpf/return_instances.bpf.c, read by user/probe/return_slots.c. Plain __u32/__u64 only.
 */
#ifndef ATFTRACE_RETURN_INSTANCES_H
#define ATFTRACE_RETURN_INSTANCES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Whose return probe a pending instance serves (rec_return_slot.owner, bits). */
#define RET_OWNER_OURS      1u  /* made for a consumer of one of our links */
#define RET_OWNER_FOREIGN   2u  /* another tool's consumer would run at its return */

/* One pending uretprobe return instance of one thread, as the kernel keeps it. */
struct rec_return_slot {
	__u32 pid;              /* tgid in the recorder's pid namespace */
	__u32 tid;              /* tid in the recorder's pid namespace */
	__u64 addr;             /* the return-address slot: the sp at the function's entry */
	__u64 trampoline;       /* what a hijacked slot holds: the [uprobes] page's first slot */
	__u64 orig;             /* the real return address the kernel saved */
	__u32 owner;            /* RET_OWNER_* */
	__u32 consumers;        /* the session consumers recorded in the instance (cons_cnt) */
};

#endif
