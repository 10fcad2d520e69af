// SPDX-License-Identifier: MIT
/*
 * Undo a dead session's patches from the outside (include/tramp_restore.h).
 *
 * A recorder killed with -9 (or one whose restore failed because a debugger held the process)
 * leaves its jmps over function entries, or its redirected call sites (record --call-sites),
 * and the areas they jump to. Each area starts with its patch log (include/patch_log.h,
 * written by trampoline_log.c before any patch): here the areas
 * are found by their memfd's name in /proc/PID/maps, their headers read through /proc/PID/mem
 * and checked whole, and, when no live session owns them, every patch whose address still maps
 * the module's file at its offset and still holds our bytes gets the original bytes back, with
 * every thread stopped (ptrace_target.c, as the session's own restore). Bytes that are no longer
 * ours are never written; another tool's int3 over our jmp stays, over the original bytes.
 * Every kind of patch takes the same path: what is "ours" is the record's written bytes (a jmp
 * over an entry, a whole `call stub` at a call site), what goes back its original ones.
 *
 * A live session owns an area when the recorder its header names is alive (same pid, same start
 * time), or when any process holds a descriptor of the area's memfd: the recorder keeps one for
 * the whole session (the target closes its own at once), which also holds for a recorder in
 * another pid namespace, whose pid the header cannot name for us.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "atftrace.h"
#include "proc.h"
#include "ptrace_target.h"
#include "tramp_restore.h"
#include "trampoline_area.h"

static int open_mem(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The mappings of our memfd in @pid: one area each (the whole file is mapped at once). */
static int find_areas(pid_t pid, struct tramp_areas *out)
{
	struct ta_maps maps;
	int err = ta_maps_read(pid, &maps);

	if (err)
		return err;
	for (size_t i = 0; i < maps.n; i++) {
		const struct ta_map *m = &maps.v[i];
		struct tramp_area *v;

		if (m->kind != 'a' || m->offset)
			continue;
		v = realloc(out->v, (out->n + 1) * sizeof(*v));
		if (!v) {
			ta_maps_free(&maps);
			return -ENOMEM;
		}
		out->v = v;
		out->v[out->n++] = (struct tramp_area){ .lo = m->lo, .hi = m->hi, .file_ino = m->ino,
							.file_dev = m->dev };
	}
	ta_maps_free(&maps);
	return 0;
}

/* Read and check the header of @a through @mem. */
static void read_header(int mem, struct tramp_area *a)
{
	uint8_t fixed[PATCH_LOG_FIXED], *buf;
	uint32_t size;

	if (pread(mem, fixed, sizeof(fixed), (off_t)a->lo) != (ssize_t)sizeof(fixed)) {
		a->err = PATCH_LOG_ERR_TRUNCATED;
		return;
	}
	a->err = patch_log_header_size(fixed, sizeof(fixed), &size);
	if (a->err)
		return;
	if (size > a->hi - a->lo) {
		a->err = PATCH_LOG_ERR_TRUNCATED;
		return;
	}
	buf = malloc(size);
	if (!buf) {
		a->err = -ENOMEM;
		return;
	}
	if (pread(mem, buf, size, (off_t)a->lo) != (ssize_t)size)
		a->err = PATCH_LOG_ERR_TRUNCATED;
	else
		a->err = patch_log_decode(buf, size, &a->log);
	free(buf);
	/* a header copied from elsewhere, or of another mapping, is not this area's */
	if (!a->err && a->log.area_addr != a->lo) {
		patch_log_free(&a->log);
		a->err = PATCH_LOG_ERR_FIELD;
	}
}

/* Any process (but us) with a descriptor of one of @a's memfds: its owner. */
static void find_fd_holders(struct tramp_areas *a)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char *end, path[64];
		long pid = strtol(de->d_name, &end, 10);
		struct dirent *fe;
		DIR *fds;

		if (pid <= 0 || *end || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		fds = opendir(path);
		while (fds && (fe = readdir(fds))) {
			struct stat st;

			/* the file the descriptor is open on (the link followed) */
			if (fe->d_name[0] == '.' || fstatat(dirfd(fds), fe->d_name, &st, 0))
				continue;
			for (size_t i = 0; i < a->n; i++)
				if (!a->v[i].owner && st.st_ino == a->v[i].file_ino &&
				    st.st_dev == a->v[i].file_dev)
					a->v[i].owner = (pid_t)pid;
		}
		if (fds)
			closedir(fds);
	}
	if (d)
		closedir(d);
}

