/* SPDX-License-Identifier: MIT */
/*
 * Call-site redirection, shared by its files (private to user/patch/): callsite_find.c
 * finds a module's sites and checks them in the stopped process (steps 1 to 3 of callsite.c's
 * order), callsite_xmod.c the same for other modules' PLT calls into the traced ones,
 * callsite.c writes the memfds, attaches, patches and restores (steps 4 and 5).
 */
#ifndef ATFTRACE_CALLSITE_INT_H
#define ATFTRACE_CALLSITE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "callsite_plan.h"
#include "patch_log.h"
#include "callsite_tail.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"

struct probes;

/* A function's probes in its block (user/patch/callsite_plan.h): cs_fn.want, cs_fn.probed. */
#define CS_PROBE_E 1u               /* E_f: a direct, PLT or indirect site calls it */
#define CS_PROBE_R 2u               /* R_f: a direct or PLT site calls it */
#define CS_PROBE_T 4u               /* T_f: a tail site jumps to it */

/* One traced function that its redirected calls enter through a body in the memfd. */
struct cs_fn {
	const struct sym_func *f;
	struct tramp_plan plan;
	uint8_t moved[32];
	uint64_t patch_addr;                /* in the process */
	uint32_t slot;                      /* its body: area + slot * TRAMP_SLOT */
	uint32_t nsites;
	bool body;                          /* its body is in the memfd (for other modules' sites) */
	bool handed_back;                   /* another tool probes it: no site is redirected again */
	int64_t ind_slot;                   /* its key in the indirect sites' table, or -1 */
	/* its plain entry and its body's first jump (callsite_plain.c) */
	uint32_t plain;                     /* 1 + its plain entry's index in the block; 0: none */
	uint32_t jmp_to;                    /* 1 + the index of the traced function its first
					     * instruction (a jmp or jcc) goes to; 0: none */
	uint64_t jmp_got, jmp_entry;        /* through a PLT entry: its GOT slot and that function's
					     * entry, in the process */
	uint64_t jmp_rel;                   /* the body's rel32 aimed at that plain entry, in the
					     * process; 0: the body's own target */
	uint8_t jmp_orig[4];                /* the rel32 as emitted (the function's own target) */
	uint8_t want, probed;               /* CS_PROBE_*: its block's probes needed, attached */
};

/* One redirected call, or tail call (@len set: user/patch/callsite_tail.c). */
struct cs_site {
	uint64_t addr;                      /* of the e8 (e9, 0f), in the process */
	uint64_t file_off;                  /* of the e8 (e9, 0f), in the module's file */
	uint32_t fn;                        /* index into cs_mod.fns */
	uint64_t got;                       /* a PLT site: its GOT slot in the process, else 0 */
	uint64_t entry;                     /* a PLT site: f's entry in the process */
	uint32_t tmod;                      /* another module's site: f's cs_mod in cs_process.mods */
	uint64_t cookie;                    /* another module's site: f's link cookie */
	uint64_t far;                       /* another module's site: f's function block, reached
					     * through absolute jumps */
	uint8_t orig[CS_SITE_MAX_LEN];      /* the file's call (or jmp, jcc) */
	uint8_t call[CS_SITE_MAX_LEN];      /* ours: call stub (or jmp, jcc tail stub) */
	uint8_t len;                        /* a tail call: its length (its stub a tail stub); 0: a
					     * call (CS_CALL_LEN) */
	uint64_t in_lo, in_hi;              /* a tail call: the function it lies in, in the process
					     * (no thread may be inside it when it is redirected) */
	bool handed_back;                   /* the file's call is back (stub k stays site k's) */
	bool plain;                         /* a tail call aimed at f's plain entry, not at stub k
					     * (callsite_plain.c; stub k stays int3) */
};

/* The length of site @s's instruction. */
static inline uint32_t cs_site_len(const struct cs_site *s)
{
	return s->len ? s->len : CS_CALL_LEN;
}

