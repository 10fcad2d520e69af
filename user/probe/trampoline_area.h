/* SPDX-License-Identifier: MIT */
/*
 * Where a module lies in a stopped process and where its trampolines can go
 * (user/probe/trampoline_area.c). Private to user/probe/.
 */
#ifndef ATFTRACE_TRAMPOLINE_AREA_H
#define ATFTRACE_TRAMPOLINE_AREA_H

/* The name of the trampoline memfd: /proc/PID/maps shows "/memfd:" TA_MEMFD_NAME " (deleted)". */
#define TA_MEMFD_NAME "atftrace-trampolines"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ptrace_target.h"

/* One line of /proc/PID/maps. */
struct ta_map {
	uint64_t lo, hi, offset;
	uint64_t dev, ino;
	bool exec;
	char kind;                  /* 'h' [heap], 's' [stack], 'x' the main executable, 'a' one of
				     * our trampoline or stub memfds, 0 other */
};

struct ta_maps {
	struct ta_map *v;
	size_t n;
};

/** ta_maps_read - every mapping of @pid, in address order; @exe_ino marks the executable's. */
int ta_maps_read(pid_t pid, struct ta_maps *out);
void ta_maps_free(struct ta_maps *m);

/**
 * ta_module_span - the lowest and highest address of the file (@dev, @ino) in @maps; false
 * when it is not mapped.
 */
bool ta_module_span(const struct ta_maps *maps, uint64_t dev, uint64_t ino, uint64_t *lo,
		    uint64_t *hi);

/**
 * ta_file_addr - the address where file offset @off of (@dev, @ino) is mapped executable, or 0.
 */
uint64_t ta_file_addr(const struct ta_maps *maps, uint64_t dev, uint64_t ino, uint64_t off);

/**
 * ta_find_gap - a free, page-aligned place for @size bytes from which every address in
 * [@lo, @hi) is within a rel32 reach: below the module first (the way mmap grows), never right
 * within 1 GiB above the executable or the heap (brk grows there) nor below the stack. 0 if none.
 */
uint64_t ta_find_gap(const struct ta_maps *maps, uint64_t lo, uint64_t hi, uint64_t size);

/**
 * ta_seccomp - is a seccomp mode (strict or filter) on for the thread that would run the
 * area's syscalls? A filter may kill the process for a syscall it does not expect, so none is
 * run then.
 */
bool ta_seccomp(const struct pt_target *t);

/**
 * ta_area_create - make the trampoline file: a memfd created in the stopped process @t, a
 * copy of its descriptor for us in @our_fd (sized @size: write the code through it), mapped
 * PROT_READ|PROT_EXEC, MAP_PRIVATE at exactly @addr in the process, and its descriptor there
 * closed again (only the mapping stays). 0 or a negative errno; nothing is left behind on
 * failure but, at worst, the mapping.
 */
int ta_area_create(struct pt_target *t, uint64_t addr, uint64_t size, int *our_fd);

struct sym_module;
struct patch_record;

/**
 * ta_log_encode - the patch log (include/patch_log.h) of the area at @area: the module @m
 * (its file @dev, @ino, and the executable mapping in @maps that holds @recs[0]), this recorder
 * as its owner, and the @n patches @recs (of any kind) about to be written. Encoded into @buf,
 * the area's first @size bytes (patch_log_size()), to be written into the memfd before any
 * patch; a copy replaces *@copy for ta_log_mark_restored(). 0 or a negative errno.
 * (trampoline_log.c, for entry trampolines and call-site stubs alike)
 */
int ta_log_encode(const struct sym_module *m, uint64_t dev, uint64_t ino, uint64_t area,
		  const struct ta_maps *maps, const struct patch_record *recs, uint32_t n,
		  uint8_t *buf, uint32_t size, uint8_t **copy);

/**
 * ta_log_mark_restored - the session wrote the original bytes back: mark the log @copy (@size
 * bytes, from ta_log_encode()) restored and write it through @fd, our descriptor of the memfd,
 * so that a later `atftrace restore` has nothing to do. Nothing when @fd < 0 or @copy is NULL.
 */
void ta_log_mark_restored(int fd, uint8_t *copy, uint32_t size);

#endif
