// SPDX-License-Identifier: MIT
/*
 * Entry trampolines in a traced process (include/trampoline.h).
 *
 * Order of one attach (every step while all threads are stopped; a failure at any step leaves
 * the functions it concerns on plain probes, never half-patched):
 *   1. plan each selected function from the file's bytes (trampoline_plan.c);
 *   2. a launched command: close the plain link attached before its exec (so the text in
 *      memory is the file's again, with no int3 of ours on it);
 *   3. leave out functions with a thread's instruction pointer, or a word of a thread's stack
 *      (a signal frame's saved pointer), strictly inside the replaced bytes, and functions
 *      whose bytes in memory are not the file's;
 *   4. make the module's trampoline file near it (trampoline_area.c), write the trampolines;
 *   5. write each `jmp trampoline` through /proc/PID/mem (which makes the page private, the
 *      way the kernel's own uprobe writes do; the uprobes placed afterwards on other functions
 *      of the same page go into that private page);
 *   6. attach the link on the trampoline file (probe sites, function_id cookies), then the plain
 *      link for the module's other functions.
 * Restoring writes the original bytes back where our jmp still is; the trampolines stay
 * mapped, so a thread inside one (or a signal frame returning into one) finishes through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"

#define PAGE 4096ull
#define ENOTSUPP_K 524                      /* the kernel's ENOTSUPP: an instruction uprobes refuse */

struct tramp_fn {
	struct sym_func *f;
	uint64_t patch_addr;                /* in the process */
	struct tramp_plan plan;             /* patch_addr as in the file */
	uint8_t moved[32];                  /* the file's bytes from the patch address */
	uint8_t jmp[TRAMP_JMP_LEN];
	uint32_t slot;
};

struct tramp_mod {
	struct sym_module *m;
	int fd;                             /* our copy of the trampoline memfd, or -1 */
	uint64_t area;
	uint64_t dev, ino;                  /* the module's file: what a patch address must still map */
	struct tramp_fn *fns;               /* the patched ones */
	size_t nfns;
};

struct tramp_process {
	pid_t pid;
	uint64_t start_ticks;               /* the process's start: a reused pid is not ours */
	bool own_child, restored, verbose;
	struct tramp_mod *mods;
	size_t nmods;
};

int tramp_seize_child(pid_t pid)
{
	return pt_seize_child(pid);
}

/* Steps 3 to 5 for the planned functions @tf of @tm; the rest keep their reason. */
static void patch_module(struct pt_target *pt, const struct ta_maps *maps, struct tramp_mod *tm,
			 struct tramp_fn *tf, size_t n, uint64_t dev, uint64_t ino)
{
	uint64_t (*ranges)[2] = calloc(n ? n : 1, sizeof(*ranges)), lo = 0, hi = 0, size;
	bool *on_stack = calloc(n ? n : 1, sizeof(*on_stack));
	uint8_t *code = NULL;
	size_t ok = 0, live = n;         /* tf[0..live) still hold TRAMP_OK functions */

	if (!ranges || !on_stack)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		uint64_t file_off = tf[i].f->probe_offset;

