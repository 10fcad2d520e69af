/* SPDX-License-Identifier: MIT */
/* record's entry trampolines (user/cmd/record_trampolines.c), private to the command layer. */
#ifndef ATFTRACE_RECORD_TRAMPOLINES_H
#define ATFTRACE_RECORD_TRAMPOLINES_H

#include <stdbool.h>
#include <sys/types.h>
#include "record_modules.h"

struct probes;
struct tramp_process;

/**
 * record_trampolines_use - is the target's text written (@way: "call sites" or
 * "--trampolines"): not when turned off (@off: the --no-trampolines option, or -a), nor with
 * perf links or off x86_64, which say so when @way was @asked for, or with @verbose.
 */
bool record_trampolines_use(bool off, bool asked, bool verbose, const char *way,
			    struct probes *probes);

/**
 * record_trampolines_attach - patch @mods' functions in @target (include/trampoline.h) into
 * *@tp; @launched: a command seized before its exec, run to its entry first. With @verbose,
 * how many functions are entered through trampolines. 0 (also when the target died meanwhile),
 * or a negative errno after one error line.
 */
int record_trampolines_attach(struct rm_modules *mods, struct probes *probes, pid_t target,
			      pid_t link_pid, bool launched, bool verbose, struct tramp_process **tp);

/** record_trampolines_restore - the original text back at the session's end (one line on error). */
void record_trampolines_restore(struct tramp_process *tp);

#endif
