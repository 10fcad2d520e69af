// SPDX-License-Identifier: MIT
/*
 * Detaching from processes that go on running (-p, or a launched target outliving --duration),
 * without leaving a trace in them.
 *
 * A uretprobe hijacks the return-address slot of every traced frame at its entry: the slot holds
 * the kernel's trampoline (the first slot of the [uprobes] page), and the real address is kept
 * in the thread's return instance (current->utask->return_instances). Closing the links does not
 * change that: a frame still open at the detach returns through the trampoline later (the kernel
 * still handles that: the instance carries everything it needs), but a C++ exception thrown
 * through it meets a page without unwind information and the program dies in std::terminate,
 * and every backtrace shows [uprobes] in its place. So, at the end of the recording:
 *
 *  1. rec_detach_freeze(): note the consumers of our function links (the iterator's own_links),
 *     close those links (no uretprobe can become pending any more; the unwind hooks and their
 *     holds stay, so a throw until the freeze is still handled), list the pending instances of
 *     every task (bpf/return_instances.bpf.c, a task iterator) and stop every thread of each
 *     recorded process that has one of ours, with PTRACE_SEIZE + PTRACE_INTERRUPT:
 *     a ptrace stop, unlike SIGSTOP no job-control stop its parent (a shell) would see, and no
 *     SIGCONT handler runs after it (as under any debugger's attach, a blocking epoll_wait
 *     returns EINTR). /proc/PID/task is listed again until a pass finds no new thread.
 *  2. The recorder turns the holds off and drains the ring: fix-ups of holds that began before
 *     the freeze are written (a held thread is in a ptrace stop now, which counts as stopped)
 *     and their SIGCONT sent, so no re-arm record can come after step 3.
 *  3. rec_detach_thaw(): list the instances again and, for each thread, write the real return
 *     address into every slot that still holds the trampoline, with the same compare-and-write
 *     as the holds (rec_unwind_write_slot). Only slots at or above the thread's stack pointer
 *     are live; an instance below it belongs to a frame already gone (longjmp, a throw). Then
 *     PTRACE_DETACH, handing back any signal that arrived during the stop.
 *
 * Only our own instances are put back: one that another tool's return probe would still run at
 * (bpftrace, perf, another atftrace session, even on the same function: the kernel keeps one
 * instance for every consumer of a function) is left alone with its trampoline, else that tool
 * would lose the return for good (see bpf/return_instances.bpf.c for how they are told apart).
 *
 * What the kernel does with the instances left behind (kernel/events/uprobes.c): nothing
 * returns through the trampoline any more, so they are never popped by handle_trampoline; they
 * are dropped like the instances of frames a longjmp skipped: by cleanup_return_instances() at
 * the thread's next uretprobe hit once their stack address is no longer alive (a later return
 * through the trampoline treats them the same way), or by uprobe_free_utask() at thread exit or
 * exec. Each holds a reference on its uprobe until then (the breakpoints are gone: unregister
 * removes them whatever the references). A thread stopped after a `ret` into the trampoline and
 * before it ran has its instance's slot just below its stack pointer: it is left alone, and the
 * trampoline returns to the real address as usual when the thread resumes.
 *
 * x86_64 only, like the holds: on arm64 the return address is in the link register at entry.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "atftrace.h"
#include "probes.h"
#include "proc.h"
#include "recorder_int.h"
#include "return_instances.h"
#include "return_slots.h"

struct frozen_thread {
	pid_t tid;
	int resume_sig;             /* a signal that arrived during the stop, handed back at detach */
};

struct frozen_proc {
	struct rec_process *proc;
	struct frozen_thread *t;
	size_t n, cap;
};

struct rec_detach {
	struct return_slots *rs;    /* the recorder's (rec_detach_prepare) */
	struct frozen_proc *procs;
	size_t nprocs;
	uint64_t stopped_ns;        /* CLOCK_MONOTONIC when the first thread was stopped */
	uint64_t threads, written, changed, skipped, failed;    /* counts for --verbose */
	uint64_t foreign;           /* slots left to another tool's return probe */
};

/* Is instance @s ours alone, so that putting back its return address takes nothing from anyone? */
static bool slot_ours(const struct return_slot *s)
{
	return (s->owner & RET_OWNER_OURS) && !(s->owner & RET_OWNER_FOREIGN);
}

static bool slots_of(const struct return_slot *s, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].pid == pid && slot_ours(&s[i]))
			return true;
	return false;
}

static bool is_frozen(const struct frozen_proc *f, pid_t tid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->t[i].tid == tid)
			return true;
	return false;
}

/*
 * Seize @tid and wait (until @deadline, CLOCK_MONOTONIC ns) until it is in a ptrace stop. 0,
 * -ESRCH if it exited meanwhile, or a negative errno (-EPERM: a debugger traces it;
 * -ETIMEDOUT: it did not stop, and stays seized until it does and the recorder exits, which
 * detaches it).
 */