		tf[i].patch_addr = ta_file_addr(maps, dev, ino, file_off);
		if (!tf[i].patch_addr)
			continue;                       /* an empty range: not mapped */
		ranges[i][0] = tf[i].patch_addr + 1;       /* at the first byte is fine: same entry */
		ranges[i][1] = tf[i].patch_addr + tf[i].plan.patch_len;
	}
	if (pt_stack_holds(pt, (const uint64_t (*)[2])ranges, n, on_stack) < 0)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		struct sym_func *f = tf[i].f;
		uint8_t now[sizeof(tf[i].moved)];

		if (!tf[i].patch_addr) {
			f->tramp = TRAMP_NOT_MAPPED;
			continue;
		}
		for (size_t k = 0; k < pt->nthreads && !on_stack[i]; k++)
			on_stack[i] = pt->threads[k].regs.rip >= ranges[i][0] &&
				       pt->threads[k].regs.rip < ranges[i][1];
		if (on_stack[i]) {
			f->tramp = TRAMP_THREAD_INSIDE;
			continue;
		}
		if (pt_read(pt, tf[i].patch_addr, now, tf[i].plan.patch_len) ||
		    memcmp(now, tf[i].moved, tf[i].plan.patch_len)) {
			f->tramp = TRAMP_TEXT_DIFFERS;
			if (!tramp_only_breakpoint(now, tf[i].moved, tf[i].plan.patch_len)) {
				f->tramp = TRAMP_REWRITTEN;     /* no probe at all over it */
				f->selected = false;
			}
			continue;
		}
		tf[ok++] = tf[i];
	}
	live = ok;
	if (!ok)
		goto cleanup;
	size = ((uint64_t)ok * TRAMP_SLOT + PAGE - 1) & ~(PAGE - 1);
	ta_module_span(maps, dev, ino, &lo, &hi);
	tm->area = ta_find_gap(maps, lo, hi, size);
	code = malloc(size);
	if (!code || !tm->area || ta_seccomp(pt) || ta_area_create(pt, tm->area, size, &tm->fd) < 0) {
		bool sandboxed = code && tm->area && ta_seccomp(pt);

		for (size_t i = 0; i < ok; i++)
			tf[i].f->tramp = sandboxed ? TRAMP_SECCOMP : TRAMP_NO_AREA;
		goto cleanup;
	}
	memset(code, 0xcc, size);
	tm->fns = tf;
	tm->nfns = 0;
	for (size_t i = 0; i < ok; i++) {
		struct tramp_fn t = tf[i];
		uint64_t at = tm->area + tm->nfns * TRAMP_SLOT;
		enum tramp_reason r;

		t.plan.patch_addr = t.patch_addr;  /* the moved code runs for the process's addresses */
		r = tramp_emit(t.moved, &t.plan, at, code + tm->nfns * TRAMP_SLOT);
		if (r == TRAMP_OK && !tramp_jmp(t.patch_addr, at, t.jmp))
			r = TRAMP_RANGE;
		if (r != TRAMP_OK) {
			memset(code + tm->nfns * TRAMP_SLOT, 0xcc, TRAMP_SLOT);
			t.f->tramp = (uint8_t)r;
			continue;
		}
		t.slot = (uint32_t)tm->nfns;
		tm->fns[tm->nfns++] = t;
	}
	if (pwrite(tm->fd, code, size, 0) != (ssize_t)size) {
		for (size_t i = 0; i < tm->nfns; i++)
			tm->fns[i].f->tramp = TRAMP_NO_AREA;
		tm->nfns = 0;
	}
cleanup:
	/* whatever stopped us before the trampolines were written: those keep plain probes */
	for (size_t i = 0; tm->fns != tf && i < live; i++)
		if (tf[i].f->tramp == TRAMP_OK)
			tf[i].f->tramp = TRAMP_NO_AREA;
	free(code);
	free(ranges);
	free(on_stack);
}

/* Write @on ? jmp : original bytes for the module's patched functions; how many were written. */
static size_t write_entries(struct pt_target *pt, struct tramp_mod *tm, bool on)
{
	size_t n = 0;

	for (size_t i = 0; i < tm->nfns; i++) {
		struct tramp_fn *t = &tm->fns[i];
		uint8_t now[TRAMP_JMP_LEN];

		if (on) {
			if (pt_write(pt, t->patch_addr, t->jmp, TRAMP_JMP_LEN))
				break;
		} else {
			/* only where our jmp still is */
			if (pt_read(pt, t->patch_addr, now, TRAMP_JMP_LEN) ||
			    memcmp(now, t->jmp, TRAMP_JMP_LEN) ||
			    pt_write(pt, t->patch_addr, t->moved, TRAMP_JMP_LEN))
				continue;
		}
		n++;
	}
	return n;
}

