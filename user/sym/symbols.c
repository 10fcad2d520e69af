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
 * The first instruction there decides the kernel's path; a leading endbr64 is hopped over
 * (probe at +4), since it would otherwise be single-stepped (sym_insn.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <fnmatch.h>
#include <gelf.h>
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
	size_t shndx;               /* section of the module itself (a debug file's: mapped) */
	bool global;                /* STB_GLOBAL or STB_WEAK */
	bool ifunc;
	uint8_t origin;             /* enum sym_origin */
};

/* ---- reading ------------------------------------------------------------------------------- */

struct reader {
	const char *path;
	Elf *elf;
	const uint8_t *file;        /* the raw file image */
	size_t file_size;
	int fd;                     /* the file, for its code bytes (pread) */
	size_t nsec;
	GElf_Shdr *shdrs;           /* section headers, [nsec] */
	bool *is_plt;               /* [nsec] */
	struct raw_sym *syms;
	size_t nsyms, cap;
	bool has_symtab;
	struct sym_irel *irel;
	size_t nirel, cap_irel;
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

/* The module's own section holding address @addr (code first), or SHN_UNDEF. */
static size_t section_of(const struct reader *r, uint64_t addr)
{
	size_t found = SHN_UNDEF;

	for (size_t i = 1; i < r->nsec; i++) {
		const GElf_Shdr *sh = &r->shdrs[i];

		if (!(sh->sh_flags & SHF_ALLOC) || addr < sh->sh_addr || addr - sh->sh_addr >= sh->sh_size)
			continue;
		if (sh->sh_flags & SHF_EXECINSTR)
			return i;
		if (found == SHN_UNDEF)
			found = i;
	}
	return found;
}

/*
 * Collect the defined function symbols of one symbol table section of @elf: the module's own
 * (@size bytes of file), or its debug file's, whose symbols are placed by address in the
 * module's sections (a debug file has the same addresses, but no code).
 */
static int read_symtab(struct reader *r, Elf *elf, size_t size, Elf_Scn *scn,
		       const GElf_Shdr *sh, uint8_t origin)
{
	bool debug = elf != r->elf;
	size_t nsec = r->nsec;
	Elf_Data *data;
	size_t n;
	int err;

	if (debug && elf_getshdrnum(elf, &nsec))
		return bad_elf(r, "debug file without sections");
	if (sh->sh_entsize == 0 || sh->sh_link >= nsec ||
	    sh->sh_offset > size || sh->sh_size > size - sh->sh_offset)
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
		s.name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!s.name || !s.name[0])
			continue;       /* nameless: nothing to select it by or report it as */
		s.addr = sym.st_value;
		s.size = sym.st_size;
		s.shndx = debug ? section_of(r, sym.st_value) : sym.st_shndx;
		s.origin = origin;
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
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	/* a name in both tables keeps the module's own origin (.dynsym, .symtab, debug file) */
	return (int)x->origin - (int)y->origin;
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
	/*
	 * Read, not taken from the mapped image: a live uprobe (another tool's, or ours) on this
	 * file shows as int3 in every new private mapping of it, never in the file itself.
	 */
	uint8_t code[16];
	size_t avail = end - off < sizeof(code) ? (size_t)(end - off) : sizeof(code);
	ssize_t got = pread(r->fd, code, avail, (off_t)off);

