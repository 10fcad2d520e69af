// SPDX-License-Identifier: MIT
/*
 * record -a --call-sites: call-site redirection (include/callsite.h) in every process of a
 * system-wide session, each redirected and restored as -p does one (record_call_sites.c).
 *
 * The plain probes of every traced function are attached first, for every process (link pid
 * 0): a call that no stub covers reaches them, so a process is never held for its redirection.
 * Then:
 *   - at the start, every live process that maps a traced module is redirected in turn, each
 *     stopped only for its own attach (not with --cgroup/--container: those are redirected at
 *     their first traced call, below);
 *   - after each drain, each process the recorder added since (its first traced event) is
 *     redirected, and a process that called exec loses its cs_process (its old image took the
 *     sites with it) and is looked at again as the new program;
 *   - once a second, each redirected process whose executable mappings changed (dlopen) gets
 *     the modules it mapped since (cs_process__attach_late() compares its maps first, and
 *     stops it only when they changed);
 *   - at the end, every process still alive is restored.
 * The stubs' links are per process anyway (each process has its own memfd), so they take no
 * pid filter. Left with plain probes, one -v line each: the recorder and its children (the
 * watchdog), a process another tracer holds (ptrace would fail), one under a seccomp filter or
 * that maps a C++ unwinder (as -p refuses them; -a has no per-process unwind hooks), and the
 * processes beyond CS_ALL_MAX.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "clock.h"
#include "proc.h"
#include "record_call_sites.h"
#include "record_system.h"

#define CS_ALL_MAX 256          /* processes redirected at once; the others keep plain probes */
#define CS_ALL_KEPT (4 * CS_ALL_MAX)    /* cs_processes kept to the end (those that exec'd too) */
#define CS_ALL_STOPS 8          /* processes stopped for their attach per drain, at most */

/* A process looked at: its cs_process when it was redirected. */
struct cs_one {
	pid_t pid;
	uint64_t start;             /* /proc/PID/stat start time: a reused pid is another */
	uint64_t exe[2];            /* its program's device and inode: an exec is another */
	uint32_t execs;             /* the recorder's count when it was looked at */
	bool looked;
	bool gone;                  /* ended: no longer counted in cs_all.live */
	struct cs_process *cp;
};

struct cs_all {
	bool tails;                 /* tail calls are redirected too (cs_opts.tails) */
	struct recorder *rec;
	struct rm_modules *mods;
	struct probes *probes;
	bool verbose;
	struct cs_one *early;       /* looked at by the scan at the start */
	size_t nearly;
	struct cs_one *seen;        /* the recorder's processes, by its index */
	size_t nseen, capseen;
	struct cs_process *cps[CS_ALL_KEPT];  /* every cs_process made (the hand-back's list) */
	size_t ncps;
	size_t live;                /* those not restored nor forgotten */
	bool full_said;
	bool restored;              /* record_call_sites_all_restore() ran */
	long rescan_s;              /* when the dlopen rescan last ran */
	struct cs_watch *watch;
	uint64_t (*files)[2];       /* the traced modules' files: device, inode */
	size_t nfiles;
};

/* A line of /proc/PID/status that starts with @key, as a number (-1: none). */
static long status_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t len = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len)) {
			v = strtol(line + len, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Does @pid map a traced module's file? @cxx: whether it maps libstdc++ or libgcc_s. */
static bool maps_traced(const struct cs_all *a, pid_t pid, bool *cxx)
{
	char path[64], line[4352];
	bool found = false;
	FILE *f;

	*cxx = false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		int pos = 0;

		if (sscanf(line, "%*x-%*x %*4s %*x %x:%x %llu %n", &maj, &min, &ino, &pos) < 3 || !ino)
			continue;
		*cxx |= pos && (strstr(line + pos, "/libstdc++") || strstr(line + pos, "/libgcc_s"));
		for (size_t i = 0; i < a->nfiles && !found; i++)
			found = a->files[i][0] == makedev(maj, min) && a->files[i][1] == ino;
	}
	fclose(f);
	return found;
}

/* Why @pid keeps plain probes, or NULL: it may be stopped and redirected. */
static const char *refusal(struct cs_all *a, pid_t pid, bool cxx)
{
	static char why[64];
	long tracer;

	if (pid == getpid() || status_field(pid, "PPid:") == (long)getpid())
		return "the recorder's own";
	if ((tracer = status_field(pid, "TracerPid:")) > 0) {
		snprintf(why, sizeof(why), "another tracer holds it (process %ld)", tracer);
		return why;
	}
	if (status_field(pid, "Seccomp:") > 0)
		return "it has a seccomp filter";
	if (cxx)
		return "it maps a C++ unwinder";
	if (a->live >= CS_ALL_MAX || a->ncps >= CS_ALL_KEPT) {
		snprintf(why, sizeof(why), "%d processes redirected already", CS_ALL_MAX);
		return why;
	}
	return NULL;
}

/* The device and inode of @pid's program (zeros when it cannot be read). */
static void exe_of(pid_t pid, uint64_t exe[2])
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	exe[0] = exe[1] = 0;
	if (!stat(path, &st)) {
		exe[0] = st.st_dev;
		exe[1] = st.st_ino;
	}
}

