// SPDX-License-Identifier: MIT
/*
 * Separate debug files for stripped modules (include/symbols.h: sym_debug_*), found where a
 * debugger looks, in this order:
 *   1. DIR/.build-id/xx/rest.debug for each --debug-dir DIR, then /usr/lib/debug;
 *   2. the file's .gnu_debuglink NAME: beside the file, in its .debug/, under
 *      /usr/lib/debug/<its directory>, and DIR/<its directory>/NAME, DIR/NAME for --debug-dir;
 *   3. debuginfod (user/sym/sym_debuginfod.c) when DEBUGINFOD_URLS is set; the client keeps
 *      its own cache ($DEBUGINFOD_CACHE_PATH or ~/.cache/debuginfod_client); each query is
 *      bounded in time (DEBUGINFOD_TIMEOUT) and size (DEBUGINFOD_MAXSIZE).
 * The paths of 1. and 2. under /usr/lib/debug and the module's directory are the target's: in
 * a container they are resolved inside its root (user/sym/sym_root.c); --debug-dir is ours.
 * A candidate is used only when its build-id equals the module's (a module without a build-id:
 * when the CRC-32 of the debuglink matches), so a stale debug file never names the wrong code.
 * The module's directory is tried as given and canonical (usrmerge: /lib -> /usr/lib).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <elfutils/libdwelf.h>
#include "symbols.h"

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"

static char **debug_dirs;
static size_t ndebug_dirs;

int sym_debug_dir_add(const char *dir)
{
	char **n = realloc(debug_dirs, (ndebug_dirs + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	debug_dirs = n;
	if (!(debug_dirs[ndebug_dirs] = strdup(dir)))
		return -ENOMEM;
	ndebug_dirs++;
	return 0;
}

void sym_debug_dirs_free(void)
{
	for (size_t i = 0; i < ndebug_dirs; i++)
		free(debug_dirs[i]);
	free(debug_dirs);
	debug_dirs = NULL;
	ndebug_dirs = 0;
}

const char *sym_origin_str(enum sym_origin o)
{
	switch (o) {
	case SYM_ORIGIN_DYNSYM:     return "dynsym";
	case SYM_ORIGIN_SYMTAB:     return "symtab";
	case SYM_ORIGIN_BUILD_ID:   return "build-id";
	case SYM_ORIGIN_DEBUGLINK:  return "debuglink";
	case SYM_ORIGIN_DEBUG_DIR:  return "debug-dir";
	case SYM_ORIGIN_DEBUGINFOD: return "debuginfod";
	}
	return "?";
}

/* Does the ELF file open on @fd carry build-id @id (@len bytes)? */
static bool build_id_matches(int fd, const void *id, ssize_t len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got;
	ssize_t glen;
	bool ok;

	if (!elf)
		return false;
	glen = dwelf_elf_gnu_build_id(elf, &got);
	ok = glen == len && len > 0 && !memcmp(got, id, (size_t)len);
	elf_end(elf);
	return ok;
}

static bool crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)n);
	return n == 0 && (uint32_t)crc == want;
}

struct want {
	const void *id;             /* build-id bytes, or NULL */
	ssize_t id_len;
	uint32_t crc;               /* debuglink CRC when there is no build-id */
	bool have_crc;
};

/*
 * Open @path if it is the debug file we want: an fd, or -1. A path the target's files name is
 * resolved in the lookup root (user/sym/sym_root.c); one under --debug-dir (@host) in ours.
 * Either way only a regular file within the size cap is read.
 */
static int try_candidate(const char *path, const struct want *w, bool host)
{
	int fd = host ? sym_host_open(path, SYM_MAX_FILE_SIZE) : sym_root_open(path, SYM_MAX_FILE_SIZE);

	if (fd < 0)
		return -1;
	if (w->id ? build_id_matches(fd, w->id, w->id_len) : w->have_crc && crc_matches(fd, w->crc))
		return fd;
	close(fd);
	return -1;
}

