// SPDX-License-Identifier: MIT
/*
 * The session index of a system-wide session, <session>/session.json: one entry per process
 * directory (pid, ns pid, comm, command line, process start, recording start/end, counts), so a
 * session of hundreds of processes can be browsed without opening every manifest. It is written
 * when the session starts, again (at most every ~100 ms, by the drain loop) when processes
 * appeared or ended, and at the end; atomically (temporary file, fsync, rename), so a reader
 * never sees half of it and a recorder killed with -9 leaves the last complete one.
 *
 * The manifest of each process is the authority for its threads and events; the index repeats
 * the counts only as a summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "atftrace.h"
#include "proc.h"
#include "record_system.h"
#include "recorder_int.h"

/* Boot time in seconds since the epoch (btime in /proc/stat), or 0. */
static uint64_t boot_time_s(void)
{
	static uint64_t btime;
	char line[256];
	FILE *f;

	if (btime)
		return btime;
	f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", (unsigned long long *)&btime) == 1)
			break;
	fclose(f);
	return btime;
}

static void iso_utc(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void set_start_time(struct rec_process *p, uint64_t boot_s, uint64_t after_boot_s)
{
	char iso[32], *s;

	iso_utc((time_t)(boot_s + after_boot_s), iso, sizeof(iso));
	s = strdup(iso);
	if (s) {
		free(p->man->start_time);
		p->man->start_time = s;
	}
}

void rec_session_process_added(struct recorder *r, struct rec_process *p)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t boot = boot_time_s();

	r->index_dirty = true;
	if (proc_start_time(p->pid, &p->start_ticks) < 0 || hz <= 0 || !boot) {
		p->start_ticks = 0;     /* already gone: REC_PROC_INFO may still tell */
		return;
	}
	/* In a system-wide session the process, not the session, starts its manifest's story. */
	set_start_time(p, boot, p->start_ticks / (uint64_t)hz);
}

void rec_session_process_exec(struct recorder *r, struct rec_process *p)
{
	char comm[64], **argv = NULL;
	size_t argc = 0;

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
		if (recorder__add_process(r, (pid_t)info.pid, NULL, 0, false) < 0) {
			r->st.write_errors++;
			return;
		}
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
	if (!p->start_ticks && info.start_boottime && boot_time_s()) {
		long hz = sysconf(_SC_CLK_TCK);
		p->start_ticks = hz > 0 ? info.start_boottime / (1000000000ull / (uint64_t)hz) : 0;
		set_start_time(p, boot_time_s(), info.start_boottime / 1000000000ull);
		p->manifest_dirty = r->index_dirty = true;
	}
}

static int add_str(json_t *o, const char *key, const char *v)
{
	return json_object_set_new(o, key, v ? json_string(v) : json_null()) ? -ENOMEM : 0;
}

static int add_u64(json_t *o, const char *key, uint64_t v)
{
	return json_object_set_new(o, key, json_integer((json_int_t)v)) ? -ENOMEM : 0;
}

static json_t *process_entry(const struct rec_process *p)
{
	const struct atf_manifest *m = p->man;
	json_t *o = json_object(), *argv = json_array();
	const char *dir = strrchr(p->dir, '/');
	uint64_t events = 0, detail = 0, t0 = 0, t1 = 0;
	int err = o && argv ? 0 : -ENOMEM;

	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rec_thread *t = p->threads[i];

		events += t->events;
		detail += t->detail_events;
		if (t->events && (!t0 || t->first_ts < t0))
			t0 = t->first_ts;
		if (t->last_ts > t1)
			t1 = t->last_ts;
	}
	for (size_t i = 0; !err && i < m->argc; i++)
		err = json_array_append_new(argv, json_string(m->argv[i])) ? -ENOMEM : 0;
	err = err ?: add_str(o, "dir", dir ? dir + 1 : p->dir);
	err = err ?: add_u64(o, "pid", (uint64_t)p->pid);
	err = err ?: add_u64(o, "ns_pid", m->ns_pid);
	err = err ?: add_str(o, "comm", m->process_name);
	if (!err) {
		err = json_object_set_new(o, "cmdline", argv) ? -ENOMEM : 0;
		argv = NULL;
	}
	err = err ?: add_str(o, "start_time", m->start_time);
	err = err ?: add_u64(o, "start_ticks", p->start_ticks);
	err = err ?: add_u64(o, "time_start_ns", t0);
	err = err ?: add_u64(o, "time_end_ns", t1);
	err = err ?: add_str(o, "end_reason", p->state == REC_PROC_ENDED ? p->end_reason : NULL);
	err = err ?: add_u64(o, "threads", p->nthreads);
	err = err ?: add_u64(o, "index_events", events);
	err = err ?: add_u64(o, "detail_events", detail);
	json_decref(argv);
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *build_index(struct recorder *r)
{
	json_t *root = json_object(), *procs = json_array();
	struct utsname u;
	char iso[32];
	int err = root && procs ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < r->nprocs; i++)
		err = json_array_append_new(procs, process_entry(r->procs[i])) ? -ENOMEM : 0;
	if (!r->index_start_time[0])
		iso_utc(time(NULL), r->index_start_time, sizeof(r->index_start_time));
	iso_utc(time(NULL), iso, sizeof(iso));
	err = err ?: add_str(root, "format", "atftrace-session");
	err = err ?: add_u64(root, "version", 1);
	err = err ?: add_str(root, "mode", "system-wide");
	err = err ?: add_str(root, "host", uname(&u) ? NULL : u.nodename);
	err = err ?: add_str(root, "atftrace_version", ATFTRACE_VERSION);
	err = err ?: add_str(root, "start_time", r->index_start_time);
	err = err ?: add_str(root, "end_time", r->end_reason ? iso : NULL);
	err = err ?: add_str(root, "end_reason", r->end_reason);
	err = err ?: add_u64(root, "process_count", r->nprocs);
	err = err ?: add_u64(root, "index_events", r->st.events);
	if (!err) {
		err = json_object_set_new(root, "processes", procs) ? -ENOMEM : 0;
		procs = NULL;
	}
	json_decref(procs);
	if (err) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int rec_session_index_save(struct recorder *r)
{
	json_t *root = build_index(r);
	char path[4096], tmp[4200];
	int fd = -1, err = 0;

	if (!root)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/session.json", r->session_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		err = -errno;
	if (!err && json_dumpfd(root, fd, JSON_INDENT(2)))
		err = -EIO;
	if (!err && (write(fd, "\n", 1) != 1 || fsync(fd)))
		err = -errno ? -errno : -EIO;
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	json_decref(root);
	if (!err) {
		r->index_dirty = false;
		r->index_saved_ns = rec_now_ns();
	}
	return err;
}
