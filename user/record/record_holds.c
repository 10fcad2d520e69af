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
 *  - A child the recorder did not fix is not resumed into a crash: a child stopped at its fork
 *    (bpf/fork_hold.bpf.h) has copies of the parent's optimised 5-byte nop sites, calls into
 *    a page it does not have. The recorder lists every probed 5-byte nop of its modules in a
 *    shared mapping (nop5_sites) that the watchdog sees; before its SIGCONT the watchdog puts
 *    the nop back over each such call in that process (nop5_sites_fix): its probes are gone
 *    with the recorder anyway. The recorder fixes its held children from the same list.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "atftrace.h"
#include "clock.h"
#include "probes.h"
#include "recorder_int.h"
#include "tramp_restore.h"
#include "trampoline.h"

/*
 * Shared with the watchdog (MAP_SHARED before its fork): the probed 5-byte nops, and the
 * processes whose call sites are redirected (record --call-sites) until the recorder's own
 * restore.
 */
#define NOP5_SITES_MAX 4096
#define CALL_SITE_PIDS_MAX 16
struct nop5_sites {
	uint64_t n;                 /* written by the recorder only, after the site itself */
	struct nop5_site v[NOP5_SITES_MAX];
	int32_t call_site_pids[CALL_SITE_PIDS_MAX];     /* 0: a free entry */
};

/*
 * In the watchdog: the recorder died with @pid's calls redirected. Its unwind hooks died with
 * it, so a C++ throw through a call-site stub would terminate the program: write the original
 * calls back and give every frame inside a stub its call site's return address, as `atftrace
 * restore -p` does (include/tramp_restore.h). Its stderr is the recorder's: one line.
 */
static void call_sites_undo(pid_t pid)
{
	struct tramp_areas a;
	int err = tramp_areas__read(pid, &a);

	if (!err)
		err = tramp_areas__restore(pid, &a, false);
	if (err && err != -ESRCH)
		fprintf(stderr, "atftrace-watch: process %d: cannot write its redirected calls back "
			"(%s): 'atftrace restore -p %d'\n", (int)pid, strerror(-err), (int)pid);
	tramp_areas__free(&a);
}

/* In the watchdog: wait for the recorder (@pidfd) to end, resume what it held, exit. */
static void __attribute__((noreturn)) watchdog_run(int pidfd, uint64_t *held, size_t n,
						   const struct nop5_sites *sites)
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

		if (!pid)
			continue;
		nop5_sites_fix((pid_t)pid, sites->v, __atomic_load_n(&sites->n, __ATOMIC_ACQUIRE),
			       false);
		/* someone else stopped it while we held it: theirs to continue */
		if (!(pid & HELD_STOPPED_BY_OTHER))
			kill((pid_t)pid, SIGCONT);
	}
	for (size_t i = 0; i < CALL_SITE_PIDS_MAX; i++) {
		pid_t pid = __atomic_load_n(&sites->call_site_pids[i], __ATOMIC_ACQUIRE);

		if (pid > 0)
			call_sites_undo(pid);
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
	r->nop5_sites = mmap(NULL, sizeof(*r->nop5_sites), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->nop5_sites == MAP_FAILED) {
		int err = -errno;

		r->nop5_sites = NULL;
		close(pidfd);
		return err;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pidfd);
		return err;
	}
	if (pid == 0)
		watchdog_run(pidfd, held, n, r->nop5_sites);
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
		if ((__atomic_load_n(&held[i], __ATOMIC_ACQUIRE) & HELD_PID_MASK) == (uint64_t)pid)
			return true;
	return false;
}

/*
 * Overlapping holds. Two holds of ours may stop a process at about the same time (a guard stop
 * from another tool's registration while a thread raises a C++ exception); their records may be
 * read in different drains. One SIGCONT ends every stop, so the first hold's resume must not
 * come before the second's record was handled: each held_pids entry counts the stops of ours
 * (HELD_SEQ_*), each hold record carries the count its stop made, and a process is resumed
 * only when its entry's count is one whose record was read, and taken out of the set by a
 * compare-and-swap that fails if BPF counted another stop since.
 */
struct held_seen {
	pid_t pid;
	uint32_t seq;               /* the highest count whose record was read */
	uint64_t wait_since_ns;     /* 0, or when its resume first waited for a record */
};

#define HELD_WAIT_MAX_NS (1000ull * 1000 * 1000)   /* a record never read: lost, or never sent */

static struct held_seen *held_seen_of(struct recorder *r, pid_t pid, bool create)
{
	for (size_t i = 0; i < r->nheld_seen; i++)
		if (r->held_seen[i].pid == pid)
			return &r->held_seen[i];
	if (!create)
		return NULL;
	if (r->nheld_seen == r->held_seen_cap) {
		size_t cap = r->held_seen_cap ? 2 * r->held_seen_cap : 16;
		struct held_seen *v = realloc(r->held_seen, cap * sizeof(*v));

		if (!v)
			return NULL;    /* its resume then waits HELD_WAIT_MAX_NS: never left stopped */
		r->held_seen = v;
		r->held_seen_cap = cap;
	}
	r->held_seen[r->nheld_seen] = (struct held_seen){ .pid = pid };
	return &r->held_seen[r->nheld_seen++];
}

static void held_seen_drop(struct recorder *r, pid_t pid)
{
	struct held_seen *e = held_seen_of(r, pid, false);

	if (e)
		*e = r->held_seen[--r->nheld_seen];
}

