/* SPDX-License-Identifier: MIT */
/*
 * <session>/session.json, the index of a system-wide session (user/record/session_index.c).
 * The recorder fills these plain structs from its own state and hands them over; the writer
 * knows nothing of the recorder.
 */
#ifndef ATFTRACE_SESSION_INDEX_H
#define ATFTRACE_SESSION_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* One process directory of the session. Strings may be NULL (written as null). */
struct session_index_proc {
	const char *dir;            /* "pid_<PID>", relative to the session */
	uint64_t pid, ns_pid;
	const char *comm;
	char *const *argv;
	size_t argc;
	const char *start_time;     /* the process's own start, ISO 8601 UTC */
	uint64_t start_ticks;       /* /proc/PID/stat start time, 0 if unknown */
	uint64_t time_start_ns, time_end_ns;    /* first and last recorded event */
	const char *end_reason;     /* NULL while it is recorded */
	uint64_t threads, index_events, detail_events;
};

struct session_index {
	const char *start_time;     /* the session's, ISO 8601 UTC */
	const char *end_reason;     /* NULL while the session runs */
	uint64_t index_events;
	const struct session_index_proc *procs;
	size_t nprocs;
};

/**
 * session_index__write - write <@session_dir>/session.json from @idx atomically (temporary file,
 * fsync, rename): a reader never sees half of it, and a recorder killed with -9 leaves the last
 * complete one. Returns 0 or a negative errno.
 */
int session_index__write(const char *session_dir, const struct session_index *idx);

/** session_index_iso_utc - @t as "YYYY-MM-DDTHH:MM:SSZ" in @buf. */
void session_index_iso_utc(time_t t, char *buf, size_t len);

#endif
