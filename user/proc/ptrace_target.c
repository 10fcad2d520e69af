// SPDX-License-Identifier: MIT
/*
 * A traced process held still with ptrace (include/ptrace_target.h).
 *
 * Stopping: every thread in /proc/PID/task is seized (PTRACE_SEIZE: no signal is sent) and
 * interrupted; once all are stopped none can start another, so the task list is read again
 * until it has nothing new. A thread may first report a signal it was about to take: it is
 * stopped then too, and the signal goes back to it at detach, so none is lost.
 *
 * Waiting never reaps what is not ours to reap: a stop is peeked with WNOWAIT before it is
 * taken, and the exit of our own launched child is left for the recorder (which reaps it and
 * reports its status). The exit of a thread we trace but did not start is taken, which hands
 * it back to its real parent.
 *
 * Syscalls run in the target by pointing a stopped thread at a `syscall` instruction that is
 * already in its memory (the vDSO has one) and single-stepping it: no byte of its text changes.
 * All registers, orig_rax included, are put back afterwards, so a syscall the thread was in
 * restarts as the kernel would have restarted it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "ptrace_target.h"


/* Wait for @tid's next stop: its wait status, or -ESRCH when it exited instead. */
static int wait_stop(struct pt_target *t, pid_t tid)
{
	for (;;) {
		siginfo_t si;
		int st;

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)tid, &si, WEXITED | WSTOPPED | __WALL | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (si.si_code == CLD_TRAPPED || si.si_code == CLD_STOPPED) {
			if (waitpid(tid, &st, __WALL) < 0)
				return -errno;
			if (WIFSTOPPED(st))
				return st;
			return -ESRCH;
		}
		if (!(t->own_child && tid == t->pid))
			waitpid(tid, &st, __WALL | WNOHANG);
		return -ESRCH;
	}
}

static int open_mem(struct pt_target *t)
{
	char path[64];

	if (t->mem_fd >= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->pid);
	t->mem_fd = open(path, O_RDWR | O_CLOEXEC);
	return t->mem_fd < 0 ? -errno : 0;
}

int pt_read(struct pt_target *t, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(t->mem_fd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

int pt_write(struct pt_target *t, uint64_t addr, const void *buf, size_t len)
{
	ssize_t n = pwrite(t->mem_fd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

static struct pt_thread *find_thread(struct pt_target *t, pid_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	return NULL;
}

static struct pt_thread *add_thread(struct pt_target *t, pid_t tid)
{
	if (t->nthreads == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct pt_thread *n = realloc(t->threads, cap * sizeof(*n));

		if (!n)
			return NULL;
		t->threads = n;
		t->cap = cap;
	}
	memset(&t->threads[t->nthreads], 0, sizeof(t->threads[0]));
	t->threads[t->nthreads].tid = tid;
	return &t->threads[t->nthreads++];
}

static void drop_thread(struct pt_target *t, struct pt_thread *th)
{
	*th = t->threads[--t->nthreads];
}

/* A seized thread's first stop: an interrupt (event stop) or a signal it was about to take. */
static int take_stop(struct pt_target *t, struct pt_thread *th)
{
	int st = wait_stop(t, th->tid);

	if (st < 0)
		return st;
	if (st >> 16 == 0 && WSTOPSIG(st) != SIGTRAP)
		th->pending_sig = WSTOPSIG(st);     /* signal-delivery-stop: give it back later */
	else if (st >> 16 == 0 && WSTOPSIG(st) == SIGTRAP)
		th->pending_sig = SIGTRAP;
	if (ptrace(PTRACE_GETREGS, th->tid, NULL, &th->regs) < 0)
		return -errno;
	return 0;
}

/* Seize and stop every thread not yet held; returns how many were new, or -errno. */
static int stop_new_threads(struct pt_target *t)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int added = 0, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		struct pt_thread *th;

		if (tid <= 0 || find_thread(t, tid))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACEEXEC) < 0) {
			if (errno == ESRCH)
				continue;           /* it exited meanwhile */
			err = -errno;
			break;
		}
		th = add_thread(t, tid);
		if (!th) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			err = -ENOMEM;
			break;
		}
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 || take_stop(t, th) < 0) {
			/* gone meanwhile: the thread or the whole process */
			drop_thread(t, th);
			continue;
		}
		added++;
	}
	closedir(d);
	return err ? err : added;
}

