// SPDX-License-Identifier: MIT
/*
 * Call-site redirection, the end (see callsite.c): writing a site's original bytes back, the
 * whole process's at the session's end (what a killed session leaves is `atftrace restore`'s,
 * from the area's own patch log), and freeing what a process's redirection held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "callsite.h"
#include "callsite_ind.h"
#include "callsite_plan.h"
#include "patch_log.h"
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "callsite_int.h"

/* Is @s still at its place: its file offset mapped at its address? */
static bool site_mapped(const struct ta_maps *maps, const struct cs_mod *cm, const struct cs_site *s)
{
	return ta_file_addr(maps, cm->dev, cm->ino, s->file_off) == s->addr;
}

bool cs_site__write_back(struct pt_target *pt, const struct ta_maps *maps, const struct cs_mod *cm,
			 const struct cs_site *s)
{
	uint8_t now[CS_SITE_MAX_LEN], back[CS_SITE_MAX_LEN];
	struct patch_record r;

	if (s->len)     /* a tail call: the same rule, for its length */
		return site_mapped(maps, cm, s) && !pt_read(pt, s->addr, now, s->len) &&
		       !patch_record_init(&r, PATCH_KIND_JMP_REL32, s->addr, s->file_off, s->orig,
					  s->call, s->len) &&
		       patch_log_unpatch(&r, now, back) == PATCH_NOW_OURS &&
		       !pt_write(pt, s->addr, back, s->len);

	/* only where our call still is (another tool's int3 over it is kept) */
	return site_mapped(maps, cm, s) && !pt_read(pt, s->addr, now, CS_CALL_LEN) &&
	       tramp_unpatch_bytes(s->call, s->orig, now, back) &&
	       !pt_write(pt, s->addr, back, CS_CALL_LEN);
}

int cs_process__restore(struct cs_process *cp)
{
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	uint64_t start = 0;
	int err, n = 0;

	if (cp)
		cp->ended = true;
	if (!cp || cp->restored)
		return 0;
	cp->restored = true;
	if (!proc_alive(cp->pid) || proc_start_time(cp->pid, &start) || start != cp->start_ticks)
		return 0;       /* gone, or its pid reused */
	err = pt_stop_all(&pt, cp->pid, cp->own_child);
	if (err)
		return err == -ESRCH ? 0 : err;
	err = ta_maps_read(cp->pid, &maps);
	if (err < 0) {
		/* nothing written: the log stays "patched" for atftrace restore */
		pt_detach_all(&pt);
		return err == -ENOENT || err == -ESRCH ? 0 : err;   /* gone meanwhile: nothing to do */
	}
	for (size_t i = 0; i < cp->nmods; i++) {
		struct cs_mod *cm = &cp->mods[i];

		for (size_t k = 0; k < cm->nsites; k++)
			n += !cm->sites[k].handed_back && cs_site__write_back(&pt, &maps, cm, &cm->sites[k]);
		n += (int)cs_ind__write_back(&pt, &maps, cm);
		ta_log_mark_restored(cm->fd, cm->log, cm->code_off);
	}
	cs_stacks_to_sites(&pt, cp);    /* a throw after the session must not meet a stub */
	ta_maps_free(&maps);
	pt_detach_all(&pt);
	return n;
}

void cs_process__forget(struct cs_process *cp)
{
	if (cp)
		cp->restored = cp->refused = cp->ended = true;
}

pid_t cs_process__pid(const struct cs_process *cp)
{
	return cp ? cp->pid : 0;
}

void cs_mod__release(struct cs_mod *cm)
{
	if (cm->fd >= 0)
		close(cm->fd);
	free(cm->fns);
	free(cm->sites);
	free(cm->isites);
	free(cm->log);
	if (cm->caller && cm->m) {
		free(cm->m->path);
		free((struct sym_module *)cm->m);
	}
	memset(cm, 0, sizeof(*cm));
	cm->fd = -1;
}

void cs_process__free(struct cs_process *cp)
{
	if (!cp)
		return;
	cs_process__restore(cp);
	for (size_t i = 0; i < cp->nmods; i++)
		cs_mod__release(&cp->mods[i]);
	free(cp->mods);
	free(cp->seen);
	free(cp);
}
