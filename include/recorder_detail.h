/* SPDX-License-Identifier: MIT */
/*
 * Detail options of `atftrace record` (user/record/recorder_detail.c): --detail, --detail-on,
 * --detail-for, --detail-count, --detail-after, --stack-bytes, and SIGUSR1. Private to record.
 *
 * Use: add detail_argp as an argp child whose input is a struct detail_args; after the modules
 * are resolved call detail_resolve() and detail_probe_opts(); in the drain loop call
 * detail_tick() and, on SIGUSR1, detail_toggle().
 */
#ifndef ATFTRACE_RECORDER_DETAIL_H
#define ATFTRACE_RECORDER_DETAIL_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "probes.h"
#include "record_modules.h"

#define DETAIL_DEFAULT_STACK_BYTES 256

struct detail_args {
	bool always;                /* --detail=always: the global switch starts on */
	char **on_globs;            /* --detail-on [MODULE:]GLOB, repeatable */
	size_t non_globs;
	uint64_t on_count;          /* --detail-count N (0: not given) */
	uint64_t on_ns;             /* --detail-for DURATION (0: not given) */
	double after_s;             /* --detail-after SEC (< 0: not given) */
	uint32_t stack_bytes;       /* --stack-bytes N, 0..256 */
	bool stack_bytes_given;     /* --stack-bytes was given (else typed arguments alone take 0) */
	/* resolved and run-time state */
	uint64_t *trigger_ids;      /* function ids matching on_globs */
	size_t ntriggers;
	bool after_done;
};

/* argp child: its input must point at a struct detail_args (defaults are set at ARGP_KEY_INIT). */
extern const struct argp detail_argp;

/** detail_add_on - one more --detail-on glob (-T FUNC@detail gives them too); 0 or -ENOMEM. */
int detail_add_on(struct detail_args *d, const char *glob);

/**
 * detail_resolve - find the traced functions each --detail-on glob names, in every module of
 * @mods (MODULE, when given, is matched against the module's path or its base name). A glob
 * that names no traced function is an error: one line on stderr, -ENOENT.
 */
int detail_resolve(struct detail_args *d, const struct rm_modules *mods);

/** detail_probe_opts - copy the detail settings into @po (after detail_resolve). */
void detail_probe_opts(const struct detail_args *d, struct probe_opts *po);

/** detail_tick - turn the global switch on once @elapsed_s reaches --detail-after, and say so. */
void detail_tick(struct detail_args *d, struct probes *p, double elapsed_s);

/** detail_toggle - SIGUSR1: flip the global switch and say which way on stderr. */
void detail_toggle(struct detail_args *d, struct probes *p);

void detail_args_free(struct detail_args *d);

#endif
