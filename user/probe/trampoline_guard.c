// SPDX-License-Identifier: MIT
/*
 * Entry trampolines and the rest of the world (include/trampoline.h): another tool's uprobe on
 * a patched function, and children forked from a patched process. The BPF half, and why, is in
 * bpf/reg_guard.bpf.h; the recorder calls these from user/record/record_tramp_guard.c.
 *
 * Another tool's uprobe. The registration guard stopped the process (and every child of it
 * with the same patched text; the recorder holds them, as it holds the C++ unwind stops, until
 * after its drain). Once the registering syscall is done, every function whose jmp is no
 * longer whole gets its own bytes back around the other tool's int3, written through
 * /proc/PID/mem while the process stays stopped. In the traced process the function then gets
 * a plain probe of ours; a child keeps what the session's links give it.
 *
 * Children. A child forked while the process is patched runs the same text: the same jmps and
 * trampolines, whose probe sites the kernel emulates (nothing to fix). BPF notes it
 * (bpf/fork_hold.bpf.h) and it joins the guarded processes; at the end its text is restored
 * like the parent's, as long as it still maps the module where the parent did (no exec since).
 * Functions that start with a 5-byte nop are probed where they are, and the kernel optimises
 * those sites into calls to a page the child does not have: a child forked after one was
 * optimised is stopped before its first instruction and gets the kernel's int3 back over
 * them (nop5_sites_fix), in any session, with or without trampolines.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "proc.h"
#include "trampoline_area.h"
#include "trampoline_int.h"

/* The plain probe for a function given back in the traced process itself. */
static void probe_given_back(struct tramp_process *tp, struct tramp_mod *tm, struct tramp_fn *t)
{
	struct sym_func *f = t->f;
	uint64_t cookie = (uint64_t)tm->m->module_id << 32 | f->symbol_index;
	int err;

	t->given_back = true;
	f->via_tramp = false;
	f->tramp = TRAMP_GIVEN_BACK;
	err = probes__attach_sites(tp->probes, tm->m, tramp_module_file(tm->m), &f->probe_offset,
				   &cookie, 1, tp->link_pid);
	if (err < 0)
		fprintf(stderr, "atftrace record: process %d: %s: another tool probed it; its "
			"trampoline is taken out, but our plain probe failed (%s): not traced from "
			"now on\n", (int)tp->pid, f->name, strerror(-err));
	else
		fprintf(stderr, "atftrace record: process %d: %s: another tool probed it; its "
			"trampoline is taken out and a plain probe traces it from now on\n",
			(int)tp->pid, f->name);
}

/*
 * check_one - process @pid (held by ptrace as @pt): every patched function whose jmp another
 * tool's breakpoint went over gets its own bytes back. @traced: it is the traced process
 * itself (plain probes for what it gives back). Returns how many were given back.
 */
static int check_one(struct tramp_process *tp, struct pt_target *pt, bool traced)
{
	int n = 0;

	for (size_t i = 0; i < tp->nmods; i++) {
		struct tramp_mod *tm = &tp->mods[i];

		for (size_t j = 0; j < tm->nfns; j++) {
			struct tramp_fn *t = &tm->fns[j];
			uint8_t now[TRAMP_JMP_LEN];

			if (pt_read(pt, t->patch_addr, now, sizeof(now)) ||
			    !memcmp(now, t->jmp, sizeof(now)) || tramp_fn_write_original(pt, t) <= 0)
				continue;
			n++;
			if (traced && !t->given_back)
				probe_given_back(tp, tm, t);
			else if (!traced)
				fprintf(stderr, "atftrace record: process %d (forked from %d): %s: another "
					"tool probed it; its trampoline is taken out\n", (int)pt->pid,
					(int)tp->pid, t->f->name);
		}
	}
	return n;
}

