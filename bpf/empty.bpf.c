// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * Empty probe programs for bench/bench_probe_cost.sh: attached exactly like atftrace.bpf.c's
 * (session, two uprobe_multi links, perf uprobes), they measure what the kernel's uprobe
 * machinery costs by itself, so the bench can report atftrace's cost as a ratio over it.
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
