/* SPDX-License-Identifier: MIT */
/* Running a BPF iterator program once (user/probe/bpf_iter.c), inside the probe layer. */
#ifndef ATFTRACE_BPF_ITER_H
#define ATFTRACE_BPF_ITER_H

#include <stddef.h>

struct bpf_program;

/**
 * bpf_iter_run - attach the loaded iterator program @prog, read it to its end (which runs it
 * over every task, or every link), and detach. With @out its output is kept in *@out
 * (malloc'ed, *@len bytes); without, it is read and dropped. 0 or a negative errno.
 */
int bpf_iter_run(struct bpf_program *prog, char **out, size_t *len);

#endif
