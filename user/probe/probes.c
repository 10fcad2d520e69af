// SPDX-License-Identifier: MIT
/*
 * The BPF side as the recorder sees it (include/probes.h): open the skeleton, configure it
 * (rodata, ring size, which programs load with which expected attach type), load, attach.
 *
 * Link kinds, in order of preference on this kernel (bench/bench_probe_cost.sh measures them):
 *   session  one uprobe-session link per module: entry and return in one program run pair
 *   multi    two uprobe_multi links per module, the second with the RETURN flag
 *   perf     one perf-event uprobe + uretprobe per function (kernels before 6.6; slow to
 *            attach and detach: about 3 ms and 110 ms per function)
 * ATFTRACE_LINK=session|multi|perf in the environment picks one (tests and benchmarks).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "args.h"
#include "atftrace.h"
#include "atftrace.skel.h"
#include "probes_int.h"
#include "container.h"
#include "pidns.h"
#include "uprobe_multi.h"
#include "textfmt.h"

#define DEFAULT_RING_SIZE (4u << 20)

static bool libbpf_verbose;

/* libbpf talks only when asked to (--verbose); our own errors are one line each. */
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!libbpf_verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static const char *kind_name(enum probe_link_kind k)
{
	return k == PROBE_LINK_SESSION ? "session" : k == PROBE_LINK_MULTI ? "multi" : "perf";
}

/* The link kind to use: ATFTRACE_LINK if set, else the cheapest this kernel supports. */
static int choose_kind(enum probe_link_kind *out)
{
	const char *env = getenv("ATFTRACE_LINK");
	bool session = uprobe_multi_supported(ATF_BPF_TRACE_UPROBE_SESSION);
	bool multi = uprobe_multi_supported(ATF_BPF_TRACE_UPROBE_MULTI);

	if (env && *env) {
		if (!strcmp(env, "session") && session)
			*out = PROBE_LINK_SESSION;
		else if (!strcmp(env, "multi") && multi)
			*out = PROBE_LINK_MULTI;
		else if (!strcmp(env, "perf"))
			*out = PROBE_LINK_PERF;
		else {
			fprintf(stderr, "atftrace: ATFTRACE_LINK=%s: %s\n", env,
				strcmp(env, "session") && strcmp(env, "multi")
				? "expected session, multi or perf" : "not supported by this kernel");
			return -EINVAL;
		}
		return 0;
	}
	*out = session ? PROBE_LINK_SESSION : multi ? PROBE_LINK_MULTI : PROBE_LINK_PERF;
	return 0;
}

#if defined(__x86_64__)
/* The uprobe PMU's perf type; PERF_TYPE_TRACEPOINT (which the guard watches anyway) if unknown. */
static uint32_t uprobe_pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	unsigned int type = 2;

	if (f) {
		if (fscanf(f, "%u", &type) != 1)
			type = 2;
		fclose(f);
	}
	return type;
}
#endif

