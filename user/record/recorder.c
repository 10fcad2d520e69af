// SPDX-License-Identifier: MIT
/*
 * The recorder: BPF ring records -> per-thread ATF writers.
 *
 * One consumer thread does everything: the ring callback dispatches on the record's type tag
 * with one switch, looks the thread up by tid (a one-entry cache in front of an open-addressing
 * table, because events come in bursts per thread) and appends to that thread's writer.
 * The BPF side submits without wakeups and forces one only past a fill threshold, so each tick
 * waits at most a few milliseconds, drains everything, and then flushes the writers it touched;
 * that is what makes every drained event durable against kill -9 of the recorder.
 *
 * Processes: each traced process has a directory pid_<PID>/, a manifest and a thread table;
 * threads get dense directory ids in order of first appearance. A thread's files are finalized
 * when its REC_TASK_EXIT arrives, so long sessions with many short threads keep few files open.
 * A process ends when its pidfd reports the whole thread group gone (all of its events are then
 * already in the ring), or at its exec (REC_TASK_EXEC). The tables and that lifecycle are in
 * recorder_threads.c, below this file and the ring's dispatch (recorder_ring.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "atf_file.h"
#include "atftrace.h"
#include "container.h"
#include "proc.h"
#include "recorder_int.h"
#include "return_slots.h"

#define MANIFEST_SAVE_INTERVAL_NS (100ull * 1000 * 1000)

/* epoll tags for the ring and the wake fd; processes are tagged with their own pointer */
static char tag_ring, tag_wake;

/* ---- the drain loop ------------------------------------------------------------------------- */

int recorder__new(struct recorder **out, const struct recorder_opts *opts)
{
	struct recorder *r = calloc(1, sizeof(*r));
	struct epoll_event ee = { .events = EPOLLIN };
	int err;

	if (!r)
		return -ENOMEM;
	r->opts = *opts;
	r->epfd = -1;
	r->boot_offset_ns = clock_boot_offset_ns();
	r->session_dir = strdup(opts->session_dir);
	if (!r->session_dir) {
		err = -ENOMEM;
		goto cleanup;
	}
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0) {
		err = -errno;
		goto cleanup;
	}
	r->rb = ring_buffer__new(probes__ring_fd(opts->probes), rec_on_record, r, NULL);
	if (!r->rb) {
		err = -errno ? -errno : -EINVAL;
		goto cleanup;
	}
	ee.data.ptr = &tag_ring;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(r->rb), &ee) < 0) {
		err = -errno;
		goto cleanup;
	}
	if (opts->wake_fd >= 0) {
		ee.data.ptr = &tag_wake;
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, opts->wake_fd, &ee) < 0) {
			err = -errno;
			goto cleanup;
		}
	}
	if (opts->probes_everywhere)
		rec_detach_prepare(r);
	/* before any hold: a recorder killed with -9 leaves nothing stopped */
	err = rec_holds_start(r);
	if (err < 0) {
		fprintf(stderr, "atftrace record: cannot start the watchdog of held processes: %s\n",
			strerror(-err));
		goto cleanup;
	}
	if (opts->system_wide && (err = rec_session_index_save(r)) < 0) {
		fprintf(stderr, "atftrace record: cannot write %s/session.json: %s\n", r->session_dir,
			strerror(-err));
		goto cleanup;
	}
	*out = r;
	return 0;
cleanup:
	recorder__free(r);
	return err;
}

int recorder__add_module(struct recorder *r, const struct sym_module *m)
{
	const struct sym_module **nm = realloc(r->modules, (r->nmodules + 1) * sizeof(*nm));

	if (!nm)
		return -ENOMEM;
	r->modules = nm;
	r->modules[r->nmodules++] = m;
	rec_holds_add_sites(r, m);
	/* a module attached while recording (exec, dlopen): every live manifest lists it */
	for (size_t i = 0; i < r->nprocs; i++) {
		struct rec_process *p = r->procs[i];

		if (p->state == REC_PROC_ENDED)
			continue;
		int err = rec_manifest_add_module(p->man, m);

		if (err)
			return err;
		p->manifest_dirty = true;
	}
	return 0;
}

static void reap(struct rec_process *p)
{
	int status;

	if (p->reaped)
		return;
	/* Only our own (launched) child can be reaped; for others this is ECHILD. */
	if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
		p->reaped = true;
		p->exit_status = status;
	}
}

/*
 * Why a process that is gone ended: "target exited", or the signal that killed it, from the
 * wait status of our own child, else from the exit code its last thread had in the kernel.
 */
