/* SPDX-License-Identifier: MIT */
/*
 * What `record -a` traces (user/record/record_system.c): the target filters (--cgroup,
 * --container, --comm, --pid-filter) of a system-wide session, resolved before the probes load.
 */
#ifndef ATFTRACE_RECORD_SYSTEM_H
#define ATFTRACE_RECORD_SYSTEM_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probes.h"

/* What `record -a` traces: the filters its options set, resolved before the probes load. */
struct rs_target {
	bool all;                   /* -a: every process that runs a probed module */
	const char *cgroup;         /* --cgroup PATH */
	const char *container;      /* --container ID */
	const char *comm;           /* --comm NAME */
	pid_t *pid_filter;          /* --pid-filter PID[,PID...] */
	size_t npid_filter;
	char cgroup_dir[4096];      /* resolved cgroup directory (--cgroup or --container) */
};

/*
 * system_argp - the options above (-a, --comm, --pid-filter, --cgroup, --container), an argp
 * child of record whose input is a struct rs_target. Rules across options (with -p, a command,
 * -f) are checked by record's own parser at ARGP_KEY_END. Free with rs_target_free().
 */
extern const struct argp system_argp;
void rs_target_free(struct rs_target *t);

/**
 * rs_target_configure - resolve --cgroup/--container into the BPF cgroup filter and --comm into
 * the comm filter of @po. Prints one error line and returns a negative errno on failure.
 */
int rs_target_configure(struct rs_target *t, struct probe_opts *po, bool verbose);

/**
 * rs_container_pid - --container ID -p NSPID: the host pid of the process of that container
 * whose pid in the container's namespace is @nspid. Prints why on failure.
 */
int rs_container_pid(struct rs_target *t, pid_t nspid, pid_t *host_pid);

/** rs_parse_pid_list - "PID[,PID...]" into a malloc'd array. -EINVAL for anything else. */
int rs_parse_pid_list(const char *arg, pid_t **pids, size_t *n);

#endif
