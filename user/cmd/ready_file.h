/* SPDX-License-Identifier: MIT */
/* record --ready-file: telling a waiting reader that the probes are attached (ready_file.c). */
#ifndef ATFTRACE_READY_FILE_H
#define ATFTRACE_READY_FILE_H

#include <stdbool.h>

/**
 * ready_file_signal - signal readiness at @path: create it new (O_EXCL|O_NOFOLLOW), or open and
 * close an existing FIFO of the caller's for writing, without blocking. Until a reader has the
 * FIFO open (ENXIO) this returns 1 and the caller tries again later (record's loop does, every
 * tick, draining the ring and hearing SIGINT and SIGTERM meanwhile). A link (even one to
 * nothing), a directory, another user's FIFO or anything else is refused, and so is an existing
 * regular file unless @force (then it is replaced by a new one).
 * Returns 0 when done, 1 while the FIFO waits for its reader, or -EPERM after one error line.
 */
int ready_file_signal(const char *path, bool force);

#endif
