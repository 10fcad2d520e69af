// SPDX-License-Identifier: MIT
/* record --call-sites: the command's side of include/callsite.h (user/cmd/record_call_sites.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "record_call_sites.h"

int record_call_sites_attach(struct recorder *rec, struct rm_modules *mods, struct probes *probes,
			     pid_t target, pid_t link_pid, bool launched, bool verbose,
			     bool filters, struct cs_process **cp)
{
	/*
	 * The unwinders it maps are hooked already (rm_modules_attach_hooks, before the probes).
	 * The hooks find the frames entered through stubs on the thread's shadow stack, where a
	 * call that a record-time filter hides (-D, -F, -T ...@trace_off) is not: with filters a
	 * C++ process keeps plain probes.
	 */
	struct cs_opts o = { .link_pid = link_pid, .launched = launched, .verbose = verbose,
			     .unwind_hooked = mods->unwind_hooks && !mods->unwind_failed &&
					      !filters };
	size_t nsites = 0;
	int err;

	if (filters && mods->unwinders_hooked)
		fprintf(stderr, "atftrace record: --call-sites with record-time filters: a C++ process "
			"keeps plain probes (a throw could unwind through a hidden call's stub)\n");
	err = cs_process__attach(cp, probes, mods->m, mods->n, target, &o, &nsites);

	if (err < 0) {
		fprintf(stderr, "atftrace record: cannot redirect call sites: %s\n", strerror(-err));
		return err;
	}
	/*
	 * A C++ process (its unwinder hooked) cannot keep its redirected calls after a kill -9:
	 * the hooks die with the recorder, and a throw through a stub would terminate it. Its
	 * watchdog writes them back; any other process runs on through the stubs until `atftrace
	 * restore -p`.
	 */
	if (nsites && mods->unwinders_hooked)
		recorder__set_call_sites(rec, target, true);
	if (verbose)
		fprintf(stderr, "atftrace record: %zu call %s redirected\n", nsites,
			nsites == 1 ? "site" : "sites");
	return 0;
}

void record_call_sites_restore(struct recorder *rec, struct cs_process *cp)
{
	int n = cs_process__restore(cp);

	/* written back, or not: a second restore by the watchdog would find the same */
	recorder__set_call_sites(rec, cs_process__pid(cp), false);
	if (n < 0)
		fprintf(stderr, "atftrace record: cannot write the target's original calls back (%s); "
			"it goes on correctly through the call-site stubs; 'atftrace restore -p %d' writes "
			"them back later\n", strerror(-n), (int)cs_process__pid(cp));
}
