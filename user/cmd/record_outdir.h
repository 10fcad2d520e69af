/* SPDX-License-Identifier: MIT */
/* record's session directory (user/cmd/record_outdir.c), private to the command layer. */
#ifndef ATFTRACE_RECORD_OUTDIR_H
#define ATFTRACE_RECORD_OUTDIR_H

#include <stdbool.h>

/**
 * record_outdir_check - -o may name a new or empty directory, or an earlier session (with
 * @force its process directories and session.json are deleted first). One error line and a
 * negative errno otherwise.
 */
int record_outdir_check(const char *outdir, bool force);

/**
 * record_session_dir - make the session's directory: @outdir itself when given, else a new
 * ada_traces/session_<time>. Returns its malloc'd path, or NULL after one error line.
 */
char *record_session_dir(const char *outdir);

#endif
