// SPDX-License-Identifier: MIT
/*
 * The session index of a system-wide session, <session>/session.json: one entry per process
 * directory (pid, ns pid, comm, command line, process start, recording start/end, counts), so a
 * session of hundreds of processes can be browsed without opening every manifest.
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
#include <unistd.h>
#include "atf_file.h"
#include "session_index.h"

void session_index_iso_utc(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int add_str(json_t *o, const char *key, const char *v)
{
	return json_object_set_new(o, key, v ? json_string(v) : json_null()) ? -ENOMEM : 0;
}

static int add_u64(json_t *o, const char *key, uint64_t v)
{
	return json_object_set_new(o, key, json_integer((json_int_t)v)) ? -ENOMEM : 0;
}

static json_t *process_entry(const struct session_index_proc *p)
{
	json_t *o = json_object(), *argv = json_array();
	int err = o && argv ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < p->argc; i++)
		err = json_array_append_new(argv, json_string(p->argv[i])) ? -ENOMEM : 0;
	err = err ?: add_str(o, "dir", p->dir);
	err = err ?: add_u64(o, "pid", p->pid);
	err = err ?: add_u64(o, "ns_pid", p->ns_pid);
	err = err ?: add_str(o, "comm", p->comm);
	if (!err) {
		err = json_object_set_new(o, "cmdline", argv) ? -ENOMEM : 0;
		argv = NULL;
	}
	err = err ?: add_str(o, "start_time", p->start_time);
	err = err ?: add_u64(o, "start_ticks", p->start_ticks);
	err = err ?: add_u64(o, "time_start_ns", p->time_start_ns);
	err = err ?: add_u64(o, "time_end_ns", p->time_end_ns);
	err = err ?: add_str(o, "end_reason", p->end_reason);
	err = err ?: add_u64(o, "threads", p->threads);
	err = err ?: add_u64(o, "index_events", p->index_events);
	err = err ?: add_u64(o, "detail_events", p->detail_events);
	json_decref(argv);
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *build_index(const struct session_index *idx)
{
	json_t *root = json_object(), *procs = json_array();
	struct utsname u;
	char iso[32];
	int err = root && procs ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < idx->nprocs; i++)
		err = json_array_append_new(procs, process_entry(&idx->procs[i])) ? -ENOMEM : 0;
	session_index_iso_utc(time(NULL), iso, sizeof(iso));
	err = err ?: add_str(root, "format", "atftrace-session");
	err = err ?: add_u64(root, "version", 1);
	err = err ?: add_str(root, "mode", "system-wide");
	err = err ?: add_str(root, "host", uname(&u) ? NULL : u.nodename);
	err = err ?: add_str(root, "atftrace_version", ATFTRACE_VERSION);
	err = err ?: add_str(root, "start_time", idx->start_time);
	err = err ?: add_str(root, "end_time", idx->end_reason ? iso : NULL);
	err = err ?: add_str(root, "end_reason", idx->end_reason);
	err = err ?: add_u64(root, "process_count", idx->nprocs);
	err = err ?: add_u64(root, "index_events", idx->index_events);
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

int session_index__write(const char *session_dir, const struct session_index *idx)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s/session.json", session_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return atf_file_replace_json(path, build_index(idx), 0);
}
