/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Pids as the recorder sees them. The recorder fills the tgid filter, names directories and reads
 * /proc with the pids of its own pid namespace; a recorder in a container or a Kubernetes sidecar
 * (sharing the app's pid namespace) is not in the host's. So every pid and tid a probe reports or
 * filters on is the task's pid at the recorder's namespace level, which user space finds before
 * load (user/probe/probes.c): pidns_level, the number of namespaces above its own (0 on the
 * host), and pidns_inum, the inode of /proc/self/ns/pid.
 *
 * A task's struct pid lists its number in each namespace from the root down to its own:
 * numbers[i] is its pid at level i, numbers[i].ns that namespace. A task whose pid is at a lower
 * level than the recorder's, or whose namespace at that level is another one (a sibling
 * container), has no pid the recorder could name: it is not visible, and never traced.
 *
 * Level 0 (the usual case) keeps bpf_get_current_pid_tgid() and task->tgid/pid: the level is
 * read-only data, so the verifier drops the namespace branch, and it costs nothing.
 */
#ifndef ATFTRACE_PIDNS_BPF_H
#define ATFTRACE_PIDNS_BPF_H

const volatile __u32 pidns_level = 0;         /* the recorder's pid namespace level (host: 0) */
const volatile __u32 pidns_inum = 0;          /* its inode number (/proc/self/ns/pid st_ino) */

/* The kernel's MAX_PID_NS_LEVEL: namespaces nest at most 32 deep. */
#define PIDNS_MAX_LEVEL 32

/* pid_nr_at - @pid's number at the recorder's level, 0 when it has none there. */
static __always_inline __u32 pid_nr_at(struct pid *pid)
{
	__u32 level = pidns_level & (PIDNS_MAX_LEVEL - 1);
	struct upid up = {};

	if (!pid || BPF_CORE_READ(pid, level) < level)
		return 0;
	if (bpf_core_read(&up, sizeof(up), &pid->numbers[level]) || !up.ns)
		return 0;
	if (BPF_CORE_READ(up.ns, ns.inum) != pidns_inum)
		return 0;
	return (__u32)up.nr;
}

/*
 * task_pid_tgid - (tgid << 32 | tid) of @task in the recorder's pid namespace, in the form of
 * bpf_get_current_pid_tgid(); 0 when the task is not visible to the recorder. Threads share
 * their process's namespace (CLONE_THREAD excludes CLONE_NEWPID), so one visible is both.
 */
static __always_inline __u64 task_pid_tgid(struct task_struct *task)
{
	__u32 tid, tgid;

	if (!pidns_level)
		return (__u64)task->tgid << 32 | (__u32)task->pid;
	tid = pid_nr_at(BPF_CORE_READ(task, thread_pid));
	if (!tid)
		return 0;
	tgid = pid_nr_at(BPF_CORE_READ(task, group_leader, thread_pid));
	if (!tgid)
		return 0;
	return (__u64)tgid << 32 | tid;
}

/* current_pid_tgid - bpf_get_current_pid_tgid() in the recorder's pid namespace (0: not visible). */
static __always_inline __u64 current_pid_tgid(void)
{
	if (!pidns_level)
		return bpf_get_current_pid_tgid();
	return task_pid_tgid(bpf_get_current_task_btf());
}

/*
 * pid_visible - may a pid taken from the two helpers above be traced? At level 0 always (the
 * test is dead code then); inside a namespace a task the recorder cannot see reads as pid 0.
 */
static __always_inline bool pid_visible(__u32 pid)
{
	return !pidns_level || pid;
}

#endif
