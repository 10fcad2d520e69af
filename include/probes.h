/* SPDX-License-Identifier: MIT */
/*
 * The BPF side as the recorder sees it (user/probe/probes.c). Follows libbpf-bootstrap order:
 * probes__open() opens the skeleton, sets rodata and map sizes, loads; probes__attach_module()
 * attaches; the recorder polls probes__ring_fd() / consumes with its own ring_buffer.
 */
#ifndef ATFTRACE_PROBES_H
#define ATFTRACE_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "symbols.h"

struct arg_fn_spec;

struct probe_opts {
	size_t ring_size;           /* bytes, power of two, >= 4 MiB by default */
	uint32_t wakeup_bytes;      /* force a wakeup when the ring holds more than this */
	bool system_wide;           /* no tgid filter (record -a) */
	bool follow_fork;           /* add children of traced processes to the filter */
	uint64_t cgroup_id;         /* 0: no cgroup filter */
	/* detail lane: registers and stack snapshots */
	bool detail_always;
	uint32_t stack_bytes;       /* 0..256 */
	bool verbose;               /* libbpf messages to stderr */
	bool unwind_hooks;          /* C++ unwind hooks may be attached (loaded on first use) */
	bool reg_guard;             /* load the registration guard (probes__guard_pid), x86_64 */
	bool call_sites;            /* load the call-site programs (probes__attach_site_probes) */
	/* system-wide filters (record -a), see bpf/filter.bpf.h */
	uint32_t cgroup_level;      /* v2: level of the cgroup_id directory (root = 0) */
	uint32_t cgroup_v1_ssid;    /* v1: controller's subsystem id + 1; 0 = cgroup_id is v2 */
	char comm[16];              /* "" or a process name (comm of the thread group leader) */
	bool announce_tasks;        /* send REC_PROC_INFO once per thread (record -a) */
	bool exclude_self;          /* never trace the recorder's own process (record -a) */
	/* detail triggers (bpf/detail.bpf.h): --detail-on functions and window limits */
	const uint64_t *detail_trigger_ids; /* function ids that open a window at their CALL */
	size_t ndetail_triggers;
	uint64_t detail_on_count;   /* window = this many detail events; 0: until the trigger returns */
	uint64_t detail_on_ns;      /* window = this long after the trigger's CALL; 0: no limit */
	/* typed arguments (bpf/args.bpf.h): functions with -A/-R/--auto-args specs */
	bool args_wanted;           /* -A/-R/--auto-args given: the lookup is compiled in */
	const uint64_t *arg_fn_ids;
	const struct arg_fn_spec *arg_fn_specs;     /* bpf/args.h, one per id */
	size_t narg_fns;
	uint32_t string_bytes;      /* the string cap, 1..255 */
	/* record-time call filters (bpf/callfilter.bpf.h): -D, -t, -F, -N, -T, --trace */
	bool call_filter;           /* any of them */
	uint32_t filter_max_depth;  /* -D: levels kept; 0: no limit */
	uint64_t filter_min_ns;     /* -t: shortest call kept; 0: none */
	bool filter_focus;          /* -F given: calls start outside every -F subtree */
	bool filter_trace_off;      /* --trace=off: the trace_on/trace_off switch starts off */
	const uint64_t *filter_fn_ids;          /* functions with a filter action ... */
	const struct filter_fn *filter_fn_vals; /* ... and what they do (bpf/atftrace.h) */
	size_t nfilter_fns;
};

enum probe_link_kind { PROBE_LINK_SESSION, PROBE_LINK_MULTI, PROBE_LINK_PERF };

struct probes;

int probes__open(struct probes **out, const struct probe_opts *opts);

/** probes__add_pid - trace process @tgid (tgid filter in BPF). */
int probes__add_pid(struct probes *p, pid_t tgid);

/**
 * probes__attach_module - attach entry and return probes to every selected function of @m
 * (except those entered through a trampoline, sym_func.via_tramp), with function_id as each
 * offset's cookie, using one uprobe-session link (or one
 * uprobe_multi link for entries and one for returns; per-function perf uprobes only on
 * kernels without multi links). @pid restricts the link to one process (0 = all).
 * Returns the number of functions attached.
 */
int probes__attach_module(struct probes *p, const struct sym_module *m, pid_t pid);

/**
 * probes__attach_sites - attach entry and return probes at @n file @offsets of @path with
 * @cookies (function ids), in one link of the session's kind, owned by @owner (for
 * probes__detach_owner). Used for the trampolines' file. 0, or a negative errno.
 */