static int try_build_id_dir(const char *root, const struct want *w, char **found, bool host)
{
	const unsigned char *b = w->id;
	char path[PATH_MAX];
	int len, fd;

	if (!w->id || w->id_len < 2)
		return -1;
	len = snprintf(path, sizeof(path), "%s/.build-id/%02x/", root, b[0]);
	for (ssize_t i = 1; i < w->id_len && len > 0 && (size_t)len < sizeof(path) - 8; i++)
		len += snprintf(path + len, sizeof(path) - (size_t)len, "%02x", b[i]);
	if (len <= 0 || (size_t)len >= sizeof(path) - 8)
		return -1;
	strcat(path, ".debug");
	fd = try_candidate(path, w, host);
	if (fd >= 0 && !(*found = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The debuglink candidates of @link in directory @dir of the module (gdb's order). */
static int try_debuglink(const char *dir, const char *link, const struct want *w, char **found,
			 enum sym_origin *origin)
{
	char path[PATH_MAX];
	int fd;

	for (int k = 0; k < 3; k++) {
		static const char *const fmt[] = { "%s/%s", "%s/.debug/%s", SYSTEM_DEBUG_DIR "%s/%s" };

		if (snprintf(path, sizeof(path), fmt[k], dir, link) >= (int)sizeof(path))
			continue;
		fd = try_candidate(path, w, false);
		if (fd >= 0) {
			*origin = SYM_ORIGIN_DEBUGLINK;
			*found = strdup(path);
			return *found ? fd : (close(fd), -1);
		}
	}
	for (size_t i = 0; i < ndebug_dirs; i++) {
		for (int k = 0; k < 2; k++) {
			if ((k ? snprintf(path, sizeof(path), "%s/%s", debug_dirs[i], link)
			       : snprintf(path, sizeof(path), "%s%s/%s", debug_dirs[i], dir, link))
			    >= (int)sizeof(path))
				continue;
			fd = try_candidate(path, w, true);
			if (fd >= 0) {
				*origin = SYM_ORIGIN_DEBUG_DIR;
				*found = strdup(path);
				return *found ? fd : (close(fd), -1);
			}
		}
	}
	return -1;
}

static int try_debuginfod(const struct want *w, char **found)
{
	char *path = NULL;
	int fd;

	if (!w->id)
		return -1;
	fd = sym_debuginfod_fetch(w->id, (int)w->id_len, &path);
	if (fd < 0)
		return -1;
	/* the server's answer is checked like any other file, and does not stay when wrong */
	if (lseek(fd, 0, SEEK_SET) < 0 || !build_id_matches(fd, w->id, w->id_len)) {
		fprintf(stderr, "atftrace: debuginfod: %s: not the debug file asked for (another "
			"build-id): removed from the cache\n", path);
		sym_debuginfod_discard(fd, &path);
		return -1;
	}
	*found = path;
	return fd;
}

int sym_debug_find(Elf *elf, const char *path, char **found, enum sym_origin *origin)
{
	struct want w = { 0 };
	const char *link;
	char dir[PATH_MAX], canon[PATH_MAX];
	GElf_Word crc = 0;
	int fd = -1;

	*found = NULL;
	w.id_len = dwelf_elf_gnu_build_id(elf, &w.id);
	if (w.id_len <= 0)
		w.id = NULL;
	link = dwelf_elf_gnu_debuglink(elf, &crc);
	w.crc = crc;
	w.have_crc = link != NULL;
	/* 1. .build-id directories: --debug-dir first (the user's choice), then the system's */
	for (size_t i = 0; fd < 0 && i < ndebug_dirs; i++) {
		fd = try_build_id_dir(debug_dirs[i], &w, found, true);
		*origin = SYM_ORIGIN_DEBUG_DIR;
	}
	if (fd < 0) {
		fd = try_build_id_dir(SYSTEM_DEBUG_DIR, &w, found, false);
		*origin = SYM_ORIGIN_BUILD_ID;
	}
	/* 2. .gnu_debuglink, relative to the module's directory as named and as canonical */
	if (fd < 0 && link && !strchr(link, '/')) {
		const char *slash;

		path = sym_root_inner(path);    /* a chroot's file read by its host path */
		slash = strrchr(path, '/');

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
			 slash ? path : ".");
		fd = try_debuglink(dir, link, &w, found, origin);
		if (fd < 0 && !sym_root_canonical(dir, canon, sizeof(canon)) && strcmp(canon, dir))
			fd = try_debuglink(canon, link, &w, found, origin);
	}
	/* 3. debuginfod */
	if (fd < 0) {
		fd = try_debuginfod(&w, found);
		*origin = SYM_ORIGIN_DEBUGINFOD;
	}
	return fd < 0 ? -ENOENT : fd;
}

/* ---- which Debian package would have it ------------------------------------------------- */

/* dpkg-query -S @path: the package that ships the file, or NULL (never through a shell). */
static char *dpkg_owner(const char *path)
{
	char buf[512], *pkg = NULL;
	int pfd[2], status;
	ssize_t n, len = 0;
	pid_t pid;

	if (access("/usr/bin/dpkg-query", X_OK) || pipe2(pfd, O_CLOEXEC))
		return NULL;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return NULL;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		if (devnull >= 0)
			dup2(devnull, 2);
		execl("/usr/bin/dpkg-query", "dpkg-query", "-S", "--", path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(pfd[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	buf[len] = '\0';
	/* "sqlite3: /usr/bin/sqlite3" or "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6", after
	 * lines such as "diversion by dash from: /bin/sh" (a package name has no space) */
	for (char *line = buf; WIFEXITED(status) && !WEXITSTATUS(status) && !pkg && *line;) {
		size_t plen = strcspn(line, ":, \n"), llen = strcspn(line, "\n");

		if (plen && line[plen] == ':' && strncmp(line, "diversion ", 10))
			pkg = strndup(line, plen);
		line += llen + (line[llen] == '\n');
	}
	return pkg;
}

char *sym_debug_package(const char *path)
{
	char canon[PATH_MAX];
	char *pkg = dpkg_owner(path);

	if (!pkg && realpath(path, canon)) {
		pkg = dpkg_owner(canon);
		/* usrmerge: dpkg knows /lib/... while the file is /usr/lib/... */
		if (!pkg && !strncmp(canon, "/usr/", 5))
			pkg = dpkg_owner(canon + 4);
	}
	return pkg;
}

/* The release's code name (VERSION_CODENAME in /etc/os-release) into @buf, or "" when unknown. */
static const char *os_codename(char *buf, size_t len)
{
	FILE *f = fopen("/etc/os-release", "re");
	char line[256];

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VERSION_CODENAME=", 17)) {
			snprintf(buf, len, "%.*s", (int)strcspn(line + 17, "\"'\n"), line + 17);
			break;
		}
	if (f)
		fclose(f);
	return buf;
}

void sym_module__report_stripped(const struct sym_module *m, const char *who)
{
	char *pkg, suite[64];

	if (!m->stripped)
		return;
	pkg = sym_debug_package(m->path);
	fprintf(stderr, "%s: %s: stripped, and no debug file with build-id %s was found (looked in "
		"/usr/lib/debug, beside it, --debug-dir, DEBUGINFOD_URLS): only its exported functions "
		"can be traced\n", who, m->path, m->build_id ? m->build_id : "(none)");
	if (pkg) {
		/* -dbgsym packages are not in the main archive: name the one that has them */
		os_codename(suite, sizeof(suite));
		fprintf(stderr, "%s: hint: its symbols are in the package %s-dbgsym, from Debian's debug "
			"archive (deb http://deb.debian.org/debian-debug %s-debug main); or let atftrace "
			"fetch them: export DEBUGINFOD_URLS=https://debuginfod.debian.net\n", who, pkg,
			suite[0] ? suite : "<suite>");
	}
	free(pkg);
}
