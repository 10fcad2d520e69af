/* SPDX-License-Identifier: MIT */
/* record --call-sites (user/cmd/record_call_sites.c), private to the command layer. */
#ifndef ATFTRACE_RECORD_CALL_SITES_H
#define ATFTRACE_RECORD_CALL_SITES_H

#include <stdbool.h>
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

#endif
