// SPDX-License-Identifier: MIT
/*
 * Tail-call sites (user/patch/callsite_tail.h): a `jmp f`, `jmp f@plt` or `jcc f` to a traced
 * function f with a body gets its rel32 aimed at f's tail entry T_f in the module's memfd
 * (one per function, user/patch/callsite_plan.h): probe T, then `jmp body_f`.
 *
 * A tail-called f returns where its tail-caller g would have, through g's return slot, so f's
 * frame is closed by g's return capture (g's stub's `call R_g`, or the uretprobe of g's plain
 * probe), and only that. So a tail site is redirected only where that return is always seen:
 * - it lies inside a function g of the module (its .symtab or .eh_frame bounds) that is
 *   selected in this session, hence probed, entered through a stub or its plain probe;
 * - no thread is inside g when the site is written (checked with the site, in the stopped
 *   process: its instruction pointer, or a return address on a stack, in g): a g entered
 *   before its probes were there would return unseen and leave f's frame open;
 * - not in a session with record-time filters (a filtered g is not on the shadow stack), nor
 *   in a process whose C++ unwinder is hooked (the hooks map stub frames by their own return
 *   slot; tail frames would share one): record_call_sites.c decides, cs_opts.tails.
 * The sites are logged with the calls (PATCH_KIND_JMP_REL32: the whole instruction), written
 * back with them at the session's end, by a hand-back of f, and by `atftrace restore -p`.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "symbols.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"
#include "callsite_int.h"

int cs_tail__add(struct cs_mod *cm, size_t *cap, const struct cs_tail_call *tc,
		 const cs_target *targets, uint64_t fn_addr, uint64_t fn_size, uint64_t start,
		 const uint8_t *code, const struct ta_maps *maps)
{
	uint64_t off = start + (tc->site - fn_addr);
	uint64_t at = ta_file_addr(maps, cm->dev, cm->ino, off);
	uint64_t lo = ta_file_addr(maps, cm->dev, cm->ino, start);
	const uint64_t *t = targets[tc->target];
	struct cs_site *site;

	if (!at || !lo)
		return 0;
	if (cm->nsites == *cap) {
		size_t n = *cap ? 2 * *cap : 64;
		struct cs_site *ns = realloc(cm->sites, n * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		cm->sites = ns;
		*cap = n;
	}
	site = &cm->sites[cm->nsites++];
	*site = (struct cs_site){ .addr = at, .file_off = off, .fn = (uint32_t)t[1], .len = tc->len,
				  .in_lo = lo, .in_hi = lo + fn_size };
	if (t[2]) {     /* the load bias is the site's: at - its module address */
		site->got = t[2] + (at - tc->site);
		site->entry = cm->fns[t[1]].f->addr + (at - tc->site);
	}
	memcpy(site->orig, code + (tc->site - fn_addr), tc->len);
	return 0;
}

int cs_mod__find_tails(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		       const cs_target *targets, size_t ntargets)
{
	const struct sym_module *m = cm->m;
	uint64_t *addrs = cs_target_addrs(targets, ntargets), cap = 0;
	size_t scap = cm->nsites, tcap = 0;
	struct cs_tail_call *tails = NULL;
	uint8_t *code = NULL;
	int err = -ENOMEM;

	if (!addrs)
		return -ENOMEM;
	for (size_t j = 0; j < m->nfuncs; j++) {
		const struct sym_func *g = &m->funcs[j];
		uint64_t start = g->probe_offset - (g->endbr64 ? 4 : 0);
		size_t n;

		/* only in a function this session probes, at its entry too (not one whose EVEX
		 * first instruction keeps it unprobed there): its return closes the tail-called
		 * frame, however g was entered */
		if (!tramp_wanted(g) || !sym_plain_probe_ok(g) || !g->size || !g->probe_offset ||
		    g->ifunc_impl ||
		    (j && m->funcs[j - 1].addr == g->addr))
			continue;
		if (!cs_read_at(fd, start, g->size, &code, &cap))
			continue;
		void *grown = cs_reserve(tails, &tcap, g->size / CS_TAIL_JMP_LEN + 1, sizeof(*tails));
		if (!grown)
			goto cleanup;
		tails = grown;
		n = cs_find_tails(code, g->size, g->addr, addrs, ntargets, tails, tcap);
		for (size_t k = 0; k < n; k++) {
			/* g's own first instruction lies under g's probe; g's body moves it */
			if (tails[k].site == g->addr + (g->endbr64 ? 4 : 0))
				continue;
			if (cs_tail__add(cm, &scap, &tails[k], targets, g->addr, g->size, start, code,
					 maps))
				goto cleanup;
		}
	}
	err = 0;
cleanup:
	free(addrs);
	free(tails);
	free(code);
	return err;
}