static int seize_thread(struct rec_process *p, pid_t tid, uint64_t deadline, int *resume_sig)
{
	uint64_t started = clock_mono_ns();
	long pause_ns = 10 * 1000;
	int status;

	*resume_sig = 0;
	/* a zombie leader (it called pthread_exit) reports no stop until the whole group exits */
	if (rec_state_gone(rec_thread_state(p->pid, tid, NULL)))
		return -ESRCH;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return -errno;  /* it is exiting: the seize ends with it */
	for (;;) {
		pid_t w = waitpid(tid, &status, __WALL | WNOHANG);
		siginfo_t si;

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0) {
			if (clock_mono_ns() > deadline)
				return -ETIMEDOUT;
			rec_backoff(started, &pause_ns);
			continue;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (tid == p->pid) {        /* we reaped it: keep its status for the recorder */
				p->reaped = true;
				p->exit_status = status;
			}
			return -ESRCH;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (status >> 16 == PTRACE_EVENT_STOP)
			return 0;       /* our interrupt, or a group stop already under way */
		/*
		 * A signal reached the thread first: it is stopped, with the signal held back. Hand it
		 * back at the detach, unless it is a hold's SIGSTOP (sent by BPF, si_code SI_KERNEL),
		 * which the drain's SIGCONT ends anyway.
		 */
		*resume_sig = WSTOPSIG(status);
		if (*resume_sig == SIGSTOP && !ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) &&
		    si.si_code == SI_KERNEL)
			*resume_sig = 0;
		return 0;
	}
}

static void unfreeze(struct frozen_proc *f)
{
	for (size_t i = 0; i < f->n; i++)
		ptrace(PTRACE_DETACH, f->t[i].tid, NULL, (void *)(long)f->t[i].resume_sig);
	free(f->t);
	f->t = NULL;
	f->n = f->cap = 0;
}

/*
 * Stop every thread of @f->proc; threads made meanwhile are found by the next pass. All the
 * processes share one deadline, so the end of a session is bounded however many there are.
 */
static int freeze_process(struct frozen_proc *f, uint64_t deadline)
{
	pid_t pid = f->proc->pid;
	char path[48];
	bool added;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	do {
		DIR *d = opendir(path);
		struct dirent *de;

		if (!d)
			return -errno;
		added = false;
		while ((de = readdir(d))) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);
			int sig, err;

			if (de->d_name[0] == '.' || *end || tid <= 0 || is_frozen(f, (pid_t)tid))
				continue;
			if (f->n == f->cap) {
				size_t cap = f->cap ? f->cap * 2 : 16;
				struct frozen_thread *nt = realloc(f->t, cap * sizeof(*nt));

				if (!nt) {
					closedir(d);
					return -ENOMEM;
				}
				f->t = nt;
				f->cap = cap;
			}
			err = seize_thread(f->proc, (pid_t)tid, deadline, &sig);
			if (err == -ESRCH)
				continue;
			if (err) {
				closedir(d);
				return err;
			}
			f->t[f->n++] = (struct frozen_thread){ .tid = (pid_t)tid, .resume_sig = sig };
			added = true;
		}
		closedir(d);
	} while (added);
	return 0;
}

/**
 * rec_detach_prepare - load the iterator of pending return instances (once). The recorder calls
 * it at its start when its probes are in its own process too (-a, --follow-fork): libbpf's
 * load calls libc's string functions by the million, and with libc traced every call would
 * hit our own probes (seconds under load). Otherwise it is loaded at the end, if needed.
 */
void rec_detach_prepare(struct recorder *r)
{
#if defined(__x86_64__)
	if (!r->slots && return_slots__open(&r->slots) < 0)
		r->slots = NULL;        /* one line said why; frames open at the end keep the trampoline */
#else
	(void)r;
#endif
}

/**
 * rec_detach_freeze - step 1 of the file comment: detach the function probes, stop the recorded
 * processes that have uretprobes pending. Returns the state for rec_detach_thaw() (NULL when
 * nothing was stopped).
 */
struct rec_detach *rec_detach_freeze(struct recorder *r)
{
	struct return_slot *slots = NULL;
	struct rec_detach *d = NULL;
	uint32_t *link_ids = NULL;
	size_t nslots = 0, nlinks = 0;
	bool live = false;
	int err = 0;

#if defined(__x86_64__)
	for (size_t i = 0; i < r->nprocs && !live; i++)
		live = r->procs[i]->state == REC_PROC_LIVE && proc_alive(r->procs[i]->pid);
#endif
	if (!live) {    /* the usual end: every target exited, nothing to look at */
		probes__detach_functions(r->opts.probes);
		return NULL;
	}
	/* which instances are ours is known only while our links are open */
	rec_detach_prepare(r);
	d = calloc(1, sizeof(*d));
	if (d && !(d->rs = r->slots))
		err = -ENOENT;  /* it could not be loaded at the start: said then */
	if (d && !err && !(err = probes__function_link_ids(r->opts.probes, &link_ids, &nlinks)))
		err = return_slots__own_links(d->rs, link_ids, nlinks);
	free(link_ids);
	probes__detach_functions(r->opts.probes);
	if (!d || err < 0 || (err = return_slots__read(d->rs, &slots, &nslots)) < 0 || !nslots ||
	    !(d->procs = calloc(r->nprocs, sizeof(*d->procs)))) {
		if (err || nslots)
			fprintf(stderr, "atftrace record: cannot look for traced frames still open (%s); a "
				"C++ exception thrown through one later may terminate the program\n",
				strerror(err ? -err : ENOMEM));
		goto none;
	}
	uint64_t deadline = clock_mono_ns() + REC_STOP_WAIT_NS;
	size_t late = 0;

