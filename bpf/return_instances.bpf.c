// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * Pending uretprobe return instances of every task, for the recorder's detach
 * (user/record/recorder_detach.c): a task iterator that writes, for each instance in
 * task->utask->return_instances (newest first), where its return-address slot is, what the
 * kernel put there (the trampoline) and the real return address. No user memory is read or
 * written here; the recorder compares and writes each slot itself while the thread is stopped.
 * Pids are those of the recorder's pid namespace (pidns.bpf.h), as everywhere else.
 * The kernel keeps at most 64 instances per thread (MAX_URETPROBE_DEPTH), so the walk is whole.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "return_instances.h"
#include "pidns.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MAX_RETURN_INSTANCES 64

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
		bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
		ri = BPF_CORE_READ(ri, next);
	}
	return 0;
}