static const char *gone_reason(struct rec_process *p)
{
	int status;

	reap(p);
	status = p->reaped ? p->exit_status : p->exit_code;
	if (status < 0 || !WIFSIGNALED(status))
		return "target exited";
	snprintf(p->end_buf, sizeof(p->end_buf), "target killed by SIG%s",
		 sigabbrev_np(WTERMSIG(status)) ?: "?");
	return p->end_buf;
}

/* Drain the ring, then finalize what ended, flush what was written, save what changed. */
/* How long a tick's drain may read the ring (recorder_ring.c, drain_budget). */
#define DRAIN_BUDGET_NS (100ull * 1000 * 1000)

/* Read the ring (for at most @budget_ns, 0: until it is empty), then resume and flush. */
static int drain(struct recorder *r, uint64_t budget_ns)
{
	uint64_t now;
	int n;

	r->drain_cut = false;
	r->drain_deadline_ns = budget_ns ? clock_mono_ns() + budget_ns : 0;
	n = ring_buffer__consume(r->rb);
	r->drain_deadline_ns = 0;
	if (n < 0 && r->drain_cut)
		n = 0;          /* the rest is read at the next tick */

	rec_forks_take(r);      /* children noted at their fork, whatever the ring lost */
	rec_tramp_guard_after_drain(r); /* a process the registration guard stopped runs again */
	rec_unwind_resume(r);   /* every fix-up of a held process was in this drain */
	rec_watch_resume(r);    /* and every module it was held for is attached */
	rec_holds_retry(r);     /* those whose other hold's record was still on its way */
	rec_tramp_guard_after_resume(r);
	rec_drain_hook_run(r);          /* e.g. --call-sites: hand back what another tool probes */
	if (n < 0 && n != -EINTR)
		return n;
	/* a process that exited is ended once the ring holds none of its events: not after a cut */
	for (size_t i = 0; i < r->nprocs && !r->drain_cut; i++)
		if (r->procs[i]->state == REC_PROC_GONE)
			rec_process_end(r, r->procs[i], gone_reason(r->procs[i]));
	for (size_t i = 0; i < r->ndirty; i++) {
		struct rec_thread *t = r->dirty[i];
		int err;
		if (!t->dirty || !t->w)
			continue;
		t->dirty = false;
		err = atf_thread_writer__flush(t->w);
		if (err < 0)
			rec_report_write_error(r, "cannot write events in", t->proc->dir, err);
	}
	r->ndirty = 0;
	now = clock_mono_ns();
	for (size_t i = 0; i < r->nprocs; i++) {
		struct rec_process *p = r->procs[i];
		if (p->state != REC_PROC_LIVE || !p->manifest_dirty ||
		    now - p->last_save_ns < MANIFEST_SAVE_INTERVAL_NS)
			continue;
		int err = rec_manifest_save(r, p);
		if (err < 0)
			rec_report_write_error(r, "cannot write the manifest in", p->dir, err);
	}
	if (r->opts.system_wide && r->index_dirty && now - r->index_saved_ns >= MANIFEST_SAVE_INTERVAL_NS) {
		int err = rec_session_index_save(r);
		if (err < 0)
			rec_report_write_error(r, "cannot write session.json in", r->session_dir, err);
	}
	return 0;
}

int recorder__tick(struct recorder *r, int timeout_ms)
{
	struct epoll_event evs[16];
	int n;

	n = epoll_wait(r->epfd, evs, 16, timeout_ms);
	if (n < 0 && errno != EINTR)
		return -errno;
	for (int i = 0; i < n; i++) {
		void *tag = evs[i].data.ptr;
		if (tag == &tag_ring || tag == &tag_wake)
			continue;
		struct rec_process *p = tag;
		if (p->state == REC_PROC_LIVE) {
			p->state = REC_PROC_GONE;       /* finalized after this drain */
			reap(p);
		}
	}
	return drain(r, DRAIN_BUDGET_NS);
}

uint32_t recorder__live_processes(const struct recorder *r)
{
	return r->st.live_processes;
}

bool recorder__process(const struct recorder *r, size_t i, pid_t *pid, uint32_t *execs,
		       bool *live)
{
	if (i >= r->nprocs)
		return false;
	*pid = r->procs[i]->pid;
	*execs = r->procs[i]->execs;
	*live = r->procs[i]->state == REC_PROC_LIVE;
	return true;
}

/* One syncfs for the whole session at its end, instead of two fsyncs per file at each thread exit. */
static void session_sync(struct recorder *r)
{
	int fd = open(r->session_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || syncfs(fd) < 0)
		rec_report_write_error(r, "cannot sync", r->session_dir, -errno);
	if (fd >= 0)
		close(fd);
}

/*
 * flush_batches - the events still batched in the threads' task storage (or in the per-CPU state
 * slot a thread owns, which the iterator finds through it) into the ring, after the function
 * probes are closed and no hook adds any. A full ring is drained and the rest
 * tried again; on the last try what still finds no room is counted lost.
 */
