// SPDX-License-Identifier: MIT
/*
 * Entry trampolines for modules a process maps after tramp_process__attach()
 * (include/trampoline.h: tramp_process__attach_module), called by the recorder while the
 * process is held at ld.so's debug-state call or at an exec (user/record/record_live.c):
 *   - a library loaded with dlopen is patched like the first modules, every thread stopped,
 *     with the same checks, before it is relocated and its constructors run;
 *   - a library with trampolines that was unloaded (dlclose) lost its jmps with its text; mapped
 *     again at the same place, its trampolines (relocated for those very addresses, still
 *     mapped and probed) get their jmps back; elsewhere, its old trampoline file is unmapped and
 *     it is patched anew;
 *   - a module whose links exist is switched only when none of its code can have run since it
 *     was mapped: a call in flight would lose its return with the link it entered through;
 *   - the restore writes only where a patch address still maps the module's file at the same
 *     offset (tramp_keep_still_mapped()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "trampoline_area.h"
#include "trampoline_int.h"

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
void tramp_keep_still_mapped(struct tramp_process *tp)
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
 * patch_in_place() without stopping the process (reading its memory needs no stop): a module
 * announced again that is still the mapping we patched is left alone, its threads never held.
 */
static bool still_patched(const struct tramp_process *tp, const struct tramp_mod *tm)
{
	struct pt_target peek = { .pid = tp->pid, .mem_fd = -1 };
	struct ta_maps maps;
	char path[64];
	bool in_place = false;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)tp->pid);
	peek.mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (peek.mem_fd < 0)
		return false;
	if (ta_maps_read(tp->pid, &maps) == 0) {
		in_place = patch_in_place(&peek, &maps, tm);
		ta_maps_free(&maps);
	}
	close(peek.mem_fd);
	return in_place;
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
	free(tm->log);
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

		/* one given back to another tool's probe: planned anew */
		area = !t->given_back && same_mapping(maps, tm, t) &&
		       !pt_read(pt, t->patch_addr, now, t->plan.patch_len) &&
		       !memcmp(now, t->moved, t->plan.patch_len);
	}
	if (!area)
		return false;
	if (tramp_mod_write(pt, tm, true) == tm->nfns)
		return true;
	tramp_mod_write(pt, tm, false);   /* the jmps written before a failure go again */
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
	int n = tramp_mod_attach_plain(p, tm->m, o->link_pid, o->verbose, true);

	retire_mod(p, pt, maps, tm);
	tramp_mark_all(tm->m, why);
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

/* Guard the process once a module mapped later got trampolines (tramp_process__attach()). */
static void guard_late(struct tramp_process *tp)
{
	int err;

	if (tp->guarded)
		return;
	err = probes__guard_pid(tp->probes, tp->pid, true);
	if (err < 0)
		fprintf(stderr, "atftrace record: process %d: cannot guard its trampolines (%s): "
			"another tool's uprobe on a patched function would crash it\n", (int)tp->pid,
			strerror(-err));
	tp->guarded = err >= 0;
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
	if (tm && (!tramp_process__wants(tp, m) || (tm->nfns && still_patched(tp, tm))))
		return 0;
	err = tp->restored ? -ESRCH : tp->no_guard ? -EOPNOTSUPP :
	      pt_stop_all(&pt, tp->pid, tp->own_child);
	if (err) {
		/* unverified, its jmps may still be in place: a plain probe there would run the
		 * file's instruction over ours, so nothing changes (gone: nothing to do) */
		if (tm)
			return tm->nfns && err != -ESRCH ? err : 0;
		tramp_mark_all(m, tp->no_guard ? TRAMP_NO_GUARD : TRAMP_NO_PTRACE);
		return probes__attach_module(p, m, o->link_pid);
	}
	if (ta_maps_read(tp->pid, &maps) < 0)
		memset(&maps, 0, sizeof(maps));
	if (!tm) {
		/* new: no link of its own yet */
		if (!(tm = add_mod(tp, m))) {
			n = -ENOMEM;
		} else if (tramp_module_textrel(m)) {
			tramp_mark_all(m, TRAMP_TEXTREL);
			n = probes__attach_module(p, m, o->link_pid);
			if (o->verbose)
				tramp_mod_report(tm);
		} else {
			n = tramp_mod_attach(p, &pt, &maps, tm, &later);
		}
	} else if (tm->nfns && patch_in_place(&pt, &maps, tm)) {
		n = 0;                  /* announced again, still the mapping we patched */
	} else if ((why = cannot_switch(&pt, &maps, m, o->held)) != TRAMP_OK) {
		if (tm->nfns)
			n = fall_back_plain(p, &pt, &maps, tm, o, why);
		else
			tramp_mark_all(m, why);       /* its plain link stays; not-mapped waits on */
	} else if (tm->nfns && rearm_in_place(&pt, &maps, tm)) {
		for (size_t i = 0; i < m->nfuncs; i++)
			n += tramp_wanted(&m->funcs[i]);        /* every link as it was */
		if (o->verbose)
			tramp_mod_report(tm);
	} else {
		if (tm->nfns)
			retire_mod(p, &pt, &maps, tm);
		n = tramp_mod_attach(p, &pt, &maps, tm, &later);      /* replaces the plain link */
	}
	*ntramp = tm ? tm->nfns : 0;
	ta_maps_free(&maps);
	/* as at the start: guarded once no syscall is run inside it any more */
	if (*ntramp)
		guard_late(tp);
	pt_detach_all(&pt);
	return n;
}
