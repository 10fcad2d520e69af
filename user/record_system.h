/* SPDX-License-Identifier: MIT */
/*
 * System-wide sessions and containers for `atftrace record` (issue 8), private to record:
 * user/record_system.c (opening a containerised process's files, the session's target
 * filters) and user/record_session.c (session.json).
 */
#ifndef ATFTRACE_RECORD_SYSTEM_H
#define ATFTRACE_RECORD_SYSTEM_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probes.h"

struct recorder;
struct rec_process;

/** rs_other_root - does process @pid have another root directory than ours (a container)? */
bool rs_other_root(pid_t pid);

/**
 * rs_open_in_process - open a file of containerised process @pid without ever resolving a
 * path on the host:
 *   @name NULL        its executable, through the /proc/PID/exe magic link (the inode it runs);
 *   @name with a '/'  a path as the process sees it: openat2(RESOLVE_IN_ROOT) inside
 *                     /proc/PID/root, so no symlink or ".." can lead outside its root;
 *   otherwise         a library name ("libc.so.6") looked up in /proc/PID/maps and opened
 *                     through /proc/PID/map_files/<range> (the inode that is mapped).
 * @shown (when @name is NULL or a library name): receives a malloc'd path for reports and
 * the manifest. Returns an fd or a negative errno, after printing one line saying why, which
 * starts with @who ("atftrace record").
 */
int rs_open_in_process(pid_t pid, const char *name, char **shown, const char *who);

/* What `record -a` traces: the filters its options set, resolved before the probes load. */
struct rs_target {
	bool all;                   /* -a: every process that runs a probed module */
	const char *cgroup;         /* --cgroup PATH */
	const char *container;      /* --container ID */
	const char *comm;           /* --comm NAME */
	pid_t *pid_filter;          /* --pid-filter PID[,PID...] */
	size_t npid_filter;
	char cgroup_dir[4096];      /* resolved cgroup directory (--cgroup or --container) */
};

/*
 * system_argp - the options above (-a, --comm, --pid-filter, --cgroup, --container), an argp
 * child of record whose input is a struct rs_target. Rules across options (with -p, a command,
 * -f) are checked by record's own parser at ARGP_KEY_END. Free with rs_target_free().
 */
extern const struct argp system_argp;
void rs_target_free(struct rs_target *t);

/**
 * rs_target_configure - resolve --cgroup/--container into the BPF cgroup filter and --comm into
 * the comm filter of @po. Prints one error line and returns a negative errno on failure.
 */
int rs_target_configure(struct rs_target *t, struct probe_opts *po, bool verbose);

/**
 * rs_container_pid - --container ID -p NSPID: the host pid of the process of that container
 * whose pid in the container's namespace is @nspid. Prints why on failure.
 */
int rs_container_pid(struct rs_target *t, pid_t nspid, pid_t *host_pid);

/** rs_parse_pid_list - "PID[,PID...]" into a malloc'd array. -EINVAL for anything else. */
int rs_parse_pid_list(const char *arg, pid_t **pids, size_t *n);

/* ---- session.json (user/record_session.c) ------------------------------------------------- */

/** rec_session_index_save - write <session>/session.json atomically from the recorder's state. */
int rec_session_index_save(struct recorder *r);

/**
 * rec_session_process_added - a process directory was created in a system-wide session: its
 * manifest's start_time becomes the process's own start (from /proc/PID/stat), and the
 * session index is marked for rewriting.
 */
void rec_session_process_added(struct recorder *r, struct rec_process *p);

/**
 * rec_session_on_info - a REC_PROC_INFO ring record: start recording its process (system-wide
 * sessions discover processes by their first event) and fill in what /proc could not tell
 * because the process was already gone: name, command line, start time.
 */
void rec_session_on_info(struct recorder *r, const void *data, size_t size);

/**
 * rec_session_process_exec - process @p of a system-wide session called exec: the threads of
 * its old image end there, and its recording goes on in the same pid_<PID>/ with the new
 * image's name and command line (later events start new thread_<N>/ directories).
 */
void rec_session_process_exec(struct recorder *r, struct rec_process *p);

#endif
