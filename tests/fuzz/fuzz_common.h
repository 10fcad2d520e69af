/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c): libatf reads files by path, so each input
 * is written to a private directory on tmpfs (/dev/shm, else $TMPDIR or /tmp) made once per process,
 * named atftrace-fuzz.<pid>.XXXXXX, and removed with everything in it when the process exits.
 */
#ifndef ATFTRACE_FUZZ_COMMON_H
#define ATFTRACE_FUZZ_COMMON_H

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_scratch[256];

static int fuzz_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	remove(path);
	return 0;
}

/* atexit: the scratch directory goes, whatever the last input left in it. */
static void fuzz_dir_remove(void)
{
	if (fuzz_scratch[0])
		nftw(fuzz_scratch, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process's scratch directory, with a pid_1/thread_0 inside it. */
static const char *fuzz_dir(void)
{
	char *dir = fuzz_scratch;

	if (!dir[0]) {
		const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		char sub[300];

		/* the pid in the name lets tests/fuzz/run.sh check that this very run removed it */
		snprintf(dir, sizeof(fuzz_scratch), "%s/atftrace-fuzz.%d.XXXXXX", base, (int)getpid());
		if (!mkdtemp(dir))
			abort();
		atexit(fuzz_dir_remove);
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
