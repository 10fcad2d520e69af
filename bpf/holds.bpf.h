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
 * One that someone else stops while we hold it (the stop signal's generation names a held
 * process, and did not come from us) gets HELD_STOPPED_BY_OTHER on its entry: the end of our
 * hold takes it out of the set without a SIGCONT, so it stays stopped until they continue it.
 * Part of bpf/atftrace.bpf.c.
 */
#ifndef ATFTRACE_HOLDS_BPF_H
#define ATFTRACE_HOLDS_BPF_H

#define ATF_SIGNAL_STOP_STOPPED 0x1         /* signal_struct.flags: the group stop is in effect */
/* SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU (19-22) as bits of a sigset's first word */
#define ATF_STOP_SIGNALS        (0xfull << 18)

/* The recorder's host tgid: its registrations are not foreign (reg_guard.bpf.h), nor its
 * signals to a held process (atf_signal_generate). */
const volatile __u32 recorder_tgid = 0;

/* Written by BPF, cleared by the recorder (mmaped .bss): held tgids, recorder's pid namespace. */
__u64 held_pids[HELD_MAX_PIDS];         /* 64-bit: the compare-and-swap needs it */
__u64 held_unlisted;            /* stops not sent: the set was full */

struct held_ctx {
	__u64 pid;
	__u32 seq;              /* the count this stop made: 0 until it is counted */
	bool done;
};

/* The entry of @c->pid: count one more stop in it (a compare-and-swap: BPF on other CPUs may
 * count too, and the recorder takes the entry out only if no stop came since it looked). */
static int held_find(__u32 i, void *data)
{
	struct held_ctx *c = data;
	__u64 *slot = &held_pids[i & (HELD_MAX_PIDS - 1)];

	for (int k = 0; k < 8; k++) {
		__u64 w = *(volatile __u64 *)slot;

		if ((w & HELD_PID_MASK) != c->pid)
			return k ? 1 : 0;       /* taken out meanwhile: claimed anew below */
		if (__sync_val_compare_and_swap(slot, w, w + HELD_SEQ_ONE) == w) {
			c->seq = ((w + HELD_SEQ_ONE) >> HELD_SEQ_SHIFT) & HELD_SEQ_MASK;
			c->done = true;
			return 1;
		}
	}
	c->done = true;         /* held, but never counted: the recorder resumes it after a while */
	return 1;
}

static int held_claim(__u32 i, void *data)
{
	struct held_ctx *c = data;

	if (__sync_val_compare_and_swap(&held_pids[i & (HELD_MAX_PIDS - 1)], 0,
					c->pid | HELD_SEQ_ONE) != 0)
		return 0;
	c->seq = 1;
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
 * set first, and the caller sends SIGSTOP. No when another one stopped it (see above), or
 * when HELD_MAX_PIDS processes are held already (the hold is not done).
 * Returns 0 for no, else the count of this stop (HELD_SEQ_*; HELD_SEQ_MASK + 1 when it could
 * not be counted): the caller's record carries it as hold_seq.
 */
static __always_inline __u32 hold_begin(struct task_struct *task, __u32 pid)
{
	struct held_ctx c = { .pid = pid };

	if (!pid)
		return 0;
	bpf_loop(HELD_MAX_PIDS, held_find, &c, 0);
	if (c.done)
		return c.seq ? c.seq : HELD_SEQ_MASK + 1;
	if (stopped_by_other(task))
		return 0;
	bpf_loop(HELD_MAX_PIDS, held_claim, &c, 0);
	if (!c.done) {
		/* nobody would continue a process that is not in the set: not stopped at all */
		__sync_fetch_and_add(&held_unlisted, 1);
		return 0;
	}
	/*
	 * A stop that someone else sends between the look above and the claim is taken for ours
	 * (a look again after the claim cannot tell theirs from the stop of another hold of ours
	 * on another CPU that found our claim): a window of a few instructions.
	 */
	return c.seq;
}

#define ATF_SIGCONT     18
#define ATF_SI_KERNEL   0x80

struct held_mark_ctx {
	__u64 pid;
	bool stopped;           /* set HELD_STOPPED_BY_OTHER, or (a SIGCONT) clear it */
};

static int held_mark(__u32 i, void *data)
{
	struct held_mark_ctx *c = data;
	__u64 *slot = &held_pids[i & (HELD_MAX_PIDS - 1)];

	if ((*slot & HELD_PID_MASK) != c->pid)
		return 0;
	if (c->stopped)
		__sync_fetch_and_or(slot, HELD_STOPPED_BY_OTHER);
	else
		__sync_fetch_and_and(slot, ~HELD_STOPPED_BY_OTHER);
	return 1;
}

/*
 * Someone else stops (or continues) a process while we hold it. Our own stops are
 * bpf_send_signal_task()'s (a siginfo with SI_KERNEL) or bpf_send_signal_thread()'s
 * (SEND_SIG_PRIV, sent by the process to itself); kill(), tgkill() (raise() too) and a
 * terminal's job control (SEND_SIG_PRIV, from the terminal's side) are not. A SIGTSTP, SIGTTIN
 * or SIGTTOU stops only with its default action; a signal the kernel ignores changes nothing.
 */
SEC("?tp_btf/signal_generate")
int BPF_PROG(atf_signal_generate, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	struct held_mark_ctx c = { .stopped = sig != ATF_SIGCONT };
	struct sighand_struct *sh;
	unsigned long handler = 0;
	int code = 0;

	if (sig != ATF_SIGCONT && !(sig >= 19 && sig <= 22))
		return 0;
	if (result == 1)                /* TRACE_SIGNAL_IGNORED */
		return 0;
	if ((unsigned long)info == 1 && task->tgid == (bpf_get_current_pid_tgid() >> 32))
		return 0;               /* ours, sent by the process to itself */
	if (bpf_get_current_pid_tgid() >> 32 == recorder_tgid)
		return 0;               /* ours: the recorder's (record_holds.c) */
	if ((unsigned long)info > 1 &&
	    !bpf_probe_read_kernel(&code, sizeof(code), &info->si_code) && code == ATF_SI_KERNEL)
		return 0;               /* ours (or another program's) */
	if (sig > 19) {
		sh = BPF_CORE_READ(task, sighand);
		if (!sh || bpf_probe_read_kernel(&handler, sizeof(handler),
						 &sh->action[(sig - 1) & 63].sa.sa_handler) || handler)
			return 0;
	}
	c.pid = task_pid_tgid(task) >> 32;
	if (!c.pid)
		return 0;
	bpf_loop(HELD_MAX_PIDS, held_mark, &c, 0);
	return 0;
}

#endif
