// SPDX-License-Identifier: MIT
/*
 * What the recorder reads and switches in the running probes (include/probes.h): the ring, the
 * loss and filter counters, the per-thread maps (losses, parked batches, filtered calls), the
 * end's batch flush, the detail switch, typed-argument specs, the held set and the links' ids.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "args.h"
#include "atftrace.h"
#include "atftrace.skel.h"
#include "probes_int.h"
#include "bpf_iter.h"

int probes__ring_fd(const struct probes *p)
{
	return bpf_map__fd(p->skel->maps.rb);
}

void probes__lost(const struct probes *p, struct probe_losses *out)
{
	const struct atftrace_bpf__bss *b = p->skel->bss;

	memset(out, 0, sizeof(*out));
	/* .bss is mmap'ed: these are the live per-CPU counters. */
	for (size_t i = 0; i < sizeof(b->lost_events) / sizeof(b->lost_events[0]); i++) {
		out->events += __atomic_load_n(&b->lost_events[i], __ATOMIC_RELAXED);
		out->detail += __atomic_load_n(&b->lost_detail[i], __ATOMIC_RELAXED);
		out->records += __atomic_load_n(&b->lost_records[i], __ATOMIC_RELAXED);
		out->unattributed += __atomic_load_n(&b->lost_unattributed[i], __ATOMIC_RELAXED);
	}
}

int probes__thread_lost(struct probes *p, uint32_t tid, bool take, struct thread_loss *out)
{
	int fd = bpf_map__fd(p->skel->maps.thread_losses);
	int err = take ? bpf_map_lookup_and_delete_elem(fd, &tid, out) : bpf_map_lookup_elem(fd, &tid, out);

	if (err)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int probes__take_parked(struct probes *p, uint32_t tid, struct rec_batch *out)
{
	int fd = bpf_map__fd(p->skel->maps.batch_parked);

	if (bpf_map_lookup_and_delete_elem(fd, &tid, out))
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int probes__parked_pid(struct probes *p, uint32_t tid, uint32_t *pid)
{
	struct rec_batch b;

	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.batch_parked), &tid, &b))
		return errno == ENOENT ? 0 : -errno;
	*pid = b.pid;
	return 1;
}

int probes__parked_next(struct probes *p, const uint32_t *prev, uint32_t *tid)
{
	return bpf_map_get_next_key(bpf_map__fd(p->skel->maps.batch_parked), prev, tid) ? -errno : 0;
}

int probes__lost_thread_next(struct probes *p, const uint32_t *prev, uint32_t *tid)
{
	return bpf_map_get_next_key(bpf_map__fd(p->skel->maps.thread_losses), prev, tid) ? -errno : 0;
}

int probes__thread_filtered(struct probes *p, uint32_t tid, bool take, struct thread_filtered *out)
{
	int fd = bpf_map__fd(p->skel->maps.thread_filtered);
	int err = take ? bpf_map_lookup_and_delete_elem(fd, &tid, out) : bpf_map_lookup_elem(fd, &tid, out);

	if (err)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int probes__filtered_thread_next(struct probes *p, const uint32_t *prev, uint32_t *tid)
{
	return bpf_map_get_next_key(bpf_map__fd(p->skel->maps.thread_filtered), prev, tid) ? -errno : 0;
}

uint64_t probes__filtered_unattributed(const struct probes *p)
{
	const struct atftrace_bpf__bss *b = p->skel->bss;
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(b->filtered_unattributed) / sizeof(b->filtered_unattributed[0]); i++)
		n += __atomic_load_n(&b->filtered_unattributed[i], __ATOMIC_RELAXED);
	return n;
}

int probes__flush_batches(struct probes *p, bool last)
{
	int err;

	__atomic_store_n(&p->skel->bss->batches_left, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->skel->bss->batches_discard, last, __ATOMIC_RELAXED);
	/* the program writes nothing: reading to the end runs it over every task */
	err = bpf_iter_run(p->skel->progs.atf_flush_batches, NULL, NULL);
	return err ?: (int)__atomic_load_n(&p->skel->bss->batches_left, __ATOMIC_RELAXED);
}

void probes__detail_set(struct probes *p, bool on)
{
	/* .bss is mmap'ed: the probes read the switch on their next hit */
	__atomic_store_n(&p->skel->bss->detail_switch, on, __ATOMIC_RELAXED);
}

int probes__arg_spec_set(struct probes *p, uint64_t id, const struct arg_fn_spec *s)
{
	if (bpf_map__update_elem(p->skel->maps.arg_specs, &id, sizeof(id), s, sizeof(*s), BPF_ANY))
		return -errno;
	return 0;
}

bool probes__detail_get(const struct probes *p)
{
	return __atomic_load_n(&p->skel->bss->detail_switch, __ATOMIC_RELAXED);
}

enum probe_link_kind probes__link_kind(const struct probes *p)
{
	return p->kind;
}

uint64_t *probes__held_pids(const struct probes *p, size_t *n)
{
	*n = HELD_MAX_PIDS;
	return (uint64_t *)p->skel->bss->held_pids;    /* __u64 is unsigned long long */
}

int probes__function_link_ids(const struct probes *p, uint32_t **ids, size_t *n)
{
	uint32_t *v = calloc(p->function_fds.n ? p->function_fds.n : 1, sizeof(*v));

	*ids = NULL;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->function_fds.n; i++) {
		struct bpf_link_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (p->function_fds.fd[i] < 0 ||
		    bpf_obj_get_info_by_fd(p->function_fds.fd[i], &info, &len) < 0)
			continue;
		v[(*n)++] = info.id;
	}
	*ids = v;
	return 0;
}
