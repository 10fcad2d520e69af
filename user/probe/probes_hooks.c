// SPDX-License-Identifier: MIT
/*
 * The probes that are not traced functions (include/probes.h): the C++ unwinder's entry points
 * (loaded on first use), ld.so's debug-state hook, the holds they may take, and the registration
 * guard's syscall tracepoints.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "args.h"
#include "atftrace.h"
#include "atftrace.skel.h"
#include "probes_int.h"
#include "container.h"
#include "pidns.h"
#include "symbols.h"
#include "uprobe_multi.h"

/*
 * The C++ unwind hooks' two programs, loaded on first use: about 18 ms of verifier time that a
 * session whose target never maps an unwinder does not pay. They are a second instance of the
 * same object whose maps are all the first one's (ring, filters, task storage, .bss with the
 * hold flags and counters; the frozen .rodata with this session's configuration): libbpf
 * neither creates nor fills a map given an fd, so both instances see one state.
 */
static int load_unwind(struct probes *p)
{
	struct atftrace_bpf *u;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	if (p->unwind)
		return 0;
	if (!p->unwind_wanted)
		return -EOPNOTSUPP;     /* probe_opts.unwind_hooks was false */
	u = atftrace_bpf__open();
	if (!u)
		return -errno;
	bpf_object__for_each_map(map, u->obj) {
		struct bpf_map *own = bpf_object__find_map_by_name(p->skel->obj, bpf_map__name(map));

		err = own ? bpf_map__reuse_fd(map, bpf_map__fd(own)) : -ENOENT;
		if (err)
			goto cleanup;
	}
	bpf_object__for_each_program(prog, u->obj)
		bpf_program__set_autoload(prog, prog == u->progs.atf_unwind_catch ||
						prog == u->progs.atf_unwind_raise);
	if (p->kind != PROBE_LINK_PERF) {
		bpf_program__set_expected_attach_type(u->progs.atf_unwind_catch, ATF_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(u->progs.atf_unwind_raise, ATF_BPF_TRACE_UPROBE_MULTI);
	}
	err = atftrace_bpf__load(u);
	if (err)
		goto cleanup;
	p->unwind = u;
	return 0;
cleanup:
	fprintf(stderr, "atftrace: cannot load the C++ unwind hooks: %s\n", strerror(-err));
	atftrace_bpf__destroy(u);
	return err;
}

#define MAX_HOOK_SITES 8

/*
 * Attach @prog at the entry of each of @names (at most MAX_HOOK_SITES) found in @path: one
 * uprobe_multi link for them all, or perf uprobes on kernels without. Returns how many, or -errno.
 */
static int attach_entry_hooks(struct probes *p, struct bpf_program *prog, const char *path,
			      const char *const *names, size_t nnames, pid_t pid)
{
	uint64_t offsets[MAX_HOOK_SITES], cookies[MAX_HOOK_SITES];
	struct sym_module *m = NULL;
	const char *first = NULL;
	uint32_t n = 0;
	int err;

	err = sym_module__open(&m, path, -1);
	if (err)
		return err;
	for (size_t i = 0; i < m->nfuncs && n < MAX_HOOK_SITES; i++) {
		const struct sym_func *f = &m->funcs[i];

		for (size_t k = 0; k < nnames && f->skip == SYM_OK && n < MAX_HOOK_SITES; k++) {
			if (strcmp(f->name, names[k]))
				continue;
			first = first ? first : f->name;
			offsets[n] = f->probe_offset;
			cookies[n++] = (uint64_t)m->module_id << 32 | f->symbol_index;
		}
	}
	if (n && p->kind == PROBE_LINK_PERF) {
		for (uint32_t i = 0; i < n && !err; i++)
			err = probes_attach_perf(&p->hooks, prog, path, offsets[i], cookies[i], false, pid);
	} else if (n) {
		err = probes_attach_multi_link(&p->hook_fds, NULL, bpf_program__fd(prog),
					ATF_BPF_TRACE_UPROBE_MULTI, path, offsets, cookies, n, 0, pid);
	}
	if (err)
		fprintf(stderr, "atftrace: attach %s%s in %s: %s\n", first, n > 1 ? " and others" : "",
			path, strerror(-err));
	sym_module__free(m);
	return err ? err : (int)n;
}

/*
 * libgcc_s, which holds the unwinder: next to libstdc++, in the process, or on the host.
 * A libstdc++ given as "/proc/self/fd/N" belongs to a container (user/proc/container.c): its
 * libgcc_s is then opened the same way, from the process's own mappings, never by a host path;
 * the caller closes that fd once the hooks are attached.
 */
static char *find_libgcc_s(const char *libstdcxx_path, pid_t pid)
{
	const char *slash = strrchr(libstdcxx_path, '/');
	char *path = NULL;

	if (pid > 0 && !strncmp(libstdcxx_path, "/proc/self/fd/", 14)) {
		int fd = container_open_file(pid, "libgcc_s.so.1", NULL, "atftrace");

		if (fd >= 0 && asprintf(&path, "/proc/self/fd/%d", fd) < 0) {
			close(fd);
			path = NULL;
		}
		return path;
	}
	if (slash && asprintf(&path, "%.*s/libgcc_s.so.1", (int)(slash - libstdcxx_path),
			      libstdcxx_path) > 0 && access(path, R_OK) == 0)
		return path;
	free(path);
	path = pid > 0 ? sym_resolve_library(pid, "libgcc_s.so.1") : NULL;
	return path ? path : sym_resolve_library(0, "libgcc_s.so.1");
}

/*
 * The unwinder's entry points: where an unwind starts (the unwinder must not meet a uretprobe
 * trampoline), then the C++ runtime's catch.
 */
static const char *const unwind_names[] = {
	"_Unwind_RaiseException", "_Unwind_ForcedUnwind", "_Unwind_Resume_or_Rethrow",
	"__cxa_begin_catch",
};
#define UNWIND_NRAISE 3

int probes__attach_unwind_hooks(struct probes *p, const char *libstdcxx_path, pid_t pid)
{
	char *libgcc = NULL;
	int n = load_unwind(p);

	if (n < 0)
		return n;
	n = attach_entry_hooks(p, p->unwind->progs.atf_unwind_catch, libstdcxx_path,
			       unwind_names + UNWIND_NRAISE, 1, pid);
	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	libgcc = find_libgcc_s(libstdcxx_path, pid);
	n = libgcc ? attach_entry_hooks(p, p->unwind->progs.atf_unwind_raise, libgcc, unwind_names,
					UNWIND_NRAISE, pid) : -ENOENT;
	if (n == 0)
		n = -ENOENT;
	if (n < 0)
		fprintf(stderr, "atftrace: %s: no unwinder entry points (%s): a C++ exception thrown "
			"through a traced function will terminate the program\n",
			libgcc ? libgcc : "libgcc_s.so.1", strerror(-n));
	if (libgcc && !strncmp(libgcc, "/proc/self/fd/", 14))
		close(atoi(libgcc + 14));       /* the links hold the inode now */
	free(libgcc);
	return n < 0 ? n : 0;
}

int probes__attach_unwinder(struct probes *p, const char *path, pid_t pid)
{
	uint32_t has;
	int raise = 0, caught = 0;

	if (!p->unwind_wanted)
		return -EOPNOTSUPP;     /* probe_opts.unwind_hooks was false */
	/* the file's own symbols first: most files a process maps have none of these */
	has = sym_elf_defines(path, unwind_names, sizeof(unwind_names) / sizeof(unwind_names[0]));
	if (!has)
		return 0;
	raise = load_unwind(p);
	if (raise < 0)
		return raise;
	if (has & ((1u << UNWIND_NRAISE) - 1))
		raise = attach_entry_hooks(p, p->unwind->progs.atf_unwind_raise, path, unwind_names,
					   UNWIND_NRAISE, pid);
	if (raise >= 0 && (has & (1u << UNWIND_NRAISE)))
		caught = attach_entry_hooks(p, p->unwind->progs.atf_unwind_catch, path,
					    unwind_names + UNWIND_NRAISE, 1, pid);
	return raise < 0 ? raise : caught < 0 ? caught : raise + caught;
}

int probes__attach_dl_hook(struct probes *p, const char *ldso_path, pid_t pid)
{
	static const char *const names[] = { "_dl_debug_state" };
	int n = attach_entry_hooks(p, p->skel->progs.atf_dl_state, ldso_path, names, 1, pid);

	return n < 0 ? n : n == 0 ? -ENOENT : 0;
}

void probes__set_holds(struct probes *p, bool at_exec, bool at_dl_state)
{
	/* .bss is mmap'ed: the hooks read these on their next hit */
	__atomic_store_n(&p->skel->bss->exec_hold, at_exec, __ATOMIC_SEQ_CST);
	__atomic_store_n(&p->skel->bss->dl_hold, at_dl_state, __ATOMIC_SEQ_CST);
}

int probes__stop_unwind_holds(struct probes *p)
{
	struct timespec pause = { 0, 20 * 1000 };
	/* A hook is in flight for microseconds; a second means something is badly wrong. */
	for (int i = 0; i < 50000; i++) {
		/* seq_cst store, then load: pairs with the hook's atomic add, then flag load */
		__atomic_store_n(&p->skel->bss->unwind_holds_off, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&p->skel->bss->unwind_inflight, __ATOMIC_SEQ_CST) == 0)
			return 0;
		nanosleep(&pause, NULL);
	}
	return -ETIMEDOUT;
}

