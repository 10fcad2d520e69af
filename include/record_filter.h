/* SPDX-License-Identifier: MIT */
/*
 * Record-time call filters of `atftrace record` (user/record/record_filter.c), uftrace's record
 * options: -D/--depth, -t/--time-filter, -F/--filter, -N/--notrace, -T/--trigger, --trace.
 * The probes apply them before the ring (bpf/callfilter.bpf.h). Private to record, except
 * filter_parse_depth(), which dump's read-time -D shares.
 *
 * Use: add filter_argp as an argp child whose input is a struct filter_args; after the modules
 * are resolved call filter_resolve() (it also hands -T FUNC@detail to the detail options) and
 * filter_probe_opts().
 */
#ifndef ATFTRACE_RECORD_FILTER_H
#define ATFTRACE_RECORD_FILTER_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "probes.h"

struct rm_modules;
struct detail_args;

/* One -F, -N or -T argument: a function spec and what it does at its calls. */
struct filter_rule {
	char *spec;                 /* "[MODULE:]GLOB" */
	uint32_t flags;             /* FILTER_FN_* (bpf/atftrace.h) */
	uint32_t depth;             /* with FILTER_FN_DEPTH */
	bool detail;                /* -T FUNC@detail: a --detail-on window */
};

struct filter_args {
	uint32_t max_depth;         /* -D N (0: no limit) */
	uint64_t min_ns;            /* -t TIME (0: none) */
	bool trace_off;             /* --trace=off */
	struct filter_rule *rules;  /* -F, -N, -T, in the order given */
	size_t nrules;
	char *spec;                 /* the filter options as given, for the manifest */
	/* resolved: one entry per function with an action */
	uint64_t *fn_ids;
	struct filter_fn *fn_vals;
	size_t nfns;
	bool focus;                 /* some -F (or @filter) matched */
};

/* argp child: its input must point at a struct filter_args (zeroed at ARGP_KEY_INIT). */
extern const struct argp filter_argp;

/**
 * filter_parse_depth - a positive number of levels (-D), as record and dump take it.
 * 0, or -EINVAL.
 */
int filter_parse_depth(const char *s, uint32_t *out);

/**
 * filter_parse_trigger - "FUNC@ACTION[,ACTION...]" (-T) into @r; ACTION is depth=N, trace_on,
 * trace_off (also trace-on, trace-off), filter, notrace or detail. On error, 0 is not returned
 * and @why says what is wrong (one phrase).
 */
int filter_parse_trigger(const char *arg, struct filter_rule *r, const char **why);

/**
 * filter_resolve - find the traced functions of each -F/-N/-T spec in @mods; a spec that names
 * none is an error (one line on stderr, -ENOENT). -T FUNC@detail specs go to @detail as
 * --detail-on globs. Cross-option rules with detail are checked here (one line, -EINVAL).
 */
int filter_resolve(struct filter_args *f, const struct rm_modules *mods, struct detail_args *detail);

/** filter_probe_opts - copy the filter settings into @po (after filter_resolve). */
void filter_probe_opts(const struct filter_args *f, struct probe_opts *po);

/** filter_active - any record-time filter given. */
bool filter_active(const struct filter_args *f);

void filter_args_free(struct filter_args *f);

#endif
