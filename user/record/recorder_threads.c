// SPDX-License-Identifier: MIT
/*
 * The recorder's processes and threads (recorder_int.h): the tid table, a thread's files from
 * its first event (rec_thread_new, rec_append_event) to its end (rec_thread_end, which takes
 * its losses, filtered calls and parked batch), a process's directory and manifest from its
 * start (recorder__add_process) to its end (rec_process_end, which also gives files to the
 * threads that recorded nothing but lost or filtered calls). Below the ring's dispatch
 * (recorder_ring.c), the system-wide session (recorder_session.c) and the drain loop
 * (recorder.c), which call it; it calls only the manifests, losses and filter counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "atf_file.h"
#include "atftrace.h"
#include "container.h"
#include "proc.h"
#include "recorder_int.h"

/* ---- tid table ------------------------------------------------------------------------------ */

static size_t tid_hash(uint32_t tid, size_t cap)
{
	return (size_t)((tid * 2654435761u) & (cap - 1));
}

struct rec_thread *rec_tid_lookup(const struct recorder *r, uint32_t tid)
{
	if (!r->tid_cap)
		return NULL;
	for (size_t i = tid_hash(tid, r->tid_cap);; i = (i + 1) & (r->tid_cap - 1)) {
		struct rec_thread *t = r->tid_slots[i];
		if (!t || t->tid == tid)
			return t;
	}
}

/* Insert or replace the entry for t->tid (a reused tid replaces the ended thread). */
static int tid_insert(struct recorder *r, struct rec_thread *t)
{
	if ((r->tid_used + 1) * 2 > r->tid_cap) {
		size_t ncap = r->tid_cap ? r->tid_cap * 2 : 256;
		struct rec_thread **ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		for (size_t i = 0; i < r->tid_cap; i++) {
			struct rec_thread *o = r->tid_slots[i];
			size_t j;
			if (!o)
				continue;
			for (j = tid_hash(o->tid, ncap); ns[j]; j = (j + 1) & (ncap - 1))
				;
			ns[j] = o;
		}
		free(r->tid_slots);
		r->tid_slots = ns;
		r->tid_cap = ncap;
	}
	for (size_t i = tid_hash(t->tid, r->tid_cap);; i = (i + 1) & (r->tid_cap - 1)) {
		if (!r->tid_slots[i]) {
			r->tid_slots[i] = t;
			r->tid_used++;
			return 0;
		}
		if (r->tid_slots[i]->tid == t->tid) {
			r->tid_slots[i] = t;
			return 0;
		}
	}
}

/* ---- processes and threads ------------------------------------------------------------------ */

struct rec_process *rec_proc_find(struct recorder *r, pid_t pid)
{
	if (r->last_proc && r->last_proc->pid == pid)
		return r->last_proc;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->pid == pid)
			return r->last_proc = r->procs[i];
	return NULL;
}

void rec_report_write_error(struct recorder *r, const char *what, const char *path, int err)
{
	r->st.write_failed = true;  /* events it cost are counted where they are lost, once */
	if (r->write_error_reported)
		return;
	r->write_error_reported = true;
	fprintf(stderr, "atftrace record: %s %s: %s\n", what, path, atf_strerror(err));
}

/* Flush, finalize and close one thread's files; its counts stay for the manifest. */
void rec_thread_name_late(struct recorder *r, struct rec_thread *t, const char *comm, size_t len)
{
	struct atf_manifest *m = t->proc->man;
	struct atf_thread_info *ti = t->dir_id < m->nthreads ? &m->threads[t->dir_id] : NULL;
	char name[17];

	/* a thread gone before the recorder could read /proc has no name yet: take the kernel's */
	if (!ti || ti->name || !len || !comm[0])
		return;
	snprintf(name, sizeof(name), "%.*s", (int)(len < 16 ? len : 16), comm);
	ti->name = strdup(name);
	t->proc->manifest_dirty = true;
}

void rec_thread_end(struct recorder *r, struct rec_thread *t)
{
	int err;

	if (t->ended)
		return;
	rec_thread_take_parked(r, t);
	t->ended = true;
	if (r->last_thread == t)
		r->last_thread = NULL;
	rec_thread_losses(r, t, true, &t->lost);
	rec_thread_filtered(r, t, true, t->filtered);
	t->proc->manifest_dirty = true;
	if (!t->w)
		return;
	err = atf_thread_writer__finalize(t->w);
	if (err < 0) {
		/* events appended but never written (disk full): not recorded after all, and said so */
		uint64_t unwritten = atf_thread_writer__index_count(t->w) - atf_thread_writer__index_written(t->w);

		rec_report_write_error(r, "cannot finalize thread files in", t->proc->dir, err);
		r->st.write_errors += unwritten;
		t->events -= unwritten < t->events ? unwritten : t->events;
		r->st.events -= unwritten < r->st.events ? unwritten : r->st.events;
	}
	atf_thread_writer__free(t->w);
	t->w = NULL;
	t->dirty = false;           /* it may still sit in r->dirty: flushing skips w == NULL */
	t->proc->manifest_dirty = true;
}