#if defined(__x86_64__)
int probes__guard_pid(struct probes *p, pid_t pid, bool on)
{
	pid_t host;
	uint32_t key;
	uint64_t any_mm = 0;
	int err;

	err = on ? probes__guard_ready(p) : p->guard ? 0 : -EOPNOTSUPP;
	if (err)
		return err;
	err = pidns_host_pid(pid, &host);
	if (err)
		return on ? err : 0;
	key = (uint32_t)host;
	/* the next syscall's guard sees it (value 0: whatever its memory; we take it out) */
	if (!on)
		return bpf_map__delete_elem(p->skel->maps.guarded, &key, sizeof(key), 0) &&
		       errno != ENOENT ? -errno : 0;
	if (bpf_map__update_elem(p->skel->maps.guarded, &key, sizeof(key), &any_mm, sizeof(any_mm),
				 BPF_ANY))
		return errno == E2BIG ? -ENOSPC : -errno;
	return 0;
}

int probes__guard_ready(struct probes *p)
{
	struct atftrace_bpf *s = p->skel;
	struct bpf_program *progs[] = { s->progs.atf_module_free,
					s->progs.atf_reg_enter_bpf, s->progs.atf_reg_enter_perf,
					s->progs.atf_reg_exit_bpf, s->progs.atf_reg_exit_perf,
					s->progs.atf_reg_enter, s->progs.atf_reg_exit };
	struct bpf_link **links[] = { &s->links.atf_module_free,
				      &s->links.atf_reg_enter_bpf, &s->links.atf_reg_enter_perf,
				      &s->links.atf_reg_exit_bpf, &s->links.atf_reg_exit_perf,
				      &s->links.atf_reg_enter, &s->links.atf_reg_exit };

	bool attached = false;

	if (!p->guard)
		return -EOPNOTSUPP;
	/* the tracepoint ids first: until then every tracepoint event stops the guarded */
	if (!p->tp_ids_read) {
		p->tp_ids_read = true;
		probes__guard_refresh_tp_ids(p);
	}
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		if (bpf_program__fd(progs[i]) < 0)
			continue;       /* the other way in: not loaded */
		if (*links[i])
			continue;
		*links[i] = bpf_program__attach(progs[i]);
		if (!*links[i])
			return -errno;
		attached = true;
	}
	if (attached && p->verbose)
		fprintf(stderr, "atftrace record: registration guard on the %s\n", p->guard_tp ?
			"bpf and perf_event_open syscall tracepoints" :
			"raw sys_enter/sys_exit tracepoints");
	return 0;
}

