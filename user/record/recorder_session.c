// SPDX-License-Identifier: MIT
/*
 * The processes of a system-wide session as the recorder keeps them: discovered by their first
 * event, renamed at exec, named from the probe's identity record when /proc was too late; and the
 * session index (session.json, written by session_index.c) gathered from them. The index is
 * written when the session starts, again (at most every ~100 ms, by the drain loop) when
 * processes appeared or ended, and at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "atftrace.h"
#include "proc.h"
#include "recorder_int.h"
#include "session_index.h"

void rec_session_process_exec(struct recorder *r, struct rec_process *p)
{
	char comm[64], **argv = NULL;
	size_t argc = 0;

	p->execs++;
	for (size_t i = 0; i < p->nthreads; i++)
		rec_thread_end(r, p->threads[i]);
	/* the old program's name and arguments go; /proc, or else the REC_PROC_INFO that follows
	 * the exec record, tells the new ones */
	free(p->man->process_name);
	p->man->process_name = NULL;
	for (size_t i = 0; i < p->man->argc; i++)
		free(p->man->argv[i]);
	free(p->man->argv);
	p->man->argv = NULL;
	p->man->argc = 0;
	if (!proc_comm(p->pid, 0, comm, sizeof(comm)))
		p->man->process_name = strdup(comm);
	if (!proc_cmdline(p->pid, &argv, &argc)) {
		p->man->argv = argv;        /* same allocator: the manifest frees it */
		p->man->argc = argc;
	}
	if (r->opts.verbose)
		fprintf(stderr, "atftrace record: process %d called exec; recording %s on in %s\n",
			(int)p->pid, p->man->process_name ? p->man->process_name : "it", p->dir);
	p->manifest_dirty = true;
	r->index_dirty = true;
}

void rec_session_on_info(struct recorder *r, const void *data, size_t size)
{
	struct rec_proc_info info;
	struct rec_process *p;

	if (size < sizeof(info)) {
		r->st.bad_records++;
		return;
	}
	memcpy(&info, data, sizeof(info));
	if (!r->opts.system_wide || info.args_len > REC_ARGS_MAX)
		return;
	p = rec_proc_find(r, (pid_t)info.pid);
	if (!p) {
		/* not an event: the process's events are counted if they cannot be written */
		if (recorder__add_process(r, (pid_t)info.pid, NULL, 0, false) < 0)
			return;
		p = rec_proc_find(r, (pid_t)info.pid);
	}
	if (!p->man->process_name && info.comm[0]) {
		info.comm[sizeof(info.comm) - 1] = '\0';
		p->man->process_name = strdup(info.comm);
		p->manifest_dirty = r->index_dirty = true;
	}
	if (!p->man->argc && info.args_len) {
		/* NUL-separated, the last one maybe cut short at REC_ARGS_MAX bytes */
		size_t n = 0;
		char **argv;

		for (uint32_t i = 0; i < info.args_len; i++)
			n += !i || !info.args[i - 1];
		argv = calloc(n + 1, sizeof(*argv));
		for (size_t k = 0, i = 0; argv && k < n; k++) {
			size_t len = strnlen(info.args + i, info.args_len - i);
			argv[k] = strndup(info.args + i, len);
			p->man->argc = k + 1;
			i += len + 1;
		}
		p->man->argv = argv;
		if (!argv)
			p->man->argc = 0;
		p->manifest_dirty = r->index_dirty = true;
	}
	if (!p->start_ticks && info.start_boottime && rec_boot_time_s()) {
		long hz = sysconf(_SC_CLK_TCK);
		p->start_ticks = hz > 0 ? info.start_boottime / (1000000000ull / (uint64_t)hz) : 0;
		rec_manifest_set_start_time(p, rec_boot_time_s(), info.start_boottime / 1000000000ull);
		p->manifest_dirty = r->index_dirty = true;
	}
}

/* One process's entry: its identity from the manifest, its counts and times from its threads. */
static void index_entry(const struct rec_process *p, struct session_index_proc *e)
{
	const struct atf_manifest *m = p->man;
	const char *dir = strrchr(p->dir, '/');

	*e = (struct session_index_proc){
		.dir = dir ? dir + 1 : p->dir,
		.pid = (uint64_t)p->pid,
		.ns_pid = m->ns_pid,
		.comm = m->process_name,
		.argv = m->argv,
		.argc = m->argc,
		.start_time = m->start_time,
		.start_ticks = p->start_ticks,
		.end_reason = p->state == REC_PROC_ENDED ? p->end_reason : NULL,
		.threads = p->nthreads,
	};
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rec_thread *t = p->threads[i];

		e->index_events += t->events;
		e->detail_events += t->detail_events;
		if (t->events && (!e->time_start_ns || t->first_ts < e->time_start_ns))
			e->time_start_ns = t->first_ts;
		if (t->last_ts > e->time_end_ns)
			e->time_end_ns = t->last_ts;
	}
}

int rec_session_index_save(struct recorder *r)
{
	struct session_index idx = {
		.start_time = r->index_start_time,
		.end_reason = r->end_reason,
		.index_events = r->st.events,
		.nprocs = r->nprocs,
	};
	struct session_index_proc *procs = calloc(r->nprocs ? r->nprocs : 1, sizeof(*procs));
	int err;

	if (!procs)
		return -ENOMEM;
	for (size_t i = 0; i < r->nprocs; i++)
		index_entry(r->procs[i], &procs[i]);
	idx.procs = procs;
	if (!r->index_start_time[0])
		session_index_iso_utc(time(NULL), r->index_start_time, sizeof(r->index_start_time));
	err = session_index__write(r->session_dir, &idx);
	free(procs);
	if (!err) {
		r->index_dirty = false;
		r->index_saved_ns = clock_mono_ns();
	}
	return err;
}
