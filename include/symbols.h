/* SPDX-License-Identifier: MIT */
/*
 * ELF symbol resolution for probing (user/sym/symbols.c, elfutils libelf/libdw).
 * A module is one ELF file (executable or shared library); its functions come from .symtab
 * and .dynsym, or, for a stripped file, from a separate debug file with the same build-id
 * (user/sym/debuginfo.c); aliases at one address are probed once, and each gets the probe's
 * file offset in the module itself (a debug file's code sections are empty).
 */
#ifndef ATFTRACE_SYMBOLS_H
#define ATFTRACE_SYMBOLS_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
	SYM_SKIP_ENTRY,             /* the program's entry point (_start): no return address */
};

/* First instruction at the probe site; decides the kernel's path (kernel-facts.md). */
enum sym_insn {
	SYM_INSN_OTHER = 0,         /* single-stepped */
	SYM_INSN_NOP5,              /* optimised to a call into the uprobe trampoline */
	SYM_INSN_EMULATED,          /* push, 1-byte nop, jmp, call: emulated */
	SYM_INSN_ENDBR64,           /* hopped over: the probe goes at function + 4 */
	SYM_INSN_NO_STEP,           /* EVEX (AVX-512): the kernel accepts it, but its single-step
				     * loses the instruction's result (kernel 6.18): only through an
				     * entry trampoline, never a plain probe */
};

/* Where a function's name came from (list-functions shows it). */
enum sym_origin {
	SYM_ORIGIN_DYNSYM = 0,      /* the module's .dynsym */
	SYM_ORIGIN_SYMTAB,          /* the module's .symtab */
	SYM_ORIGIN_BUILD_ID,        /* /usr/lib/debug/.build-id/xx/rest.debug */
	SYM_ORIGIN_DEBUGLINK,       /* .gnu_debuglink: beside, .debug/, /usr/lib/debug/<dir> */
	SYM_ORIGIN_DEBUG_DIR,       /* --debug-dir DIR */
	SYM_ORIGIN_DEBUGINFOD,      /* a debuginfod server (DEBUGINFOD_URLS) */
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
	uint8_t origin;             /* enum sym_origin of the name */
	uint64_t ifunc_impl;        /* an ifunc probed at its implementation: that address, else 0 */
	uint8_t tramp;              /* enum tramp_reason (include/trampoline.h), 0 until decided */
	bool via_tramp;             /* entered through a trampoline: no probe on the function itself */
};

/* An R_*_IRELATIVE relocation: the GOT slot that holds what the ifunc resolver returned. */
struct sym_irel {
	uint64_t slot;              /* r_offset (module address of the slot) */
	uint64_t resolver;          /* r_addend (module address of the resolver) */
};

