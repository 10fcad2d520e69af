// SPDX-License-Identifier: MIT
/*
 * System-wide sessions (record -a) and containers: the target filters (--cgroup, --container,
 * --comm, --pid-filter). A containerised process's files are opened by container_open_file()
 * (user/proc/container.c).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cgroup_filter.h"
#include "container.h"
#include "proc.h"
#include "record_system.h"

int rs_parse_pid_list(const char *arg, pid_t **pids, size_t *n)
{
	const char *c = arg;

	*pids = NULL;
	*n = 0;
	while (*c) {
		char *end;
		long v;
		pid_t *np;

		if (!isdigit((unsigned char)*c))
			goto bad;
		errno = 0;
		v = strtol(c, &end, 10);
		if (errno || v <= 0 || v > 0x3fffffff || (*end && *end != ','))
			goto bad;
		np = realloc(*pids, (*n + 1) * sizeof(*np));
		if (!np) {
			free(*pids);
			*pids = NULL;
			return -ENOMEM;
		}
		*pids = np;
		(*pids)[(*n)++] = (pid_t)v;
		c = *end ? end + 1 : end;
		if (*end && !*c)
			goto bad;       /* trailing comma */
	}
	if (*n)
		return 0;
bad:
	free(*pids);
	*pids = NULL;
	*n = 0;
	return -EINVAL;
}

int rs_target_configure(struct rs_target *t, struct probe_opts *po, bool verbose)
{
	struct cgroup_filter cf;
	const char *dir = t->cgroup;
	char why[512];
	int err;

	if (t->comm) {
		if (!t->comm[0] || strlen(t->comm) >= sizeof(po->comm)) {
			fprintf(stderr, "atftrace record: --comm %s: a process name has 1 to %zu "
				"characters\n", t->comm, sizeof(po->comm) - 1);
			return -EINVAL;
		}
		memcpy(po->comm, t->comm, strlen(t->comm) + 1);
	}
	if (t->container) {
		err = container_cgroup(t->container, t->cgroup_dir, sizeof(t->cgroup_dir));
		if (err < 0) {
			fprintf(stderr, "atftrace record: --container %s: %s\n", t->container,
				err == -EINVAL ? "not a container id (12 to 64 hex digits)"
				: err == -ENOENT ? "no running process belongs to it" : strerror(-err));
			return err;
		}
		dir = t->cgroup_dir;
	}
	if (!dir)
		return 0;
	err = cgroup_filter_resolve(dir, &cf, why, sizeof(why));
	if (err < 0) {
		fprintf(stderr, "atftrace record: %s %s: %s\n", t->container ? "--container" : "--cgroup",
			t->container ? t->container : dir, why);
		return err;
	}
	snprintf(t->cgroup_dir, sizeof(t->cgroup_dir), "%s", cf.path);
	po->cgroup_id = cf.id;
	po->cgroup_level = cf.level;
	po->cgroup_v1_ssid = cf.v1_ssid;
	if (verbose)
		fprintf(stderr, "atftrace record: cgroup %s: id %llu, %s %u\n", cf.path,
			(unsigned long long)cf.id, cf.v1_ssid ? "v1 controller" : "v2 level",
			cf.v1_ssid ? cf.v1_ssid - 1 : cf.level);
	return 0;
}

int rs_container_pid(struct rs_target *t, pid_t nspid, pid_t *host_pid)
{
	int err = container_host_pid(t->cgroup_dir, nspid, host_pid);

	if (err < 0)
		fprintf(stderr, "atftrace record: -p %d: no process of container %s has that pid in "
			"its namespace\n", (int)nspid, t->container);
	return err;
}

/* ---- options ------------------------------------------------------------------------------ */

enum { OPT_COMM = 1100, OPT_PID_FILTER, OPT_CGROUP, OPT_CONTAINER };

static const struct argp_option system_options[] = {
	{ "all-processes", 'a', NULL, 0,
	  "System-wide: trace the -f MODULE:GLOB functions in every process that runs MODULE, "
	  "including processes started later (each in its own pid_<PID>/, indexed in session.json)", 0 },
	{ "comm", OPT_COMM, "NAME", 0, "With -a: only processes named NAME (/proc/PID/comm)", 0 },
	{ "pid-filter", OPT_PID_FILTER, "PID[,PID...]", 0, "With -a: only these processes", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0,
	  "With -a: only tasks in the cgroup directory PATH or below it (v1 controller or v2)", 0 },
	{ "container", OPT_CONTAINER, "ID", 0,
	  "With -a: only the container ID (docker, containerd, cri-o, podman; 12+ hex digits); "
	  "with -p PID: PID is a pid inside that container", 0 },
	{ 0 }
};

static error_t system_parse(int key, char *arg, struct argp_state *state)
{
	struct rs_target *t = state->input;

	switch (key) {
	case 'a':
		t->all = true;
		break;
	case OPT_COMM:
		t->comm = arg;
		break;
	case OPT_PID_FILTER: {
		pid_t *pids;
		size_t n;
		int err = rs_parse_pid_list(arg, &pids, &n);

		if (err == -ENOMEM)
			argp_failure(state, 1, ENOMEM, "--pid-filter");
		if (err)
			argp_error(state, "--pid-filter: '%s' is not a list of process ids (PID[,PID...])", arg);
		pid_t *all = realloc(t->pid_filter, (t->npid_filter + n) * sizeof(*all));
		if (!all)
			argp_failure(state, 1, ENOMEM, "--pid-filter");
		memcpy(all + t->npid_filter, pids, n * sizeof(*pids));
		t->pid_filter = all;
		t->npid_filter += n;
		free(pids);
		break;
	}
	case OPT_CGROUP:
		t->cgroup = arg;
		break;
	case OPT_CONTAINER:
		t->container = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp system_argp = { .options = system_options, .parser = system_parse };

void rs_target_free(struct rs_target *t)
{
	free(t->pid_filter);
	t->pid_filter = NULL;
	t->npid_filter = 0;
}