/* The link on the trampoline file; on failure the functions go back to their own bytes. */
static int attach_tramp_link(struct probes *p, struct pt_target *pt, struct tramp_mod *tm,
			     pid_t link_pid)
{
	uint64_t *offs = calloc(tm->nfns, sizeof(*offs)), *cookies = calloc(tm->nfns, sizeof(*cookies));
	char path[32];
	int err = -ENOMEM;
	size_t written = 0;

	if (!offs || !cookies)
		goto fail;
	for (size_t i = 0; i < tm->nfns; i++) {
		offs[i] = (uint64_t)tm->fns[i].slot * TRAMP_SLOT;      /* the probe site opens the slot */
		cookies[i] = (uint64_t)tm->m->module_id << 32 | tm->fns[i].f->symbol_index;
	}
	written = write_entries(pt, tm, true);
	if (written != tm->nfns) {
		err = -EIO;
		goto fail;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", tm->fd);
	/* owned by the functions' array, which stays where it is when the module list grows */
	err = probes__attach_sites(p, tm->fns, path, offs, cookies, (uint32_t)tm->nfns, link_pid);
	if (err)
		goto fail;
	for (size_t i = 0; i < tm->nfns; i++) {
		tm->fns[i].f->tramp = TRAMP_OK;
		tm->fns[i].f->via_tramp = true;
	}
	free(offs);
	free(cookies);
	return 0;
fail:
	/* the jmps already written go: no function is left without its probe */
	for (size_t i = 0; i < tm->nfns; i++)
		tm->fns[i].f->tramp = TRAMP_LINK_FAILED;
	tm->nfns = written;
	write_entries(pt, tm, false);
	tm->nfns = 0;
	free(offs);
	free(cookies);
	return err;
}

/* Say which functions keep a plain probe, and why (record -v). */
static void report(const struct tramp_mod *tm)
{
	size_t counts[TRAMP_NREASONS] = { 0 };
	const struct sym_module *m = tm->m;

	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];

		if (!tramp_wanted(f) || f->tramp >= TRAMP_NREASONS)
			continue;
		counts[f->tramp]++;
		if (f->tramp != TRAMP_OK && f->tramp != TRAMP_NOT_NEEDED)
			fprintf(stderr, "atftrace record: %s: %s: plain probe (%s)\n", m->path,
				f->name, tramp_reason_str(f->tramp));
	}
	fprintf(stderr, "atftrace record: %s: %zu functions through trampolines, %zu at nop5 sites",
		m->path, counts[TRAMP_OK], counts[TRAMP_NOT_NEEDED]);
	for (int r = TRAMP_SHORT; r < TRAMP_NREASONS; r++)
		if (counts[r])
			fprintf(stderr, ", %zu %s", counts[r], tramp_reason_str((enum tramp_reason)r));
	fprintf(stderr, "\n");
}

static void mark_all(struct sym_module *m, enum tramp_reason r)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		if (tramp_wanted(&m->funcs[i]))
			m->funcs[i].tramp = (uint8_t)r;
}

/*
 * Attach [lo, hi) of @offs/@cookies as one link, or, when the kernel refuses one of them
 * (an instruction its uprobes cannot take), as smaller links without the ones it refuses.
 * Returns how many are attached, or -errno for anything but a refused instruction.
 */
static int attach_split(struct probes *p, const struct sym_module *m, const uint64_t *offs,
			const uint64_t *cookies, uint32_t n, pid_t pid)
{
	int err, a, b;

	if (!n)
		return 0;
	err = probes__attach_sites(p, m, tramp_module_file(m), offs, cookies, n, pid);
	if (!err)
		return (int)n;
	if (err != -ENOTSUPP_K && err != -EINVAL && err != -EOPNOTSUPP)
		return err;
	if (n == 1)
		return 0;       /* refused: left out, and counted by the caller */
	a = attach_split(p, m, offs, cookies, n / 2, pid);
	if (a < 0)
		return a;
	b = attach_split(p, m, offs + n / 2, cookies + n / 2, n - n / 2, pid);
	return b < 0 ? b : a + b;
}

/* Plain probes on the functions without a trampoline (or, with @via_tramp, on those with one).
 * The number attached, or -errno. */
static int attach_plain(struct probes *p, struct sym_module *m, pid_t pid, bool verbose,
			bool via_tramp)
{
	uint64_t *offs = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*offs));
	uint64_t *cookies = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*cookies));
	uint32_t n = 0;
	int got = -ENOMEM;

	if (!offs || !cookies)
		goto cleanup;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];

		if (!tramp_wanted(f) || f->via_tramp != via_tramp)
			continue;
		offs[n] = f->probe_offset;
		cookies[n++] = (uint64_t)m->module_id << 32 | f->symbol_index;
	}
	got = attach_split(p, m, offs, cookies, n, pid);
	if (got >= 0 && (uint32_t)got != n)
		fprintf(stderr, "atftrace record: %s: the kernel refused to probe %u functions%s\n",
			m->path, n - (uint32_t)got, verbose ? "" : " (their first instruction)");
cleanup:
	free(offs);
	free(cookies);
	return got;
}

