// SPDX-License-Identifier: MIT
/*
 * Buffered output for exporters: one write() per buffer-full, patching of bytes already
 * written (chunk lengths, headers), sticky errors so a full disk is reported once at close.
 * A regular file is written as a temporary beside it and renamed over the path only when the
 * export succeeded, so a failed export never truncates, leaves half of, or deletes a file the
 * user already had. Anything else (a pipe, /dev/stdout) is written directly and never removed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf_file.h"
#include "obuf.h"

struct obuf {
	int fd;
	int err;                /* first error, sticky */
	bool direct;            /* written in place (a pipe, a device), not through a temporary */
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

int obuf__open(struct obuf **out, const char *path, size_t bufsize)
{
	struct obuf *o = calloc(1, sizeof(*o));
	struct stat st;
	int err;

	if (!o)
		return -ENOMEM;
	o->cap = bufsize ? bufsize : 1u << 20;
	o->buf = malloc(o->cap);
	if (!o->buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	o->direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
	if (o->direct) {
		o->fd = open(path, O_WRONLY | O_CLOEXEC);
		err = o->fd < 0 ? -errno : 0;
	} else {
		/* a random name (O_EXCL|O_NOFOLLOW), renamed over the path once the export succeeded */
		err = atf_tmpfile_open(&o->tmp, path);
		o->fd = o->tmp.fd;
	}
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
		if (!o->err && fsync(o->fd) && errno != EINVAL)
			o->err = -errno;
		if (close(o->fd) && !o->err)
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
	if (o->direct)
		close(o->fd);
	else
		atf_tmpfile_abort(&o->tmp);
	free(o->buf);
	free(o);
}
