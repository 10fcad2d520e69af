// SPDX-License-Identifier: MIT
/*
 * sym_elf_defines (include/symbols.h): which of a few function names an ELF file defines, from
 * its own .dynsym and .symtab only (no debug file, no debuginfod): cheap enough to ask of every
 * file a traced process maps (user/record/record_unwinders.c looks for the C++ unwinder so).
 */
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>
#include "symbols.h"

uint32_t sym_elf_defines(const char *path, const char *const *names, size_t nnames)
{
	uint32_t found = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	if (nnames > 32 || elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !(name = elf_strptr(elf, sh.sh_link, s.st_name)))
				continue;
			for (size_t k = 0; k < nnames; k++)
				if (!strcmp(name, names[k]))
					found |= 1u << k;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}
