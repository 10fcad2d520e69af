/* SPDX-License-Identifier: MIT */
/*
 * Out-of-line entry trampolines (user/probe/trampoline*.c).
 *
 * A function whose entry the kernel would single-step (or emulate) gets its first instructions
 * moved to a trampoline `nop; <moved instructions>; jmp back` in an executable, file-backed
 * private mapping (a memfd) inside the traced process, within +-2 GiB of its module, and a
 * `jmp trampoline` in their place. The uprobe-session link is attached on the memfd at each
 * trampoline's nop, with the function_id as cookie: the BPF programs and the records are the
 * same as with a probe on the function itself, only the kernel emulates the probed nop
 * instead of single-stepping the function's own first instruction (user/probe/
 * trampoline_plan.c says why not a 5-byte nop).
 *
 * The text is changed only while every thread of the process is stopped, never under a
 * thread's instruction pointer (or a signal frame's), and is written back at the end. A
 * function that cannot be patched keeps the plain probe, with the reason recorded in
 * sym_func.tramp (list-functions and record -v show it).
 */
#ifndef ATFTRACE_TRAMPOLINE_H
#define ATFTRACE_TRAMPOLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "probes.h"
#include "symbols.h"

/* Why a function is (not) entered through a trampoline; stored in sym_func.tramp. */
enum tramp_reason {
	TRAMP_UNSET = 0,            /* not considered (not selected, or trampolines off) */
	TRAMP_OK,                   /* entered through a trampoline */
	TRAMP_NOT_NEEDED,           /* starts with a 5-byte nop: already the kernel's fast path */
	TRAMP_SHORT,                /* shorter than the 5-byte jmp */
	TRAMP_BRANCH_IN,            /* the function branches (or points) into the replaced bytes */
	TRAMP_INSN,                 /* a first instruction that cannot run elsewhere (call, syscall, ...) */
	TRAMP_DECODE,               /* bytes the decoder does not accept as code */
	TRAMP_RANGE,                /* a displacement does not reach from the trampoline */
	TRAMP_THREAD_INSIDE,        /* a thread (or a signal frame) was inside the replaced bytes */
	TRAMP_TEXT_DIFFERS,         /* the process's text is not the file's (patched by someone else) */
	TRAMP_NO_AREA,              /* no trampoline mapping could be made within +-2 GiB */
	TRAMP_NOT_MAPPED,           /* the module was not mapped when the probes were attached */
	TRAMP_NO_PTRACE,            /* the process could not be stopped (traced by another tool?) */
	TRAMP_LINK_FAILED,          /* the probe on the trampoline could not be attached */
	TRAMP_REWRITTEN,            /* its code in the process was rewritten (not a breakpoint): untraced */
	TRAMP_SECCOMP,              /* the process has a seccomp filter: no syscall is run inside it */
	TRAMP_EMULATED,             /* the kernel emulates its first instruction: no faster through one */
	TRAMP_GIVEN_BACK,           /* another tool probed it during the session: plain probe since */
	TRAMP_NO_GUARD,             /* the registration guard is not available: no trampolines */
	TRAMP_TEXTREL,              /* the module has text relocations: ld.so may still write its code */
	TRAMP_NREASONS
};

/** tramp_reason_str - a short name: "trampoline", "nop5", "short", "branch-in", ... */
const char *tramp_reason_str(enum tramp_reason r);

/**
 * tramp_check_module - decide from the file alone which selected functions of @m could be
 * entered through a trampoline; sets each one's sym_func.tramp. For list-functions.
 * Returns how many could, or a negative errno when the file cannot be read.
 */
int tramp_check_module(struct sym_module *m);

/**
 * tramp_skip_rewritten - leave out (unselect) each selected function of @mods whose first
 * bytes in the running process @pid are neither the file's nor the file's with a breakpoint
 * on the first byte: another tool (another atftrace --trampolines session) rewrote them, and a
 * probe there would run the file's instruction over someone else's code. One line per module
 * that has such functions (one per function with @verbose). A function with a breakpoint of
 * another tool's at its entry stays selected, its tramp set to TRAMP_TEXT_DIFFERS: call sites
 * do not redirect its calls (a -v line each). Returns how many were left out.
 */
int tramp_skip_rewritten(pid_t pid, struct sym_module **mods, size_t nmods, bool verbose);

/**
 * tramp_skip_rewritten_everywhere - tramp_skip_rewritten() for every process that has an
 * atftrace trampoline mapping: a system-wide probe on one of its rewritten functions would
 * crash it. Returns how many functions were left out.
 */
int tramp_skip_rewritten_everywhere(struct sym_module **mods, size_t nmods, bool verbose);

struct tramp_process;

struct tramp_opts {
	pid_t link_pid;             /* the links' process filter (0: every process, --follow-fork) */
	bool launched;              /* a child seized with tramp_seize_child() before its exec */
	bool verbose;               /* one line per function that keeps a plain probe */
	bool held;                  /* tramp_process__attach_module: the process is held at ld.so's
				     * call for the module's mapping, none of its code ran since */
};