/* One module, all threads stopped: plan, patch, attach. Plain probes attached, or -errno. */
static int attach_one(struct probes *p, struct pt_target *pt, const struct ta_maps *maps,
		      struct tramp_mod *tm, const struct tramp_opts *o)
{
	struct sym_module *m = tm->m;
	struct tramp_fn *tf = NULL;
	struct stat st;
	uint64_t lo, hi;
	size_t n = 0;
	int fd = -1, plain;

	if (!pt || stat(tramp_module_file(m), &st) ||
	    !ta_module_span(maps, st.st_dev, st.st_ino, &lo, &hi)) {
		mark_all(m, pt ? TRAMP_NOT_MAPPED : TRAMP_NO_PTRACE);
		/* a launched command's plain link, attached before its exec, stays */
		return o->launched ? 0 : probes__attach_module(p, m, o->link_pid);
	}
	tm->dev = st.st_dev;
	tm->ino = st.st_ino;
	fd = open(tramp_module_file(m), O_RDONLY | O_CLOEXEC);
	tf = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*tf));
	for (size_t i = 0; fd >= 0 && tf && i < m->nfuncs; i++) {
		struct sym_func *f = &m->funcs[i];

		if (!tramp_wanted(f))
			continue;
		f->tramp = (uint8_t)tramp_plan_function(fd, m, i, &tf[n].plan, tf[n].moved,
							sizeof(tf[n].moved));
		if (f->tramp == TRAMP_OK)
			tf[n++].f = f;
	}
	if (fd >= 0)
		close(fd);
	if (!tf)
		return -ENOMEM;
	/* the plain probes placed before a launched command's exec: the text is the file's again */
	probes__detach_owner(p, m);
	patch_module(pt, maps, tm, tf, n, st.st_dev, st.st_ino);
	if (tm->fns != tf)
		free(tf);
	if (tm->nfns)
		attach_tramp_link(p, pt, tm, o->link_pid);
	if (o->verbose)
		report(tm);
	/* a process killed meanwhile: nothing to attach, its end ends the session */
	if (!proc_alive(pt->pid))
		return 0;
	plain = attach_plain(p, m, o->link_pid, o->verbose, false);
	if (plain == -ESRCH && !proc_alive(pt->pid))
		plain = 0;
	if (plain < 0)
		return plain;
	return plain + (int)tm->nfns;
}

int tramp_process__attach(struct tramp_process **out, struct probes *p, struct sym_module **mods,
			  size_t nmods, pid_t pid, const struct tramp_opts *o, size_t *ntramp)
{
	struct tramp_process *tp = calloc(1, sizeof(*tp));
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	bool stopped = false;
	int err = 0, total = 0;

	*out = NULL;
	*ntramp = 0;
	if (!tp || !(tp->mods = calloc(nmods ? nmods : 1, sizeof(*tp->mods)))) {
		free(tp);
		return -ENOMEM;
	}
	tp->pid = pid;
	proc_start_time(pid, &tp->start_ticks);
	tp->own_child = o->launched;
	tp->verbose = o->verbose;
	tp->nmods = nmods;
	err = o->launched ? pt_run_to_entry(&pt, pid) : pt_stop_all(&pt, pid, false);
	if (err == -ESRCH && o->launched) {
		tp->restored = true;    /* it exited before its entry: nothing was patched */
		*out = tp;
		return 0;
	}
	if (err)
		fprintf(stderr, "atftrace record: process %d: cannot stop it to place trampolines "
			"(%s%s): plain probes\n", (int)pid, strerror(-err),
			err == -EPERM ? ", traced by another tool?" : "");
	stopped = !err;
	if (stopped && ta_maps_read(pid, &maps) < 0)
		memset(&maps, 0, sizeof(maps));
	err = 0;
	for (size_t i = 0; i < nmods && err >= 0; i++) {
		tp->mods[i] = (struct tramp_mod){ .m = mods[i], .fd = -1 };
		err = attach_one(p, stopped ? &pt : NULL, &maps, &tp->mods[i], o);
		if (err >= 0) {
			total += err;
			*ntramp += tp->mods[i].nfns;
		}
	}
	ta_maps_free(&maps);
	if (stopped)
		pt_detach_all(&pt);
	*out = tp;
	return err < 0 ? err : total;
}

/* ---- modules mapped after the start (dlopen), or mapped anew (dlclose, then dlopen) ---- */

