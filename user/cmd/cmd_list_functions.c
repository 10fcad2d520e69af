// SPDX-License-Identifier: MIT
/*
 * atftrace list-functions (-p PID | BINARY) [-f [MODULE:]GLOB]... [-x GLOB]... [--selected]
 *
 * Prints, for the main executable (and every module named as MODULE in -f), the module's path
 * and build id (and the separate debug file its names came from, if any), then one line per
 * function symbol: address, probe file offset, where its name came from (dynsym, symtab,
 * build-id, debuglink, debug-dir, debuginfod), size, the instruction at the probe site, and
 * whether record would probe it or why not (an ifunc resolved to its implementation shows
 * "-> ADDRESS"); a stripped module without a debug file gets one line on stderr; then a summary
 * with counts per reason. Module and glob rules are those of `atftrace record`: globs without
 * MODULE apply to the main executable; MODULE is a path or a library name resolved through
 * /proc/PID/maps (-p) or as BINARY's dynamic loader will find it (else the host's library
 * path, for a library it would dlopen); -x applies everywhere.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd_common.h"
#include "commands.h"
#include "container.h"
#include "symbols.h"
#include "textfmt.h"
#include "trampoline.h"

#define NSKIP (SYM_SKIP_ENTRY + 1)
#define WHO "atftrace list-functions"

struct lf_args {
	pid_t pid;
	const char *binary;
	const char **funcs;
	size_t nfuncs;
	const char **excludes;
	size_t nexcludes;
	bool selected_only;
};

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "list the functions of running process PID", 0 },
	{ "function", 'f', "[MODULE:]GLOB", 0, "select functions matching GLOB (repeatable)", 0 },
	{ "exclude", 'x', "GLOB", 0, "exclude functions matching GLOB (repeatable)", 0 },
	{ "selected", 's', NULL, 0, "print only the functions record would probe", 0 },
	{ "debug-dir", 1000, "DIR", 0, "also look for separate debug files under DIR (repeatable)", 0 },
	{ 0 },
};

static int push(const char ***arr, size_t *n, const char *s)
{
	const char **na = realloc(*arr, (*n + 1) * sizeof(*na));

	if (!na)
		return ENOMEM;
	na[(*n)++] = s;
	*arr = na;
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct lf_args *a = state->input;

	switch (key) {
	case 'p':
		if (!cmd_parse_pid(arg, &a->pid))
			argp_error(state, "-p %s: not a process id", arg);
		return 0;
	case 'f':
		return push(&a->funcs, &a->nfuncs, arg);
	case 'x':
		return push(&a->excludes, &a->nexcludes, arg);
	case 's':
		a->selected_only = true;
		return 0;
	case 1000:
		if (sym_debug_dir_add(arg) < 0)
			argp_failure(state, 1, ENOMEM, "--debug-dir");
		return 0;
	case ARGP_KEY_ARG:
		if (a->binary)
			argp_error(state, "%s: only one BINARY", arg);
		a->binary = arg;
		return 0;
	case ARGP_KEY_END:
		if (!a->binary == !a->pid)
			argp_error(state, "give either -p PID or BINARY");
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

/* Length of MODULE in "MODULE:GLOB" (a single ':'; C++ "::" is part of the glob), or -1. */
static int module_len(const char *arg)
{
	for (const char *c = arg; (c = strchr(c, ':'));) {
		if (c[1] == ':') {
			c += 2;
			continue;
		}
		return c == arg ? -1 : (int)(c - arg);
	}
	return -1;
}

/* The main executable: /proc/PID/exe, or BINARY (looked up in PATH when it has no '/'). */
static char *main_executable(const struct lf_args *a)
{
	char buf[PATH_MAX], link[64];
	const char *path_env;
	ssize_t n;

	if (a->pid) {
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)a->pid);
		n = readlink(link, buf, sizeof(buf) - 1);
		if (n <= 0)
			return NULL;
		buf[n] = '\0';
		return strdup(buf);
	}
	if (strchr(a->binary, '/') || !(path_env = getenv("PATH")))
		return strdup(a->binary);
	for (const char *dir = path_env; *dir;) {
		size_t len = strcspn(dir, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? dir : ".", a->binary);
		if (access(buf, X_OK) == 0)
			return strdup(buf);
		dir += len + (dir[len] == ':');
	}
	return strdup(a->binary);
}

