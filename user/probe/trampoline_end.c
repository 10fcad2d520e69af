// SPDX-License-Identifier: MIT
/*
 * The end of a process's entry trampolines (include/trampoline.h): the original bytes written
 * back where our jmp still is, in the process and in the children it forked meanwhile
 * (trampoline_guard.c), but not in a library unloaded since (trampoline_late.c). The
 * trampolines stay mapped, so a thread inside one (or a signal frame returning into one)
 * finishes through it. Above trampoline.c, trampoline_guard.c and trampoline_late.c, which
 * never call it.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline_int.h"

int tramp_process__restore(struct tramp_process *tp)
{
	struct pt_target pt;
	size_t any = 0, n = 0;
	uint64_t start = 0;
	int err;

	if (!tp || tp->restored)
		return 0;
	tp->restored = true;
	/* unguarded first: a guard stop would cut into the ptrace stop below (a stop it sent
	 * before is in the ring, and the recorder resumes it after its drain) */
	probes__guard_pid(tp->probes, tp->pid, false);
	tp->guarded = false;
	tramp_children_restore(tp);
	for (size_t i = 0; i < tp->nmods; i++)
		any += tp->mods[i].nfns;
	if (!any || !proc_alive(tp->pid) || proc_start_time(tp->pid, &start) ||
	    start != tp->start_ticks)
		return 0;       /* nothing patched, or the process is gone (its pid maybe reused) */
	err = pt_stop_all(&pt, tp->pid, tp->own_child);
	if (err)
		return err == -ESRCH ? 0 : err;     /* gone: nothing to give back */
	tramp_keep_still_mapped(tp);
	for (size_t i = 0; i < tp->nmods; i++) {
		n += tramp_mod_write(&pt, &tp->mods[i], false);
		tramp_log_mark_restored(&tp->mods[i]);
	}
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
		free(tp->mods[i].log);
	}
	free(tp->mods);
	free(tp->children);
	free(tp);
}
