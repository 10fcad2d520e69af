// SPDX-License-Identifier: MIT
/*
 * sym_resolve_library (include/symbols.h): where a library named on the command line lives,
 * as the target maps it (/proc/PID/maps) or on the host's library path.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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
