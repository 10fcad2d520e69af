/* SPDX-License-Identifier: MIT */
/*
 * Containers, from the tracer's side (user/proc/container.c): cgroup ids for the BPF filter,
 * container ids to cgroups, pid namespaces, and opening paths inside a container's root
 * (include/symbols.h: container_open_file opens its executable and libraries).
 */
#ifndef ATFTRACE_CONTAINER_H
#define ATFTRACE_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/**
 * cgroup_id_of_path - the kernel id of the cgroup directory @path, as bpf_get_current_cgroup_id()
 * (v2) or the v1 hierarchy's kernfs node id reports it. Returns 0 or -errno.
 */
int cgroup_id_of_path(const char *path, uint64_t *id);

/**
 * cgroup_line_matches - does one /proc/PID/cgroup line name container @id?
 * Accepts docker (/docker/<id>, docker-<id>.scope), containerd (cri-containerd-<id>.scope,
 * /<ns>/<id>), cri-o (crio-<id>.scope) and podman (libpod-<id>.scope) forms; @id may be a
 * prefix of at least 12 hex digits. On a match, stores the line's cgroup path (after the
 * second ':') in @path. Pure: unit-tested.
 */
int cgroup_line_matches(const char *line, const char *id, char *path, size_t pathlen);

/**
 * container_cgroup - find the cgroup directory of container @id by scanning /proc/[pid]/cgroup.
 * Prefers the v2 (unified) hierarchy. Returns 0 with the absolute directory in @dir, -ENOENT
 * when no process of that container is running, -EINVAL for a malformed id.
 */
int container_cgroup(const char *id, char *dir, size_t dirlen);

/**
 * proc_nspid - the pid of @pid as seen in its innermost pid namespace (/proc/PID/status NSpid),
 * or @pid itself when it is not in a child namespace. Returns 0 or -errno.
 */
int proc_nspid(pid_t pid, pid_t *nspid);

/**
 * container_host_pid - host pid of the process whose innermost-namespace pid is @nspid among
 * the processes of cgroup directory @cgdir (cgroup.procs). Returns 0 or -ESRCH.
 */
int container_host_pid(const char *cgdir, pid_t nspid, pid_t *host_pid);

/**
 * open_in_root - open @path as process @pid sees it, resolved inside /proc/PID/root with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): absolute symlinks and ".." can never
 * escape the container's root. Returns an fd, or -errno (-EXDEV/-ELOOP for escapes refused).
 */
int open_in_root(pid_t pid, const char *path, int flags);

/** openat_in_root - the same, inside the directory open as @rootfd. */
int openat_in_root(int rootfd, const char *path, int flags);

/** container_other_root - does process @pid have another root directory than ours (a container)? */
bool container_other_root(pid_t pid);

#endif
