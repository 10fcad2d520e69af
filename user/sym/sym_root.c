// SPDX-License-Identifier: MIT
/*
 * Where the paths a target names are opened (include/symbols.h: sym_root_*): debug files by
 * build-id and debuglink, the libraries the loader would find, the files ifuncs are read from.
 *
 * For a process with another root than ours (a chroot, a container's mount namespace) those
 * paths mean something only inside its root, and a host walk of them follows the container's
 * symlinks to the host's files: a debuglink "app.debug -> /etc/shadow" would read the host's
 * shadow file, "-> /dev/zero" would read forever, a FIFO would block the open. So while a
 * lookup root is entered every path is resolved with openat2(RESOLVE_IN_ROOT) under
 * /proc/PID/root, and, in the host's root as well, a file is taken only when it is a regular
 * file of at most the caller's size cap, opened with O_NONBLOCK (a FIFO or device that a
 * symlink names never blocks the open).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "container.h"
#include "symbols.h"

static int root_fd = -1;                /* /proc/PID/root (O_PATH), or -1: the host's root */
static char root_host_path[PATH_MAX];   /* that root as our own paths name it, or "" */

int sym_root_enter(pid_t pid)
{
	char link[64];
	ssize_t n;
	int fd;

	sym_root_leave();
	if (pid <= 0 || !container_other_root(pid))
		return 0;
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	fd = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	root_fd = fd;
	/* a chroot's root is a directory of ours; another mount namespace's reads "/" or worse */
	n = readlink(link, root_host_path, sizeof(root_host_path) - 1);
	root_host_path[n > 1 && root_host_path[0] == '/' ? n : 0] = '\0';
	return 0;
}

void sym_root_leave(void)
{
	if (root_fd >= 0)
		close(root_fd);
	root_fd = -1;
	root_host_path[0] = '\0';
}

bool sym_root_entered(void)
{
	return root_fd >= 0;
}

const char *sym_root_inner(const char *path)
{
	size_t n = strlen(root_host_path);

	if (root_fd < 0 || !n || strncmp(path, root_host_path, n) || path[n] != '/')
		return path;
	return path + n;
}

/* "/proc/self/fd/N": a descriptor this process holds (a container's file opened safely). */
static bool own_descriptor(const char *path)
{
	return !strncmp(path, "/proc/self/fd/", 14);
}

static int open_in_lookup_root(const char *path, int flags)
{
	int fd;

	if (root_fd >= 0 && !own_descriptor(path))
		return openat_in_root(root_fd, sym_root_inner(path), flags);
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* @fd when it is a regular file of at most @max_size bytes, else closed and -errno. */
static int regular_only(int fd, uint64_t max_size)
{
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max_size) {
		close(fd);
		return S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
	}
	return fd;
}

int sym_root_open(const char *path, uint64_t max_size)
{
	return regular_only(open_in_lookup_root(path, O_RDONLY | O_NONBLOCK), max_size);
}

int sym_host_open(const char *path, uint64_t max_size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	return regular_only(fd < 0 ? -errno : fd, max_size);
}

DIR *sym_root_opendir(const char *path)
{
	int fd = open_in_lookup_root(path, O_RDONLY | O_DIRECTORY);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

bool sym_root_readable(const char *path)
{
	int fd = sym_root_open(path, SYM_MAX_FILE_SIZE);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int sym_root_stat(const char *path, struct stat *st)
{
	int fd = open_in_lookup_root(path, O_PATH);
	int err = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st))
		err = -errno;
	close(fd);
	return err;
}

/* The target of symlink @path (inside the lookup root) in @buf, or -1 when it is none. */
static ssize_t link_in_root(const char *path, char *buf, size_t len)
{
	int fd = open_in_lookup_root(path, O_PATH | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = readlinkat(fd, "", buf, len - 1);
	close(fd);
	if (n < 0)
		return errno == EINVAL || errno == ENOENT ? -EINVAL : -errno;
	buf[n] = '\0';
	return n;
}

int sym_root_canonical(const char *path, char *out, size_t outlen)
{
	char todo[PATH_MAX * 2], res[PATH_MAX] = "", target[PATH_MAX];
	int links = 0;

	if (root_fd < 0)
		return realpath(path, out) ? 0 : -errno;
	path = sym_root_inner(path);
	if (snprintf(todo, sizeof(todo), "%s", path) >= (int)sizeof(todo))
		return -ENAMETOOLONG;
	for (char *p = todo; *p;) {
		size_t len, rlen = strlen(res);
		ssize_t n;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len || (len == 1 && p[0] == '.')) {
			p += len;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = strrchr(res, '/');

			if (slash)
				*slash = '\0';
			p += len;
			continue;
		}
		if (rlen + 1 + len >= sizeof(res))
			return -ENAMETOOLONG;
		snprintf(res + rlen, sizeof(res) - rlen, "/%.*s", (int)len, p);
		p += len;
		n = link_in_root(res, target, sizeof(target));
		if (n == -EINVAL)
			continue;
		if (n < 0)
			return (int)n;
		if (++links > 40)
			return -ELOOP;
		res[target[0] == '/' ? 0 : rlen] = '\0';
		/* the rest of the path after the link's target */
		if (strlen(target) + 1 + strlen(p) >= sizeof(todo))
			return -ENAMETOOLONG;
		memmove(todo + strlen(target) + 1, p, strlen(p) + 1);
		memcpy(todo, target, strlen(target));
		todo[strlen(target)] = '/';
		p = todo;
	}
	if (snprintf(out, outlen, "%s", res[0] ? res : "/") >= (int)outlen)
		return -ENAMETOOLONG;
	return 0;
}