pid_t tramp_process__pid(const struct tramp_process *tp)
{
	return tp->pid;
}

static struct tramp_mod *find_mod(const struct tramp_process *tp, const struct sym_module *m)
{
	for (size_t i = 0; i < tp->nmods; i++)
		if (tp->mods[i].m == m)
			return &tp->mods[i];
	return NULL;
}

/* Was @tm attached before its module was mapped (a program's library, attached at its exec)? */
static bool waits_for_mapping(const struct tramp_mod *tm)
{
	for (size_t i = 0; i < tm->m->nfuncs; i++)
		if (tramp_wanted(&tm->m->funcs[i]) && tm->m->funcs[i].tramp == TRAMP_NOT_MAPPED)
			return true;
	return false;
}

bool tramp_process__wants(const struct tramp_process *tp, const struct sym_module *m)
{
	const struct tramp_mod *tm = find_mod(tp, m);

	return tm && (tm->nfns || waits_for_mapping(tm));
}

/* Is @t's patch address still file offset probe_offset of the module (dev, inode, offset)? */
static bool same_mapping(const struct ta_maps *maps, const struct tramp_mod *tm,
			 const struct tramp_fn *t)
{
	return ta_file_addr(maps, tm->dev, tm->ino, t->f->probe_offset) == t->patch_addr;
}

/*
 * Forget the patched functions whose mapping is gone: a library unloaded since (dlclose) took
 * its jmps with it, and its range may hold another mapping now; nothing is written there.
 * Unreadable maps forget them all.
 */
static void keep_still_mapped(struct tramp_process *tp)
{
	struct ta_maps maps;
	bool ok = ta_maps_read(tp->pid, &maps) == 0;

	for (size_t i = 0; i < tp->nmods; i++) {
		struct tramp_mod *tm = &tp->mods[i];
		size_t k = 0;

		for (size_t j = 0; ok && j < tm->nfns; j++)
			if (same_mapping(&maps, tm, &tm->fns[j]))
				tm->fns[k++] = tm->fns[j];
		tm->nfns = k;
	}
	if (ok)
		ta_maps_free(&maps);
}

/* Is one of @tm's jmps still where it was written, in the mapping it was written in? */
static bool patch_in_place(struct pt_target *pt, const struct ta_maps *maps,
			   const struct tramp_mod *tm)
{
	for (size_t i = 0; i < tm->nfns; i++) {
		const struct tramp_fn *t = &tm->fns[i];
		uint8_t now[TRAMP_JMP_LEN];

		if (same_mapping(maps, tm, t) && !pt_read(pt, t->patch_addr, now, sizeof(now)) &&
		    !memcmp(now, t->jmp, sizeof(now)))
			return true;
	}
	return false;
}

/*
 * The module was unmapped since @tm was patched (its jmps went with its text): close the link
 * on its trampoline file, unmap that file in the stopped process @pt when it is still that file
 * there and no thread is in it (none can be: it jumps back into text that is gone), and clear
 * the module's functions for a new plan. The plain link that left them out stays: the caller
 * replaces it.
 */
static void retire_mod(struct probes *p, struct pt_target *pt, const struct ta_maps *maps,
		       struct tramp_mod *tm)
{
	struct stat st;

	if (tm->fns)
		probes__detach_owner(p, tm->fns);
	for (size_t i = 0; tm->fd >= 0 && !fstat(tm->fd, &st) && i < maps->n; i++) {
		const struct ta_map *a = &maps->v[i];
		uint64_t range[1][2] = { { a->lo, a->hi } }, args[6] = { a->lo, a->hi - a->lo };
		bool inside = false;
		int64_t ret;

		if (a->lo != tm->area || a->dev != st.st_dev || a->ino != st.st_ino)
			continue;
		for (size_t k = 0; k < pt->nthreads; k++)
			inside |= pt->threads[k].regs.rip >= a->lo && pt->threads[k].regs.rip < a->hi;
		if (!inside && !pt_stack_holds(pt, (const uint64_t (*)[2])range, 1, &inside) &&
		    !inside && !ta_seccomp(pt))
			pt_syscall(pt, SYS_munmap, args, &ret);
		break;
	}
	if (tm->fd >= 0)
		close(tm->fd);
	free(tm->fns);
	*tm = (struct tramp_mod){ .m = tm->m, .fd = -1 };
	for (size_t i = 0; i < tm->m->nfuncs; i++) {
		tm->m->funcs[i].via_tramp = false;
		tm->m->funcs[i].tramp = TRAMP_UNSET;
	}
}

