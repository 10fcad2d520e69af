// SPDX-License-Identifier: MIT
/*
 * The registration guard's view of the machine's tracepoints (bpf/reg_guard.bpf.h). A tracefs
 * uprobe event is opened with perf_event_open as a tracepoint event, by its id: so the guard
 * has to stop the patched processes for a tracepoint event that may be one. Here the recorder
 * reads every tracepoint id from tracefs (events/<group>/<event>/id) into the map tp_ids, and
 * says which ones are tracepoints compiled into the kernel (TP_ID_STATIC: never a uprobe, and
 * their id is never reused while the kernel runs, bar a module unload, which BPF counts) and
 * which are dynamic events (TP_ID_DYNAMIC: uprobe, kprobe, synthetic, eprobe, user events,
 * whose ids are freed and reused, so any of them may be a uprobe on a patched function by
 * the time it is opened). Opening a static tracepoint (perf stat -e 'sched:*', bpftrace's
 * tracepoint probes) then stops nothing.
 *
 * Which events are dynamic: those that tracefs's dynamic_events (or, on older kernels,
 * uprobe_events and kprobe_events) lists, read before and after the walk of events/ (an
 * event that the walk found is in the second list, unless deleted meanwhile), and those of the dynamic-only groups.
 * The ids that the walk did not find (a module unloaded, an event deleted) leave the map:
 * their next owner may be anything.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "atftrace.h"
#include "atftrace.skel.h"
#include "pidns.h"
#include "probes_int.h"

#if defined(__x86_64__)
/* Groups whose every event is dynamic (their default names). */
static const char *const dynamic_groups[] = { "uprobes", "kprobes", "synthetic", "eprobes",
					      "fprobes", "tracepoints", "user_events" };

struct names {
	char **v;
	size_t n, cap;
};

static void names_free(struct names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i]);
	free(n->v);
	memset(n, 0, sizeof(*n));
}

static int names_add(struct names *n, const char *s, size_t len)
{
	if (n->n == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 32;
		char **v = realloc(n->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		n->v = v;
		n->cap = cap;
	}
	n->v[n->n] = strndup(s, len);
	return n->v[n->n] ? (int)n->n++ : -ENOMEM;
}

static bool names_has(const struct names *n, const char *s)
{
	for (size_t i = 0; i < n->n; i++)
		if (!strcmp(n->v[i], s))
			return true;
	return false;
}

/* "GROUP/EVENT" of each line "X:GROUP/EVENT ..." (or "X:EVENT ...") of tracefs file @name. */
static void read_dynamic(const char *dir, const char *name, struct names *out)
{
	char path[256], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		size_t len;

		if (!colon)
			continue;
		len = strcspn(colon + 1, " \t\n");
		names_add(out, colon + 1, len);
	}
	fclose(f);
}

static void read_all_dynamic(const char *dir, struct names *out)
{
	read_dynamic(dir, "dynamic_events", out);
	read_dynamic(dir, "uprobe_events", out);
	read_dynamic(dir, "kprobe_events", out);
}

static bool dynamic_group(const char *group)
{
	for (size_t i = 0; i < sizeof(dynamic_groups) / sizeof(dynamic_groups[0]); i++)
		if (!strcmp(group, dynamic_groups[i]))
			return true;
	return false;
}

static int read_id(int events_fd, const char *group, const char *event, uint32_t *id)
{
	char rel[600], buf[32];
	ssize_t len;
	int fd;

	snprintf(rel, sizeof(rel), "%s/%s/id", group, event);
	fd = openat(events_fd, rel, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	buf[len] = 0;
	*id = (uint32_t)strtoul(buf, NULL, 10);
	return 0;
}

/* Trace event ids are 16-bit (the kernel's TRACE_EVENT_TYPE_MAX): one bit each, seen or not. */
#define TP_ID_LIMIT 65536u

/* The events of a walk of events/: "GROUP/EVENT" and its id. */
struct found {
	struct names names;
	uint32_t *ids;
	size_t cap;
};

/* Every event of @group (a directory of @events_fd) into @out, its id into @seen. */
static void walk_group(int events_fd, const char *group, struct found *out, uint8_t *seen)
{
	int fd = openat(events_fd, group, O_RDONLY | O_DIRECTORY | O_CLOEXEC), k;
	struct dirent *e;
	char name[600];
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		uint32_t id = 0;

		if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
		    read_id(events_fd, group, e->d_name, &id) || id >= TP_ID_LIMIT)
			continue;
		snprintf(name, sizeof(name), "%s/%s", group, e->d_name);
		k = names_add(&out->names, name, strlen(name));
		if (k < 0)
			break;
		if ((size_t)k >= out->cap) {    /* names grew: grow ids to match */
			uint32_t *ids = realloc(out->ids, out->names.cap * sizeof(*ids));

			if (!ids) {
				out->names.n--;
				free(out->names.v[k]);
				break;
			}
			out->ids = ids;
			out->cap = out->names.cap;
		}
		out->ids[k] = id;
		seen[id / 8] |= (uint8_t)(1u << (id % 8));
	}
	closedir(d);
}

