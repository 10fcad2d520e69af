// SPDX-License-Identifier: MIT
/*
 * Call-site redirection, steps 1 to 3 (see callsite.c): which functions get a body, which
 * calls in the module's code reach them (direct, or through the module's own PLT), and which
 * of those the stopped process lets us redirect.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "callsite.h"
#include "callsite_plan.h"
#include "callsite_plt.h"
#include "callsite_bounds.h"
#include "patch_log.h"
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"
#include "textfmt.h"
#include "callsite_int.h"

bool cs_read_at(int fd, uint64_t off, uint64_t size, uint8_t **buf, uint64_t *cap)
{
	if (!size || size > (16u << 20))
		return false;
	if (size > *cap) {
		uint8_t *n = realloc(*buf, size);

		if (!n)
			return false;
		*buf = n;
		*cap = size;
	}
	return pread(fd, *buf, size, (off_t)off) == (ssize_t)size;
}

void *cs_reserve(void *v, size_t *cap, size_t n, size_t size)
{
	void *nv;

	if (*cap >= n)
		return v;
	nv = realloc(v, n * size);
	if (nv)
		*cap = n;
	return nv;
}

static int cmp_target(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];

	return x < y ? -1 : x > y;
}

/* The module's PLT entries whose slot's symbol names a planned function, added to @targets. */
static int plan_plt(int fd, struct cs_mod *cm, cs_target **targets, size_t *n)
{
	const char **names = calloc(cm->nfns ? cm->nfns : 1, sizeof(*names));
	uint64_t (*plt)[3] = NULL;
	size_t nplt = 0;
	cs_target *nt;
	int err = -ENOMEM;

	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < cm->nfns; i++)
		names[i] = cm->fns[i].f->name;
	err = cs_plt_targets(fd, names, cm->nfns, &plt, &nplt);
	if (err || !nplt)
		goto cleanup;
	nt = realloc(*targets, (*n + nplt) * sizeof(**targets));
	if (!nt) {
		err = -ENOMEM;
		goto cleanup;
	}
	*targets = nt;
	memcpy(*targets + *n, plt, nplt * sizeof(*plt));
	*n += nplt;
cleanup:
	free(names);
	free(plt);
	return err;
}

/* Step 1: the functions that can have a body; their entry addresses and PLT entries, sorted,
 * with indexes. */
int cs_mod__plan(int fd, struct cs_mod *cm, const struct ta_maps *maps, cs_target **targets,
		 size_t *ntargets)
{
	const struct sym_module *m = cm->m;
	size_t n = 0;
	int err;

	cm->fns = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*cm->fns));
	*targets = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(**targets));
	if (!cm->fns || !*targets)
		return -ENOMEM;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];
		struct cs_fn *c = &cm->fns[cm->nfns];

		/* TRAMP_TEXT_DIFFERS: another tool's uprobe was at its entry before ours
		 * (tramp_skip_rewritten): its calls must keep reaching it there */
		if (!tramp_wanted(f) || f->ifunc_impl || f->tramp == TRAMP_TEXT_DIFFERS ||
		    tramp_plan_relocation(fd, m, i, &c->plan, c->moved, sizeof(c->moved)) != TRAMP_OK)
			continue;
		c->patch_addr = ta_file_addr(maps, cm->dev, cm->ino, f->probe_offset);
		if (!c->patch_addr)
			continue;
		c->f = f;
		(*targets)[n][0] = f->addr;
		(*targets)[n][1] = cm->nfns++;
		(*targets)[n++][2] = 0;
	}
	err = plan_plt(fd, cm, targets, &n);
	if (err)
		return err;
	qsort(*targets, n, sizeof(**targets), cmp_target);
	*ntargets = n;
	return 0;
}

uint64_t *cs_target_addrs(const cs_target *targets, size_t n)
{
	uint64_t *addrs = calloc(n ? n : 1, sizeof(*addrs));

	for (size_t i = 0; addrs && i < n; i++)
		addrs[i] = targets[i][0];
	return addrs;
}

