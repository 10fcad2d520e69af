// SPDX-License-Identifier: MIT
/*
 * Frames still inside a call-site stub when the session ends (user/patch/callsite.c,
 * cs_process__restore). A function entered through a stub returns into the stub's return
 * point, `call R_f; jmp site+5` (plain code once the probes are gone): it still returns right,
 * but a C++ throw through that frame after the session would meet the stub, which has no
 * unwind information, and nothing maps it back any more (the unwind hooks go with the session,
 * bpf/site_unwind.bpf.h). So while every thread is stopped for the write-back, each stack word
 * that holds a stub's return point gets that stub's site + 5, the return address the original
 * call pushes: the frame returns past the stub to the same place, and its stack is the one the
 * program would have had without the redirection.
 */
#include <errno.h>
#include <stdlib.h>
#include "callsite_int.h"

static int cmp_pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

int cs_stacks_to_sites(struct pt_target *pt, const struct cs_process *cp)
{
	uint64_t (*pairs)[2];
	size_t n = 0, cap = 0;
	int err;

	for (size_t i = 0; i < cp->nmods; i++)
		cap += cp->mods[i].nsites;
	if (!cap)
		return 0;
	pairs = malloc(cap * sizeof(*pairs));
	if (!pairs)
		return -ENOMEM;
	for (size_t i = 0; i < cp->nmods; i++) {
		const struct cs_mod *cm = &cp->mods[i];

		/* stub k belongs to site k (user/patch/callsite.c, the stubs' layout) */
		for (size_t k = 0; k < cm->nsites; k++) {
			if (cm->sites[k].len)
				continue;       /* a tail site: it has no stub */
			pairs[n][0] = cm->area + cm->stubs + (uint64_t)k * CS_STUB_SLOT + CS_STUB_RET;
			pairs[n++][1] = cm->sites[k].addr + CS_CALL_LEN;
		}
	}
	qsort(pairs, n, sizeof(*pairs), cmp_pair);
	err = pt_stack_replace(pt, (const uint64_t (*)[2])pairs, n);
	free(pairs);
	return err;
}
