/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * What the two watchers of other tools' uprobe registrations share (x86_64): the registration
 * guard of the entry trampolines (bpf/reg_guard.bpf.h), which stops the patched processes at
 * the entry of a registering syscall, and the hand-back notice of the call-site stubs
 * (bpf/cs_handback.bpf.h), which reads what was registered at its exit and stops nothing.
 * The syscalls that register uprobes: perf_event_open (the uprobe PMU, or a tracepoint event,
 * which may be a tracefs uprobe) and bpf(BPF_LINK_CREATE) of a uprobe-multi or uprobe-session
 * link. Both watch them from the syscalls' own tracepoints when tracefs names them, else from the
 * raw sys_enter/sys_exit tracepoints (user/probe/probes.c chooses).
 */
#ifndef ATFTRACE_UPROBE_REG_BPF_H
#define ATFTRACE_UPROBE_REG_BPF_H

#define NR_PERF_EVENT_OPEN  298     /* x86_64 */
#define NR_BPF              321
#define ATF_UPROBE_MULTI    48      /* BPF_TRACE_UPROBE_MULTI */
#define ATF_UPROBE_SESSION  57      /* BPF_TRACE_UPROBE_SESSION */

struct syscall_enter_args {     /* syscalls:sys_enter_* (their format files) */
	__u64 common;
	__s32 nr;
	__u32 _pad;
	__u64 args[6];
};

struct syscall_exit_args {      /* syscalls:sys_exit_* */
	__u64 common;
	__s32 nr;
	__u32 _pad;
	__s64 ret;
};

#endif
