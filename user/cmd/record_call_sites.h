/* SPDX-License-Identifier: MIT */
/* record --call-sites (user/cmd/record_call_sites.c), private to the command layer. */
#ifndef ATFTRACE_RECORD_CALL_SITES_H
#define ATFTRACE_RECORD_CALL_SITES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "callsite.h"
#include "record_modules.h"
#include "recorder.h"

/**
 * record_call_sites_attach - redirect the direct calls to @mods' traced functions in @target
 * (include/callsite.h) once their plain probes are attached; @launched: a command seized
 * before its exec, run to its entry first. With @verbose, how many sites were redirected.
 * @filters: record-time filters are on (a C++ process then keeps plain probes). @rec's
 * watchdog writes them back if the recorder dies. 0, or a negative errno after one error line.
 */
int record_call_sites_attach(struct recorder *rec, struct rm_modules *mods, struct probes *probes,
			     pid_t target, pid_t link_pid, bool launched, bool verbose,
			     bool filters, struct cs_process **cp);

/** record_call_sites_restore - the original calls back at the session's end (one line on error). */
void record_call_sites_restore(struct recorder *rec, struct cs_process *cp);

/**
 * record_call_sites_restore_inherited - write back the redirected calls that process @pid
 * inherited from a redirected parent (a fork), from the patch logs of the areas this recorder
 * made; another session's areas are left alone. One line on error, one with @verbose when
 * written. True when @pid had areas of ours.
 */
bool record_call_sites_restore_inherited(pid_t pid, bool verbose);

/**
 * record_call_sites_unsuited - should a session that did not ask for call sites keep plain
 * probes instead (one line says why): the -p process @pid (0: launched) has the stubs or
 * trampolines of another running session.
 */
bool record_call_sites_unsuited(pid_t pid);

/**
 * record_call_sites_restore_forked - at the end of a -p or launched session, the calls that
 * every live descendant of @cp's process inherited written back, as entry trampolines are in
 * the children of a patched process (NULL is ignored; with @verbose, how many).
 */
void record_call_sites_restore_forked(struct cs_process *cp, bool verbose);

struct recorder;
struct cs_watch;

/**
 * record_call_sites_watch - after each drain of @rec, hand back to another tool each function
 * of @cp that it registered a uprobe on (bpf/cs_handback.bpf.h, tracefs's uprobe_events), with
 * one line each (with @verbose, how long the target was stopped). *@out (NULL when @cp is) is
 * freed with record_call_sites_watch_free() after recorder__free(). 0 or -ENOMEM.
 */
int record_call_sites_watch(struct recorder *rec, struct probes *probes, struct cs_process *cp,
			    bool verbose, struct cs_watch **out);

/**
 * record_call_sites_watch_many - the same watch over the *@ncps processes of @cps (-a: they
 * change), without a hook: the caller runs record_call_sites_watch_poll(*@out) after each drain.
 */
int record_call_sites_watch_many(struct probes *probes, struct cs_process *const *cps,
				 const size_t *ncps, bool verbose, struct cs_watch **out);

/**
 * record_call_sites_reapply - @cp was redirected after registrations @w noted (a module it
 * mapped, a process -a found later): hand the functions they name back in it too, at once.
 */
void record_call_sites_reapply(struct cs_watch *w, struct cs_process *cp);

/** record_call_sites_watch_poll - hand back what registrations noted since the last call. */
void record_call_sites_watch_poll(void *ctx);

/**
 * record_call_sites_arm - watch for other tools' uprobes on @mods' files before any call is
 * redirected (one line when that cannot be done).
 */
void record_call_sites_arm(struct rm_modules *mods, struct probes *probes);

/** record_call_sites_watch_free - release (NULL is ignored). */
void record_call_sites_watch_free(struct cs_watch *w);

/**
 * record_cs_parse_uprobe_event - the file and offset of a line of tracefs's uprobe_events
 * ("p:GROUP/EVENT /path:0xOFFSET[(0xREF)] [args]", or r:), cut in place in @line. False for
 * any other line.
 */
bool record_cs_parse_uprobe_event(char *line, const char **path, uint64_t *off);

/**
 * record_call_sites_mapped - rm_modules_on_mapped()'s hook for --call-sites (@ctx: the
 * target's cs_watch, from record_call_sites_watch()): a module @pid mapped later gets its own
 * calls redirected, and its calls into the traced modules; the process is stopped only for the
 * writes. Functions handed back before are handed back in it at once.
 */
void record_call_sites_mapped(struct rm_modules *mods, pid_t pid, const char *path, void *ctx);

struct cs_all;
struct rs_target;

/**
 * record_call_sites_all - record -a --call-sites (user/cmd/record_call_sites_all.c): once the
 * plain probes of @mods are attached for every process, redirect the calls of each running
 * process that maps a traced module (as @sys's --comm and --pid-filter narrow; with --cgroup
 * each at its first traced call), then, after each drain of @rec, those of each process it
 * records later or that called exec, and the modules they map later; one -v line per process.
 * Tail calls too unless @filters (record-time filters are on). *@out is restored with record_call_sites_all_restore() and freed with
 * record_call_sites_all_free() after recorder__free(). 0 or -ENOMEM.
 */
int record_call_sites_all(struct recorder *rec, struct rm_modules *mods, struct probes *probes,
			  const struct rs_target *sys, bool verbose, bool filters, struct cs_all **out);

/** record_call_sites_all_restore - write the original calls back in every live process. */
void record_call_sites_all_restore(struct cs_all *a);

/** record_call_sites_all_free - release (restores first; NULL is ignored). */
void record_call_sites_all_free(struct cs_all *a);

#endif
