// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * The level of the recorder's own pid namespace, which the probes need (pidns.bpf.h) and /proc
 * cannot tell: NSpid in /proc/PID/status lists levels from the namespace of that /proc mount
 * down, so in a container with its own /proc it has one entry at any depth, and NS_GET_PARENT
 * refuses to go above the caller's own namespace. user/proc/pidns.c runs this task iterator on
 * one thread only (its own, or a traced process's, named in the recorder's namespace); it
 * writes one record, with the host pid too, which only the kernel's own numbering can give.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "pidns_self.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("iter/task")
int atf_pidns_self(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct rec_pidns_self rec = {};
	struct upid up = {};
	struct pid *pid;
	__u32 level;

	if (!task)
		return 0;
	pid = BPF_CORE_READ(task, thread_pid);
	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	if (bpf_core_read(&up, sizeof(up), &pid->numbers[level & 31]) || !up.ns)
		return 0;
	rec.level = level;
	rec.inum = BPF_CORE_READ(up.ns, ns.inum);
	rec.host_tgid = BPF_CORE_READ(task, tgid);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
