// SPDX-License-Identifier: MIT
/*
 * ELF function symbols for probing (include/symbols.h), read with elfutils' libelf.
 *
 * A module's functions are the STT_FUNC / STT_GNU_IFUNC symbols defined in .symtab and .dynsym.
 * They are sorted by (address, global before local, name) and numbered from 1 in that order,
 * so function_id = module_id << 32 | symbol_index is the same every time the same file is read.
 * Within one address, the first symbol is probed and the others are reported as aliases.
 * Every function gets a skip reason or SYM_OK; none disappears silently.
 *
 * The entry probe's file offset is st_value - sh_addr + sh_offset of the containing section.
 * The first instruction there decides the kernel's path (kernel-facts.md); a leading endbr64
 * is hopped over (probe at +4), since it would otherwise be single-stepped.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>
#include "atf.h"
#include "symbols.h"

/* A function symbol before numbering. */
struct raw_sym {
	const char *name;           /* points into the ELF string table */
	uint64_t addr, size;
	size_t shndx;
	bool global;                /* STB_GLOBAL or STB_WEAK */
	bool ifunc;
};

const char *sym_skip_str(enum sym_skip s)
{
	switch (s) {
	case SYM_OK:             return "ok";
	case SYM_SKIP_ZERO_SIZE: return "zero-size";
	case SYM_SKIP_PLT:       return "plt";
	case SYM_SKIP_NOT_EXEC:  return "not-exec";
	case SYM_SKIP_ALIAS:     return "alias";
	case SYM_SKIP_INSN:      return "bad-insn";
	case SYM_SKIP_EXCLUDED:  return "excluded";
	case SYM_SKIP_IFUNC:     return "ifunc";
	}
	return "?";
}

const char *sym_insn_str(enum sym_insn i)
{
	switch (i) {
	case SYM_INSN_OTHER:    return "single-step";
	case SYM_INSN_NOP5:     return "nop5";
	case SYM_INSN_EMULATED: return "emulated";
	case SYM_INSN_ENDBR64:  return "endbr64";
	}
	return "?";
}