/*
 * The module was mapped anew at the same place (dlclose, then dlopen: ld.so takes the range it
 * left): its trampolines, relocated for these very addresses, are still mapped and probed, so
 * only its jmps are written again, over the file's bytes. False when anything differs (nothing
 * written then): it is patched anew. The caller checked that none of its code ran yet.
 */
static bool rearm_in_place(struct pt_target *pt, const struct ta_maps *maps, struct tramp_mod *tm)
{
	bool area = false;
	struct stat st;

	if (tm->fd < 0 || fstat(tm->fd, &st))
		return false;
	for (size_t i = 0; i < maps->n && !area; i++)
		area = maps->v[i].lo == tm->area && maps->v[i].dev == st.st_dev &&
		       maps->v[i].ino == st.st_ino;
	for (size_t i = 0; area && i < tm->nfns; i++) {
		const struct tramp_fn *t = &tm->fns[i];
		uint8_t now[sizeof(t->moved)];

		area = same_mapping(maps, tm, t) && !pt_read(pt, t->patch_addr, now, t->plan.patch_len) &&
		       !memcmp(now, t->moved, t->plan.patch_len);
	}
	if (!area)
		return false;
	if (write_entries(pt, tm, true) == tm->nfns)
		return true;
	write_entries(pt, tm, false);   /* the jmps written before a failure go again */
	return false;
}

static struct tramp_mod *add_mod(struct tramp_process *tp, struct sym_module *m)
{
	struct tramp_mod *n = realloc(tp->mods, (tp->nmods + 1) * sizeof(*n));

	if (!n)
		return NULL;
	tp->mods = n;
	n[tp->nmods] = (struct tramp_mod){ .m = m, .fd = -1 };
	return &n[tp->nmods++];
}

/*
 * Plain probes for the functions that @tm's module entered through trampolines, beside the
 * plain link of the others, before the trampoline link goes (a call in flight keeps its return),
 * for a mapping patched anew that is not patched again (@why); none of its jmps is in place
 * (patch_in_place), so no probe lands on one. Returns how many were attached.
 */
static int fall_back_plain(struct probes *p, struct pt_target *pt, const struct ta_maps *maps,
			   struct tramp_mod *tm, const struct tramp_opts *o, enum tramp_reason why)
{
	int n = attach_plain(p, tm->m, o->link_pid, o->verbose, true);

	retire_mod(p, pt, maps, tm);
	mark_all(tm->m, why);
	return n;
}

/*
 * Why a module whose probes are attached already cannot be switched to (new) trampolines now,
 * or TRAMP_OK: it is not mapped, or its code may have run since it was mapped, when the process
 * was not @held at ld.so's call for it (a thread's instruction pointer or a word on a stack lies
 * in it: a call in flight would lose its return with the link it entered through; held, a word
 * there is a stale pointer), or ld.so has yet to write its text (relocations).
 */
static enum tramp_reason cannot_switch(struct pt_target *pt, const struct ta_maps *maps,
				       const struct sym_module *m, bool held)
{
	uint64_t (*text)[2] = calloc(maps->n ? maps->n : 1, sizeof(*text));
	bool *ran = calloc(maps->n ? maps->n : 1, sizeof(*ran));
	enum tramp_reason why = TRAMP_NOT_MAPPED;
	struct stat st;
	size_t n = 0;

	if (!text || !ran || stat(tramp_module_file(m), &st))
		goto cleanup;
	for (size_t i = 0; i < maps->n; i++)      /* its code: the executable mappings */
		if (maps->v[i].exec && maps->v[i].dev == st.st_dev && maps->v[i].ino == st.st_ino) {
			text[n][0] = maps->v[i].lo;
			text[n++][1] = maps->v[i].hi;
		}
	if (!n)
		goto cleanup;
	why = !held && pt_stack_holds(pt, (const uint64_t (*)[2])text, n, ran) ? TRAMP_THREAD_INSIDE
										: TRAMP_OK;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < pt->nthreads; k++)
			ran[i] |= pt->threads[k].regs.rip >= text[i][0] &&
				  pt->threads[k].regs.rip < text[i][1];
	for (size_t i = 0; why == TRAMP_OK && i < n; i++)
		if (ran[i])
			why = TRAMP_THREAD_INSIDE;
	if (why == TRAMP_OK && tramp_module_textrel(m))
		why = TRAMP_TEXTREL;
