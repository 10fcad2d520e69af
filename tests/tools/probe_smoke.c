// SPDX-License-Identifier: MIT
/*
 * probe_smoke: the BPF side end to end, without the recorder. Attaches atftrace's probes
 * (link kind from ATFTRACE_LINK) to functions of TARGET, runs TARGET ARG... as a child
 * released only once the probes are in, reads the ring until the child is reaped, and prints
 * what it saw, for tests/e2e/test_probe_attach.sh to compare exactly:
 *
 *   probe_smoke [-s] -f GLOB [-f GLOB]... TARGET [ARG...]
 * (No C++ unwind hooks: they stop a throwing thread until the recorder's drain resumes it.)
 *     link=<kind> attached=<n>
 *     <KIND> <function> <depth> <count>       one line per distinct event (sorted), or with -s
 *     <KIND> <function> <depth>               every event in order
 *     total calls=<n> returns=<n> exceptions=<n> lost=<n> exits=<n>
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "atftrace.h"
#include "probes.h"
#include "symbols.h"

#define MAX_GLOBS 16
#define MAX_KEYS  4096

struct key_count {
	uint32_t kind, depth;
	uint64_t function_id;
	uint64_t count;
};

static struct sym_module *mod;
static pid_t child;
static bool sequence;
static struct key_count keys[MAX_KEYS];
static size_t nkeys;
static uint64_t totals[4], exits, bad;

static const char *kind_str(uint32_t k)
{
	return k == 1 ? "CALL" : k == 2 ? "RETURN" : k == 3 ? "EXCEPTION" : "?";
}

static const char *fn_name(uint64_t id)
{
	uint32_t idx = (uint32_t)id;

	if ((uint32_t)(id >> 32) != mod->module_id || idx == 0 || idx > mod->nfuncs)
		return "?";
	return mod->funcs[idx - 1].name;
}

static void count_event(uint32_t pid, uint32_t kind, uint64_t function_id, uint32_t depth)
{
	if (kind < 1 || kind > 3) {
		bad++;
		return;
	}
	if (pid != (uint32_t)child)
		return;
	totals[kind]++;
	if (sequence) {
		printf("%s %s %u\n", kind_str(kind), fn_name(function_id), depth);
		return;
	}
	for (size_t i = 0; i < nkeys; i++) {
		if (keys[i].kind == kind && keys[i].depth == depth && keys[i].function_id == function_id) {
			keys[i].count++;
			return;
		}
	}
	if (nkeys < MAX_KEYS)
		keys[nkeys++] = (struct key_count){ kind, depth, function_id, 1 };
	else
		bad++;
}

static int on_record(void *ctx, void *data, size_t len)
{
	const struct rec_event *e = data;

	if (len >= sizeof(struct rec_task) && e->type == REC_TASK_EXIT) {
		const struct rec_task *t = data;

		exits += t->pid == (uint32_t)child;
		return 0;
	}
	if (len >= sizeof(struct rec_task) && (e->type == REC_TASK_EXEC || e->type == REC_TASK_FORK))
		return 0;
	if (len >= REC_BATCH_HDR_SIZE && e->type == REC_EVENT_BATCH) {
		const struct rec_batch *b = data;

		if (b->count > REC_BATCH_MAX || len < REC_BATCH_HDR_SIZE + b->count * sizeof(b->ev[0])) {
			bad++;
			return 0;
		}
		for (uint32_t i = 0; i < b->count; i++)
			count_event(b->pid, b->ev[i].kind, b->ev[i].function_id, b->ev[i].depth);
		return 0;
	}
	if (len < sizeof(*e) || e->type != REC_EVENT) {
		bad++;
		return 0;
	}
	count_event(e->pid, e->kind, e->function_id, e->depth);
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct key_count *x = a, *y = b;
	int c = strcmp(fn_name(x->function_id), fn_name(y->function_id));

	if (c)
		return c;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

int main(int argc, char **argv)
{
	const char *globs[MAX_GLOBS];
	size_t nglobs = 0;
	struct probe_opts opts = { .ring_size = 64u << 20, .wakeup_bytes = 1u << 20 };
	struct probes *p = NULL;
	struct ring_buffer *rb = NULL;
	int gate[2], opt, status = 0, attached, rc = 1;
	struct probe_losses lost = { 0 };
	char go = 1;

	while ((opt = getopt(argc, argv, "+sf:v")) != -1) {
		if (opt == 's')
			sequence = true;
		else if (opt == 'f' && nglobs < MAX_GLOBS)
			globs[nglobs++] = optarg;
		else if (opt == 'v')
			opts.verbose = true;
		else
			goto usage;
	}
	if (optind >= argc || nglobs == 0)
		goto usage;
	alarm(120);     /* a hung target must not hang the test suite */
	if (sym_module__open(&mod, argv[optind], -1))
		return 1;
	sym_module__select(mod, globs, nglobs, NULL, 0);
	if (probes__open(&p, &opts))
		return 1;
	if (pipe(gate))
		return 1;
	child = fork();
	if (child == 0) {       /* wait until the probes are attached, then become the target */
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(126);
		execv(argv[optind], argv + optind);
		_exit(127);
	}
	close(gate[0]);
	if (child < 0 || probes__add_pid(p, child))
		goto cleanup;
	attached = probes__attach_module(p, mod, child);
	if (attached < 0)
		goto cleanup;
	rb = ring_buffer__new(probes__ring_fd(p), on_record, NULL, NULL);
	if (!rb)
		goto cleanup;
	printf("link=%s attached=%d\n", probes__link_kind(p) == PROBE_LINK_SESSION ? "session"
	       : probes__link_kind(p) == PROBE_LINK_MULTI ? "multi" : "perf", attached);
	fflush(stdout);
	if (write(gate[1], &go, 1) != 1)
		goto cleanup;
	close(gate[1]);
	/* Drain while the child runs; everything it produced is in the ring once it is reaped. */
	for (;;) {
		pid_t w = waitpid(child, &status, WNOHANG);

		if (w == child)
			break;
		if (w < 0 && errno != EINTR)
			goto cleanup;
		ring_buffer__poll(rb, 10);
	}
	ring_buffer__consume(rb);
	if (!sequence) {
		qsort(keys, nkeys, sizeof(keys[0]), cmp_key);
		for (size_t i = 0; i < nkeys; i++)
			printf("%s %s %u %llu\n", kind_str(keys[i].kind), fn_name(keys[i].function_id),
			       keys[i].depth, (unsigned long long)keys[i].count);
	}
	probes__lost(p, &lost);
	printf("total calls=%llu returns=%llu exceptions=%llu lost=%llu exits=%llu bad=%llu\n",
	       (unsigned long long)totals[1], (unsigned long long)totals[2],
	       (unsigned long long)totals[3], (unsigned long long)lost.events,
	       (unsigned long long)exits, (unsigned long long)bad);
	rc = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
cleanup:
	ring_buffer__free(rb);
	probes__free(p);
	sym_module__free(mod);
	return rc;
usage:
	fprintf(stderr, "usage: probe_smoke [-s] [-v] -f GLOB [-f GLOB]... TARGET [ARG...]\n");
	return 2;
}
