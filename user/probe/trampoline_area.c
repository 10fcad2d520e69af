// SPDX-License-Identifier: MIT
/*
 * Where a module lies in a stopped process and where its trampolines can go
 * (user/probe/trampoline_area.h).
 *
 * The trampolines of a module live in one memfd mapped PROT_READ|PROT_EXEC and MAP_PRIVATE in
 * the process: a file-backed, private, executable mapping, which is what a uprobe needs, and
 * with the same fast paths as a probe on the module. The process makes it itself, by syscalls
 * run in one of its stopped threads (memfd_create, mmap with MAP_FIXED_NOREPLACE, close);
 * we take a copy of the descriptor with pidfd_getfd to write the code and to name the file
 * for the uprobe link (/proc/self/fd/N).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include "trampoline_area.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010u
#endif
#define REACH ((1ull << 31) - (1ull << 20))     /* rel32, less a margin */
#define PAGE 4096ull
#define MIN_ADDR 0x10000ull                     /* vm.mmap_min_addr's default */
#define KEEP_FREE (1ull << 30)                  /* room left for brk and for the stack */

static uint64_t exe_ino(pid_t pid, uint64_t *dev)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st))
		return 0;
	*dev = st.st_dev;
	return st.st_ino;
}

int ta_maps_read(pid_t pid, struct ta_maps *out)
{
	char path[64], line[4096];
	uint64_t xdev = 0, xino = exe_ino(pid, &xdev);
	size_t cap = 0;
	FILE *f;

	out->v = NULL;
	out->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		unsigned maj, min;
		char perms[5];
		int pos = 0;
		struct ta_map *m;

		if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &maj, &min,
			   &ino, &pos) < 7)
			continue;
		if (out->n == cap) {
			struct ta_map *n = realloc(out->v, (cap ? cap * 2 : 64) * sizeof(*n));

			if (!n) {
				fclose(f);
				ta_maps_free(out);
				return -ENOMEM;
			}
			out->v = n;
			cap = cap ? cap * 2 : 64;
		}
		m = &out->v[out->n++];
		*m = (struct ta_map){ .lo = lo, .hi = hi, .offset = off, .dev = makedev(maj, min),
				      .ino = ino, .exec = perms[2] == 'x' };
		if (!strncmp(line + pos, "[heap]", 6))
			m->kind = 'h';
		else if (!strncmp(line + pos, "[stack]", 7))
			m->kind = 's';
		else if (!strncmp(line + pos, "/memfd:" TA_MEMFD_NAME, sizeof("/memfd:" TA_MEMFD_NAME) - 1))
			m->kind = 'a';
		else if (ino && ino == xino && m->dev == xdev)
			m->kind = 'x';
	}
	fclose(f);
	return 0;
}

void ta_maps_free(struct ta_maps *m)
{
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static bool same_file(const struct ta_map *m, uint64_t dev, uint64_t ino)
{
	return m->ino == ino && m->dev == dev;
}

bool ta_module_span(const struct ta_maps *maps, uint64_t dev, uint64_t ino, uint64_t *lo,
		    uint64_t *hi)
{
	bool found = false;

	for (size_t i = 0; i < maps->n; i++) {
		const struct ta_map *m = &maps->v[i];

		if (!same_file(m, dev, ino))
			continue;
		if (!found || m->lo < *lo)
			*lo = m->lo;
		if (!found || m->hi > *hi)
			*hi = m->hi;
		found = true;
	}
	return found;
}

uint64_t ta_file_addr(const struct ta_maps *maps, uint64_t dev, uint64_t ino, uint64_t off)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct ta_map *m = &maps->v[i];

		if (m->exec && same_file(m, dev, ino) && off >= m->offset &&
		    off < m->offset + (m->hi - m->lo))
			return m->lo + (off - m->offset);
	}
	return 0;
}

/*
 * The usable part of the gap below mapping @i: away from the room brk needs above the heap
 * (or above the executable, where the heap starts) and from the room the stack grows into.
 */
static bool usable_gap(const struct ta_maps *maps, size_t i, uint64_t *lo, uint64_t *hi)
{
	*lo = i ? maps->v[i - 1].hi : 0;
	*hi = i < maps->n ? maps->v[i].lo : 0x800000000000ull;      /* user space ends at 47 bits */
	if (i && (maps->v[i - 1].kind == 'h' || maps->v[i - 1].kind == 'x'))
		*lo += KEEP_FREE;
	if (i < maps->n && maps->v[i].kind == 's')
		*hi = *hi > KEEP_FREE ? *hi - KEEP_FREE : 0;
	return *hi > *lo;
}

