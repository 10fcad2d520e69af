/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Pids as the recorder sees them. The recorder fills the tgid filter, names directories and reads
 * /proc with the pids of its own pid namespace; a recorder in a container or a Kubernetes sidecar
 * (sharing the app's pid namespace) is not in the host's. So every pid and tid a probe reports or
 * filters on is the task's pid at the recorder's namespace level, which user space finds before
 * load (user/proc/pidns.c): pidns_level, the number of namespaces above its own (0 on the
 * host), and pidns_inum, the inode of /proc/self/ns/pid.
 *
 * A task's struct pid lists its number in each namespace from the root down to its own:
 * numbers[i] is its pid at level i, numbers[i].ns that namespace. A task whose pid is at a lower
 * level than the recorder's, or whose namespace at that level is another one (a sibling
 * container), has no pid the recorder could name: it is not visible, and never traced.
 *
 * Level 0 (the usual case) keeps bpf_get_current_pid_tgid() and task->tgid/pid: the level is
 * read-only data, so the verifier drops the namespace branch. It drops it whole (no jump left)
 * only when the host path is the fall-through, hence the __builtin_expect on each test; what
 * stays is the load of the level itself (as for every other rodata switch).
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
 * task_ns_pid_tgid - (tgid << 32 | tid) of @task at the recorder's level, 0 when the task is
 * not visible to the recorder. Threads share their process's namespace (CLONE_THREAD excludes
 * CLONE_NEWPID), so one visible is both.
 */
static __always_inline __u64 task_ns_pid_tgid(struct task_struct *task)
{
	__u32 tid, tgid;

	tid = pid_nr_at(BPF_CORE_READ(task, thread_pid));
	if (!tid)
		return 0;
	tgid = pid_nr_at(BPF_CORE_READ(task, group_leader, thread_pid));
	if (!tgid)
		return 0;
	return (__u64)tgid << 32 | tid;
}

/*
 * ns_current_pid_tgid - task_ns_pid_tgid() of the current task, as a global function: it is
 * verified once on its own and its result is an unknown number to the caller. Inlined, its zero
 * and non-zero paths went on through the entry program's loops as separate states, more than
 * the verifier explores (E2BIG).
 */
__noinline __u64 ns_current_pid_tgid(void)
{
	return task_ns_pid_tgid(bpf_get_current_task_btf());
}

/*
 * task_pid_tgid - (tgid << 32 | tid) of @task in the recorder's pid namespace, in the form of
 * bpf_get_current_pid_tgid(); 0 when the task is not visible to the recorder.
 */
static __always_inline __u64 task_pid_tgid(struct task_struct *task)
{
	if (__builtin_expect(!pidns_level, 1))
		return (__u64)task->tgid << 32 | (__u32)task->pid;
	return task_ns_pid_tgid(task);
}

/* current_pid_tgid - bpf_get_current_pid_tgid() in the recorder's pid namespace (0: not visible). */
static __always_inline __u64 current_pid_tgid(void)
{
	if (__builtin_expect(!pidns_level, 1))
		return bpf_get_current_pid_tgid();
	return ns_current_pid_tgid();
}

/*
 * pid_visible - may a pid taken from the two helpers above be traced? At level 0 always;
 * inside a namespace a task the recorder cannot see reads as pid 0. The empty asm keeps the
 * compiler from testing the pid first: the verifier drops a branch only when its other side is
 * reached from nowhere else, so the level must be the first test for level 0 to cost nothing.
 */
static __always_inline bool pid_visible(__u32 pid)
{
	if (__builtin_expect(pidns_level != 0, 0)) {
		asm volatile("" : "+r"(pid));
		return pid != 0;
	}
	return true;
}

#endif