/* ---- C++ demangling through the C++ runtime, when it is installed -------------------------- */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn cxa_demangle;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void demangle_init(void)
{
	/* libstdc++ is not linked in (LIBS stays C-only); use it only if it is there. */
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (h)
		cxa_demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

static char *demangle(const char *name)
{
	int status = -1;
	char *out;

	if (strncmp(name, "_Z", 2))
		return NULL;
	pthread_once(&demangle_once, demangle_init);
	if (!cxa_demangle)
		return NULL;
	out = cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* ---- first instruction ------------------------------------------------------------------- */

/* Class of the instruction at @p (@avail bytes readable); -1 when uprobes refuse it. */
static int classify_insn(const uint8_t *p, size_t avail)
{
	if (avail < 1)
		return -1;
	if (avail >= 5 && p[0] == 0x0f && p[1] == 0x1f && p[2] == 0x44 && p[3] == 0x00)
		return SYM_INSN_NOP5;           /* nopl 0(%rax,%rax,1), any displacement byte */
	if (p[0] >= 0x50 && p[0] <= 0x57)
		return SYM_INSN_EMULATED;       /* push %rax..%rdi (0x55: push %rbp) */
	if (avail >= 2 && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57)
		return SYM_INSN_EMULATED;       /* push %r8..%r15 */
	if (p[0] == 0x90 || p[0] == 0xe8 || p[0] == 0xe9 || p[0] == 0xeb)
		return SYM_INSN_EMULATED;       /* nop, call rel32, jmp rel32, jmp rel8 */
	if (p[0] == 0xcc || p[0] == 0xcd || p[0] == 0xf4 || (avail >= 2 && p[0] == 0x0f && p[1] == 0x0b))
		return -1;                      /* int3, int n, hlt, ud2 */
	/* the kernel refuses lock and es/cs/ss/ds prefixes (uprobes' is_prefix_bad): ENOTSUPP */
	for (size_t i = 0; i < avail && i < 15; i++) {
		if (p[i] == 0xf0 || p[i] == 0x26 || p[i] == 0x2e || p[i] == 0x36 || p[i] == 0x3e)
			return -1;
		if (p[i] != 0x66 && p[i] != 0x67 && p[i] != 0xf2 && p[i] != 0xf3 && p[i] != 0x64 &&
		    p[i] != 0x65)
			break;          /* not a legacy prefix: the opcode (or REX) */
	}
	return SYM_INSN_OTHER;                  /* single-stepped */
}

static bool is_endbr64(const uint8_t *p, size_t avail)
{
	return avail >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa;
}

/* ---- reading ------------------------------------------------------------------------------- */

struct reader {
	const char *path;
	Elf *elf;
	const uint8_t *file;        /* the raw file image */
	size_t file_size;
	size_t nsec;
	GElf_Shdr *shdrs;           /* section headers, [nsec] */
	bool *is_plt;               /* [nsec] */
	struct raw_sym *syms;
	size_t nsyms, cap;
};

static int bad_elf(const struct reader *r, const char *why)
{
	fprintf(stderr, "atftrace: %s: not a usable ELF file: %s\n", r->path, why);
	return -EINVAL;
}

static int add_sym(struct reader *r, const struct raw_sym *s)
{
	if (r->nsyms == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct raw_sym *n = realloc(r->syms, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->syms = n;
		r->cap = cap;
	}
	r->syms[r->nsyms++] = *s;
	return 0;
}

/* Collect the defined function symbols of one symbol table section. */
static int read_symtab(struct reader *r, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data;
	size_t n;
	int err;

	if (sh->sh_entsize == 0 || sh->sh_link >= r->nsec ||
	    sh->sh_offset > r->file_size || sh->sh_size > r->file_size - sh->sh_offset)
		return bad_elf(r, "symbol table out of bounds");
	data = elf_getdata(scn, NULL);
	if (!data)
		return bad_elf(r, elf_errmsg(-1));
	n = data->d_size / sh->sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		struct raw_sym s;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			return bad_elf(r, elf_errmsg(-1));
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
			continue;       /* not a function, or imported from another module */
		s.name = elf_strptr(r->elf, sh->sh_link, sym.st_name);
		if (!s.name || !s.name[0])
			continue;       /* nameless: nothing to select it by or report it as */
		s.addr = sym.st_value;
		s.size = sym.st_size;
		s.shndx = sym.st_shndx;
		s.global = GELF_ST_BIND(sym.st_info) != STB_LOCAL;
		s.ifunc = type == STT_GNU_IFUNC;
		err = add_sym(r, &s);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_raw_sym(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Skip reason, probe offset and instruction class of one (non-alias) function. */
static void classify(const struct reader *r, const struct raw_sym *s, struct sym_func *f)
{
	const GElf_Shdr *sh;
	uint64_t off, end;
	int insn;

	f->probe_offset = 0;
	if (s->ifunc) {
		f->skip = SYM_SKIP_IFUNC;
		return;
	}
	if (s->shndx >= r->nsec || s->shndx == SHN_ABS || s->shndx == SHN_COMMON) {
		f->skip = SYM_SKIP_NOT_EXEC;
		return;
	}
	sh = &r->shdrs[s->shndx];
	if (r->is_plt[s->shndx]) {
		f->skip = SYM_SKIP_PLT;
		return;
	}
	if (!(sh->sh_flags & SHF_EXECINSTR) || s->addr < sh->sh_addr ||
	    s->addr - sh->sh_addr >= sh->sh_size) {
		f->skip = SYM_SKIP_NOT_EXEC;
		return;
	}
	if (s->size == 0) {
		f->skip = SYM_SKIP_ZERO_SIZE;
		return;
	}
	/* The addr check above bounds the offset within the section: no overflow here. */
	off = s->addr - sh->sh_addr + sh->sh_offset;
	f->probe_offset = off;
	/* Code bytes must lie in the file: the section (untrusted header) is checked first. */
	if (sh->sh_type == SHT_NOBITS || sh->sh_offset > r->file_size ||
	    sh->sh_size > r->file_size - sh->sh_offset) {
		f->skip = SYM_SKIP_INSN;
		return;
	}
	/* Readable code bytes: to the end of the function or of its section. */
	end = sh->sh_offset + sh->sh_size;
	if (s->size < end - off)
		end = off + s->size;
	if (is_endbr64(r->file + off, end - off) && end - off > 4) {
		f->endbr64 = true;
		off += 4;
		f->probe_offset = off;
	}
	insn = classify_insn(r->file + off, end - off);
	if (insn < 0) {
		f->skip = SYM_SKIP_INSN;
		return;
	}
	f->insn = (uint8_t)insn;
	f->skip = SYM_OK;
}

/* Merge symbols seen twice (.symtab and .dynsym), number them, mark aliases, classify. */
static int build_funcs(struct reader *r, struct sym_module *m)
{
	size_t n = 0;

	if (r->nsyms)
		qsort(r->syms, r->nsyms, sizeof(*r->syms), cmp_raw_sym);
	m->funcs = calloc(r->nsyms ? r->nsyms : 1, sizeof(*m->funcs));
	if (!m->funcs)
		return -ENOMEM;
	for (size_t i = 0; i < r->nsyms; i++) {
		const struct raw_sym *s = &r->syms[i];
		struct sym_func *f;
		bool alias = false;

		/* The same name at the same address from both tables is one symbol. */
		for (size_t j = n; j-- > 0 && m->funcs[j].addr == s->addr;) {
			if (!strcmp(m->funcs[j].name, s->name))
				goto next;
			/* An ifunc shares its address with its resolver's own name, but is no alias. */
			if (!s->ifunc && m->funcs[j].skip != SYM_SKIP_IFUNC)
				alias = true;
		}
		f = &m->funcs[n];
		f->name = strdup(s->name);
		if (!f->name)
			return -ENOMEM;
		m->nfuncs = ++n;
		f->symbol_index = (uint32_t)n;
		f->demangled = demangle(s->name);
		f->addr = s->addr;
		f->size = s->size;
		if (alias) {
			f->skip = SYM_SKIP_ALIAS;
			/* Same code as the probed symbol: report where its probe is. */
			struct raw_sym tmp = *s;
			struct sym_func probe = { 0 };

			tmp.ifunc = false;
			classify(r, &tmp, &probe);
			f->probe_offset = probe.probe_offset;
			f->insn = probe.insn;
			f->endbr64 = probe.endbr64;
		} else {
			classify(r, s, f);
		}
next:;
	}
	return 0;
}

static int read_sections(struct reader *r)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int err;

	if (elf_getshdrnum(r->elf, &r->nsec) || elf_getshdrstrndx(r->elf, &shstrndx))
		return bad_elf(r, elf_errmsg(-1));
	r->shdrs = calloc(r->nsec ? r->nsec : 1, sizeof(*r->shdrs));
	r->is_plt = calloc(r->nsec ? r->nsec : 1, sizeof(*r->is_plt));
	if (!r->shdrs || !r->is_plt)
		return -ENOMEM;
	while ((scn = elf_nextscn(r->elf, scn))) {
		size_t i = elf_ndxscn(scn);
		const char *name;

		if (i >= r->nsec || !gelf_getshdr(scn, &r->shdrs[i]))
			return bad_elf(r, "bad section header");
		name = elf_strptr(r->elf, shstrndx, r->shdrs[i].sh_name);
		r->is_plt[i] = name && (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
					!strcmp(name, ".plt.got") || !strcmp(name, ".iplt"));
	}
	scn = NULL;
	while ((scn = elf_nextscn(r->elf, scn))) {
		const GElf_Shdr *sh = &r->shdrs[elf_ndxscn(scn)];

		if (sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM)
			continue;
		err = read_symtab(r, scn, sh);
		if (err)
			return err;
	}
	return 0;
}

/* Extent of the PT_LOAD segments: the size the module occupies once mapped. */
static uint64_t load_span(Elf *elf)
{
	size_t n;
	uint64_t lo = UINT64_MAX, hi = 0;

	if (elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr < lo)
			lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > hi)
			hi = ph.p_vaddr + ph.p_memsz;
	}
	return hi > lo ? hi - lo : 0;
}

static char *build_id_hex(Elf *elf)
{
	const void *id;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &id);
	char *hex;

	if (len <= 0 || len > 64)
		return NULL;
	hex = malloc((size_t)len * 2 + 1);
	if (!hex)
		return NULL;
	for (ssize_t i = 0; i < len; i++)
		sprintf(hex + i * 2, "%02x", ((const uint8_t *)id)[i]);
	return hex;
}

int sym_module__open(struct sym_module **out, const char *path, int fd)
{
	struct reader r = { .path = path };
	struct sym_module *m = NULL;
	bool own_fd = fd < 0;
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	if (own_fd) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			fprintf(stderr, "atftrace: %s: %s\n", path, strerror(errno));
			return err;
		}
	}
	elf_version(EV_CURRENT);
	/*
	 * Read, not mmap: a private read-only mapping of the file is one a system-wide uprobe
	 * (another tool's, or an -a session's) puts its int3s into, and the first instructions
	 * read through it would then look like breakpoints.
	 */
	r.elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!r.elf || elf_kind(r.elf) != ELF_K_ELF) {
		err = bad_elf(&r, r.elf ? "not an ELF object" : elf_errmsg(-1));
		goto cleanup;
	}
	if (!gelf_getehdr(r.elf, &eh)) {
		err = bad_elf(&r, elf_errmsg(-1));
		goto cleanup;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		err = bad_elf(&r, "neither an executable nor a shared library");
		goto cleanup;
	}
	r.file = (const uint8_t *)elf_rawfile(r.elf, &r.file_size);
	if (!r.file) {
		err = bad_elf(&r, elf_errmsg(-1));
		goto cleanup;
	}
	/* libelf quietly reports no sections when their table lies past the end of the file. */
	if (eh.e_shoff > r.file_size ||
	    (uint64_t)eh.e_shnum * eh.e_shentsize > r.file_size - eh.e_shoff ||
	    eh.e_phoff > r.file_size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > r.file_size - eh.e_phoff) {
		err = bad_elf(&r, "header tables beyond the end of the file (truncated?)");
		goto cleanup;
	}
	err = read_sections(&r);
	if (err)
		goto cleanup;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		err = -ENOMEM;
		goto cleanup;
	}
	m->module_id = atf_module_id(path);
	m->build_id = build_id_hex(r.elf);
	m->size = load_span(r.elf);
	m->pie = eh.e_type == ET_DYN;
	err = build_funcs(&r, m);
	if (err)
		goto cleanup;
	*out = m;
	m = NULL;