/* Is @pid still the process that started at @start? If not, stop guarding that pid. */
static bool same_process(struct tramp_process *tp, pid_t pid, uint64_t start)
{
	uint64_t now = 0;

	if (proc_alive(pid) && !proc_start_time(pid, &now) && now == start)
		return true;
	probes__guard_pid(tp->probes, pid, false);
	if (pid == tp->pid)
		tp->guarded = false;
	for (size_t i = 0; i < tp->nchildren; i++)
		if (tp->children[i].pid == pid)
			tp->children[i].guarded = false;
	return false;
}

size_t tramp_process__pids(const struct tramp_process *tp, pid_t *out, size_t cap)
{
	size_t n = 0;

	if (!tp)
		return 0;
	if (tp->guarded && n++ < cap)
		out[n - 1] = tp->pid;
	for (size_t i = 0; i < tp->nchildren; i++)
		if (tp->children[i].guarded && n++ < cap)
			out[n - 1] = tp->children[i].pid;
	return n;
}

/* Does @pid still map @tm's module where the traced process did (no exec since)? */
static bool maps_module_as_parent(pid_t pid, const struct tramp_mod *tm)
{
	struct ta_maps maps;
	struct stat st;
	bool same = false;

	if (!tm->nfns || stat(tramp_module_file(tm->m), &st) || ta_maps_read(pid, &maps) < 0)
		return false;
	same = ta_file_addr(&maps, st.st_dev, st.st_ino, tm->fns[0].f->probe_offset) ==
	       tm->fns[0].patch_addr;
	ta_maps_free(&maps);
	return same;
}

/* Does child @pid still map a patched module where the traced process did? */
static bool runs_patched_text(const struct tramp_process *tp, pid_t pid)
{
	for (size_t i = 0; i < tp->nmods; i++)
		if (maps_module_as_parent(pid, &tp->mods[i]))
			return true;
	return false;
}

/* check_one() on process @pid, held stopped by the caller, through /proc/PID/mem. */
static int check_held(struct tramp_process *tp, pid_t pid, uint64_t start)
{
	struct pt_target pt = { .pid = pid };
	char path[32];
	int n;

	if (!same_process(tp, pid, start))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	pt.mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (pt.mem_fd < 0)
		return 0;       /* gone meanwhile */
	/* a child that exec'd since has other code there: never written */
	n = 0;
	if (pid == tp->pid)
		n = check_one(tp, &pt, true);
	else if (runs_patched_text(tp, pid))
		n = check_one(tp, &pt, false);
	close(pt.mem_fd);
	return n;
}

int tramp_process__check(struct tramp_process *tp)
{
	int given = 0;

	if (!tp || tp->restored)
		return 0;       /* restored: nothing of ours is left to be written over */
	if (probes__guard_settle(tp->probes, 2000) < 0)
		fprintf(stderr, "atftrace record: another process's uprobe registration did not "
			"finish within 2 s; checking the trampolines now\n");
	given += check_held(tp, tp->pid, tp->start_ticks);
	for (size_t i = 0; i < tp->nchildren; i++)
		given += check_held(tp, tp->children[i].pid, tp->children[i].start_ticks);
	return given;
}

/* Remember @child among the processes with this patched text, and guard it. */
static void add_child(struct tramp_process *tp, pid_t child)
{
	struct tramp_child c = { .pid = child };
	int err;

	if (proc_start_time(child, &c.start_ticks))
		return;
	/*
	 * Forget the children that are gone or exec'd since (no patched text left), and their
	 * guard slots: a shell forks hundreds.
	 */
	size_t k = 0;

	for (size_t i = 0; i < tp->nchildren; i++) {
		struct tramp_child *o = &tp->children[i];

		if (!same_process(tp, o->pid, o->start_ticks))
			continue;
		if (!runs_patched_text(tp, o->pid)) {
			probes__guard_pid(tp->probes, o->pid, false);
			continue;
		}
		tp->children[k++] = *o;
	}
	tp->nchildren = k;
	if (tp->nchildren == tp->cap_children) {
		size_t cap = tp->cap_children ? 2 * tp->cap_children : 8;
		struct tramp_child *n = realloc(tp->children, cap * sizeof(*n));

		if (!n)
			return;
		tp->children = n;
		tp->cap_children = cap;
	}
	err = probes__guard_pid(tp->probes, child, true);
	c.guarded = !err;
	tp->children[tp->nchildren++] = c;
	if (err && !tp->children_unguarded) {
		tp->children_unguarded = true;
		fprintf(stderr, "atftrace record: process %d: its forked child %d is not guarded (%s): "
			"another tool's uprobe on a patched function would crash it\n",
			(int)tp->pid, (int)child, strerror(-err));
	}
}

