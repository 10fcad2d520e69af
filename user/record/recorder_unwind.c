// SPDX-License-Identifier: MIT
/*
 * C++ exceptions through uretprobed frames: the recorder's half (the BPF half and the reasons
 * are in bpf/cxx_unwind.bpf.h, "C++ exceptions and uretprobes").
 *
 * A REC_UNWIND_FIXUP record means: thread TID of process PID raised (or caught) an exception
 * while uretprobes were pending, and BPF sent it SIGSTOP. SIGSTOP stops the whole thread group,
 * so the process is "held". Here we wait until that thread is stopped, write each listed stack
 * slot that still holds the expected value (process_vm_writev), and leave the process stopped;
 * rec_unwind_resume() sends SIGCONT after the ring drain that handled the record.
 *
 * Why resume only after the drain, and why wait for the other threads: a SIGCONT discards every
 * pending stop signal of the process. If thread B raised while A's fix-up was being written, B's
 * SIGSTOP would be lost and B would unwind through a trampoline. So on the first fix-up of a
 * process we also wait until none of its threads is running ('R'): the group stop is under way
 * (A is stopped), so a thread that is not running has either stopped or cannot return to user
 * space before the SIGCONT, and a thread still inside the BPF hook is running. After that wait
 * every fix-up record of the process is in the ring, and the drain (which reads until the ring
 * is empty) handles them all before rec_unwind_resume() runs.
 *
 * Waiting polls /proc/PID/task/TID/stat with a short backoff, at most REC_STOP_WAIT_NS; a
 * thread that does not stop in time (e.g. a debugger swallowed the SIGSTOP) gets one error line
 * and is resumed without its writes (its exception may then terminate the program). A process
 * that dies while held has nothing left to write; SIGCONT to it fails with ESRCH, ignored.
 * The parent of a launched target is the recorder, whose waitpid() does not ask for stops
 * (no WUNTRACED/WCONTINUED) and whose pidfd only reports exit, so neither sees the hold. A -p
 * target's job-control shell may print "Stopped" / "Continued" (see README).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "atftrace.h"
#include "recorder_int.h"

#define UNWIND_SPIN_NS      (200ull * 1000)

struct rec_unwind {
	pid_t *held;                /* processes stopped by a fix-up, SIGCONT after this drain */
	size_t nheld, cap;
	uint64_t fixups;            /* records handled */
	uint64_t slots_written;
	uint64_t slots_changed;     /* slot no longer held the expected value: left alone */
	uint64_t failures;          /* thread never stopped, or a write failed */
	bool truncated_reported;
	bool write_error_reported;
};

/**
 * rec_thread_state - scheduler state letter of a thread ('R', 'S', 'T', ...), or 0 if it is gone;
 * with @nthreads, also the number of threads in its process (field 20).
 */
char rec_thread_state(pid_t pid, pid_t tid, long *nthreads)
{
	char path[64], buf[512];
	const char *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "tid (comm) S ...": comm may hold spaces and parentheses, the last ')' ends it */
	rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ' || !rp[2])
		return 0;
	if (nthreads) {
		const char *f = rp + 2;     /* field 3, the state */

		for (int i = 3; i < 20 && f; i++)
			f = (f = strchr(f, ' ')) ? f + 1 : NULL;
		*nthreads = f ? strtol(f, NULL, 10) : 0;
	}
	return rp[2];
}

static bool state_stopped(char s)
{
	return s == 'T' || s == 't';
}

/** rec_state_gone - is a thread in state @s (rec_thread_state) gone, or going? */
bool rec_state_gone(char s)
{
	return s == 0 || s == 'Z' || s == 'X' || s == 'x';
}

/**
 * rec_backoff - pause before the next poll for a stop that began at @started_ns. A stop lands
 * within microseconds, while even a 10 us nanosleep takes about 60 us (timer slack), twice per
 * throw: so yield first, for up to UNWIND_SPIN_NS, then sleep 10 us doubling up to 1 ms.
 * *@pause_ns starts at 10 us.
 */
void rec_backoff(uint64_t started_ns, long *pause_ns)
{
	struct timespec ts = { 0, *pause_ns };

	if (clock_mono_ns() - started_ns < UNWIND_SPIN_NS) {
		sched_yield();
		return;
	}
	nanosleep(&ts, NULL);
	if (*pause_ns < 1000 * 1000)
		*pause_ns *= 2;
}