/* The events of @f into the map, each with its kind: dynamic if @dyn names it. How many. */
static int classify(struct probes *p, const struct found *f, const struct names *dyn)
{
	int n = 0;

	for (size_t i = 0; i < f->names.n; i++) {
		const char *name = f->names.v[i], *event = strchr(name, '/') + 1;
		char group[300];
		uint8_t kind;

		snprintf(group, sizeof(group), "%.*s", (int)(event - 1 - name), name);
		kind = dynamic_group(group) || names_has(dyn, name) || names_has(dyn, event) ?
		       TP_ID_DYNAMIC : TP_ID_STATIC;
		if (!bpf_map__update_elem(p->skel->maps.tp_ids, &f->ids[i], sizeof(f->ids[i]), &kind,
					  sizeof(kind), BPF_ANY))
			n++;
	}
	return n;
}

/* Take the ids not in @seen out of the map (all of them when @seen is NULL). */
static void forget_unseen(struct probes *p, const uint8_t *seen)
{
	struct bpf_map *map = p->skel->maps.tp_ids;
	uint32_t *gone = calloc(GUARD_MAX_TP_IDS, sizeof(*gone)), key, last, *prev = NULL;
	size_t n = 0;

	if (!gone)
		return;
	while (n < GUARD_MAX_TP_IDS && !bpf_map__get_next_key(map, prev, &key, sizeof(key))) {
		if (!seen || key >= TP_ID_LIMIT || !(seen[key / 8] & (1u << (key % 8))))
			gone[n++] = key;
		last = key;
		prev = &last;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map__delete_elem(map, &gone[i], sizeof(gone[i]), 0);
	free(gone);
}

int probes__guard_refresh_tp_ids(struct probes *p)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	struct atftrace_bpf__bss *b = p->skel->bss;
	struct names dyn = { 0 };
	uint64_t gen;
	int events_fd = -1, n = 0;
	const char *dir = NULL;
	struct dirent *e;
	struct timespec t0, t1;
	char path[256];
	DIR *d;

	if (!p->guard)
		return -EOPNOTSUPP;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && events_fd < 0; i++) {
		snprintf(path, sizeof(path), "%s/events", dirs[i]);
		events_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		dir = dirs[i];
	}
	if (events_fd < 0)
		return -ENOENT;
	/* the count of module unloads before the walk: one during it leaves the map untrusted */
	gen = __atomic_load_n(&b->tp_ids_gen, __ATOMIC_SEQ_CST);
	__atomic_store_n(&b->tp_ids_stale, 0, __ATOMIC_SEQ_CST);
	read_all_dynamic(dir, &dyn);
	d = fdopendir(dup(events_fd));
	if (!d) {
		close(events_fd);
		names_free(&dyn);
		return -errno;
	}
	/* the groups, the events and their ids, then the last list of dynamic events */
	struct names groups = { 0 };

	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			names_add(&groups, e->d_name, strlen(e->d_name));
	closedir(d);
	uint8_t *seen = calloc(TP_ID_LIMIT / 8, 1);
	struct found found = { 0 };

	for (size_t i = 0; seen && i < groups.n; i++)
		walk_group(events_fd, groups.v[i], &found, seen);
	/* a dynamic event defined during the walk is in this list */
	read_all_dynamic(dir, &dyn);
	n = classify(p, &found, &dyn);
	/* an id that is gone (a module unloaded, an event deleted) may come back as anything */
	forget_unseen(p, seen);
	free(seen);
	names_free(&found.names);
	free(found.ids);
	names_free(&groups);
	names_free(&dyn);
	close(events_fd);
	__atomic_store_n(&b->tp_ids_valid_gen, gen, __ATOMIC_SEQ_CST);
	/* a kernel that unloads modules without telling us could reuse a static id */
	__atomic_store_n(&b->tp_ids_ready, p->tp_ids_trusted, __ATOMIC_SEQ_CST);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (p->verbose)
		fprintf(stderr, "atftrace record: registration guard: %d tracepoint ids read from %s "
			"in %.1f ms%s\n", n, dir, (t1.tv_sec - t0.tv_sec) * 1e3 +
			(t1.tv_nsec - t0.tv_nsec) / 1e6,
			p->tp_ids_trusted ? "" : " (not used: modules are unloaded unseen)");
	return n;
}

