// SPDX-License-Identifier: MIT
/* Where a module file's functions are (user/patch/callsite_bounds.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include "callsite_bounds.h"

#define EH_PE_UDATA4 0x03
#define EH_PE_SDATA4 0x0b
#define EH_PE_PCREL_SDATA4 0x1b
#define EH_PE_DATAREL_SDATA4 0x3b

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t cs_eh_frame_ranges(const uint8_t *hdr, uint64_t hdr_size, uint64_t hdr_addr,
			  const uint8_t *frame, uint64_t frame_size, uint64_t frame_addr,
			  struct cs_range *out, size_t cap)
{
	uint64_t count;
	size_t n = 0;

	/* version 1; a 4-byte eh_frame_ptr; a udata4 count; a datarel sdata4 table */
	if (hdr_size < 12 || hdr[0] != 1 || (hdr[1] & 0x0f) == 0 ||
	    ((hdr[1] & 0x0f) != EH_PE_SDATA4 && (hdr[1] & 0x0f) != EH_PE_UDATA4) ||
	    hdr[2] != EH_PE_UDATA4 || hdr[3] != EH_PE_DATAREL_SDATA4)
		return 0;
	count = get_u32(hdr + 8);
	if (count > (hdr_size - 12) / 8)
		return 0;
	for (uint64_t i = 0; i < count && n < cap; i++) {
		const uint8_t *e = hdr + 12 + i * 8;
		uint64_t loc = hdr_addr + (uint64_t)(int64_t)(int32_t)get_u32(e);
		uint64_t fde = hdr_addr + (uint64_t)(int64_t)(int32_t)get_u32(e + 4);
		const uint8_t *p;
		uint32_t len, range;

		if (fde < frame_addr || fde - frame_addr > frame_size || frame_size - (fde - frame_addr) < 16)
			continue;
		p = frame + (fde - frame_addr);
		len = get_u32(p);
		range = get_u32(p + 12);
		/* a plain FDE (not a CIE, not 64-bit) whose pcrel initial location is the table's */
		if (!len || len == 0xffffffffu || len < 12 || !get_u32(p + 4) ||
		    fde + 8 + (uint64_t)(int64_t)(int32_t)get_u32(p + 8) != loc || !range)
			continue;
		out[n++] = (struct cs_range){ .addr = loc, .size = range };
	}
	return n;
}

/* The executable PT_LOAD segment holding [@addr, @addr + @size): the file offset, or false. */
static bool text_offset(Elf *elf, uint64_t addr, uint64_t size, uint64_t *off)
{
	size_t np;

	if (elf_getphdrnum(elf, &np))
		return false;
	for (size_t i = 0; i < np; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr - ph.p_vaddr <= ph.p_filesz &&
		    size <= ph.p_filesz - (addr - ph.p_vaddr)) {
			*off = ph.p_offset + (addr - ph.p_vaddr);
			return true;
		}
	}
	return false;
}

static int from_symtab(Elf *elf, struct cs_range **out, size_t *n)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			if (GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_size || s.st_shndx == SHN_UNDEF)
				continue;
			if (*n == cap) {
				struct cs_range *nv = realloc(*out, (cap ? 2 * cap : 256) * sizeof(*nv));

				if (!nv)
					return -ENOMEM;
				*out = nv;
				cap = cap ? 2 * cap : 256;
			}
			(*out)[(*n)++] = (struct cs_range){ .addr = s.st_value, .size = s.st_size };
		}
	}
	return 0;
}

static int from_eh_frame(Elf *elf, struct cs_range **out, size_t *n)
{
	size_t np, rawsize;
	const uint8_t *raw = (const uint8_t *)elf_rawfile(elf, &rawsize);
	GElf_Phdr hdr = { 0 }, seg = { 0 };

	if (!raw || elf_getphdrnum(elf, &np))
		return 0;
	for (size_t i = 0; i < np; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			hdr = ph;
	}
	/* the loaded segment that holds the header: .eh_frame is next to it */
	for (size_t i = 0; hdr.p_filesz && i < np; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    hdr.p_vaddr >= ph.p_vaddr && hdr.p_vaddr - ph.p_vaddr < ph.p_filesz)
			seg = ph;
	}
	if (!seg.p_filesz || seg.p_offset > rawsize || seg.p_filesz > rawsize - seg.p_offset ||
	    hdr.p_offset > rawsize || hdr.p_filesz > rawsize - hdr.p_offset || hdr.p_filesz < 12)
		return 0;
	*out = calloc(hdr.p_filesz / 8, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	*n = cs_eh_frame_ranges(raw + hdr.p_offset, hdr.p_filesz, hdr.p_vaddr, raw + seg.p_offset,
				seg.p_filesz, seg.p_vaddr, *out, hdr.p_filesz / 8);
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	uint64_t x = ((const struct cs_range *)a)->addr, y = ((const struct cs_range *)b)->addr;

	return x < y ? -1 : x > y;
}

int cs_func_ranges(int fd, struct cs_range **out, size_t *n, enum cs_ranges_from *from)
{
	Elf *elf;
	size_t k = 0;
	int err;

	*out = NULL;
	*n = 0;
	*from = CS_RANGES_NONE;
	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return 0;
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return 0;
	}
	err = from_symtab(elf, out, n);
	if (!err && *n)
		*from = CS_RANGES_SYMTAB;
	else if (!err && !(err = from_eh_frame(elf, out, n)) && *n)
		*from = CS_RANGES_EH_FRAME;
	if (!err && *n) {
		qsort(*out, *n, sizeof(**out), cmp_range);
		for (size_t i = 0; i < *n; i++) {
			struct cs_range r = (*out)[i];

			if ((k && (*out)[k - 1].addr == r.addr) || !text_offset(elf, r.addr, r.size, &r.off))
				continue;       /* an alias, or not in the text */
			(*out)[k++] = r;
		}
		*n = k;
	}
	elf_end(elf);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
		*from = CS_RANGES_NONE;
	}
	return err;
}
