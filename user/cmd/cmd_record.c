// SPDX-License-Identifier: MIT
/*
 * atftrace record [OPTIONS] -- CMD [ARGS...]   trace a command from its first instruction
 * atftrace record [OPTIONS] -p PID             trace a running process (also: atftrace attach)
 *
 * Order matters for a launched command: the child is forked and held on a pipe, its pid goes
 * into the BPF filter and the uprobe links (restricted to it) are attached, and only then is
 * it released to exec; so no call of the target escapes. Signals arrive through a signalfd
 * (no work in handlers); after the first SIGINT/SIGTERM the default action is restored, so a
 * second one ends the recorder at once, leaving files that were flushed at every drain tick.
 */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "atf_file.h"
#include "clock.h"
#include "cmd_common.h"
#include "commands.h"
#include "container.h"
#include "probes.h"
#include "proc.h"
#include "ready_file.h"
#include "record_filter.h"
#include "record_modules.h"
#include "record_system.h"
#include "recorder.h"
#include "recorder_args.h"
#include "recorder_detail.h"
#include "record_call_sites.h"
#include "record_outdir.h"
#include "record_run.h"
#include "record_trampolines.h"
#include "timefmt.h"
#include "tramp_restore.h"
#include "trampoline.h"


struct record_args {
	bool attach_cmd;            /* invoked as `atftrace attach` */
	pid_t pid;
	bool follow_fork;
	struct rm_spec spec;        /* -f / -x */
	const char *outdir;
	double duration;
	int mode;                   /* --mode, or -1: ATF_FILE_MODE_DEFAULT */
	size_t ring_size;
	bool verbose;
	const char *ready_file;
	bool force;                 /* -o may name an earlier session: replace its processes */
	bool kill_at_end;           /* SIGTERM the launched command when the session ends first */
	bool trampolines;           /* --trampolines: entry trampolines and their guard */
	bool no_trampolines;        /* --no-trampolines: plain probes on every function */
	bool call_sites;            /* redirect calls (include/callsite.h): the default but with -a */
	bool call_sites_asked;      /* --call-sites given (-a's way to them; else the default's name) */
	char **cmd;
	int ncmd;
	struct detail_args detail;  /* --detail* and --stack-bytes (user/record/recorder_detail.c) */
	struct args_opts args;      /* -A, -R, --auto-args (user/record/recorder_args.c) */
	struct rs_target sys;       /* -a, --comm, --pid-filter, --cgroup, --container (record_system.c) */
	struct filter_args filter;  /* -D, -t, -F, -N, -T, --trace (user/record/record_filter.c) */
};

