/* SPDX-License-Identifier: MIT */
/* Which modules and functions `atftrace record` probes (user/record/record_modules.c); private to record. */
#ifndef ATFTRACE_RECORD_MODULES_H
#define ATFTRACE_RECORD_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probes.h"
#include "symbols.h"

/* The -f and -x arguments as given. */
struct rm_spec {
	char **funcs;               /* "[MODULE:]GLOB" */
	size_t nfuncs;
	char **excludes;
	size_t nexcludes;
	bool allow_missing;         /* --allow-missing: a -f glob that names nothing is no error */
};

int rm_spec_add(struct rm_spec *s, const char *arg, bool exclude);
void rm_spec_free(struct rm_spec *s);

/**
 * rm_split - split "[MODULE:]GLOB" at the first ':' that is not part of a C++ "::".
 * Returns the length of MODULE (the glob starts after the ':'), or -1 when there is none.
 */
int rm_split(const char *arg);

struct rm_modules;

/**
 * rm_match_ids - append to *@ids the function ids of the traced functions "[MODULE:]GLOB" @spec
 * names, in every module of @mods (MODULE, when given, is matched against the module's path or
 * its base name; GLOB against the name or the demangled name). Returns how many matched, or
 * -ENOMEM. Used by --detail-on and the record-time filters (-F, -N, -T).
 */
int rm_match_ids(const struct rm_modules *mods, const char *spec, uint64_t **ids, size_t *n);

/* A -f MODULE:GLOB whose MODULE the target has not loaded yet (dlopen later, or a miss). */
struct rm_pending {
	char *name;
	const char **globs;         /* into the rm_spec */
	size_t nglobs;
	bool loaded;                /* attached once the target mapped it */
};

struct recorder;
struct tramp_process;

/* A file, by device and inode (however the processes name it). */
struct rm_file_id {
	dev_t dev;
	ino_t ino;
};

struct rm_modules {
	char *exe_path;             /* main executable: the command as exec will find it, or /proc/PID/exe */
	struct sym_module **m;      /* the main executable first when it is traced */
	size_t n;
	char *cxx_path;             /* libstdc++ of a container's -p target or of -a, or NULL */
	bool unwind_hooks;          /* the C++ unwind hooks are loaded (probe_opts.unwind_hooks) */
	pid_t pid;                  /* the -p target (not a container's), else 0 */
	struct rm_file_id *asked;   /* files asked for the unwinder (user/record/record_unwinders.c) */
	size_t nasked;
	bool unwind_failed;         /* an unwinder's hooks could not be attached (one line said so) */
	size_t unwinders_hooked;    /* files whose unwinder got the hooks */
	size_t selected;            /* functions selected over all modules */
	size_t attached;            /* functions attached over all modules */
	bool verbose;
	/* files of a containerised process, open while probes attach (open_path) */
	int *fds;
	size_t nfds;
	/* what is looked for again at each exec and mapping (user/record/record_live.c) */
	const struct rm_spec *spec;
	const char **main_globs;    /* the globs without MODULE (into the spec) */
	size_t nmain;
	bool main_all;              /* no -f: every function of each program */
	bool launched;
	bool check_names;           /* while rm_modules_open runs: refuse a -f glob that names nothing */
	bool first_exec_done;       /* the launched command's own exec was seen */
	struct rm_pending *pending;
	size_t npending;
	struct probes *probes;      /* set by rm_modules_watch() */
	struct recorder *rec;
	pid_t link_pid;
	char **ldso;                /* dynamic loaders whose debug-state hook is attached */
	size_t nldso;
	struct tramp_process *tramp; /* the target's entry trampolines, or NULL (rm_modules_trampolines) */
	/* run when a traced process maps a file, after its probes (rm_modules_on_mapped) */
	void (*on_mapped)(struct rm_modules *mods, pid_t pid, const char *path, void *ctx);
	void *on_mapped_ctx;
	/* called with each module found while recording, before its probes attach, or NULL
	 * (typed arguments: user/record/recorder_args.c) */
	void (*on_module)(void *ctx, const struct sym_module *m);
	void *on_module_ctx;
};

/**
 * rm_modules_open - resolve every module named by @spec (main executable of @cmd or of @pid),
 * read its symbols, select functions and report those that cannot be probed. Prints one clear
 * error line and returns a negative error when nothing can be traced.
 * With neither @cmd nor @pid (record -a) there is no main executable: every -f must name its
 * MODULE, resolved on the host. A @pid in another root (a container) has its files opened
 * through container_open_file() (user/proc/container.c), never by a host path.
 */