int probes__attach_sites(struct probes *p, const void *owner, const char *path,
			 const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid);

/* What a call-site probe is (user/patch/callsite_plan.h): which program it runs. */
enum probe_site_kind {
	PROBE_SITE_ENTRY,           /* a function's entry block E_f (atf_site_fn_entry) */
	PROBE_SITE_RETURN,          /* a return block R_f, or an indirect stubs' R (atf_site_fn_return) */
	PROBE_SITE_TAIL,            /* a function's tail entry T_f (atf_site_tail) */
};

/**
 * probes__attach_site_probes - call-site probes of one @kind in the file @path (a module's
 * memfd, user/patch/callsite.c): one at each of @offs (@n) with @cookies (function ids), in one
 * uprobe_multi link owned by @owner. Needs probe_opts.call_sites and multi links. 0, or a
 * negative errno (nothing attached).
 */
int probes__attach_site_probes(struct probes *p, const void *owner, const char *path,
				enum probe_site_kind kind, const uint64_t *offs,
				const uint64_t *cookies, uint32_t n, pid_t pid);

/**
 * probes__attach_plain_entries - a function's own plain probe at each of the @n offsets @offs
 * of the file @path (user/patch/callsite_plain.c: `nop; jmp body` blocks), cookies @cookies
 * (function ids): entry and return, in a link of the session's kind (a session link, or a
 * uprobe_multi entry and return pair) with programs of their own (atf_site_plain*), owned by
 * @owner. Needs probe_opts.call_sites. 0, or a negative errno (nothing attached).
 */
int probes__attach_plain_entries(struct probes *p, const void *owner, const char *path,
				 const uint64_t *offs, const uint64_t *cookies, uint32_t n, pid_t pid);

/**
 * probes__detach_owner - close the links probes__attach_module(@owner) or
 * probes__attach_sites(@owner) made. Returns how many were closed.
 */
int probes__detach_owner(struct probes *p, const void *owner);

/**
 * probes__attach_unwind_hooks - let C++ exceptions pass traced frames; close them at the catch
 * Attaches an entry probe on __cxa_begin_catch in the C++ runtime @libstdcxx_path (e.g. from
 * sym_resolve_library(pid, "libstdc++.so.6")); it emits EXCEPTION events for the traced frames
 * the throw skipped, at the moment of the catch. Without it they are closed at the thread's
 * next traced call or return. Also hooks the unwinder's entry points in libgcc_s: a thread
 * that raises or catches an exception with uretprobes pending is stopped (SIGSTOP) and a
 * REC_UNWIND_FIXUP record asks the ring's reader to rewrite its return-address slots and send
 * SIGCONT (user/record/recorder_unwind.c): only a reader that does so may attach these hooks.
 * @pid as for probes__attach_module. Call it before probes__attach_module: in a running
 * program, a throw through a traced frame before the hooks exist ends in std::terminate.
 * 0, or a negative errno (-ENOENT: no __cxa_begin_catch in that file; -EOPNOTSUPP:
 * probes__open() was not asked for them, probe_opts.unwind_hooks).
 */
int probes__attach_unwind_hooks(struct probes *p, const char *libstdcxx_path, pid_t pid);

/**
 * probes__attach_unwinder - the same hooks on whichever unwinder entry points the file at @path
 * defines itself: _Unwind_RaiseException, _Unwind_ForcedUnwind and _Unwind_Resume_or_Rethrow
 * (libgcc_s, or a static copy of the unwinder in a program) and __cxa_begin_catch (libstdc++).
 * Only its own symbol tables are read. Returns how many entry points were hooked (0: the file
 * has none), or -errno (printed).
 */
int probes__attach_unwinder(struct probes *p, const char *path, pid_t pid);

/**
 * probes__attach_dl_hook - an entry probe on _dl_debug_state of the dynamic loader @ldso_path
 * (ld.so calls it around every change of its list of modules: start-up, dlopen, dlclose); it
 * sends REC_DL_STATE records for traced processes (@pid as for probes__attach_module).
 * 0, or a negative errno (-ENOENT: no such symbol).
 */
int probes__attach_dl_hook(struct probes *p, const char *ldso_path, pid_t pid);

/**
 * probes__set_holds - stop traced processes (SIGSTOP, REC_TASK_HELD in the record) at exec
 * and/or at ld.so's debug-state call, so the ring's reader can attach new modules before they
 * run; the reader then sends SIGCONT. probes__stop_unwind_holds() ends these holds too.
 */
void probes__set_holds(struct probes *p, bool at_exec, bool at_dl_state);

