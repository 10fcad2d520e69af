/* SPDX-License-Identifier: MIT */
/*
 * Call-site redirection, shared by its two files (private to user/patch/): callsite_find.c
 * finds a module's sites and checks them in the stopped process (steps 1 to 3 of callsite.c's
 * order), callsite.c writes the memfd, attaches, patches and restores (steps 4 and 5).
 */
#ifndef ATFTRACE_CALLSITE_INT_H
#define ATFTRACE_CALLSITE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "callsite_plan.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"

/* One traced function that its redirected calls enter through a body in the memfd. */
struct cs_fn {
	const struct sym_func *f;
	struct tramp_plan plan;
	uint8_t moved[32];
	uint64_t patch_addr;                /* in the process */
	uint32_t slot;                      /* its body: area + slot * TRAMP_SLOT */
	uint32_t nsites;
};

/* One redirected call. */
struct cs_site {
	uint64_t addr;                      /* of the e8, in the process */
	uint64_t file_off;                  /* of the e8, in the module's file */
	uint32_t fn;                        /* index into cs_mod.fns */
	uint64_t got;                       /* a PLT site: its GOT slot in the process, else 0 */
	uint64_t entry;                     /* a PLT site: f's entry in the process */
	uint8_t orig[CS_CALL_LEN];          /* the file's call */
	uint8_t call[CS_CALL_LEN];          /* ours: call stub */
};

struct cs_mod {
	const struct sym_module *m;
	uint64_t dev, ino;
	uint64_t lo, hi;                    /* the module's span in the process */
	uint64_t area;
	uint32_t code_off;                  /* the bodies start after the patch log's pages */
	uint64_t stubs;                     /* offset of the first stub in the memfd */
	int fd;                             /* our copy of the memfd, or -1 */
	uint8_t *log;                       /* the patch log as written (code_off bytes) */
	struct cs_fn *fns;
	size_t nfns;
	struct cs_site *sites;
	size_t nsites;
	size_t skipped_inside, skipped_differs, skipped_range;
	size_t skipped_unbound, skipped_elsewhere;      /* PLT sites whose slot is not f's */
};

struct cs_process {
	pid_t pid;
	uint64_t start_ticks;               /* a reused pid is not ours */
	bool own_child, restored;
	struct cs_mod *mods;
	size_t nmods;
};

/* A call target: its module address, the index of its function in cs_mod.fns, and for a PLT
 * entry the module address of its GOT slot (0 for the function's own entry). */
typedef uint64_t cs_target[3];

/**
 * cs_mod__plan - step 1: the functions of @cm that can have a body, and their entry addresses
 * and PLT entries as call targets, sorted, into *@targets (*@ntargets; the caller frees it).
 * 0 or a negative errno.
 */
int cs_mod__plan(int fd, struct cs_mod *cm, const struct ta_maps *maps, cs_target **targets,
		 size_t *ntargets);

/** cs_mod__find_sites - step 2: every call of @cm's code to one of @targets, into cm->sites. */
int cs_mod__find_sites(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		       const cs_target *targets, size_t ntargets);

/**
 * cs_mod__check_sites - step 3: keep the sites whose bytes in the stopped process @pt are the
 * file's, that no thread is inside, and (PLT sites) whose GOT slot holds the function's address.
 */
int cs_mod__check_sites(struct pt_target *pt, struct cs_mod *cm);

/**
 * cs_stacks_to_sites - in the stopped process, each stack word that holds one of @cp's stubs'
 * return addresses (probe B) gets that stub's site + 5 (user/patch/callsite_stacks.c). Returns
 * the number of words written, or a negative errno.
 */
int cs_stacks_to_sites(struct pt_target *pt, const struct cs_process *cp);

#endif