/* Is @addr inside one of @maps' mappings? */
static bool mapped(const struct ta_maps *maps, uint64_t addr)
{
	for (size_t i = 0; i < maps->n; i++)
		if (addr >= maps->v[i].lo && addr < maps->v[i].hi)
			return true;
	return false;
}

int nop5_sites_fix(pid_t pid, const struct nop5_site *sites, size_t n, bool probed)
{
	/* the kernel's own int3 over the nop, or the nop itself */
	static const uint8_t int3_nop5[TRAMP_JMP_LEN] = { 0xcc, 0x1f, 0x44, 0x00, 0x00 };
	static const uint8_t nop5[TRAMP_JMP_LEN] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const uint8_t *put = probed ? int3_nop5 : nop5;
	struct pt_target pt = { .pid = pid };
	struct ta_maps maps;
	char path[32];
	int fixed = 0, err;

	if (!n)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	pt.mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (pt.mem_fd < 0)
		return errno == ENOENT ? 0 : -errno;
	err = ta_maps_read(pid, &maps);
	if (err < 0) {
		close(pt.mem_fd);
		return err == -ENOENT || err == -ESRCH ? 0 : err;   /* gone: nothing to fix */
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = ta_file_addr(&maps, sites[i].dev, sites[i].ino, sites[i].offset);
		uint8_t now[TRAMP_JMP_LEN];
		int32_t rel;

		/* the kernel's optimised site: `call [uprobes-trampoline]` */
		if (!addr || pt_read(&pt, addr, now, sizeof(now)) || now[0] != 0xe8)
			continue;
		memcpy(&rel, now + 1, sizeof(rel));
		/* a call into a page the process has works: left alone */
		if (mapped(&maps, addr + TRAMP_JMP_LEN + (uint64_t)(int64_t)rel))
			continue;
		fixed += !pt_write(&pt, addr, put, TRAMP_JMP_LEN);
	}
	ta_maps_free(&maps);
	close(pt.mem_fd);
	return fixed;
}

void tramp_process__add_child(struct tramp_process *tp, pid_t child)
{
	if (!tp || tp->restored)
		return;
	for (size_t i = 0; i < tp->nchildren; i++)
		if (tp->children[i].pid == child)
			return;
	add_child(tp, child);
}

void tramp_children_restore(struct tramp_process *tp)
{
	for (size_t i = 0; i < tp->nchildren; i++) {
		struct tramp_child *c = &tp->children[i];
		struct pt_target pt;

		/* unguarded first: a guard stop would cut into the ptrace stop below */
		probes__guard_pid(tp->probes, c->pid, false);
		c->guarded = false;
		if (!same_process(tp, c->pid, c->start_ticks) || pt_stop_all(&pt, c->pid, false))
			continue;
		for (size_t k = 0; k < tp->nmods; k++) {
			struct tramp_mod *tm = &tp->mods[k];

			if (!maps_module_as_parent(c->pid, tm))
				continue;
			for (size_t j = 0; j < tm->nfns; j++)
				tramp_fn_write_original(&pt, &tm->fns[j]);
		}
		pt_detach_all(&pt);
	}
}
