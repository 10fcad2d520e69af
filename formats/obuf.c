// SPDX-License-Identifier: MIT
/*
 * Buffered output for exporters: one write() per buffer-full, patching of bytes already
 * written (chunk lengths, headers), sticky errors so a full disk is reported once at close.
 * A regular file is written as a temporary beside it and renamed over the path only when the
 * export succeeded, so a failed export never truncates, leaves half of, or deletes a file the
 * user already had; an existing file or link is replaced only when asked (OBUF_FORCE). Standard
 * output ("-"), a device or a FIFO is written directly and never removed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf.h"
#include "atf_file.h"
#include "obuf.h"

struct obuf {
	int fd;
	int err;                /* first error, sticky */
	bool direct;            /* written in place (a pipe, a device), not through a temporary */
	bool is_stdout;         /* -o -: standard output, flushed but never closed */
	struct atf_tmpfile tmp; /* the temporary beside the destination (atf_file.h) */
	uint8_t *buf;
	size_t cap, len;
	uint64_t flushed;       /* bytes already in the file */
};

static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* The one-line reason for a refused output, in @diag (when not NULL); returns @err. */
static int fail(struct atf_diag *diag, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct atf_diag *diag, int err, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return err;
	diag->err = err;
	va_start(ap, fmt);
	vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * With --force, a link is followed only when it is the caller's own, to a device or FIFO, or to a
 * regular file of the caller in a directory atftrace may write in (atf_dir_check_fd): never into
 * another owner's directory. Fills @real with the regular file to replace, if that is where it leads.
 */
static int follow_link(const char *path, const struct stat *lst, char real[PATH_MAX], struct stat *st,
		       struct atf_diag *diag)
{
	char dir[PATH_MAX];
	int fd, err;

	if (lst->st_uid != geteuid())
		return fail(diag, -EPERM, "%s: a symbolic link of uid %u, not yours: "
				    "not followed, even with --force", path, (unsigned)lst->st_uid);
	if (stat(path, st) < 0)
		return fail(diag, -errno, "%s: a symbolic link to %s: not followed", path,
				    errno == ENOENT ? "nothing (it would create its target)" : strerror(errno));
	if (S_ISDIR(st->st_mode))
		return fail(diag, -EISDIR, "%s: a symbolic link to a directory", path);
	if (!S_ISREG(st->st_mode))
		return 0;
	if (!realpath(path, real))
		return fail(diag, -errno, "%s: %s", path, strerror(errno));
	snprintf(dir, sizeof(dir), "%s", real);
	*strrchr(dir, '/') = '\0';
	fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail(diag, -errno, "%s: %s: %s", path, dir, strerror(errno));
	err = atf_dir_check_fd(fd, dir[0] ? dir : "/", diag);
	close(fd);
	if (!err && st->st_uid != geteuid())
		err = fail(diag, -EPERM, "%s is owned by uid %u", real, (unsigned)st->st_uid);
	if (err) {
		char why[sizeof(diag->msg)];

		snprintf(why, sizeof(why), "%s", diag->msg);
		return fail(diag, err, "%s: a symbolic link to %s, not followed: %s", path,
				    real, why);
	}
	return 0;
}

/*
 * Where the output goes: standard output ("-"), a device or FIFO written in place, or a
 * temporary renamed into place. An existing link, file or directory is never replaced unless
 * OBUF_FORCE (and a directory not even then).
 */
static int open_target(struct obuf *o, const char *path, unsigned flags, struct atf_diag *diag)
{
	char real[PATH_MAX] = "";
	struct stat lst, st;
	int err;

	if (!strcmp(path, "-")) {
		o->direct = o->is_stdout = true;
		o->fd = STDOUT_FILENO;
		return 0;
	}
	if (lstat(path, &lst) < 0) {
		if (errno != ENOENT)
			return fail(diag, -errno, "%s: %s", path, strerror(errno));
		/* new: created beside it and renamed in only where still nothing is */
		err = atf_tmpfile_open(&o->tmp, path, ATF_TMP_NOREPLACE | ATF_TMP_FRESH_MODE);
		o->fd = o->tmp.fd;
		return err ? fail(diag, err, "%s: %s", path, strerror(-err)) : 0;
	}
	st = lst;
	if (S_ISDIR(lst.st_mode))
		return fail(diag, -EISDIR, "%s: is a directory", path);
	if (S_ISLNK(lst.st_mode) && !(flags & OBUF_FORCE))
		return fail(diag, -EEXIST, "%s: a symbolic link, not followed without --force (-o - writes "
			    "to standard output)", path);
	if (S_ISREG(lst.st_mode) && !(flags & OBUF_FORCE))
		return fail(diag, -EEXIST, "%s: exists; add --force to replace it", path);
	if (S_ISLNK(lst.st_mode) && (err = follow_link(path, &lst, real, &st, diag)))
		return err;
	if (!S_ISREG(st.st_mode)) {     /* a device or FIFO: written in place, never removed */
		o->direct = true;
		o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (S_ISLNK(lst.st_mode) ? 0 : O_NOFOLLOW));
		if (o->fd < 0)
			return fail(diag, -errno, "%s: %s", path, strerror(errno));
		if (fstat(o->fd, &st) < 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
			close(o->fd);
			return fail(diag, -EAGAIN, "%s: changed while it was opened: refused", path);
		}
		return 0;
	}
	/* --force over a regular file: it takes the session's mode, not the old file's */
	err = atf_tmpfile_open(&o->tmp, real[0] ? real : path, ATF_TMP_FRESH_MODE);
	o->fd = o->tmp.fd;
	return err ? fail(diag, err, "%s: %s", path, strerror(-err)) : 0;
}