enum { OPT_FOLLOW_FORK = 1000, OPT_DURATION, OPT_RING_SIZE, OPT_READY_FILE, OPT_DEBUG_DIR, OPT_FORCE,
       OPT_KILL_AT_END, OPT_MODE, OPT_TRAMPOLINES, OPT_NO_TRAMPOLINES, OPT_ALLOW_MISSING,
       OPT_CALL_SITES };

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "Trace the running process PID instead of launching CMD", 0 },
	{ "follow-fork", OPT_FOLLOW_FORK, NULL, 0,
	  "Also trace processes the target forks (each in its own pid_<PID>/)", 0 },
	{ "function", 'f', "[MODULE:]GLOB", 0,
	  "Trace functions matching GLOB (repeatable); MODULE is a path or a library name such as "
	  "libc.so.6. Default: every function of the main executable", 0 },
	{ "exclude", 'x', "GLOB", 0, "Do not trace functions matching GLOB (repeatable)", 0 },
	{ "allow-missing", OPT_ALLOW_MISSING, NULL, 0,
	  "Record even when a -f GLOB names no function of its module (refused by default, with the "
	  "closest names), e.g. for a wrapper that execs the program that has it", 0 },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", 0,
	  "Also look for the debug files of stripped modules under DIR (repeatable; as "
	  "/usr/lib/debug: .build-id/xx/rest.debug or the debuglink name)", 0 },
	{ "output", 'o', "DIR", 0,
	  "Session directory (default ada_traces/session_YYYYMMDD_HHMMSS)", 0 },
	{ "duration", OPT_DURATION, "T", 0,
	  "Stop after T: 10 (seconds), 500ms, 2.5s, 1m; a launched command goes on running, no "
	  "longer traced (unless --kill-at-end)", 0 },
	{ "kill-at-end", OPT_KILL_AT_END, NULL, 0,
	  "When the session ends before the launched command (--duration, a signal), send it "
	  "SIGTERM", 0 },
	{ "force", OPT_FORCE, NULL, 0,
	  "Let -o name the directory of an earlier session: its process directories and "
	  "session.json are deleted first; an existing --ready-file file is replaced", 0 },
	{ "mode", OPT_MODE, "MODE", 0,
	  "Octal mode of the session's files (default 0600: stacks and command lines are private); "
	  "directories get the matching x bits (0700)", 0 },
	{ "ring-size", OPT_RING_SIZE, "SIZE", 0,
	  "BPF ring buffer size, a power of two with optional K/M/G suffix (default 16M per CPU, "
	  "16M to 256M)", 0 },
	{ "ready-file", OPT_READY_FILE, "PATH", 0,
	  "Create PATH once the probes are attached; an existing FIFO of yours is opened and closed instead (without blocking the recorder), so a reader learns it without polling", 0 },
	{ "call-sites", OPT_CALL_SITES, NULL, 0,
	  "Redirect the calls to each traced function to stubs that probe its entry and return; no "
	  "function's first bytes are written (the default for a launched command and -p; with -a, "
	  "asked for by this option; see README)", 0 },
	{ "trampolines", OPT_TRAMPOLINES, NULL, 0,
	  "Instead of call sites, write a jmp to an entry trampoline over the first bytes of each "
	  "function the kernel would single-step, with the registration guard against other tools' "
	  "uprobes (see README)", 0 },
	{ "no-trampolines", OPT_NO_TRAMPOLINES, NULL, 0,
	  "Probe every function where it starts; the target's text is never written (the default "
	  "with -a)", 0 },
	{ "verbose", 'v', NULL, 0, "Say more: skipped functions, processes, libbpf messages", 0 },
	{ 0 }
};

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'i' || *end == 'I')     /* "8MiB" */
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || v < 4096 || v > (1ull << 30) || (v & (v - 1)))
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct record_args *a = state->input;
	uint64_t ns = 0;
	char *end;
	int err = 0;

	switch (key) {
	case 'p': {
		if (!cmd_parse_pid(arg, &a->pid))
			argp_error(state, "--pid: '%s' is not a process id", arg);
		break;
	}
	case OPT_FOLLOW_FORK:
		a->follow_fork = true;
		break;
	case 'f':
		if (rm_spec_add(&a->spec, arg, false) < 0)
			argp_failure(state, 1, ENOMEM, "-f");
		break;
	case 'x':
		if (rm_spec_add(&a->spec, arg, true) < 0)
			argp_failure(state, 1, ENOMEM, "-x");
		break;
	case OPT_ALLOW_MISSING:
		a->spec.allow_missing = true;
		break;
	case 'o':
		a->outdir = arg;
		break;
	case OPT_FORCE:
		a->force = true;
		break;
	case OPT_KILL_AT_END:
		a->kill_at_end = true;
		break;
	case OPT_DEBUG_DIR:
		if (sym_debug_dir_add(arg) < 0)
			argp_failure(state, 1, ENOMEM, "--debug-dir");
		break;
	case OPT_DURATION:
		if ((err = timefmt_parse(arg, TIMEFMT_S, &ns)) || !ns)
			argp_error(state, "--duration: '%s' is not a positive duration: %s", arg,
				   err ? timefmt_strerror(err) : "zero");
		a->duration = (double)ns / 1e9;
		break;
	case OPT_MODE: {
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 8);
		if (errno || *end || end == arg || v > 0777 || (v & 0600) != 0600)
			argp_error(state, "--mode: '%s' is not an octal file mode from 0600 to 0777 "
				   "(the owner must read and write)", arg);
		a->mode = (int)v;
		break;
	}
	case OPT_RING_SIZE:
		if (parse_size(arg, &a->ring_size))
			argp_error(state, "--ring-size: '%s' is not a power of two between 4K and 1G", arg);
		break;
	case OPT_READY_FILE:
		a->ready_file = arg;
		break;
	case OPT_TRAMPOLINES:
		a->trampolines = true;
		break;
	case OPT_NO_TRAMPOLINES:
		a->no_trampolines = true;
		break;
	case OPT_CALL_SITES:
		a->call_sites_asked = true;
		break;
	case 'v':
		a->verbose = true;
		break;
	case ARGP_KEY_ARG:
		if (a->attach_cmd && !a->pid && !a->cmd) {
			/* `atftrace attach PID [OPTIONS]`: options may follow the pid */
			if (cmd_parse_pid(arg, &a->pid))
				break;
			if (state->argc - state->next == 0)     /* the one argument: meant as the pid */
				argp_error(state, "'%s' is not a process id", arg);
		}
		/* the command and all its arguments, options included */
		a->cmd = &state->argv[state->next - 1];
		a->ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->detail;
		state->child_inputs[1] = &a->sys;
		state->child_inputs[2] = &a->args;
		state->child_inputs[3] = &a->filter;
		break;
	case ARGP_KEY_END:
		if (a->attach_cmd && a->cmd)
			argp_error(state, "attach traces a running process: give -p PID, not a command");
		if (a->pid && a->cmd)
			argp_error(state, "give either -p PID or a command, not both");
		if (a->sys.all && (a->pid || a->cmd))
			argp_error(state, "-a traces every process: give no -p PID and no command");
		if (a->sys.all && !a->spec.nfuncs)
			argp_error(state, "-a needs -f MODULE:GLOB: the functions to trace in every process");
		if (!a->sys.all && (a->sys.comm || a->sys.npid_filter || a->sys.cgroup))
			argp_error(state, "--comm, --pid-filter and --cgroup narrow a system-wide session: add -a");
		if (a->sys.container && !a->sys.all && !a->pid)
			argp_error(state, "--container needs -a (its processes) or -p PID (a pid inside it)");
		if (a->sys.cgroup && a->sys.container)
			argp_error(state, "give --cgroup or --container, not both");
		if (a->kill_at_end && !a->cmd)
			argp_error(state, "--kill-at-end ends a launched command: give -- CMD [ARGS...]");
		if (a->trampolines && a->no_trampolines)
			argp_error(state, "give --trampolines or --no-trampolines, not both");
		if (a->trampolines && a->sys.all)
			argp_error(state, "--trampolines patches one process's text: not with -a");
		if (a->call_sites_asked && (a->trampolines || a->no_trampolines))
			argp_error(state, "give one of --call-sites, --trampolines and --no-trampolines");
		if (!a->pid && !a->cmd && !a->sys.all)
			argp_error(state, "give a command to launch (-- CMD [ARGS...]), -p PID or -a");
		/* call sites unless another way is asked for; -a writes into every process that
		 * maps a traced module, so there only when asked */
		a->call_sites = a->call_sites_asked ||
				(!a->sys.all && !a->trampolines && !a->no_trampolines);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void raise_nofile_limit(void)
{
	struct rlimit rl;

	/* two files per live thread: many-threaded targets need more than the usual 1024 */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * default_ring_size - 16 MiB per online CPU, as a power of two from 16 MiB to 256 MiB. Each CPU
 * can fill the ring while the recorder waits for a CPU of its own: on a loaded machine a traced
 * program made 25 M events in 35 s, and lost 16% of them with an 8 MiB ring and none with 32 MiB.
 */
static size_t default_ring_size(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t size = 16u << 20;

	while (cpus > 1 && size < (256u << 20)) {
		size <<= 1;
		cpus = (cpus + 1) / 2;
	}
	return size;
}

static int record_main(struct record_args *a)
{
	struct probe_opts po = { .ring_size = a->ring_size ? a->ring_size : default_ring_size() };
	struct proc_child child = { .pid = -1, .gate_fd = -1, .exec_err_fd = -1 };
	struct rm_modules mods = { 0 };
	struct probes *probes = NULL;
	struct recorder *rec = NULL;
	char *session_dir = NULL;
	const char *reason = NULL, *ready;
	sigset_t sigs;
	int sigfd = -1, err, ret = 1, status;
	pid_t target, link_pid;
	struct tramp_process *tp = NULL;
	struct cs_process *cp = NULL;
	struct cs_watch *cs_watch = NULL;
	struct cs_all *cs_all = NULL;           /* -a --call-sites */
	bool tramps, sites, ended_by_us = false;      /* --kill-at-end sent the signal that ended it */
	double t0;

	raise_nofile_limit();
	atf_file_mode_set(a->mode >= 0 ? (mode_t)a->mode : ATF_FILE_MODE_DEFAULT);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR1);      /* toggles detail (recorder_detail.c) */
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sigfd < 0) {
		fprintf(stderr, "atftrace record: signalfd: %s\n", strerror(errno));
		goto cleanup;
	}
	/* --cgroup/--container first: -p with --container is a pid inside the container */
	if (rs_target_configure(&a->sys, &po, a->verbose) < 0 ||
	    (a->sys.container && a->pid && rs_container_pid(&a->sys, a->pid, &a->pid) < 0))
		goto cleanup;
	if (a->pid && !proc_alive(a->pid)) {
		fprintf(stderr, "atftrace record: -p %d: no such process\n", (int)a->pid);
		goto cleanup;
	}
	if (a->outdir && record_outdir_check(a->outdir, a->force) < 0)
		goto cleanup;
	/* symbols first: a bad -f fails before anything is created */
	if (rm_modules_open(&mods, &a->spec, a->pid, a->cmd ? a->cmd[0] : NULL, a->verbose) < 0)
		goto cleanup;
	/* code that another session rewrote (its trampolines) must get no probe: in a -p target,
	 * or, system-wide, in any process that has trampolines */
	if (a->pid) {
		tramp_note_leftovers(a->pid);   /* a session that died unrestored: say how to undo it */
		tramp_skip_rewritten(a->pid, mods.m, mods.n, a->verbose);
	} else if (a->sys.all) {
		tramp_skip_rewritten_everywhere(mods.m, mods.n, a->verbose);
	}
	if (filter_resolve(&a->filter, &mods, &a->detail) < 0 || detail_resolve(&a->detail, &mods) < 0)
		goto cleanup;
	detail_probe_opts(&a->detail, &po);
	if (args_resolve(&a->args, &mods, a->verbose) < 0)
		goto cleanup;
	args_probe_opts(&a->args, &po);
	/* typed arguments need registers and strings, not stack: none unless detail is asked for */
	if (po.args_wanted && !a->detail.always && !a->detail.non_globs && a->detail.after_s < 0 &&
	    !a->detail.stack_bytes_given)
		po.stack_bytes = 0;
	filter_probe_opts(&a->filter, &po);
	po.wakeup_bytes = (uint32_t)(po.ring_size / 4);
	po.system_wide = a->sys.all && !a->sys.npid_filter;     /* --pid-filter: the tgid filter */
	/* system-wide, every child is traced anyway, and found by its first event */
	po.follow_fork = a->follow_fork && !po.system_wide;
	po.announce_tasks = po.exclude_self = a->sys.all;
	po.verbose = a->verbose;
	po.unwind_hooks = mods.unwind_hooks;
	/* the default's call sites give way to plain probes where they would record less */
	if (a->call_sites && !a->call_sites_asked && record_call_sites_unsuited(a->pid)) {
		a->call_sites = false;
		a->no_trampolines = true;
	}
	/* only entry trampolines write a function's entry: the guard protects them alone */
	po.reg_guard = a->trampolines;
	po.call_sites = a->call_sites;
	err = probes__open(&probes, &po);
	if (err < 0) {
		fprintf(stderr, "atftrace record: cannot load the BPF probes: %s%s\n", strerror(-err),
			err == -EPERM ? " (run as root)" : "");
		goto cleanup;
	}
	if (a->cmd) {
		err = proc_child__spawn_gated(&child, mods.exe_path, a->cmd);
		if (err < 0) {
			fprintf(stderr, "atftrace record: cannot fork: %s\n", strerror(-err));
			goto cleanup;
		}
		target = child.pid;
	} else {
		target = a->pid;
	}
	session_dir = record_session_dir(a->outdir);
	if (!session_dir)
		goto cleanup;
	struct recorder_opts ro = { .session_dir = session_dir, .probes = probes, .wake_fd = sigfd,
				    .verbose = a->verbose, .system_wide = a->sys.all,
				    .probes_everywhere = a->follow_fork || a->sys.all,
				    .record_filter = filter_active(&a->filter) ? a->filter.spec : NULL,
				    .filter_min_ns = a->filter.min_ns };
	err = recorder__new(&rec, &ro);
	for (size_t i = 0; !err && i < mods.n; i++)
		err = recorder__add_module(rec, mods.m[i]);
	if (!err && !a->sys.all)      /* -a: processes are added by their first event */
		err = recorder__add_process(rec, target, a->cmd, a->cmd ? (size_t)a->ncmd : 0,
					    a->cmd != NULL);
	if (err >= 0)
		err = args_save(&a->args, session_dir);        /* how dump prints -A/-R values */
	if (err >= 0)
		err = args_live(&a->args, &mods, probes, session_dir);
	if (err < 0) {
		fprintf(stderr, "atftrace record: cannot start the recorder in %s: %s\n", session_dir,
			strerror(-err));
		goto cleanup;
	}
	for (size_t i = 0; i < a->sys.npid_filter && err >= 0; i++)
		err = probes__add_pid(probes, target = a->sys.pid_filter[i]);
	if (!a->sys.all)
		err = probes__add_pid(probes, target);
	if (err < 0) {
		fprintf(stderr, "atftrace record: cannot trace process %d: %s\n", (int)target,
			strerror(-err));
		goto cleanup;
	}
	link_pid = a->follow_fork || a->sys.all ? 0 : target;
	/* the text is written (entry trampolines or call sites) where it can be; plain probes
	 * otherwise, with a line that says why */
	tramps = record_trampolines_use(a->no_trampolines || a->sys.all,
					a->trampolines || a->call_sites_asked, a->verbose,
					a->call_sites ? "call sites" : "entry trampolines", probes);
	sites = tramps && a->call_sites;
	tramps = tramps && !sites;
	if ((tramps || sites) && a->cmd && (err = tramp_seize_child(target)) < 0) {
		fprintf(stderr, "atftrace record: cannot trace %d to place %s (%s): plain probes\n",
			(int)target, sites ? "call-site stubs" : "trampolines", strerror(-err));
		tramps = sites = false;
	}
	/* the target's later programs (exec) and libraries (dlopen): user/record/record_live.c;
	 * a container's files are never opened by host paths, so its modules stay as attached.
	 * Before any function probe: a -p target is held from now on at each exec and dlopen, so
	 * an unwinder it maps meanwhile is hooked before a traced frame can meet a throw */
	if (!a->sys.all && !container_other_root(target) &&
	    rm_modules_watch(&mods, probes, rec, target, a->follow_fork ? 0 : target) < 0) {
		fprintf(stderr, "atftrace record: out of memory\n");
		goto cleanup;
	}
	/* -p with trampolines: the modules are attached with them, only the hooks here */
	if (tramps && !a->cmd)
		rm_modules_attach_hooks(&mods, probes, link_pid);
	else if (rm_modules_attach(&mods, probes, link_pid) < 0)
		goto cleanup;
	if (a->cmd) {
		err = proc_child__release(&child);
		if (err < 0) {
			fprintf(stderr, "atftrace record: cannot run %s: %s\n", mods.exe_path,
				strerror(-err));
			goto cleanup;
		}
	}
	/* to its entry, its holds met meanwhile: the libraries ld.so mapped have their probes
	 * before the trampolines or call sites are placed there, and before main runs */
	if ((tramps || sites) && a->cmd && record_run_to_entry(rec, target) < 0)
		tramps = sites = false;
	if (tramps && record_trampolines_attach(&mods, probes, target, link_pid, a->cmd != NULL,
						 a->verbose, &tp) < 0)
		goto cleanup;
	if (sites && record_call_sites_attach(rec, &mods, probes, target, link_pid, a->cmd != NULL,
					      a->verbose, filter_active(&a->filter), &cp) < 0)
		goto cleanup;
	recorder__set_trampolines(rec, tp);
	if (record_call_sites_watch(rec, probes, cp, a->verbose, &cs_watch) < 0 ||
	    (a->sys.all && a->call_sites &&
	     record_call_sites_all(rec, &mods, probes, &a->sys, a->verbose, filter_active(&a->filter),
				   &cs_all) < 0))
		goto cleanup;
	rm_modules_trampolines(&mods, tp);     /* libraries it maps later get them too */
	if (cp)                                 /* and their call sites */
		rm_modules_on_mapped(&mods, record_call_sites_mapped, cs_watch);
	ready = a->ready_file;
	if (ready && (err = ready_file_signal(ready, a->force)) < 0)
		goto cleanup;
	if (!err)
		ready = NULL;           /* done; else record_run() waits for the FIFO's reader */
	if (a->sys.all)
		fprintf(stderr, "atftrace record: system-wide%s%s: %zu function%s in %zu module%s; "
			"recording to %s\n", a->sys.cgroup_dir[0] ? ", cgroup " : "", a->sys.cgroup_dir,
			mods.attached, mods.attached == 1 ? "" : "s", mods.n, mods.n == 1 ? "" : "s", session_dir);
	else if (!mods.attached && mods.npending)
		/* every -f names a library the target has not loaded yet (record_live.c attaches it) */
		fprintf(stderr, "atftrace record: %s %d: no function attached yet: %s%s attached when "
			"loaded; recording to %s\n", a->cmd ? "launched" : "attached to", (int)target,
			mods.pending[0].name, mods.npending > 1 ? " and other libraries are" : " is",
			session_dir);
	else
		fprintf(stderr, "atftrace record: %s %d: %zu function%s in %zu module%s; recording to %s\n",
			a->cmd ? "launched" : "attached to", (int)target, mods.attached,
			mods.attached == 1 ? "" : "s", mods.n, mods.n == 1 ? "" : "s", session_dir);
	t0 = (double)clock_mono_ns() / 1e9;
	reason = record_run(rec, sigfd, a->duration, &a->detail, probes, a->sys.all, ready, a->force);
	/* the target's text is the file's again before the session ends */
	record_trampolines_restore(tp);
	record_call_sites_restore(rec, cp);
	record_call_sites_restore_forked(cp, a->verbose);      /* and in the children it forked */
	record_call_sites_all_restore(cs_all);
	err = recorder__finish(rec, reason ? reason : "recorder error");
	if (!reason || err < 0)
		goto cleanup;
	record_summary(rec, session_dir, reason, (double)clock_mono_ns() / 1e9 - t0);
	if (probes__filtered_unattributed(probes))
		fprintf(stderr, "atftrace record: %llu calls left out by the record-time filters are in no "
			"thread's count (too many threads)\n",
			(unsigned long long)probes__filtered_unattributed(probes));
	{
		struct recorder_stats st;

		recorder__stats(rec, &st);
		rm_modules_report_end(&mods, st.events, st.lost_events, reason);
	}
	if (a->kill_at_end && a->cmd && proc_alive(target)) {
		fprintf(stderr, "atftrace record: --kill-at-end: sending SIGTERM to %d\n", (int)target);
		kill(target, SIGTERM);
		ended_by_us = true;
	}
	status = a->cmd ? recorder__exit_status(rec, target) : -1;
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status))
		fprintf(stderr, "atftrace record: the target exited with status %d\n",
			WEXITSTATUS(status));
	{
		struct recorder_stats st;
		recorder__stats(rec, &st);
		ret = st.write_errors || st.write_failed ? 1 : 0;
	}
	/* as a shell reports a command killed by a signal: 128 + its number */
	if (status >= 0 && WIFSIGNALED(status) && !ended_by_us) {
		fprintf(stderr, "atftrace record: the target was killed by signal %d (SIG%s: %s); "
			"exit status %d\n", WTERMSIG(status), sigabbrev_np(WTERMSIG(status)) ?: "?",
			strsignal(WTERMSIG(status)), 128 + WTERMSIG(status));
		ret = ret ? ret : 128 + WTERMSIG(status);
	}
