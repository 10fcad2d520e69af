// SPDX-License-Identifier: MIT
/* Running a BPF iterator program once (bpf_iter.h). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf_iter.h"

int bpf_iter_run(struct bpf_program *prog, char **out, size_t *len)
{
	char scratch[256], *buf = NULL;
	size_t cap = 0, used = 0;
	struct bpf_link *link;
	int fd, err = 0;

	if (out) {
		*out = NULL;
		*len = 0;
	}
	link = bpf_program__attach_iter(prog, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	for (;;) {
		ssize_t n;

		if (out && cap - used < 4096) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 16384);

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = out ? read(fd, buf + used, cap - used) : read(fd, scratch, sizeof(scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
cleanup:
	bpf_link__destroy(link);
	if (out && !err) {
		*out = buf;
		*len = used;
	} else {
		free(buf);
	}
	return err;
}
