// SPDX-License-Identifier: MIT
/*
 * record --call-sites: the command's side of include/callsite.h (user/cmd/record_call_sites.h),
 * and the hand-back's watch.
 *
 * The hand-back (BPF's half, and why, in bpf/cs_handback.bpf.h; the writes in
 * user/patch/callsite_handback.c): at the end of each drain the recorder runs handback_poll(),
 * which looks at the notice's counter (one load of BPF's .bss); when it moved, it takes the
 * registrations BPF noted on the session's files and gives each function that one lies on its
 * calls back, one line each. tracefs uprobes are defined by a write to uprobe_events (or
 * dynamic_events) and enabled later, by a write to their enable file: those two files are
 * watched with inotify (the kernel notes every write(), writev() and pwrite() to a file,
 * tracefs's too; BPF on every write of the machine cost each one about 1 us) and uprobe_events
 * is read when one was written, and once at the first drain, for the uprobes defined before the
 * session. tracefs mounted later is looked for once a second. A note that had no room in BPF's
 * map, or whose file BPF could not read, hands back every redirected function: the safe side,
 * the plain entry probes count exactly.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include "clock.h"
#include "cs_handback.h"
#include "record_call_sites.h"
#include "recorder.h"
#include "tramp_restore.h"

#define HB_BATCH 256

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

struct cs_watch {
	struct cs_process *const *cps;      /* the processes redirected: -p's one, or -a's */
	const size_t *ncps;
	struct cs_process *one;
	size_t none;
	struct probes *probes;
	bool verbose;
	bool tracefs_read;          /* tracefs's uprobes were looked at once */
	int inotify;                /* watches tracefs's uprobe_events, or -1 */
	long inotify_tried_s;       /* when a watch was last tried (0: never) */
	struct cs_hb_note *noted;   /* every registration noted so far: a module or process
				     * redirected later hands the same functions back at once */
	size_t nnoted;
	unsigned retries;           /* drains left to retry a hand-back another tracer blocked */
};

#define HB_RETRIES 2000         /* a drain every few ms: some seconds of another tracer's hold */

#define CS_NOTED_MAX 4096      /* more: one note for any file and offset (hand back everything) */

/* Add @n notes to what @w remembers (each once). */
static void remember_notes(struct cs_watch *w, const struct cs_hb_note *notes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cs_hb_note note = notes[i];
		bool known = false;

		for (size_t j = 0; j < w->nnoted && !known; j++)
			known = !memcmp(&w->noted[j], &note, sizeof(note));
		if (known)
			continue;
		if (!w->noted && !(w->noted = calloc(CS_NOTED_MAX, sizeof(*w->noted))))
			return;
		if (w->nnoted == CS_NOTED_MAX - 1)
			note = (struct cs_hb_note){ .dev = CS_HB_ANY_FILE, .ino = CS_HB_ANY_FILE,
						    .off = CS_HB_ANY_OFF };
		if (w->nnoted < CS_NOTED_MAX)
			w->noted[w->nnoted++] = note;
	}
}

void record_call_sites_reapply(struct cs_watch *w, struct cs_process *cp)
{
	int err;

	if (!w || !w->nnoted || !cp)
		return;
	err = cs_process__hand_back(cp, w->noted, w->nnoted, NULL, NULL);
	if (err > 0 && w->verbose)
		fprintf(stderr, "atftrace record: process %d: %d %s that another tool probes kept "
			"on their entry (handed back before)\n", (int)cs_process__pid(cp), err,
			err == 1 ? "function" : "functions");
}

/*
 * Watch for other tools' uprobes on @mods' files before any call is redirected: a registration
 * from then on is noted, and its function handed back.
 */
void record_call_sites_arm(struct rm_modules *mods, struct probes *probes)
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
					      !filters,
			     /* a tail-called frame is closed by its caller's return: not with
			      * filters (a hidden caller is not on the shadow stack), nor where the
			      * unwind hooks map stub frames by their return slots (C++) */
			     .tails = !filters && !mods->unwinders_hooked };
	size_t nsites = 0;
	int err;

	if (filters && mods->unwinders_hooked && verbose)
		fprintf(stderr, "atftrace record: call sites with record-time filters: a C++ process "
			"keeps plain probes (a throw could unwind through a hidden call's stub)\n");

	record_call_sites_arm(mods, probes);
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

/*
 * A child forked by a redirected process inherits its redirected calls and its stubs' memfds
 * (their links, without a pid filter with --follow-fork or -a, trace it on): its own
 * cs_process, if it has one, knows only the sites it redirected itself, so the inherited calls
 * are written back from the patch logs of the areas this session made (include/tramp_restore.h),
 * as `atftrace restore -p` would; another session's areas, live or dead, are left alone.
 */
