/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The registration guard: another tool adds a uprobe while a process runs on our entry
 * trampolines. Part of bpf/atftrace.bpf.c (it uses the ring and the loss counters).
 *
 * A patched function has `jmp trampoline` over its first bytes (user/probe/trampoline.c). A
 * uprobe that another tool (bpftrace, perf, an atftrace -a session) registers on it writes its
 * int3 over the jmp, and the kernel, which takes the instruction to run from the file, runs the
 * function's first instruction out of line and resumes in the middle of the jmp: the process
 * dies at the next call. Kernel functions cannot be hooked on every machine (no kprobes or
 * fentry here), but the syscalls that register uprobes can: perf_event_open (uprobe PMU, or a
 * tracepoint event, which may be a tracefs uprobe) and bpf(BPF_LINK_CREATE) with a uprobe-multi
 * or uprobe-session attach type.
 *
 * At the entry of such a syscall by any other process, every guarded process is sent SIGSTOP
 * (it stops at its next return to user space, microseconds; registering a uprobe takes longer,
 * path lookup and allocations first) with one REC_REG_GUARD naming it, and the syscall is
 * counted in reg_inflight until its exit. The recorder holds each stopped process (one SIGCONT
 * after its drain, as for the C++ unwind holds), waits until reg_inflight is 0, and gives every
 * patched function whose jmp was written over its original bytes back, around the other tool's
 * int3, with a plain probe of ours (tramp_process__check). Then the processes run again.
 *
 * Forks. A child forked by a guarded process runs the same patched text: it is noted in
 * fork_notes (bpf/fork_hold.bpf.h) and the recorder guards it too.
 *
 * Cost: while a process is guarded, every syscall of the machine passes the syscall
 * tracepoints (see "Two ways in" below).
 */
#ifndef ATFTRACE_REG_GUARD_BPF_H
#define ATFTRACE_REG_GUARD_BPF_H

#define NR_PERF_EVENT_OPEN  298     /* x86_64 */
#define NR_BPF              321
#define ATF_UPROBE_MULTI    48      /* BPF_TRACE_UPROBE_MULTI */
#define ATF_UPROBE_SESSION  57      /* BPF_TRACE_UPROBE_SESSION */

const volatile __u32 uprobe_pmu_type = 0;   /* /sys/bus/event_source/devices/uprobe/type */
const volatile __u32 recorder_tgid = 0;     /* our own registrations are not foreign */

/* Written by the recorder (mmaped .bss): the guarded processes (host pids), 0 = free slot. */
__u32 guard_pids[GUARD_MAX_PIDS];
__u64 reg_inflight;             /* foreign registering syscalls between entry and exit */
__u64 guard_unannounced;        /* stops sent without their REC_REG_GUARD (the ring was full) */

struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
void bpf_task_release(struct task_struct *p) __ksym;
int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type, u64 value) __ksym;

/* Threads (host tid) inside a registering syscall that reg_inflight counts. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} registering SEC(".maps");

/* Could syscall @id with arguments @arg0, @arg1 register a uprobe? */
static __always_inline bool registers_uprobe(long id, __u64 arg0, __u64 arg1)
{
	__u32 v = 0;

	if (id == NR_BPF) {
		union bpf_attr *attr = (void *)arg1;

		if (arg0 != BPF_LINK_CREATE ||
		    bpf_probe_read_user(&v, sizeof(v), &attr->link_create.attach_type))
			return false;
		return v == ATF_UPROBE_MULTI || v == ATF_UPROBE_SESSION;
	}
	if (id == NR_PERF_EVENT_OPEN) {
		struct perf_event_attr *attr = (void *)arg0;

		if (bpf_probe_read_user(&v, sizeof(v), &attr->type))
			return true;    /* unreadable: the kernel will say; stop anyway */
		return v == uprobe_pmu_type || v == PERF_TYPE_TRACEPOINT;
	}
	return false;
}

/* What stop_guarded() tells the recorder about the syscall that made it stop a process. */
struct guard_stop_ctx {
	__u32 registrant;       /* the registering thread (host tid) */
	__u32 syscall;
};

/*
 * stop_guarded - stop guarded process @i and tell the recorder, one REC_REG_GUARD each (pid:
 * the stopped process in the recorder's pid namespace), so that it holds exactly the
 * processes that were stopped. Nobody would resume a process whose record is not in the
 * ring: the record is reserved first; a stop without one is counted in guard_unannounced.
 */
