// SPDX-License-Identifier: MIT
/*
 * record's entry trampolines (record_trampolines.h): whether they are used, placed in the
 * target once its plain probes are up, and the original text written back at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "probes.h"
#include "proc.h"
#include "record_trampolines.h"
#include "trampoline.h"

/*
 * Entry trampolines (include/trampoline.h), on unless --no-trampolines (@off). Not for -a: the text
 * of a module is shared by every process that maps it, and a process started later would need
 * stopping and patching too. Not with perf links (kernels before 6.6), which cannot be
 * attached per trampoline file. A uprobe that another tool registers later on a patched
 * function is met by the registration guard (bpf/reg_guard.bpf.h).
 */
bool record_trampolines_use(bool off, bool asked, struct probes *probes)
{
#if defined(__x86_64__)
	if (off)
		return false;
	if (probes__link_kind(probes) == PROBE_LINK_PERF) {
		if (asked)
			fprintf(stderr, "atftrace record: --trampolines needs uprobe-multi links "
				"(kernel 6.6 or later): plain probes\n");
		return false;
	}
	return true;
#else
	return false;
#endif
}

int record_trampolines_attach(struct rm_modules *mods, struct probes *probes, pid_t target,
			      pid_t link_pid, bool launched, bool verbose, struct tramp_process **tp)
{
	struct tramp_opts to = { .link_pid = link_pid, .launched = launched, .verbose = verbose };
	size_t ntramp = 0;
	int n = tramp_process__attach(tp, probes, mods->m, mods->n, target, &to, &ntramp);

	if (n == -ESRCH && !proc_alive(target))
		return 0;       /* killed while we attached: the session ends with "target exited" */
	if (n < 0) {
		fprintf(stderr, "atftrace record: cannot attach probes: %s\n", strerror(-n));
		return n;
	}
	if (!launched)
		mods->attached = (size_t)n;
	if (verbose)
		fprintf(stderr, "atftrace record: %zu %s entered through trampolines\n", ntramp,
			ntramp == 1 ? "function" : "functions");
	return 0;
}

void record_trampolines_restore(struct tramp_process *tp)
{
	int n = tramp_process__restore(tp);

	if (n < 0)
		fprintf(stderr, "atftrace record: cannot write the target's original text back (%s); "
			"it goes on correctly through the trampolines; 'atftrace restore -p %d' "
			"writes it back later\n", strerror(-n), (int)tramp_process__pid(tp));
}
