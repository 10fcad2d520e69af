/* SPDX-License-Identifier: MIT */
/* Internals shared by the recorder's files (user/record/recorder*.c); nothing else includes it. */
#ifndef ATFTRACE_RECORDER_INT_H
#define ATFTRACE_RECORDER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "atf.h"
#include "clock.h"
#include "recorder.h"

struct rec_process;

/* One OS thread's files: thread_<dir_id>/ inside its process directory. */
/* Events of a thread that were not written (struct thread_loss in bpf/atftrace.h). */
struct rec_loss {
	uint64_t calls, returns;
	uint64_t first_ns, last_ns; /* when the first and the last of them were made; 0: none */
};

struct rec_thread {
	struct rec_process *proc;
	uint32_t dir_id;            /* == its index in proc->threads and in the manifest's threads */
	uint32_t tid;
	struct atf_thread_writer *w;    /* NULL once finalized (or if it could not be created) */
	bool dirty;                 /* appended since the last flush */
	bool ended;                 /* finalized: a later event with this tid is a new thread */
	uint64_t events, detail_events;
	uint64_t first_ts, last_ts;
	struct rec_loss lost;       /* taken from the probes' per-thread counts at its end */
	uint64_t filtered[ATF_FILTERED_REASONS];    /* calls the record-time filters left out, likewise */
};

enum rec_proc_state {
	REC_PROC_LIVE,              /* being recorded */
	REC_PROC_GONE,              /* exited: finalize once the ring is drained */
	REC_PROC_ENDED,             /* files final, manifest written */
};

struct rec_process {
	pid_t pid;
	char *dir;                  /* <session>/pid_<PID> */
	struct atf_manifest *man;
	struct rec_thread **threads;
	size_t nthreads, cap;
	int pidfd;                  /* readable once the whole process has exited; -1 if none */
	enum rec_proc_state state;
	bool expect_exec;           /* gated child: its first exec starts the target */
	bool manifest_dirty;
	bool reaped;
	int exit_status;
	uint64_t last_save_ns;      /* CLOCK_MONOTONIC of the last manifest write */
	const char *end_reason;     /* static string, or end_buf */
	char end_buf[48];           /* "target killed by SIGKILL" */
	int exit_code;              /* last exit code of a thread (REC_TASK_EXIT), -1 before */
	uint32_t execs;             /* execs it called while recorded (recorder__process) */
	uint64_t start_ticks;       /* system-wide: /proc/PID/stat start time, 0 if unknown */
	uint64_t filtered_other[ATF_FILTERED_REASONS];  /* filtered calls of its threads without files */
};

struct recorder {
	struct recorder_opts opts;
	char *session_dir;
	struct ring_buffer *rb;
	int epfd;
	const struct sym_module **modules;
	size_t nmodules;
	struct rec_process **procs;
	size_t nprocs;
	struct rec_process *last_proc;  /* lookup cache */
	/* tid -> current rec_thread; open addressing, linear probing, never shrinks */
	struct rec_thread **tid_slots;
	size_t tid_cap, tid_used;
	struct rec_thread *last_thread; /* lookup cache: events come in bursts per thread */
	struct rec_thread **dirty;
	size_t ndirty, dirty_cap;
	struct recorder_stats st;
	bool write_error_reported;
	bool finished;
	/* system-wide session index, session.json (user/record/recorder_session.c) */
	bool index_dirty;
	uint64_t index_saved_ns;
	char index_start_time[32];
	const char *end_reason;     /* the session's, once finished (static) */
	struct rec_unwind *unwind;  /* C++ unwind fix-ups (user/record/recorder_unwind.c), lazily made */
	bool lost_final;            /* finished: lost holds the counts the manifests were written with */
	struct probe_losses lost;
	struct tramp_process *tramps;  /* the target's entry trampolines (record_tramp_guard.c) */
	bool guard_pending;         /* the registration guard stopped it: check after the drain */
	uint64_t guard_events;      /* REC_REG_GUARD records seen */
	uint64_t guard_unannounced;     /* the guard's stops without a record, when last looked */
	recorder_drain_fn drain_fn; /* run after each drain (record_drain_hook.c), or NULL */
	void *drain_ctx;
	struct rec_watch *watch;    /* modules that appear later (user/record/record_watch.c), lazily */
	pid_t watchdog;             /* resumes what we hold if we die (user/record/record_holds.c) */
	struct nop5_sites *nop5_sites;  /* the probed 5-byte nops, shared with the watchdog */
	struct held_seen *held_seen;    /* per held process: the stops whose records were read */
	size_t nheld_seen, held_seen_cap;
	struct return_slots *slots; /* pending return instances, for the detach (recorder_detach.c) */
	uint64_t drain_deadline_ns; /* a tick's drain stops here (0: reads until the ring is empty) */
	uint64_t drain_records;
	bool drain_cut;             /* the last drain stopped at its deadline */
	/* CLOCK_BOOTTIME - CLOCK_MONOTONIC at the start: the probes' times + this = the files' */
	uint64_t boot_offset_ns;
};

