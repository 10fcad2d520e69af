/* SPDX-License-Identifier: MIT */
/*
 * Entry trampolines in a process, shared by user/probe/trampoline.c (patch, attach, restore)
 * and user/probe/trampoline_guard.c (another tool's uprobe, forked children). Private to
 * user/probe/.
 */
#ifndef ATFTRACE_TRAMPOLINE_INT_H
#define ATFTRACE_TRAMPOLINE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "ptrace_target.h"
#include "trampoline.h"
#include "trampoline_plan.h"

struct tramp_fn {
	struct sym_func *f;
	uint64_t patch_addr;                /* in the process */
	struct tramp_plan plan;             /* patch_addr as in the file */
	uint8_t moved[32];                  /* the file's bytes from the patch address */
	uint8_t jmp[TRAMP_JMP_LEN];
	uint32_t slot;
	bool given_back;                    /* another tool probed it: its own bytes, a plain probe */
};

struct tramp_mod {
	struct sym_module *m;
	int fd;                             /* our copy of the trampoline memfd, or -1 */
	uint64_t area;
	uint64_t dev, ino;                  /* the module's file: what a patch address must still map */
	struct tramp_fn *fns;               /* the patched ones */
	size_t nfns;
	uint8_t *log;                       /* the area's patch log as written (code_off bytes) */
	uint32_t code_off;                  /* the trampolines start after the log's pages */
};

/* Where slot @slot of @tm's trampolines is: in its file, and in the process. */
static inline uint64_t tramp_slot_off(const struct tramp_mod *tm, uint32_t slot)
{
	return tm->code_off + (uint64_t)slot * TRAMP_SLOT;
}

static inline uint64_t tramp_slot_addr(const struct tramp_mod *tm, uint32_t slot)
{
	return tm->area + tramp_slot_off(tm, slot);
}

/* A process forked from a patched one: its text is patched too (trampoline_guard.c). */
struct tramp_child {
	pid_t pid;
	uint64_t start_ticks;
	bool guarded;                       /* in the guard's list: the guard stops it */
};

struct tramp_process {
	pid_t pid;
	uint64_t start_ticks;               /* the process's start: a reused pid is not ours */
	bool own_child, restored, verbose, no_guard, children_unguarded;
	bool guarded;                       /* in the guard's list: the guard stops it */
	struct probes *probes;              /* the guard, and plain probes for given-back functions */
	pid_t link_pid;
	struct tramp_mod *mods;
	size_t nmods;
	struct tramp_child *children;       /* processes it forked meanwhile: the same patched text */
	size_t nchildren, cap_children;
};

/**
 * tramp_fn_write_original - write @t's original bytes back wherever our jmp's bytes still
 * are in the process @pt, keeping anything else there (another tool's int3). 1 when written,
 * 0 when none of our bytes was left, or a negative errno.
 */
int tramp_fn_write_original(struct pt_target *pt, const struct tramp_fn *t);

struct ta_maps;

/**
 * tramp_log_init - encode the patch log of @tm (its module, its patched functions @tm->fns, this
 * recorder as owner) into @buf, the first @size bytes of the area's file, and keep a copy for
 * tramp_log_mark_restored(); sets @tm->code_off to @size. 0 or a negative errno.
 * (trampoline_log.c)
 */
int tramp_log_init(struct tramp_mod *tm, const struct ta_maps *maps, uint8_t *buf, uint32_t size);

/**
 * tramp_log_mark_restored - the session wrote @tm's original bytes back: say so in its area's
 * patch log (through our descriptor), so that a later `atftrace restore` has nothing to do.
 */
void tramp_log_mark_restored(struct tramp_mod *tm);

/** tramp_children_restore - tramp_process__restore() for the processes forked meanwhile. */
void tramp_children_restore(struct tramp_process *tp);

/* trampoline.c, for trampoline_late.c and trampoline_end.c: one module attached with
 * trampolines (all threads of @pt stopped; plain probes for the rest), plain probes on its
 * functions without (or, with @via_tramp, with) a trampoline, its jmps written (@on) or taken
 * out, its -v summary, a reason for all its selected functions. */
int tramp_mod_attach(struct probes *p, struct pt_target *pt, const struct ta_maps *maps,
		     struct tramp_mod *tm, const struct tramp_opts *o);
int tramp_mod_attach_plain(struct probes *p, struct sym_module *m, pid_t pid, bool verbose,
			   bool via_tramp);
size_t tramp_mod_write(struct pt_target *pt, struct tramp_mod *tm, bool on);
void tramp_mod_report(const struct tramp_mod *tm);
void tramp_mark_all(struct sym_module *m, enum tramp_reason r);

/**
 * tramp_keep_still_mapped - forget the patched functions whose patch address no longer maps
 * their module's file at the same offset (a library unloaded since): nothing is written there.
 * (trampoline_late.c)
 */
void tramp_keep_still_mapped(struct tramp_process *tp);

#endif