/**
 * probes__stop_unwind_holds - no thread is stopped for an unwind fix-up after this returns
 * (the ring reader's last drain then sees every REC_UNWIND_FIXUP there will be). 0, or
 * -ETIMEDOUT if a hook stayed in flight for a second.
 */
int probes__stop_unwind_holds(struct probes *p);

/** probes__ring_fd - the ring buffer map fd for ring_buffer__new(). */
int probes__ring_fd(const struct probes *p);

/* What the probes could not write so far, summed over all CPUs (bpf/atftrace.bpf.c). */
struct probe_losses {
	uint64_t events;            /* index events; a lost CALL counts with its RETURN */
	uint64_t detail;            /* detail records (their event was recorded plain, or lost) */
	uint64_t records;           /* other ring records: thread exit/fork/exec, identity, unwind */
	uint64_t unattributed;      /* the part of events that is in no thread's count */
};

/** probes__lost - the loss counters as they are now. */
void probes__lost(const struct probes *p, struct probe_losses *out);

struct thread_loss;

/**
 * probes__thread_lost - the loss counts of thread @tid into @out (bpf/atftrace.h); with @take
 * they are removed (the thread has ended, and its tid may be reused). 1 if it lost events,
 * 0 if not, or a negative errno.
 */
int probes__thread_lost(struct probes *p, uint32_t tid, bool take, struct thread_loss *out);

/** probes__lost_thread_next - the tid after @prev (NULL: the first) with loss counts; -ENOENT at the end. */
int probes__lost_thread_next(struct probes *p, const uint32_t *prev, uint32_t *tid);

struct thread_filtered;

/**
 * probes__thread_filtered - the calls of thread @tid the record-time filters did not record, by
 * reason (bpf/atftrace.h); with @take they are removed. 1 if it has counts, 0 if not, or a
 * negative errno.
 */
int probes__thread_filtered(struct probes *p, uint32_t tid, bool take, struct thread_filtered *out);

/** probes__filtered_thread_next - the tid after @prev (NULL: the first) with filtered counts; -ENOENT at the end. */
int probes__filtered_thread_next(struct probes *p, const uint32_t *prev, uint32_t *tid);

/** probes__filtered_unattributed - filtered calls of threads the per-thread map had no room for. */
uint64_t probes__filtered_unattributed(const struct probes *p);

/**
 * probes__flush_batches - once the function links are closed: every thread's batch of events
 * (bpf/batch.bpf.h) into the ring. Returns how many batches the ring had no room for (drain
 * it and call again), or a negative errno. On the @last try, those are counted lost instead.
 */
int probes__flush_batches(struct probes *p, bool last);

struct rec_batch;

/**
 * probes__take_parked - the batch of events that thread @tid left when the ring had no room
 * (bpf/batch.bpf.h), into @out, and out of the map. 1 if there was one, 0 if not, or a
 * negative errno.
 */
int probes__take_parked(struct probes *p, uint32_t tid, struct rec_batch *out);

/** probes__parked_pid - the process of thread @tid's parked batch, left in the map: 1, 0 or -errno. */
int probes__parked_pid(struct probes *p, uint32_t tid, uint32_t *pid);

/** probes__parked_next - the tid after @prev (NULL: the first) with a parked batch; -ENOENT at the end. */
int probes__parked_next(struct probes *p, const uint32_t *prev, uint32_t *tid);

/** probes__link_kind - what probes__attach_module used. */
enum probe_link_kind probes__link_kind(const struct probes *p);

/**
 * probes__detail_set - turn the global detail switch on or off (every event of every traced
 * thread gets registers and a stack snapshot while it is on); effective for the next probe hit.
 */
void probes__detail_set(struct probes *p, bool on);

/** probes__detail_get - the global detail switch as it is now. */
bool probes__detail_get(const struct probes *p);

/**
 * probes__held_pids - the held set (bpf/holds.bpf.h), @n slots of the probes' mmaped .bss: the
 * processes a hold of ours stopped and nobody resumed yet (0: a free slot). It stays mapped in
 * a child forked after probes__open() (the recorder's watchdog).
 */
uint64_t *probes__held_pids(const struct probes *p, size_t *n);

/**
 * probes__function_link_ids - the BPF link ids of the open function links (session / multi;
 * perf uprobes have none). *@ids is malloc'ed; the caller frees it. 0, or a negative errno.
 */
int probes__function_link_ids(const struct probes *p, uint32_t **ids, size_t *n);

/**
 * probes__arg_spec_set - give function @id the typed-argument spec @s (bpf/args.h) while the
 * probes run, e.g. for a library mapped later. -E2BIG when the map is full.
 */
