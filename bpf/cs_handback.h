/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The hand-back notice of record --call-sites (bpf/cs_handback.bpf.h), shared with the recorder
 * (user/probe/probes_handback.c, user/cmd/record_call_sites.c): plain records only.
 *
 * Another tool's uprobe on a function whose callers we redirected does not see the redirected
 * calls. BPF notes each uprobe registered on one of the session's modules (its file's inode) at
 * the exit of the syscall that registered it; the recorder then gives that function its calls
 * back (user/patch/callsite_handback.c).
 */
#ifndef ATFTRACE_CS_HANDBACK_H
#define ATFTRACE_CS_HANDBACK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* A module file of the session: the inode that a uprobe on it names (dev: the kernel's s_dev). */
struct cs_hb_inode {
	__u64 dev;
	__u64 ino;
};

/* One registration seen: a uprobe on file (dev, ino) at file offset off. */
struct cs_hb_note {
	__u64 dev;
	__u64 ino;
	__u64 off;
};

#define CS_HB_MAX_INODES 256
#define CS_HB_MAX_NOTES  4096
/* Offsets of one uprobe-multi link looked at one by one; more: the whole file is noted. */
#define CS_HB_MAX_OFFSETS 64
/* off: a uprobe somewhere in the file (an offset not read): every function of it. */
#define CS_HB_ANY_OFF     (~0ull)
/* dev and ino: a registration whose file could not be read: every function of every module. */
#define CS_HB_ANY_FILE    (~0ull)

#endif