/*
 * How record enters a selected function: "trampoline", or "probe:REASON" when it keeps the
 * plain probe (REASON "nop5": already the fast kind). Decided from the file's bytes; record
 * can still fall back at run time (a thread inside the bytes, no room near the module).
 */
static const char *entry_str(const struct sym_func *f)
{
	static char buf[32];

	if (!f->selected || f->tramp == TRAMP_UNSET)
		return "-";
	if (f->tramp == TRAMP_OK)
		return "trampoline";
	snprintf(buf, sizeof(buf), "probe:%s", tramp_reason_str(f->tramp));
	return buf;
}

static void print_module(struct sym_module *m, bool selected_only, size_t *counts,
			 size_t *nselected, size_t *nunmatched)
{
	size_t ntramp = 0;

	if (tramp_check_module(m) < 0)
		fprintf(stderr, WHO ": %s: cannot read its code to check trampolines\n", m->path);
	printf("module %s build-id %s %s module-id 0x%08x functions %zu", textfmt_show(m->path),
	       m->build_id ? m->build_id : "none", m->pie ? "pie" : "non-pie", m->module_id,
	       m->nfuncs);
	if (m->debug_path)
		printf(" debug-file %s (%s)", textfmt_show(m->debug_path), sym_origin_str(m->debug_origin));
	printf("\n");
	/* the columns of the lines below; ENTRY: how record enters it (--trampolines) */
	printf("  %-18s %-10s %-10s %8s %-20s %-16s %-11s %s\n", "ADDRESS", "PROBE-OFF", "ORIGIN", "SIZE",
	       "INSN", "ENTRY", "STATUS", "FUNCTION");
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];
		const char *status = f->selected ? "selected" : f->skip ? sym_skip_str(f->skip)
							       : "unmatched";
		char insn[32];

		ntramp += f->selected && f->tramp == TRAMP_OK;
		if (f->selected)
			(*nselected)++;
		else if (f->skip)
			counts[f->skip < NSKIP ? f->skip : 0]++;
		else
			(*nunmatched)++;
		if (selected_only && !f->selected)
			continue;
		snprintf(insn, sizeof(insn), "%s%s", f->endbr64 ? "endbr64+" : "",
			 f->probe_offset || f->skip == SYM_OK ? sym_insn_str(f->insn) : "-");
		printf("  0x%016llx 0x%08llx %-10s %8llu %-20s %-16s %-11s %s", (unsigned long long)f->addr,
		       (unsigned long long)f->probe_offset, sym_origin_str(f->origin),
		       (unsigned long long)f->size, insn, entry_str(f), status,
		       textfmt_show(f->demangled ? f->demangled : f->name));
		if (f->ifunc_impl)
			printf(" -> 0x%llx", (unsigned long long)f->ifunc_impl);
		printf("\n");
	}
	printf("trampolines: %zu %s would be entered through one\n", ntramp, textfmt_plural(ntramp, "function", "functions"));
}

/*
 * Open one module and select @globs in it. @fd: the file already open safely (a container's,
 * from container_open_file(), closed here), -1 to open @path, or a negative errno already reported.
 */
static int list_module(const char *path, int fd, bool main_exe, const char **globs, size_t nglobs,
		       const struct lf_args *a, size_t *counts, size_t *nsel, size_t *nunm)
{
	struct sym_module *m = NULL;
	int err = fd < -1 ? fd : sym_module__open(&m, path, fd);

	if (fd >= 0)
		close(fd);
	if (err < 0)
		return err;     /* sym_module__open has said why, in one line */
	sym_module__select(m, globs, nglobs, a->excludes, a->nexcludes);
	/* ifuncs: the implementation this process (or -p PID) runs */
	sym_module__resolve_ifuncs(m, globs, nglobs, a->excludes, a->nexcludes, a->pid, WHO, NULL);
	sym_module__report_stripped(m, WHO);
	if (main_exe)           /* _start: never probed, as record says */
		sym_module__skip_entry(m, m->open_path ? m->open_path : path);
	print_module(m, a->selected_only, counts, nsel, nunm);
	sym_module__free(m);
	return 0;
}

