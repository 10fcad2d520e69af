// SPDX-License-Identifier: MIT
/*
 * include/pidns.h: where this process's pid namespace is. The host's namespace has a fixed
 * inode number (the kernel's PROC_PID_INIT_INO); any other is found by bpf/pidns_self.bpf.c,
 * iterating over this thread alone. Found once per process and kept: the recorder opens more
 * than one BPF object that needs it, and a process never changes its own pid namespace.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "pidns.h"
#include "pidns_self.h"
#include "pidns_self.skel.h"

#define PROC_PID_INIT_INO 0xEFFFFFFCu

/* Run the iterator on thread @tid (of this pid namespace): one record about it. */
static int visit(pid_t tid, struct rec_pidns_self *rec)
{
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info linfo = {};
	struct pidns_self_bpf *skel;
	struct bpf_link *link = NULL;
	ssize_t n = 0;
	int fd = -1, err;

	skel = pidns_self_bpf__open_and_load();     /* nothing to configure */
	if (!skel)
		return -errno;
	linfo.task.tid = (uint32_t)tid;
	opts.link_info = &linfo;
	opts.link_info_len = sizeof(linfo);
	link = bpf_program__attach_iter(skel->progs.atf_pidns_self, &opts);
	if (!link) {
		err = -errno;
		goto cleanup;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	do
		n = read(fd, rec, sizeof(*rec));
	while (n < 0 && errno == EINTR);
	err = n < 0 ? -errno : n != (ssize_t)sizeof(*rec) ? -ESRCH : 0;
cleanup:
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	pidns_self_bpf__destroy(skel);
	return err;
}

/* This thread's namespace level, checked against its inode @inum. */
static int read_level(uint32_t inum, uint32_t *level)
{
	struct rec_pidns_self rec;
	int err = visit(gettid(), &rec);

	if (!err && rec.inum != inum)
		err = -ESRCH;
	if (!err)
		*level = rec.level;
	return err;
}

int pidns_host_pid(pid_t pid, pid_t *host)
{
	struct rec_pidns_self rec;
	uint32_t level, inum;
	int err = pidns_self(&level, &inum);

	if (err)
		return err;
	if (level == 0) {
		*host = pid;
		return 0;
	}
	err = visit(pid, &rec);
	if (!err)
		*host = (pid_t)rec.host_tgid;
	return err;
}

int pidns_self(volatile uint32_t *level, volatile uint32_t *inum)
{
	static uint32_t found_level, found_inum;
	struct stat ns;
	int err;

	if (!found_inum) {
		if (stat("/proc/self/ns/pid", &ns)) {
			err = -errno;
			fprintf(stderr, "atftrace: /proc/self/ns/pid: %s\n", strerror(-err));
			return err;
		}
		found_level = 0;
		if (ns.st_ino != PROC_PID_INIT_INO) {
			err = read_level((uint32_t)ns.st_ino, &found_level);
			if (err) {
				fprintf(stderr, "atftrace: cannot find the level of this pid namespace: "
					"%s\n", strerror(-err));
				return err;
			}
		}
		found_inum = (uint32_t)ns.st_ino;
	}
	*level = found_level;
	*inum = found_inum;
	return 0;
}