bool record_call_sites_restore_inherited(pid_t pid, bool verbose)
{
	struct tramp_areas areas = { 0 };
	bool ours = false;
	int err;

	if (tramp_areas__read(pid, &areas) < 0)
		return false;
	for (size_t i = 0; i < areas.n; i++) {
		struct tramp_area *ar = &areas.v[i];
		bool mine = !ar->err && ar->owner == getpid();

		ar->owner = mine ? 0 : ar->owner ? ar->owner : -1;     /* restore skips an owned one */
		ours |= mine;
	}
	if (ours && (err = tramp_areas__restore(pid, &areas, false)) < 0 && err != -ESRCH)
		fprintf(stderr, "atftrace record: process %d (a child of a redirected process): cannot "
			"write its original calls back (%s); it goes on correctly through the call-site "
			"stubs; 'atftrace restore -p %d' writes them back later\n", (int)pid,
			strerror(-err), (int)pid);
	else if (ours && verbose)
		fprintf(stderr, "atftrace record: process %d: the call sites it inherited written "
			"back\n", (int)pid);
	tramp_areas__free(&areas);
	return ours;
}

/* The recorder of another live session whose stubs or trampolines @pid maps, or 0. */
static pid_t other_session(pid_t pid)
{
	struct tramp_areas areas = { 0 };
	pid_t owner = 0;

	if (tramp_areas__read(pid, &areas) < 0)
		return 0;
	for (size_t i = 0; i < areas.n && !owner; i++)
		if (areas.v[i].owner > 0 && areas.v[i].owner != getpid())
			owner = areas.v[i].owner;
	tramp_areas__free(&areas);
	return owner;
}

bool record_call_sites_unsuited(pid_t pid)
{
	pid_t other;

	/* a second redirection would take the calls of the first session's probes, or the first
	 * its; with plain probes that session's hand-back (or its guard) sees ours */
	if (pid && (other = other_session(pid))) {
		fprintf(stderr, "atftrace record: process %d has the call-site stubs or trampolines of "
			"a running atftrace session (process %d): plain probes\n", (int)pid,
			(int)other);
		return true;
	}
	return false;
}

/* The pids in the children file of each thread of @pid, appended to *@v (*@n of *@cap). */
static void add_children(pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
	char path[64];
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		FILE *f;
		int child;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, de->d_name);
		f = fopen(path, "re");
		while (f && fscanf(f, "%d", &child) == 1) {
			if (*n == *cap) {
				pid_t *nv = realloc(*v, (*cap ? *cap * 2 : 64) * sizeof(**v));

				if (!nv)
					break;
				*v = nv;
				*cap = *cap ? *cap * 2 : 64;
			}
			(*v)[(*n)++] = child;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

void record_call_sites_restore_forked(struct cs_process *cp, bool verbose)
{
	pid_t *v = NULL;
	size_t n = 0, cap = 0, restored = 0;

	if (!cp)
		return;
	/* every live descendant (a child's children too: each inherits what its parent had) */
	add_children(cs_process__pid(cp), &v, &n, &cap);
	for (size_t i = 0; i < n && i < 65536; i++) {
		restored += record_call_sites_restore_inherited(v[i], false);
		add_children(v[i], &v, &n, &cap);
	}
	if (verbose && restored)
		fprintf(stderr, "atftrace record: the call sites inherited by %zu forked %s written "
			"back\n", restored, restored == 1 ? "process" : "processes");
	free(v);
}

/*
 * Watch tracefs's uprobe_events and dynamic_events (where tracefs is mounted): true when one
 * of them was written since the last call, or the watch was just made.
 */
static bool tracefs_written(struct cs_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct timespec now;
	bool written = false;
	char path[128];
	int fd, watches = 0;

	if (w->inotify >= 0) {
		while (read(w->inotify, buf, sizeof(buf)) > 0)
			written = true;
		return written;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (w->inotify_tried_s && now.tv_sec == w->inotify_tried_s)
		return false;   /* tried this second */
	w->inotify_tried_s = now.tv_sec;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
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
	w->inotify = fd;
	return true;            /* defined before the watch: read them */
}

bool record_cs_parse_uprobe_event(char *line, const char **path, uint64_t *off)
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

		if (!record_cs_parse_uprobe_event(line, &path, &off) || stat(path, &st))
			continue;
		notes[(*n)++] = (struct cs_hb_note){ .dev = cs_kernel_dev(st.st_dev), .ino = st.st_ino,
						     .off = off };
	}
	fclose(f);
}

static void report_handed(const char *module, const char *func, size_t written, size_t sites,
			  void *ctx)
{
	const char *why = ctx, *base = strrchr(module, '/');

	fprintf(stderr, "atftrace record: %s (%s) handed back: %s; %zu of its %zu redirected call "
		"%s written back, its calls reach its entry again\n", func, base ? base + 1 : module,
		why, written, sites, sites == 1 ? "site" : "sites");
}

