// SPDX-License-Identifier: MIT
/*
 * ifuncs (STT_GNU_IFUNC): the symbol's address is a resolver, run once when the module is
 * relocated, whose return value (the implementation for this CPU: __strlen_avx2, ...) the
 * dynamic loader stores in the GOT slot of each R_*_IRELATIVE relocation whose addend is the
 * resolver. So the implementation a process runs is read, not guessed, from such a slot:
 *   - a running process (-p): its own slot, through /proc/PID/mem;
 *   - a command not started yet (it inherits our environment), or a process held at an exec
 *     that has not mapped the file yet and runs with our GLIBC_TUNABLES: the slot of this very
 *     process, when it maps the same file (same device and inode). The resolver decides from
 *     the CPU's features (cpuid) and GLIBC_TUNABLES only. Nothing is called: we read what our
 *     own loader already wrote.
 * An ifunc whose slot cannot be read (no IRELATIVE for it, another file, different tunables) is
 * reported in one line with the implementations the symbols name, which are plain functions.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proc.h"
#include "symbols.h"

int sym_module__probe_at(struct sym_module *m, struct sym_func *f, uint64_t addr)
{
	const char *path = m->open_path ? m->open_path : m->path;
	uint8_t code[16];
	size_t avail = 0;
	uint64_t off = 0;
	ssize_t n;
	int fd, insn;

	for (size_t i = 0; i < m->ntext && !avail; i++) {
		const struct sym_text *t = &m->text[i];

		if (addr < t->addr || addr - t->addr >= t->size)
			continue;
		off = addr - t->addr + t->offset;
		avail = t->size - (addr - t->addr);
	}
	if (!avail)
		return -ENOENT;
	fd = sym_root_open(path, SYM_MAX_FILE_SIZE);
	if (fd < 0)
		return fd;
	n = pread(fd, code, avail < sizeof(code) ? avail : sizeof(code), (off_t)off);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	insn = sym_probe_site(code, (size_t)n, avail, &f->endbr64);
	if (insn < 0)
		return -ENOENT;
	f->probe_offset = off + (f->endbr64 ? 4 : 0);
	f->insn = (uint8_t)insn;
	f->ifunc_impl = addr;
	f->skip = SYM_OK;
	return 0;
}

/* Load bias of @m in process @pid ("self" for 0): where module address 0 is mapped. */
static int load_bias(const struct sym_module *m, pid_t pid, uint64_t *bias)
{
	const char *path = m->open_path ? m->open_path : m->path;
	struct proc_mapping *maps;
	struct stat want, st;
	size_t n;
	int err = -ENOENT;

	if (sym_root_stat(path, &want) < 0)
		return -ENOENT;
	if (proc_maps(pid > 0 ? pid : getpid(), &maps, &n) < 0)
		return -ENOENT;
	for (size_t i = 0; i < n && err; i++) {
		/* the target's paths in its own root (sym_root.c), ours as they are */
		if ((pid > 0 ? sym_root_stat(maps[i].path, &st) : stat(maps[i].path, &st)) ||
		    st.st_dev != want.st_dev || st.st_ino != want.st_ino)
			continue;
		/* a PIE or library is linked at 0 with its first segment at file offset 0 */
		*bias = m->pie ? maps[i].start - maps[i].file_offset_at_start : 0;
		err = 0;
	}
	proc_maps_free(maps, n);
	return err;
}

static int read_slot(pid_t pid, uint64_t addr, uint64_t *val)
{
	char path[64];
	ssize_t n;
	int fd;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/mem");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, val, sizeof(*val), (off_t)addr);
	close(fd);
	return n == (ssize_t)sizeof(*val) ? 0 : -EIO;
}

/* Does process @pid run with our GLIBC_TUNABLES (both unset counts)? */
static bool same_tunables(pid_t pid)
{
	const char *ours = getenv("GLIBC_TUNABLES");
	char *theirs = proc_environ_get(pid, "GLIBC_TUNABLES");
	bool same = theirs ? ours && !strcmp(ours, theirs) : !ours;

	free(theirs);
	return same;
}