/* user/record/recorder_threads.c: tables and lifecycle (below the ring, the session and recorder.c) */
struct rec_thread *rec_tid_lookup(const struct recorder *r, uint32_t tid);
struct rec_process *rec_proc_find(struct recorder *r, pid_t pid);
/** rec_thread_new - first event of @tid in @p: thread_<n>/ files, manifest entry, tid table. */
struct rec_thread *rec_thread_new(struct recorder *r, struct rec_process *p, uint32_t tid);
/** rec_thread_end - finalize and close one thread's files; its counts stay for the manifest. */
void rec_thread_end(struct recorder *r, struct rec_thread *t);
/** rec_thread_name_late - name @t from the kernel's comm when /proc could not (it exited first). */
void rec_thread_name_late(struct recorder *r, struct rec_thread *t, const char *comm, size_t len);
/** rec_process_end - finalize every thread of @p and write its manifest with @reason (static). */
void rec_process_end(struct recorder *r, struct rec_process *p, const char *reason);
void rec_mark_dirty(struct recorder *r, struct rec_thread *t);
/** rec_append_event - one event (@dp: its detail, or NULL) to thread @t's writer, and the counts. */
struct atf_detail_in;
void rec_append_event(struct recorder *r, struct rec_thread *t, uint64_t ts, uint64_t function_id,
		      uint32_t kind, uint32_t depth, const struct atf_detail_in *dp);
/**
 * rec_report_write_error - note a failed write; the first one is printed. The events it lost
 * are counted by the caller (write_errors), so none is counted twice.
 */
void rec_report_write_error(struct recorder *r, const char *what, const char *path, int err);

/** rec_thread_take_parked - the events @t left in a batch the ring had no room for, before its end. */
void rec_thread_take_parked(struct recorder *r, struct rec_thread *t);
/**
 * rec_process_claim_losses - a thread of @p that lost events, or left them parked, but has no
 * files gets its thread_<n>/.
 */
void rec_process_claim_losses(struct recorder *r, struct rec_process *p);
/** rec_process_claim_filtered - filtered calls of @p's threads that have no files, into p->filtered_other. */
void rec_process_claim_filtered(struct recorder *r, struct rec_process *p);

/* user/record/recorder_ring.c */
/** rec_on_record - ring_buffer sample callback: dispatch one ring record. */
int rec_on_record(void *ctx, void *data, size_t size);
/**
 * rec_adopt_parked - at the session's end, a process that left a parked batch but that the
 * recorder never heard of (every record of it found the ring full) is added, so that its end
 * takes the batch.
 */
void rec_adopt_parked(struct recorder *r);

/* user/record/recorder_losses.c */
/** rec_losses - the probes' loss counters: live, or as the session's manifests give them once finished. */
void rec_losses(const struct recorder *r, struct probe_losses *out);
/** rec_thread_losses - @t's lost CALLs and RETURNs so far; @take at its end (they leave the probes' map). */
void rec_thread_losses(struct recorder *r, struct rec_thread *t, bool take, struct rec_loss *out);

/* user/record/recorder_filter.c */
/**
 * rec_thread_filtered - @t's calls left out by the record-time filters so far, by reason, into
 * @out; @take at its end (they leave the probes' map).
 */