/** tramp_seize_child - trace a gated child before it is released, so it stops at its exec. */
int tramp_seize_child(pid_t pid);

/**
 * tramp_process__attach - give the selected functions of @mods in process @pid trampolines and
 * attach every module's probes: a link on each module's trampoline file for the patched ones,
 * and probes__attach_module() for the rest (replacing a plain link attached before, as for a
 * launched command). With @o->launched, first waits for the child's exec and runs it to its
 * entry point, after the loader mapped its libraries and before the program's first
 * instruction. The process runs again when this returns. A module not mapped then keeps its
 * plain probes. Returns the number of functions attached (@ntramp of them through
 * trampolines), or a negative errno when probes could not be attached at all. Never leaves a
 * half-patched function: any failure falls back to plain probes for what it concerns.
 */
int tramp_process__attach(struct tramp_process **out, struct probes *p, struct sym_module **mods,
			  size_t nmods, pid_t pid, const struct tramp_opts *o, size_t *ntramp);

/**
 * tramp_process__restore - stop the process and write every function's original bytes back
 * (the trampolines stay mapped: a thread still in one finishes through it). Nothing to do
 * when the process is gone. Returns the number of functions restored, or a negative errno.
 */
int tramp_process__restore(struct tramp_process *t);

/**
 * tramp_process__check - the registration guard stopped the patched processes (REC_REG_GUARD),
 * and the caller holds them stopped: wait until the other process's registering syscall is
 * done, and give every patched function that another tool's breakpoint now sits on its
 * original bytes back (around that breakpoint), with a plain probe of ours in the traced
 * process; one line each. The number given back.
 */
int tramp_process__check(struct tramp_process *tp);

/**
 * tramp_process__pids - the processes with this patched text, which the guard stops: the
 * traced one and the children it forked during the session. Fills @out (@cap of them) and
 * returns how many there are.
 */
size_t tramp_process__pids(const struct tramp_process *tp, pid_t *out, size_t cap);

/**
 * tramp_process__add_child - @child was forked by the process (or by one of its children) and
 * runs the same patched text: guard it, and restore its text at the end.
 */
void tramp_process__add_child(struct tramp_process *tp, pid_t child);



/* A probe site at a 5-byte nop: file offset @offset of the file (@dev, @ino). */
struct nop5_site {
	uint64_t dev, ino, offset;
};

/**
 * nop5_sites_fix - process @pid, a forked child held stopped: each of @sites (mapped where
 * its file is) that the kernel optimised into a call to a [uprobes-trampoline] page @pid
 * does not have (the parent's) gets back the int3 the kernel put there first, with @probed
 * (the recorder: our probe still handles it), or its 5-byte nop without (the watchdog: the
 * probes died with the recorder). A call into a page @pid has is left alone. Returns the
 * number of sites written, or a negative errno.
 */
int nop5_sites_fix(pid_t pid, const struct nop5_site *sites, size_t n, bool probed);

/**
 * tramp_process__attach_module - module @m of the process, mapped after tramp_process__attach()
 * (a library loaded with dlopen, while ld.so holds it at its debug-state call; a program's
 * library attached at its exec, once mapped), or mapped again after it was unmapped (dlclose,
 * then dlopen): stop every thread, patch @m's selected functions with the same checks as
 * tramp_process__attach() and attach its probes (the link on its trampoline file, plain probes
 * for the rest), in place of the links attached for it before; mapped again at the same place,
 * its trampolines are reused and only its jmps written again. A module whose links exist is
 * switched only when none of its code can have run since it was mapped (@o->held, or no thread
 * in it); otherwise it keeps, or gets, plain probes on every function. @m is restored with the
 * others at the end. A module already patched in its current mapping, or one that got no
 * trampoline once mapped (its plain probes follow every mapping of the file), is left as it is:
 * 0. Returns the number of functions attached (@ntramp of them through trampolines), or a
 * negative errno when its probes could not be attached (or, for a module patched before, the
 * process could not be stopped to check it: nothing changed).
 */
int tramp_process__attach_module(struct tramp_process *t, struct probes *p, struct sym_module *m,
				 const struct tramp_opts *o, size_t *ntramp);

/** tramp_process__pid - the process @t patches. */
pid_t tramp_process__pid(const struct tramp_process *t);

/**
 * tramp_process__wants - has @t patched @m (its functions are entered through trampolines, or
 * were, in a mapping since unloaded), or was @m attached before it was mapped? Then
 * tramp_process__attach_module() is called again for @m whenever the process maps it anew.
 */
bool tramp_process__wants(const struct tramp_process *t, const struct sym_module *m);

/** tramp_process__free - release (restores first if that was not done). NULL is ignored. */
void tramp_process__free(struct tramp_process *t);

#endif
