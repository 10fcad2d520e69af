/* SPDX-License-Identifier: MIT */
/*
 * Records of bpf/return_instances.bpf.c, read by user/probe/return_slots.c. Plain __u32/__u64 only.
 */
#ifndef ATFTRACE_RETURN_INSTANCES_H
#define ATFTRACE_RETURN_INSTANCES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* One pending uretprobe return instance of one thread, as the kernel keeps it. */
struct rec_return_slot {
	__u32 pid;              /* tgid in the recorder's pid namespace */
	__u32 tid;              /* tid in the recorder's pid namespace */
	__u64 addr;             /* the return-address slot: the sp at the function's entry */
	__u64 trampoline;       /* what a hijacked slot holds: the [uprobes] page's first slot */
	__u64 orig;             /* the real return address the kernel saved */
};

#endif