void rec_thread_filtered(struct recorder *r, struct rec_thread *t, bool take, uint64_t *out);
/** rec_filtered_manifest - the filter fields of @p's manifest, from its threads. */
void rec_filtered_manifest(struct recorder *r, struct rec_process *p);

/* user/record/recorder_unwind.c: C++ exceptions through uretprobed frames */
struct rec_unwind;
/* How long to wait for a thread to stop (an unwind hold, the detach) before giving up. */
#define REC_STOP_WAIT_NS (2ull * 1000 * 1000 * 1000)
char rec_thread_state(pid_t pid, pid_t tid, long *nthreads);
bool rec_state_gone(char s);
void rec_backoff(uint64_t started_ns, long *pause_ns);
/** rec_unwind_holding - is a process held by a C++ unwind fix-up or the guard, to resume? */
bool rec_unwind_holding(const struct recorder *r);
/** rec_watch_holding - is a process held at an exec or a dlopen, to resume after this drain? */
bool rec_watch_holding(const struct recorder *r);
/**
 * rec_holds_start - fork the watchdog that resumes the held set if the recorder dies (before
 * any hold can happen). 0, or a negative errno.
 */
int rec_holds_start(struct recorder *r);
/**
 * rec_holds_add_sites - list @m's probed functions that start with a 5-byte nop, where the
 * recorder fixes a child held at its fork, and the watchdog too if the recorder dies.
 */
void rec_holds_add_sites(struct recorder *r, const struct sym_module *m);
struct nop5_site;
/** rec_holds_sites - that list, *@n sites. */
const struct nop5_site *rec_holds_sites(const struct recorder *r, size_t *n);
/** rec_holds_free - release the watchdog's shared list (the watchdog keeps its own mapping). */
void rec_holds_free(struct recorder *r);
/**
 * rec_holds_seen - a hold record for @pid was read: its stop made count @seq (hold_seq). A
 * process is resumed only once the record of every stop of ours in it was read.
 */
void rec_holds_seen(struct recorder *r, pid_t pid, uint32_t seq);
/** rec_holds_seen_all - every stop of ours in @pid so far counts as read (no record to wait for). */
void rec_holds_seen_all(struct recorder *r, pid_t pid);
/**
 * rec_holds_retry - after a drain: resume the held processes whose resume waited for a record
 * still in flight (after 1 s without it, they are resumed all the same).
 */
void rec_holds_retry(struct recorder *r);
/** rec_holds_ours - is @pid in the held set (stopped by a hold of ours, not resumed yet)? */
bool rec_holds_ours(struct recorder *r, pid_t pid);
/**
 * rec_holds_resume - SIGCONT @pid if a hold of ours stopped it (it is in the held set; taken
 * out); a process someone else stopped is left stopped.
 */
void rec_holds_resume(struct recorder *r, pid_t pid);
/** rec_hold - @pid was stopped by a BPF hold: SIGCONT it after this drain (rec_unwind_resume). */
void rec_hold(struct recorder *r, pid_t pid);
/** rec_hold_wait - wait until @tid of held @pid is stopped and none of its threads runs. */
int rec_hold_wait(pid_t pid, pid_t tid);
/** rec_unwind_on_fixup - REC_UNWIND_FIXUP: wait for the stop, write the slots; stays held. */
void rec_unwind_on_fixup(struct recorder *r, const void *data, size_t size);
/** rec_unwind_resume - SIGCONT the processes held since the last call (after each drain). */
void rec_unwind_resume(struct recorder *r);
/** rec_unwind_stop_holds - before the last drain: BPF holds no thread after this. */
void rec_unwind_stop_holds(struct recorder *r);
/** rec_unwind_free - resume anything still held and release. */
void rec_unwind_free(struct recorder *r);
struct rec_unwind_slot;
/** rec_unwind_write_slot - write one return-address slot if it still holds what is expected. */
int rec_unwind_write_slot(pid_t pid, const struct rec_unwind_slot *s, bool *changed);

/* user/record/record_tramp_guard.c: another tool registering a uprobe during the session */
/** rec_tramp_guard_on_record - REC_REG_GUARD: the trampolines are checked after this drain. */
void rec_tramp_guard_on_record(struct recorder *r, const void *data, size_t size);
/** rec_tramp_guard_after_drain - check (and resume) the process the guard stopped. */
void rec_tramp_guard_after_drain(struct recorder *r);
/** rec_tramp_guard_after_resume - re-read the tracepoint ids if an unknown one was opened. */
void rec_tramp_guard_after_resume(struct recorder *r);

