// SPDX-License-Identifier: MIT
/*
 * The hand-back of record --call-sites, the recorder's half (the BPF half, and why, in
 * bpf/cs_handback.bpf.h; the writes in user/patch/callsite_handback.c).
 *
 * At each drain the recorder looks at the notice's counter (one load of BPF's .bss); when it
 * moved, it takes the registrations BPF noted on the session's files and gives each function
 * that one lies on its calls back: one line each. A note of tracefs's uprobe_events being
 * written is answered by reading that file (its uprobes are defined there and enabled later,
 * by a write that is not watched): so is it once at the first drain, for the uprobes defined
 * before the session. A note that had no room in BPF's map, or whose file BPF could not read,
 * hands back every redirected function: the safe side, the plain entry probes count exactly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "callsite.h"
#include "cs_handback.h"
#include "probes.h"
#include "recorder_int.h"

#define HB_BATCH 256

void recorder__set_call_sites(struct recorder *r, struct cs_process *cp)
{
	if (r) {
		r->call_sites = cp;
		r->hb_tracefs_read = false;     /* the uprobes tracefs defines already: next drain */
	}
}

/* The uprobes that tracefs's uprobe_events defines, as notes, appended to @notes (*@n < @cap). */
static void tracefs_notes(struct cs_hb_note *notes, size_t *n, size_t cap)
{
	static const char *const files[] = { "/sys/kernel/tracing/uprobe_events",
					     "/sys/kernel/debug/tracing/uprobe_events" };
	char line[4200];
	FILE *f = NULL;

	for (size_t i = 0; !f && i < sizeof(files) / sizeof(files[0]); i++)
		f = fopen(files[i], "re");
	if (!f)
		return;
	/* "p:GROUP/EVENT /path/to/file:0xOFFSET [(0xREF)] [args]" (also r: for return probes) */
	while (*n < cap && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, ' '), *colon, *end;
		unsigned long long off;
		struct stat st;

		if (!path || *++path != '/')
			continue;
		path[strcspn(path, " \t\n(")] = 0;
		colon = strrchr(path, ':');
		if (!colon)
			continue;
		*colon = 0;
		off = strtoull(colon + 1, &end, 0);
		if (end == colon + 1 || stat(path, &st))
			continue;
		notes[(*n)++] = (struct cs_hb_note){ .dev = cs_kernel_dev(st.st_dev), .ino = st.st_ino,
						     .off = off };
	}
	fclose(f);
}

struct handed_ctx {
	const char *why;
};

static void report_handed(const char *module, const char *func, size_t written, size_t sites,
			  void *ctx)
{
	const struct handed_ctx *c = ctx;
	const char *base = strrchr(module, '/');

	fprintf(stderr, "atftrace record: %s (%s) handed back: %s; %zu of its %zu redirected call "
		"%s written back, its calls reach its entry again\n", func, base ? base + 1 : module,
		c->why, written, sites, sites == 1 ? "site" : "sites");
}

void rec_cs_handback_poll(struct recorder *r)
{
	struct cs_hb_note notes[HB_BATCH];
	struct handed_ctx c = { .why = "another tool registered a uprobe on it" };
	bool overflowed = false, tracefs = !r->hb_tracefs_read;
	size_t n = 0, k = 0;
	int got, err;

	if (!r->call_sites)
		return;
	/* the map's batch, leaving room for what tracefs defines */
	got = probes__handback_take(r->opts.probes, notes, HB_BATCH / 2, &overflowed);
	for (int i = 0; i < got; i++) {
		if (notes[i].dev == CS_HB_TRACEFS && notes[i].ino == CS_HB_TRACEFS)
			tracefs = true;
		else
			notes[n++] = notes[i];
	}
	for (size_t i = 0; i < n; i++)
		k += notes[i].ino == CS_HB_ANY_FILE;
	if (overflowed || k) {
		c.why = overflowed ? "a uprobe registration did not fit the notice's map" :
			"a uprobe was registered on a file that could not be read";
		notes[n++] = (struct cs_hb_note){ .dev = CS_HB_ANY_FILE, .ino = CS_HB_ANY_FILE,
						  .off = CS_HB_ANY_OFF };
	}
	if (tracefs) {
		r->hb_tracefs_read = true;
		tracefs_notes(notes, &n, HB_BATCH);
	}
	if (!n)
		return;
	err = cs_process__hand_back(r->call_sites, notes, n, report_handed, &c);
	if (err < 0)
		fprintf(stderr, "atftrace record: cannot hand functions back to another tool's uprobe "
			"(%s): its count misses their redirected calls\n", strerror(-err));
}
