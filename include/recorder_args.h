/* SPDX-License-Identifier: MIT */
/*
 * Typed-argument options of `atftrace record` (user/record/recorder_args.c): -A/--argument,
 * -R/--retval, --auto-args, --string-bytes. Private to record.
 *
 * Use: add args_argp as an argp child whose input is a struct args_opts; after the modules are
 * resolved call args_resolve() and args_probe_opts(); once the session directory exists,
 * args_save() and args_live().
 */
#ifndef ATFTRACE_RECORDER_ARGS_H
#define ATFTRACE_RECORDER_ARGS_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "atf_args.h"
#include "probes.h"
#include "record_modules.h"

#define ARGS_DEFAULT_STRING_BYTES 64
#define ARGS_DWARF_ARGS 1u
#define ARGS_DWARF_RET  2u

struct args_opts {
	struct args_rule {                                  /* -A, -R */
		char *glob;
		struct atf_arg_spec spec;
		unsigned dwarf;     /* -A FUNC / -R FUNC: ARGS_DWARF_ARGS / _RET from DWARF */
	} *rules;
	size_t nrules;
	bool auto_args;             /* --auto-args */
	uint32_t string_bytes;      /* --string-bytes N, 1..255 */
	/* resolved */
	struct atf_args set;        /* every traced function's spec, and the enums */
	uint64_t *ids;
	struct arg_fn_spec *bpf;    /* bpf/args.h, one per set.fn */
	size_t *hits, *typed_hits;  /* per rule: functions matched, and typed from DWARF */
	bool want_dwarf, verbose, floats_noted;
	/* modules found while recording (args_live) */
	struct probes *probes;
	char *session_dir;
};

/* argp child: its input must point at a struct args_opts (defaults are set at ARGP_KEY_INIT). */
extern const struct argp args_argp;

/**
 * args_resolve - the spec of every traced function of @mods: the -A/-R rules matching it, then
 * (--auto-args) its DWARF. A rule that matches no traced function is an error: one line on
 * stderr, -ENOENT.
 */
int args_resolve(struct args_opts *o, const struct rm_modules *mods, bool verbose);

/** args_probe_opts - copy the specs into @po (after args_resolve). */
void args_probe_opts(const struct args_opts *o, struct probe_opts *po);

/**
 * args_live - from now on, give the functions of each module found while recording (exec,
 * dlopen, a library held for its ifuncs) their specs too: in @p's map before its probes attach,
 * and in @session_dir/args.txt. Nothing to do without -A/-R/--auto-args.
 */
int args_live(struct args_opts *o, struct rm_modules *mods, struct probes *p, const char *session_dir);

/** args_save - write @session_dir/args.txt (nothing when no function has a spec). */
int args_save(const struct args_opts *o, const char *session_dir);

void args_opts_free(struct args_opts *o);

#endif
