/* SPDX-License-Identifier: MIT */
/*
 * --cgroup PATH / --container ID -> what the BPF cgroup filter needs (user/proc/cgroup_filter.c):
 * the cgroup's kernfs id, and either its level in the v2 tree or the v1 controller whose
 * hierarchy it belongs to. See bpf/filter.bpf.h for how the filter uses them.
 */
#ifndef ATFTRACE_CGROUP_FILTER_H
#define ATFTRACE_CGROUP_FILTER_H

#include <stddef.h>
#include <stdint.h>

struct cgroup_filter {
	char path[4096];            /* the cgroup directory, canonical */
	uint64_t id;                /* kernfs node id (cgroup_id_of_path) */
	uint32_t level;             /* v2: depth below the hierarchy's root (root = 0) */
	uint32_t v1_ssid;           /* v1: subsystem id + 1 of the controller used; 0 = v2 */
	char controller[32];        /* v1: that controller's name */
};

/**
 * cgroup_filter_resolve - describe the cgroup directory @path for the BPF filter
 * Decides v1 or v2 from the filesystem (statfs magic), finds its mount in /proc/self/mountinfo
 * and, for v1, a controller of that hierarchy in /proc/cgroups. On failure returns a negative
 * errno and writes one line saying why into @why.
 */
int cgroup_filter_resolve(const char *path, struct cgroup_filter *f, char *why, size_t whylen);

/* One cgroup or cgroup2 mount from /proc/self/mountinfo. Pointers go into the parsed line. */
struct cgroup_mount {
	const char *root;           /* field 4: the mounted subtree ("/" normally) */
	const char *mount_point;    /* field 5 */
	const char *fstype;         /* "cgroup" or "cgroup2" */
	const char *super_options;  /* v1: "rw,cpu,cpuacct" or "rw,name=systemd" */
};

/**
 * cgroup_mountinfo_parse_line - split one mountinfo line in place. Pure: unit-tested.
 * Returns 1 for a cgroup or cgroup2 mount (fields filled), 0 for any other line.
 */
int cgroup_mountinfo_parse_line(char *line, struct cgroup_mount *m);

/**
 * cgroup_path_level - depth of @path below mount point @mount_point, plus the depth of the
 * mount's own @root ("/" = 0). -1 when @path is not under @mount_point. Pure: unit-tested.
 */
int cgroup_path_level(const char *root, const char *mount_point, const char *path);

/**
 * cgroup_v1_ssid_of - subsystem id of the first controller in @super_options that
 * @proc_cgroups (the text of /proc/cgroups, whose lines are in subsystem id order) lists.
 * Copies its name to @name. -1 when none (a name=-only hierarchy). Pure: unit-tested.
 */
int cgroup_v1_ssid_of(const char *proc_cgroups, const char *super_options, char *name,
		      size_t namelen);

#endif
