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

#include "uprobe_reg.bpf.h"

const volatile __u32 uprobe_pmu_type = 0;   /* /sys/bus/event_source/devices/uprobe/type */

__u64 reg_inflight;             /* foreign registering syscalls between entry and exit */
__u64 guard_unannounced;        /* stops sent without their REC_REG_GUARD (the ring was full) */

/*
 * The guarded processes (host pid -> 0, or the mm they must still have). The recorder adds the
 * traced process and each child it forks (value 0: the recorder takes them out); a process
 * that a guarded one starts with clone(CLONE_VM) without being its thread (its own pid, the
 * same memory, so the same jmps) is added here by BPF, with its mm: it is guarded like a
 * thread of it for as long as it keeps that memory, and dropped once it exits or execs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GUARD_MAX_PIDS);
	__type(key, __u32);
	__type(value, __u64);
} guarded SEC(".maps");

/*
 * The tracepoint ids of the machine, filled by the recorder from tracefs (events/<sys>/<name>/id,
 * and dynamic_events for the dynamic ones): TP_ID_STATIC for a tracepoint compiled into the
 * kernel, TP_ID_DYNAMIC for a tracefs dynamic event. A tracefs uprobe event is opened as a
 * tracepoint event: only a static tracepoint's id is known never to be one (ids of dynamic
 * events are freed when the event is deleted and given to the next one, which may be a uprobe
 * on a patched function, without any syscall the guard sees). An id not in the map was
 * defined after the last refresh: it stops as a uprobe may, and sets tp_ids_stale, on which
 * the recorder reads tracefs again. tp_ids_gen counts module unloads (a module's tracepoints'
 * ids are freed with it): the map is trusted only once the recorder has read it
 * (tp_ids_ready) and while tp_ids_valid_gen, the count when that refresh began, still equals
 * it; on a kernel with modules but without the module_free tracepoint, never.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GUARD_MAX_TP_IDS);
	__type(key, __u32);
	__type(value, __u8);
} tp_ids SEC(".maps");

__u64 tp_ids_gen;               /* module unloads since the start */
__u64 tp_ids_valid_gen;
__u32 tp_ids_ready;             /* written by the recorder: tp_ids may be trusted */
__u32 tp_ids_stale;             /* an unknown id was opened: the recorder refreshes tp_ids */
__u64 tp_static_skipped;        /* static tracepoint opens that stopped nothing */

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

/* Is tracepoint @id one that is never a uprobe (a static tracepoint, known now)? */
static __always_inline bool static_tracepoint(__u32 id)
{
	__u8 *kind = bpf_map_lookup_elem(&tp_ids, &id);

	if (!kind) {
		*(volatile __u32 *)&tp_ids_stale = 1;
		return false;
	}
	if (*kind != TP_ID_STATIC || !*(volatile __u32 *)&tp_ids_ready)
		return false;
	if (*(volatile __u64 *)&tp_ids_valid_gen != *(volatile __u64 *)&tp_ids_gen) {
		*(volatile __u32 *)&tp_ids_stale = 1;   /* a module went: read them again */
		return false;
	}
	__sync_fetch_and_add(&tp_static_skipped, 1);
	return true;
}

struct mm_ctx {
	__u64 mm;
	bool hit;
};

static long guarded_has_mm(struct bpf_map *map, __u32 *key, __u64 *val, struct mm_ctx *c)
{
	struct task_struct *task = bpf_task_from_pid((s32)*key);

	if (!task)
		return 0;
	c->hit = (__u64)BPF_CORE_READ(task, mm) == c->mm;
	bpf_task_release(task);
	return c->hit;
}

/*
 * May a uprobe registered for task @pid only (as the registrant names it; 0: itself) land in
 * a guarded process? The kernel writes such a probe's int3 only into that task's memory (the
 * uprobe-multi link's and the perf event's filters compare mm), so not unless a guarded
 * process has the same memory. A registrant in another pid namespace numbers tasks its own
 * way: yes. A task that does not exist: the kernel refuses the registration, no.
 */
static __always_inline bool task_reaches_guarded(__s32 pid)
{
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task(), *task;
	struct mm_ctx c = { 0 };

	if (BPF_CORE_READ(cur, thread_pid, level) != 0)
		return true;
	if (pid == 0) {
		c.mm = (__u64)BPF_CORE_READ(cur, mm);
	} else {
		task = bpf_task_from_pid(pid);
		if (!task)
			return false;
		c.mm = (__u64)BPF_CORE_READ(task, mm);
		bpf_task_release(task);
	}
	if (!c.mm)
		return false;   /* a kernel thread has no uprobes */
	bpf_for_each_map_elem(&guarded, guarded_has_mm, &c, 0);
	return c.hit;
}

#define ATF_PERF_FLAG_PID_CGROUP 4u

/*
 * Could syscall @id with arguments @a (its first five) register a uprobe in a guarded process?
 * bpf(BPF_LINK_CREATE) of a uprobe-multi or uprobe-session link, unless it is for one task
 * (its pid field) whose memory no guarded process shares; perf_event_open of a uprobe, or of a
 * tracepoint event that may be a tracefs uprobe (any but a static tracepoint), unless it is
 * for one task likewise (its pid argument, not a cgroup). Which file the uprobe is on is not
 * looked at: the path is a string that the kernel resolves later, relative to the
 * registrant's root and directory, through symlinks (tracefs events give no file at all).
 */