uint64_t probes__guard_unannounced(const struct probes *p)
{
	return p->guard ? __atomic_load_n(&p->skel->bss->guard_unannounced, __ATOMIC_ACQUIRE) : 0;
}

int probes__fork_notes_take(struct probes *p, uint32_t *pids, uint64_t *notes, size_t cap)
{
	int fd = bpf_map__fd(p->skel->maps.fork_notes);
	uint32_t key, next;
	size_t n = 0;
	bool first = true;

	/* the keys first, then each taken: deleting while walking would restart the walk */
	while (n < cap && !bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		pids[n++] = next;
		key = next;
		first = false;
	}
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!bpf_map_lookup_and_delete_elem(fd, &pids[i], &notes[k]))
			pids[k++] = pids[i];
	return (int)k;
}

uint64_t probes__forks_unnoted(const struct probes *p)
{
	return __atomic_load_n(&p->skel->bss->forks_unnoted, __ATOMIC_ACQUIRE);
}

int probes__guard_settle(struct probes *p, unsigned int timeout_ms)
{
	struct timespec pause = { 0, 50 * 1000 };

	for (unsigned int i = 0; p->guard && i < timeout_ms * 20; i++) {
		if (__atomic_load_n(&p->skel->bss->reg_inflight, __ATOMIC_SEQ_CST) == 0)
			return 0;
		nanosleep(&pause, NULL);
	}
	return p->guard ? -ETIMEDOUT : 0;
}
#else
int probes__fork_notes_take(struct probes *p, uint32_t *pids, uint64_t *notes, size_t cap)
{
	(void)p; (void)pids; (void)notes; (void)cap;
	return 0;
}

uint64_t probes__forks_unnoted(const struct probes *p)
{
	(void)p;
	return 0;
}

int probes__guard_pid(struct probes *p, pid_t pid, bool on)
{
	(void)p; (void)pid; (void)on;
	return -EOPNOTSUPP;
}

int probes__guard_ready(struct probes *p)
{
	(void)p;
	return -EOPNOTSUPP;
}

uint64_t probes__guard_unannounced(const struct probes *p)
{
	(void)p;
	return 0;
}

int probes__guard_settle(struct probes *p, unsigned int timeout_ms)
{
	(void)p; (void)timeout_ms;
	return 0;
}
#endif
