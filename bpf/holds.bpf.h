/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The held set: every process a hold of ours stops with SIGSTOP (a C++ unwind fix-up, an exec
 * or a dlopen, the registration guard, a fork on trampolines) is first put in held_pids, a
 * .bss array that the recorder maps. The recorder sends SIGCONT only to processes in it, and
 * takes each out as it resumes it (user/record/record_holds.c); its watchdog, a child that
 * outlives it, resumes whatever is still in it when the recorder dies (kill -9 included).
 *
 * A process that someone else has stopped, or is stopping (the user's kill -STOP, a shell's
 * job control: a group stop in effect, or a stop signal pending for the group), is not stopped
 * by us and not put in the set: it was not ours to stop, so it is not ours to continue either.
 * Part of bpf/atftrace.bpf.c.
 */
#ifndef ATFTRACE_HOLDS_BPF_H
#define ATFTRACE_HOLDS_BPF_H

#define ATF_SIGNAL_STOP_STOPPED 0x1         /* signal_struct.flags: the group stop is in effect */
/* SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU (19-22) as bits of a sigset's first word */
#define ATF_STOP_SIGNALS        (0xfull << 18)

/* Written by BPF, cleared by the recorder (mmaped .bss): held tgids, recorder's pid namespace. */
__u64 held_pids[HELD_MAX_PIDS];         /* 64-bit: the compare-and-swap needs it */
__u64 held_unlisted;            /* stops sent while the set was full */

struct held_ctx {
	__u64 pid;
	bool done;
};

static int held_find(__u32 i, void *data)
{
	struct held_ctx *c = data;

	if (held_pids[i & (HELD_MAX_PIDS - 1)] != c->pid)
		return 0;
	c->done = true;
	return 1;
}

static int held_claim(__u32 i, void *data)
{
	struct held_ctx *c = data;

	if (__sync_val_compare_and_swap(&held_pids[i & (HELD_MAX_PIDS - 1)], 0, c->pid) != 0)
		return 0;
	c->done = true;
	return 1;
}

/* Has someone other than us stopped @task's group, or is a stop signal on its way to it? */
static __always_inline bool stopped_by_other(struct task_struct *task)
{
	struct signal_struct *sig = BPF_CORE_READ(task, signal);
	unsigned long pending = 0;

	if (!sig)
		return false;
	bpf_core_read(&pending, sizeof(pending), &sig->shared_pending.signal.sig[0]);
	return (BPF_CORE_READ(sig, flags) & ATF_SIGNAL_STOP_STOPPED) ||
	       BPF_CORE_READ(sig, group_stop_count) || (pending & ATF_STOP_SIGNALS);
}

/*
 * hold_begin - may a hold stop @task, whose tgid in the recorder's namespace is @pid? Yes when
 * it is in the held set already (ours), or when nobody else stops it: then it is added to the
 * set first, and the caller sends SIGSTOP. No when another one stopped it (see above).
 */
static __always_inline bool hold_begin(struct task_struct *task, __u32 pid)
{
	struct held_ctx c = { .pid = pid };

	if (!pid)
		return false;
	bpf_loop(HELD_MAX_PIDS, held_find, &c, 0);
	if (c.done)
		return true;
	if (stopped_by_other(task))
		return false;
	bpf_loop(HELD_MAX_PIDS, held_claim, &c, 0);
	if (!c.done)
		__sync_fetch_and_add(&held_unlisted, 1);
	return true;
}

#endif
