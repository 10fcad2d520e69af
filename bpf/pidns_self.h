/* SPDX-License-Identifier: MIT */
/*
 * Record of bpf/pidns_self.bpf.c, read by user/proc/pidns.c. Plain __u32 only.
 */
#ifndef ATFTRACE_PIDNS_SELF_H
#define ATFTRACE_PIDNS_SELF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The pid namespace of the task the iterator visited, and its process's host pid. */
struct rec_pidns_self {
	__u32 level;            /* namespaces above it (the host's is level 0) */
	__u32 inum;             /* its inode number, as st_ino of /proc/PID/ns/pid */
	__u32 host_tgid;        /* its process's pid in the host's namespace */
	__u32 _pad;
};

#endif
