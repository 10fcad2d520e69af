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
 * The target's text is written (call sites by default, entry trampolines with --trampolines)
 * unless @off (--no-trampolines, or -a, whose call sites record_call_sites_all.c places). Not
 * with perf links (kernels before 6.6), which cannot be attached per stub or trampoline file,
 * nor off x86_64: plain probes then, which a session that asked for @way says in any case, the
 * default's with @verbose. A uprobe that another tool registers later on a function whose
 * entry the trampolines wrote is met by the registration guard (bpf/reg_guard.bpf.h).
 */
bool record_trampolines_use(bool off, bool asked, bool verbose, const char *way,
			    struct probes *probes)
{
	const char *why = NULL;

	if (off)
		return false;
#if defined(__x86_64__)
	if (probes__link_kind(probes) == PROBE_LINK_PERF)
		why = "need uprobe-multi links (kernel 6.6 or later)";
#else
	why = "are built for x86_64 only";
#endif
	if (why && (asked || verbose))
		fprintf(stderr, "atftrace record: %s %s: plain probes\n", way, why);
	return !why;
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