bool probes__guard_tp_ids_stale(struct probes *p)
{
	static struct timespec last;
	struct timespec now;

	if (!p->guard || !__atomic_load_n(&p->skel->bss->tp_ids_stale, __ATOMIC_ACQUIRE))
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (last.tv_sec && now.tv_sec - last.tv_sec < 1)
		return false;
	last = now;
	return probes__guard_refresh_tp_ids(p) >= 0;
}

int probes__guard_prune(struct probes *p)
{
	struct bpf_map *map = p->skel->maps.guarded;
	uint32_t key, last, *prev = NULL, gone[64];
	pid_t self = getpid(), host = 0;
	size_t n = 0;
	uint64_t mm;

	/* kill() names host pids only on the host */
	if (!p->guard || pidns_host_pid(self, &host) || host != self)
		return 0;
	while (n < sizeof(gone) / sizeof(gone[0]) &&
	       !bpf_map__get_next_key(map, prev, &key, sizeof(key))) {
		if (!bpf_map__lookup_elem(map, &key, sizeof(key), &mm, sizeof(mm), 0) && mm &&
		    kill((pid_t)key, 0) && errno == ESRCH)
			gone[n++] = key;
		last = key;
		prev = &last;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map__delete_elem(map, &gone[i], sizeof(gone[i]), 0);
	return (int)n;
}

uint64_t probes__guard_tp_skipped(const struct probes *p)
{
	return p->guard ? __atomic_load_n(&p->skel->bss->tp_static_skipped, __ATOMIC_RELAXED) : 0;
}
#else
/* Take the ids not in @seen (NULL: all) out of the map. */
static void forget_unseen(struct probes *p, const uint8_t *seen)
{
	struct bpf_map *map = p->skel->maps.tp_ids;
	uint32_t key, next, *prev = NULL;

	while (!bpf_map__get_next_key(map, prev, &next, sizeof(next))) {
		key = next;
		if (!seen || key >= TP_ID_LIMIT || !(seen[key / 8] & (1u << (key % 8)))) {
			bpf_map__delete_elem(map, &key, sizeof(key), 0);
			/* deleted: start again after the one before it, or from the start */
			if (!prev)
				continue;
		}
		prev = &key;
		key = next;
	}
}

int probes__guard_refresh_tp_ids(struct probes *p)
{
	(void)p;
	return -EOPNOTSUPP;
}

bool probes__guard_tp_ids_stale(struct probes *p)
{
	(void)p;
	return false;
}

uint64_t probes__guard_tp_skipped(const struct probes *p)
{
	(void)p;
	return 0;
}
#endif

int probes__watch_stops(struct probes *p)
{
	struct atftrace_bpf *s = p->skel;

	if (s->links.atf_signal_generate)
		return 0;
	s->links.atf_signal_generate = bpf_program__attach(s->progs.atf_signal_generate);
	return s->links.atf_signal_generate ? 0 : -errno;
}

/* The guard's and the hand-back notice's choice of syscall tracepoints (probes_int.h). */
bool probes_syscall_tracepoints(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[128];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls/sys_enter_perf_event_open/id", dirs[i]);
		if (!access(path, R_OK))
			return !(getenv("ATFTRACE_GUARD") && !strcmp(getenv("ATFTRACE_GUARD"), "raw"));
	}
	return false;
}
