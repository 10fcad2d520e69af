// SPDX-License-Identifier: MIT
/*
 * The hand-back of record --call-sites, the recorder's half (the BPF half, and why, in
 * bpf/cs_handback.bpf.h; the writes in user/patch/callsite_handback.c).
 *
 * At each drain the recorder looks at the notice's counter (one load of BPF's .bss); when it
 * moved, it takes the registrations BPF noted on the session's files and gives each function
 * that one lies on its calls back: one line each. tracefs uprobes are defined by a write to
 * uprobe_events (or dynamic_events) and enabled later, by a write to their enable file: the
 * recorder watches the first two with inotify (the kernel notes every write(), writev() and
 * pwrite() to a file, tracefs's too; BPF on every write of the machine would cost each one
 * about 1 us) and reads uprobe_events when one was written, and once at the first drain, for
 * the uprobes defined before the session. tracefs mounted later is looked for once a second.
 * A note that had no room in BPF's map, or whose file BPF could not read, hands back every
 * redirected function: the safe side, the plain entry probes count exactly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include "callsite.h"
#include "cs_handback.h"
#include "probes.h"
#include "recorder_int.h"

#define HB_BATCH 256

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

void recorder__set_call_sites(struct recorder *r, struct cs_process *cp)
{
	if (!r)
		return;
	if (r->call_sites && r->hb_inotify >= 0)
		close(r->hb_inotify);
	r->call_sites = cp;
	r->hb_tracefs_read = false;     /* the uprobes tracefs defines already: next drain */
	r->hb_inotify = -1;
	r->hb_inotify_tried_s = 0;      /* never tried */
}

/*
 * Watch tracefs's uprobe_events and dynamic_events (where tracefs is mounted): true when one
 * of them was written since the last call, or the watch was just made.
 */
static bool tracefs_written(struct recorder *r)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct timespec now;
	bool written = false;

	if (r->hb_inotify < 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (r->hb_inotify_tried_s && now.tv_sec == r->hb_inotify_tried_s)
			return false;   /* tried this second */
		r->hb_inotify_tried_s = now.tv_sec;
		int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), watches = 0;
		char path[128];

		for (size_t i = 0; fd >= 0 && !watches && i < 2; i++) {
			snprintf(path, sizeof(path), "%s/uprobe_events", tracefs_dirs[i]);
			watches += inotify_add_watch(fd, path, IN_MODIFY) >= 0;
			snprintf(path, sizeof(path), "%s/dynamic_events", tracefs_dirs[i]);
			watches += inotify_add_watch(fd, path, IN_MODIFY) >= 0;
		}
		if (!watches) {
			if (fd >= 0)
				close(fd);
			return false;
		}
		r->hb_inotify = fd;
		return true;    /* defined before the watch: read them */
	}
	while (read(r->hb_inotify, buf, sizeof(buf)) > 0)
		written = true;
	return written;
}

/* The uprobes that tracefs's uprobe_events defines, as notes, appended to @notes (*@n < @cap). */
static void tracefs_notes(struct cs_hb_note *notes, size_t *n, size_t cap)
{
	char line[4200];
	FILE *f = NULL;

	for (size_t i = 0; !f && i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
		snprintf(line, sizeof(line), "%s/uprobe_events", tracefs_dirs[i]);
		f = fopen(line, "re");
	}
	if (!f)
		return;
	while (*n < cap && fgets(line, sizeof(line), f)) {
		const char *path;
		uint64_t off;
		struct stat st;

		if (!rec_cs_parse_uprobe_event(line, &path, &off) || stat(path, &st))
			continue;
		notes[(*n)++] = (struct cs_hb_note){ .dev = cs_kernel_dev(st.st_dev), .ino = st.st_ino,
						     .off = off };
	}
	fclose(f);
}

bool rec_cs_parse_uprobe_event(char *line, const char **path, uint64_t *off)
{
	char *p = strchr(line, ' '), *colon, *end;

	/* "p:GROUP/EVENT /path/to/file:0xOFFSET[(0xREF)] [args]" (r: for a return probe) */
	if ((line[0] != 'p' && line[0] != 'r') || line[1] != ':' || !p || *++p != '/')
		return false;
	p[strcspn(p, " \t\n(")] = 0;
	colon = strrchr(p, ':');
	if (!colon || colon == p)
		return false;
	*colon = 0;
	*off = strtoull(colon + 1, &end, 0);
	if (end == colon + 1 || *end)
		return false;
	*path = p;
	return true;
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
	bool overflowed = false, tracefs;
	size_t n = 0, k = 0;
	int got, err;

	if (!r->call_sites)
		return;
	tracefs = tracefs_written(r) || !r->hb_tracefs_read;
	/* the map's batch, leaving room for what tracefs defines */
	got = probes__handback_take(r->opts.probes, notes, HB_BATCH / 2, &overflowed);
	n = got > 0 ? (size_t)got : 0;
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