int tramp_areas__read(pid_t pid, struct tramp_areas *out)
{
	int mem, err;

	out->v = NULL;
	out->n = 0;
	err = find_areas(pid, out);
	if (err || !out->n) {
		tramp_areas__free(out);
		return err;
	}
	mem = open_mem(pid);
	if (mem < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		tramp_areas__free(out);
		return err;
	}
	for (size_t i = 0; i < out->n; i++) {
		struct tramp_area *a = &out->v[i];
		uint64_t start;

		read_header(mem, a);
		if (!a->err && a->log.owner_pid && proc_alive((pid_t)a->log.owner_pid) &&
		    !proc_start_time((pid_t)a->log.owner_pid, &start) && start == a->log.owner_start)
			a->owner = (pid_t)a->log.owner_pid;
	}
	close(mem);
	find_fd_holders(out);
	return 0;
}

/* Check (and with @write, restore) every patch of the sound, unowned area @a. */
static void check_area(struct pt_target *pt, const struct ta_maps *maps, struct tramp_area *a,
		       bool write)
{
	const struct patch_log *l = &a->log;

	a->restored = a->original = a->foreign = a->unmapped = a->failed = 0;
	a->module_mapped = l->map_size &&
			   ta_file_addr(maps, l->dev, l->ino, l->map_offset) == l->map_addr;
	for (uint32_t i = 0; i < l->nrecords; i++) {
		const struct patch_record *r = &l->records[i];
		struct tramp_patch *p = &a->patches[i];

		memset(p, 0, sizeof(*p));
		if (ta_file_addr(maps, l->dev, l->ino, r->file_off) != r->addr) {
			p->state = TPATCH_UNMAPPED;
			a->unmapped++;
			continue;
		}
		if (pt_read(pt, r->addr, p->now, r->len)) {
			p->state = TPATCH_FAILED;
			a->failed++;
			continue;
		}
		switch (patch_log_unpatch(r, p->now, p->out)) {
		case PATCH_NOW_OURS:
			if (write && pt_write(pt, r->addr, p->out, r->len)) {
				p->state = TPATCH_FAILED;
				a->failed++;
			} else {
				p->state = TPATCH_RESTORED;
				a->restored++;
			}
			break;
		case PATCH_NOW_ORIGINAL:
			p->state = TPATCH_ORIGINAL;
			a->original++;
			break;
		default:
			p->state = TPATCH_FOREIGN;
			a->foreign++;
			break;
		}
	}
}

/* check_area() for every sound area that no live session owns. */
static int check_all(pid_t pid, struct pt_target *pt, struct tramp_areas *a, bool write)
{
	struct ta_maps maps;
	int err = ta_maps_read(pid, &maps);

	if (err)
		return err;
	for (size_t i = 0; i < a->n; i++) {
		struct tramp_area *ar = &a->v[i];

		if (ar->err || ar->owner)
			continue;
		free(ar->patches);
		ar->patches = calloc(ar->log.nrecords ? ar->log.nrecords : 1, sizeof(*ar->patches));
		if (!ar->patches) {
			err = -ENOMEM;
			break;
		}
		check_area(pt, &maps, ar, write);
	}
	ta_maps_free(&maps);
	return err;
}

/* The return address of the stub of call site @r (its return point, `call R_f`), or 0. */
static uint64_t stub_return(struct pt_target *pt, const struct patch_record *r)
{
	uint8_t code[32];
	uint64_t stub;
	int32_t rel;

	if (r->kind != PATCH_KIND_CALL_REL32 || r->len != 5 || r->written[0] != 0xe8)
		return 0;
	memcpy(&rel, r->written + 1, sizeof(rel));
	stub = r->addr + 5 + (uint64_t)(int64_t)rel;
	if (pt_read(pt, stub, code, sizeof(code)))
		return 0;
	/* the return point is the `call R_f` just before the stub's `jmp site+5`
	 * (user/patch/callsite_plan.h) */
	for (size_t p = ATF_SITE_JMP_FROM_RET; p + 5 <= sizeof(code); p++) {
		if (code[p] != 0xe9 || code[p - ATF_SITE_JMP_FROM_RET] != 0xe8)
			continue;
		memcpy(&rel, code + p + 1, sizeof(rel));
		if (stub + p + 5 + (uint64_t)(int64_t)rel == r->addr + 5)
			return stub + p - ATF_SITE_JMP_FROM_RET;
	}
	return 0;
}