int obuf__open(struct obuf **out, const char *path, size_t bufsize, unsigned flags, struct atf_diag *diag)
{
	struct obuf *o = calloc(1, sizeof(*o));
	int err;

	if (!o)
		return -ENOMEM;
	o->cap = bufsize ? bufsize : 1u << 20;
	o->buf = malloc(o->cap);
	if (!o->buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = open_target(o, path, flags, diag);
	if (err)
		goto cleanup;
	*out = o;
	return 0;
cleanup:
	free(o->buf);
	free(o);
	return err;
}

static int obuf_flush(struct obuf *o)
{
	if (o->err || !o->len)
		return o->err;
	o->err = atf_write_all(o->fd, o->buf, o->len, NULL);
	o->flushed += o->len;
	o->len = 0;
	return o->err;
}

int obuf__write(struct obuf *o, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (o->err)
		return o->err;
	if (len >= o->cap) {    /* large blocks bypass the buffer */
		if (obuf_flush(o))
			return o->err;
		o->err = atf_write_all(o->fd, p, len, NULL);
		o->flushed += len;
		return o->err;
	}
	if (o->len + len > o->cap && obuf_flush(o))
		return o->err;
	memcpy(o->buf + o->len, p, len);
	o->len += len;
	return 0;
}

int obuf__pwrite(struct obuf *o, uint64_t offset, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (o->err)
		return o->err;
	if (offset + len > o->flushed + o->len)
		return o->err = -EINVAL;
	/* The part already in the file is patched there; the rest in the buffer. */
	if (offset < o->flushed) {
		size_t n = (size_t)(o->flushed - offset) < len ? (size_t)(o->flushed - offset) : len;

		o->err = pwrite_all(o->fd, p, n, offset);
		if (o->err)
			return o->err;
		p += n;
		len -= n;
		offset += n;
	}
	if (len)
		memcpy(o->buf + (offset - o->flushed), p, len);
	return 0;
}

uint64_t obuf__offset(const struct obuf *o)
{
	return o->flushed + o->len;
}

int obuf__close(struct obuf *o)
{
	int err;

	if (!o)
		return 0;
	obuf_flush(o);
	if (o->direct) {
		if (!o->err && fsync(o->fd) && errno != EINVAL && errno != EROFS)
			o->err = -errno;
		if (!o->is_stdout && close(o->fd) && !o->err)
			o->err = -errno;
	} else if (o->err) {
		atf_tmpfile_abort(&o->tmp);
	} else {
		o->err = atf_tmpfile_commit(&o->tmp);
	}
	err = o->err;
	free(o->buf);
	free(o);
	return err;
}

void obuf__abort(struct obuf *o)
{
	if (!o)
		return;
	if (o->direct && !o->is_stdout)
		close(o->fd);
	else if (!o->direct)
		atf_tmpfile_abort(&o->tmp);
	free(o->buf);
	free(o);
}