static __always_inline bool registers_uprobe(long id, const __u64 *a)
{
	__u32 v = 0;
	__s32 pid = -1;

	if (id == NR_BPF) {
		union bpf_attr *attr = (void *)a[1];

		if (a[0] != BPF_LINK_CREATE ||
		    bpf_probe_read_user(&v, sizeof(v), &attr->link_create.attach_type))
			return false;
		if (v != ATF_UPROBE_MULTI && v != ATF_UPROBE_SESSION)
			return false;
		if (bpf_probe_read_user(&pid, sizeof(pid), &attr->link_create.uprobe_multi.pid))
			return true;
		return pid == 0 || task_reaches_guarded(pid);      /* 0: every process */
	}
	if (id == NR_PERF_EVENT_OPEN) {
		struct perf_event_attr *attr = (void *)a[0];
		__u64 config = 0;

		if (bpf_probe_read_user(&v, sizeof(v), &attr->type))
			return true;    /* unreadable: the kernel will say; stop anyway */
		if (v == PERF_TYPE_TRACEPOINT) {
			if (bpf_probe_read_user(&config, sizeof(config), &attr->config))
				return true;
			if (!(config >> 32) && static_tracepoint((__u32)config))
				return false;
		} else if (v != uprobe_pmu_type) {
			return false;
		}
		pid = (__s32)a[1];
		return pid < 0 || (a[4] & ATF_PERF_FLAG_PID_CGROUP) || task_reaches_guarded(pid);
	}
	return false;
}

/* What stop_guarded() tells the recorder about the syscall that made it stop a process. */
struct guard_stop_ctx {
	__u32 registrant;       /* the registering thread (host tid) */
	__u32 syscall;
};

/*
 * stop_guarded - stop guarded process @key and tell the recorder, one REC_REG_GUARD each (pid:
 * the stopped process in the recorder's pid namespace), so that it holds exactly the
 * processes that were stopped. Nobody would resume a process whose record is not in the
 * ring: the record is reserved first; a stop without one is counted in guard_unannounced.
 * A process that BPF added for its memory (@mm) and that no longer has it is dropped.
 */
static long stop_guarded(struct bpf_map *map, __u32 *key, __u64 *mm, struct guard_stop_ctx *c)
{
	struct task_struct *task;
	struct rec_task *r;

	task = bpf_task_from_pid((s32)*key);
	if (!task || (*mm && (__u64)BPF_CORE_READ(task, mm) != *mm)) {
		if (*mm)
			bpf_map_delete_elem(map, key);
		if (task)
			bpf_task_release(task);
		return 0;
	}
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
	r->_pad = 0;
	/* stopped by someone else already: checked all the same, and left to them (holds.bpf.h) */
	r->hold_seq = hold_begin(task, r->pid);
	if (r->hold_seq && bpf_send_signal_task(task, ATF_SIGSTOP, PIDTYPE_TGID, 0)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		count_lost(lost_records);
	} else {
		bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	}
	bpf_task_release(task);
	return 0;
}

/* The entry of syscall @id (@a: its first five arguments) by the current thread. */
static __always_inline void on_syscall_enter(long id, const __u64 *a)
{
	__u64 ids = bpf_get_current_pid_tgid();
	struct guard_stop_ctx c = { .registrant = (__u32)ids, .syscall = (__u32)id };
	__u8 one = 1;

	if (ids >> 32 == recorder_tgid || !registers_uprobe(id, a))
		return;
	if (bpf_map_update_elem(&registering, &c.registrant, &one, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&reg_inflight, 1);
	bpf_for_each_map_elem(&guarded, stop_guarded, &c, 0);
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
SEC("?tracepoint/syscalls/sys_enter_bpf")
int atf_reg_enter_bpf(struct syscall_enter_args *ctx)
{
	on_syscall_enter(NR_BPF, ctx->args);
	return 0;
}

SEC("?tracepoint/syscalls/sys_enter_perf_event_open")
int atf_reg_enter_perf(struct syscall_enter_args *ctx)
{
	on_syscall_enter(NR_PERF_EVENT_OPEN, ctx->args);
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
	__u64 a[5];

	if (id != NR_BPF && id != NR_PERF_EVENT_OPEN)
		return 0;
	a[0] = BPF_CORE_READ(regs, di);
	a[1] = BPF_CORE_READ(regs, si);
	a[2] = BPF_CORE_READ(regs, dx);
	a[3] = BPF_CORE_READ(regs, r10);
	a[4] = BPF_CORE_READ(regs, r8);
	on_syscall_enter(id, a);
	return 0;
}

SEC("?tp_btf/sys_exit")
int BPF_PROG(atf_reg_exit, struct pt_regs *regs, long ret)
{
	on_syscall_exit();
	return 0;
}

/* A module is unloaded: the ids of its tracepoints are free for new events (tp_ids). */
SEC("?tp_btf/module_free")
int BPF_PROG(atf_module_free)
{
	__sync_fetch_and_add(&tp_ids_gen, 1);
	return 0;
}

#endif