struct cs_mod {
	const struct sym_module *m;         /* a caller's: its own (path only), freed with it */
	bool caller;                        /* another module's PLT calls into the traced ones */
	bool no_bounds;                     /* a caller without .symtab or .eh_frame: not searched */
	bool wanted;                        /* another module's sites call its bodies */
	bool committed;                     /* its own sites are written (or failed) */
	uint64_t dev, ino;
	uint64_t lo, hi;                    /* the module's span in the process */
	uint64_t area;
	uint32_t code_off;                  /* the bodies start after the patch log's pages */
	uint64_t fnblocks;                  /* offset of the first function block in the memfd */
	uint64_t stubs;                     /* offset of the first stub in the memfd */
	int fd;                             /* our copy of the memfd, or -1 */
	uint8_t *log;                       /* the patch log as written (code_off bytes) */
	struct cs_fn *fns;
	size_t nfns;
	struct cs_site *sites;
	size_t nsites;
	size_t skipped_inside, skipped_differs, skipped_range;
	size_t skipped_unbound, skipped_elsewhere;      /* PLT sites whose slot is not f's */
	/* indirect sites (callsite_ind.c) */
	bool ind;                           /* look for them (not in a C++ process) */
	struct patch_record *isites;        /* each as logged: the call, and our jmp */
	size_t nisites;
	uint64_t ind_off;                   /* the indirect block in the memfd: table, lookup, ... */
	uint32_t ind_bits;                  /* its table's hashed range */
	size_t ind_entries;                 /* functions in its table */
	size_t ind_short, ind_foreign;      /* not redirected: too short, another module's slot */
	size_t ind_inside, ind_differs, ind_range;
	/* plain entries (callsite_plain.c) */
	uint64_t plain_off;                 /* the block in the memfd */
	uint32_t nplain;                    /* plain entries in it */
	size_t plain_bodies;                /* bodies whose first jump is aimed at one */
	bool ind_ret_probed;                /* the indirect stubs' shared return block's probe */
};

