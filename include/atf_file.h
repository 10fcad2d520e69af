/* SPDX-License-Identifier: MIT */
/*
 * Creating files and directories safely (user/atf/atf_io.c), for every writer of atftrace: the
 * thread writer, manifests, session.json, recovery and the exporters' output.
 *
 * Nothing is ever created by following a link another user could have planted:
 *  - a new file is created relative to its directory's fd with O_CREAT|O_EXCL|O_NOFOLLOW;
 *  - a file replaced atomically is written to a random temporary name (O_EXCL|O_NOFOLLOW) in the
 *    same directory, fsynced and renamed over the old one (renaming replaces a link, it never
 *    follows it), then the directory is fsynced;
 *  - a directory is created with mkdirat() and opened with O_NOFOLLOW, and atftrace only creates
 *    anything in a directory that is owned by the caller (or root) and not writable by others
 *    unless sticky, the rules root's perf applies to perf.data.
 * Every file and directory gets exactly the mode set with atf_file_mode_set() (the umask does not
 * narrow it): 0600 files and 0700 directories unless the user loosened it on purpose.
 */
#ifndef ATFTRACE_ATF_FILE_H
#define ATFTRACE_ATF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "atf.h"

/**
 * atf_write_all - write all @len bytes of @buf to @fd, retrying short writes and EINTR.
 * Returns 0 or -errno (-EIO when write() makes no progress); *@done (if not NULL) gets the
 * bytes that did reach the file, also on failure.
 */
int atf_write_all(int fd, const void *buf, size_t len, size_t *done);

#define ATF_FILE_MODE_DEFAULT 0600

/** atf_file_mode_set - mode of every file created from now on (directories: atf_dir_mode()). */
void atf_file_mode_set(mode_t mode);
mode_t atf_file_mode(void);
/** atf_dir_mode - a directory's mode for file mode @mode: the x bit wherever r or w is set. */
mode_t atf_dir_mode(mode_t mode);

/**
 * atf_dir_check_fd - may atftrace create files in the directory open as @fd?
 * Refuses (-EPERM, with the reason in @diag) a directory owned by another user than the caller
 * and root, or writable by group or others without the sticky bit.
 */
int atf_dir_check_fd(int fd, const char *path, struct atf_diag *diag);

#define ATF_DIR_NEW 1u      /* the last component must not exist yet (-EEXIST) */

/**
 * atf_dir_create - create directory @path and its missing parents, and open it
 * Existing leading components are resolved as usual; every directory created, and the one each is
 * created in, is checked with atf_dir_check_fd(), as is @path itself when it already exists.
 * Returns an O_DIRECTORY fd, or a negative errno with the reason in @diag.
 */
int atf_dir_create(const char *path, unsigned flags, struct atf_diag *diag);

/** atf_file_create - create the new file @path (O_EXCL|O_NOFOLLOW, relative to its directory). */
int atf_file_create(const char *path);

/* A file being written under a temporary name, to replace @path when committed. */
struct atf_tmpfile {
	int dirfd, fd;
	unsigned flags;             /* ATF_TMP_* */
	char name[256];             /* the final name in dirfd */
	char tmp[300];              /* the temporary name in dirfd */
	char path[4096];            /* the final path, for messages */
};

/*
 * A file of a session (recover, a manifest): its directory (thread_N, pid_N) is never reached
 * through a link, and the new file belongs to that directory's owner, also when root writes it.
 */
#define ATF_TMP_IN_SESSION  0x1u
#define ATF_TMP_NOREPLACE   0x2u    /* the commit never replaces a name that appeared meanwhile */
#define ATF_TMP_FRESH_MODE  0x4u    /* atf_file_mode(), not the mode of the file it replaces */

/**
 * atf_tmpfile_open - create a random temporary beside @path; it gets the mode of the regular file
 * @path replaces (unless ATF_TMP_FRESH_MODE), or atf_file_mode() when there is none.
 * @flags: ATF_TMP_*.
 */
int atf_tmpfile_open(struct atf_tmpfile *t, const char *path, unsigned flags);
/**
 * atf_tmpfile_commit - fsync, rename over @path (ATF_TMP_NOREPLACE: -EEXIST if @path exists) and
 * fsync the directory; always releases @t.
 */
int atf_tmpfile_commit(struct atf_tmpfile *t);
/** atf_tmpfile_abort - remove the temporary; releases @t. */
void atf_tmpfile_abort(struct atf_tmpfile *t);

/** atf_file_replace - write @len bytes of @buf as the new content of @path (atf_tmpfile_*, @flags). */
int atf_file_replace(const char *path, const void *buf, size_t len, unsigned flags);

struct json_t;
/**
 * atf_file_replace_json - write JSON document @root, indented and ending in a newline, as the new
 * content of @path (atf_file_replace). Takes @root's reference, also on failure; NULL is -ENOMEM.
 */
int atf_file_replace_json(const char *path, struct json_t *root, unsigned flags);

/**
 * atf_open_in_dir - open @path read-only where neither its last component nor its directory's
 * last component may be a symbolic link (DIR/thread_N/index.atf: a session's files are never
 * read through a link that leads out of it). Returns an fd or -errno (-ELOOP for a link).
 */
int atf_open_in_dir(const char *path);

#endif
