/* SPDX-License-Identifier: MIT */
/* Which modules and functions `atftrace record` probes (user/record/record_modules.c); private to record. */
#ifndef ATFTRACE_RECORD_MODULES_H
#define ATFTRACE_RECORD_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "probes.h"
#include "symbols.h"

/* The -f and -x arguments as given. */
struct rm_spec {
	char **funcs;               /* "[MODULE:]GLOB" */
	size_t nfuncs;
	char **excludes;
	size_t nexcludes;
};

int rm_spec_add(struct rm_spec *s, const char *arg, bool exclude);
void rm_spec_free(struct rm_spec *s);

/**
 * rm_split - split "[MODULE:]GLOB" at the first ':' that is not part of a C++ "::".
 * Returns the length of MODULE (the glob starts after the ':'), or -1 when there is none.
 */
int rm_split(const char *arg);

struct rm_modules {
	char *exe_path;             /* main executable: the command as exec will find it, or /proc/PID/exe */
	struct sym_module **m;      /* the main executable first when it is traced */
	size_t n;
	char *cxx_path;             /* libstdc++ the target uses, or NULL */
	size_t selected;            /* functions selected over all modules */
	size_t attached;            /* functions attached over all modules */
	bool verbose;
	/* files of a containerised process, open while probes attach (open_path) */
	int *fds;
	size_t nfds;
};

/**
 * rm_modules_open - resolve every module named by @spec (main executable of @cmd or of @pid),
 * read its symbols, select functions and report those that cannot be probed. Prints one clear
 * error line and returns a negative error when nothing can be traced.
 * With neither @cmd nor @pid (record -a) there is no main executable: every -f must name its
 * MODULE, resolved on the host. A @pid in another root (a container) has its files opened
 * through container_open_file() (user/probe/container.c), never by a host path.
 */
int rm_modules_open(struct rm_modules *mods, const struct rm_spec *spec, pid_t pid,
		    const char *cmd, bool verbose);

/** rm_modules_attach - attach every module (and the C++ unwind hook); errors are printed. */
int rm_modules_attach(struct rm_modules *mods, struct probes *p, pid_t pid);

/** rm_modules_attach_hooks - only the C++ unwind hooks (modules attached another way). */
void rm_modules_attach_hooks(struct rm_modules *mods, struct probes *p, pid_t pid);

void rm_modules_free(struct rm_modules *mods);

#endif
