/* SPDX-License-Identifier: MIT */
/* record's drain loop and summary (user/cmd/record_run.c), private to the command layer. */
#ifndef ATFTRACE_RECORD_RUN_H
#define ATFTRACE_RECORD_RUN_H

#include <stdbool.h>

struct recorder;
struct detail_args;
struct probes;

/**
 * record_run - drain every 5 ms until a signal (SIGUSR1 flips detail instead), --duration
 * @duration (0: none), or the end of every traced process (unless @until_stopped, -a); a
 * status line on a terminal. @ready: a --ready-file FIFO still waiting for its reader.
 * Returns the end reason, or NULL on a recorder error.
 */
const char *record_run(struct recorder *r, int sigfd, double duration, struct detail_args *detail,
		       struct probes *probes, bool until_stopped, const char *ready, bool force);

/** record_summary - the closing lines: counts, losses, what could not be written, and why. */
void record_summary(const struct recorder *r, const char *session_dir, const char *reason,
		    double seconds);

#endif
