/* SPDX-License-Identifier: MIT */
/* record's drain loop and summary (user/cmd/record_run.c), private to the command layer. */
#ifndef ATFTRACE_RECORD_RUN_H
#define ATFTRACE_RECORD_RUN_H

#include <stdbool.h>
#include <sys/types.h>

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

/**
 * record_run_to_entry - run the launched command @target (seized before its exec) to its
 * entry point, draining @r meanwhile, and leave it stopped there for the trampolines' or call
 * sites' pt_run_to_entry(). Its exec and the libraries ld.so maps hold it until their probes
 * are attached, as when it runs untraced, so the call sites placed at its entry find every
 * module's probes in place. 0, or a negative errno (-ESRCH: it exited first; any other after
 * one error line): then nothing is placed, the plain probes count.
 */
int record_run_to_entry(struct recorder *r, pid_t target);

/** record_summary - the closing lines: counts, losses, what could not be written, and why. */
void record_summary(const struct recorder *r, const char *session_dir, const char *reason,
		    double seconds);

#endif
