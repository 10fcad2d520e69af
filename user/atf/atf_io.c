// SPDX-License-Identifier: MIT
/* Diagnostics and durable-write helpers shared by libatf's readers, writer and recovery (atf_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include "atf_int.h"

int atf_diag_set(struct atf_diag *d, const char *path, int err, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return err;
	d->err = err;
	d->offset = offset;
	snprintf(d->file, sizeof(d->file), "%s", path);
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return err;
}

int atf_write_all(int fd, const void *buf, size_t len, size_t *done)
{
	const uint8_t *p = buf;
	size_t sent = 0;
	int err = 0;

	while (sent < len) {
		ssize_t n = write(fd, p + sent, len - sent);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		sent += (size_t)n;
	}
	if (done)
		*done = sent;
	return err;
}

int atf_fsync_parent_dir(const char *path)
{
	char buf[PATH_MAX];
	int fd, err = 0;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	fd = open(dirname(buf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		err = -errno;
	close(fd);
	return err;
}