cleanup:
	if (err == -ENOMEM)
		fprintf(stderr, "atftrace: %s: out of memory\n", path);
	sym_module__free(m);
	free(r.syms);
	free(r.shdrs);
	free(r.is_plt);
	if (r.elf)
		elf_end(r.elf);
	if (own_fd)
		close(fd);
	return err;
}

void sym_module__free(struct sym_module *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfuncs; i++) {
		free(m->funcs[i].name);
		free(m->funcs[i].demangled);
	}
	free(m->funcs);
	free(m->path);
	free(m->open_path);
	free(m->build_id);
	free(m);
}

/* ---- selection -------------------------------------------------------------------------- */

/*
 * Does "[MODULE:]GLOB" apply to @f of module @path? MODULE (before a single ':', so C++ "::"
 * stays part of the function glob) is matched against the full path and its basename; the
 * function glob against the raw and the demangled name.
 */
static bool glob_matches(const char *glob, const char *path, const struct sym_func *f)
{
	const char *colon = glob;
	const char *fn = glob;

	while ((colon = strchr(colon, ':'))) {
		if (colon[1] == ':') {  /* "::" belongs to a C++ name */
			colon += 2;
			continue;
		}
		break;
	}
	if (colon) {
		size_t len = (size_t)(colon - glob);
		char mod[len + 1];
		const char *base = strrchr(path, '/');

		memcpy(mod, glob, len);
		mod[len] = '\0';
		base = base ? base + 1 : path;
		if (fnmatch(mod, path, 0) && fnmatch(mod, base, 0))
			return false;
		fn = colon + 1;
	}
	return !fnmatch(fn, f->name, 0) || (f->demangled && !fnmatch(fn, f->demangled, 0));
}

