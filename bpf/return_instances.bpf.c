// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * Pending uretprobe return instances of every task, for the recorder's detach
 * (user/record/recorder_detach.c): a task iterator that writes, for each instance in
 * task->utask->return_instances (newest first), where its return-address slot is, what the
 * kernel put there (the trampoline), the real return address, and whose probe it serves.
 * No user memory is read or written here; the recorder compares and writes each slot itself
 * while the thread is stopped. Pids are those of the recorder's pid namespace (pidns.bpf.h),
 * as everywhere else. The kernel keeps at most 64 instances per thread (MAX_URETPROBE_DEPTH),
 * so the walk is whole.
 *
 * Whose instance it is. Any tool's uretprobe leaves the same trampoline in the slot, and other
 * tools (bpftrace, perf, another atftrace session) may have instances pending in the very
 * processes we trace, even at the same function (one struct uprobe serves every consumer of
 * a file offset). Putting back one of theirs makes them lose that return for good. At its
 * entry hit, the kernel (6.12+) records in the instance the id and cookie of every consumer
 * that has both an entry and a return handler (a uprobe-session link, a perf/tracefs
 * uretprobe: return_instance.consumer and extra_consumers), and at the return it runs those,
 * plus every return-only consumer (a uprobe_multi RETURN link) then on the uprobe. So:
 *
 *  - atf_own_consumers (iter/bpf_link), run while our function links are still open, fills
 *    own_consumers with the consumer id of every probe of the links listed in own_links (the
 *    ids of our links), and own_uprobes with their struct uprobe;
 *  - an instance is ours when it records one of our consumer ids, or (our return-only links)
 *    when it records none and its uprobe is one of ours;
 *  - it is foreign as well when it records any other id, or when a return-only consumer is on
 *    its uprobe (ours are closed by then: that one is another tool's).
 *
 * The recorder puts back only instances that are ours and not foreign.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "return_instances.h"
#include "pidns.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MAX_RETURN_INSTANCES 64
#define MAX_RECORDED_CONSUMERS 8    /* more session consumers on one uprobe: counted as foreign */
#define MAX_UPROBE_CONSUMERS 32     /* consumers looked at on one uprobe */

/* The ids of our function links (bpf_link_info.id), filled by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} own_links SEC(".maps");

/* Consumer ids (uprobe_consumer.id) of the probes of our links. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u8);
} own_consumers SEC(".maps");

/* The struct uprobe (kernel address) of each probe of our links. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u8);
} own_uprobes SEC(".maps");

__u64 own_probes;                   /* probes atf_own_consumers found, for the recorder */

struct own_walk {
	void *uprobes;                  /* struct bpf_uprobe[cnt] */
	__u32 cnt;
};

static int add_own_probe(__u32 i, void *data)
{
	struct own_walk *w = data;
	__u64 id = 0, up = 0;
	__u8 one = 1;
	void *u;

	if (i >= w->cnt)
		return 1;
	u = w->uprobes + (__u64)i * bpf_core_type_size(struct bpf_uprobe);
	if (bpf_probe_read_kernel(&id, sizeof(id), u + bpf_core_field_offset(struct bpf_uprobe, consumer) +
				  bpf_core_field_offset(struct uprobe_consumer, id)))
		return 1;
	bpf_probe_read_kernel(&up, sizeof(up), u + bpf_core_field_offset(struct bpf_uprobe, uprobe));
	bpf_map_update_elem(&own_consumers, &id, &one, BPF_ANY);
	if (up)
		bpf_map_update_elem(&own_uprobes, &up, &one, BPF_ANY);
	own_probes++;
	return 0;
}

SEC("iter/bpf_link")
int atf_own_consumers(struct bpf_iter__bpf_link *ctx)
{
	struct bpf_link *link = ctx->link;
	struct own_walk w;
	__u32 id;
	void *ml;

	if (!link)
		return 0;
	id = BPF_CORE_READ(link, id);
	if (!bpf_map_lookup_elem(&own_links, &id) ||
	    BPF_CORE_READ(link, type) != bpf_core_enum_value(enum bpf_link_type,
							     BPF_LINK_TYPE_UPROBE_MULTI))
		return 0;
	ml = (void *)link - bpf_core_field_offset(struct bpf_uprobe_multi_link, link);
	w.uprobes = BPF_CORE_READ((struct bpf_uprobe_multi_link *)ml, uprobes);
	w.cnt = BPF_CORE_READ((struct bpf_uprobe_multi_link *)ml, cnt);
	if (w.uprobes)
		bpf_loop(w.cnt, add_own_probe, &w, 0);
	return 0;
}

/* Each a bpf_loop body, verified once (nested plain loops cost the verifier seconds). */
struct owner_walk {
	struct return_instance *ri;
	struct return_consumer *extra;
	struct list_head *head, *node;
	int cnt;
	__u32 owner;
};

/* The @k-th consumer recorded in the instance: ours or not? */
static int check_recorded(__u32 k, void *data)
{
	struct owner_walk *w = data;
	struct return_instance *ri = w->ri;         /* locals: CO-RE relocates kernel types only */
	struct return_consumer *ric = w->extra;
	__u64 id;

	if ((int)k >= w->cnt)
		return 1;
	ric += k - 1;
	id = k == 0 ? BPF_CORE_READ(ri, consumer.id) : BPF_CORE_READ(ric, id);
	w->owner |= bpf_map_lookup_elem(&own_consumers, &id) ? RET_OWNER_OURS : RET_OWNER_FOREIGN;
	return 0;
}

/* The next consumer on the uprobe: a return-only one (not ours: ours are closed) is foreign. */
static int check_on_uprobe(__u32 k, void *data)
{
	struct owner_walk *w = data;
	struct list_head *node = w->node;
	struct uprobe_consumer *uc;

	if (!node || node == w->head)
		return 1;
	uc = (void *)node - bpf_core_field_offset(struct uprobe_consumer, cons_node);
	if (BPF_CORE_READ(uc, ret_handler) && !BPF_CORE_READ(uc, handler))
		w->owner |= RET_OWNER_FOREIGN;
	w->node = BPF_CORE_READ(node, next);
	return 0;
}

/* RET_OWNER_* of instance @ri (see the file comment); *@consumers: its recorded consumers. */
static __always_inline __u32 instance_owner(struct return_instance *ri, __u32 *consumers)
{
	struct owner_walk w = { .ri = ri, .extra = BPF_CORE_READ(ri, extra_consumers),
				.cnt = BPF_CORE_READ(ri, cons_cnt) };
	struct list_head *head;
	struct uprobe *up;
	__u32 state;

	*consumers = w.cnt > 0 ? w.cnt : 0;
	bpf_loop(MAX_RECORDED_CONSUMERS, check_recorded, &w, 0);
	if (w.cnt > MAX_RECORDED_CONSUMERS)
		w.owner |= RET_OWNER_FOREIGN;
	/* the uprobe is alive while the instance holds it (leased under SRCU, or a reference) */
	state = BPF_CORE_READ(ri, hprobe.state);
	if (state != bpf_core_enum_value(enum hprobe_state, HPROBE_LEASED) &&
	    state != bpf_core_enum_value(enum hprobe_state, HPROBE_STABLE))
		return w.owner;
	up = BPF_CORE_READ(ri, hprobe.uprobe);
	if (!up)
		return w.owner;
	if (w.cnt <= 0) {
		__u64 key = (__u64)up;

		if (bpf_map_lookup_elem(&own_uprobes, &key))
			w.owner |= RET_OWNER_OURS;
	}
	head = (void *)up + bpf_core_field_offset(struct uprobe, consumers);
	w.head = head;
	w.node = BPF_CORE_READ(head, next);
	bpf_loop(MAX_UPROBE_CONSUMERS, check_on_uprobe, &w, 0);
	return w.owner;
}

SEC("iter/task")
int atf_return_slots(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct return_instance *ri;
	struct rec_return_slot rec;

	if (!task || !bpf_core_field_exists(struct uprobe_task, return_instances))
		return 0;
	ri = BPF_CORE_READ(task, utask, return_instances);
	if (!ri)
		return 0;
	/* the iterator walks the tasks of the recorder's pid namespace: all visible */
	__u64 ids = task_pid_tgid(task);

	if (!ids)
		return 0;
	rec.pid = ids >> 32;
	rec.tid = (__u32)ids;
	rec.trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	for (int i = 0; i < MAX_RETURN_INSTANCES && ri; i++) {
		rec.addr = BPF_CORE_READ(ri, stack);
		rec.orig = BPF_CORE_READ(ri, orig_ret_vaddr);
		rec.owner = instance_owner(ri, &rec.consumers);
		bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
		ri = BPF_CORE_READ(ri, next);
	}
	return 0;
}