uint64_t ta_find_gap(const struct ta_maps *maps, uint64_t lo, uint64_t hi, uint64_t size)
{
	uint64_t min = hi > REACH ? hi - REACH : 0, max = lo + REACH, best = 0;

	if (min < MIN_ADDR)
		min = MIN_ADDR;
	/* gaps below the module: the highest place that fits */
	for (size_t i = 0; i < maps->n && maps->v[i].lo <= lo; i++) {
		uint64_t glo, ghi, a;

		if (!usable_gap(maps, i, &glo, &ghi) || ghi - glo < size)
			continue;
		a = (ghi - size) & ~(PAGE - 1);
		if (a >= glo && a >= min && a + size <= max)
			best = a;
	}
	if (best)
		return best;
	/* gaps above it: the lowest */
	for (size_t i = 1; i <= maps->n; i++) {
		uint64_t glo, ghi, a;

		if (maps->v[i - 1].hi < hi || !usable_gap(maps, i, &glo, &ghi))
			continue;
		a = (glo + PAGE - 1) & ~(PAGE - 1);
		if (a >= min && a + size <= max && a + size <= ghi)
			return a;
	}
	return 0;
}

bool ta_seccomp(const struct pt_target *t)
{
	char path[80], line[256];
	bool on = true;         /* unknown counts as on */
	FILE *f;

	if (!t->nthreads)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)t->pid, (int)t->threads[0].tid);
	f = fopen(path, "re");
	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8)) {
			on = atoi(line + 8) != 0;
			break;
		}
	fclose(f);
	return on;
}

/* A syscall in the target that returns a value: the value, or a negative errno. */
static int64_t remote(struct pt_target *t, long nr, uint64_t a0, uint64_t a1, uint64_t a2,
		      uint64_t a3, uint64_t a4, uint64_t a5)
{
	const uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };
	int64_t ret;
	int err = pt_syscall(t, nr, args, &ret);

	return err ? err : ret;
}

/* memfd_create in the target, named so that /proc/PID/maps says what the mapping is. */
static int64_t remote_memfd(struct pt_target *t)
{
	static const char name[] = TA_MEMFD_NAME;
	uint64_t at = (t->threads[0].regs.rsp - 512) & ~15ull;     /* below the red zone */
	char saved[sizeof(name)];
	int64_t fd;

	if (pt_read(t, at, saved, sizeof(saved)) || pt_write(t, at, name, sizeof(name)))
		return -EFAULT;
	fd = remote(t, SYS_memfd_create, at, MFD_CLOEXEC | MFD_EXEC, 0, 0, 0, 0);
	if (fd == -EINVAL)      /* a kernel before 6.3 knows no MFD_EXEC */
		fd = remote(t, SYS_memfd_create, at, MFD_CLOEXEC, 0, 0, 0, 0);
	pt_write(t, at, saved, sizeof(saved));
	return fd;
}

int ta_area_create(struct pt_target *t, uint64_t addr, uint64_t size, int *our_fd)
{
	int64_t tfd, got;
	int pidfd = -1, fd = -1, err;

	*our_fd = -1;
	tfd = remote_memfd(t);
	if (tfd < 0)
		return (int)tfd;
	pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, (int)tfd, 0);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) || ftruncate(fd, (off_t)size)) {
		err = -errno;
		goto cleanup;
	}
	got = remote(t, SYS_mmap, addr, size, PROT_READ | PROT_EXEC,
		     MAP_PRIVATE | MAP_FIXED_NOREPLACE, (uint64_t)tfd, 0);
	if (got >= 0 && (uint64_t)got != addr) {
		/* a kernel that took MAP_FIXED_NOREPLACE as a hint: not where it must be */
		remote(t, SYS_munmap, (uint64_t)got, size, 0, 0, 0, 0);
		got = -EEXIST;
	}
	err = got < 0 ? (int)got : 0;
cleanup:
	remote(t, SYS_close, (uint64_t)tfd, 0, 0, 0, 0, 0);
	if (pidfd >= 0)
		close(pidfd);
	if (err && fd >= 0)
		close(fd);
	else
		*our_fd = fd;
	return err;
}
