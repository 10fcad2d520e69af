// SPDX-License-Identifier: MIT
/*
 * The probes of call-site redirection (user/patch/callsite_plan.h): one per function and kind,
 * in the traced module's memfd, never one per site. The kernel registers and unregisters each
 * uprobe under one global lock (its dup_mmap_sem), so a probe pair per site (libsqlite3: about
 * 12,000 sites) cost more to attach and detach than all the calls the stubs save on a short
 * run; per function, a session holds as many as with plain probes.
 *   E_f  entry (atf_site_fn_entry): a direct, PLT or indirect site calls f
 *   R_f  return (atf_site_fn_return): a direct or PLT site calls f
 *   T_f  tail entry (atf_site_tail): a tail site jumps to f
 * (The indirect stubs' one shared return block is probed by callsite_ind.c.) Each attach adds
 * the probes that the sites about to be written need and that are not there yet, so a module
 * whose functions another module's sites call, now or after a dlopen, gets them once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "probes.h"
#include "callsite_int.h"

int cs_mod__probe_fns(struct probes *p, struct cs_mod *tm, pid_t link_pid)
{
	static const struct { uint8_t bit; uint32_t off; enum probe_site_kind kind; } kinds[] = {
		{ CS_PROBE_R, CS_FN_RET, PROBE_SITE_RETURN },   /* no entry seen before its return can be */
		{ CS_PROBE_E, CS_FN_ENTRY, PROBE_SITE_ENTRY },
		{ CS_PROBE_T, CS_FN_TAIL, PROBE_SITE_TAIL },
	};
	uint64_t *offs = calloc(tm->nfns ? tm->nfns : 1, sizeof(*offs));
	uint64_t *cookies = calloc(tm->nfns ? tm->nfns : 1, sizeof(*cookies));
	char path[32];
	int err = -ENOMEM;

	if (!offs || !cookies)
		goto cleanup;
	err = 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", tm->fd);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && !err; k++) {
		uint32_t n = 0;

		for (size_t i = 0; i < tm->nfns; i++) {
			struct cs_fn *c = &tm->fns[i];

			if (!c->body || !(c->want & kinds[k].bit) || (c->probed & kinds[k].bit))
				continue;
			offs[n] = cs_fn_off(tm, c) + kinds[k].off;
			cookies[n++] = (uint64_t)tm->m->module_id << 32 | c->f->symbol_index;
		}
		err = n ? probes__attach_site_probes(p, tm, path, kinds[k].kind, offs, cookies, n,
						     link_pid) : 0;
		for (size_t i = 0; !err && i < tm->nfns; i++)
			if (tm->fns[i].body && (tm->fns[i].want & kinds[k].bit))
				tm->fns[i].probed |= kinds[k].bit;
	}
cleanup:
	free(offs);
	free(cookies);
	return err;
}
