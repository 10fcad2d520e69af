// SPDX-License-Identifier: MIT
/*
 * Module and function selection for `atftrace record`: -f [MODULE:]GLOB picks the module
 * (the main executable when MODULE is absent; a path, or a library name resolved through
 * /proc/PID/maps for -p or the library path for a launched command) and the functions in it;
 * -x GLOB excludes everywhere. Functions that match but cannot be probed are reported with
 * their reasons, never dropped silently.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc.h"
#include "record_modules.h"
#include "container.h"
#include "textfmt.h"

static int push_str(char ***arr, size_t *n, const char *s)
{
	char **na = realloc(*arr, (*n + 1) * sizeof(*na));

	if (!na)
		return -ENOMEM;
	*arr = na;
	if (!(na[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

int rm_spec_add(struct rm_spec *s, const char *arg, bool exclude)
{
	return exclude ? push_str(&s->excludes, &s->nexcludes, arg)
		       : push_str(&s->funcs, &s->nfuncs, arg);
}

void rm_spec_free(struct rm_spec *s)
{
	for (size_t i = 0; i < s->nfuncs; i++)
		free(s->funcs[i]);
	for (size_t i = 0; i < s->nexcludes; i++)
		free(s->excludes[i]);
	free(s->funcs);
	free(s->excludes);
	*s = (struct rm_spec){ 0 };
}

int rm_split(const char *arg)
{
	for (const char *c = arg; (c = strchr(c, ':')); ) {
		if (c[1] == ':') {      /* "::" belongs to a C++ name */
			c += 2;
			continue;
		}
		return c == arg ? -1 : (int)(c - arg);
	}
	return -1;
}

/* The entry point (_start) is never probed (sym_module__skip_entry); said so when asked for. */
static size_t deselect_entry_point(struct sym_module *m, const char *path, bool say)
{
	size_t n = sym_module__skip_entry(m, path);

	for (size_t i = 0; say && n && i < m->nfuncs; i++)
		if (m->funcs[i].skip == SYM_SKIP_ENTRY)
			fprintf(stderr, "atftrace record: %s: %s not probed: it is the program's entry point, "
				"which has no return address to probe\n", m->path, m->funcs[i].name);
	return n;
}

static bool func_matches(const struct sym_func *f, const char *const *globs, size_t n)
{
	if (!n)
		return true;
	for (size_t i = 0; i < n; i++)
		if (!fnmatch(globs[i], f->name, 0) || (f->demangled && !fnmatch(globs[i], f->demangled, 0)))
			return true;
	return false;
}

/* One line per module about matching functions that cannot be probed; names with -v. */
static void report_skips(const struct sym_module *m, const char *const *globs, size_t nglobs,
			 size_t selected, bool verbose)
{
	size_t counts[16] = { 0 }, total = 0;
	char line[512];
	int len;

	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];
		/* aliases are probed under another name; -x is what the user asked for */
		if (f->skip == SYM_OK || f->skip == SYM_SKIP_ALIAS || f->skip == SYM_SKIP_EXCLUDED ||
		    f->skip == SYM_SKIP_ENTRY ||     /* said by deselect_entry_point */
		    f->ifunc_impl || f->skip >= 16 || !func_matches(f, globs, nglobs))
			continue;
		counts[f->skip]++;
		total++;
		if (verbose)
			fprintf(stderr, "atftrace record: %s: not probed: %s (%s)\n", m->path,
				f->demangled ? f->demangled : f->name, sym_skip_str(f->skip));
	}
	if (verbose)
		fprintf(stderr, "atftrace record: %s: %zu %s selected\n", m->path, selected,
			textfmt_plural(selected, "function", "functions"));
	if (!total)
		return;
	len = snprintf(line, sizeof(line), "atftrace record: %s: %zu matching function%s cannot be "
		       "probed:", m->path, total, total == 1 ? "" : "s");
	for (int s = 0; s < 16 && len > 0 && (size_t)len < sizeof(line); s++)
		if (counts[s])
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %zu %s", counts[s],
					sym_skip_str((enum sym_skip)s));
	fprintf(stderr, "%s%s\n", line, verbose ? "" : " (-v lists them)");
}

bool rm_same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (!strcmp(a, b))
		return true;
	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

/* Keep @fd open until rm_modules_free(): the module's open_path names it. */
static int keep_fd(struct rm_modules *mods, int fd)
{
	int *nf = realloc(mods->fds, (mods->nfds + 1) * sizeof(*nf));

	if (!nf)
		return -ENOMEM;
	mods->fds = nf;
	mods->fds[mods->nfds++] = fd;
	return 0;
}