/* user/record/record_drain_hook.c */
/** rec_drain_hook_run - the hook of recorder__on_drain(), if any. */
void rec_drain_hook_run(struct recorder *r);

/* user/record/record_forks.c: forked children noted by BPF (bpf/fork_hold.bpf.h) */
/**
 * rec_forks_take - take every child waiting in fork_notes: fix and hold (resumed after this
 * drain) the stopped ones, guard the ones with entry trampolines. At every drain, and at
 * REC_FORK_HOLD (a wakeup).
 */
void rec_forks_take(struct recorder *r);
/** rec_forks_report - at the end: the children BPF could not note (fork_notes was full). */
void rec_forks_report(struct recorder *r);

/* user/record/recorder_detach.c: detach without leaving uretprobe trampolines in the target */
struct rec_detach;
/** rec_detach_prepare - load what the detach needs, before any probe is attached. */
void rec_detach_prepare(struct recorder *r);
/** rec_detach_freeze - detach the function probes; stop the processes with frames still open. */
struct rec_detach *rec_detach_freeze(struct recorder *r);
/** rec_detach_thaw - after the last drain: put their real return addresses back, resume. */
void rec_detach_thaw(struct recorder *r, struct rec_detach *d);

/* user/record/record_watch.c: modules that appear while recording (exec, dlopen) */
struct rec_watch;
/** rec_watch_on_dl_state - REC_DL_STATE: announce newly mapped files; resume a held process later. */
void rec_watch_on_dl_state(struct recorder *r, const void *data, size_t size);
/**
 * rec_watch_on_exec - process @pid called exec: with @new_image, run the exec hooks and announce
 * its mappings; @held: resume it after this drain.
 */
void rec_watch_on_exec(struct recorder *r, pid_t pid, bool new_image, bool held);
/** rec_watch_resume - SIGCONT the processes held since the last call (after each drain). */
void rec_watch_resume(struct recorder *r);
void rec_watch_free(struct recorder *r);

/** rec_manifest_add_module - list @m and its selected functions in @man. */
int rec_manifest_add_module(struct atf_manifest *man, const struct sym_module *m);

/** rec_manifest_build - the first manifest of @p: identity, host, modules, symbols. */
int rec_manifest_build(struct recorder *r, struct rec_process *p, char *const *argv, size_t argc);

/** rec_manifest_save - refresh counts, times and lost events, then write manifest.json. */
int rec_manifest_save(struct recorder *r, struct rec_process *p);

/**
 * rec_session_process_added - a process directory was created in a system-wide session: its
 * manifest's start_time becomes the process's own start (from /proc/PID/stat), and the
 * session index is marked for rewriting. (recorder_manifest.c, below recorder__add_process)
 */
void rec_session_process_added(struct recorder *r, struct rec_process *p);
/** rec_boot_time_s - boot time in seconds since the epoch (btime in /proc/stat), or 0. */
uint64_t rec_boot_time_s(void);
/** rec_manifest_set_start_time - @p's manifest start_time: @after_boot_s after boot @boot_s. */
void rec_manifest_set_start_time(struct rec_process *p, uint64_t boot_s, uint64_t after_boot_s);

/* user/record/recorder_session.c: the processes of a system-wide session, and session.json */

/** rec_session_index_save - write <session>/session.json atomically from the recorder's state. */
int rec_session_index_save(struct recorder *r);

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

/**
 * rec_args_extension - the string block a probe left in the ring record @rec of @room bytes
 * (@rd->args_off, bpf/args.h), as the detail record's extension after the stack
 * (include/atf_args.h) at @out: its length, 0 when there is none, -1 when it does not fit the
 * ring record. A string the probe could not read is read from process @pid's memory when it lies
 * in a mapping nobody can write (user/record/recorder_strings.c).
 */
struct rec_detail;
int rec_args_extension(const uint8_t *rec, size_t room, const struct rec_detail *rd, pid_t pid, uint8_t *out);

#endif
