/* SPDX-License-Identifier: MIT */
/*
 * ELF symbol resolution for probing (user/probe/symbols.c, elfutils libelf/libdw).
 * A module is one ELF file (executable or shared library); its functions come from .symtab
 * and .dynsym, aliases at one address are probed once, and each gets the probe's file offset.
 */
#ifndef ATFTRACE_SYMBOLS_H
#define ATFTRACE_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a function is not probed (reported, never skipped silently). */
enum sym_skip {
	SYM_OK = 0,
	SYM_SKIP_ZERO_SIZE,         /* st_size == 0 */
	SYM_SKIP_PLT,               /* in .plt / .plt.sec */
	SYM_SKIP_NOT_EXEC,          /* not in an executable section */
	SYM_SKIP_ALIAS,             /* same address as an earlier symbol: probed once under that one */
	SYM_SKIP_INSN,              /* first instruction cannot be probed */
	SYM_SKIP_EXCLUDED,          /* matched -x */
	SYM_SKIP_IFUNC,             /* STT_GNU_IFUNC: the address is a resolver run once at load */
};

/* First instruction at the probe site; decides the kernel's path (kernel-facts.md). */
enum sym_insn {
	SYM_INSN_OTHER = 0,         /* single-stepped */
	SYM_INSN_NOP5,              /* optimised to a call into the uprobe trampoline */
	SYM_INSN_EMULATED,          /* push, 1-byte nop, jmp, call: emulated */
	SYM_INSN_ENDBR64,           /* hopped over: the probe goes at function + 4 */
};

struct sym_func {
	uint32_t symbol_index;      /* from 1, stable for the module: function_id = module_id << 32 | index */
	char *name;                 /* raw ELF name */
	char *demangled;            /* C++ demangled, or NULL */
	uint64_t addr;              /* st_value */
	uint64_t size;              /* st_size */
	uint64_t probe_offset;      /* file offset of the entry probe (after a leading endbr64) */
	uint8_t insn;               /* enum sym_insn at the probe site */
	uint8_t skip;               /* enum sym_skip */
	bool selected;              /* matched -f and not -x, and probe-able */
	bool endbr64;               /* a leading endbr64 was hopped: probe_offset = entry + 4 */
	uint8_t tramp;              /* enum tramp_reason (include/trampoline.h), 0 until decided */
	bool via_tramp;             /* entered through a trampoline: no probe on the function itself */
};

struct sym_module {
	uint32_t module_id;         /* atf_module_id(path) */
	char *path;                 /* path as the user or /proc/PID/maps named it */
	char *open_path;            /* path actually opened (e.g. via /proc/PID/root), or NULL */
	char *build_id;             /* hex, or NULL */
	uint64_t base;              /* load address in the target when known, else 0 */
	uint64_t size;
	bool pie;                   /* ET_DYN */
	struct sym_func *funcs;
	size_t nfuncs;
};

/**
 * sym_module__open - read every function symbol of the ELF file at @path
 * @fd: an already-open descriptor for the file (e.g. from a safe openat2 walk), or -1 to open @path.
 * Malformed ELF input gives -EINVAL (with one clear message on stderr), never a crash.
 */
int sym_module__open(struct sym_module **out, const char *path, int fd);
void sym_module__free(struct sym_module *m);

/**
 * sym_module__select - mark functions matching any of @globs (all when @nglobs == 0) and none
 * of @excludes as selected. Returns the number selected.
 */
size_t sym_module__select(struct sym_module *m, const char *const *globs, size_t nglobs,
			  const char *const *excludes, size_t nexcludes);

/** sym_skip_str / sym_insn_str - short names for reports and list-functions. */
const char *sym_skip_str(enum sym_skip s);
const char *sym_insn_str(enum sym_insn i);

/**
 * sym_resolve_library - find the file of library @name (e.g. "libc.so.6") as mapped in @pid
 * (/proc/PID/maps), or on the host's library path when @pid is 0. Returns a malloc'd path or NULL.
 */
char *sym_resolve_library(int pid, const char *name);

#endif