	if (got <= 0) {
		f->skip = SYM_SKIP_INSN;
		return;
	}
	insn = sym_probe_site(code, (size_t)got, (size_t)(end - off), &f->endbr64);
	if (f->endbr64) {
		off += 4;
		f->probe_offset = off;
	}
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
		f->demangled = sym_demangle(s->name);
		f->addr = s->addr;
		f->size = s->size;
		f->origin = s->origin;
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

/* R_*_IRELATIVE: the GOT slots an ifunc resolver fills, with the resolver as addend. */
static int read_irelative(struct reader *r, Elf_Scn *scn, const GElf_Shdr *sh)
{
#if defined(__x86_64__)
	const uint32_t irelative = R_X86_64_IRELATIVE;
#elif defined(__aarch64__)
	const uint32_t irelative = R_AARCH64_IRELATIVE;
#endif
	Elf_Data *data;

	if (!sh->sh_entsize || sh->sh_offset > r->file_size || sh->sh_size > r->file_size - sh->sh_offset)
		return bad_elf(r, "relocations out of bounds");
	data = elf_getdata(scn, NULL);
	for (size_t i = 0; data && i < data->d_size / sh->sh_entsize; i++) {
		GElf_Rela rela;

		if (!gelf_getrela(data, (int)i, &rela) || GELF_R_TYPE(rela.r_info) != irelative)
			continue;
		if (r->nirel == r->cap_irel) {
			size_t cap = r->cap_irel ? r->cap_irel * 2 : 64;
			struct sym_irel *n = realloc(r->irel, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			r->irel = n;
			r->cap_irel = cap;
		}
		r->irel[r->nirel++] = (struct sym_irel){ .slot = rela.r_offset,
							  .resolver = (uint64_t)rela.r_addend };
	}
	return 0;
}

/* The executable sections, for probing an address no symbol names (an ifunc's target). */
static int keep_text(const struct reader *r, struct sym_module *m)
{
	m->text = calloc(r->nsec ? r->nsec : 1, sizeof(*m->text));
	if (!m->text)
		return -ENOMEM;
	for (size_t i = 1; i < r->nsec; i++) {
		const GElf_Shdr *sh = &r->shdrs[i];

		if (!(sh->sh_flags & SHF_EXECINSTR) || sh->sh_type == SHT_NOBITS || r->is_plt[i] ||
		    sh->sh_offset > r->file_size || sh->sh_size > r->file_size - sh->sh_offset)
			continue;
		m->text[m->ntext++] = (struct sym_text){ sh->sh_addr, sh->sh_size, sh->sh_offset };
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

		if (sh->sh_type == SHT_RELA) {
			err = read_irelative(r, scn, sh);
			if (err)
				return err;
		}
		if (sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM)
			continue;
		r->has_symtab |= sh->sh_type == SHT_SYMTAB;
		err = read_symtab(r, r->elf, r->file_size, scn, sh,
				  sh->sh_type == SHT_SYMTAB ? SYM_ORIGIN_SYMTAB : SYM_ORIGIN_DYNSYM);
		if (err)
			return err;
	}
	return 0;
}

/* The function symbols of the separate debug file of a module without .symtab. */
static int read_debug_file(struct reader *r, struct sym_module *m, Elf **delf, int *dfd)
{
	enum sym_origin origin = SYM_ORIGIN_BUILD_ID;
	Elf_Scn *scn = NULL;
	size_t size;
	int err;

	*dfd = sym_debug_find(r->elf, r->path, &m->debug_path, &origin);
	if (*dfd < 0) {
		m->stripped = true;
		return 0;
	}
	m->debug_origin = (uint8_t)origin;
	*delf = elf_begin(*dfd, ELF_C_READ_MMAP, NULL);
	if (!*delf || !elf_rawfile(*delf, &size))
		return bad_elf(r, "unreadable debug file");
	while ((scn = elf_nextscn(*delf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		err = read_symtab(r, *delf, size, scn, &sh, origin);
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

/*
 * The module id hashes the file's canonical path (symlinks and usrmerge resolved), so the same
 * file gets the same ids however it was named. A file given as an fd (a container's) is
 * named as its process maps it, which is already canonical there.
 */
static uint32_t module_id(const char *path, bool host_path)
{
	char canon[PATH_MAX];

	if (host_path && realpath(path, canon))
		return atf_module_id(canon);
	return atf_module_id(path);
}

int sym_module__open(struct sym_module **out, const char *path, int fd)
{
	struct reader r = { .path = path };
	struct sym_module *m = NULL;
	bool own_fd = fd < 0;
	Elf *delf = NULL;
	int dfd = -1;
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	if (own_fd) {
		/* in the target's root when it has its own; a regular file only, within the cap */
		fd = sym_root_open(path, SYM_MAX_FILE_SIZE);
		if (fd < 0) {
			fprintf(stderr, "atftrace: %s: %s\n", path, fd == -EINVAL ? "not a regular file"
				: fd == -EFBIG ? "larger than 4 GiB" : strerror(-fd));
			return fd;
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
	r.fd = fd;
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
	m->module_id = module_id(path, own_fd);
	m->build_id = build_id_hex(r.elf);
	m->size = load_span(r.elf);
	m->pie = eh.e_type == ET_DYN;
	if (!r.has_symtab)
		err = read_debug_file(&r, m, &delf, &dfd);
	if (!err)
		err = keep_text(&r, m);
	if (!err)
		err = build_funcs(&r, m);
	m->irel = r.irel;
	m->nirel = r.nirel;
	r.irel = NULL;
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
	free(r.irel);
	if (delf)
		elf_end(delf);
	if (dfd >= 0)
		close(dfd);
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
	free(m->debug_path);
	free(m->irel);
	free(m->text);
	free(m->path);
	free(m->open_path);
	free(m->build_id);
	free(m);
}
