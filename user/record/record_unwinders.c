// SPDX-License-Identifier: MIT
/*
 * The C++ unwind hooks (include/probes.h: probes__attach_unwinder) on the unwinder a traced
 * process actually runs, wherever it comes from: libgcc_s and libstdc++ (as DT_NEEDED of the
 * program or of any library, or through dlopen), or a static copy of the unwinder inside the
 * program. Every executable file a traced process maps is asked once per session whether it
 * defines the unwinder's entry points; the hooks are uprobe_multi links on the file, so one
 * attach covers every traced process that maps it (the BPF programs filter by tgid).
 *
 * When: before anything of the file can run in a process with traced frames. For -p, the
 * files the process maps already, before any function probe (rm_modules_attach_hooks). For a
 * program about to start (the launched command before it runs, a program at its exec hold):
 * the program itself (a static unwinder) and the unwinder libraries its DT_NEEDED tree
 * resolves to, as ld.so will find them, so they are hooked before ld.so maps them. Whatever
 * else maps one (dlopen, a library found elsewhere) is hooked while the process is held at
 * ld.so's _dl_debug_state, which it calls once a library is mapped and before any of its code
 * runs (user/record/record_watch.c; record_live.c calls in here first at each hold).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "proc.h"
#include "record_modules.h"
#include "symbols.h"

/* Was the file @path asked already? Remembers it (by device and inode) if not. */
static bool unwinder_asked(struct rm_modules *mods, const char *path)
{
	struct rm_file_id *n;
	struct stat st;

	if (stat(path, &st) < 0)
		return true;            /* gone: nothing to attach to */
	for (size_t i = 0; i < mods->nasked; i++)
		if (mods->asked[i].dev == st.st_dev && mods->asked[i].ino == st.st_ino)
			return true;
	n = realloc(mods->asked, (mods->nasked + 1) * sizeof(*n));
	if (!n)
		return false;           /* asked again next time: attaching twice only costs a link */
	mods->asked = n;
	mods->asked[mods->nasked++] = (struct rm_file_id){ st.st_dev, st.st_ino };
	return false;
}

void rm_unwinder_check(struct rm_modules *mods, struct probes *p, const char *path,
		       pid_t link_pid)
{
	int n;

	if (!mods->unwind_hooks || !p || unwinder_asked(mods, path))
		return;
	n = probes__attach_unwinder(p, path, link_pid);
	if (n < 0 && n != -EOPNOTSUPP) {
		mods->unwind_failed = true;     /* --call-sites then leaves the process alone */
		fprintf(stderr, "atftrace record: %s: cannot hook the C++ unwinder (%s): an exception "
			"thrown through a traced function will terminate the program\n", path,
			strerror(-n));
	} else if (n > 0) {
		mods->unwinders_hooked++;
		if (mods->verbose)
			fprintf(stderr, "atftrace record: C++ unwind hooks on %s (%d entry point%s)\n",
				path, n, n == 1 ? "" : "s");
	}
}

void rm_unwinders_of_program(struct rm_modules *mods, struct probes *p, const char *exe,
			     const char *ld_library_path, pid_t link_pid)
{
	static const char *const libs[] = { "libgcc_s.so.1", "libstdc++.so.6" };

	rm_unwinder_check(mods, p, exe, link_pid);
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		char *path = sym_resolve_needed(exe, libs[i], ld_library_path);

		if (path)
			rm_unwinder_check(mods, p, path, link_pid);
		free(path);
	}
}

void rm_unwinders_mapped(struct rm_modules *mods, struct probes *p, pid_t pid, pid_t link_pid)
{
	struct proc_mapping *maps;
	size_t n;

	if (proc_maps(pid, &maps, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (maps[i].exec && maps[i].path[0] == '/' && !strstr(maps[i].path, " (deleted)"))
			rm_unwinder_check(mods, p, maps[i].path, link_pid);
	proc_maps_free(maps, n);
}