	for (size_t i = 0; i < r->nprocs; i++) {
		struct rec_process *p = r->procs[i];
		struct frozen_proc *f = &d->procs[d->nprocs];

		if (p->state != REC_PROC_LIVE || !slots_of(slots, nslots, p->pid))
			continue;
		if (clock_mono_ns() > deadline) {
			late++;
			continue;
		}
		if (!d->stopped_ns)
			d->stopped_ns = clock_mono_ns();
		f->proc = p;
		err = freeze_process(f, deadline);
		if (err == -ENOENT || err == -ESRCH) {  /* it exited meanwhile */
			unfreeze(f);
			continue;
		}
		if (err) {
			unfreeze(f);
			fprintf(stderr, "atftrace record: process %d: cannot stop it to put back the return "
				"addresses of its traced frames (%s); a C++ exception thrown through one of "
				"them later may terminate it\n", (int)p->pid, strerror(-err));
			continue;
		}
		d->threads += f->n;
		d->nprocs++;
	}
	if (late)
		fprintf(stderr, "atftrace record: %zu process%s not stopped within %llu s to put back "
			"the return addresses of their traced frames; a C++ exception thrown through "
			"one of them later may terminate it\n", late, late == 1 ? " was" : "es were",
			REC_STOP_WAIT_NS / 1000000000ull);
	if (d->nprocs) {
		free(slots);
		return d;
	}
none:
	free(slots);
	if (d) {
		free(d->procs);
		free(d);
	}
	return NULL;
}

/* The stack pointer of stopped thread @tid, or 0 if it cannot be read. */
static uint64_t thread_sp(pid_t tid)
{
#if defined(__x86_64__)
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) == 0)
		return regs.rsp;
#endif
	return 0;
}

/*
 * Put back the real return address in every live slot of @tid that only our instances use
 * (the newest instance first).
 */
static void restore_thread(struct rec_detach *d, pid_t pid, pid_t tid,
			   const struct return_slot *slots, size_t nslots)
{
	uint64_t sp = thread_sp(tid);

	for (size_t i = 0; i < nslots; i++) {
		const struct return_slot *s = &slots[i];
		struct rec_unwind_slot w = { s->addr, s->trampoline, s->orig };
		bool changed, ours = true;
		size_t k;
		int err;

		if (s->tid != tid)
			continue;
		/* a tail call's instances share one slot: the newest holds the address to write,
		 * and the slot is ours only if every one of them is */
		for (k = i; k < nslots && slots[k].tid == tid && slots[k].addr == s->addr; k++)
			ours &= slot_ours(&slots[k]);
		i = k - 1;
		if (!ours) {
			d->foreign++;
			continue;
		}
		if (!sp || s->addr < sp || !s->trampoline || s->orig == s->trampoline) {
			d->skipped++;
			continue;
		}
		err = rec_unwind_write_slot(pid, &w, &changed);
		if (err < 0)
			d->failed++;
		else if (changed)
			d->changed++;   /* put back at a raise, or its frame was unwound since */
		else
			d->written++;
	}
}

/**
 * rec_detach_thaw - step 3 of the file comment: after the last drain, put back the real return
 * addresses and resume every stopped thread; frees @d (NULL is ignored).
 */
void rec_detach_thaw(struct recorder *r, struct rec_detach *d)
{
	struct return_slot *slots = NULL;
	size_t nslots = 0;
	int err;

	if (!d)
		return;
	err = return_slots__read(d->rs, &slots, &nslots);
	for (size_t i = 0; i < d->nprocs; i++) {
		struct frozen_proc *f = &d->procs[i];

		for (size_t k = 0; !err && k < f->n; k++)
			restore_thread(d, f->proc->pid, f->t[k].tid, slots, nslots);
		unfreeze(f);
	}
	if (err)
		fprintf(stderr, "atftrace record: cannot list the pending return probes (%s); a C++ "
			"exception thrown through a frame traced at the detach may terminate the "
			"program\n", strerror(-err));
	else if (d->failed)
		fprintf(stderr, "atftrace record: %llu return addresses could not be put back; a C++ "
			"exception thrown through their frames may terminate the program\n",
			(unsigned long long)d->failed);
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: detach: %llu threads in %zu process%s stopped for "
			"%.3f ms; %llu return addresses put back, %llu slots without the trampoline "
			"left alone, %llu instances below the stack pointer, %llu slots left to other "
			"tools' return probes\n",
			(unsigned long long)d->threads, d->nprocs, d->nprocs == 1 ? "" : "es",
			(double)(clock_mono_ns() - d->stopped_ns) / 1e6,
			(unsigned long long)d->written, (unsigned long long)d->changed,
			(unsigned long long)d->skipped, (unsigned long long)d->foreign);
	free(slots);
	free(d->procs);
	free(d);
}
