// SPDX-License-Identifier: MIT
/*
 * include/return_slots.h: load bpf/return_instances.bpf.c, run its task iterator, read its records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "return_slots.h"
#include "pidns.h"
#include "return_instances.h"
#include "return_instances.skel.h"
#include "bpf_iter.h"

struct return_slots {
	struct return_instances_bpf *skel;
};

int return_slots__open(struct return_slots **out)
{
	struct return_slots *rs = calloc(1, sizeof(*rs));
	int err;

	*out = NULL;
	if (!rs)
		return -ENOMEM;
	rs->skel = return_instances_bpf__open();
	if (!rs->skel) {
		err = -errno;
		goto cleanup;
	}
	err = pidns_self(&rs->skel->rodata->pidns_level, &rs->skel->rodata->pidns_inum);
	if (err)
		goto cleanup;
	err = return_instances_bpf__load(rs->skel);
	if (err)
		goto cleanup;
	*out = rs;
	return 0;
cleanup:
	fprintf(stderr, "atftrace: cannot load the iterator of pending return probes: %s\n",
		strerror(-err));
	return_slots__free(rs);
	return err;
}

int return_slots__read(struct return_slots *rs, struct return_slot **out, size_t *n)
{
	struct return_slot *slots = NULL;
	char *buf = NULL;
	size_t len = 0, count;
	int err;

	*out = NULL;
	*n = 0;
	err = bpf_iter_run(rs->skel->progs.atf_return_slots, &buf, &len);
	if (err)
		goto cleanup;
	count = len / sizeof(struct rec_return_slot);
	if (count) {
		slots = calloc(count, sizeof(*slots));
		if (!slots) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	for (size_t i = 0; i < count; i++) {
		struct rec_return_slot r;

		memcpy(&r, buf + i * sizeof(r), sizeof(r));
		slots[i] = (struct return_slot){ .pid = (pid_t)r.pid, .tid = (pid_t)r.tid,
						 .addr = r.addr, .trampoline = r.trampoline,
						 .orig = r.orig, .owner = r.owner,
						 .consumers = r.consumers };
	}
	*out = slots;
	*n = count;
cleanup:
	free(buf);
	return err;
}

int return_slots__own_links(struct return_slots *rs, const uint32_t *link_ids, size_t n)
{
	int map = bpf_map__fd(rs->skel->maps.own_links), err;
	__u8 one = 1;

	for (size_t i = 0; i < n; i++)
		if (bpf_map_update_elem(map, &link_ids[i], &one, BPF_ANY) < 0)
			return -errno;
	/* the iterator writes nothing: reading runs it over every link */
	err = bpf_iter_run(rs->skel->progs.atf_own_consumers, NULL, NULL);
	if (!err)
		err = rs->skel->bss->own_probes > INT32_MAX ? INT32_MAX : (int)rs->skel->bss->own_probes;
	return err;
}

void return_slots__free(struct return_slots *rs)
{
	if (!rs)
		return;
	return_instances_bpf__destroy(rs->skel);
	free(rs);
}