int probes__arg_spec_set(struct probes *p, uint64_t id, const struct arg_fn_spec *s);

/**
 * probes__detach_functions - detach every function probe (probes__attach_module); the unwind
 * hooks, the tracepoints and the ring stay. No new uretprobe is pending in any thread after
 * this returns; the ones pending already return through the kernel's trampoline as before.
 */
void probes__detach_functions(struct probes *p);

/** probes__free - detach everything and release. NULL is ignored. */
void probes__free(struct probes *p);

/**
 * probes__guard_pid - guard process @pid (@on) or stop guarding it: another process's syscall
 * that may register a uprobe stops it and sends REC_REG_GUARD (bpf/reg_guard.bpf.h). The guard
 * programs are attached at the first call. 0, or a negative errno: -EOPNOTSUPP when the guard
 * was not loaded or cannot name processes (a recorder in a pid namespace), -ENOSPC when
 * GUARD_MAX_PIDS processes are guarded already.
 */
int probes__guard_pid(struct probes *p, pid_t pid, bool on);

/**
 * probes__guard_refresh_tp_ids - (re)read the machine's tracepoint ids from tracefs into the
 * guard's map, so that opening a static tracepoint (perf stat -e 'sched:*') stops nothing
 * (bpf/reg_guard.bpf.h). Done when the guard starts, and by probes__guard_tp_ids_stale() when
 * an id it did not know was opened. How many ids, or a negative errno (no tracefs: then every
 * tracepoint event stops the guarded processes, as a uprobe event might).
 */
int probes__guard_refresh_tp_ids(struct probes *p);

/**
 * probes__guard_tp_ids_stale - was a tracepoint id opened that the guard's map does not have?
 * Then read them again (at most once a second). True when it read them.
 */
bool probes__guard_tp_ids_stale(struct probes *p);

/**
 * probes__guard_prune - forget the processes that BPF guards for sharing a guarded process's
 * memory (clone(CLONE_VM), vfork) and that have exited: a program that spawns thousands would
 * fill the map. How many (at most 64 a call).
 */
int probes__guard_prune(struct probes *p);

/**
 * probes__guard_tp_skipped - how many opens of a static tracepoint the guard let through
 * without stopping anything.
 */
uint64_t probes__guard_tp_skipped(const struct probes *p);

/**
 * probes__watch_stops - attach the program that notices someone else stopping a process we
 * hold (bpf/holds.bpf.h), once. 0, or a negative errno.
 */
int probes__watch_stops(struct probes *p);

/**
 * probes__guard_ready - is the registration guard loaded, and its programs attached (done
 * here, once)? 0, or a negative errno (-EOPNOTSUPP: not loaded).
 */
int probes__guard_ready(struct probes *p);

/**
 * probes__guard_unannounced - how many processes the guard stopped without a REC_REG_GUARD
 * record (the ring was full): the recorder then holds and checks every guarded process.
 */
uint64_t probes__guard_unannounced(const struct probes *p);

/**
 * probes__fork_notes_take - take (and delete) up to @cap of the forked children noted in
 * fork_notes (bpf/fork_hold.bpf.h): their pids into @pids, each parent's pid | FORK_NOTE_*
 * flags into @notes. Returns how many; 0 when none is waiting (or not on x86_64).
 */
int probes__fork_notes_take(struct probes *p, uint32_t *pids, uint64_t *notes, size_t cap);

/** probes__forks_unnoted - children not noted because fork_notes was full (never stopped). */
uint64_t probes__forks_unnoted(const struct probes *p);

/**
 * probes__guard_settle - wait (at most @timeout_ms) until no registering syscall of another
 * process is in flight. 0, or -ETIMEDOUT.
 */
int probes__guard_settle(struct probes *p, unsigned int timeout_ms);

struct cs_hb_inode;
struct cs_hb_note;

/**
 * probes__handback_arm - watch for other tools' uprobes on the files @files (@n; record
 * --call-sites, bpf/cs_handback.bpf.h): fill the notice's map and attach its programs. 0, or a
 * negative errno (-EOPNOTSUPP: not loaded, not x86_64).
 */
int probes__handback_arm(struct probes *p, const struct cs_hb_inode *files, size_t n);

/**
 * probes__handback_take - take (and delete) up to @cap of the registrations noted since the last
 * call into @out; *@overflowed when a note had no room in the map (which file is not known).
 * Returns how many; 0 at once when nothing was noted.
 */
int probes__handback_take(struct probes *p, struct cs_hb_note *out, size_t cap, bool *overflowed);

#endif
