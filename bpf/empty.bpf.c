// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * Empty probe programs for bench/bench_probe_cost.sh: attached exactly like atftrace.bpf.c's
 * (session, two uprobe_multi links, perf uprobes), they measure what the kernel's uprobe
 * machinery costs by itself, so the bench can report atftrace's cost as a ratio over it.
 *
 * Floor programs (session links only) bound what any design of atftrace's hot path can cost:
 *   floor_session   only the three calls the task-storage design makes on every run (current
 *                   task, its task storage, the clock) and one store: the floor of that design.
 *   storage_session the first two calls alone, and clock_session the clock alone: what each part
 *                   of the floor costs.
 *   percpu_session  the state in a per-CPU slot instead (the lookup is inlined since 6.10), owned
 *                   by the thread whose user registers the run sees (ctx is task_pt_regs(current),
 *                   unique among live threads), and the clock: no other call. The floor of a
 *                   per-CPU design; a real one would also need a busy flag, and moving a thread's
 *                   state between the slot and its task storage when the owner changes.
 * Every helper or kfunc call costs about 7 ns per run on this kernel (retpolines, return thunks);
 * the clock read costs about 33 ns. No call of the task-storage design can be left out on this
 * kernel (atftrace's hot path keeps the state in a per-CPU slot instead: bpf/state_slot.bpf.h):
 * bpf_get_current_task_btf is a call on 6.18 (bpf_get_smp_processor_id and array lookups are
 * inlined); per-CPU ksyms (current_task, runqueues) do not load without CONFIG_KALLSYMS_ALL (the
 * verifier finds no address for the symbol); a task pointer cached per CPU in a kptr would need
 * bpf_task_acquire, which uprobe (kprobe-type) programs may not call, and clang 14 emits no BTF
 * type tags to declare a kptr; and task storage takes only a trusted task pointer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("uprobe")
int empty_session(struct pt_regs *ctx)
{
	return 0;       /* 0: the return run happens too, as for a traced call */
}

SEC("uprobe")
int empty_multi_entry(struct pt_regs *ctx)
{
	return 0;
}

SEC("uprobe")
int empty_multi_return(struct pt_regs *ctx)
{
	return 0;
}

SEC("uprobe")
int empty_uprobe(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int empty_uretprobe(struct pt_regs *ctx)
{
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} floor_states SEC(".maps");

SEC("uprobe")
int floor_session(struct pt_regs *ctx)
{
	__u64 *ts = bpf_task_storage_get(&floor_states, bpf_get_current_task_btf(), NULL,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (ts)
		*ts = bpf_ktime_get_ns();
	return 0;
}

SEC("uprobe")
int storage_session(struct pt_regs *ctx)
{
	__u64 *ts = bpf_task_storage_get(&floor_states, bpf_get_current_task_btf(), NULL,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (ts)
		*ts = 1;
	return 0;
}

__u64 clock_last;

SEC("uprobe")
int clock_session(struct pt_regs *ctx)
{
	clock_last = bpf_ktime_get_ns();
	return 0;
}

struct percpu_slot {
	__u64 owner;    /* the owning thread's user registers (ctx): task_pt_regs() of it */
	__u64 ts;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct percpu_slot);
} percpu_slots SEC(".maps");

SEC("uprobe")
int percpu_session(struct pt_regs *ctx)
{
	__u32 zero = 0;
	struct percpu_slot *s = bpf_map_lookup_elem(&percpu_slots, &zero);

	if (!s)
		return 0;
	if (s->owner != (__u64)(long)ctx)       /* another thread: a real design moves state here */
		s->owner = (__u64)(long)ctx;
	s->ts = bpf_ktime_get_ns();
	return 0;
}
