// SPDX-License-Identifier: MIT
/*
 * Diagnostics and durable-write helpers shared by libatf's readers, writer and recovery (atf_int.h),
 * and the safe creation of files and directories every writer of atftrace uses (atf_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf_file.h"
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

/* ---- safe creation (atf_file.h) --------------------------------------------------------------- */

static mode_t file_mode = ATF_FILE_MODE_DEFAULT;

void atf_file_mode_set(mode_t mode)
{
	file_mode = mode & 0777;
}

mode_t atf_file_mode(void)
{
	return file_mode;
}

mode_t atf_dir_mode(mode_t mode)
{
	mode &= 0777;
	return mode | (mode & 0444) >> 2 | (mode & 0222) >> 1;
}

int atf_dir_check_fd(int fd, const char *path, struct atf_diag *diag)
{
	struct stat st;
	uid_t me = geteuid();

	if (fstat(fd, &st) < 0)
		return atf_diag_set(diag, path, -errno, 0, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return atf_diag_set(diag, path, -ENOTDIR, 0, "%s: not a directory", path);
	if (st.st_uid != me && st.st_uid != 0)
		return atf_diag_set(diag, path, -EPERM, 0, "%s is owned by uid %u, not by %s: refusing to "
				    "create files in it", path, (unsigned)st.st_uid, me ? "this user or root" : "root");
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return atf_diag_set(diag, path, -EPERM, 0, "%s is writable by %s (mode %04o) and not sticky: "
				    "refusing to create files in it", path,
				    st.st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st.st_mode & 07777));
	return 0;
}

/* Open the directory @name in @dirfd, never through a link, and check it; @created: fix its mode. */
static int subdir_open(int dirfd, const char *name, const char *shown, bool created, struct atf_diag *diag)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int err;

	if (fd < 0)
		return atf_diag_set(diag, shown, -errno, 0, "%s: %s", shown,
				    errno == ELOOP ? "a symbolic link, not a directory" : strerror(errno));
	if (created && fchmod(fd, atf_dir_mode(file_mode)) < 0)
		err = atf_diag_set(diag, shown, -errno, 0, "%s: %s", shown, strerror(errno));
	else
		err = atf_dir_check_fd(fd, shown, diag);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/*
 * Whether the symbolic link @name in the directory @dirfd may be followed: in a directory others
 * may write to, only a link of this user or of the directory's owner (the kernel's
 * fs.protected_symlinks rule, which may be off, as it is on many machines).
 */
static int link_check(int dirfd, const char *name, const struct stat *lst, const char *shown,
		      struct atf_diag *diag)
{
	struct stat dst;

	if (fstat(dirfd, &dst) < 0)
		return atf_diag_set(diag, shown, -errno, 0, "%s: %s", shown, strerror(errno));
	if (!(dst.st_mode & (S_IWGRP | S_IWOTH)) || lst->st_uid == geteuid() || lst->st_uid == dst.st_uid)
		return 0;
	return atf_diag_set(diag, shown, -EPERM, 0, "%s is a symbolic link of uid %u in a directory others "
			    "may write to: refusing to follow it", shown, (unsigned)lst->st_uid);
}

/* atf_dir_check_fd() on @fd, the directory buf[0, pos) names (the parent of a new component). */
static int parent_check(int fd, char *buf, size_t pos, struct atf_diag *diag)
{
	size_t len = pos;
	char saved;
	int err;

	while (len > 1 && buf[len - 1] == '/')
		len--;
	saved = buf[len];
	buf[len] = '\0';
	err = atf_dir_check_fd(fd, len ? buf : ".", diag);
	buf[len] = saved;
	return err;
}

