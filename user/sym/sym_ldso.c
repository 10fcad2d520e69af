// SPDX-License-Identifier: MIT
/*
 * sym_resolve_needed (include/symbols.h): which file the dynamic loader will load for a library
 * name when a program starts, found as glibc's ld.so finds it, without running anything.
 *
 * From the executable, breadth first over DT_NEEDED; each name with a '/' is that path, any
 * other is searched in
 *   1. the DT_RPATH of the object that needs it and of the executable (only when the object
 *      has no DT_RUNPATH),
 *   2. LD_LIBRARY_PATH of the target's environment,
 *   3. the DT_RUNPATH of the object that needs it,
 *   4. /etc/ld.so.cache,
 *   5. the default directories,
 * skipping files of another ELF class or machine, as ld.so does. $ORIGIN is the directory of
 * the object that holds the path; directories with other dynamic string tokens are skipped.
 * Not modelled: LD_PRELOAD, hwcaps subdirectories, setuid programs; a library that is then
 * mapped elsewhere is still found by its mapping (user/record/record_watch.c). Every file is
 * opened in the lookup root (user/sym/sym_root.c): a container's, inside its root.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "symbols.h"

#define MAX_OBJECTS 512

struct dso {
	char *path;
	char **needed;
	size_t nneeded;
	char *rpath, *runpath;
};

static void dso_free(struct dso *d)
{
	for (size_t i = 0; i < d->nneeded; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->rpath);
	free(d->runpath);
	free(d->path);
}

/* ELF class and machine of @path, or -1 when it is no ELF file. */
static int elf_kind_of(const char *path, int *machine)
{
	unsigned char id[EI_NIDENT + 4];
	int fd = sym_root_open(path, SYM_MAX_FILE_SIZE);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, id, sizeof(id));
	close(fd);
	if (n < (ssize_t)sizeof(id) || memcmp(id, ELFMAG, SELFMAG))
		return -1;
	/* e_machine: the 2 bytes after e_type, in the file's byte order (little endian here) */
	*machine = id[EI_DATA] == ELFDATA2LSB ? id[18] | id[19] << 8 : id[18] << 8 | id[19];
	return id[EI_CLASS];
}