static int cmp_pair(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	return a[0] < b[0] ? -1 : a[0] > b[0];
}

/*
 * A frame entered through a call-site stub returns into the stub, which has no unwind
 * information: a C++ throw through it would terminate the program. With every thread stopped,
 * each stack word that holds a stub's return gets its call site + 5, the return address of the
 * original call (user/patch/callsite_stacks.c does the same at a session's own end).
 */
static void stacks_to_sites(struct pt_target *pt, const struct tramp_areas *a)
{
	uint64_t (*pairs)[2] = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < a->n; i++)
		if (!a->v[i].err && !a->v[i].owner)
			cap += a->v[i].log.nrecords;
	if (!cap || !(pairs = malloc(cap * sizeof(*pairs))))
		return;
	for (size_t i = 0; i < a->n; i++)
		for (uint32_t k = 0; !a->v[i].err && !a->v[i].owner && k < a->v[i].log.nrecords; k++) {
			const struct patch_record *r = &a->v[i].log.records[k];
			uint64_t ret = stub_return(pt, r);

			if (ret) {
				pairs[n][0] = ret;
				pairs[n++][1] = r->addr + 5;
			}
		}
	qsort(pairs, n, sizeof(*pairs), cmp_pair);
	pt_stack_replace(pt, (const uint64_t (*)[2])pairs, n);
	free(pairs);
}

int tramp_areas__restore(pid_t pid, struct tramp_areas *a, bool dry_run)
{
	struct pt_target pt = { .pid = pid, .mem_fd = -1 };
	int err;

	if (dry_run) {
		/* reading needs no stop */
		pt.mem_fd = open_mem(pid);
		if (pt.mem_fd < 0)
			return errno == ENOENT ? -ESRCH : -errno;
		err = check_all(pid, &pt, a, false);
		close(pt.mem_fd);
		return err;
	}
	err = pt_stop_all(&pt, pid, false);
	if (err)
		return err;
	/* the maps are read with every thread stopped: nothing maps or unmaps meanwhile */
	err = check_all(pid, &pt, a, true);
	if (!err)
		stacks_to_sites(&pt, a);
	pt_detach_all(&pt);
	return err;
}

void tramp_areas__free(struct tramp_areas *a)
{
	for (size_t i = 0; i < a->n; i++) {
		patch_log_free(&a->v[i].log);
		free(a->v[i].patches);
	}
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

int tramp_note_leftovers(pid_t pid)
{
	unsigned entries = 0, sites = 0;
	struct tramp_areas a;

	if (tramp_areas__read(pid, &a) || !a.n)
		return 0;
	/* the areas no live session owns: a dry run says which patches are still in place */
	if (!tramp_areas__restore(pid, &a, true))
		for (size_t i = 0; i < a.n; i++)
			for (uint32_t k = 0; !a.v[i].err && !a.v[i].owner && k < a.v[i].log.nrecords; k++)
				if (a.v[i].patches[k].state == TPATCH_RESTORED) {
					if (a.v[i].log.records[k].kind != PATCH_KIND_ENTRY_JMP)
						sites++;
					else
						entries++;
				}
	if (entries || sites) {
		char what[128];

		if (entries && sites)
			snprintf(what, sizeof(what), "%u function %s patched and %u call %s redirected",
				 entries, entries == 1 ? "entry" : "entries", sites,
				 sites == 1 ? "site" : "sites");
		else if (entries)
			snprintf(what, sizeof(what), "%u function %s patched", entries,
				 entries == 1 ? "entry" : "entries");
		else
			snprintf(what, sizeof(what), "%u call %s redirected", sites,
				 sites == 1 ? "site" : "sites");
		fprintf(stderr, "atftrace record: process %d still has %s by an atftrace session that "
			"ended without restoring them (killed?): not traced; 'atftrace restore -p %d' "
			"writes their original bytes back\n", (int)pid, what, (int)pid);
	}
	tramp_areas__free(&a);
	return (int)(entries + sites);
}
