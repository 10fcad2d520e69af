// SPDX-License-Identifier: MIT
/*
 * The probe layer's links (probes_int.h): session / uprobe_multi links kept as file descriptors
 * with what each was attached for, perf uprobes as libbpf links; made one at a time, closed
 * all together. Below probes.c, probes_hooks.c and probes_guard.c, which attach through it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "probes_int.h"
#include "uprobe_multi.h"

static int keep_link_fd(struct link_fds *l, int fd, const void *owner)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		int *n = realloc(l->fd, cap * sizeof(*n));
		const void **o;

		if (!n)
			return -ENOMEM;
		l->fd = n;
		o = realloc(l->owner, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		l->owner = o;
		l->cap = cap;
	}
	l->owner[l->n] = owner;
	l->fd[l->n++] = fd;
	return 0;
}

static void *close_fd(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

/*
 * Closing a uprobe link waits for RCU grace periods (tens of ms each, whatever its number of
 * probes), so the links are closed from one thread each, at once: their waits overlap. A
 * thread that cannot be made closes its link here.
 */
void probes_close_link_fds(struct link_fds *l)
{
	pthread_t *t = calloc(l->n ? l->n : 1, sizeof(*t));
	bool *started = calloc(l->n ? l->n : 1, sizeof(*started));

	for (size_t i = 0; i < l->n; i++) {
		if (l->fd[i] < 0)
			continue;
		if (t && started && l->n > 1 &&
		    !pthread_create(&t[i], NULL, close_fd, (void *)(intptr_t)l->fd[i]))
			started[i] = true;
		else
			close(l->fd[i]);
	}
	for (size_t i = 0; started && i < l->n; i++)
		if (started[i])
			pthread_join(t[i], NULL);
	free(t);
	free(started);
	free(l->fd);
	free(l->owner);
	*l = (struct link_fds){ 0 };
}

static int keep_link(struct link_list *to, struct bpf_link *l)
{
	if (to->n == to->cap) {
		size_t cap = to->cap ? to->cap * 2 : 64;
		struct bpf_link **n = realloc(to->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		to->v = n;
		to->cap = cap;
	}
	to->v[to->n++] = l;
	return 0;
}

void probes_destroy_links(struct link_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		bpf_link__destroy(l->v[i]);
	free(l->v);
	*l = (struct link_list){ 0 };
}

int probes_attach_multi_link(struct link_fds *to, const void *owner, int prog_fd, uint32_t type,
			      const char *path, const uint64_t *offsets, const uint64_t *cookies,
			     uint32_t n, uint32_t flags, pid_t pid)
{
	int fd = uprobe_multi_link_create(prog_fd, type, path, offsets, cookies, n, flags, pid);
	int err;

	if (fd < 0)
		return fd;
	err = keep_link_fd(to, fd, owner);
	if (err)
		close(fd);
	return err;
}

int probes_attach_perf(struct link_list *to, struct bpf_program *prog, const char *path,
		       uint64_t offset, uint64_t cookie, bool ret, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie, .retprobe = ret);
	/* libbpf: -1 = every process, 0 = ourselves; ours: 0 = every process. */
	struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid ? pid : -1, path,
							      (size_t)offset, &o);
	int err;

	if (!l)
		return -errno;
	err = keep_link(to, l);
	if (err)
		bpf_link__destroy(l);
	return err;
}