/* Redirect @pid's calls if it maps a traced module and may be; fills @one. True when it was stopped. */
static bool redirect(struct cs_all *a, pid_t pid, uint32_t execs, struct cs_one *one)
{
	struct cs_opts o = { .link_pid = 0, .verbose = a->verbose, .tails = a->tails };
	const char *why;
	size_t nsites = 0;
	uint64_t t0;
	bool cxx;
	int err;

	*one = (struct cs_one){ .pid = pid, .execs = execs, .looked = true };
	proc_start_time(pid, &one->start);
	exe_of(pid, one->exe);
	if (!maps_traced(a, pid, &cxx))
		return false;
	why = refusal(a, pid, cxx);
	if (why) {
		bool full = a->live >= CS_ALL_MAX || a->ncps >= CS_ALL_KEPT;

		if (a->verbose && (!full || !a->full_said))
			fprintf(stderr, "atftrace record: process %d: %s: plain probes%s\n", (int)pid, why,
				full ? " (and for every other process until one ends)" : "");
		a->full_said = full;
		return false;
	}
	t0 = clock_mono_ns();
	err = cs_process__attach(&one->cp, a->probes, a->mods->m, a->mods->n, pid, &o, &nsites);
	if (err < 0 || !nsites) {
		if (err < 0 && err != -ESRCH)
			fprintf(stderr, "atftrace record: process %d: cannot redirect call sites (%s): "
				"plain probes\n", (int)pid, strerror(-err));
		cs_process__free(one->cp);      /* nothing to write back */
		one->cp = NULL;
		return true;
	}
	a->cps[a->ncps++] = one->cp;
	a->live++;
	record_call_sites_reapply(a->watch, one->cp);   /* what another tool probes, as in the rest */
	if (a->verbose)
		fprintf(stderr, "atftrace record: process %d: %zu call %s redirected in %.1f ms\n",
			(int)pid, nsites, nsites == 1 ? "site" : "sites",
			(double)(clock_mono_ns() - t0) / 1e6);
	return true;
}

/* The processes of the host that map a traced module now, as --comm and --pid-filter narrow. */
static void scan_host(struct cs_all *a, const struct rs_target *sys)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	char comm[64];

	while (d && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		bool wanted = !sys->npid_filter;
		struct cs_one *v;

		if (pid <= 0 || *end)
			continue;
		for (size_t i = 0; i < sys->npid_filter; i++)
			wanted |= sys->pid_filter[i] == (pid_t)pid;
		if (!wanted || (sys->comm && (proc_comm((pid_t)pid, 0, comm, sizeof(comm)) ||
					      strncmp(comm, sys->comm, 15))))
			continue;
		v = realloc(a->early, (a->nearly + 1) * sizeof(*v));
		if (!v)
			break;
		a->early = v;
		/* the ring is drained after each process stopped: the others' events go on */
		if (redirect(a, (pid_t)pid, 0, &a->early[a->nearly]))
			recorder__tick(a->rec, 0);
		if (a->early[a->nearly].cp)
			a->nearly++;    /* only those redirected are kept */
	}
	if (d)
		closedir(d);
}

/*
 * The recorder's process @i, first seen: the scan's cs_process if it is the same process
 * running the same program (one that called exec before its first event lost its sites).
 */
static bool adopt(struct cs_all *a, pid_t pid, uint32_t execs, struct cs_one *one)
{
	uint64_t start = 0, exe[2];

	proc_start_time(pid, &start);
	exe_of(pid, exe);
	for (size_t k = 0; k < a->nearly; k++) {
		struct cs_one *e = &a->early[k];

		if (!e->cp || e->pid != pid || e->start != start)
			continue;
		if (e->exe[0] != exe[0] || e->exe[1] != exe[1]) {
			cs_process__forget(e->cp);      /* still in cps, freed at the end */
			a->live--;
			e->cp = NULL;
			break;
		}
		*one = *e;
		one->execs = execs;
		e->cp = NULL;
		return false;
	}
	return redirect(a, pid, execs, one);
}

/*
 * After each drain: new processes, execs, modules mapped since (once a second); hand-backs.
 * At most CS_ALL_STOPS processes stopped per drain, so that the ring is drained between: the
 * others are looked at after the next (their calls reach the plain probes meanwhile).
 */
