/* SPDX-License-Identifier: MIT */
/*
 * Inside the probe layer's attach code: what probes.c (open, configure, load, function links),
 * probes_hooks.c (the C++ unwind and ld.so hooks, the registration guard) and probes_maps.c
 * (what the recorder reads and switches in the running probes) share, and their links
 * (probes_links.c).
 */
#ifndef ATFTRACE_PROBES_INT_H
#define ATFTRACE_PROBES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <bpf/libbpf.h>
#include "probes.h"

struct link_list {
	struct bpf_link **v;
	size_t n, cap;
};

/* Session / multi links, as file descriptors. */
struct link_fds {
	int *fd;                    /* -1 once closed */
	const void **owner;         /* what each was attached for (a module, a trampoline file) */
	size_t n, cap;
};

struct probes {
	struct atftrace_bpf *skel;
	enum probe_link_kind kind;
	struct link_fds function_fds;   /* traced functions (session / multi) */
	struct link_fds hook_fds;       /* the C++ unwind and ld.so hooks (multi) */
	struct link_list functions; /* perf uprobes and uretprobes of traced functions */
	struct link_list hooks;     /* the hooks, as perf uprobes (kernels without multi links) */
	struct atftrace_bpf *unwind;    /* the C++ unwind hooks' programs, loaded when first needed */
	bool unwind_wanted;         /* probe_opts.unwind_hooks */
	bool guard;                 /* the registration guard is loaded */
	bool call_sites;            /* the call-site stub programs are loaded */
	bool guard_tp;              /* on the syscalls' own tracepoints (not the raw ones) */
	bool tp_ids_read;           /* the guard's tracepoint ids were read once */
	bool tp_ids_trusted;        /* no modules, or their unloads are seen (module_free) */
	bool verbose;               /* probe_opts.verbose */
	bool handback, handback_tp; /* the call-site hand-back notice is loaded; on the exit tps */
	uint64_t hb_seq, hb_overflow;   /* its counters as last polled (probes_handback.c) */
};

/*
 * Can libbpf open the bpf and perf_event_open syscall tracepoints (tracefs gives their ids), and
 * is that wanted (not with ATFTRACE_GUARD=raw, which the tests use)? Else the raw sys_enter and
 * sys_exit tracepoints serve the registration guard and the hand-back notice (x86_64).
 */
bool probes_syscall_tracepoints(void);

/* Load the hand-back notice's programs with the call-site ones (user/probe/probes_handback.c). */
void probes_handback_autoload(struct probes *p);

/* ---- probes_links.c ---- */
/* One session / uprobe_multi link of @prog_fd over @n offsets of @path, kept in @to for @owner. */
int probes_attach_multi_link(struct link_fds *to, const void *owner, int prog_fd, uint32_t type,
			     const char *path, const uint64_t *offsets, const uint64_t *cookies,
			     uint32_t n, uint32_t flags, pid_t pid);
/* One perf uprobe (or uretprobe, @ret) of @prog at @offset, cookie @cookie, kept in @to. */
int probes_attach_perf(struct link_list *to, struct bpf_program *prog, const char *path,
		       uint64_t offset, uint64_t cookie, bool ret, pid_t pid);
/* Multi/session links detach all their probes in one close; each link of @l, then the list. */
void probes_close_link_fds(struct link_fds *l);
void probes_destroy_links(struct link_list *l);

#endif
