/* SPDX-License-Identifier: MIT */
/*
 * What the session-reading subcommands (dump, info, verify, recover) share: the one SESSION
 * argument, argp naming the program "atftrace <cmd>", and the one-line error for a session
 * that cannot be resolved or opened ("atftrace <cmd>: <file>: <why>").
 */
#ifndef ATFTRACE_CMD_COMMON_H
#define ATFTRACE_CMD_COMMON_H

#include <argp.h>
#include <stdbool.h>
#include <sys/types.h>
#include "atf.h"

/**
 * cmd_parse_pid - @arg as a process id (decimal, 1 to the kernel's largest, 2^30 - 1) into
 * *@pid; false, and *@pid untouched, when it is not one. Every command's -p/--pid reads it so.
 */
bool cmd_parse_pid(const char *arg, pid_t *pid);

/**
 * cmd_session_arg - argp parser step for the single SESSION argument: takes it at ARGP_KEY_ARG
 * (a second one is an error) and requires it at ARGP_KEY_END. Returns ARGP_ERR_UNKNOWN for any
 * other key, so a parser with options calls it for the keys it does not handle itself.
 */
error_t cmd_session_arg(int key, char *arg, struct argp_state *state, const char **session);

/**
 * cmd_parse - argp_parse (ARGP_IN_ORDER) with argv[0] set to "atftrace @cmd", so usage and
 * errors name the subcommand. Returns 0, or 2 (the exit code) when parsing failed.
 */
int cmd_parse(const struct argp *argp, const char *cmd, int argc, char **argv, void *input);

/**
 * cmd_parse_session - cmd_parse for a subcommand whose only argument is SESSION, documented
 * by @doc. Returns 0 with *@session set, or 2.
 */
int cmd_parse_session(const char *cmd, const char *doc, int argc, char **argv, const char **session);

/**
 * cmd_resolve - atf_session_resolve(@session), printing "atftrace @cmd: SESSION: why" when it
 * fails. Returns the number of process directories (free with atf_session_resolve_free), or -1.
 */
int cmd_resolve(const char *cmd, const char *session, char ***dirs);

/**
 * cmd_print_diag - print "atftrace @cmd: <file>[:<offset>]: <message>" for error @err, taking
 * the file and message from @diag when it has them, else @path and atf_strerror(@err).
 */
void cmd_print_diag(const char *cmd, const char *path, int err, const struct atf_diag *diag, bool offset);

/**
 * cmd_open - atf_session__open(@dir) leniently (flags 0), printing the reason when it fails.
 * Returns 0 or the negative error.
 */
int cmd_open(const char *cmd, const char *dir, struct atf_session **s);

#endif