static void flush_batches(struct recorder *r)
{
	enum { TRIES = 16 };
	int left = 0;

	for (int i = 0; i < TRIES; i++) {
		left = probes__flush_batches(r->opts.probes, i == TRIES - 1);
		if (left <= 0)
			break;
		ring_buffer__consume(r->rb);
	}
	if (left < 0)
		fprintf(stderr, "atftrace record: cannot collect the threads' last batched events: %s\n",
			strerror(-left));
}

/*
 * The probes stamp events with CLOCK_MONOTONIC, which stands still while the machine is
 * suspended, and the recorder adds the boot offset it took at its start. A suspend during the
 * session moves CLOCK_BOOTTIME on by its length: events made after the resume are then that much
 * early in the files (their order and the durations that do not span the suspend are right).
 */
static void check_suspend(const struct recorder *r)
{
	uint64_t now = clock_boot_offset_ns();

	if (now > r->boot_offset_ns + 1000000)
		fprintf(stderr, "atftrace record: the machine was suspended for %.3f s during the session: "
			"events after the resume are stamped that much early\n",
			(double)(now - r->boot_offset_ns) / 1e9);
}

int recorder__finish(struct recorder *r, const char *end_reason)
{
	struct rec_detach *detach;
	int err;

	if (r->finished)
		return 0;
	uint64_t t0 = clock_mono_ns(), t_freeze, t_drain, t_thaw, t_files;

	/* detach without a trace: see user/record/recorder_detach.c for the order of these steps */
	detach = rec_detach_freeze(r);
	t_freeze = clock_mono_ns();
	rec_unwind_stop_holds(r);   /* so this last drain resumes every held target */
	flush_batches(r);
	err = drain(r, 0);         /* the probes are closed: what is left in the ring is finite */
	rec_adopt_parked(r);
	rec_forks_report(r);
	t_drain = clock_mono_ns();
	/* the counts every manifest and the summary give from here on, taken after the last drain */
	probes__lost(r->opts.probes, &r->lost);
	r->lost_final = true;
	rec_detach_thaw(r, detach);
	t_thaw = clock_mono_ns();
	for (size_t i = 0; i < r->nprocs; i++) {
		struct rec_process *p = r->procs[i];
		if (p->state == REC_PROC_LIVE && !proc_alive(p->pid))
			p->state = REC_PROC_GONE;
		rec_process_end(r, p, p->state == REC_PROC_GONE ? gone_reason(p) : end_reason);
		reap(p);
	}
	r->end_reason = end_reason;
	check_suspend(r);
	if (r->opts.system_wide) {
		int ierr = rec_session_index_save(r);
		if (ierr < 0)
			rec_report_write_error(r, "cannot write session.json in", r->session_dir, ierr);
	}
	t_files = clock_mono_ns();
	session_sync(r);
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: end: detach %.1f ms, last drain %.1f ms, put back "
			"%.1f ms, files %.1f ms, sync %.1f ms\n", (t_freeze - t0) / 1e6,
			(t_drain - t_freeze) / 1e6, (t_thaw - t_drain) / 1e6, (t_files - t_thaw) / 1e6,
			(clock_mono_ns() - t_files) / 1e6);
	r->finished = true;
	return err;
}

void recorder__stats(const struct recorder *r, struct recorder_stats *s)
{
	struct probe_losses l;

	*s = r->st;
	rec_losses(r, &l);
	s->lost_events = l.events;
	s->lost_detail = l.detail;
	s->lost_records = l.records;
	s->lost_unattributed = l.unattributed;
}

int recorder__exit_status(const struct recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid)
			return r->procs[i]->reaped ? r->procs[i]->exit_status : -1;
	return -1;
}

void recorder__free(struct recorder *r)
{
	if (!r)
		return;
	if (!r->finished && r->nprocs)
		recorder__finish(r, "recorder stopped");
	for (size_t i = 0; i < r->nprocs; i++) {
		struct rec_process *p = r->procs[i];
		for (size_t j = 0; j < p->nthreads; j++) {
			atf_thread_writer__free(p->threads[j]->w);
			free(p->threads[j]);
		}
		if (p->pidfd >= 0)
			close(p->pidfd);
		free(p->threads);
		atf_manifest__free(p->man);
		free(p->dir);
		free(p);
	}
	free(r->procs);
	return_slots__free(r->slots);
	rec_unwind_free(r);
	rec_holds_free(r);
	rec_watch_free(r);
	ring_buffer__free(r->rb);
	if (r->epfd >= 0)
		close(r->epfd);
	free(r->tid_slots);
	free(r->dirty);
	free(r->modules);
	free(r->session_dir);
	free(r);
}