/*
 * A -f glob that names no function of its module at all is a misspelling, refused with the
 * closest names (a glob naming a function that cannot be probed is reported by report_skips).
 * --allow-missing lets it pass, e.g. for a wrapper that execs the program that has it.
 */
static int check_names(const struct rm_modules *mods, const struct sym_module *m, const char *const *globs,
		       size_t nglobs, bool main_exe)
{
	int err = 0;

	for (size_t g = 0; g < nglobs; g++) {
		const char *close[3];
		size_t n;

		if (sym_module__names_any(m, globs[g]))
			continue;
		n = sym_module__closest(m, globs[g], close, 3);
		fprintf(stderr, "atftrace record: -f %s: %s has no function of that name", globs[g], m->path);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "%s%s", i ? ", " : "; closest: ", close[i]);
		fprintf(stderr, "%s\n", main_exe && mods->launched
			? " (if it execs a program that has it, add --allow-missing)" : " (--allow-missing records anyway)");
		err = -ENOENT;
	}
	return err;
}

/*
 * Open @path (unless already open) and select @globs in it. @fd >= 0: the file, already open
 * safely (a container's); it is owned from here on, and the probes attach through its
 * /proc/self/fd link.
 */
int rm_module_add(struct rm_modules *mods, const char *path, const char *const *globs,
		      size_t nglobs, const struct rm_spec *spec, pid_t pid, bool main_exe, int fd,
		      bool optional)
{
	struct sym_module *m = NULL, **nm;
	size_t sel;
	int err;

	for (size_t i = 0; i < mods->n; i++)
		if (rm_same_file(mods->m[i]->path, path)) {
			fprintf(stderr, "atftrace record: %s is named twice; give all its -f globs with "
				"one spelling\n", path);
			if (fd >= 0)
				close(fd);
			return -EINVAL;
		}
	bool opened_here = fd < 0;

	/*
	 * A module a contained process maps later (exec, dlopen) is named as it sees it: opened in
	 * its root (sym_root.c), and attached through the fd, never by a host walk of its path.
	 */
	if (fd < 0 && sym_root_entered()) {
		fd = sym_root_open(path, SYM_MAX_FILE_SIZE);
		if (fd < 0) {
			fprintf(stderr, "atftrace record: %s: cannot open it inside the root of process "
				"%d: %s\n", path, (int)pid, strerror(-fd));
			return fd;
		}
	}
	if (fd >= 0 && keep_fd(mods, fd) < 0) {
		close(fd);
		return -ENOMEM;
	}
	err = sym_module__open(&m, path, fd);
	if (err < 0) {
		fprintf(stderr, "atftrace record: %s: cannot read symbols: %s\n", path, strerror(-err));
		return err;
	}
	if (fd >= 0 && asprintf(&m->open_path, "/proc/self/fd/%d", fd) < 0) {
		m->open_path = NULL;
		sym_module__free(m);
		return -ENOMEM;
	}
	if (pid > 0) {
		struct proc_mapping *maps;
		size_t nmaps;
		if (!proc_maps(pid, &maps, &nmaps)) {
			for (size_t i = 0; i < nmaps; i++)
				if (rm_same_file(maps[i].path, path))
					m->base = maps[i].start - maps[i].file_offset_at_start;
			proc_maps_free(maps, nmaps);
		}
	}
	sel = sym_module__select(m, globs, nglobs, (const char *const *)spec->excludes,
				 spec->nexcludes);
	/*
	 * An ifunc named by -f: the implementation the target runs (user/sym/ifunc.c). When it
	 * cannot be read yet and the target is about to load the library (a launched command, an
	 * exec), the library waits: its loader fills the GOT before any code of the program runs,
	 * and ld.so's debug-state hook attaches it then (user/record/record_live.c).
	 */
	bool can_wait = opened_here && !main_exe && (pid > 0 ? !m->base : mods->launched);
	size_t unread = 0;

	sel += sym_module__resolve_ifuncs(m, globs, nglobs, (const char *const *)spec->excludes,
					  spec->nexcludes, pid, can_wait ? NULL : "atftrace record",
					  &unread);
	if (can_wait && unread) {
		sym_module__free(m);
		return 2;
	}
	sym_module__report_stripped(m, "atftrace record");
	if (main_exe)
		sel -= deselect_entry_point(m, m->open_path ? m->open_path : path,
					    mods->verbose || nglobs);  /* asked for by name: say why */
	report_skips(m, globs, nglobs, sel, mods->verbose);
	if (mods->check_names && (err = check_names(mods, m, globs, nglobs, main_exe)) < 0) {
		sym_module__free(m);
		return err;
	}
	if (!sel) {
		fprintf(stderr, "atftrace record: %s: no probe-able function matches%s%s%s\n", path,
			nglobs ? " " : "", nglobs ? globs[0] : "",
			optional ? "; looked for again in each program it execs" : "");
		sym_module__free(m);
		return optional ? 1 : -ENOENT;
	}
	nm = realloc(mods->m, (mods->n + 1) * sizeof(*nm));
	if (!nm) {
		sym_module__free(m);
		return -ENOMEM;
	}
	mods->m = nm;
	mods->m[mods->n++] = m;
	mods->selected += sel;
	return 0;
}

