/* SPDX-License-Identifier: MIT */
/*
 * --auto-args: argument specs from DWARF (user/sym/args_dwarf.c, elfutils' libdw).
 */
#ifndef ATFTRACE_ARGS_DWARF_H
#define ATFTRACE_ARGS_DWARF_H

#include "atf_args.h"
#include "symbols.h"

struct args_dwarf;

/**
 * args_dwarf_open - the DWARF of module @m: its separate debug file, the module itself, or a
 * debug file found for it (sym_debug_find). -ENOENT when none has any.
 */
int args_dwarf_open(struct args_dwarf **out, const struct sym_module *m);
void args_dwarf_close(struct args_dwarf *d);

/**
 * args_dwarf_spec - append @fn's parameters and return value to @spec (an item already there for
 * the same place stays, so -A/-R given first win), its enums' value names to @set.
 * -ENOENT when DWARF has no subprogram at @fn's address.
 */
int args_dwarf_spec(struct args_dwarf *d, const struct sym_func *fn, struct atf_arg_spec *spec,
		    struct atf_args *set);

#endif