static int stop_guarded(__u32 i, void *data)
{
	__u32 pid = guard_pids[i & (GUARD_MAX_PIDS - 1)];
	struct guard_stop_ctx *c = data;
	struct task_struct *task;
	struct rec_task *r;

	if (!pid)
		return 0;
	task = bpf_task_from_pid((s32)pid);
	if (!task)
		return 0;
	r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		/* no room to say which: stopped all the same, and counted for the recorder, which
		 * then holds and checks every guarded process */
		count_lost(lost_records);
		if (hold_begin(task, task_pid_tgid(task) >> 32) &&
		    !bpf_send_signal_task(task, ATF_SIGSTOP, PIDTYPE_TGID, 0))
			__sync_fetch_and_add(&guard_unannounced, 1);
		bpf_task_release(task);
		return 0;
	}
	r->type = REC_REG_GUARD;
	r->pid = task_pid_tgid(task) >> 32;
	r->tid = c->registrant;
	r->child_pid = c->syscall;
	r->ts = atf_now();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	/* stopped by someone else already: checked all the same, and left to them (holds.bpf.h) */
	if (hold_begin(task, r->pid) && bpf_send_signal_task(task, ATF_SIGSTOP, PIDTYPE_TGID, 0)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		count_lost(lost_records);
	} else {
		bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	}
	bpf_task_release(task);
	return 0;
}

/* The entry of syscall @id (@arg0, @arg1) by the current thread. */
static __always_inline void on_syscall_enter(long id, __u64 arg0, __u64 arg1)
{
	__u64 ids = bpf_get_current_pid_tgid();
	struct guard_stop_ctx c = { .registrant = (__u32)ids, .syscall = (__u32)id };
	__u8 one = 1;

	if (ids >> 32 == recorder_tgid || !registers_uprobe(id, arg0, arg1))
		return;
	if (bpf_map_update_elem(&registering, &c.registrant, &one, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&reg_inflight, 1);
	bpf_loop(GUARD_MAX_PIDS, stop_guarded, &c, 0);
}

/* The exit of a syscall by the current thread: one registration less in flight if it was one. */
static __always_inline void on_syscall_exit(void)
{
	__u32 tid;

	if (!*(volatile __u64 *)&reg_inflight)
		return;
	tid = (__u32)bpf_get_current_pid_tgid();
	if (bpf_map_delete_elem(&registering, &tid) == 0)
		__sync_fetch_and_add(&reg_inflight, -1);
}

/*
 * Two ways in, chosen by user/probe/probes.c. With tracefs mounted, the two syscalls' own
 * tracepoints: the kernel runs a program only for them (about +40 ns per other syscall here).
 * Without it (no tracepoint ids to open them by), the raw sys_enter/sys_exit tracepoints, which
 * run a program for every syscall (about +150 ns).
 */
struct syscall_enter_args {     /* syscalls:sys_enter_* (their format files) */
	__u64 common;
	__s32 nr;
	__u32 _pad;
	__u64 args[6];
};

SEC("?tracepoint/syscalls/sys_enter_bpf")
int atf_reg_enter_bpf(struct syscall_enter_args *ctx)
{
	on_syscall_enter(NR_BPF, ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("?tracepoint/syscalls/sys_enter_perf_event_open")
int atf_reg_enter_perf(struct syscall_enter_args *ctx)
{
	on_syscall_enter(NR_PERF_EVENT_OPEN, ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("?tracepoint/syscalls/sys_exit_bpf")
int atf_reg_exit_bpf(void *ctx)
{
	on_syscall_exit();
	return 0;
}

SEC("?tracepoint/syscalls/sys_exit_perf_event_open")
int atf_reg_exit_perf(void *ctx)
{
	on_syscall_exit();
	return 0;
}

SEC("?tp_btf/sys_enter")
int BPF_PROG(atf_reg_enter, struct pt_regs *regs, long id)
{
	if (id == NR_BPF || id == NR_PERF_EVENT_OPEN)
		on_syscall_enter(id, BPF_CORE_READ(regs, di), BPF_CORE_READ(regs, si));
	return 0;
}

SEC("?tp_btf/sys_exit")
int BPF_PROG(atf_reg_exit, struct pt_regs *regs, long ret)
{
	on_syscall_exit();
	return 0;
}

/* Is @tgid (host pid) guarded? */
static int find_guarded(__u32 i, void *data)
{
	__u32 *tgid = data;

	if (guard_pids[i & (GUARD_MAX_PIDS - 1)] == *tgid) {
		*tgid = 0;
		return 1;
	}
	return 0;
}

#endif