cleanup:
	if (child.gate_fd >= 0)
		proc_child__abort(&child);      /* never released: it exits 127 without running */
	record_trampolines_restore(tp);
	record_call_sites_restore(rec, cp);
	record_call_sites_all_restore(cs_all);
	recorder__set_trampolines(rec, NULL);
	recorder__free(rec);
	record_call_sites_watch_free(cs_watch);
	record_call_sites_all_free(cs_all);
	probes__free(probes);
	tramp_process__free(tp);
	cs_process__free(cp);
	rm_modules_free(&mods);
	free(session_dir);
	if (sigfd >= 0)
		close(sigfd);
	return ret;
}

static int run(int argc, char **argv, bool attach_cmd)
{
	struct record_args a = { .attach_cmd = attach_cmd, .mode = -1 };
	const struct argp_child children[] = {
		{ &detail_argp, 0, "Registers and stack (detail):", 0 },
		{ &system_argp, 0, "System-wide sessions and containers:", 0 },
		{ &args_argp, 0, "Typed arguments and return values:", 0 },
		{ &filter_argp, 0, "Record-time filters (uftrace's record options):", 0 },
		{ 0 }
	};
	struct argp argp = {
		.options = options,
		.parser = parse_opt,
		.children = children,
		.args_doc = attach_cmd ? "PID" : "-- CMD [ARGS...]\n-p PID",
		.doc = attach_cmd ? "Trace a running process (the same as record -p PID)."
				  : "Trace a command from its first instruction, or a running process.",
	};
	int ret;

	char *name = attach_cmd ? "atftrace attach" : "atftrace record";
	char *argv0 = argv[0];

	argp_err_exit_status = 1;
	argv[0] = name;     /* argp names the program by argv[0]: "atftrace record: <what>: <why>" */
	int perr = argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a);
	argv[0] = argv0;
	if (perr)
		ret = 1;
	else
		ret = record_main(&a);
	rm_spec_free(&a.spec);
	sym_debug_dirs_free();
	detail_args_free(&a.detail);
	args_opts_free(&a.args);
	rs_target_free(&a.sys);
	filter_args_free(&a.filter);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_attach(int argc, char **argv)
{
	return run(argc, argv, true);
}
