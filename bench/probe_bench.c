// SPDX-License-Identifier: MIT
/*
 * probe_bench: helper of bench/bench_probe_cost.sh (figures only, never assertions).
 *
 *   probe_bench cost MODE session|multi|perf FUNC TARGET ARG...
 *       MODE: none|empty|floor|storage|clock|percpu|atftrace
 *       Run TARGET ARG... (released only once probes are in) with entry+return probes on FUNC:
 *       none: no probes; empty: bpf/empty.bpf.c programs attached exactly like atftrace's;
 *       atftrace: the real programs, the ring drained as the recorder would (records counted,
 *       not written); floor, storage, clock, percpu (session only): the floor programs of
 *       bpf/empty.bpf.c, the lowest cost of the task-storage and of a per-CPU hot path.
 *       TARGET's own output (its ns/call figure) goes to stdout; a check line "events=N lost=N"
 *       goes to stderr for atftrace. With PROBE_BENCH_STATS=1 the kernel's
 *       run-time statistics are on during the run (bpf_stats: they cost every BPF program on
 *       the machine some ns, so only then) and "bpf_stats PROG runs=N ns_per_run=T" lines
 *       follow on stderr for each of our programs that ran.
 *   probe_bench attach session|multi|perf TARGET GLOB
 *       Time probes__attach_module for every function matching GLOB, and the detach
 *       (probes__free): "attach N functions: A ms, detach D ms".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "atftrace.h"
#include "empty.skel.h"
#include "probes.h"
#include "symbols.h"
#include "uprobe_multi.h"

static uint64_t events;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int count_record(void *ctx, void *data, size_t len)
{
	const struct rec_batch *b = data;

	if (b->type == REC_EVENT_BATCH && len >= REC_BATCH_HDR_SIZE)
		events += b->count;
	else
		events += b->type == REC_EVENT;
	return 0;
}

/* bpf_stats of every BPF program this process holds that ran: its probes, nobody else's. */
static void print_prog_stats(void)
{
	for (int fd = 3; fd < 1024; fd++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt || !info.name[0])
			continue;       /* not a program (maps and links fail or have no run count) */
		fprintf(stderr, "bpf_stats %s runs=%llu ns_per_run=%.1f\n", info.name,
			(unsigned long long)info.run_cnt, (double)info.run_time_ns / info.run_cnt);
	}
}

/* Fork TARGET stopped on a pipe; returns its pid and the write end that releases it. */
static pid_t spawn_gated(char **argv, int *release)
{
	int gate[2];
	pid_t pid;
	char go;

	if (pipe(gate))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(gate[0]);
	*release = gate[1];
	return pid;
}

static int release_and_wait(pid_t pid, int release, struct ring_buffer *rb)
{
	int status = 0;
	char go = 1;

	if (write(release, &go, 1) != 1)
		return -1;
	close(release);
	for (;;) {
		pid_t w = waitpid(pid, &status, rb ? WNOHANG : 0);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		if (rb)
			ring_buffer__poll(rb, 5);       /* the recorder drains on a short timer too */
	}
	if (rb)
		ring_buffer__consume(rb);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static const struct sym_func *find_func(const struct sym_module *m, const char *name)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].name, name) && m->funcs[i].skip == SYM_OK)
			return &m->funcs[i];
	return NULL;
}

/* The session program of MODE in bpf/empty.bpf.c: empty_session, floor_session, ... or NULL. */
static struct bpf_program *empty_session_prog(struct empty_bpf *s, const char *mode)
{
	char name[32];

	snprintf(name, sizeof(name), "%s_session", mode);
	return bpf_object__find_program_by_name(s->obj, name);
}

/* Empty programs, attached like atftrace's: one link kind, FUNC's probe offset, pid filter. */

static int attach_empty(struct empty_bpf *s, const char *mode, const char *kind, const char *path,
			const struct sym_func *f, pid_t pid)
{
	uint64_t off = f->probe_offset, cookie = f->symbol_index;
	struct bpf_program *session = empty_session_prog(s, mode);

	if (!strcmp(kind, "session"))
		return uprobe_multi_link_create(bpf_program__fd(session),
						ATF_BPF_TRACE_UPROBE_SESSION, path, &off, &cookie, 1, 0, pid) < 0;
	if (!strcmp(kind, "multi"))
		return uprobe_multi_link_create(bpf_program__fd(s->progs.empty_multi_entry),
						ATF_BPF_TRACE_UPROBE_MULTI, path, &off, &cookie, 1, 0, pid) < 0 ||
		       uprobe_multi_link_create(bpf_program__fd(s->progs.empty_multi_return),
						ATF_BPF_TRACE_UPROBE_MULTI, path, &off, &cookie, 1,
						ATF_BPF_F_UPROBE_MULTI_RETURN, pid) < 0;
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie);
	s->links.empty_uprobe = bpf_program__attach_uprobe_opts(s->progs.empty_uprobe, pid, path, off, &o);
	o.retprobe = true;
	s->links.empty_uretprobe = bpf_program__attach_uprobe_opts(s->progs.empty_uretprobe, pid, path,
								     off, &o);
	return !s->links.empty_uprobe || !s->links.empty_uretprobe;
}