/*
 * 0 once @tid is stopped, -ESRCH if it is gone, -ETIMEDOUT if it did not stop in time.
 * *@nthreads: threads in the process then (0 if unknown).
 */
static int wait_thread_stopped(pid_t pid, pid_t tid, long *nthreads)
{
	uint64_t started = clock_mono_ns(), deadline = started + REC_STOP_WAIT_NS;
	long pause_ns = 10 * 1000;

	for (;;) {
		char s = rec_thread_state(pid, tid, nthreads);

		if (state_stopped(s))
			return 0;
		if (rec_state_gone(s))
			return -ESRCH;
		if (clock_mono_ns() > deadline)
			return -ETIMEDOUT;
		rec_backoff(started, &pause_ns);
	}
}

/* True when no thread of @pid is running; threads that vanish while we look do not count. */
static bool none_running(pid_t pid)
{
	char path[48];
	struct dirent *de;
	bool quiet = true;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return true;    /* the process is gone: nothing of it runs */
	while (quiet && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (de->d_name[0] == '.' || *end || tid <= 0)
			continue;
		if (rec_thread_state(pid, (pid_t)tid, NULL) == 'R')
			quiet = false;
	}
	closedir(d);
	return quiet;
}

/* Wait (bounded) until every thread of @pid has joined the group stop or sleeps in the kernel. */
static void wait_group_quiet(pid_t pid)
{
	uint64_t started = clock_mono_ns(), deadline = started + REC_STOP_WAIT_NS;
	long pause_ns = 10 * 1000;

	while (!none_running(pid) && clock_mono_ns() <= deadline)
		rec_backoff(started, &pause_ns);
}

static bool is_held(const struct rec_unwind *u, pid_t pid)
{
	for (size_t i = 0; i < u->nheld; i++)
		if (u->held[i] == pid)
			return true;
	return false;
}

/* Remember @pid for rec_unwind_resume(); if that fails, resume it at once (never leave it). */
static void hold(struct recorder *r, struct rec_unwind *u, pid_t pid)
{
	if (is_held(u, pid))
		return;
	if (u->nheld == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 8;
		pid_t *n = realloc(u->held, cap * sizeof(*n));

		if (!n) {
			rec_holds_resume(r, pid);
			return;
		}
		u->held = n;
		u->cap = cap;
	}
	u->held[u->nheld++] = pid;
}

static struct rec_unwind *unwind_state(struct recorder *r)
{
	if (!r->unwind)
		r->unwind = calloc(1, sizeof(*r->unwind));
	return r->unwind;
}

/**
 * rec_hold - process @pid was stopped by a BPF hold (SIGSTOP): resume it after this drain,
 * with the processes the C++ unwind fix-ups hold, so that one SIGCONT follows every write.
 */
void rec_hold(struct recorder *r, pid_t pid)
{
	struct rec_unwind *u = unwind_state(r);

	if (!u) {               /* no memory to track it: never leave a process stopped */
		rec_holds_resume(r, pid);
		return;
	}
	hold(r, u, pid);
}

/**
 * rec_hold_wait - wait until thread @tid of held process @pid is stopped and no other thread
 * of it runs (see the file comment). 0, -ESRCH when it is gone, -ETIMEDOUT.
 */
int rec_hold_wait(pid_t pid, pid_t tid)
{
	long nthreads = 0;
	int err = wait_thread_stopped(pid, tid, &nthreads);

	if (!err && nthreads != 1)      /* alone, the stopped thread is the whole group */
		wait_group_quiet(pid);
	return err;
}

/**
 * rec_unwind_write_slot - compare-and-write of one return-address slot of process @pid: @s->value
 * is written only if the slot still holds @s->expect (*@changed says it did not). The caller has
 * the thread stopped, so nothing races with us. 0, or a negative errno.
 */
int rec_unwind_write_slot(pid_t pid, const struct rec_unwind_slot *s, bool *changed)
{
	uint64_t now = 0, value = s->value;
	struct iovec local = { &now, sizeof(now) };
	struct iovec remote = { (void *)(uintptr_t)s->addr, sizeof(now) };

	*changed = false;
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(now))
		return -errno;
	if (now != s->expect) {
		*changed = true;
		return 0;
	}
	local.iov_base = &value;
	if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(value))
		return -errno;
	return 0;
}

/**
 * rec_unwind_on_fixup - handle one REC_UNWIND_FIXUP record (see the file comment). The process
 * stays stopped until rec_unwind_resume().
 */