/* After each drain: hand back the functions that registrations noted since the last. */
void record_call_sites_watch_poll(void *ctx)
{
	struct cs_watch *w = ctx;
	struct cs_hb_note notes[HB_BATCH];
	const char *why = "another tool registered a uprobe on it";
	bool overflowed = false, unknown = false, tracefs;
	size_t n;
	uint64_t t0;
	int got, err;

	if (w->retries) {
		/* a hand-back that EPERM stopped (another tracer, such as a second session placing
		 * its stubs, held the process): all that was noted, again, until it goes through */
		unsigned left = w->retries - 1;

		w->retries = 0;
		for (size_t i = 0; i < *w->ncps; i++) {
			err = cs_process__hand_back(w->cps[i], w->noted, w->nnoted, report_handed,
						    (void *)why);
			if (err == -EPERM && left)
				w->retries = left;
			else if (err < 0)
				fprintf(stderr, "atftrace record: cannot hand functions back to another "
					"tool's uprobe in process %d (%s): its count misses their "
					"redirected calls\n", (int)cs_process__pid(w->cps[i]),
					strerror(-err));
		}
	}
	tracefs = tracefs_written(w) || !w->tracefs_read;
	/* the map's batch, leaving room for what tracefs defines */
	got = probes__handback_take(w->probes, notes, HB_BATCH / 2, &overflowed);
	n = got > 0 ? (size_t)got : 0;
	for (size_t i = 0; i < n; i++)
		unknown |= notes[i].ino == CS_HB_ANY_FILE;
	if (overflowed || unknown) {
		why = overflowed ? "a uprobe registration did not fit the notice's map" :
		      "a uprobe was registered on a file that could not be read";
		notes[n++] = (struct cs_hb_note){ .dev = CS_HB_ANY_FILE, .ino = CS_HB_ANY_FILE,
						  .off = CS_HB_ANY_OFF };
	}
	if (tracefs) {
		w->tracefs_read = true;
		tracefs_notes(notes, &n, HB_BATCH);
	}
	if (!n)
		return;
	remember_notes(w, notes, n);
	for (size_t i = 0; i < *w->ncps; i++) {
		t0 = clock_mono_ns();
		err = cs_process__hand_back(w->cps[i], notes, n, report_handed, (void *)why);
		if (err > 0 && w->verbose)
			fprintf(stderr, "atftrace record: %d %s handed back in %.1f ms (process %d "
				"stopped)\n", err, err == 1 ? "function" : "functions",
				(double)(clock_mono_ns() - t0) / 1e6, (int)cs_process__pid(w->cps[i]));
		if (err == -EPERM && w->nnoted) {
			if (w->verbose)
				fprintf(stderr, "atftrace record: process %d is held by another tracer: "
					"the hand-back is tried again at the next drains\n",
					(int)cs_process__pid(w->cps[i]));
			w->retries = HB_RETRIES;
		} else if (err < 0) {
			fprintf(stderr, "atftrace record: cannot hand functions back to another tool's "
				"uprobe in process %d (%s): its count misses their redirected calls\n",
				(int)cs_process__pid(w->cps[i]), strerror(-err));
		}
	}
}

int record_call_sites_watch_many(struct probes *probes, struct cs_process *const *cps,
				 const size_t *ncps, bool verbose, struct cs_watch **out)
{
	struct cs_watch *w = calloc(1, sizeof(*w));

	*out = w;
	if (!w)
		return -ENOMEM;
	*w = (struct cs_watch){ .cps = cps, .ncps = ncps, .probes = probes, .verbose = verbose,
				.inotify = -1 };
	return 0;
}

int record_call_sites_watch(struct recorder *rec, struct probes *probes, struct cs_process *cp,
			    bool verbose, struct cs_watch **out)
{
	struct cs_watch *w;

	*out = NULL;
	if (!cp)
		return 0;
	if (record_call_sites_watch_many(probes, NULL, NULL, verbose, &w) < 0)
		return -ENOMEM;
	w->one = cp;
	w->none = 1;
	w->cps = &w->one;
	w->ncps = &w->none;
	recorder__on_drain(rec, record_call_sites_watch_poll, w);
	*out = w;
	return 0;
}

void record_call_sites_watch_free(struct cs_watch *w)
{
	if (!w)
		return;
	if (w->inotify >= 0)
		close(w->inotify);
	free(w->noted);
	free(w);
}

void record_call_sites_mapped(struct rm_modules *mods, pid_t pid, const char *path, void *ctx)
{
	struct cs_watch *w = ctx;
	struct cs_process *cp = w->one;
	struct cs_opts o = { .link_pid = mods->link_pid, .verbose = mods->verbose };
	size_t nsites = 0;
	int err;

	if (pid != cs_process__pid(cp))
		return;
	err = cs_process__attach_late(cp, mods->probes, mods->m, mods->n, &o, &nsites);
	if (err < 0)
		fprintf(stderr, "atftrace record: process %d mapped %s: call sites not redirected "
			"(%s)\n", (int)pid, path, strerror(-err));
	else if (nsites && mods->verbose)
		fprintf(stderr, "atftrace record: process %d mapped %s: %zu call %s redirected\n",
			(int)pid, path, nsites, nsites == 1 ? "site" : "sites");
	if (nsites)
		record_call_sites_reapply(w, cp);
}
