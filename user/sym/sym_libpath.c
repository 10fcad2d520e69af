// SPDX-License-Identifier: MIT
/*
 * sym_resolve_library (include/symbols.h): where a library named on the command line lives,
 * as the target maps it (/proc/PID/maps) or on the host's library path; container_open_file: a
 * containerised process's executable and libraries, opened without a host path walk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "container.h"
#include "proc.h"
#include "symbols.h"

/* ---- finding libraries ---------------------------------------------------------------- */

bool sym_lib_name_matches(const char *file, const char *name)
{
	const char *base = strrchr(file, '/');
	size_t len = strlen(name);

	base = base ? base + 1 : file;
	if (!strcmp(base, name))
		return true;
	return !strncmp(base, name, len) && (base[len] == '.' || base[len] == '-');
}

static char *resolve_in_maps(int pid, const char *name)
{
	char maps[64], line[4096];
	char *found = NULL;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		char *nl;

		if (!path)
			continue;
		nl = strchr(path, '\n');
		if (nl)
			*nl = '\0';
		if (strstr(path, " (deleted)"))
			continue;
		if (strchr(name, '/') ? !strcmp(path, name) : sym_lib_name_matches(path, name))
			found = strdup(path);
	}
	fclose(f);
	return found;
}

static char *resolve_in_dir(const char *dir, const char *name)
{
	char path[4096];
	struct dirent *de;
	char *found = NULL;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (sym_root_readable(path))
		return strdup(path);
	d = sym_root_opendir(dir);
	if (!d)
		return NULL;
	while (!found && (de = readdir(d))) {
		if (!sym_lib_name_matches(de->d_name, name) || !strstr(de->d_name, ".so"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (sym_root_readable(path))
			found = strdup(path);
	}
	closedir(d);
	return found;
}

char *sym_resolve_library(int pid, const char *name)
{
	static const char *const dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
		"/usr/local/lib",
	};
	const char *env;
	char *found = NULL;

	if (!name || !name[0])
		return NULL;
	if (pid > 0)
		return resolve_in_maps(pid, name);
	if (strchr(name, '/'))
		return sym_root_readable(name) ? strdup(name) : NULL;
	env = getenv("LD_LIBRARY_PATH");
	if (env) {
		char *copy = strdup(env), *save = NULL;

		for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
		     dir = strtok_r(NULL, ":", &save))
			found = resolve_in_dir(dir, name);
		free(copy);
	}
	for (size_t i = 0; !found && i < sizeof(dirs) / sizeof(dirs[0]); i++)
		found = resolve_in_dir(dirs[i], name);
	return found;
}

/* ---- a containerised process's own files ---------------------------------------------- */

/* @fd when it is a regular file within the size cap (not a FIFO, a device, ...), else -errno. */
static int regular_file(int fd)
{
	struct stat st;
	int err;

	if (fd < 0)
		return fd;
	err = fstat(fd, &st) ? -errno : !S_ISREG(st.st_mode) ? -EINVAL
	      : (uint64_t)st.st_size > SYM_MAX_FILE_SIZE ? -EFBIG : 0;
	if (err)
		close(fd);
	return err ? err : fd;
}

/* The first mapping of library @name in @pid, opened through /proc/PID/map_files. */
static int open_mapped(pid_t pid, const char *name, char **shown)
{
	char maps[64], line[4096];
	FILE *f;
	int fd = -ENOENT;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (fd == -ENOENT && fgets(line, sizeof(line), f)) {
		uint64_t start, end, off;
		char *path, range[128];
		bool exec;

		if (proc_maps_parse_line(line, &start, &end, &exec, &off, &path) != 1 || !path ||
		    path[0] != '/' || strstr(path, " (deleted)") || !sym_lib_name_matches(path, name))
			continue;
		snprintf(range, sizeof(range), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)start, (unsigned long long)end);
		fd = open(range, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			fd = -errno;
			break;
		}
		fd = regular_file(fd);
		if (fd == -EINVAL) {
			fd = -ENOENT;   /* a device or FIFO of that name: no symbols, maybe a later one */
			continue;
		}
		if (fd >= 0 && shown && !(*shown = strdup(path))) {
			close(fd);
			fd = -ENOMEM;
		}
	}
	fclose(f);
	return fd;
}

int container_open_file(pid_t pid, const char *name, char **shown, const char *who)
{
	char link[64];
	int fd;

	if (shown)
		*shown = NULL;
	if (!name) {
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
		fd = open(link, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fd = -errno;
			fprintf(stderr, "%s: -p %d: cannot open its executable (%s): %s\n", who,
				(int)pid, link, strerror(errno));
			return fd;
		}
		if (shown && !(*shown = proc_exe_path(pid)) && !(*shown = strdup(link))) {
			close(fd);
			return -ENOMEM;
		}
		return fd;
	}
	if (strchr(name, '/')) {
		fd = regular_file(open_in_root(pid, name, O_RDONLY | O_NONBLOCK));
		if (fd < 0)
			fprintf(stderr, "%s: %s: cannot open it inside the root of process %d: %s%s\n",
				who, name, (int)pid, fd == -EINVAL ? "not a regular file" : strerror(-fd),
				fd == -EXDEV || fd == -ELOOP ? " (it leads outside the container)" : "");
		return fd;
	}
	fd = open_mapped(pid, name, shown);
	if (fd < 0)
		fprintf(stderr, "%s: %s: %s in the mappings of process %d\n", who, name,
			fd == -ENOENT ? "not found" : strerror(-fd), (int)pid);
	return fd;
}