void rec_unwind_on_fixup(struct recorder *r, const void *data, size_t size)
{
	const size_t head = offsetof(struct rec_unwind_fixup, pairs);
	struct rec_unwind_fixup fx;
	struct rec_unwind *u = unwind_state(r);
	pid_t pid;
	int err;

	if (size < head) {
		r->st.bad_records++;
		return;
	}
	memcpy(&fx, data, head);
	pid = (pid_t)fx.pid;
	if (pid <= 0) {
		r->st.bad_records++;
		return;
	}
	if (!u) {               /* no memory to track it: never leave a process stopped */
		rec_holds_resume(r, pid);
		return;
	}
	/* Whatever else is wrong with the record, BPF stopped this process: it must be resumed. */
	rec_holds_seen(r, pid, fx.hold_seq);
	hold(r, u, pid);
	if (fx.count > REC_UNWIND_MAX_SLOTS || size < head + fx.count * sizeof(fx.pairs[0])) {
		r->st.bad_records++;
		return;
	}
	memcpy(fx.pairs, (const uint8_t *)data + head, fx.count * sizeof(fx.pairs[0]));
	u->fixups++;
	err = rec_hold_wait(pid, (pid_t)fx.tid);
	if (err == -ESRCH)
		return;         /* died while held: nothing left to fix */
	if (err) {
		u->failures++;
		fprintf(stderr, "atftrace record: process %d thread %u did not stop for a C++ unwind "
			"fix-up within %llu s; resuming it unchanged (its exception may terminate it)\n",
			(int)pid, fx.tid, REC_STOP_WAIT_NS / 1000000000ull);
		return;
	}
	if ((fx.flags & REC_UNWIND_F_TRUNCATED) && !u->truncated_reported) {
		u->truncated_reported = true;
		fprintf(stderr, "atftrace record: process %d thread %u has more than %d return "
			"addresses to fix (pending return probes, frames entered through call-site stubs); "
			"an exception thrown through the outer ones may terminate it\n", (int)pid,
			fx.tid, REC_UNWIND_MAX_SLOTS);
	}
	for (uint32_t i = 0; i < fx.count; i++) {
		bool changed;

		err = rec_unwind_write_slot(pid, &fx.pairs[i], &changed);
		if (err == -ESRCH)
			return;
		if (err < 0) {
			u->failures++;
			if (!u->write_error_reported) {
				u->write_error_reported = true;
				fprintf(stderr, "atftrace record: process %d: cannot write its stack at 0x%llx "
					"for a C++ unwind fix-up: %s\n", (int)pid,
					(unsigned long long)fx.pairs[i].addr, strerror(-err));
			}
			continue;
		}
		if (changed)
			u->slots_changed++;
		else
			u->slots_written++;
	}
}

/**
 * rec_unwind_resume - SIGCONT every process held by a fix-up since the last call (those a hold
 * of ours stopped: rec_holds_resume). Called after each ring drain, so all fix-ups of a held
 * process are written first.
 */
void rec_unwind_resume(struct recorder *r)
{
	struct rec_unwind *u = r->unwind;

	if (!u)
		return;
	for (size_t i = 0; i < u->nheld; i++)
		rec_holds_resume(r, u->held[i]);
	u->nheld = 0;
}

bool rec_unwind_holding(const struct recorder *r)
{
	return r->unwind && r->unwind->nheld;
}

/**
 * rec_unwind_stop_holds - before the recorder's last drain: BPF stops no thread after this, so
 * that drain sees (and resumes) every held process.
 */
void rec_unwind_stop_holds(struct recorder *r)
{
	if (probes__stop_unwind_holds(r->opts.probes) < 0)
		fprintf(stderr, "atftrace record: a C++ unwind hook did not finish within 1 s; a traced "
			"thread may stay stopped (resume it with kill -CONT)\n");
}

/** rec_unwind_free - resume anything still held, report counts with --verbose, release. */
void rec_unwind_free(struct recorder *r)
{
	struct rec_unwind *u = r->unwind;

	if (!u)
		return;
	rec_unwind_resume(r);
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: C++ unwind fix-ups: %llu (%llu stack slots written, "
			"%llu changed meanwhile, %llu failed)\n", (unsigned long long)u->fixups,
			(unsigned long long)u->slots_written, (unsigned long long)u->slots_changed,
			(unsigned long long)u->failures);
	free(u->held);
	free(u);
	r->unwind = NULL;
}