int pt_stop_all(struct pt_target *t, pid_t pid, bool own_child)
{
	int n, err;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->own_child = own_child;
	t->mem_fd = -1;
	err = open_mem(t);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	do
		n = stop_new_threads(t);
	while (n > 0);
	if (n < 0 || t->nthreads == 0) {
		pt_detach_all(t);
		return n < 0 ? n : -ESRCH;
	}
	return 0;
}

/*
 * A thread that cannot be detached is dying (killed while stopped: nothing else takes a
 * thread out of a ptrace stop). Wait for its exit so it is not left a zombie traced by us,
 * which would keep its whole process from ending; the exit of our own child is left for the
 * recorder to reap.
 */
static void detach_one(struct pt_target *t, struct pt_thread *th)
{
	int sig = th->pending_sig == SIGTRAP ? 0 : th->pending_sig;
	siginfo_t si;

	if (ptrace(PTRACE_DETACH, th->tid, NULL, (void *)(long)sig) == 0 || errno != ESRCH)
		return;
	while (waitid(P_PID, (id_t)th->tid, &si, WEXITED | __WALL |
		      (t->own_child && th->tid == t->pid ? WNOWAIT : 0)) < 0 && errno == EINTR)
		;
}

void pt_detach_all(struct pt_target *t)
{
	/* the leader last: its exit is reported only once every other thread is gone */
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid != t->pid)
			detach_one(t, &t->threads[i]);
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == t->pid)
			detach_one(t, &t->threads[i]);
	free(t->threads);
	t->threads = NULL;
	t->nthreads = t->cap = 0;
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	t->mem_fd = -1;
}

int pt_seize_child(pid_t pid)
{
	return ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)PTRACE_O_TRACEEXEC) < 0 ? -errno : 0;
}

/* AT_ENTRY from /proc/PID/auxv. */
static int read_entry(pid_t pid, uint64_t *entry)
{
	char path[64];
	Elf64_auxv_t av[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, av, sizeof(av));
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(av[0]); i++) {
		if (av[i].a_type == AT_ENTRY) {
			*entry = av[i].a_un.a_val;
			return 0;
		}
	}
	return -ENOENT;
}

static int set_debugreg(pid_t tid, int n, uint64_t v)
{
	size_t off = offsetof(struct user, u_debugreg) + (size_t)n * sizeof(long);

	return ptrace(PTRACE_POKEUSER, tid, (void *)off, (void *)v) < 0 ? -errno : 0;
}

/*
 * The launched child parked at its entry by pt_park_at_entry(), which pt_run_to_entry() then
 * holds there (pid 0: none). One launched child per recorder.
 */
static struct {
	pid_t pid;
	uint64_t entry;
} parked;

/* @tid's next stop as wait_stop(), @idle(@ctx) run while there is none (NULL: block). */
static int next_stop(struct pt_target *t, pid_t tid, pt_idle_fn idle, void *ctx)
{
	for (;;) {
		siginfo_t si;

		if (!idle)
			return wait_stop(t, tid);
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)tid, &si, WEXITED | WSTOPPED | __WALL | WNOWAIT | WNOHANG) < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECHILD ? -ESRCH : -errno;  /* the recorder reaped it */
		}
		if (si.si_pid)
			return wait_stop(t, tid);
		idle(ctx);
	}
}

/* Is a SIGCONT pending for @pid (for the process, or for its main thread)? */
static bool sigcont_pending(pid_t pid)
{
	char path[64], line[256];
	bool pending = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!pending && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "SigPnd:", 7) && strncmp(line, "ShdPnd:", 7))
			continue;
		pending = strtoull(line + 7, NULL, 16) >> (SIGCONT - 1) & 1;
	}
	fclose(f);
	return pending;
}

/*
 * Our child took a SIGSTOP on its way to the entry (in its signal-delivery-stop now): a hold
 * (the recorder attaches what it mapped, then sends SIGCONT), or anyone's. It stays stopped, as
 * the SIGSTOP would have kept it, until a SIGCONT is pending, while @idle(@ctx) drains the ring.
 * Delivering the SIGSTOP instead would end in a group-stop that only PTRACE_CONT ends: the
 * child would run on before the recorder attached the probes it was held for.
 */
