// SPDX-License-Identifier: MIT
/* record's session directory (record_outdir.h): what -o may name, and the directory made in it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "atf_file.h"
#include "record_outdir.h"

/* ---- session directory ---------------------------------------------------------------------- */

/* -o may name a new or empty directory, or a session (pid_* directories, session.json): nothing else. */
static int check_outdir_contents(int fd, const char *dir)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int err = 0;

	if (!d) {
		fprintf(stderr, "atftrace record: %s: %s\n", dir, strerror(errno));
		close(fd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		unsigned pid;
		char tail;

		size_t n = strlen(de->d_name);

		/* ".session.json.<random>.tmp": a temporary a killed recorder left (atf_file.h) */
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "session.json") || sscanf(de->d_name, "pid_%u%c", &pid, &tail) == 1 ||
		    (!strncmp(de->d_name, ".session.json.", 14) && n > 18 && !strcmp(de->d_name + n - 4, ".tmp")))
			continue;
		fprintf(stderr, "atftrace record: -o %s: not empty and not a session (it holds '%s'); "
			"give a new or empty directory\n", dir, de->d_name);
		err = -EEXIST;
	}
	closedir(d);
	return err;
}

/* Delete @name inside the directory open as @dirfd, and all below it; links are removed, never followed. */
static int remove_tree_at(int parent, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd, err = 0;

	if (!unlinkat(parent, name, 0) || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while (!err && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = remove_tree_at(dirfd(d), de->d_name);
	closedir(d);
	if (!err && unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		err = -errno;
	return err;
}

/*
 * -o DIR naming an earlier session (it holds pid_* directories or a session.json) is refused,
 * so a second recording never mixes its processes into the first; with --force, those are
 * deleted first. Anything else in DIR is left alone. An existing DIR is opened and checked as
 * every directory atftrace writes in (atf_dir_create), before anything in it is read or deleted,
 * and deletions go relative to that fd: a planted link can neither redirect nor widen them.
 */
int record_outdir_check(const char *outdir, bool force)
{
	struct atf_diag diag = { 0 };
	struct stat st;
	struct dirent *de;
	DIR *d;
	int fd, err = 0;

	if (stat(outdir, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;       /* absent (created later), or not a directory (creation says why) */
	fd = atf_dir_create(outdir, 0, &diag);
	if (fd < 0) {
		fprintf(stderr, "atftrace record: -o %s: %s\n", outdir, diag.msg);
		return fd;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		if (strncmp(de->d_name, "pid_", 4) && strcmp(de->d_name, "session.json"))
			continue;
		if (!force) {
			fprintf(stderr, "atftrace record: -o %s: holds an earlier session (%s); choose "
				"another directory, or add --force to replace it\n", outdir, de->d_name);
			err = -EEXIST;
			break;
		}
		err = remove_tree_at(dirfd(d), de->d_name);
		if (err)
			fprintf(stderr, "atftrace record: --force: cannot delete %s/%s: %s\n", outdir,
				de->d_name, strerror(-err));
	}
	closedir(d);
	return err;
}

/* -o DIR as given, or a fresh ada_traces/session_YYYYMMDD_HHMMSS[_N]; created safely (atf_file.h). */
char *record_session_dir(const char *outdir)
{
	struct atf_diag diag = { 0 };
	char base[64], *dir = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int fd;

	if (outdir) {
		fd = atf_dir_create(outdir, 0, &diag);
		if (fd < 0) {
			fprintf(stderr, "atftrace record: -o %s: %s\n", outdir, diag.msg);
			return NULL;
		}
		return check_outdir_contents(fd, outdir) ? NULL : strdup(outdir);
	}
	localtime_r(&now, &tm);
	strftime(base, sizeof(base), "ada_traces/session_%Y%m%d_%H%M%S", &tm);
	for (int n = 1; n < 1000; n++) {
		free(dir);
		if ((n == 1 ? asprintf(&dir, "%s", base) : asprintf(&dir, "%s_%d", base, n)) < 0)
			return NULL;
		fd = atf_dir_create(dir, ATF_DIR_NEW, &diag);
		if (fd >= 0) {
			close(fd);
			return dir;
		}
		if (fd != -EEXIST)
			break;
	}
	fprintf(stderr, "atftrace record: %s\n", diag.msg);
	free(dir);
	return NULL;
}
