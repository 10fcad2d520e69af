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

/* Which of traced module @cm's functions @notes name, into @pick. */
static void pick_fns(const struct cs_mod *cm, const struct cs_hb_note *notes, size_t n, bool *pick)
{
	for (size_t i = 0; i < cm->nfns; i++)
		for (size_t j = 0; j < n && !pick[i]; j++)
			pick[i] = note_on_file(&notes[j], cm) && note_hits_fn(notes[j].off, &cm->fns[i]);
}

/*
 * The traced module whose function site @s of cp->mods[@i] calls: its own module, or, for
 * another module's PLT call, the one the site names.
 */
static size_t site_target(const struct cs_process *cp, size_t i, const struct cs_site *s)
{
	return cp->mods[i].caller ? s->tmod : i;
}

/* Is site @s of cp->mods[@i] a call to a picked function? */
static bool site_picked(const struct cs_process *cp, bool *const *pick, size_t i,
			const struct cs_site *s)
{
	size_t t = site_target(cp, i, s);

	return !s->handed_back && t < cp->nmods && pick[t] && s->fn < cp->mods[t].nfns && pick[t][s->fn];
}

/* Sites per function of each traced module (into @count[t][fn]) that go to a picked one; how many. */
static size_t count_picked(const struct cs_process *cp, bool *const *pick, size_t **count)
{
	size_t n = 0;

	for (size_t i = 0; i < cp->nmods; i++)
		for (size_t k = 0; k < cp->mods[i].nsites; k++) {
			const struct cs_site *s = &cp->mods[i].sites[k];

			if (site_picked(cp, pick, i, s)) {
				count[site_target(cp, i, s)][s->fn]++;
				n++;
			}
		}
	return n;
}

/* Write back the sites of every module that call a picked function, mark them; count each. */
static void write_back_picked(struct cs_process *cp, struct pt_target *pt,
			      const struct ta_maps *maps, bool *const *pick, size_t **written)
{
	for (size_t i = 0; i < cp->nmods; i++) {
		struct cs_mod *cm = &cp->mods[i];

		/* kept in place: stub k is site k's, and a thread may still be inside it */
		for (size_t k = 0; k < cm->nsites; k++) {
			struct cs_site *s = &cm->sites[k];

			if (!site_picked(cp, pick, i, s))
				continue;
			/* a site that is not ours any more (unmapped, rewritten) has nothing to give back */
			if (cs_site__write_back(pt, maps, cm, s))
				written[site_target(cp, i, s)][s->fn]++;
			s->handed_back = true;
		}
	}
}

/* One line per handed-back function (one with sites). */
static void report_picked(struct cs_process *cp, size_t **count, size_t **written,
			  cs_handed_fn report, void *ctx)
{
	for (size_t t = 0; t < cp->nmods; t++) {
		struct cs_mod *cm = &cp->mods[t];

		for (size_t i = 0; count[t] && i < cm->nfns; i++) {
			if (!count[t][i])
				continue;
			if (report)
				report(cm->m->path, cm->fns[i].f->demangled ? cm->fns[i].f->demangled :
				       cm->fns[i].f->name, written[t][i], count[t][i], ctx);
			cm->fns[i].nsites = 0;
		}
	}
}

int cs_process__hand_back(struct cs_process *cp, const struct cs_hb_note *notes, size_t n,
			  cs_handed_fn report, void *ctx)
{
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	bool **pick = NULL;
	size_t **count = NULL, **written = NULL, nsites;
	uint64_t start = 0;
	int err = -ENOMEM;

	if (!cp || cp->restored || !n)
		return 0;
	pick = calloc(cp->nmods ? cp->nmods : 1, sizeof(*pick));
	count = calloc(cp->nmods ? cp->nmods : 1, sizeof(*count));
	written = calloc(cp->nmods ? cp->nmods : 1, sizeof(*written));
	if (!pick || !count || !written)
		goto cleanup;
	for (size_t i = 0; i < cp->nmods; i++) {
		struct cs_mod *cm = &cp->mods[i];

		if (cm->caller || !cm->nfns)
			continue;
		pick[i] = calloc(cm->nfns, sizeof(**pick));
		count[i] = calloc(cm->nfns, sizeof(**count));
		written[i] = calloc(cm->nfns, sizeof(**written));
		if (!pick[i] || !count[i] || !written[i])
			goto cleanup;
		pick_fns(cm, notes, n, pick[i]);
		for (size_t k = 0; k < cm->nfns; k++)
			cm->fns[k].handed_back |= pick[i][k];   /* a module mapped later keeps it too */
	}
	err = 0;
	nsites = count_picked(cp, pick, count);
	for (size_t i = 0; i < cp->nmods; i++) {   /* and the functions in indirect sites' tables, */
		nsites += pick[i] ? cs_ind__picked(&cp->mods[i], pick[i], count[i]) : 0;
		/* and the bodies whose first jump goes to their plain entries */
		nsites += pick[i] ? cs_plain__picked(&cp->mods[i], pick[i]) : 0;
	}
	if (!nsites || !proc_alive(cp->pid) || proc_start_time(cp->pid, &start) ||
	    start != cp->start_ticks)
		goto cleanup;   /* none of ours, or the process is gone (its pid reused) */
	err = pt_stop_all(&pt, cp->pid, cp->own_child);
	if (err) {
		err = err == -ESRCH ? 0 : err;
		goto cleanup;
	}
	err = ta_maps_read(cp->pid, &maps);
	if (err >= 0) {
		write_back_picked(cp, &pt, &maps, pick, written);
		for (size_t i = 0; i < cp->nmods; i++)
			if (pick[i]) {
				cs_ind__hand_back(&pt, &maps, &cp->mods[i], pick[i], written[i]);
				cs_plain__hand_back(&pt, &cp->mods[i], pick[i]);
			}
		report_picked(cp, count, written, report, ctx);
		err = 0;
		for (size_t t = 0; t < cp->nmods; t++)
			for (size_t i = 0; count[t] && i < cp->mods[t].nfns; i++)
				err += count[t][i] != 0;
	} else if (err == -ENOENT || err == -ESRCH) {
		err = 0;        /* gone meanwhile */
	}
	ta_maps_free(&maps);
	pt_detach_all(&pt);
cleanup:
	for (size_t i = 0; i < cp->nmods; i++) {
		free(pick ? pick[i] : NULL);
		free(count ? count[i] : NULL);
		free(written ? written[i] : NULL);
	}
	free(pick);
	free(count);
	free(written);
	return err;
}
