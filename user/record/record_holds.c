// SPDX-License-Identifier: MIT
/*
 * Who resumes a held process. Every hold stops a process with SIGSTOP from BPF (C++ unwind
 * fix-ups, exec and dlopen, the registration guard, a fork on trampolines) and puts it in the
 * held set first (bpf/holds.bpf.h), unless someone else stopped it; the recorder resumes
 * after its drain. Two rules keep that honest:
 *
 *  - SIGCONT goes only to a process in the held set, which rec_holds_resume() takes out first:
 *    a process the user stopped (kill -STOP, job control) before a hold is never continued by
 *    us, whichever hold's record names it; nor is one they stopped during it (BPF marks its
 *    entry HELD_STOPPED_BY_OTHER: it leaves the set without a SIGCONT).
 *  - A dead recorder leaves nothing stopped: at recorder__new(), before any program can hold
 *    anything, a watchdog is forked. It keeps the held set mapped (the probes' .bss, shared
 *    with the recorder and BPF) and a pidfd of the recorder, closes every other descriptor
 *    (so the links die with the recorder), and sleeps in poll(). When the recorder exits, by
 *    kill -9 too, it sends SIGCONT to each process still in the set, and exits itself. After a
 *    normal end the set is empty and it just exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "atftrace.h"
#include "probes.h"
#include "recorder_int.h"

/* In the watchdog: wait for the recorder (@pidfd) to end, resume what it held, exit. */
static void __attribute__((noreturn)) watchdog_run(int pidfd, uint64_t *held, size_t n)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	int null = open("/dev/null", O_RDWR);

	prctl(PR_SET_NAME, "atftrace-watch");
	/* not ended with the recorder's process group (a terminal's Ctrl-C), nor by its end */
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	if (dup2(pidfd, 3) < 0)
		_exit(1);
	syscall(SYS_close_range, 4u, ~0u, 0u);     /* the links must close with the recorder */
	pfd.fd = 3;
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	for (size_t i = 0; i < n; i++) {
		uint64_t pid = __atomic_exchange_n(&held[i], 0, __ATOMIC_ACQ_REL);

		if (pid && !(pid & HELD_STOPPED_BY_OTHER))
			kill((pid_t)pid, SIGCONT);
	}
	_exit(0);
}

int rec_holds_start(struct recorder *r)
{
	size_t n;
	uint64_t *held = probes__held_pids(r->opts.probes, &n);
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	pid_t pid;

	int err = probes__watch_stops(r->opts.probes);

	if (err && r->opts.verbose)
		fprintf(stderr, "atftrace record: cannot watch for stops of held processes (%s): one "
			"that someone else stops while we hold it is continued at our hold's end\n",
			strerror(-err));
	if (pidfd < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pidfd);
		return err;
	}
	if (pid == 0)
		watchdog_run(pidfd, held, n);
	close(pidfd);
	r->watchdog = pid;
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: watchdog %d resumes the processes we hold if the "
			"recorder dies\n", (int)pid);
	return 0;
}

bool rec_holds_ours(struct recorder *r, pid_t pid)
{
	size_t n;
	uint64_t *held = probes__held_pids(r->opts.probes, &n);

	for (size_t i = 0; i < n; i++)
		if ((__atomic_load_n(&held[i], __ATOMIC_ACQUIRE) & ~HELD_STOPPED_BY_OTHER) ==
		    (uint64_t)pid)
			return true;
	return false;
}

void rec_holds_resume(struct recorder *r, pid_t pid)
{
	size_t n;
	uint64_t *held = probes__held_pids(r->opts.probes, &n);
	bool ours = false, theirs = false;

	/* out of the set first: a hold that stops it again from now on adds it again */
	for (size_t i = 0; i < n; i++) {
		uint64_t now = __atomic_load_n(&held[i], __ATOMIC_ACQUIRE);

		if ((now & ~HELD_STOPPED_BY_OTHER) != (uint64_t)pid)
			continue;
		/* the exchange reads the mark that BPF may have set since the load */
		now = __atomic_exchange_n(&held[i], 0, __ATOMIC_ACQ_REL);
		if (!now)
			continue;
		ours = true;
		theirs |= (now & HELD_STOPPED_BY_OTHER) != 0;
	}
	/* someone else stopped it while we held it: theirs to continue */
	if (ours && !theirs)
		kill(pid, SIGCONT);     /* ESRCH: it died while held, fine */
}
