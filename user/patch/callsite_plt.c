// SPDX-License-Identifier: MIT
/* PLT entries of a module file, for call-site redirection (user/patch/callsite_plt.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include "callsite_plt.h"

#ifndef R_X86_64_GLOB_DAT
#define R_X86_64_GLOB_DAT  6
#define R_X86_64_JUMP_SLOT 7
#endif

static int cmp_reloc(const void *a, const void *b)
{
	uint64_t x = ((const struct cs_plt_reloc *)a)->slot, y = ((const struct cs_plt_reloc *)b)->slot;

	return x < y ? -1 : x > y;
}

static int cmp_entry(const void *a, const void *b)
{
	uint64_t x = ((const struct cs_plt_entry *)a)->addr, y = ((const struct cs_plt_entry *)b)->addr;

	return x < y ? -1 : x > y;
}

/* The GOT-slot relocations of every SHT_RELA section, sorted; @symtab: their symbol table. */
static int read_relocs(Elf *elf, struct cs_plt_reloc **out, size_t *n, size_t *symtab)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			uint32_t type;

			if (!gelf_getrela(d, (int)i, &r))
				break;
			type = (uint32_t)GELF_R_TYPE(r.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
			    !GELF_R_SYM(r.r_info))
				continue;
			if (*n == cap) {
				struct cs_plt_reloc *nv = realloc(*out, (cap ? 2 * cap : 256) * sizeof(*nv));

				if (!nv)
					return -ENOMEM;
				*out = nv;
				cap = cap ? 2 * cap : 256;
			}
			(*out)[(*n)++] = (struct cs_plt_reloc){ r.r_offset, (uint32_t)GELF_R_SYM(r.r_info) };
			*symtab = sh.sh_link;
		}
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_reloc);
	return 0;
}

/* The entries of the PLT section @scn, appended to @p. */
static int read_section(Elf_Scn *scn, const GElf_Shdr *sh, const struct cs_plt_reloc *relocs,
			size_t nrelocs, struct cs_plt *p, size_t *cap)
{
	uint32_t stride = sh->sh_entsize ? (uint32_t)sh->sh_entsize : 16;
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t max = sh->sh_size / stride, n;

	if (!d || !d->d_buf || d->d_size < sh->sh_size || !max)
		return 0;
	if (p->n + max > *cap) {
		struct cs_plt_entry *nv = realloc(p->v, (p->n + max) * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		p->v = nv;
		*cap = p->n + max;
	}
	n = cs_plt_decode(d->d_buf, sh->sh_size, sh->sh_addr, stride, relocs, nrelocs, p->v + p->n,
			  max);
	p->n += n;
	return 0;
}

int cs_plt_read(int fd, struct cs_plt *p)
{
	struct cs_plt_reloc *relocs = NULL;
	size_t nrelocs = 0, symtab = 0, shstrndx, cap = 0;
	Elf_Scn *scn = NULL, *syms;
	GElf_Shdr symsh;
	Elf_Data *symd;
	Elf *elf;
	int err = 0;

	memset(p, 0, sizeof(*p));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	p->elf = elf;
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx))
		return -EINVAL;
	err = read_relocs(elf, &relocs, &nrelocs, &symtab);
	if (err || !nrelocs)
		goto cleanup;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strcmp(name, ".plt") && strcmp(name, ".plt.sec") && strcmp(name, ".plt.got")))
			continue;
		err = read_section(scn, &sh, relocs, nrelocs, p, &cap);
		if (err)
			goto cleanup;
	}
	if (!p->n)
		goto cleanup;
	qsort(p->v, p->n, sizeof(*p->v), cmp_entry);
	p->names = calloc(p->n, sizeof(*p->names));
	syms = elf_getscn(elf, symtab);
	if (!p->names) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!syms || !gelf_getshdr(syms, &symsh) || !(symd = elf_getdata(syms, NULL)))
		goto cleanup;       /* no names: no entry matches a function */
	for (size_t i = 0; i < p->n; i++) {
		GElf_Sym s;

		if (gelf_getsym(symd, (int)p->v[i].sym, &s))
			p->names[i] = elf_strptr(elf, symsh.sh_link, s.st_name);
	}
cleanup:
	free(relocs);
	return err;
}

void cs_plt_free(struct cs_plt *p)
{
	free(p->v);
	free(p->names);
	if (p->elf)
		elf_end(p->elf);
	memset(p, 0, sizeof(*p));
}

static int cmp_name(const void *a, const void *b, void *names)
{
	const char *const *v = names;

	return strcmp(v[*(const uint32_t *)a], v[*(const uint32_t *)b]);
}

int cs_plt_targets(int fd, const char *const *names, size_t n, uint64_t (**out)[3], size_t *nout)
{
	struct cs_plt plt;
	uint32_t *byname = NULL;
	int err = cs_plt_read(fd, &plt);

	*out = NULL;
	*nout = 0;
	if (err || !plt.n || !n) {
		err = err == -ENOMEM ? err : 0;     /* an unreadable PLT only means no PLT sites */
		goto cleanup;
	}
	byname = calloc(n, sizeof(*byname));
	*out = calloc(plt.n, sizeof(**out));
	if (!byname || !*out) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t i = 0; i < n; i++)
		byname[i] = i;
	qsort_r(byname, n, sizeof(*byname), cmp_name, (void *)names);
	for (size_t k = 0; k < plt.n; k++) {
		size_t lo = 0, hi = n;

		while (plt.names[k] && lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int c = strcmp(plt.names[k], names[byname[mid]]);

			if (!c) {
				(*out)[*nout][0] = plt.v[k].addr;
				(*out)[*nout][1] = byname[mid];
				(*out)[(*nout)++][2] = plt.v[k].slot;
				break;
			}
			if (c < 0)
				hi = mid;
			else
				lo = mid + 1;
		}
	}
cleanup:
	free(byname);
	cs_plt_free(&plt);
	return err;
}

int cs_got_foreign(int fd, uint64_t **out, size_t *nout)
{
	struct cs_plt_reloc *relocs = NULL;
	size_t nrelocs = 0, symtab = 0;
	GElf_Shdr symsh;
	Elf_Data *symd;
	Elf_Scn *syms;
	Elf *elf;
	int err = 0;

	*out = NULL;
	*nout = 0;
	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return 0;
	if (elf_kind(elf) != ELF_K_ELF || read_relocs(elf, &relocs, &nrelocs, &symtab) || !nrelocs)
		goto cleanup;
	syms = elf_getscn(elf, symtab);
	if (!syms || !gelf_getshdr(syms, &symsh) || !(symd = elf_getdata(syms, NULL)))
		goto cleanup;
	*out = calloc(nrelocs, sizeof(**out));
	if (!*out) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* relocs are sorted by slot: so is the result */
	for (size_t i = 0; i < nrelocs; i++) {
		GElf_Sym s;

		if (gelf_getsym(symd, (int)relocs[i].sym, &s) && s.st_shndx == SHN_UNDEF)
			(*out)[(*nout)++] = relocs[i].slot;
	}
cleanup:
	free(relocs);
	elf_end(elf);
	return err;
}
