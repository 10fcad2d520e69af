/* SPDX-License-Identifier: MIT */
/*
 * The recorder's pid namespace, for the BPF objects that report pids as it sees them
 * (bpf/pidns.bpf.h): user/proc/pidns.c.
 */
#ifndef ATFTRACE_PIDNS_H
#define ATFTRACE_PIDNS_H

#include <stdint.h>
#include <sys/types.h>

/**
 * pidns_self - this process's pid namespace: its @level (namespaces above it; 0 on the host)
 * and @inum, the inode number of /proc/self/ns/pid, which the probes compare with the kernel's
 * ns.inum. On the host nothing is loaded; in a namespace a one-shot BPF task iterator reads the
 * level. The pointers may be a skeleton's rodata. Returns 0, or -errno after one error line.
 */
int pidns_self(volatile uint32_t *level, volatile uint32_t *inum);

/**
 * pidns_host_pid - the host's pid of process @pid of this pid namespace (itself on the host).
 * 0, or a negative errno.
 */
int pidns_host_pid(pid_t pid, pid_t *host);

#endif
