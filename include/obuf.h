/* SPDX-License-Identifier: MIT */
/* Buffered output file: large sequential writes, patching of already-written bytes, checked close. */
#ifndef ATFTRACE_OBUF_H
#define ATFTRACE_OBUF_H

#include <stddef.h>
#include <stdint.h>

struct obuf;

struct atf_diag;

#define OBUF_FORCE 0x1u     /* replace an existing file, follow an existing link of the caller's */

/**
 * obuf__open - write @path through a @bufsize-byte buffer (0 = 1 MiB). "-" is standard output.
 * A new file is written as a temporary beside it and renamed into place by a successful
 * obuf__close(), with atf_file_mode(); an existing file or symbolic link is refused
 * (-EEXIST) unless OBUF_FORCE, a directory always. A device or FIFO is written directly.
 * With OBUF_FORCE a link is followed only when it is the caller's and leads to a device, a FIFO,
 * or a file of the caller's in a directory atftrace may write in (atf_dir_check_fd).
 * On failure @diag (may be NULL) holds the one-line reason.
 */
int obuf__open(struct obuf **out, const char *path, size_t bufsize, unsigned flags, struct atf_diag *diag);
/** obuf__write - append @len bytes. Returns 0 or -errno (sticky: later calls fail too). */
int obuf__write(struct obuf *o, const void *data, size_t len);
/** obuf__pwrite - overwrite bytes already appended at @offset (flushes first if needed). */
int obuf__pwrite(struct obuf *o, uint64_t offset, const void *data, size_t len);
/** obuf__offset - bytes appended so far. */
uint64_t obuf__offset(const struct obuf *o);
/** obuf__close - flush, fsync, close; returns the first error seen. NULL is ignored. */
int obuf__close(struct obuf *o);
/** obuf__abort - close and drop the partial output (the temporary; a direct target is left alone). */
void obuf__abort(struct obuf *o);

#endif