void rec_process_end(struct recorder *r, struct rec_process *p, const char *reason)
{
	int err;

	if (p->state == REC_PROC_ENDED)
		return;
	rec_process_claim_losses(r, p);
	for (size_t i = 0; i < p->nthreads; i++)
		rec_thread_end(r, p->threads[i]);
	rec_process_claim_filtered(r, p);
	if (p->pidfd >= 0) {
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
		close(p->pidfd);
		p->pidfd = -1;
	}
	p->state = REC_PROC_ENDED;
	p->end_reason = reason;
	r->st.live_processes--;
	r->index_dirty = true;
	err = rec_manifest_save(r, p);
	if (err < 0)
		rec_report_write_error(r, "cannot write the manifest in", p->dir, err);
}

static int pidfd_open_nofail(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : fd;
}

int recorder__add_process(struct recorder *r, pid_t pid, char *const *argv, size_t argc,
			  bool launched_gated)
{
	struct rec_process *p = NULL, **np;
	struct epoll_event ee = { .events = EPOLLIN };
	int err;

	if (rec_proc_find(r, pid))
		return -EEXIST;
	np = realloc(r->procs, (r->nprocs + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	r->procs = np;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->pidfd = -1;
	p->expect_exec = launched_gated;
	p->exit_status = p->exit_code = -1;
	if (asprintf(&p->dir, "%s/pid_%d", r->session_dir, (int)pid) < 0) {
		p->dir = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	{
		struct atf_diag diag = { 0 };
		int fd = atf_dir_create(p->dir, ATF_DIR_NEW, &diag);

		if (fd < 0) {
			err = fd;
			fprintf(stderr, "atftrace record: cannot create %s: %s\n", p->dir, diag.msg);
			goto cleanup;
		}
		close(fd);
	}
	err = rec_manifest_build(r, p, argv, argc);
	if (err < 0)
		goto cleanup;
	if (r->opts.system_wide)
		rec_session_process_added(r, p);
	p->pidfd = pidfd_open_nofail(pid);
	if (p->pidfd >= 0) {
		ee.data.ptr = p;
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, p->pidfd, &ee) < 0) {
			err = -errno;
			goto cleanup;
		}
		p->state = REC_PROC_LIVE;
	} else {
		/* Already gone (a short-lived forked child): its events are all in the ring. */
		p->state = REC_PROC_GONE;
	}
	err = rec_manifest_save(r, p);
	if (err < 0) {
		fprintf(stderr, "atftrace record: cannot write %s/manifest.json: %s\n", p->dir,
			atf_strerror(err));
		goto cleanup;
	}
	r->procs[r->nprocs++] = p;
	r->st.processes++;
	r->st.live_processes++;
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: recording process %d in %s\n", (int)pid, p->dir);
	return 0;
cleanup:
	if (p->pidfd >= 0)
		close(p->pidfd);
	atf_manifest__free(p->man);
	free(p->dir);
	free(p);
	return err;
}

struct rec_thread *rec_thread_new(struct recorder *r, struct rec_process *p, uint32_t tid)
{
	struct rec_thread *t = calloc(1, sizeof(*t));
	char name[64];
	struct atf_thread_info *ti;
	pid_t nstid = 0;
	int err;

	if (!t)
		return NULL;
	if (p->nthreads == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		struct rec_thread **nt = realloc(p->threads, ncap * sizeof(*nt));
		if (!nt)
			goto fail;
		p->threads = nt;
		p->cap = ncap;
	}
	t->proc = p;
	t->tid = tid;
	t->dir_id = (uint32_t)p->nthreads;
	if (proc_comm(p->pid, (pid_t)tid, name, sizeof(name)) < 0) {
		/* already gone: the main thread is still named after its process, others stay unnamed */
		snprintf(name, sizeof(name), "%s",
			 tid == (uint32_t)p->pid && p->man->process_name ? p->man->process_name : "");
	}
	ti = atf_manifest__add_thread(p->man, t->dir_id, tid, name[0] ? name : NULL);
	if (!ti)
		goto fail;
	if (!proc_nspid((pid_t)tid, &nstid) && nstid != (pid_t)tid)
		ti->ns_tid = (uint32_t)nstid;
	if (tid_insert(r, t) < 0) {
		p->man->nthreads--;     /* undo the manifest entry; ids stay dense */
		free(p->man->threads[p->man->nthreads].name);
		goto fail;
	}
	p->threads[p->nthreads++] = t;
	r->st.threads++;
	p->manifest_dirty = true;
	err = atf_thread_writer__new(&t->w, p->dir, t->dir_id, tid);
	if (!err)   /* no fsync per thread exit: the drain must not wait on the disk (synced in finish) */
		atf_thread_writer__set_durable(t->w, false);
	if (err < 0) {
		t->w = NULL;
		rec_report_write_error(r, "cannot create thread files in", p->dir, err);
	}
	return t;
fail:
	free(t);
	return NULL;
}

void rec_mark_dirty(struct recorder *r, struct rec_thread *t)
{
	if (t->dirty)
		return;
	if (r->ndirty == r->dirty_cap) {
		size_t ncap = r->dirty_cap ? r->dirty_cap * 2 : 64;
		struct rec_thread **nd = realloc(r->dirty, ncap * sizeof(*nd));
		if (!nd)
			return;     /* it is flushed at finalize anyway; only durability is delayed */
		r->dirty = nd;
		r->dirty_cap = ncap;
	}
	r->dirty[r->ndirty++] = t;
	t->dirty = true;
}

/* ---- events into a thread's writer ---------------------------------------------------- */

void rec_append_event(struct recorder *r, struct rec_thread *t, uint64_t ts, uint64_t function_id,
		      uint32_t kind, uint32_t depth, const struct atf_detail_in *dp)
{
	struct atf_index_event ev;
	int64_t seq;

	if (!t->w) {
		r->st.write_errors++;
		return;
	}
	ts += r->boot_offset_ns;        /* the probes' CLOCK_MONOTONIC to the files' CLOCK_BOOTTIME */
	ev = (struct atf_index_event){ .timestamp_ns = ts, .function_id = function_id,
				       .thread_id = t->tid, .event_kind = (uint8_t)kind,
				       .call_depth = depth };
	seq = atf_thread_writer__append(t->w, &ev, dp);
	if (seq < 0) {
		rec_report_write_error(r, "cannot write events in", t->proc->dir, (int)seq);
		r->st.write_errors++;   /* this event; earlier buffered ones are counted at finalize */
		return;
	}
	if (!t->events)
		t->first_ts = ts;
	t->last_ts = ts;
	t->events++;
	r->st.events++;
	if (dp) {
		t->detail_events++;
		r->st.detail_events++;
	}
	if (!r->st.time_start_ns || ts < r->st.time_start_ns)
		r->st.time_start_ns = ts;
	if (ts > r->st.time_end_ns)
		r->st.time_end_ns = ts;
	rec_mark_dirty(r, t);
}

/* rec_thread_take_parked - the events @t left parked (bpf/batch.bpf.h), before its files close. */
void rec_thread_take_parked(struct recorder *r, struct rec_thread *t)
{
	struct rec_batch b;
	uint32_t pid;

	/* a tid reused by another process since is not this thread's: leave its batch alone */
	if (probes__parked_pid(r->opts.probes, t->tid, &pid) <= 0 || pid != (uint32_t)t->proc->pid ||
	    probes__take_parked(r->opts.probes, t->tid, &b) <= 0)
		return;
	if (b.count > REC_BATCH_MAX) {
		r->st.bad_records++;
		return;
	}
	for (uint32_t i = 0; i < b.count; i++)
		rec_append_event(r, t, b.ev[i].ts, b.ev[i].function_id, b.ev[i].kind, b.ev[i].depth, NULL);
}

/* claim_thread - thread @tid of @p left counts or events in a map but has no files yet: make them. */
static void claim_thread(struct recorder *r, struct rec_process *p, uint32_t tid)
{
	struct rec_thread *t = rec_tid_lookup(r, tid);

	if (t && t->proc == p && !t->ended)
		return;         /* it has its files: rec_thread_end takes its counts and batch */
	if (!rec_thread_new(r, p, tid))
		r->st.write_errors++;
}

void rec_process_claim_losses(struct recorder *r, struct rec_process *p)
{
	uint32_t tid, prev = 0, pid;
	bool first = true;

	while (!probes__lost_thread_next(r->opts.probes, first ? NULL : &prev, &tid)) {
		struct thread_loss tl;

		first = false;
		prev = tid;
		/* every event of this thread was lost: it still gets a directory, listing its losses */
		if (probes__thread_lost(r->opts.probes, tid, false, &tl) > 0 && tl.pid == (uint32_t)p->pid)
			claim_thread(r, p, tid);
	}
	/* every event of this thread waited in a batch the ring had no room for */
	for (first = true; !probes__parked_next(r->opts.probes, first ? NULL : &prev, &tid); prev = tid) {
		first = false;
		if (probes__parked_pid(r->opts.probes, tid, &pid) > 0 && pid == (uint32_t)p->pid)
			claim_thread(r, p, tid);
	}
}

void rec_process_claim_filtered(struct recorder *r, struct rec_process *p)
{
	uint32_t tid, prev = 0;
	bool first = true;

	if (!r->opts.record_filter)
		return;
	while (!probes__filtered_thread_next(r->opts.probes, first ? NULL : &prev, &tid)) {
		struct thread_filtered tf;
		struct rec_thread *t;

		first = false;
		prev = tid;
		if (probes__thread_filtered(r->opts.probes, tid, false, &tf) <= 0 ||
		    tf.pid != (uint32_t)p->pid)
			continue;
		t = rec_tid_lookup(r, tid);
		if (t && t->proc == p && !t->ended)
			continue;       /* it has its files: rec_thread_end takes its counts */
		if (probes__thread_filtered(r->opts.probes, tid, true, &tf) <= 0)
			continue;
		/* deleted: the walk goes on from the first key again */
		first = true;
		for (unsigned i = 0; i < ATF_FILTERED_REASONS; i++)
			p->filtered_other[i] += tf.calls[i];
	}
}
