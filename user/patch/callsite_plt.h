/* SPDX-License-Identifier: MIT */
/*
 * The PLT entries of a module file and the dynamic symbols their GOT slots are relocated to
 * (user/patch/callsite_plt.c, on libelf; the decoding is cs_plt_decode() in callsite_plan.c).
 */
#ifndef ATFTRACE_CALLSITE_PLT_H
#define ATFTRACE_CALLSITE_PLT_H

#include "callsite_plan.h"

struct cs_plt {
	struct cs_plt_entry *v;     /* sorted by entry address */
	const char **names;         /* v[i]'s symbol name (into the file's string table) */
	size_t n;
	void *elf;                  /* the names live as long as this (Elf *) */
};

/**
 * cs_plt_read - the entries of @fd's .plt, .plt.sec and .plt.got whose slot has an
 * R_X86_64_JUMP_SLOT or R_X86_64_GLOB_DAT relocation to a named symbol. A file without them
 * gives none. Returns 0 or a negative errno; free with cs_plt_free().
 */
int cs_plt_read(int fd, struct cs_plt *out);
void cs_plt_free(struct cs_plt *p);

/**
 * cs_plt_targets - the PLT entries of @fd whose symbol is one of @names (@n, not sorted), each
 * as { entry address, index into @names, GOT slot address } (module addresses), into @out
 * (allocated; free it). A file without a readable PLT gives none. Returns 0 or -ENOMEM.
 */
int cs_plt_targets(int fd, const char *const *names, size_t n, uint64_t (**out)[3], size_t *nout);

/**
 * cs_got_foreign - the GOT slots of @fd (module addresses, sorted) whose R_X86_64_JUMP_SLOT or
 * GLOB_DAT relocation names a symbol the file does not define: a pointer loaded from one holds
 * another module's address (user/patch/callsite_ind.c leaves such calls alone). Into *@out
 * (allocated; free it), *@nout. A file without them gives none. 0 or -ENOMEM.
 */
int cs_got_foreign(int fd, uint64_t **out, size_t *nout);

#endif
