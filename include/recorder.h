/* SPDX-License-Identifier: MIT */
/*
 * The recorder (user/record/recorder.c, user/record/recorder_manifest.c): drains the BPF ring into per-thread
 * ATF writers, one process directory <session>/pid_<PID>/ per traced process with its own
 * manifest.json and thread table.
 *
 * Durability: after every drain tick the dirty writers are flushed, and each process manifest is
 * written at start, again (at most every ~100 ms) when threads appeared or ended, and at the
 * end; so a recorder killed with -9 leaves a session `atftrace recover` can repair with every
 * event written so far.
 */
#ifndef ATFTRACE_RECORDER_H
#define ATFTRACE_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probes.h"
#include "symbols.h"

struct recorder_opts {
	const char *session_dir;    /* created if missing; pid_<PID>/ directories go inside */
	struct probes *probes;      /* the ring to drain and the lost counters */
	int wake_fd;                /* extra fd that ends a tick early when readable (signalfd), or -1 */
	bool verbose;
	/*
	 * record -a: processes are discovered by their first event; each manifest's
	 * start_time is the process's own start; <session>/session.json indexes the processes
	 * (user/record/recorder_session.c); an exec does not end a process's recording.
	 */
	bool system_wide;
	/*
	 * The probes are in every process that maps a traced module, the recorder's own too (-a,
	 * --follow-fork): what the end of the session needs is loaded at its start, while no probe
	 * of ours slows the recorder down (user/record/recorder_detach.c).
	 */
	bool probes_everywhere;
	/* record-time filters (record_filter.h): the options as given, NULL when none; -t's threshold */
	const char *record_filter;
	uint64_t filter_min_ns;
};

struct recorder_stats {
	uint64_t events;            /* index events written */
	uint64_t detail_events;
	uint64_t lost_events;       /* index events not written (probes__lost) */
	uint64_t lost_detail;
	uint64_t lost_records;      /* other ring records not written (thread exit/fork/exec, ...) */
	uint64_t lost_unattributed; /* lost events in no thread's count */
	uint64_t bad_records;       /* malformed ring records, skipped and counted */
	uint64_t ignored_events;    /* events of a process whose recording had ended (after exec) */
	uint64_t write_errors;      /* events that could not be written (reported as errors) */
	bool write_failed;          /* any write failed: an event, a manifest, session.json */
	uint32_t threads;           /* thread directories created */
	uint32_t processes;         /* process directories created */
	uint32_t live_processes;    /* processes still being recorded */
	uint64_t time_start_ns, time_end_ns;
};

struct recorder;

/** recorder__new - set up the ring consumer; nothing is written until a process is added. */
int recorder__new(struct recorder **out, const struct recorder_opts *opts);

/**
 * recorder__add_module - list @m's selected functions in every process manifest (modules and
 * symbols). @m must stay valid until recorder__free(). Call before recorder__add_process().
 */
int recorder__add_module(struct recorder *r, const struct sym_module *m);

/**
 * recorder__add_process - start recording process @pid: create pid_<PID>/ and write its first
 * manifest. @argv (NULL: read /proc/PID/cmdline) is stored in the manifest. @launched_gated:
 * the process is a gated child about to exec its target, so its first exec is the start of
 * the recording, not an exec that ends it.
 */
int recorder__add_process(struct recorder *r, pid_t pid, char *const *argv, size_t argc,
			  bool launched_gated);

/**
 * recorder__tick - wait up to @timeout_ms for ring data, the end of a traced process or @wake_fd,
 * then drain the ring, finalize the threads that exited and the processes that ended, flush
 * every dirty writer and save changed manifests. Returns 0 or a negative error.
 */
int recorder__tick(struct recorder *r, int timeout_ms);

/** recorder__live_processes - processes still being recorded (0: every target is gone). */
uint32_t recorder__live_processes(const struct recorder *r);

/**
 * recorder__process - the @i-th process recorded (in the order they were added; none is ever
 * removed): its pid, how many times it called exec while recorded (@execs) and whether it is
 * still being recorded (@live). False when @i is past the last.
 */
bool recorder__process(const struct recorder *r, size_t i, pid_t *pid, uint32_t *execs,
		       bool *live);

/**
 * recorder__finish - drain what is left, finalize every file and write each live process's
 * manifest with @end_reason ("signal", "duration", ...). Idempotent.
 */
int recorder__finish(struct recorder *r, const char *end_reason);

void recorder__stats(const struct recorder *r, struct recorder_stats *s);

/** recorder__exit_status - wait(2) status of a launched child the recorder reaped, or -1. */
int recorder__exit_status(const struct recorder *r, pid_t pid);

/**
 * recorder_module_fn - a file newly mapped executable in traced process @pid ([@start, @end) is
 * the span of its mappings), seen at an exec or when ld.so changed its list of modules
 * (dlopen). When the process was held for it (probes__set_holds; @held), it stays stopped until
 * the end of the drain, so probes attached from the hook see its first call, and none of the
 * file's code has run since ld.so mapped it.
 */
typedef void (*recorder_module_fn)(void *ctx, pid_t pid, const char *path, uint64_t start,
				   uint64_t end, bool held);
/** recorder_exec_fn - traced process @pid runs a new program (before its modules are announced). */
typedef void (*recorder_exec_fn)(void *ctx, pid_t pid);

/** recorder__on_module_mapped / recorder__on_exec - add a hook (called in the order added). */
int recorder__on_module_mapped(struct recorder *r, recorder_module_fn fn, void *ctx);
int recorder__on_exec(struct recorder *r, recorder_exec_fn fn, void *ctx);

struct tramp_process;
/**
 * recorder__set_trampolines - the target's entry trampolines (include/trampoline.h), checked
 * after each drain that saw the registration guard stop the process. @tp must stay valid
 * until recorder__free() (NULL: none).
 */
void recorder__set_trampolines(struct recorder *r, struct tramp_process *tp);

/** recorder_drain_fn - run at the end of each drain, after the held processes run again. */
typedef void (*recorder_drain_fn)(void *ctx);

/**
 * recorder__on_drain - run @fn(@ctx) at the end of each drain (one hook; NULL: none). @ctx must
 * stay valid until recorder__free() or until the hook is replaced.
 */
void recorder__on_drain(struct recorder *r, recorder_drain_fn fn, void *ctx);

/**
 * recorder__set_call_sites - @pid's calls are redirected to call-site stubs (@redirected), or
 * were written back: if the recorder dies meanwhile, its watchdog writes them back and moves
 * every frame out of the stubs (user/record/record_holds.c). At most 16 processes.
 */
void recorder__set_call_sites(struct recorder *r, pid_t pid, bool redirected);

/** recorder__free - finalize if needed and release. NULL is ignored. */
void recorder__free(struct recorder *r);

#endif