static int stay_stopped(pid_t pid, pt_idle_fn idle, void *ctx)
{
	for (;;) {
		siginfo_t si;

		if (sigcont_pending(pid))
			return 0;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | __WALL | WNOWAIT | WNOHANG) < 0) {
			if (errno != EINTR)
				return errno == ECHILD ? -ESRCH : -errno;
		} else if (si.si_pid) {
			return -ESRCH;      /* killed while stopped: the recorder reaps it */
		}
		idle(ctx);
	}
}

/* Wait for the seized child's exec and run it to its entry (*@entry), where it stays stopped. */
static int run_to_entry(pid_t pid, pt_idle_fn idle, void *ctx, uint64_t *entry)
{
	struct pt_target t = { .pid = pid, .own_child = true, .mem_fd = -1 };
	int st, err, sig;

	st = next_stop(&t, pid, idle, ctx);
	if (st < 0)
		return st;
	if (st >> 8 != (SIGTRAP | PTRACE_EVENT_EXEC << 8)) {
		ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)(st >> 16 ? 0 : WSTOPSIG(st)));
		return -EPROTO;
	}
	/* DR0 = entry, execute; DR7 bit 0 enables it locally. No text is touched. */
	err = read_entry(pid, entry);
	if (!err)
		err = set_debugreg(pid, 0, *entry);
	if (!err)
		err = set_debugreg(pid, 7, 1);
	if (err) {
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return err;
	}
	if (ptrace(PTRACE_CONT, pid, NULL, NULL) < 0)
		return -errno;
	for (;;) {
		st = next_stop(&t, pid, idle, ctx);
		if (st < 0)
			return st;
		if (st >> 16 == 0 && WSTOPSIG(st) == SIGTRAP)
			break;
		/* a signal on the way (or another event): deliver it and go on to the entry; a
		 * SIGSTOP, while the ring is drained, as it would: stopped until a SIGCONT */
		sig = st >> 16 ? 0 : WSTOPSIG(st);
		if (sig == SIGSTOP && idle) {
			err = stay_stopped(pid, idle, ctx);
			if (err)
				return err;
			sig = 0;
		}
		if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig) < 0)
			return -errno;
	}
	set_debugreg(pid, 7, 0);
	return 0;
}

int pt_park_at_entry(pid_t pid, pt_idle_fn idle, void *ctx)
{
	uint64_t entry;
	int err = run_to_entry(pid, idle, ctx, &entry);

	if (!err)
		parked = (typeof(parked)){ .pid = pid, .entry = entry };
	return err;
}

int pt_run_to_entry(struct pt_target *t, pid_t pid)
{
	uint64_t entry;
	int err;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->own_child = true;
	t->mem_fd = -1;
	if (parked.pid == pid) {
		entry = parked.entry;
		parked.pid = 0;
		err = 0;
	} else {
		err = run_to_entry(pid, NULL, NULL, &entry);
	}
	if (err)
		return err;
	err = open_mem(t);
	if (!err) {
		struct pt_thread *th = add_thread(t, pid);

		err = th ? 0 : -ENOMEM;
		if (th && ptrace(PTRACE_GETREGS, pid, NULL, &th->regs) < 0)
			err = -errno;
		if (!err && th->regs.rip != entry)
			err = -EPROTO;
	}
	/* threads the loader's constructors may have started */
	while (!err && (err = stop_new_threads(t)) > 0)
		;
	if (err < 0) {
		pt_detach_all(t);
		return err;
	}
	return 0;
}

/* Find the bytes 0f 05 in an executable mapping, the vDSO first. */
static int find_syscall_insn(struct pt_target *t)
{
	char path[64], line[512];
	uint8_t buf[8192];
	FILE *f;

	if (t->syscall_insn)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	for (int pass = 0; pass < 2 && !t->syscall_insn; pass++) {
		f = fopen(path, "re");
		if (!f)
			return -errno;
		while (!t->syscall_insn && fgets(line, sizeof(line), f)) {
			unsigned long lo, hi;
			char perms[5];

			if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || perms[2] != 'x')
				continue;
			if ((pass == 0) != (strstr(line, "[vdso]") != NULL))
				continue;
			for (uint64_t a = lo; a < hi && !t->syscall_insn; a += sizeof(buf) - 1) {
				size_t n = hi - a < sizeof(buf) ? hi - a : sizeof(buf);

				if (pt_read(t, a, buf, n))
					break;
				for (size_t i = 0; i + 1 < n; i++)
					if (buf[i] == 0x0f && buf[i + 1] == 0x05) {
						t->syscall_insn = a + i;
						break;
					}
			}
		}
		fclose(f);
	}
	return t->syscall_insn ? 0 : -ENOENT;
}