static void on_drain(void *ctx)
{
	struct cs_all *a = ctx;
	int stops = 0;
	struct timespec now;
	bool rescan, live;
	uint32_t execs;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &now);
	rescan = now.tv_sec != a->rescan_s;
	a->rescan_s = now.tv_sec;
	for (size_t i = 0; stops < CS_ALL_STOPS && recorder__process(a->rec, i, &pid, &execs, &live);
	     i++) {
		struct cs_one *one;

		if (i >= a->capseen) {
			size_t cap = a->capseen ? a->capseen * 2 : 64;
			struct cs_one *v = realloc(a->seen, cap * sizeof(*v));

			if (!v)
				break;
			memset(v + a->capseen, 0, (cap - a->capseen) * sizeof(*v));
			a->seen = v;
			a->capseen = cap;
		}
		one = &a->seen[i];
		a->nseen = i + 1;
		if (!live) {            /* gone: nothing to redirect nor restore */
			if (one->cp && !one->gone)
				a->live--;
			one->gone = true;
			continue;
		}
		if (!one->looked) {
			stops += adopt(a, pid, execs, one);
			continue;
		}
		if (one->execs != execs) {      /* a new program: its old sites went with exec */
			if (one->cp && !one->gone) {
				cs_process__forget(one->cp);
				a->live--;
				if (a->verbose)
					fprintf(stderr, "atftrace record: process %d called exec: its call "
						"sites went with its old program\n", (int)pid);
			}
			stops += redirect(a, pid, execs, one);
			continue;
		}
		if (rescan && one->cp) {
			struct cs_opts o = { .link_pid = 0, .verbose = a->verbose, .tails = a->tails };
			size_t nsites = 0;
			int err = cs_process__attach_late(one->cp, a->probes, a->mods->m, a->mods->n,
							  &o, &nsites);

			if (err < 0)
				fprintf(stderr, "atftrace record: process %d mapped more modules: call "
					"sites not redirected (%s)\n", (int)pid, strerror(-err));
			else if (nsites && a->verbose)
				fprintf(stderr, "atftrace record: process %d mapped more modules: %zu call "
					"%s redirected\n", (int)pid, nsites, nsites == 1 ? "site" : "sites");
		}
	}
	record_call_sites_watch_poll(a->watch);
}

int record_call_sites_all(struct recorder *rec, struct rm_modules *mods, struct probes *probes,
			  const struct rs_target *sys, bool verbose, bool filters, struct cs_all **out)
{
	struct cs_all *a = calloc(1, sizeof(*a));

	*out = a;
	if (!a || !(a->files = calloc(mods->n ? mods->n : 1, sizeof(*a->files))))
		return -ENOMEM;
	/* tail calls as -p redirects them: not with record-time filters (a hidden tail-caller is
	 * not on the shadow stack); C++ processes keep plain probes here anyway */
	*a = (struct cs_all){ .rec = rec, .mods = mods, .probes = probes, .verbose = verbose,
			      .tails = !filters, .files = a->files };
	if (probes__link_kind(probes) == PROBE_LINK_PERF) {
		fprintf(stderr, "atftrace record: --call-sites needs uprobe-multi links (kernel 6.6 or "
			"later): plain probes\n");
		return 0;
	}
	for (size_t i = 0; i < mods->n; i++) {
		const struct sym_module *m = mods->m[i];
		struct stat st;

		if (!stat(m->open_path ? m->open_path : m->path, &st)) {
			a->files[a->nfiles][0] = st.st_dev;
			a->files[a->nfiles++][1] = st.st_ino;
		}
	}
	if (record_call_sites_watch_many(probes, a->cps, &a->ncps, verbose, &a->watch) < 0)
		return -ENOMEM;
	record_call_sites_arm(mods, probes);
	if (!sys->cgroup_dir[0])
		scan_host(a, sys);
	if (verbose)
		fprintf(stderr, "atftrace record: --call-sites: %zu running %s redirected; the others "
			"when first traced (at most %d at once)\n", a->live,
			a->live == 1 ? "process" : "processes", CS_ALL_MAX);
	recorder__on_drain(rec, on_drain, a);
	return 0;
}

void record_call_sites_all_restore(struct cs_all *a)
{
	uint32_t execs;
	bool live;
	pid_t pid;

	if (!a || a->restored)
		return;
	a->restored = true;
	for (size_t i = 0; i < a->ncps; i++)
		record_call_sites_restore(a->rec, a->cps[i]);
	/* every live one: a child redirected on its own may also hold its parent's sites, which
	 * its own restore does not know (a no-op where nothing of ours is left) */
	for (size_t i = 0; recorder__process(a->rec, i, &pid, &execs, &live); i++)
		if (live)
			record_call_sites_restore_inherited(pid, a->verbose);
}

void record_call_sites_all_free(struct cs_all *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->ncps; i++)
		cs_process__free(a->cps[i]);
	record_call_sites_watch_free(a->watch);
	free(a->early);
	free(a->seen);
	free(a->files);
	free(a);
}