/* An executable section: module addresses [addr, addr + size) are file bytes from offset. */
struct sym_text {
	uint64_t addr, size, offset;
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
	char *debug_path;           /* the separate debug file the names came from, or NULL */
	uint8_t debug_origin;       /* enum sym_origin of debug_path */
	bool stripped;              /* no .symtab and no debug file: exported names only */
	struct sym_irel *irel;
	size_t nirel;
	struct sym_text *text;
	size_t ntext;
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

/**
 * sym_glob_matches - does "[MODULE:]GLOB" apply to @f of the module at @path? MODULE (before a
 * single ':'; C++ "::" stays in the glob) matches the full path or its basename; GLOB the raw
 * or demangled name.
 */
bool sym_glob_matches(const char *glob, const char *path, const struct sym_func *f);

/**
 * sym_module__skip_entry - unselect the program's entry point (e_entry of the file at @path,
 * usually _start) in @m, marking it SYM_SKIP_ENTRY: the kernel jumps there with argc, not a
 * return address, at the top of the stack, so a return probe would corrupt the process (and it
 * never returns). For the main executable only. Returns how many selected functions it unselected.
 */
size_t sym_module__skip_entry(struct sym_module *m, const char *path);

/**
 * sym_module__names_any - whether the function part of @glob (as in sym_glob_matches) names any
 * function symbol of @m, probe-able or not: false means the glob is misspelt for this module.
 */
bool sym_module__names_any(const struct sym_module *m, const char *glob);

/**
 * sym_module__closest - up to @max distinct function names of @m nearest to @name by edit
 * distance (raw or demangled, at most about a third of @name's length away), nearest first,
 * into @out (pointers into @m). Returns how many.
 */
size_t sym_module__closest(const struct sym_module *m, const char *name, const char **out, size_t max);

/** sym_skip_str / sym_insn_str / sym_origin_str - short names for reports and list-functions. */
const char *sym_skip_str(enum sym_skip s);
const char *sym_insn_str(enum sym_insn i);
const char *sym_origin_str(enum sym_origin o);

/** sym_demangle - the C++ demangled form of @name (malloc'd), or NULL (not C++, no runtime). */
char *sym_demangle(const char *name);

/**
 * sym_plain_probe_ok - may @f get a plain probe at its entry (one the kernel single-steps or
 * emulates)? Not a function whose first instruction the kernel's single-step corrupts.
 */
static inline bool sym_plain_probe_ok(const struct sym_func *f)
{
	return f->insn != SYM_INSN_NO_STEP;
}

/**
 * sym_probe_site - the enum sym_insn class of the code at a probe site, @avail bytes of it
 * read (of @code_len up to the function's end), -1 when uprobes refuse it; a leading endbr64
 * (*@endbr64 set) is hopped: the class is that of the instruction after it.
 */
int sym_probe_site(const uint8_t *code, size_t avail, size_t code_len, bool *endbr64);

/**
 * sym_module__probe_at - make @f probe-able at module address @addr (an ifunc's
 * implementation): file offset from the module's own executable sections, first
 * instruction classified. 0, or -ENOENT when @addr is not in its code.
 */
int sym_module__probe_at(struct sym_module *m, struct sym_func *f, uint64_t addr);

/**
 * sym_module__resolve_ifuncs - for each ifunc of @m matching @globs, find the implementation
 * the target runs: the GOT slot its resolver filled (an IRELATIVE relocation), read in process
 * @pid (> 0) where it maps @m, else (@pid 0: a command not started yet, which inherits our
 * environment; or a process that runs with our GLIBC_TUNABLES) in this very process when it
 * maps the same file: the resolver's choice depends only on the CPU and GLIBC_TUNABLES. The
 * implementation is selected: under its own name when a symbol names it (__strlen_avx2),
 * else as the ifunc's name. Ifuncs left unresolved are reported in one line each (unless @who
 * is NULL), naming the implementations the symbols know; @unread (may be NULL) counts those
 * whose choice could not be read. Returns the number of functions newly selected.
 */
size_t sym_module__resolve_ifuncs(struct sym_module *m, const char *const *globs, size_t nglobs,
				  const char *const *excludes, size_t nexcludes, pid_t pid,
				  const char *who, size_t *unread);

/** sym_lib_name_matches - does library @name name file @file ("libc.so.6", "libc", "libc.so")? */
bool sym_lib_name_matches(const char *file, const char *name);

/**
 * container_open_file - open a file of containerised process @pid without ever resolving a
 * path on the host:
 *   @name NULL        its executable, through the /proc/PID/exe magic link (the inode it runs);
 *   @name with a '/'  a path as the process sees it: openat2(RESOLVE_IN_ROOT) inside
 *                     /proc/PID/root, so no symlink or ".." can lead outside its root;
 *   otherwise         a library name ("libc.so.6") looked up in /proc/PID/maps and opened
 *                     through /proc/PID/map_files/<range> (the inode that is mapped).
 * @shown (when @name is NULL or a library name): receives a malloc'd path for reports and
 * the manifest. Returns an fd or a negative errno, after printing one line saying why, which
 * starts with @who ("atftrace record").
 */
int container_open_file(pid_t pid, const char *name, char **shown, const char *who);

/** sym_elf_needs - does the ELF file at @path list a DT_NEEDED entry starting with @prefix? */
bool sym_elf_needs(const char *path, const char *prefix);

/**
 * sym_elf_defines - which of @names (at most 32) the ELF file at @path defines as functions in
 * its own .dynsym or .symtab (no debug file is looked for): bit k set for @names[k]. 0 when
 * it defines none, or is no readable ELF file.
 */
uint32_t sym_elf_defines(const char *path, const char *const *names, size_t nnames);

/**
 * sym_resolve_needed - the file the dynamic loader will load for library @name (e.g.
 * "libc.so.6") when it starts the program @exe with LD_LIBRARY_PATH @ld_library_path (NULL:
 * unset): DT_NEEDED from @exe breadth first, each name looked up as ld.so does (DT_RPATH,
 * LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, default directories; $ORIGIN). Returns a
 * malloc'd path, or NULL when @name is not among the libraries the program needs.
 */
char *sym_resolve_needed(const char *exe, const char *name, const char *ld_library_path);

/* ---- where paths a target names are opened (user/sym/sym_root.c) ---------------------- */

/* Size caps: an ELF module or debug file, and a small file such as /etc/ld.so.cache. */
#define SYM_MAX_FILE_SIZE  (4ULL << 30)
#define SYM_MAX_SMALL_FILE (64ULL << 20)

/**
 * sym_root_enter - resolve every path looked up from now on (debug files, the loader's library
 * search, ifunc files) inside the root of process @pid when it has another root than ours (a
 * chroot or container), with openat2(RESOLVE_IN_ROOT) under /proc/PID/root; @pid <= 0 or a
 * process in our root: the host. Returns 0 or -errno. sym_root_leave - back to the host.
 */
int sym_root_enter(pid_t pid);
void sym_root_leave(void);
bool sym_root_entered(void);

/**
 * sym_root_open - open @path read-only (O_NONBLOCK) in the lookup root, when it is a regular
 * file of at most @max_size bytes: an fd, or -errno (-EINVAL: not a regular file, -EFBIG:
 * larger). "/proc/self/fd/N" names a descriptor of ours and is opened as it is.
 */
int sym_root_open(const char *path, uint64_t max_size);

/** sym_host_open - the same in our own root, for paths the user gave (--debug-dir). */
int sym_host_open(const char *path, uint64_t max_size);

/** sym_root_opendir - opendir(3) of @path resolved in the lookup root, or NULL. */
DIR *sym_root_opendir(const char *path);

/** sym_root_readable - would sym_root_open(@path, SYM_MAX_FILE_SIZE) succeed? */
bool sym_root_readable(const char *path);

/** sym_root_stat - stat(2) of @path resolved in the lookup root. 0 or -errno. */
struct stat;
int sym_root_stat(const char *path, struct stat *st);

/** sym_root_canonical - realpath(3) of @path inside the lookup root. 0 or -errno. */
int sym_root_canonical(const char *path, char *out, size_t outlen);

/**
 * sym_root_inner - @path as the process in the lookup root names it: a chroot's files read as
 * host paths under its root ("/tmp/box/usr/bin/app") lose that prefix; any other path as is.
 */
const char *sym_root_inner(const char *path);

/* ---- separate debug files (user/sym/debuginfo.c) ---------------------------------------- */

/** sym_debug_dir_add - also look for debug files under @dir (--debug-dir; copied). */
int sym_debug_dir_add(const char *dir);
void sym_debug_dirs_free(void);

/**
 * sym_debug_find - the debug file of the module @elf (opened from @path): by build-id under
 * the --debug-dir directories and /usr/lib/debug/.build-id, by .gnu_debuglink beside it, in
 * its .debug/ and under /usr/lib/debug/<dir>, then from debuginfod (DEBUGINFOD_URLS). Only a
 * file with the module's build-id (or the debuglink's CRC when it has none) is taken.
 * Returns an open fd with @found (malloc'd path) and @origin, or -ENOENT.
 */
struct Elf;
int sym_debug_find(struct Elf *elf, const char *path, char **found, enum sym_origin *origin);

/* debuginfod's bounds when DEBUGINFOD_TIMEOUT / DEBUGINFOD_MAXSIZE do not say (user/sym/sym_debuginfod.c) */
#define SYM_DEBUGINFOD_TIMEOUT 10               /* seconds without an answer or a new byte */
#define SYM_DEBUGINFOD_MAXSIZE (1L << 30)       /* bytes */

/**
 * sym_debuginfod_fetch - the debug file of build-id @id (@len bytes) from the DEBUGINFOD_URLS
 * servers, bounded in time and size (a server that times out is skipped for the rest of the
 * run, said in one line): an fd with @path (malloc'd, in the client's cache), or -1.
 */
int sym_debuginfod_fetch(const unsigned char *id, int len, char **path);

/** sym_debuginfod_discard - close @fd and remove the rejected answer *@path from the cache. */
void sym_debuginfod_discard(int fd, char **path);

/**
 * sym_debug_package - the Debian package that ships @path (dpkg-query -S, also under its
 * canonical and pre-usrmerge names), malloc'd, or NULL.
 */
char *sym_debug_package(const char *path);

/** sym_module__report_stripped - one line when @m is stripped and no debug file was found. */
void sym_module__report_stripped(const struct sym_module *m, const char *who);

/**
 * sym_resolve_library - find the file of library @name (e.g. "libc.so.6") as mapped in @pid
 * (/proc/PID/maps), or on the host's library path when @pid is 0. Returns a malloc'd path or NULL.
 */
char *sym_resolve_library(int pid, const char *name);

#endif