struct cs_process {
	pid_t pid;
	uint64_t start_ticks;               /* a reused pid is not ours */
	bool own_child, restored;
	bool refused;                       /* nothing redirected in it, now or later */
	bool ended;                         /* its session restored it: nothing more */
	bool no_ind;                        /* it maps a C++ unwinder: no indirect sites */
	bool tails;                         /* its tail calls are redirected, in modules mapped
					     * later too (cs_opts.tails at the first attach) */
	uint64_t maps_sig;                  /* its executable mappings when last searched */
	uint64_t exe[2];                    /* its program's file (device, inode): after an exec,
					     * nothing more is redirected */
	struct cs_mod *mods;                /* never moved (the probes' owners): capmods of them */
	size_t nmods, capmods;
	uint64_t (*seen)[3];                /* the files searched for calls into traced modules:
					     * device, inode, searches left (slots not bound yet) */
	size_t nseen;
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

/** cs_target_addrs - the addresses of @targets (@n, sorted) alone, for cs_target_index(); NULL on ENOMEM. */
uint64_t *cs_target_addrs(const cs_target *targets, size_t n);

/** cs_mod__find_sites - step 2: every call of @cm's code to one of @targets, into cm->sites. */
int cs_mod__find_sites(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		       const cs_target *targets, size_t ntargets);

/**
 * cs_mod__find_tails - step 2 for tail calls (user/patch/callsite_tail.c): every `jmp`/`jcc` to
 * one of @targets that lies in a function of @cm selected in this session (so that its return,
 * which f's return becomes, is always seen), appended to cm->sites.
 */
int cs_mod__find_tails(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		       const cs_target *targets, size_t ntargets);

/**
 * cs_tail__add - tail call @tc of the function at module address @fn_addr (@fn_size bytes;
 * @code: its bytes, from file offset @start) appended to cm->sites (@cap: their room), unless
 * it is not mapped; 0 or -ENOMEM.
 */
int cs_tail__add(struct cs_mod *cm, size_t *cap, const struct cs_tail_call *tc,
		 const cs_target *targets, uint64_t fn_addr, uint64_t fn_size, uint64_t start,
		 const uint8_t *code, const struct ta_maps *maps);

/**
 * cs_mod__probe_fns - the probes of traced module @tm's function blocks that are wanted and not
 * attached yet (cs_fn.want & ~probed), one uprobe_multi link per kind, returns first: so the
 * session holds one probe per function and kind, however many sites call it. 0 or a negative
 * errno (what was attached stays, and is marked).
 */
int cs_mod__probe_fns(struct probes *p, struct cs_mod *tm, pid_t link_pid);

/**
 * cs_mod__check_sites - step 3: keep the sites whose bytes in the stopped process @pt are the
 * file's, tail calls in no function a thread is inside, and (PLT sites) whose GOT slot holds the
 * function's address.
 */
int cs_mod__check_sites(struct pt_target *pt, struct cs_mod *cm);

/* Where @c's body is in @cm's memfd. */
static inline uint64_t cs_body_off(const struct cs_mod *cm, const struct cs_fn *c)
{
	return cm->code_off + (uint64_t)c->slot * TRAMP_SLOT;
}

/* Where @c's function block (E_f, R_f, T_f) is in @cm's memfd. */
static inline uint64_t cs_fn_off(const struct cs_mod *cm, const struct cs_fn *c)
{
	return cm->fnblocks + (uint64_t)c->slot * CS_FN_SLOT;
}

/** cs_maps_signature - @maps' executable files and where, as one number; @exe: the program's. */
uint64_t cs_maps_signature(const struct ta_maps *maps, uint64_t exe[2]);

/** cs_refresh_maps - @maps read again once @cm's memfd is mapped (the next must not take its place). */
void cs_refresh_maps(const struct cs_process *cp, struct ta_maps *maps, const struct cs_mod *cm);

/** cs_far_sites - each caller site of @cm gets f's block in its module's memfd, or is left out. */
void cs_far_sites(struct cs_process *cp, struct cs_mod *cm);

/**
 * cs_reserve - @v (room for *@cap elements of @size bytes) with room for @n of them: @v itself,
 * or grown by realloc (the old ones kept, *@cap updated); NULL when out of memory (@v and *@cap
 * unchanged, @v still to be freed).
 */
void *cs_reserve(void *v, size_t *cap, size_t n, size_t size);

/** cs_read_at - @size bytes of the file @fd at @off into *@buf (grown as needed, *@cap bytes). */
bool cs_read_at(int fd, uint64_t off, uint64_t size, uint8_t **buf, uint64_t *cap);

/**
 * cs_xmod__find - steps 1 to 3 for the PLT calls of every module mapped in @maps (not searched
 * before: cp->seen) to the functions with a body of cp->mods' traced modules: one caller
 * cs_mod per module with such sites, appended to cp->mods. Each module is decoded by its
 * function bounds (.symtab, else the .eh_frame FDEs; neither: not searched). 0 or -ENOMEM.
 */
int cs_xmod__find(struct cs_process *cp, struct pt_target *pt, const struct ta_maps *maps);

/** cs_mod__release - what @cm holds (not @cm itself). */
void cs_mod__release(struct cs_mod *cm);
/**
 * cs_site__write_back - write site @s of @cm back to the file's call in the stopped process
 * @pt, where our call is still there and the module is still mapped where it was (@maps).
 * True when written.
 */
bool cs_site__write_back(struct pt_target *pt, const struct ta_maps *maps, const struct cs_mod *cm,
			 const struct cs_site *s);

/**
 * cs_stacks_to_sites - in the stopped process, each stack word that holds one of @cp's stubs'
 * return points (its `call R_f`) gets that stub's site + 5 (user/patch/callsite_stacks.c). Returns
 * the number of words written, or a negative errno.
 */
int cs_stacks_to_sites(struct pt_target *pt, const struct cs_process *cp);

/*
 * Indirect call sites (callsite_ind.c, in the same order as the direct ones: found, checked,
 * written into the memfd after the direct stubs, logged, attached and written, restored).
 */
/** cs_ind__find - the indirect calls of @cm's code (cm->ind and a function with a body). */
int cs_ind__find(int fd, struct cs_mod *cm, const struct ta_maps *maps);
/** cs_ind__check - keep those whose bytes are the file's and that no thread is inside. */
void cs_ind__check(struct pt_target *pt, struct cs_mod *cm);
/** cs_ind__size - the bytes of @cm's indirect block (0: none), from memfd offset @off on. */
uint64_t cs_ind__size(struct cs_mod *cm, uint64_t off);
/** cs_ind__emit - the block into @code (the memfd's bytes; the bodies emitted); drops sites out of reach. */
void cs_ind__emit(struct cs_mod *cm, uint8_t *code);
/** cs_ind__attach - the probes, then each site's jmp; one line with @verbose. Sites or -errno. */
int cs_ind__attach(struct probes *p, struct pt_target *pt, struct cs_mod *cm, pid_t link_pid,
		   bool verbose);
/** cs_ind__write_back - each site of @cm written back where our jmp still is; how many. */
size_t cs_ind__write_back(struct pt_target *pt, const struct ta_maps *maps, const struct cs_mod *cm);
/** cs_ind__picked - the functions @pick of @cm in its table, each counted in @count; how many. */
size_t cs_ind__picked(const struct cs_mod *cm, const bool *pick, size_t *count);
/**
 * cs_ind__hand_back - the functions @pick of @cm made misses in its table (their keys written
 * as tombstones in the stopped process @pt), each counted in @written; once none is left, the
 * sites get the file's calls back (@maps). How many functions.
 */
size_t cs_ind__hand_back(struct pt_target *pt, const struct ta_maps *maps, struct cs_mod *cm,
			 const bool *pick, size_t *written);

/*
 * Plain entries (callsite_plain.c): a per-function `nop; jmp body` in the memfd whose nop has
 * f's own plain probe (entry and return, the session's link kind, cookie f's id), for the tail
 * calls that no tail stub takes and for bodies whose first instruction jumps to f.
 */
/**
 * cs_plain__find - step 2: every `jmp`/`jcc` rel32 to one of @targets in @cm's code (every
 * function, static ones too) that is not a tail stub's site already, appended to cm->sites as
 * plain tail sites; and each function whose first instruction jumps to one of @targets.
 */
int cs_plain__find(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		   const cs_target *targets, size_t ntargets);
/** cs_plain__check - step 3: a body's first jump through a PLT entry only when its slot holds f. */
void cs_plain__check(struct pt_target *pt, struct cs_mod *cm);
/** cs_plain__size - which functions get a plain entry; the block's bytes from memfd offset @off. */
uint64_t cs_plain__size(struct cs_mod *cm, uint64_t off);
/** cs_plain__emit - the plain entries into @code (the bodies emitted already). */
void cs_plain__emit(struct cs_mod *cm, uint8_t *code);
/** cs_plain__aim - plain tail site @s aimed at its function's plain entry (s->call); false when it cannot be. */
bool cs_plain__aim(const struct cs_mod *cm, struct cs_site *s);
/** cs_plain__attach - the plain entries' probes (owner @cm). 0 or a negative errno. */
int cs_plain__attach(struct probes *p, struct cs_mod *cm, const char *path, pid_t link_pid);
/** cs_plain__aim_bodies - each body's first jump at its target's plain entry (the probes attached). */
void cs_plain__aim_bodies(struct pt_target *pt, struct cs_mod *cm);
/** cs_plain__picked - how many bodies' first jumps go to the functions @pick. */
size_t cs_plain__picked(const struct cs_mod *cm, const bool *pick);
/** cs_plain__hand_back - the bodies' jumps to the functions @pick given their own targets back. */
void cs_plain__hand_back(struct pt_target *pt, struct cs_mod *cm, const bool *pick);

#endif
