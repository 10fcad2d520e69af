// SPDX-License-Identifier: MIT
/*
 * Handing a function back (include/callsite.h): another tool registered a uprobe on the entry
 * (or the first, relocated, instructions) of a function whose callers we redirected
 * (bpf/cs_handback.bpf.h notes it). That tool does not see the redirected calls: they enter the
 * function past its first bytes. So its sites get the file's calls back, while every thread is
 * stopped (ptrace, as for the writes: user/patch/callsite.c); the function is then entered at
 * its first bytes again, where the other tool's probe and our own plain entry probe both see
 * every call. Its body and stubs stay in the memfd (a thread may be inside one), unreached.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include "callsite.h"
#include "cs_handback.h"
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "callsite_int.h"

uint64_t cs_kernel_dev(uint64_t dev)
{
	return (uint64_t)major(dev) << 20 | minor(dev);
}

/* Is @n a registration on @cm's file (or on a file not known)? */
static bool note_on_file(const struct cs_hb_note *n, const struct cs_mod *cm)
{
	if (n->dev == CS_HB_ANY_FILE && n->ino == CS_HB_ANY_FILE)
		return true;
	return n->ino == cm->ino && n->dev == cs_kernel_dev(cm->dev);
}

/* Does a uprobe at file offset @off miss the calls that @c's stubs send past its first bytes? */
static bool note_hits_fn(uint64_t off, const struct cs_fn *c)
{
	uint64_t entry = c->f->probe_offset - (c->f->endbr64 ? 4 : 0);

	return off == CS_HB_ANY_OFF || (off >= entry && off < c->f->probe_offset + c->plan.patch_len);
}

/* Which of @cm's functions with sites @notes name, into @pick; how many. */
static size_t pick_fns(const struct cs_mod *cm, const struct cs_hb_note *notes, size_t n,
		       bool *pick)
{
	size_t k = 0;

	for (size_t i = 0; i < cm->nfns; i++) {
		if (!cm->fns[i].nsites)
			continue;
		for (size_t j = 0; j < n && !pick[i]; j++)
			pick[i] = note_on_file(&notes[j], cm) && note_hits_fn(notes[j].off, &cm->fns[i]);
		k += pick[i];
	}
	return k;
}

/* Write back the sites of @cm's picked functions, drop them from cm->sites; report each. */
static void hand_back_module(struct pt_target *pt, const struct ta_maps *maps, struct cs_mod *cm,
			     const bool *pick, cs_handed_fn report, void *ctx)
{
	size_t *written = calloc(cm->nfns ? cm->nfns : 1, sizeof(*written)), kept = 0;

	for (size_t k = 0; k < cm->nsites; k++) {
		const struct cs_site *s = &cm->sites[k];

		if (!pick[s->fn]) {
			cm->sites[kept++] = *s;
			continue;
		}
		/* a site that is not ours any more (unmapped, rewritten) has nothing to give back */
		if (cs_site__write_back(pt, maps, cm, s) && written)
			written[s->fn]++;
	}
	cm->nsites = kept;
	for (size_t i = 0; i < cm->nfns; i++) {
		if (!pick[i])
			continue;
		if (report)
			report(cm->m->path, cm->fns[i].f->demangled ? cm->fns[i].f->demangled :
			       cm->fns[i].f->name, written ? written[i] : 0, cm->fns[i].nsites, ctx);
		cm->fns[i].nsites = 0;
	}
	free(written);
}

int cs_process__hand_back(struct cs_process *cp, const struct cs_hb_note *notes, size_t n,
			  cs_handed_fn report, void *ctx)
{
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	bool **pick;
	uint64_t start = 0;
	size_t nfns = 0;
	int err;

	if (!cp || cp->restored || !n)
		return 0;
	pick = calloc(cp->nmods ? cp->nmods : 1, sizeof(*pick));
	if (!pick)
		return -ENOMEM;
	for (size_t i = 0; i < cp->nmods; i++) {
		struct cs_mod *cm = &cp->mods[i];

		if (!cm->nsites)
			continue;
		pick[i] = calloc(cm->nfns, sizeof(**pick));
		if (!pick[i]) {
			err = -ENOMEM;
			goto cleanup;
		}
		nfns += pick_fns(cm, notes, n, pick[i]);
	}
	err = 0;
	if (!nfns || !proc_alive(cp->pid) || proc_start_time(cp->pid, &start) ||
	    start != cp->start_ticks)
		goto cleanup;   /* none of ours, or the process is gone (its pid reused) */
	err = pt_stop_all(&pt, cp->pid, cp->own_child);
	if (err) {
		err = err == -ESRCH ? 0 : err;
		goto cleanup;
	}
	err = ta_maps_read(cp->pid, &maps);
	if (err >= 0) {
		for (size_t i = 0; i < cp->nmods; i++)
			if (pick[i])
				hand_back_module(&pt, &maps, &cp->mods[i], pick[i], report, ctx);
		err = (int)nfns;
	} else if (err == -ENOENT || err == -ESRCH) {
		err = 0;        /* gone meanwhile */
	}
	ta_maps_free(&maps);
	pt_detach_all(&pt);
cleanup:
	for (size_t i = 0; i < cp->nmods; i++)
		free(pick[i]);
	free(pick);
	return err;
}