/* A -f module not loaded yet: attached when the target maps it (user/record/record_live.c). */
int rm_pending_add(struct rm_modules *mods, const char *name, const char *const *globs,
		   size_t nglobs, const char *target)
{
	struct rm_pending *np, *pd;

	for (size_t i = 0; i < mods->npending; i++)
		if (!strcmp(mods->pending[i].name, name) && !mods->pending[i].loaded)
			return 0;       /* already waited for */
	np = realloc(mods->pending, (mods->npending + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	mods->pending = np;
	pd = &np[mods->npending];
	*pd = (struct rm_pending){ .name = strdup(name), .nglobs = nglobs };
	pd->globs = calloc(nglobs + 1, sizeof(*pd->globs));
	if (!pd->name || !pd->globs) {
		free(pd->name);
		free(pd->globs);
		return -ENOMEM;
	}
	memcpy(pd->globs, globs, nglobs * sizeof(*globs));
	mods->npending++;
	fprintf(stderr, "atftrace record: %s: not loaded by %s yet; attached when it maps it\n",
		name, target);
	return 0;
}

/* Does the file at @path start with "#!" (the kernel runs its interpreter instead)? */
static bool is_script(const char *path)
{
	char head[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool script = fd >= 0 && read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';

	if (fd >= 0)
		close(fd);
	return script;
}

static char *resolve_module(const char *name, pid_t pid)
{
	char *path = sym_resolve_library(pid > 0 ? pid : 0, name);

	if (!path)
		fprintf(stderr, "atftrace record: %s: not found %s\n", name,
			pid > 0 ? "in the process's mappings (/proc/PID/maps)" : "on the library path");
	return path;
}

int rm_modules_open(struct rm_modules *mods, const struct rm_spec *spec, pid_t pid,
		    const char *cmd, bool verbose)
{
	const char **globs = calloc(spec->nfuncs + 1, sizeof(*globs));
	bool *done = calloc(spec->nfuncs + 1, sizeof(*done));
	bool system_wide = !cmd && pid <= 0, contained = pid > 0 && container_other_root(pid);
	bool script = false;
	size_t nglobs = 0;
	int err = -ENOMEM, fd = -1;

	mods->verbose = verbose;
	if (!globs || !done)
		goto cleanup;
	/* debug files and libraries the container's files name: inside its root (sym_root.c) */
	if (contained) {
		int rerr = sym_root_enter(pid);

		if (rerr < 0) {
			fprintf(stderr, "atftrace record: -p %d: cannot open its root: %s\n",
				(int)pid, strerror(-rerr));
			err = rerr;
			goto cleanup;
		}
	}
	for (size_t i = 0; system_wide && i < spec->nfuncs; i++)
		if (rm_split(spec->funcs[i]) < 0) {
			fprintf(stderr, "atftrace record: -f %s: a system-wide session has no main "
				"executable; name the module: -f MODULE:GLOB\n", spec->funcs[i]);
			err = -EINVAL;
			goto cleanup;
		}
	if (!system_wide)
		mods->exe_path = cmd ? proc_find_in_path(cmd) : proc_exe_path(pid);
	if (mods->exe_path && mods->exe_path[0] != '/') {
		/* ./prog as typed would name nothing once read from another directory */
		char *abs = realpath(mods->exe_path, NULL);

		if (abs) {
			free(mods->exe_path);
			mods->exe_path = abs;
		}
	}
	mods->spec = spec;
	mods->launched = cmd != NULL;
	mods->check_names = !spec->allow_missing;
	script = cmd && mods->exe_path && is_script(mods->exe_path);
	if (!system_wide && !mods->exe_path) {
		err = -ENOENT;
		if (cmd)
			fprintf(stderr, "atftrace record: %s: command not found\n", cmd);
		else
			fprintf(stderr, "atftrace record: -p %d: cannot read /proc/%d/exe\n", (int)pid,
				(int)pid);
		goto cleanup;
	}
	/* the main executable: globs without a module, or all functions when there is no -f */
	for (size_t i = 0; i < spec->nfuncs; i++)
		if (rm_split(spec->funcs[i]) < 0) {
			globs[nglobs++] = spec->funcs[i];
			done[i] = true;
		}
	/* kept for each program the target execs (user/record/record_live.c) */
	mods->main_all = !spec->nfuncs;
	mods->nmain = nglobs;
	mods->main_globs = calloc(nglobs + 1, sizeof(*mods->main_globs));
	if (!mods->main_globs)
		goto cleanup;
	memcpy(mods->main_globs, globs, nglobs * sizeof(*globs));
	if (script)
		fprintf(stderr, "atftrace record: %s is a script: functions are looked for in the "
			"programs it runs\n", mods->exe_path);
	if (!system_wide && !script && (nglobs || !spec->nfuncs)) {
		/* a container's executable: the inode it runs, through /proc/PID/exe */
		if (contained && (fd = container_open_file(pid, NULL, NULL, "atftrace record")) < 0) {
			err = fd;
			goto cleanup;
		}
		/* a launched wrapper (env, sh -c) may match nothing: its program comes at exec */
		err = rm_module_add(mods, mods->exe_path, globs, nglobs, spec, pid, true, fd, cmd != NULL);
		if (err < 0)
			goto cleanup;
	}
	/* every other module, with all of its globs at once */
	for (size_t i = 0; i < spec->nfuncs; i++) {
		int len = rm_split(spec->funcs[i]);
		char *name, *path;

		if (done[i])
			continue;
		name = strndup(spec->funcs[i], (size_t)len);
		if (!name)
			goto cleanup;
		nglobs = 0;
		for (size_t j = i; j < spec->nfuncs; j++) {
			if (done[j] || rm_split(spec->funcs[j]) != len || strncmp(spec->funcs[j], name, (size_t)len))
				continue;
			globs[nglobs++] = spec->funcs[j] + len + 1;
			done[j] = true;
		}
		fd = -1;
		if (contained) {
			/* inside the container's root, never by a host path (user/record/record_system.c) */
			char *shown = NULL;

			fd = container_open_file(pid, name, &shown, "atftrace record");
			path = fd < 0 ? NULL : shown ? shown : strdup(name);
			if (fd >= 0 && !path)
				close(fd);
		} else if (strchr(name, '/')) {
			path = strdup(name);
		} else if (system_wide) {
			path = resolve_module(name, pid);
		} else {
			/* as the target's loader finds it: mapped (-p), or ld.so's search (launched) */
			path = pid > 0 ? sym_resolve_library(pid, name)
			       : script ? NULL : sym_resolve_needed(mods->exe_path, name, getenv("LD_LIBRARY_PATH"));
			if (!path) {
				err = rm_pending_add(mods, name, globs, nglobs, pid > 0 ? "the process" : cmd);
				free(name);
				if (err < 0)
					goto cleanup;
				continue;
			}
		}
		free(name);
		if (!path) {
			err = fd < -1 ? fd : -ENOENT;
			goto cleanup;
		}
		err = rm_module_add(mods, path, globs, nglobs, spec, pid,
				 system_wide || (contained ? !strcmp(path, mods->exe_path)
						 : rm_same_file(path, mods->exe_path)), fd, false);
		if (err == 2)   /* its ifuncs are read once the target has loaded it */
			err = rm_pending_add(mods, path, globs, nglobs, pid > 0 ? "the process" : cmd);
		free(path);
		if (err < 0)
			goto cleanup;
	}
	/*
	 * C++: the unwind hooks go on the unwinder the target maps, at attach (-p) and whenever it
	 * maps one later (user/record/record_unwinders.c). A container's files are not watched,
	 * and a system-wide session has no target: they get the hooks on the libstdc++ mapped in
	 * the container, or that a traced module needs.
	 */
	mods->unwind_hooks = !system_wide && !contained;
	mods->pid = !system_wide && !contained ? pid : 0;
	if (contained) {
		char *mapped = sym_resolve_library(pid, "libstdc++.so.6");  /* reads maps only */

		fd = mapped ? container_open_file(pid, "libstdc++.so.6", NULL, "atftrace record") : -1;
		free(mapped);
		if (fd >= 0 && (keep_fd(mods, fd) < 0 ||
				asprintf(&mods->cxx_path, "/proc/self/fd/%d", fd) < 0)) {
			mods->cxx_path = NULL;
			err = -ENOMEM;
			goto cleanup;
		}
	}
	for (size_t i = 0; system_wide && !mods->cxx_path && i < mods->n; i++)
		if (sym_elf_needs(mods->m[i]->path, "libstdc++"))
			mods->cxx_path = sym_resolve_library(0, "libstdc++.so.6");
	mods->unwind_hooks = mods->unwind_hooks || mods->cxx_path;
	err = 0;
cleanup:
	mods->check_names = false;     /* programs exec'd later may lack a glob's function */
	free(globs);
	free(done);
	if (err < 0)
		rm_modules_free(mods);
	return err;
}

int rm_modules_attach(struct rm_modules *mods, struct probes *p, pid_t pid)
{
	/*
	 * The unwind hooks first: a function probe puts the uretprobe trampoline in the return
	 * slot of every traced frame it enters, and a running C++ target (-p) that throws through
	 * such a frame before the hooks are there dies in std::terminate.
	 */
	rm_modules_attach_hooks(mods, p, pid);
	for (size_t i = 0; i < mods->n; i++) {
		int n = probes__attach_module(p, mods->m[i], pid);
		if (n == -ESRCH && pid > 0 && !proc_alive(pid))
			return 0;       /* the target exited meanwhile: the session ends as it does */
		if (n < 0) {
			fprintf(stderr, "atftrace record: %s: cannot attach probes: %s\n",
				mods->m[i]->path, strerror(-n));
			return n;
		}
		mods->attached += (size_t)n;
	}
	return 0;
}

void rm_modules_attach_hooks(struct rm_modules *mods, struct probes *p, pid_t pid)
{
	/* what a -p target maps; what a launched command will map once it starts (its exec is
	 * held too, but the hooks are best in place before the command runs at all) */
	if (mods->pid > 0)
		rm_unwinders_mapped(mods, p, mods->pid, pid);
	else if (mods->launched && mods->exe_path && !is_script(mods->exe_path))
		rm_unwinders_of_program(mods, p, mods->exe_path, getenv("LD_LIBRARY_PATH"), pid);
	if (mods->cxx_path) {
		int err = probes__attach_unwind_hooks(p, mods->cxx_path, pid);
		if (err < 0) {
			/* still correct, only later: frames close at the next traced call */
			fprintf(stderr, "atftrace record: %s: no catch hook (%s); frames a C++ exception "
				"unwinds close at the thread's next traced call\n", mods->cxx_path,
				strerror(-err));
		} else if (mods->verbose) {
			fprintf(stderr, "atftrace record: catch hook on %s\n", mods->cxx_path);
		}
	}
}

void rm_modules_free(struct rm_modules *mods)
{
	for (size_t i = 0; i < mods->n; i++)
		sym_module__free(mods->m[i]);
	free(mods->m);
	free(mods->exe_path);
	free(mods->cxx_path);
	for (size_t i = 0; i < mods->nfds; i++)
		close(mods->fds[i]);
	free(mods->fds);
	for (size_t i = 0; i < mods->npending; i++) {
		free(mods->pending[i].name);
		free(mods->pending[i].globs);
	}
	free(mods->pending);
	free(mods->main_globs);
	for (size_t i = 0; i < mods->nldso; i++)
		free(mods->ldso[i]);
	free(mods->ldso);
	sym_root_leave();
	free(mods->asked);
	*mods = (struct rm_modules){ .verbose = mods->verbose };
}

/* Does "[MODULE:]GLOB" @spec name function @f of @m? */
static bool spec_matches(const char *spec, const struct sym_module *m, const struct sym_func *f)
{
	int mlen = rm_split(spec);
	const char *glob = mlen >= 0 ? spec + mlen + 1 : spec;

	if (mlen >= 0) {
		char mod[4096];
		const char *base = strrchr(m->path, '/');

		if ((size_t)mlen >= sizeof(mod))
			return false;
		memcpy(mod, spec, (size_t)mlen);
		mod[mlen] = '\0';
		if (fnmatch(mod, m->path, 0) && fnmatch(mod, base ? base + 1 : m->path, 0))
			return false;
	}
	return !fnmatch(glob, f->name, 0) || (f->demangled && !fnmatch(glob, f->demangled, 0));
}

int rm_match_ids(const struct rm_modules *mods, const char *spec, uint64_t **ids, size_t *n)
{
	int found = 0;

	for (size_t i = 0; i < mods->n; i++) {
		const struct sym_module *m = mods->m[i];

		for (size_t k = 0; k < m->nfuncs; k++) {
			const struct sym_func *f = &m->funcs[k];
			uint64_t *v;

			if (!f->selected || f->skip != SYM_OK || !spec_matches(spec, m, f))
				continue;
			v = realloc(*ids, (*n + 1) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			*ids = v;
			v[(*n)++] = (uint64_t)m->module_id << 32 | f->symbol_index;
			found++;
		}
	}
	return found;
}