static int configure(struct probes *p, const struct probe_opts *opts)
{
	struct atftrace_bpf *s = p->skel;
	size_t ring = opts->ring_size ? opts->ring_size : DEFAULT_RING_SIZE;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if ((ring & (ring - 1)) || ring < (size_t)page || ring > (1u << 30)) {
		fprintf(stderr, "atftrace: ring size %zu: not a power of two between %ld and 1 GiB\n",
			ring, page);
		return -EINVAL;
	}
	if (opts->stack_bytes > 256) {
		fprintf(stderr, "atftrace: stack bytes %u: at most 256\n", opts->stack_bytes);
		return -EINVAL;
	}
	s->rodata->system_wide = opts->system_wide;
	s->rodata->follow_fork = opts->follow_fork;
	s->rodata->cgroup_id = opts->cgroup_id;
	s->rodata->cgroup_level = opts->cgroup_level;
	s->rodata->cgroup_v1_ssid = opts->cgroup_v1_ssid;
	s->rodata->announce_tasks = opts->announce_tasks;
	/* pids as this process's pid namespace sees them (bpf/pidns.bpf.h) */
	err = pidns_self(&s->rodata->pidns_level, &s->rodata->pidns_inum);
	if (err)
		return err;
	if (opts->exclude_self)
		s->rodata->self_pid = (uint32_t)getpid();
	memcpy((char *)s->rodata->comm_filter, opts->comm, sizeof(s->rodata->comm_filter));
	s->rodata->wakeup_bytes = opts->wakeup_bytes;
	s->rodata->detail_always = opts->detail_always;
	s->rodata->stack_bytes = opts->stack_bytes;
	s->rodata->detail_on = opts->ndetail_triggers > 0;
	s->rodata->detail_on_count = opts->detail_on_count;
	s->rodata->detail_on_ns = opts->detail_on_ns;
	s->bss->detail_switch = opts->detail_always;   /* the initial image of .bss, before load */
	err = bpf_map__set_max_entries(s->maps.detail_triggers,
				       opts->ndetail_triggers ? (uint32_t)opts->ndetail_triggers : 1);
	if (err)
		return err;
	if (opts->args_wanted && (opts->string_bytes < 1 || opts->string_bytes > ARGS_MAX_STR_BYTES)) {
		fprintf(stderr, "atftrace: string bytes %u: from 1 to %u\n", opts->string_bytes,
			ARGS_MAX_STR_BYTES);
		return -EINVAL;
	}
	s->rodata->args_on = opts->args_wanted;
	if (opts->args_wanted)
		s->rodata->string_bytes = opts->string_bytes;
	/* room for the functions of modules found later too; entries are allocated as they come */
	err = bpf_map__set_max_entries(s->maps.arg_specs, opts->args_wanted ?
				       (uint32_t)opts->narg_fns + ARGS_LIVE_FUNCTIONS : 1);
	s->rodata->call_filter_on = opts->call_filter;
	s->rodata->filter_max_depth = opts->filter_max_depth;
	s->rodata->filter_min_ns = opts->filter_min_ns;
	s->rodata->filter_focus = opts->filter_focus;
	s->rodata->filter_funcs = opts->nfilter_fns > 0;
	for (size_t i = 0; i < opts->nfilter_fns; i++)
		if (opts->filter_fn_vals[i].flags & FILTER_FN_DEPTH)
			s->rodata->filter_depth_fns = true;
	s->data->filter_tracing = !opts->filter_trace_off;
	err = bpf_map__set_max_entries(s->maps.filter_fns,
				       opts->nfilter_fns ? (uint32_t)opts->nfilter_fns : 1);
	if (err)
		return err;
	err = bpf_map__set_max_entries(s->maps.rb, (uint32_t)ring);
	if (err)
		return err;

	/* Load only the programs of the chosen link kind, with the attach type they need. */
	bpf_program__set_autoload(s->progs.atf_session, p->kind == PROBE_LINK_SESSION);
	bpf_program__set_autoload(s->progs.atf_multi_entry, p->kind == PROBE_LINK_MULTI);
	bpf_program__set_autoload(s->progs.atf_multi_return, p->kind == PROBE_LINK_MULTI);
	p->call_sites = opts->call_sites && p->kind != PROBE_LINK_PERF;
	bpf_program__set_autoload(s->progs.atf_site_fn_entry, p->call_sites);
	bpf_program__set_autoload(s->progs.atf_site_fn_return, p->call_sites);
	bpf_program__set_autoload(s->progs.atf_site_tail, p->call_sites);
	bpf_program__set_autoload(s->progs.atf_site_plain, p->call_sites && p->kind == PROBE_LINK_SESSION);
	bpf_program__set_autoload(s->progs.atf_site_plain_entry, p->call_sites && p->kind == PROBE_LINK_MULTI);
	probes_handback_autoload(p);
	bpf_program__set_autoload(s->progs.atf_uprobe, p->kind == PROBE_LINK_PERF);
	bpf_program__set_autoload(s->progs.atf_uretprobe, p->kind == PROBE_LINK_PERF);
	/* the verifier's time is most of the start-up: programs a session will not use stay out,
	 * and the C++ unwind hooks' come in a second load once an unwinder is found (load_unwind) */
	p->unwind_wanted = opts->unwind_hooks;
	bpf_program__set_autoload(s->progs.atf_unwind_catch, false);
	bpf_program__set_autoload(s->progs.atf_unwind_raise, false);
	bpf_program__set_autoload(s->progs.atf_signal_generate, true);
#if defined(__x86_64__)
	p->guard = opts->reg_guard;
	/* the two syscalls' own tracepoints when tracefs names them, else (or with
	 * ATFTRACE_GUARD=raw, which the tests use) the raw ones */
	p->guard_tp = p->guard && probes_syscall_tracepoints();
	bpf_program__set_autoload(s->progs.atf_reg_enter_bpf, p->guard_tp);
	bpf_program__set_autoload(s->progs.atf_reg_enter_perf, p->guard_tp);
	bpf_program__set_autoload(s->progs.atf_reg_exit_bpf, p->guard_tp);
	bpf_program__set_autoload(s->progs.atf_reg_exit_perf, p->guard_tp);
	bpf_program__set_autoload(s->progs.atf_reg_enter, p->guard && !p->guard_tp);
	bpf_program__set_autoload(s->progs.atf_reg_exit, p->guard && !p->guard_tp);
	/* a module's unload frees its tracepoints' ids: the guard's map of them must know */
	bool modules = !access("/proc/modules", F_OK);
	bool module_free = modules && libbpf_find_vmlinux_btf_id("module_free", BPF_TRACE_RAW_TP) >= 0;

	bpf_program__set_autoload(s->progs.atf_module_free, p->guard && module_free);
	p->tp_ids_trusted = !modules || module_free;
	s->rodata->uprobe_pmu_type = uprobe_pmu_type();
#endif
	/* the guard and the holds compare and name processes by their host pids */
	pid_t self;

	err = pidns_host_pid(getpid(), &self);
	if (err)
		return err;
	s->rodata->recorder_tgid = (uint32_t)self;
	bpf_program__set_expected_attach_type(s->progs.atf_session, ATF_BPF_TRACE_UPROBE_SESSION);
	bpf_program__set_expected_attach_type(s->progs.atf_multi_entry, ATF_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.atf_multi_return, ATF_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.atf_site_fn_entry, ATF_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.atf_site_fn_return, ATF_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.atf_site_tail, ATF_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.atf_site_plain, ATF_BPF_TRACE_UPROBE_SESSION);
	bpf_program__set_expected_attach_type(s->progs.atf_site_plain_entry, ATF_BPF_TRACE_UPROBE_MULTI);
	/*
	 * The entry hooks go in uprobe_multi links wherever the kernel has them: a perf uprobe
	 * costs about as much to attach, but far more to detach (bench/bench_probe_cost.sh).
	 */
	if (p->kind != PROBE_LINK_PERF) {
		bpf_program__set_expected_attach_type(s->progs.atf_dl_state, ATF_BPF_TRACE_UPROBE_MULTI);
	}
	return 0;
}

