// SPDX-License-Identifier: MIT
/*
 * record --ready-file (ready_file.h). A FIFO is what lets a script wait for the probes without
 * polling, but a FIFO with no reader blocks its writer's open(): the recorder, its signals
 * blocked for signalfd, would sit in open() with the target patched and the ring not drained.
 * So the FIFO is opened O_NONBLOCK and tried again until its reader comes, and only the
 * caller's own FIFO is used at all: one that another user planted is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf_file.h"
#include "ready_file.h"

int ready_file_signal(const char *path, bool force)
{
	const char *why = NULL;
	struct stat st;
	int fd, lerr = lstat(path, &st) < 0 ? errno : 0;

	if (!lerr && S_ISREG(st.st_mode) && force)     /* --force: replaced by a new one */
		lerr = unlink(path) < 0 && errno != ENOENT ? errno : ENOENT;
	if (lerr == ENOENT) {
		fd = atf_file_create(path);
		if (fd >= 0)
			close(fd);
		why = fd < 0 ? strerror(-fd) : NULL;
	} else if (lerr) {
		why = strerror(lerr);
	} else if (S_ISLNK(st.st_mode)) {
		why = "a symbolic link: not followed";
	} else if (S_ISREG(st.st_mode)) {
		why = "exists (a regular file): add --force to replace it, or name a new path or a FIFO";
	} else if (!S_ISFIFO(st.st_mode) || st.st_uid != geteuid()) {
		why = S_ISFIFO(st.st_mode) ? "a FIFO of another user: refused" : "not a regular file or a FIFO";
	} else {
		fd = open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENXIO)
			return 1;       /* no reader yet */
		if (fd < 0)
			why = strerror(errno);
		/* what was opened is still our FIFO, not something swapped in meanwhile */
		else if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || st.st_uid != geteuid())
			why = "changed while it was opened: refused";
		if (fd >= 0)
			close(fd);
	}
	if (!why)
		return 0;
	fprintf(stderr, "atftrace record: --ready-file %s: %s\n", path, why);
	return -EPERM;
}