static int cost(const char *mode, const char *kind, char **target, const char *func)
{
	struct sym_module *m = NULL;
	const struct sym_func *f;
	struct empty_bpf *es = NULL;
	struct probes *p = NULL;
	struct ring_buffer *rb = NULL;
	struct probe_opts opts = { .ring_size = 64u << 20, .wakeup_bytes = 16u << 20 };
	int release, rc = 1, stats_fd;
	pid_t pid;

	setenv("ATFTRACE_LINK", kind, 1);
	if (sym_module__open(&m, target[0], -1))
		return 1;
	f = find_func(m, func);
	if (!f) {
		fprintf(stderr, "probe_bench: %s: no probe-able %s\n", target[0], func);
		goto cleanup;
	}
	if (strcmp(mode, "none") && strcmp(mode, "atftrace")) {
		if (strcmp(mode, "empty") && strcmp(kind, "session")) {
			fprintf(stderr, "probe_bench: %s programs are for session links only\n", mode);
			goto cleanup;
		}
		es = empty_bpf__open();
		if (!es)
			goto cleanup;
		if (!empty_session_prog(es, mode)) {
			fprintf(stderr, "probe_bench: no mode %s (bpf/empty.bpf.c has no %s_session)\n",
				mode, mode);
			goto cleanup;
		}
		bpf_program__set_expected_attach_type(es->progs.empty_session, ATF_BPF_TRACE_UPROBE_SESSION);
		bpf_program__set_expected_attach_type(es->progs.floor_session, ATF_BPF_TRACE_UPROBE_SESSION);
		bpf_program__set_expected_attach_type(es->progs.storage_session, ATF_BPF_TRACE_UPROBE_SESSION);
		bpf_program__set_expected_attach_type(es->progs.clock_session, ATF_BPF_TRACE_UPROBE_SESSION);
		bpf_program__set_expected_attach_type(es->progs.percpu_session, ATF_BPF_TRACE_UPROBE_SESSION);
		bpf_program__set_expected_attach_type(es->progs.empty_multi_entry, ATF_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(es->progs.empty_multi_return, ATF_BPF_TRACE_UPROBE_MULTI);
		if (empty_bpf__load(es))
			goto cleanup;
	} else if (!strcmp(mode, "atftrace")) {
		if (probes__open(&p, &opts))
			goto cleanup;
		((struct sym_func *)f)->selected = true;
	}
	pid = spawn_gated(target, &release);
	if (pid < 0)
		goto cleanup;
	if (es && attach_empty(es, mode, kind, target[0], f, pid)) {
		fprintf(stderr, "probe_bench: attach empty programs: %s\n", strerror(errno));
		kill(pid, SIGKILL);
		goto cleanup;
	}
	if (p) {
		if (probes__add_pid(p, pid) || probes__attach_module(p, m, pid) != 1 ||
		    !(rb = ring_buffer__new(probes__ring_fd(p), count_record, NULL, NULL))) {
			kill(pid, SIGKILL);
			goto cleanup;
		}
	}
	fflush(stdout);
	stats_fd = getenv("PROBE_BENCH_STATS") ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	rc = release_and_wait(pid, release, rb) ? 1 : 0;
	if (stats_fd >= 0) {
		print_prog_stats();
		close(stats_fd);
	}
	if (p) {
		struct probe_losses lost;

		probes__lost(p, &lost);
		fprintf(stderr, "events=%llu lost=%llu\n", (unsigned long long)events,
			(unsigned long long)lost.events);
	}
cleanup:
	ring_buffer__free(rb);
	probes__free(p);
	empty_bpf__destroy(es);
	sym_module__free(m);
	return rc;
}

static int attach_time(const char *kind, const char *path, const char *glob)
{
	struct sym_module *m = NULL;
	struct probes *p = NULL;
	struct probe_opts opts = { 0 };
	double t0, t1, t2;
	int n;

	setenv("ATFTRACE_LINK", kind, 1);
	if (sym_module__open(&m, path, -1))
		return 1;
	sym_module__select(m, &glob, 1, NULL, 0);
	if (probes__open(&p, &opts)) {
		sym_module__free(m);
		return 1;
	}
	t0 = now_ms();
	n = probes__attach_module(p, m, 0);
	t1 = now_ms();
	probes__free(p);
	t2 = now_ms();
	sym_module__free(m);
	if (n < 0)
		return 1;
	printf("attach %d functions: %.1f ms, detach %.1f ms\n", n, t1 - t0, t2 - t1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "cost"))
		return cost(argv[2], argv[3], argv + 5, argv[4]) ? 1 : 0;
	if (argc == 5 && !strcmp(argv[1], "attach"))
		return attach_time(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: probe_bench cost none|empty|floor|storage|clock|percpu|atftrace KIND FUNC TARGET ARG...\n"
			"       probe_bench attach KIND TARGET GLOB\n");
	return 2;
}