/* Run one instruction of @th: the stop status after it (its registers in *@r), or -errno. */
static int step_one(struct pt_target *t, struct pt_thread *th, struct user_regs_struct *r)
{
	int st;

	if (ptrace(PTRACE_SINGLESTEP, th->tid, NULL, NULL) < 0)
		return -errno;
	st = wait_stop(t, th->tid);
	if (st < 0)
		return st;
	if (ptrace(PTRACE_GETREGS, th->tid, NULL, r) < 0)
		return -errno;
	return st;
}

int pt_syscall(struct pt_target *t, long nr, const uint64_t args[6], int64_t *ret)
{
	struct pt_thread *th = t->nthreads ? &t->threads[0] : NULL;
	struct user_regs_struct r;
	int st, err;

	if (!th)
		return -ESRCH;
	err = find_syscall_insn(t);
	if (err)
		return err;
	r = th->regs;
	r.rip = t->syscall_insn;
	r.rax = (unsigned long long)nr;
	r.orig_rax = (unsigned long long)-1;    /* not in a syscall: nothing to restart first */
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.r10 = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	if (ptrace(PTRACE_SETREGS, th->tid, NULL, &r) < 0)
		return -errno;
	for (int tries = 0;; tries++) {
		bool sig_stop, again;

		st = step_one(t, th, &r);
		if (st < 0)
			return st;
		if (WSTOPSIG(st) == SIGTRAP && r.rip == t->syscall_insn + 2)
			break;
		/*
		 * Stopped before the syscall ran: by a signal it dequeued (the SIGSTOP of a hold
		 * that had not reached it yet), kept for the detach and the step tried again when
		 * it is the one it holds already; or by the group stop that signal began.
		 */
		sig_stop = st >> 16 == 0 && WSTOPSIG(st) != SIGTRAP;
		again = r.rip == t->syscall_insn && tries < 8 &&
			(st >> 16 == PTRACE_EVENT_STOP ||
			 (sig_stop && (!th->pending_sig || th->pending_sig == SIGTRAP ||
				       th->pending_sig == WSTOPSIG(st))));
		if (sig_stop && (again || !th->pending_sig))
			th->pending_sig = WSTOPSIG(st);
		if (!again) {
			/* another signal came first: keep it for the detach; the syscall did not run */
			ptrace(PTRACE_SETREGS, th->tid, NULL, &th->regs);
			return -EAGAIN;
		}
	}
	*ret = (int64_t)r.rax;
	if (ptrace(PTRACE_SETREGS, th->tid, NULL, &th->regs) < 0)
		return -errno;
	return 0;
}


/* Is @ip strictly inside one of @ranges? */
static bool ip_inside(uint64_t ip, const uint64_t (*ranges)[2], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ip >= ranges[i][0] && ip < ranges[i][1])
			return true;
	return false;
}

int pt_step_out(struct pt_target *t, const uint64_t (*ranges)[2], size_t n, int max_steps)
{
	int moved = 0;

	for (size_t k = 0; k < t->nthreads; k++) {
		struct pt_thread *th = &t->threads[k];

		/* a thread that stopped with a signal to take keeps it: it is not stepped */
		for (int s = 0; s < max_steps && !th->pending_sig &&
				ip_inside(th->regs.rip, ranges, n); s++) {
			struct user_regs_struct r;
			int st = step_one(t, th, &r);

			if (st < 0)
				return st;
			th->regs = r;
			if (WSTOPSIG(st) != SIGTRAP || st >> 16) {
				/* another signal came: keep it for the detach, step no further */
				if (st >> 16 == 0 && WSTOPSIG(st) != SIGTRAP)
					th->pending_sig = WSTOPSIG(st);
				break;
			}
			moved += !ip_inside(r.rip, ranges, n);
		}
	}
	return moved;
}