/*
 * The function of @m that @f's resolver picked in @pid, as a module address; 0 if unknown.
 * A process that has not mapped @m yet (held at its exec) gets our own choice when it runs
 * with our GLIBC_TUNABLES.
 */
static uint64_t implementation(const struct sym_module *m, const struct sym_func *f, pid_t pid)
{
	uint64_t bias, val;

	if (pid > 0 && load_bias(m, pid, &bias) < 0 && same_tunables(pid))
		pid = 0;
	if (load_bias(m, pid, &bias) < 0)
		return 0;
	for (size_t i = 0; i < m->nirel; i++) {
		if (m->irel[i].resolver != f->addr || read_slot(pid, bias + m->irel[i].slot, &val) < 0)
			continue;
		/* a slot not yet relocated still holds the resolver's own address */
		if (val >= bias && val - bias != f->addr)
			return val - bias;
	}
	return 0;
}

/* The probed function named at @addr (an alias resolves to its primary), or NULL. */
static struct sym_func *named_at(struct sym_module *m, uint64_t addr)
{
	for (size_t i = 0; i < m->nfuncs; i++) {
		struct sym_func *f = &m->funcs[i];

		if (f->addr == addr && f->skip == SYM_OK && !f->ifunc_impl)
			return f;
	}
	return NULL;
}

/* One line: @f could not be resolved; the implementations the symbols name (__NAME_*). */
static void report_unresolved(const struct sym_module *m, const struct sym_func *f,
			      const char *why, const char *who)
{
	char pattern[256], line[1024];
	size_t n = 0;
	int len;

	snprintf(pattern, sizeof(pattern), "__%s_*", f->name);
	len = snprintf(line, sizeof(line), "%s: %s: %s is an ifunc (its implementation is chosen when "
		       "the program loads) and %s", who, m->path, f->name, why);
	for (size_t i = 0; i < m->nfuncs && len > 0 && (size_t)len < sizeof(line); i++) {
		const struct sym_func *g = &m->funcs[i];

		if (g->skip != SYM_OK || fnmatch(pattern, g->name, 0))
			continue;
		len += snprintf(line + len, sizeof(line) - (size_t)len, "%s%s",
				n++ ? ", " : "; trace one of its implementations by name: ", g->name);
	}
	if (!n && len > 0 && (size_t)len < sizeof(line))
		snprintf(line + len, sizeof(line) - (size_t)len, "; the symbols do not name its "
			 "implementations (a debug file would)");
	fprintf(stderr, "%s\n", line);
}

size_t sym_module__resolve_ifuncs(struct sym_module *m, const char *const *globs, size_t nglobs,
				  const char *const *excludes, size_t nexcludes, pid_t pid,
				  const char *who, size_t *unread)
{
	size_t count = 0;

	if (unread)
		*unread = 0;
	for (size_t i = 0; i < m->nfuncs && nglobs; i++) {
		struct sym_func *f = &m->funcs[i], *impl;
		bool want = false;
		uint64_t addr;

		if (f->skip != SYM_SKIP_IFUNC)
			continue;
		for (size_t g = 0; g < nglobs && !want; g++)
			want = sym_glob_matches(globs[g], m->path, f);
		for (size_t x = 0; x < nexcludes && want; x++)
			want = !sym_glob_matches(excludes[x], m->path, f);
		if (!want)
			continue;
		addr = implementation(m, f, pid);
		if (!addr) {
			if (unread)
				(*unread)++;
			if (who)
				report_unresolved(m, f, "the choice of its resolver could not be read "
						  "(the target's GOT, or ours for the same file and "
						  "GLIBC_TUNABLES)", who);
			continue;
		}
		impl = named_at(m, addr);
		if (impl) {
			count += !impl->selected;
			impl->selected = true;
			f->ifunc_impl = addr;
		} else if (sym_module__probe_at(m, f, addr) == 0) {
			f->selected = true;
			count++;
		} else if (who) {
			report_unresolved(m, f, "its implementation cannot be probed", who);
		}
	}
	return count;
}