size_t sym_module__select(struct sym_module *m, const char *const *globs, size_t nglobs,
			  const char *const *excludes, size_t nexcludes)
{
	size_t count = 0;

	for (size_t i = 0; i < m->nfuncs; i++) {
		struct sym_func *f = &m->funcs[i];
		bool want = nglobs == 0;

		f->selected = false;
		if (f->skip == SYM_SKIP_EXCLUDED)
			f->skip = SYM_OK;       /* selection can be redone */
		if (f->skip != SYM_OK)
			continue;
		for (size_t g = 0; g < nglobs && !want; g++)
			want = glob_matches(globs[g], m->path, f);
		for (size_t x = 0; x < nexcludes; x++) {
			if (glob_matches(excludes[x], m->path, f)) {
				f->skip = SYM_SKIP_EXCLUDED;
				want = false;
				break;
			}
		}
		f->selected = want;
		count += want;
	}
	/* A glob naming an alias (e.g. malloc for __libc_malloc) selects the probed symbol. */
	for (size_t i = 1; i < m->nfuncs && nglobs; i++) {
		struct sym_func *f = &m->funcs[i], *primary = NULL;
		bool want = false, excluded = false;

		if (f->skip != SYM_SKIP_ALIAS)
			continue;
		for (size_t j = i; j-- > 0 && m->funcs[j].addr == f->addr;)
			if (m->funcs[j].skip != SYM_SKIP_ALIAS && m->funcs[j].skip != SYM_SKIP_IFUNC)
				primary = &m->funcs[j];
		if (!primary || primary->selected || primary->skip != SYM_OK)
			continue;
		for (size_t g = 0; g < nglobs && !want; g++)
			want = glob_matches(globs[g], m->path, f);
		for (size_t x = 0; x < nexcludes && want; x++)
			excluded = glob_matches(excludes[x], m->path, f);
		if (want && !excluded) {
			primary->selected = true;
			count++;
		}
	}
	return count;
}