static int dso_read(struct dso *d, const char *path)
{
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd, err = 0;

	memset(d, 0, sizeof(*d));
	fd = sym_root_open(path, SYM_MAX_FILE_SIZE);
	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && !err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < data->d_size / sh.sh_entsize && !err; i++) {
			GElf_Dyn dyn;
			const char *s;
			char **nn;

			if (!gelf_getdyn(data, (int)i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_RPATH && !d->rpath)
				d->rpath = strdup(s);
			else if (dyn.d_tag == DT_RUNPATH && !d->runpath)
				d->runpath = strdup(s);
			else if (dyn.d_tag == DT_NEEDED) {
				nn = realloc(d->needed, (d->nneeded + 1) * sizeof(*nn));
				if (!nn || !(nn[d->nneeded] = strdup(s))) {
					if (nn)
						d->needed = nn;
					err = -ENOMEM;
					break;
				}
				d->needed = nn;
				d->nneeded++;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	d->path = err ? NULL : strdup(path);
	if (!err && !d->path)
		err = -ENOMEM;
	if (err)
		dso_free(d);
	return err;
}

/* ---- /etc/ld.so.cache ("glibc-ld.so.cache1.1"; glibc's elf/dl-cache.h) ------------------- */

#define CACHE_MAGIC "glibc-ld.so.cache1.1"
#define FLAG_ELF_LIBC6 0x0003
#if defined(__x86_64__)
#define FLAG_ARCH 0x0300        /* FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
#define FLAG_ARCH 0x0a00        /* FLAG_AARCH64_LIB64 */
#endif

static char *cache_lookup(const char *name)
{
	int fd = sym_root_open("/etc/ld.so.cache", SYM_MAX_SMALL_FILE);
	const uint8_t *map = MAP_FAILED, *hdr = NULL;
	char *found = NULL;
	struct stat st;
	uint32_t nlibs;

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && st.st_size > 48)
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	/* the new format, alone or after the old one; string offsets count from its start */
	hdr = memmem(map, (size_t)st.st_size, CACHE_MAGIC, sizeof(CACHE_MAGIC) - 1);
	if (!hdr || (size_t)(hdr - map) + 48 > (size_t)st.st_size)
		goto out;
	memcpy(&nlibs, hdr + 20, sizeof(nlibs));
	for (uint32_t i = 0; i < nlibs && !found; i++) {
		size_t at = (size_t)(hdr - map) + 48 + (size_t)i * 24;
		int32_t flags;
		uint32_t key, value;
		uint64_t hwcap;

		if (at + 24 > (size_t)st.st_size)
			break;
		memcpy(&flags, map + at, 4);
		memcpy(&key, map + at + 4, 4);
		memcpy(&value, map + at + 8, 4);
		memcpy(&hwcap, map + at + 16, 8);
		if ((flags & 0xff) != FLAG_ELF_LIBC6 || (flags & 0xff00) != FLAG_ARCH || hwcap ||
		    (size_t)(hdr - map) + key >= (size_t)st.st_size ||
		    (size_t)(hdr - map) + value >= (size_t)st.st_size)
			continue;
		const char *k = (const char *)hdr + key, *v = (const char *)hdr + value;

		if (memchr(k, 0, (size_t)st.st_size - (size_t)(hdr - map) - key) &&
		    memchr(v, 0, (size_t)st.st_size - (size_t)(hdr - map) - value) && !strcmp(k, name))
			found = strdup(v);
	}
out:
	munmap((void *)map, (size_t)st.st_size);
	return found;
}

/* ---- search ---------------------------------------------------------------------------- */

static bool compatible(const char *path, int class, int machine)
{
	int m;

	return elf_kind_of(path, &m) == class && m == machine;
}

/* @name in the ':'-separated @dirs ($ORIGIN = directory of @origin_obj). */
static char *search_dirs(const char *dirs, const char *name, const char *origin_obj, int class,
			 int machine)
{
	char origin[PATH_MAX], path[PATH_MAX * 2];
	const char *slash = strrchr(origin_obj, '/');

	snprintf(origin, sizeof(origin), "%.*s", slash ? (int)(slash - origin_obj) : 1,
		 slash ? origin_obj : ".");
	for (const char *d = dirs; d && *d;) {
		size_t len = strcspn(d, ":");
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%.*s", (int)len, d);
		d += len + (d[len] == ':');
		if (!strncmp(dir, "$ORIGIN", 7) || !strncmp(dir, "${ORIGIN}", 9)) {
			const char *rest = dir + (dir[1] == '{' ? 9 : 7);
			char full[PATH_MAX];

			snprintf(full, sizeof(full), "%s%s", origin, rest);
			snprintf(dir, sizeof(dir), "%s", full);
		}
		if (strchr(dir, '$'))
			continue;       /* $LIB, $PLATFORM: not modelled */
		snprintf(path, sizeof(path), "%s/%s", dir[0] ? dir : ".", name);
		if (sym_root_readable(path) && compatible(path, class, machine))
			return strdup(path);
	}
	return NULL;
}

static char *resolve_one(const char *name, const struct dso *loader, const struct dso *exe,
			 const char *ld_library_path, int class, int machine)
{
	static const char *const defaults =
#if defined(__x86_64__)
		"/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib";
#else
		"/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib";
#endif
	char *found = NULL;

	if (strchr(name, '/'))
		return compatible(name, class, machine) ? strdup(name) : NULL;
	if (!loader->runpath) {
		found = search_dirs(loader->rpath, name, loader->path, class, machine);
		if (!found && loader != exe && !exe->runpath)
			found = search_dirs(exe->rpath, name, exe->path, class, machine);
	}
	if (!found)
		found = search_dirs(ld_library_path, name, exe->path, class, machine);
	if (!found)
		found = search_dirs(loader->runpath, name, loader->path, class, machine);
	if (!found) {
		found = cache_lookup(name);
		if (found && !compatible(found, class, machine)) {
			free(found);
			found = NULL;
		}
	}
	if (!found)
		found = search_dirs(defaults, name, exe->path, class, machine);
	return found;
}

bool sym_elf_needs(const char *path, const char *prefix)
{
	struct dso d;
	bool found = false;

	if (dso_read(&d, path) < 0)
		return false;
	for (size_t i = 0; i < d.nneeded && !found; i++)
		found = !strncmp(d.needed[i], prefix, strlen(prefix));
	dso_free(&d);
	return found;
}

char *sym_resolve_needed(const char *exe_path, const char *name, const char *ld_library_path)
{
	struct dso *objs = calloc(MAX_OBJECTS, sizeof(*objs));
	size_t n = 0;
	char *result = NULL;
	int class, machine;

	if (!objs)
		return NULL;
	class = elf_kind_of(exe_path, &machine);
	if (class < 0 || dso_read(&objs[0], exe_path) < 0)
		goto out;
	n = 1;
	for (size_t i = 0; i < n && !result; i++) {
		for (size_t k = 0; k < objs[i].nneeded && !result; k++) {
			const char *need = objs[i].needed[k];
			char *path;
			bool seen = false;

			for (size_t j = 0; j < n && !seen; j++)
				seen = !strcmp(objs[j].path, need) ||
				       (strrchr(objs[j].path, '/') && !strcmp(strrchr(objs[j].path, '/') + 1, need));
			if (seen)
				continue;
			path = resolve_one(need, &objs[i], &objs[0], ld_library_path, class, machine);
			if (!path)
				continue;       /* ld.so would fail to start the program; not ours to say */
			if (sym_lib_name_matches(need, name) || sym_lib_name_matches(path, name)) {
				result = path;
				break;
			}
			if (n < MAX_OBJECTS && dso_read(&objs[n], path) == 0)
				n++;
			free(path);
		}
	}
out:
	for (size_t i = 0; i < n; i++)
		dso_free(&objs[i]);
	free(objs);
	return result;
}