int atf_dir_create(const char *path, unsigned flags, struct atf_diag *diag)
{
	char buf[PATH_MAX];
	size_t len = strlen(path), pos = 0;
	bool created = false;
	int fd, err = 0;

	if (len == 0 || len >= sizeof(buf))
		return atf_diag_set(diag, path, -ENAMETOOLONG, 0, "%s: %s", path, strerror(ENAMETOOLONG));
	memcpy(buf, path, len + 1);
	fd = open(buf[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return atf_diag_set(diag, path, -errno, 0, "%s: %s", path, strerror(errno));
	/* one component at a time, each relative to its parent's fd; buf[0, end) names the current one */
	while (!err) {
		struct stat lst;
		size_t end;
		int sub;

		while (buf[pos] == '/')
			pos++;
		if (!buf[pos])
			break;
		for (end = pos; buf[end] && buf[end] != '/'; end++)
			;
		char saved = buf[end];

		buf[end] = '\0';
		if (fstatat(fd, buf + pos, &lst, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
			/* created here, in a directory that must be safe to create in */
			err = parent_check(fd, buf, pos, diag);
			created = !err && mkdirat(fd, buf + pos, 0700) == 0;
			if (!err && !created && errno != EEXIST)    /* EEXIST: made meanwhile, opened */
				err = atf_diag_set(diag, path, -errno, 0, "%s: %s", buf, strerror(errno));
			sub = err ? -1 : subdir_open(fd, buf + pos, buf, created, diag);
		} else if (S_ISLNK(lst.st_mode) && (err = link_check(fd, buf + pos, &lst, buf, diag))) {
			sub = -1;
		} else {
			created = false;
			sub = openat(fd, buf + pos, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (sub < 0)
				err = atf_diag_set(diag, path, -errno, 0, "%s: %s", buf, strerror(errno));
		}
		close(fd);
		fd = sub;
		if (sub < 0 && !err)
			err = sub;
		buf[end] = saved;
		pos = end;
	}
	if (!err && !created && (flags & ATF_DIR_NEW))
		err = atf_diag_set(diag, path, -EEXIST, 0, "%s: %s", path, strerror(EEXIST));
	else if (!err && !created)
		err = atf_dir_check_fd(fd, path, diag);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

/*
 * Split @path into its directory (opened) and last component (copied to @name). @nofollow: the
 * directory's own last component may not be a link (a session's thread_N or pid_N directory).
 */
static int parent_open(const char *path, char *name, size_t name_len, bool nofollow)
{
	char buf[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	int fd;

	if (!slash)
		slash = path - 1;
	if (dlen >= sizeof(buf) || strlen(slash + 1) >= name_len || !slash[1])
		return -ENAMETOOLONG;
	memcpy(buf, path, dlen);
	buf[dlen] = '\0';
	strcpy(name, slash + 1);
	fd = open(slash == path - 1 ? "." : dlen ? buf : "/",
		  O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0 && errno == ENOTDIR && nofollow) {   /* O_DIRECTORY's answer for a link */
		struct stat st;

		return !lstat(buf, &st) && S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
	}
	return fd < 0 ? -errno : fd;
}

/* Create @name in @dirfd: new, never through a link, exactly @mode. */
static int create_at(int dirfd, const char *name, mode_t mode)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0600);

	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0) {
		int err = -errno;

		close(fd);
		unlinkat(dirfd, name, 0);
		return err;
	}
	return fd;
}

int atf_file_create(const char *path)
{
	char name[256];
	int dirfd = parent_open(path, name, sizeof(name), false), fd;

	if (dirfd < 0)
		return dirfd;
	fd = create_at(dirfd, name, file_mode);
	close(dirfd);
	return fd;
}

int atf_tmpfile_open(struct atf_tmpfile *t, const char *path, unsigned flags)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct stat st, dst;
	mode_t mode = file_mode;

	t->fd = -1;
	t->flags = flags;
	if (snprintf(t->path, sizeof(t->path), "%s", path) >= (int)sizeof(t->path))
		return -ENAMETOOLONG;
	t->dirfd = parent_open(path, t->name, sizeof(t->name), flags & ATF_TMP_IN_SESSION);
	if (t->dirfd < 0)
		return t->dirfd;
	/* replacing a regular file keeps its mode (recovery, a rewritten manifest), unless told not to */
	if (!(flags & ATF_TMP_FRESH_MODE) && !fstatat(t->dirfd, t->name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(st.st_mode))
		mode = st.st_mode & 0777;
	for (int tries = 0; tries < 100; tries++) {
		uint8_t rnd[8];

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			break;
		char *p = t->tmp + snprintf(t->tmp, sizeof(t->tmp), ".%.200s.", t->name);

		for (size_t i = 0; i < sizeof(rnd); i++)
			*p++ = chars[rnd[i] % (sizeof(chars) - 1)];
		strcpy(p, ".tmp");
		t->fd = create_at(t->dirfd, t->tmp, mode);
		if (t->fd != -EEXIST)
			break;
	}
	/* a session's file belongs to the session's owner, also when root rewrites it (recover) */
	if (t->fd >= 0 && (flags & ATF_TMP_IN_SESSION) && !fstat(t->dirfd, &dst) && dst.st_uid != geteuid() &&
	    fchown(t->fd, dst.st_uid, dst.st_gid) < 0) {
		int err = -errno;

		atf_tmpfile_abort(t);
		return err;
	}
	if (t->fd < 0) {
		int err = t->fd;

		close(t->dirfd);
		t->dirfd = -1;
		return err < -1 ? err : -EIO;
	}
	return 0;
}

/* Move the temporary to its name: over what is there, or (NOREPLACE) only where nothing is. */
static int tmpfile_rename(struct atf_tmpfile *t)
{
	if (!(t->flags & ATF_TMP_NOREPLACE))
		return renameat(t->dirfd, t->tmp, t->dirfd, t->name) < 0 ? -errno : 0;
	if (!renameat2(t->dirfd, t->tmp, t->dirfd, t->name, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* a file system without RENAME_NOREPLACE: a hard link is never made over an existing name */
	if (linkat(t->dirfd, t->tmp, t->dirfd, t->name, 0) < 0)
		return -errno;
	unlinkat(t->dirfd, t->tmp, 0);
	return 0;
}

int atf_tmpfile_commit(struct atf_tmpfile *t)
{
	int err = fsync(t->fd) < 0 && errno != EINVAL ? -errno : 0;

	if (close(t->fd) < 0 && !err)
		err = -errno;
	t->fd = -1;
	if (!err)
		err = tmpfile_rename(t);
	if (!err && fsync(t->dirfd) < 0)
		err = -errno;
	if (err)
		unlinkat(t->dirfd, t->tmp, 0);
	close(t->dirfd);
	t->dirfd = -1;
	return err;
}

void atf_tmpfile_abort(struct atf_tmpfile *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->dirfd >= 0) {
		unlinkat(t->dirfd, t->tmp, 0);
		close(t->dirfd);
	}
	t->fd = t->dirfd = -1;
}

int atf_file_replace(const char *path, const void *buf, size_t len, unsigned flags)
{
	struct atf_tmpfile t;
	int err = atf_tmpfile_open(&t, path, flags);

	if (err)
		return err;
	err = atf_write_all(t.fd, buf, len, NULL);
	if (err) {
		atf_tmpfile_abort(&t);
		return err;
	}
	return atf_tmpfile_commit(&t);
}

int atf_file_replace_json(const char *path, struct json_t *root, unsigned flags)
{
	char *text;
	size_t len;
	int err;

	if (!root)
		return -ENOMEM;
	text = json_dumps(root, JSON_INDENT(2));
	json_decref(root);
	if (!text)
		return -ENOMEM;
	/* the trailing newline takes the place of the string's NUL */
	len = strlen(text);
	text[len] = '\n';
	err = atf_file_replace(path, text, len + 1, flags);
	free(text);
	return err;
}

int atf_open_in_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int dfd, fd;

	/* O_NONBLOCK: a FIFO planted in a file's place cannot hang its reader (map_file refuses it) */
	if (!slash || slash == path) {      /* no directory of its own to check: the file itself */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		return fd < 0 ? -errno : fd;
	}
	if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	/* the directory's parent as given; the directory and the file never through a link */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0) {
		struct stat st;
		int err = -errno;

		/* O_DIRECTORY says ENOTDIR for a link: call it what it is */
		return err == -ENOTDIR && !lstat(dir, &st) && S_ISLNK(st.st_mode) ? -ELOOP : err;
	}
	fd = openat(dfd, slash + 1, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		fd = -errno;
	close(dfd);
	return fd;
}
