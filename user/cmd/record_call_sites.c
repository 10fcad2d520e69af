// SPDX-License-Identifier: MIT
/* record --call-sites: the command's side of include/callsite.h (user/cmd/record_call_sites.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cs_handback.h"
#include "record_call_sites.h"

/*
 * Watch for other tools' uprobes on @mods' files before any call is redirected: a registration
 * from then on is noted, and its function handed back (user/record/record_cs_handback.c).
 */
static void arm_handback(struct rm_modules *mods, struct probes *probes)
{
	struct cs_hb_inode *files = calloc(mods->n ? mods->n : 1, sizeof(*files));
	size_t n = 0;
	int err = -ENOMEM;

	for (size_t i = 0; files && i < mods->n; i++) {
		const struct sym_module *m = mods->m[i];
		struct stat st;

		/* the file as opened (a container's through /proc/PID/root) */
		if (!stat(m->open_path ? m->open_path : m->path, &st))
			files[n++] = (struct cs_hb_inode){ .dev = cs_kernel_dev(st.st_dev),
							   .ino = st.st_ino };
	}
	if (files)
		err = probes__handback_arm(probes, files, n);
	if (err < 0)
		fprintf(stderr, "atftrace record: no hand-back notice (%s): another tool's uprobe on a "
			"function whose calls are redirected will not see those calls\n", strerror(-err));
	free(files);
}

int record_call_sites_attach(struct rm_modules *mods, struct probes *probes, pid_t target,
			     pid_t link_pid, bool launched, bool verbose, struct cs_process **cp)
{
	struct cs_opts o = { .link_pid = link_pid, .launched = launched, .verbose = verbose };
	size_t nsites = 0;
	int err;

	arm_handback(mods, probes);
	err = cs_process__attach(cp, probes, mods->m, mods->n, target, &o, &nsites);
	if (err < 0) {
		fprintf(stderr, "atftrace record: cannot redirect call sites: %s\n", strerror(-err));
		return err;
	}
	if (verbose)
		fprintf(stderr, "atftrace record: %zu call %s redirected\n", nsites,
			nsites == 1 ? "site" : "sites");
	return 0;
}

void record_call_sites_restore(struct cs_process *cp)
{
	int n = cs_process__restore(cp);

	if (n < 0)
		fprintf(stderr, "atftrace record: cannot write the target's original calls back (%s); "
			"it goes on correctly through the call-site stubs; 'atftrace restore -p %d' writes "
			"them back later\n", strerror(-n), (int)cs_process__pid(cp));
}