int rm_modules_open(struct rm_modules *mods, const struct rm_spec *spec, pid_t pid,
		    const char *cmd, bool verbose);

/**
 * rm_modules_attach - attach the C++ unwind hooks, then every module's functions (in that order:
 * no traced frame may exist before the hooks); errors are printed.
 */
int rm_modules_attach(struct rm_modules *mods, struct probes *p, pid_t pid);

/** rm_modules_attach_hooks - only the C++ unwind hooks (modules attached another way). */
void rm_modules_attach_hooks(struct rm_modules *mods, struct probes *p, pid_t pid);

/**
 * rm_unwinder_check - the C++ unwind hooks on the file @path if it holds the unwinder
 * (user/record/record_unwinders.c); each file is asked once per session. Call it before
 * anything of @path can run with traced frames pending (a process held, or not yet traced).
 */
void rm_unwinder_check(struct rm_modules *mods, struct probes *p, const char *path,
		       pid_t link_pid);

/**
 * rm_unwinders_of_program - rm_unwinder_check on the program @exe and on the libgcc_s and
 * libstdc++ its DT_NEEDED tree resolves to (with @ld_library_path), before it starts.
 */
void rm_unwinders_of_program(struct rm_modules *mods, struct probes *p, const char *exe,
			     const char *ld_library_path, pid_t link_pid);

/** rm_unwinders_mapped - rm_unwinder_check on every executable file @pid maps now. */
void rm_unwinders_mapped(struct rm_modules *mods, struct probes *p, pid_t pid, pid_t link_pid);

void rm_modules_free(struct rm_modules *mods);

/**
 * rm_module_add - read the symbols of @path, select @globs (the main executable's when
 * @main_exe), resolve ifuncs in @pid, report what cannot be probed and add it to @mods.
 * @fd: the file already open safely (a container's) or -1. With @optional, a module where
 * nothing matches is one note and returns 1 instead of an error. Returns 2, adding nothing,
 * for a library the target has not loaded yet whose ifuncs named by @globs can only be read
 * once it has: the caller waits for its mapping (rm_pending_add with its path).
 */
int rm_module_add(struct rm_modules *mods, const char *path, const char *const *globs,
		  size_t nglobs, const struct rm_spec *spec, pid_t pid, bool main_exe, int fd,
		  bool optional);

/** rm_pending_add - wait for @name to be mapped (says so in one line naming @target). */
int rm_pending_add(struct rm_modules *mods, const char *name, const char *const *globs,
		   size_t nglobs, const char *target);

/** rm_same_file - do @a and @b name the same file (symlinks resolved)? */
bool rm_same_file(const char *a, const char *b);

/**
 * rm_modules_watch - from now on, follow the target's modules while it runs (record_live.c): at
 * each exec the new program's modules and the -f globs are resolved again, and a library named
 * by -f that was not loaded is attached when ld.so maps it; the process is held (stopped) while
 * that happens. @target: the launched or attached process (its interpreter gets the hook).
 */
int rm_modules_watch(struct rm_modules *mods, struct probes *p, struct recorder *rec,
		     pid_t target, pid_t link_pid);

/**
 * rm_modules_trampolines - the target's modules got entry trampolines (@tp, include/trampoline.h):
 * a library it maps later, or maps again after unloading it, gets them too while it is held,
 * unless the links follow forks (a child that maps it by itself would run its unpatched code).
 * Holds the target at each change of ld.so's list while one of its libraries has them.
 */
void rm_modules_trampolines(struct rm_modules *mods, struct tramp_process *tp);

/* What rm_modules_on_mapped() runs: @pid mapped @path (its probes are attached). */
typedef void (*rm_mapped_fn)(struct rm_modules *mods, pid_t pid, const char *path, void *ctx);

/**
 * rm_modules_on_mapped - run @fn(@ctx) each time a traced process maps a file, once its probes
 * are attached and before it runs on (record --call-sites redirects the new module's calls
 * there). One hook; NULL: none.
 */
void rm_modules_on_mapped(struct rm_modules *mods, rm_mapped_fn fn, void *ctx);

/**
 * rm_modules_report_end - at the end of a session of @events events (@lost lost), ended by
 * @reason: one line for each -f module the target never loaded, and, when the session is
 * empty, a warning that says why.
 */
void rm_modules_report_end(const struct rm_modules *mods, uint64_t events, uint64_t lost,
			   const char *reason);

#endif