void rec_holds_seen(struct recorder *r, pid_t pid, uint32_t seq)
{
	struct held_seen *e;

	if (!seq || seq > HELD_SEQ_MASK)
		return;         /* not a stop of ours, or one BPF could not count (waits, then goes) */
	e = held_seen_of(r, pid, true);
	if (e && seq > e->seq)
		e->seq = seq;
}

void rec_holds_seen_all(struct recorder *r, pid_t pid)
{
	size_t n;
	uint64_t *held = probes__held_pids(r->opts.probes, &n);

	for (size_t i = 0; i < n; i++) {
		uint64_t w = __atomic_load_n(&held[i], __ATOMIC_ACQUIRE);

		if ((w & HELD_PID_MASK) == (uint64_t)pid)
			rec_holds_seen(r, pid, (uint32_t)((w >> HELD_SEQ_SHIFT) & HELD_SEQ_MASK));
	}
}

/*
 * try_resume - take @pid out of the held set and SIGCONT it, unless a stop of ours in it has a
 * record not read yet (then false, and nothing changed); @force resumes it all the same.
 */
static bool try_resume(struct recorder *r, pid_t pid, bool force)
{
	size_t n;
	uint64_t *held = probes__held_pids(r->opts.probes, &n);
	struct held_seen *e = held_seen_of(r, pid, false);
	uint32_t seen = e ? e->seq : 0;
	bool ours = false, theirs = false;

	for (size_t i = 0; i < n; i++) {
		uint64_t w = __atomic_load_n(&held[i], __ATOMIC_ACQUIRE);
		int tries = 0;

		while ((w & HELD_PID_MASK) == (uint64_t)pid) {
			if (!force && ((w >> HELD_SEQ_SHIFT) & HELD_SEQ_MASK) > seen)
				return false;   /* a stop whose record is on its way */
			/* fails, and reloads w, if BPF counted a stop or marked it since the load */
			if (__atomic_compare_exchange_n(&held[i], &w, 0, false, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				ours = true;
				theirs |= (w & HELD_STOPPED_BY_OTHER) != 0;
				break;
			}
			if (++tries == 64)
				return false;
		}
	}
	held_seen_drop(r, pid);
	/* someone else stopped it while we held it: theirs to continue */
	if (ours && !theirs) {
		kill(pid, SIGCONT);     /* ESRCH: it died while held, fine */
		/*
		 * A hold that found the entry gone between our exchange and our SIGCONT claimed a
		 * new one and may have had its SIGSTOP ended by ours: stop it again (it is ours, and
		 * that hold's record resumes it).
		 */
		if (rec_holds_ours(r, pid))
			kill(pid, SIGSTOP);
	}
	return true;
}

void rec_holds_resume(struct recorder *r, pid_t pid)
{
	struct held_seen *e;

	if (try_resume(r, pid, false))
		return;
	e = held_seen_of(r, pid, true);
	if (!e)
		try_resume(r, pid, true);       /* cannot wait for it: as before */
	else if (!e->wait_since_ns)
		e->wait_since_ns = clock_mono_ns();
}

void rec_holds_retry(struct recorder *r)
{
	uint64_t now = clock_mono_ns();

	for (size_t i = 0; i < r->nheld_seen;) {
		struct held_seen *e = &r->held_seen[i];

		if (e->wait_since_ns && try_resume(r, e->pid,
						  now - e->wait_since_ns > HELD_WAIT_MAX_NS))
			continue;       /* dropped: slot i holds another entry now */
		i++;
	}
}

void rec_holds_add_sites(struct recorder *r, const struct sym_module *m)
{
	struct nop5_sites *s = r->nop5_sites;
	const char *path = m->open_path ? m->open_path : m->path;
	struct stat st;

	if (!s || stat(path, &st))
		return;
	for (size_t i = 0; i < m->nfuncs; i++) {
		uint64_t k = s->n;

		if (!m->funcs[i].selected || m->funcs[i].insn != SYM_INSN_NOP5)
			continue;
		if (k == NOP5_SITES_MAX) {
			fprintf(stderr, "atftrace record: more than %d probed functions start with a "
				"5-byte nop: a child forked after the kernel optimised one of the others "
				"crashes if it calls it before it execs\n", NOP5_SITES_MAX);
			return;
		}
		s->v[k] = (struct nop5_site){ .dev = st.st_dev, .ino = st.st_ino,
					      .offset = m->funcs[i].probe_offset };
		__atomic_store_n(&s->n, k + 1, __ATOMIC_RELEASE);
	}
}

void recorder__set_call_sites(struct recorder *r, pid_t pid, bool redirected)
{
	struct nop5_sites *s = r ? r->nop5_sites : NULL;

	for (size_t i = 0; s && pid > 0 && i < CALL_SITE_PIDS_MAX; i++) {
		int32_t v = redirected ? 0 : pid;      /* the entry to take */

		if (__atomic_compare_exchange_n(&s->call_site_pids[i], &v, redirected ? pid : 0,
						false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return;
	}
}

const struct nop5_site *rec_holds_sites(const struct recorder *r, size_t *n)
{
	*n = r->nop5_sites ? __atomic_load_n(&r->nop5_sites->n, __ATOMIC_ACQUIRE) : 0;
	return r->nop5_sites ? r->nop5_sites->v : NULL;
}

void rec_holds_free(struct recorder *r)
{
	free(r->held_seen);
	r->held_seen = NULL;
	r->nheld_seen = r->held_seen_cap = 0;
	if (r->nop5_sites)
		munmap(r->nop5_sites, sizeof(*r->nop5_sites));
	r->nop5_sites = NULL;
}
