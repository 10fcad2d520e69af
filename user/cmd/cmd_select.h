/* SPDX-License-Identifier: MIT */
/*
 * What the reading subcommands (dump, export, report, graph) look at: which processes of a
 * session (--pid, or all), which thread (--thread), and which time range (--from/--to, times
 * since the session start in the one time syntax of timefmt.h). One argp child parses the
 * options for all of them, one function opens what they select.
 */
#ifndef ATFTRACE_CMD_SELECT_H
#define ATFTRACE_CMD_SELECT_H

#include <argp.h>
#include <stdbool.h>
#include <stdint.h>
#include "atf.h"

struct cmd_select_args {
	int64_t pid;                /* -1: not given */
	int64_t thread;             /* -1: all threads */
	bool has_from, has_to;
	uint64_t from_rel, to_rel;  /* ns since the session start */
};

struct cmd_selection {
	struct atf_session **s;     /* the selected processes, in pid_* directory order */
	size_t n;
	int64_t thread_id;          /* thread_<id> to keep in every process, -1: all */
	uint64_t start_ns;          /* session start (the earliest process's): relative times count from it */
	uint64_t from_ns, to_ns;    /* absolute; to_ns = UINT64_MAX for no limit */
};

/*
 * cmd_select_argp - argp child with --pid N, --thread N, --from T, --to T; its input is a
 * struct cmd_select_args (set state->child_inputs[i] at ARGP_KEY_INIT), initialised by the
 * child itself to "everything".
 */
extern const struct argp cmd_select_argp;

/**
 * cmd_select - open what @a selects of @session. With @one_process, a session of several
 * processes needs --pid: the error line lists them, saying that @why_one (e.g. "-F rtc holds
 * one process") when given. Prints one error line and returns -1 on failure, else 0.
 */
int cmd_select(const char *cmd, const char *session, const struct cmd_select_args *a, bool one_process,
	       const char *why_one, struct cmd_selection *sel);
void cmd_selection_free(struct cmd_selection *sel);

struct calltree;

/**
 * cmd_select_calltree - cmd_select() of every process (or --pid's), then the call tree walker
 * over the selection, shaped by CALLTREE_* @flags (CALLTREE_PROCESS_NODES only when there are
 * several processes). Prints one error line and returns NULL on failure; free the tree with
 * calltree__free() and the selection with cmd_selection_free().
 */
struct calltree *cmd_select_calltree(const char *cmd, const char *session, const struct cmd_select_args *a,
				     unsigned flags, struct cmd_selection *sel);

/** cmd_pid_of_dir - the number after "pid_" in the last component of @dir, or -1. */
int64_t cmd_pid_of_dir(const char *dir);

#endif