/* Step 2: every call of the module's code to one of @targets, into cm->sites. */
int cs_mod__find_sites(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		       const cs_target *targets, size_t ntargets)
{
	uint64_t *addrs = cs_target_addrs(targets, ntargets), cap = 0;
	size_t scap = 0, ccap = 0, nfuncs = 0;
	struct cs_range *funcs = NULL;
	enum cs_ranges_from from;
	struct cs_call *calls = NULL;
	uint8_t *code = NULL;
	int err = -ENOMEM;

	if (!addrs)
		return -ENOMEM;
	/* every function's code, static ones too (a stripped library's by its .eh_frame) */
	err = cs_func_ranges(fd, &funcs, &nfuncs, &from);
	if (err)
		goto cleanup;
	err = -ENOMEM;
	for (size_t j = 0; j < nfuncs; j++) {
		const struct cs_range *s = &funcs[j];
		uint64_t start = s->off;
		size_t n;

		if (!cs_read_at(fd, start, s->size, &code, &cap))
			continue;
		void *grown = cs_reserve(calls, &ccap, s->size / CS_CALL_LEN + 1, sizeof(*calls));
		if (!grown)
			goto cleanup;
		calls = grown;
		n = cs_find_calls(code, s->size, s->addr, addrs, ntargets, calls, ccap);
		for (size_t k = 0; k < n; k++) {
			uint64_t off = start + (calls[k].site - s->addr);
			uint64_t at = ta_file_addr(maps, cm->dev, cm->ino, off);
			const uint64_t *t = targets[calls[k].target];
			struct cs_site *site;

			if (!at)
				continue;
			if (cm->nsites == scap) {
				struct cs_site *ns = realloc(cm->sites, (scap ? 2 * scap : 64) * sizeof(*ns));

				if (!ns)
					goto cleanup;
				cm->sites = ns;
				scap = scap ? 2 * scap : 64;
			}
			site = &cm->sites[cm->nsites++];
			*site = (struct cs_site){ .addr = at, .file_off = off, .fn = (uint32_t)t[1] };
			if (t[2]) {     /* the load bias is the site's: at - its module address */
				site->got = t[2] + (at - calls[k].site);
				site->entry = cm->fns[t[1]].f->addr + (at - calls[k].site);
			}
			memcpy(site->orig, code + (calls[k].site - s->addr), CS_CALL_LEN);
		}
	}
	err = 0;
cleanup:
	free(funcs);
	free(addrs);
	free(calls);
	free(code);
	return err;
}

/*
 * A PLT site is redirected only when its GOT slot holds f's entry now: the call would reach f
 * anyway. A slot ld.so has not bound yet still points into the PLT; one bound to another
 * definition (an interposed one, LD_PRELOAD) is not f. Counts the ones left out.
 */
static bool plt_bound_to_entry(struct pt_target *pt, struct cs_mod *cm, const struct cs_site *s)
{
	uint64_t slot = 0;

	if (!pt_read(pt, s->got, &slot, sizeof(slot)) && slot == s->entry)
		return true;
	/* unbound: a lazy slot still points back into the module's own PLT (its push), or, in a
	 * module ld.so has announced but not relocated yet (dlopen), holds the file's value */
	if ((slot >= cm->lo && slot < cm->hi) || slot < cm->hi - cm->lo)
		cm->skipped_unbound++;
	else
		cm->skipped_elsewhere++;
	return false;
}

/* Step 3: keep the sites whose bytes are the file's and that no thread is inside. */
int cs_mod__check_sites(struct pt_target *pt, struct cs_mod *cm)
{
	uint64_t (*ranges)[2] = calloc(cm->nsites ? cm->nsites : 1, sizeof(*ranges));
	bool *inside = calloc(cm->nsites ? cm->nsites : 1, sizeof(*inside));
	size_t ok = 0;
	int err = -ENOMEM;

	if (!ranges || !inside)
		goto cleanup;
	/*
	 * A call's rel32 is one instruction's bytes: no instruction pointer, and no return address
	 * or saved one (a signal frame's), can point inside it, so a direct or PLT site needs no
	 * search (an empty range). A word there on a stack is stale data: the C++ unwinder keeps
	 * return address - 1 (inside the call) in its contexts, and such a leftover of an earlier
	 * throw used to leave the site out.
	 */
	for (size_t i = 0; i < cm->nsites; i++) {
		ranges[i][0] = ranges[i][1] = 0;
		if (cm->sites[i].len) {     /* a tail call: no thread in its function (callsite_tail.c) */
			ranges[i][0] = cm->sites[i].in_lo;
			ranges[i][1] = cm->sites[i].in_hi;
		}
	}
	err = pt_stack_holds(pt, (const uint64_t (*)[2])ranges, cm->nsites, inside);
	if (err < 0)
		goto cleanup;
	for (size_t i = 0; i < cm->nsites; i++) {
		struct cs_site *s = &cm->sites[i];
		uint8_t now[CS_SITE_MAX_LEN];

		for (size_t k = 0; k < pt->nthreads && !inside[i]; k++)
			inside[i] = pt->threads[k].regs.rip >= ranges[i][0] &&
				    pt->threads[k].regs.rip < ranges[i][1];
		if (inside[i]) {
			cm->skipped_inside++;
			continue;
		}
		if (pt_read(pt, s->addr, now, cs_site_len(s)) || memcmp(now, s->orig, cs_site_len(s))) {
			cm->skipped_differs++;
			continue;
		}
		if (s->got && !plt_bound_to_entry(pt, cm, s))
			continue;
		cm->sites[ok++] = *s;
	}
	cm->nsites = ok;
cleanup:
	free(ranges);
	free(inside);
	return err;
}
