// SPDX-License-Identifier: MIT
/*
 * The target's modules while it runs (include/record_modules.h: rm_modules_watch). Hooks of the
 * recorder (user/record/record_watch.c) call in here with the process held:
 *   - at each exec, the new program is read again: the globs without MODULE apply to it (every
 *     function when there is no -f), each -f MODULE is looked up as its loader will find it
 *     (DT_NEEDED, RPATH/RUNPATH, LD_LIBRARY_PATH of its own environment, ld.so.cache), and its
 *     dynamic loader gets the debug-state hook;
 *   - when ld.so changed its list of modules, a -f MODULE not loaded so far is attached if it is
 *     now mapped (dlopen, a Python extension, a plugin).
 * Each file is attached once per session (uprobes sit on the inode; the links filter by
 * process), whatever the number of processes or images that map it.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc.h"
#include "record_modules.h"
#include "recorder.h"
#include "trampoline.h"

/* PT_INTERP of the program @exe, canonical, or NULL (static, or not ELF). */
static char *interpreter_of(const char *exe)
{
	char *interp = NULL;
	size_t n, size;
	Elf *elf;
	int fd = open(exe, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const char *raw = elf ? elf_rawfile(elf, &size) : NULL;

	for (size_t i = 0; raw && !elf_getphdrnum(elf, &n) && i < n && !interp; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP ||
		    ph.p_offset >= size || ph.p_filesz > size - ph.p_offset || !ph.p_filesz ||
		    raw[ph.p_offset + ph.p_filesz - 1] != '\0')
			continue;
		interp = realpath(raw + ph.p_offset, NULL);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return interp;
}

/* The debug-state hook on the dynamic loader of @exe, once per loader. */
static void hook_loader(struct rm_modules *mods, const char *exe)
{
	char *ldso = interpreter_of(exe), **n;
	int err;

	if (!ldso)
		return;
	for (size_t i = 0; i < mods->nldso; i++)
		if (!strcmp(mods->ldso[i], ldso)) {
			free(ldso);
			return;
		}
	err = probes__attach_dl_hook(mods->probes, ldso, mods->link_pid);
	if (err < 0) {
		fprintf(stderr, "atftrace record: %s: no hook on _dl_debug_state (%s): libraries it "
			"maps later (dlopen) are not traced\n", ldso, strerror(-err));
		free(ldso);
		return;
	}
	n = realloc(mods->ldso, (mods->nldso + 1) * sizeof(*n));
	if (!n) {
		free(ldso);
		return;
	}
	mods->ldso = n;
	mods->ldso[mods->nldso++] = ldso;
	if (mods->verbose)
		fprintf(stderr, "atftrace record: debug-state hook on %s\n", ldso);
}

static bool is_attached(const struct rm_modules *mods, const char *path)
{
	for (size_t i = 0; i < mods->n; i++)
		if (rm_same_file(mods->m[i]->path, path))
			return true;
	return false;
}

/* Is @pid the process with entry trampolines? */
static bool tramp_target(const struct rm_modules *mods, pid_t pid)
{
	return mods->tramp && pid == tramp_process__pid(mods->tramp);
}

/* Does a library process @pid maps now get entry trampolines? Only the target's, and only while
 * the links are for it alone: a child that mapped the library by itself would run its own,
 * unpatched copy, where the functions moved to trampolines have no probe. */
static bool tramps_for(const struct rm_modules *mods, pid_t pid)
{
	return tramp_target(mods, pid) && mods->link_pid;
}

/* Hold the target at each change of ld.so's list while one of its libraries has trampolines:
 * one it unloads and loads again is patched again before it runs. */
static void hold_for_trampolines(struct rm_modules *mods)
{
	for (size_t i = 0; mods->probes && mods->tramp && i < mods->n; i++)
		if (tramp_process__wants(mods->tramp, mods->m[i]) &&
		    !(mods->exe_path && rm_same_file(mods->m[i]->path, mods->exe_path))) {
			probes__set_holds(mods->probes, true, true);
			return;
		}
}

/* @m's probes: through entry trampolines in the held target, or plain. The number attached. */
static int attach_probes(struct rm_modules *mods, struct sym_module *m, pid_t pid)
{
	struct tramp_opts o = { .link_pid = mods->link_pid, .verbose = mods->verbose };
	size_t ntramp = 0;
	int n;

	if (!tramps_for(mods, pid))
		return probes__attach_module(mods->probes, m, mods->link_pid);
	n = tramp_process__attach_module(mods->tramp, mods->probes, m, &o, &ntramp);
	if (tramp_process__wants(mods->tramp, m))
		hold_for_trampolines(mods);     /* patched, or to be once ld.so maps it */
	return n;
}

/* Read, select, attach and list one module found while recording. True when it is traced. */
static bool attach_live(struct rm_modules *mods, const char *path, const char *const *globs,
			size_t nglobs, pid_t pid, bool main_exe)
{
	size_t before = mods->n;
	struct sym_module *m;
	int n;

	if (is_attached(mods, path))
		return true;
	n = rm_module_add(mods, path, globs, nglobs, mods->spec, pid, main_exe, -1, true);
	if (n == 2 && rm_pending_add(mods, path, globs, nglobs, "the process") == 0)
		probes__set_holds(mods->probes, true, true);    /* its ifuncs: once it is loaded */
	if (n != 0 || mods->n == before)
		return false;
	m = mods->m[mods->n - 1];
	if (mods->on_module)
		mods->on_module(mods->on_module_ctx, m);
	n = attach_probes(mods, m, pid);
	if (n < 0) {
		fprintf(stderr, "atftrace record: %s: cannot attach probes: %s\n", path, strerror(-n));
		return false;
	}
	mods->attached += (size_t)n;
	if (recorder__add_module(mods->rec, m) < 0)
		fprintf(stderr, "atftrace record: %s: out of memory listing it in the manifests\n", path);
	fprintf(stderr, "atftrace record: process %d runs %s: %d function%s attached\n", (int)pid,
		path, n, n == 1 ? "" : "s");
	return true;
}

static struct rm_pending *pending_of(struct rm_modules *mods, const char *name)
{
	for (size_t i = 0; i < mods->npending; i++)
		if (!strcmp(mods->pending[i].name, name))
			return &mods->pending[i];
	return NULL;
}

/* Each -f MODULE of the spec once, with all its globs: @fn(mods, name, globs, n, arg). */
static void each_named(struct rm_modules *mods, void (*fn)(struct rm_modules *, const char *,
			const char *const *, size_t, void *), void *arg)
{
	const struct rm_spec *spec = mods->spec;
	const char **globs = calloc(spec->nfuncs + 1, sizeof(*globs));

	for (size_t i = 0; globs && i < spec->nfuncs; i++) {
		int len = rm_split(spec->funcs[i]);
		size_t ng = 0;
		bool earlier = false;
		char *name;

		if (len < 0)
			continue;
		for (size_t j = 0; j < i && !earlier; j++)
			earlier = rm_split(spec->funcs[j]) == len && !strncmp(spec->funcs[j], spec->funcs[i], (size_t)len);
		if (earlier || !(name = strndup(spec->funcs[i], (size_t)len)))
			continue;
		for (size_t j = i; j < spec->nfuncs; j++)
			if (rm_split(spec->funcs[j]) == len && !strncmp(spec->funcs[j], name, (size_t)len))
				globs[ng++] = spec->funcs[j] + len + 1;
		fn(mods, name, globs, ng, arg);
		free(name);
	}
	free(globs);
}

struct exec_ctx {
	pid_t pid;
	const char *exe;
	const char *ld_library_path;
	bool new_pending;
};

static void exec_named(struct rm_modules *mods, const char *name, const char *const *globs,
		       size_t nglobs, void *arg)
{
	struct exec_ctx *x = arg;
	struct rm_pending *pd = pending_of(mods, name);
	char *path = strchr(name, '/') ? strdup(name)
		     : sym_resolve_needed(x->exe, name, x->ld_library_path);

	if (path && attach_live(mods, path, globs, nglobs, x->pid, false)) {
		if (pd)
			pd->loaded = true;
	} else if (!path && !pd && rm_pending_add(mods, name, globs, nglobs, x->exe) == 0) {
		x->new_pending = true;
	}
	free(path);
}

static void on_exec(void *ctx, pid_t pid)
{
	struct rm_modules *mods = ctx;
	struct exec_ctx x = { .pid = pid };
	char *exe = proc_exe_path(pid), *llp = proc_environ_get(pid, "LD_LIBRARY_PATH");

	if (!exe)
		return;
	/* the new program's unwinder (its own copy, or the libraries it will load): hooked
	 * before its functions are */
	rm_unwinders_of_program(mods, mods->probes, exe, llp, mods->link_pid);
	x.exe = exe;
	x.ld_library_path = llp;
	/* the launched program's first image was read before it started: not twice */
	bool first = mods->launched && !mods->first_exec_done && rm_same_file(exe, mods->exe_path);

	mods->first_exec_done = true;
	if ((mods->main_all || mods->nmain) && !first)
		attach_live(mods, exe, mods->main_globs, mods->nmain, pid, true);
	each_named(mods, exec_named, &x);
	hook_loader(mods, exe);
	if (x.new_pending)
		probes__set_holds(mods->probes, true, true);
	free(exe);
	free(llp);
}

/* Is the mapped file @path the module -f named @name (a path, a library name or a glob)? */
static bool names(const char *name, const char *path)
{
	const char *base = strrchr(path, '/');

	if (strchr(name, '/'))
		return rm_same_file(name, path);
	return sym_lib_name_matches(path, name) || !fnmatch(name, base ? base + 1 : path, 0);
}

static void on_mapped(void *ctx, pid_t pid, const char *path, uint64_t start, uint64_t end,
		      bool held)
{
	struct rm_modules *mods = ctx;
	size_t before = mods->n;

	/* a library that brings the unwinder (libgcc_s, libstdc++): hooked before it runs */
	rm_unwinder_check(mods, mods->probes, path, mods->link_pid);
	for (size_t i = 0; i < mods->npending; i++) {
		struct rm_pending *pd = &mods->pending[i];

		if (pd->loaded || !names(pd->name, path))
			continue;
		pd->loaded = attach_live(mods, path, pd->globs, pd->nglobs, pid, false);
	}
	/* call sites in what it maps now, and its calls into the traced modules */
	if (mods->on_mapped)
		mods->on_mapped(mods, pid, path, mods->on_mapped_ctx);
	/* a library with trampolines mapped anew (dlclose, then dlopen): its jmps went with the
	 * old text, so it is patched again before the target runs on; or one attached at an exec
	 * before ld.so mapped it, patched now that it is (its plain probes counted until then) */
	for (size_t i = 0; tramp_target(mods, pid) && i < before; i++) {
		struct sym_module *m = mods->m[i];
		size_t ntramp = 0;
		struct tramp_opts o = { .link_pid = mods->link_pid, .verbose = mods->verbose,
					.held = held };
		int n;

		if (!tramp_process__wants(mods->tramp, m) || !rm_same_file(m->path, path))
			continue;
		n = tramp_process__attach_module(mods->tramp, mods->probes, m, &o, &ntramp);
		if (n < 0)
			fprintf(stderr, "atftrace record: %s: cannot attach probes again: %s\n", path,
				strerror(-n));
		else if (n && mods->verbose)
			fprintf(stderr, "atftrace record: process %d mapped %s: %d function%s "
				"attached anew, %zu through trampolines\n", (int)pid, path, n,
				n == 1 ? "" : "s", ntramp);
	}
}

void rm_modules_on_mapped(struct rm_modules *mods, rm_mapped_fn fn, void *ctx)
{
	mods->on_mapped = fn;
	mods->on_mapped_ctx = ctx;
}

void rm_modules_trampolines(struct rm_modules *mods, struct tramp_process *tp)
{
	mods->tramp = tp;
	hold_for_trampolines(mods);
}

int rm_modules_watch(struct rm_modules *mods, struct probes *p, struct recorder *rec,
		     pid_t target, pid_t link_pid)
{
	char *exe;
	int err;

	mods->probes = p;
	mods->rec = rec;
	mods->link_pid = link_pid;
	err = recorder__on_exec(rec, on_exec, mods);
	if (!err)
		err = recorder__on_module_mapped(rec, on_mapped, mods);
	if (err)
		return err;
	exe = mods->launched ? strdup(mods->exe_path) : proc_exe_path(target);
	if (exe)
		hook_loader(mods, exe);
	free(exe);
	/* held at each exec and each change of ld.so's list: a library mapped then (a -f module,
	 * the unwinder) is attached before any of its code runs */
	probes__set_holds(p, true, mods->npending > 0 || mods->unwind_hooks);
	return 0;
}

void rm_modules_report_end(const struct rm_modules *mods, uint64_t events, uint64_t lost,
			   const char *reason)
{
	size_t unloaded = 0;

	for (size_t i = 0; i < mods->npending; i++) {
		if (mods->pending[i].loaded)
			continue;
		unloaded++;
		fprintf(stderr, "atftrace record: -f %s:%s...: the target never loaded %s\n",
			mods->pending[i].name, mods->pending[i].nglobs ? mods->pending[i].globs[0] : "",
			mods->pending[i].name);
	}
	/* an empty session says why; it is not an error (exit status 0) */
	if (events)
		return;
	if (!mods->attached)
		fprintf(stderr, "atftrace record: warning: the session is empty: no function was "
			"attached (%s)\n", unloaded ? "the -f modules were never loaded"
			: "nothing the -f globs name was found in the programs the target ran");
	else if (lost)
		fprintf(stderr, "atftrace record: warning: the session is empty: every event was lost\n");
	else
		fprintf(stderr, "atftrace record: warning: the session is empty: none of the %zu "
			"attached function%s was called before the session ended (%s)\n", mods->attached,
			mods->attached == 1 ? "" : "s", reason);
}
