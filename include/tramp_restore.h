/* SPDX-License-Identifier: MIT */
/*
 * Undo the patches of a session that ended without its restore (user/probe/trampoline_restore.c):
 * every trampoline area in a process describes itself (include/patch_log.h), so the patches can
 * be found, checked against what the process maps now, and written back from the outside
 * (`atftrace restore -p PID`), and a new session can say that they are there.
 */
#ifndef ATFTRACE_TRAMP_RESTORE_H
#define ATFTRACE_TRAMP_RESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "patch_log.h"

/* What one patch of an area is, or became, in the process. */
enum tramp_patch_state {
	TPATCH_UNCHECKED = 0,
	TPATCH_RESTORED,            /* our bytes were there: the original ones are written back
				     * (with --dry-run: would be) */
	TPATCH_ORIGINAL,            /* already the original bytes: nothing to write */
	TPATCH_FOREIGN,             /* neither: not ours to write */
	TPATCH_UNMAPPED,            /* its address no longer maps the module's file at its offset */
	TPATCH_FAILED,              /* the write failed */
};

struct tramp_patch {
	uint8_t state;              /* enum tramp_patch_state */
	uint8_t now[PATCH_LOG_MAX_BYTES];   /* the bytes found */
	uint8_t out[PATCH_LOG_MAX_BYTES];   /* the bytes written back */
};

/* One trampoline area found in a process. */
struct tramp_area {
	uint64_t lo, hi;            /* its mapping */
	uint64_t file_dev, file_ino;        /* its memfd */
	int err;                    /* 0, a PATCH_LOG_ERR_* of its header, or a negative errno */
	struct patch_log log;       /* its header, when err == 0 */
	pid_t owner;                /* a live session's process that holds it, or 0 */
	bool module_mapped;         /* the module is mapped where the header says */
	struct tramp_patch *patches;        /* one per record, after tramp_areas__restore() */
	unsigned restored, original, foreign, unmapped, failed;
};

struct tramp_areas {
	struct tramp_area *v;
	size_t n;
};

/**
 * tramp_areas__read - find every atftrace trampoline area in /proc/@pid/maps, read and check its
 * header (through /proc/@pid/mem), and tell whether a live session owns it: the recorder named
 * in the header is alive (same pid and start time), or any process holds a descriptor of the
 * area's memfd. 0 (@out may hold none), or a negative errno when the process cannot be read.
 */
int tramp_areas__read(pid_t pid, struct tramp_areas *out);

/**
 * tramp_areas__restore - for every area of @a whose header is sound, check each patch against
 * the process's maps and bytes and, unless @dry_run, write the original bytes back where ours
 * still are (another tool's int3 over them kept), every thread of @pid stopped with ptrace;
 * a stack word that holds a call-site stub's return gets its call site's (a C++ throw must not
 * meet a stub).
 * Fills each area's patches and counts. 0, or a negative errno when the process cannot be
 * stopped (-EPERM: another tracer holds it) or read: nothing is written then.
 */
int tramp_areas__restore(pid_t pid, struct tramp_areas *a, bool dry_run);

/** tramp_areas__free - release what tramp_areas__read() made. */
void tramp_areas__free(struct tramp_areas *a);

/**
 * tramp_note_leftovers - for a new session on @pid: when the process has patches of a session
 * that ended without restoring them (no live session owns their area) and some are still in
 * place, say so in one line on stderr (how many function entries, how many call sites), with the
 * command that undoes them. Returns how many patches are still in place.
 */
int tramp_note_leftovers(pid_t pid);

#endif