int cmd_list_functions(int argc, char **argv)
{
	static const struct argp argp = { options, parse_opt, "(-p PID | BINARY)",
		"Print every function symbol of the traced modules: address, probe file offset, size, "
		"the instruction at the probe site, how record --trampolines would enter it, and "
		"whether record would probe it (selected) or why not.", NULL, NULL, NULL };
	struct lf_args a = { 0 };
	size_t counts[NSKIP] = { 0 }, nsel = 0, nunm = 0;
	const char **globs = NULL;
	bool *done = NULL;
	char *exe = NULL;
	bool contained;
	size_t nglobs = 0;
	int err = -ENOMEM;

	/* argp names the program after argv[0]: make its messages read "atftrace list-functions". */
	char *args[argc + 1];

	memcpy(args, argv, sizeof(args[0]) * (size_t)argc);
	args[0] = (char *)"atftrace list-functions";
	args[argc] = NULL;
	if (argp_parse(&argp, argc, args, 0, NULL, &a))
		return 2;
	globs = calloc(a.nfuncs + 1, sizeof(*globs));
	done = calloc(a.nfuncs + 1, sizeof(*done));
	exe = main_executable(&a);
	if (!globs || !done || !exe) {
		if (!exe && a.pid)
			fprintf(stderr, "atftrace list-functions: -p %d: cannot read /proc/%d/exe\n",
				(int)a.pid, (int)a.pid);
		err = -ENOENT;
		goto cleanup;
	}
	/* The main executable: globs without MODULE, or everything when there is no -f. */
	for (size_t i = 0; i < a.nfuncs; i++)
		if (module_len(a.funcs[i]) < 0) {
			globs[nglobs++] = a.funcs[i];
			done[i] = true;
		}
	/* a container's files are read inside its root, never by a host path (record_system.c) */
	contained = a.pid > 0 && container_other_root(a.pid);
	/* and so are the debug files and libraries they name (user/sym/sym_root.c) */
	if (contained && (err = sym_root_enter(a.pid)) < 0) {
		fprintf(stderr, "atftrace list-functions: -p %d: cannot open its root: %s\n",
			(int)a.pid, strerror(-err));
		goto cleanup;
	}
	if (nglobs || !a.nfuncs) {
		int fd = contained ? container_open_file(a.pid, NULL, NULL, WHO) : -1;

		err = list_module(exe, fd, true, globs, nglobs, &a, counts, &nsel, &nunm);
		if (err)
			goto cleanup;
	}
	/* Every other module, with all of its globs. */
	for (size_t i = 0; i < a.nfuncs; i++) {
		int len = module_len(a.funcs[i]);
		char *name, *path;

		if (done[i])
			continue;
		nglobs = 0;
		for (size_t j = i; j < a.nfuncs; j++) {
			if (done[j] || module_len(a.funcs[j]) != len || strncmp(a.funcs[j], a.funcs[i], len))
				continue;
			globs[nglobs++] = a.funcs[j] + len + 1;
			done[j] = true;
		}
		name = strndup(a.funcs[i], (size_t)len);
		/* as record finds it: mapped (-p), or as BINARY's loader will, else on the host */
		path = !name ? NULL : strchr(name, '/') ? strdup(name)
		       : a.pid ? sym_resolve_library(a.pid, name)
		       : sym_resolve_needed(exe, name, getenv("LD_LIBRARY_PATH"));
		if (name && !path && !a.pid)
			path = sym_resolve_library(0, name);
		if (!path) {
			fprintf(stderr, "atftrace list-functions: %s: not found %s\n", name ? name : "?",
				a.pid ? "in the process's mappings" : "on the library path");
			free(name);
			err = -ENOENT;
			goto cleanup;
		}
		err = list_module(path, contained ? container_open_file(a.pid, name, NULL, WHO) : -1, false,
				  globs, nglobs, &a, counts, &nsel, &nunm);
		free(name);
		free(path);
		if (err)
			goto cleanup;
	}
	printf("summary: %zu selected, %zu unmatched", nsel, nunm);
	for (int s = 1; s < NSKIP; s++)
		printf(", %zu %s", counts[s], sym_skip_str((enum sym_skip)s));
	printf("\n");
	err = 0;
cleanup:
	free(globs);
	free(done);
	free(exe);
	free(a.funcs);
	free(a.excludes);
	sym_debug_dirs_free();
	sym_root_leave();
	return err ? 1 : 0;
}
