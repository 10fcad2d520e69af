/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Task filters for system-wide sessions (record -a, --comm, --cgroup, --container), included by
 * bpf/atftrace.bpf.c after its configuration block and pidns.bpf.h (it uses cgroup_id and
 * current_pid_tgid() from there). Every probe hit and every task record passes
 * task_filters_pass() first; with no filter set it is two loads of read-only data, which the
 * verifier turns into dead code.
 *
 * Cgroups. The id user space gives (cgroup_id) is the kernfs node id of the cgroup directory
 * (user/proc/container.c cgroup_id_of_path). A task is traced when it is in that cgroup or below it:
 *   v2 (cgroup_v1_ssid == 0): its ancestor at the directory's level is that cgroup
 *       (bpf_get_current_ancestor_cgroup_id; the v2 root is level 0);
 *   v1 (cgroup_v1_ssid == subsystem id + 1): its cgroup in that controller's hierarchy,
 *       task->cgroups->subsys[id]->cgroup, or one of its parents has that kernfs id. A v1
 *       hierarchy is only reachable through one of its controllers, so a name=-only hierarchy
 *       (name=systemd) cannot be filtered on; user space refuses it.
 *
 * Comm. --comm compares the thread group leader's comm, which is what /proc/PID/comm and ps show
 * for the process: a worker thread that renamed itself (pthread_setname_np) still belongs to its
 * process. bpf_get_current_comm() would return the thread's own name and lose such threads.
 */
#ifndef ATFTRACE_FILTER_BPF_H
#define ATFTRACE_FILTER_BPF_H

/* Cgroup levels walked on v1 (parents of the task's cgroup); deeper trees are not matched. */
#define CGROUP_V1_MAX_DEPTH 32

/*
 * The recorder itself, excluded from system-wide sessions (tracing libc's malloc system-wide
 * would otherwise record the recorder's own mallocs, each drain making more). Known as its pid
 * in its own pid namespace, the namespace every probe reports pids in (pidns.bpf.h).
 */
const volatile __u32 self_pid = 0;            /* 0: nothing excluded */
const volatile __u32 cgroup_level = 0;        /* v2: level of cgroup_id (root = 0) */
const volatile __u32 cgroup_v1_ssid = 0;      /* v1: controller's subsystem id + 1; 0 = v2 */
/* "" = any process name; otherwise the name zero-padded to 16 bytes, as the kernel pads comm */
const volatile __u64 comm_filter[2] = {};

static __always_inline bool cgroup_v1_contains(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 ssid = (cgroup_v1_ssid - 1) & 15;
	struct cgroup_subsys_state *css = NULL;
	struct cgroup *cg;

	/* subsys[] has CGROUP_SUBSYS_COUNT entries; user space checked ssid against /proc/cgroups */
	bpf_core_read(&css, sizeof(css), &task->cgroups->subsys[ssid]);
	if (!css)
		return false;
	cg = BPF_CORE_READ(css, cgroup);
	for (int i = 0; i < CGROUP_V1_MAX_DEPTH && cg; i++) {
		if (BPF_CORE_READ(cg, kn, id) == cgroup_id)
			return true;
		css = BPF_CORE_READ(cg, self.parent);
		cg = css ? BPF_CORE_READ(css, cgroup) : NULL;
	}
	return false;
}

/* Two 8-byte compares, no byte loop: the kernel keeps comm zero-padded (strscpy_pad). */
static __always_inline bool comm_matches(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 comm[2] = {};

	BPF_CORE_READ_INTO(&comm, task, group_leader, comm);
	return comm[0] == comm_filter[0] && comm[1] == comm_filter[1];
}

/* task_filters_pass - does the current task pass --cgroup/--container and --comm? */
static __always_inline bool task_filters_pass(void)
{
	if (self_pid && (__u32)(current_pid_tgid() >> 32) == self_pid)
		return false;
	if (cgroup_id) {
		if (cgroup_v1_ssid) {
			if (!cgroup_v1_contains())
				return false;
		} else if (bpf_get_current_ancestor_cgroup_id(cgroup_level) != cgroup_id) {
			return false;
		}
	}
	if (comm_filter[0] && !comm_matches())
		return false;
	return true;
}

/* ---- process identity for system-wide sessions (REC_PROC_INFO) ---------------------------- */

const volatile bool announce_tasks = false;   /* record -a: send REC_PROC_INFO per new thread */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u8);
} announced SEC(".maps");

/* send_proc_info - one REC_PROC_INFO for the current thread; marks it announced. */
static __always_inline void send_proc_info(__u64 pid_tgid, __u8 *seen)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct rec_proc_info *info;
	__u64 a0, a1, len;

	info = bpf_ringbuf_reserve(&rb, sizeof(*info), 0);
	if (!info) {
		count_lost(lost_records);
		return;
	}
	*seen = 1;
	info->type = REC_PROC_INFO;
	info->pid = pid_tgid >> 32;
	info->tid = (__u32)pid_tgid;
	info->start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);
	BPF_CORE_READ_INTO(&info->comm, task, group_leader, comm);
	a0 = BPF_CORE_READ(task, mm, arg_start);
	a1 = BPF_CORE_READ(task, mm, arg_end);
	len = a1 > a0 ? a1 - a0 : 0;
	if (len > REC_ARGS_MAX)
		len = REC_ARGS_MAX;
	asm volatile("" : "+r"(len));
	if (len > REC_ARGS_MAX || bpf_probe_read_user(info->args, len, (void *)a0))
		len = 0;
	info->args_len = (__u32)len;
	bpf_ringbuf_submit(info, 0);
}

/*
 * announce_task - once per thread, before its first event: who its process is. A lost record
 * (ring full) is counted and sent again at the thread's next event.
 */
static __always_inline void announce_task(__u64 pid_tgid)
{
	__u8 *seen;

	if (!announce_tasks)
		return;
	seen = bpf_task_storage_get(&announced, bpf_get_current_task_btf(), NULL,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (seen && !*seen)
		send_proc_info(pid_tgid, seen);
}

/*
 * announce_exec - at exec (after the REC_TASK_EXEC record) of a thread that had events: its
 * process is a new program; say which now, as it may exit before the recorder can read /proc or
 * hit a probe again. Threads never announced are unknown to the recorder: nothing to say.
 */
static __always_inline void announce_exec(__u64 pid_tgid)
{
	__u8 *seen;

	if (!announce_tasks)
		return;
	seen = bpf_task_storage_get(&announced, bpf_get_current_task_btf(), NULL, 0);
	if (seen && *seen)
		send_proc_info(pid_tgid, seen);
}

#endif
