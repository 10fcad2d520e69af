/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c): libatf reads files by path, so each input
 * is written to a private directory on tmpfs (/dev/shm, else $TMPDIR or /tmp) made once per process.
 */
#ifndef ATFTRACE_FUZZ_COMMON_H
#define ATFTRACE_FUZZ_COMMON_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process's scratch directory, with a pid_1/thread_0 inside it. */
static const char *fuzz_dir(void)
{
	static char dir[256];

	if (!dir[0]) {
		const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		char sub[300];

		snprintf(dir, sizeof(dir), "%s/atftrace-fuzz.XXXXXX", base);
		if (!mkdtemp(dir))
			abort();
		snprintf(sub, sizeof(sub), "%s/pid_1", dir);
		mkdir(sub, 0700);
		snprintf(sub, sizeof(sub), "%s/pid_1/thread_0", dir);
		mkdir(sub, 0700);
	}
	return dir;
}

/* fuzz_path - "<fuzz_dir>/@name" in @buf. */
static const char *fuzz_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", fuzz_dir(), name);
	return buf;
}

/* fuzz_write - replace the file @path with @len bytes of @data (or remove it when @data is NULL). */
static void fuzz_write(const char *path, const uint8_t *data, size_t len)
{
	int fd;

	unlink(path);
	if (!data)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n <= 0)
			abort();
		data += n;
		len -= (size_t)n;
	}
	close(fd);
}

#endif