cleanup:
	free(text);
	free(ran);
	return why;
}

int tramp_process__attach_module(struct tramp_process *tp, struct probes *p, struct sym_module *m,
				 const struct tramp_opts *o, size_t *ntramp)
{
	struct tramp_opts later = *o;
	struct tramp_mod *tm = find_mod(tp, m);
	struct ta_maps maps = { 0 };
	enum tramp_reason why;
	struct pt_target pt;
	int err, n = 0;

	*ntramp = 0;
	later.launched = false;         /* the plain link, if any, is replaced */
	/* without trampolines, its plain probes follow every mapping of the file */
	if (tm && !tramp_process__wants(tp, m))
		return 0;
	err = tp->restored ? -ESRCH : pt_stop_all(&pt, tp->pid, tp->own_child);
	if (err) {
		/* unverified, its jmps may still be in place: a plain probe there would run the
		 * file's instruction over ours, so nothing changes (gone: nothing to do) */
		if (tm)
			return tm->nfns && err != -ESRCH ? err : 0;
		mark_all(m, TRAMP_NO_PTRACE);
		return probes__attach_module(p, m, o->link_pid);
	}
	if (ta_maps_read(tp->pid, &maps) < 0)
		memset(&maps, 0, sizeof(maps));
	if (!tm) {
		/* new: no link of its own yet */
		if (!(tm = add_mod(tp, m))) {
			n = -ENOMEM;
		} else if (tramp_module_textrel(m)) {
			mark_all(m, TRAMP_TEXTREL);
			n = probes__attach_module(p, m, o->link_pid);
			if (o->verbose)
				report(tm);
		} else {
			n = attach_one(p, &pt, &maps, tm, &later);
		}
	} else if (tm->nfns && patch_in_place(&pt, &maps, tm)) {
		n = 0;                  /* announced again, still the mapping we patched */
	} else if ((why = cannot_switch(&pt, &maps, m, o->held)) != TRAMP_OK) {
		if (tm->nfns)
			n = fall_back_plain(p, &pt, &maps, tm, o, why);
		else
			mark_all(m, why);       /* its plain link stays; not-mapped waits on */
	} else if (tm->nfns && rearm_in_place(&pt, &maps, tm)) {
		for (size_t i = 0; i < m->nfuncs; i++)
			n += tramp_wanted(&m->funcs[i]);        /* every link as it was */
		if (o->verbose)
			report(tm);
	} else {
		if (tm->nfns)
			retire_mod(p, &pt, &maps, tm);
		n = attach_one(p, &pt, &maps, tm, &later);     /* replaces the plain link */
	}
	*ntramp = tm ? tm->nfns : 0;
	ta_maps_free(&maps);
	pt_detach_all(&pt);
	return n;
}

int tramp_process__restore(struct tramp_process *tp)
{
	struct pt_target pt;
	size_t any = 0, n = 0;
	uint64_t start = 0;
	int err;

	if (!tp || tp->restored)
		return 0;
	tp->restored = true;
	for (size_t i = 0; i < tp->nmods; i++)
		any += tp->mods[i].nfns;
	if (!any || !proc_alive(tp->pid) || proc_start_time(tp->pid, &start) ||
	    start != tp->start_ticks)
		return 0;       /* nothing patched, or the process is gone (its pid maybe reused) */
	err = pt_stop_all(&pt, tp->pid, tp->own_child);
	if (err)
		return err == -ESRCH ? 0 : err;     /* gone: nothing to give back */
	keep_still_mapped(tp);
	for (size_t i = 0; i < tp->nmods; i++)
		n += write_entries(&pt, &tp->mods[i], false);
	pt_detach_all(&pt);
	return (int)n;
}

void tramp_process__free(struct tramp_process *tp)
{
	if (!tp)
		return;
	tramp_process__restore(tp);
	for (size_t i = 0; i < tp->nmods; i++) {
		if (tp->mods[i].fd >= 0)
			close(tp->mods[i].fd);
		free(tp->mods[i].fns);
	}
	free(tp->mods);
	free(tp);
}