/* The --detail-on trigger functions, into the map the entry probe looks them up in. */
static int fill_detail_triggers(struct probes *p, const struct probe_opts *opts)
{
	uint8_t one = 1;

	for (size_t i = 0; i < opts->ndetail_triggers; i++) {
		if (bpf_map__update_elem(p->skel->maps.detail_triggers, &opts->detail_trigger_ids[i],
					 sizeof(uint64_t), &one, sizeof(one), BPF_ANY)) {
			int err = -errno;

			fprintf(stderr, "atftrace: cannot set the --detail-on functions: %s\n",
				strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * fill_ids - @n values of @size bytes at @vals into @map, keyed by the function ids @ids: what the
 * probes look up per function (argument specs, filter actions).
 */
static int fill_ids(struct bpf_map *map, const uint64_t *ids, const void *vals, size_t n, size_t size,
		    const char *what)
{
	for (size_t i = 0; i < n; i++) {
		if (bpf_map__update_elem(map, &ids[i], sizeof(uint64_t), (const char *)vals + i * size, size,
					 BPF_ANY)) {
			int err = -errno;

			fprintf(stderr, "atftrace: cannot set the %s: %s\n", what, strerror(-err));
			return err;
		}
	}
	return 0;
}

int probes__open(struct probes **out, const struct probe_opts *opts)
{
	struct probes *p;
	int err;

	*out = NULL;
	libbpf_verbose = opts->verbose;
	libbpf_set_print(print_libbpf);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->verbose = opts->verbose;
	err = choose_kind(&p->kind);
	if (err)
		goto cleanup;
	p->skel = atftrace_bpf__open();
	if (!p->skel) {
		err = -errno;
		fprintf(stderr, "atftrace: cannot open the BPF object: %s\n", strerror(-err));
		goto cleanup;
	}
	err = configure(p, opts);
	if (err)
		goto cleanup;
	err = atftrace_bpf__load(p->skel);
	if (err) {
		fprintf(stderr, "atftrace: cannot load the BPF programs: %s%s\n", strerror(-err),
			opts->verbose ? "" : " (--verbose shows the verifier's log)");
		goto cleanup;
	}
	err = fill_detail_triggers(p, opts) ?:
	      fill_ids(p->skel->maps.arg_specs, opts->arg_fn_ids, opts->arg_fn_specs, opts->narg_fns,
		       sizeof(opts->arg_fn_specs[0]), "argument specs") ?:
	      fill_ids(p->skel->maps.filter_fns, opts->filter_fn_ids, opts->filter_fn_vals, opts->nfilter_fns,
		       sizeof(struct filter_fn), "filter functions");
	if (err)
		goto cleanup;
	/* Process lifecycle tracepoints: fork (follow_fork), thread exit, exec. */
	p->skel->links.atf_fork = bpf_program__attach(p->skel->progs.atf_fork);
	p->skel->links.atf_exit = bpf_program__attach(p->skel->progs.atf_exit);
	p->skel->links.atf_exec = bpf_program__attach(p->skel->progs.atf_exec);
	if (!p->skel->links.atf_fork || !p->skel->links.atf_exit || !p->skel->links.atf_exec) {
		err = -errno;
		fprintf(stderr, "atftrace: cannot attach the scheduler tracepoints: %s\n",
			strerror(-err));
		goto cleanup;
	}
	*out = p;
	return 0;
cleanup:
	probes__free(p);
	return err;
}

int probes__add_pid(struct probes *p, pid_t tgid)
{
	uint32_t key = (uint32_t)tgid;
	uint8_t one = 1;

	if (bpf_map__update_elem(p->skel->maps.tgid_filter, &key, sizeof(key), &one, sizeof(one),
				 BPF_ANY))
		return -errno;
	return 0;
}

/* One line per function the kernel would not probe, with the bytes it refuses and why. */
static void report_refused(const struct sym_module *m, const char *path, const uint32_t *func,
			   const uint32_t *refused, uint32_t nrefused, uint32_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	fprintf(stderr, "atftrace: %s: %u of %u %s not traced: the kernel refuses to probe %s "
		"first instruction\n", m->path, nrefused, n, textfmt_plural(n, "function", "functions"),
		nrefused == 1 ? "its" : "their");
	for (uint32_t i = 0; i < nrefused; i++) {
		const struct sym_func *f = &m->funcs[func[refused[i]]];
		uint8_t b[4] = { 0 };
		ssize_t got = fd >= 0 ? pread(fd, b, sizeof(b), (off_t)f->probe_offset) : -1;
		/* arch/x86/kernel/uprobes.c: is_prefix_bad() refuses LOCK and segment prefixes */
		bool prefix = got > 0 && (b[0] == 0xf0 || b[0] == 0x26 || b[0] == 0x2e || b[0] == 0x36 ||
					  b[0] == 0x3e);

		fprintf(stderr, "atftrace:   %s at offset 0x%llx", f->name, (unsigned long long)f->probe_offset);
		for (ssize_t k = 0; k < got; k++)
			fprintf(stderr, "%s%02x", k ? " " : ": ", b[k]);
		fprintf(stderr, "%s\n", prefix ? ": a LOCK or segment prefix" : got > 0 ?
			": an instruction uprobes neither emulate nor single-step" : "");
	}
	if (fd >= 0)
		close(fd);
}

/* Entry and return probes at @offsets of @path in the links of the session's kind. */
static int attach_offsets(struct probes *p, const void *owner, const char *path,
			  const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid)
{
	struct atftrace_bpf *s = p->skel;
	int err = 0;

	switch (p->kind) {
	case PROBE_LINK_SESSION:
		err = probes_attach_multi_link(&p->function_fds, owner, bpf_program__fd(s->progs.atf_session),
					ATF_BPF_TRACE_UPROBE_SESSION, path, offsets, cookies, n, 0, pid);
		break;
	case PROBE_LINK_MULTI:
		err = probes_attach_multi_link(&p->function_fds, owner, bpf_program__fd(s->progs.atf_multi_entry),
					ATF_BPF_TRACE_UPROBE_MULTI, path, offsets, cookies, n, 0, pid);
		if (!err)
			err = probes_attach_multi_link(&p->function_fds, owner, bpf_program__fd(s->progs.atf_multi_return),
						ATF_BPF_TRACE_UPROBE_MULTI, path, offsets, cookies, n,
						ATF_BPF_F_UPROBE_MULTI_RETURN, pid);
		break;
	case PROBE_LINK_PERF:
		for (uint32_t i = 0; i < n && !err; i++) {
			err = probes_attach_perf(&p->functions, s->progs.atf_uprobe, path, offsets[i],
					  cookies[i], false, pid);
			if (!err)
				err = probes_attach_perf(&p->functions, s->progs.atf_uretprobe, path, offsets[i],
						  cookies[i], true, pid);
		}
		break;
	}
	return err;
}

int probes__attach_sites(struct probes *p, const void *owner, const char *path,
			 const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid)
{
	/* perf links cannot be told apart by owner; trampolines need a multi or session link */
	if (p->kind == PROBE_LINK_PERF || !n)
		return -EOPNOTSUPP;
	return attach_offsets(p, owner, path, offsets, cookies, n, pid);
}

int probes__attach_site_probes(struct probes *p, const void *owner, const char *path,
				enum probe_site_kind kind, const uint64_t *offs,
				const uint64_t *cookies, uint32_t n, pid_t pid)
{
	struct atftrace_bpf *s = p->skel;
	struct bpf_program *prog = kind == PROBE_SITE_ENTRY ? s->progs.atf_site_fn_entry :
				   kind == PROBE_SITE_RETURN ? s->progs.atf_site_fn_return :
							       s->progs.atf_site_tail;

	if (!p->call_sites || !n)
		return -EOPNOTSUPP;
	return probes_attach_multi_link(&p->function_fds, owner, bpf_program__fd(prog),
					ATF_BPF_TRACE_UPROBE_MULTI, path, offs, cookies, n, 0, pid);
}

int probes__attach_plain_entries(struct probes *p, const void *owner, const char *path,
				 const uint64_t *offs, const uint64_t *cookies, uint32_t n, pid_t pid)
{
	struct atftrace_bpf *s = p->skel;
	int err;

	if (!p->call_sites || !n)
		return -EOPNOTSUPP;
	if (p->kind == PROBE_LINK_SESSION)
		return probes_attach_multi_link(&p->function_fds, owner,
						bpf_program__fd(s->progs.atf_site_plain),
						ATF_BPF_TRACE_UPROBE_SESSION, path, offs, cookies, n, 0, pid);
	/* the return probes first: no entry is seen before its return can be */
	err = probes_attach_multi_link(&p->function_fds, owner, bpf_program__fd(s->progs.atf_multi_return),
				       ATF_BPF_TRACE_UPROBE_MULTI, path, offs, cookies, n,
				       ATF_BPF_F_UPROBE_MULTI_RETURN, pid);
	if (!err)
		err = probes_attach_multi_link(&p->function_fds, owner,
					       bpf_program__fd(s->progs.atf_site_plain_entry),
					       ATF_BPF_TRACE_UPROBE_MULTI, path, offs, cookies, n, 0, pid);
	if (err)
		probes__detach_owner(p, owner);
	return err;
}

int probes__detach_owner(struct probes *p, const void *owner)
{
	int n = 0;

	for (size_t i = 0; i < p->function_fds.n; i++) {
		if (p->function_fds.fd[i] < 0 || p->function_fds.owner[i] != owner)
			continue;
		close(p->function_fds.fd[i]);   /* the kernel removes the link's probes before this returns */
		p->function_fds.fd[i] = -1;
		n++;
	}
	return n;
}

int probes__attach_module(struct probes *p, const struct sym_module *m, pid_t pid)
{
	const char *path = m->open_path ? m->open_path : m->path;
	uint64_t *offsets = NULL, *cookies = NULL;
	uint32_t *func = NULL, *refused = NULL, n = 0, nrefused = 0, nostep = 0;
	size_t cap = m->nfuncs ? m->nfuncs : 1;
	int err = 0;

	offsets = malloc(cap * sizeof(*offsets));
	cookies = malloc(cap * sizeof(*cookies));
	func = malloc(cap * sizeof(*func));
	refused = malloc(cap * sizeof(*refused));
	if (!offsets || !cookies || !func || !refused) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];

		if (!f->selected || f->skip != 0 || f->via_tramp)
			continue;
		if (!sym_plain_probe_ok(f)) {
			nostep++;
			if (p->verbose)
				fprintf(stderr, "atftrace record: %s: %s: no probe at its entry (its "
					"first instruction is EVEX)\n", m->path, f->name);
			continue;
		}
		offsets[n] = f->probe_offset;
		func[n++] = (uint32_t)i;
	}
	/* with trampolines, they get one (trampoline.c says which do not); with call sites,
	 * the calls that take a stub run the instruction natively in the body */
	if (nostep && !p->guard)
		fprintf(stderr, "atftrace record: %s: %u %s with an AVX-512 (EVEX) "
			"instruction, whose single-step by the kernel loses its result: %s\n",
			m->path, nostep, nostep == 1 ? "function starts" : "functions start",
			p->call_sites ? "only the calls that take a call-site stub are traced, "
					"not those that reach the entry" :
					"not traced without an entry trampoline");
	if (n == 0)
		goto cleanup;
	/* the functions whose first instruction the kernel refuses are left out, each said */
	uprobe_refused_offsets(path, offsets, n, refused, &nrefused);
	if (nrefused)
		report_refused(m, path, func, refused, nrefused, n);
	for (uint32_t i = 0, r = 0, k = 0; i < n; i++) {
		const struct sym_func *f = &m->funcs[func[i]];

		if (r < nrefused && refused[r] == i) {      /* ascending, as the bisection found them */
			r++;
			continue;
		}
		offsets[k] = f->probe_offset;
		cookies[k++] = (uint64_t)m->module_id << 32 | f->symbol_index;
#if defined(__x86_64__)
		/* optimised by the kernel: a forked child needs its int3 back (fork_hold.bpf.h) */
		if (f->insn == SYM_INSN_NOP5)
			__atomic_store_n(&p->skel->bss->nop5_sites, 1, __ATOMIC_SEQ_CST);
#endif
	}
	n -= nrefused;
	if (n == 0)
		goto cleanup;

	err = attach_offsets(p, m, path, offsets, cookies, n, pid);
	if (err)
		fprintf(stderr, "atftrace: attach %u functions of %s (%s links): %s\n", n, m->path,
			kind_name(p->kind), strerror(-err));
cleanup:
	free(offsets);
	free(cookies);
	free(func);
	free(refused);
	return err ? err : (int)n;
}

void probes__detach_functions(struct probes *p)
{
	probes_close_link_fds(&p->function_fds);
	probes_destroy_links(&p->functions);
}

void probes__free(struct probes *p)
{
	if (!p)
		return;
	probes__detach_functions(p);
	probes_close_link_fds(&p->hook_fds);
	probes_destroy_links(&p->hooks);
	atftrace_bpf__destroy(p->unwind);
	atftrace_bpf__destroy(p->skel);
	free(p);
}
