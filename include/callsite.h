/* SPDX-License-Identifier: MIT */
/*
 * Call-site redirection (user/patch/callsite*.c), `record --call-sites`.
 *
 * Instead of writing a `jmp` over a traced function's first bytes (entry trampolines,
 * include/trampoline.h), each direct call `call f` (e8 rel32) in f's module is pointed at a
 * small stub in the module's trampoline memfd, which probes the entry, calls f's first
 * instructions relocated (then f itself, past them), probes the return and jumps back after the
 * call (user/patch/callsite_plan.h). f's own first bytes stay the file's: another tool's uprobe
 * on f works as it would without us, and f keeps its plain probe for the calls no stub covers
 * (tail calls, indirect calls). Calls from other modules through their PLT are redirected the
 * same way, to stubs in a memfd near the calling module that jump to f's relocated first
 * instructions in f's module's memfd. A redirected call never runs f's
 * first bytes, so no call is counted twice; it returns into the stub, not into a uretprobe
 * trampoline, so it has no nesting limit.
 *
 * The rel32s are written only while every thread is stopped, never where a thread's
 * instruction pointer or a word of a stack lies inside the 5 bytes, and are written back at
 * the end where they are still ours; the stubs stay mapped (a thread may be inside one), and
 * without their probes (a recorder killed with -9) they are plain code. The stubs' memfd starts
 * with a patch log of every rel32 written (include/patch_log.h), so `atftrace restore -p PID`
 * undoes them after a session that did not.
 */
#ifndef ATFTRACE_CALLSITE_H
#define ATFTRACE_CALLSITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probes.h"
#include "symbols.h"

struct cs_process;

struct cs_opts {
	pid_t link_pid;             /* the links' process filter (0: every process, --follow-fork) */
	bool launched;              /* a child seized with tramp_seize_child() before its exec */
	bool verbose;               /* one line per module: sites redirected, and why not more */
	bool unwind_hooked;         /* the C++ unwind hooks cover the unwinder it maps, if any */
	bool tails;                 /* redirect tail calls too (user/patch/callsite_tail.c) */
};

/**
 * cs_process__attach - redirect the direct calls to the selected functions of @mods in process
 * @pid to call-site stubs and attach the stubs' probes. The functions' own plain probes must be
 * attached already (probes__attach_module()). With @o->launched, first waits for the child's
 * exec and runs it to its entry point. Nothing is redirected in a process that has a seccomp
 * filter, nor in one that maps a C++ unwinder without @o->unwind_hooked (an exception would
 * unwind through a stub, which has no unwind information; the hooks map each stub's return
 * back to its call site's, bpf/site_unwind.bpf.h); one line says so. The process runs again when this returns. Returns 0 with
 * @nsites set to the number of sites redirected, or a negative errno (nothing redirected).
 */
int cs_process__attach(struct cs_process **out, struct probes *p, struct sym_module **mods,
		       size_t nmods, pid_t pid, const struct cs_opts *o, size_t *nsites);

/**
 * cs_process__attach_late - after the process mapped a module (dlopen): stop it and redirect
 * the sites of the modules of @mods (all the session's, its plain probes attached) that were
 * not mapped so far, and the PLT calls of the modules not searched so far into the traced ones,
 * as cs_process__attach() does; nothing in a process it refused. One that maps a C++ unwinder
 * now has every redirected call written back at once, as at the session's end (one line).
 * @nsites: sites redirected now. 0 or a negative errno.
 */
int cs_process__attach_late(struct cs_process *cp, struct probes *p, struct sym_module **mods,
			    size_t nmods, const struct cs_opts *o, size_t *nsites);

/**
 * cs_process__restore - stop the process and write each redirected site's original rel32 back,
 * where our call is still there and the module is still mapped where it was (the stubs stay
 * mapped), and mark each area's patch log restored. Nothing to do when the process is gone.
 * Returns the number of sites restored, or a negative errno (nothing written: `atftrace
 * restore -p` can do it later).
 */
int cs_process__restore(struct cs_process *cp);

struct cs_hb_note;

/* One function handed back: its module's path, its name, the sites written back of @sites. */
typedef void (*cs_handed_fn)(const char *module, const char *func, size_t written, size_t sites,
			     void *ctx);

/**
 * cs_process__hand_back - another tool registered the uprobes @notes (@n; bpf/cs_handback.h):
 * each redirected function that one of them lies on (its entry or its moved first
 * instructions; a note of any offset: every function of that file; of any file: every function)
 * gets its sites' original calls back, while the process is stopped, so that its calls reach
 * its first bytes again, where the other tool and our plain entry probe see them; @report is
 * called for each. Returns how many functions were handed back (0: none was named, or the
 * process is gone), or a negative errno (nothing written).
 */
int cs_process__hand_back(struct cs_process *cp, const struct cs_hb_note *notes, size_t n,
			  cs_handed_fn report, void *ctx);

/** cs_kernel_dev - the kernel's encoding (a uprobe's inode's s_dev) of stat's st_dev @dev. */
uint64_t cs_kernel_dev(uint64_t dev);

/**
 * cs_process__forget - the process called exec: its redirected sites went with its old image,
 * so nothing is restored, handed back or redirected in it any more (its stubs' links stay until
 * cs_process__free()).
 */
void cs_process__forget(struct cs_process *cp);

/** cs_process__pid - the process @cp redirected. */
pid_t cs_process__pid(const struct cs_process *cp);

/** cs_process__free - release (restores first if that was not done). NULL is ignored. */
void cs_process__free(struct cs_process *cp);

#endif
