/* SPDX-License-Identifier: MIT */
/*
 * The kernel's pending uretprobe return instances, read through a BPF task iterator
 * (bpf/return_instances.bpf.c): for every thread, which stack slots hold the uretprobe trampoline
 * in place of a real return address. The recorder's detach puts the real ones back.
 */
#ifndef ATFTRACE_RETURN_SLOTS_H
#define ATFTRACE_RETURN_SLOTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct return_slot {
	pid_t pid;              /* tgid */
	pid_t tid;
	uint64_t addr;          /* the return-address slot on the thread's stack */
	uint64_t trampoline;    /* what the slot holds while the uretprobe is pending */
	uint64_t orig;          /* the real return address */
	uint32_t owner;         /* RET_OWNER_* (bpf/return_instances.h): whose probe it serves */
	uint32_t consumers;     /* session consumers recorded in the instance */
};

struct return_slots;

/** return_slots__open - load the iterator. 0, or a negative errno (one error line printed). */
int return_slots__open(struct return_slots **out);

/**
 * return_slots__read - every pending return instance of every thread on the system, newest
 * first within a thread (a tail call's instances share one slot). *@out is malloc'ed (NULL
 * when *@n is 0); the caller frees it. 0, or a negative errno.
 */
int return_slots__read(struct return_slots *rs, struct return_slot **out, size_t *n);

/**
 * return_slots__own_links - tell the iterator which pending instances are ours: the probes of
 * the BPF links with ids @link_ids[@n] (call it while those links are open). Returns how many
 * probes were found, or a negative errno. Without it no instance counts as ours.
 */
int return_slots__own_links(struct return_slots *rs, const uint32_t *link_ids, size_t n);

/** return_slots__free - release. NULL is ignored. */
void return_slots__free(struct return_slots *rs);

#endif
