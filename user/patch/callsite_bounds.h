/* SPDX-License-Identifier: MIT */
/*
 * Where the functions of a module file are (user/patch/callsite_bounds.c, on libelf), to decode
 * the calls of a module that is not traced (a program calling a traced library's functions
 * through its PLT): from .symtab, or, in a stripped file, from the ranges of the .eh_frame FDEs
 * that .eh_frame_hdr indexes. Only what decodes as a whole function is searched for calls.
 */
#ifndef ATFTRACE_CALLSITE_BOUNDS_H
#define ATFTRACE_CALLSITE_BOUNDS_H

#include <stddef.h>
#include <stdint.h>

/* One function of the file. */
struct cs_range {
	uint64_t addr;              /* module address */
	uint64_t off;               /* file offset */
	uint64_t size;
};

/* How cs_func_ranges() found them. */
enum cs_ranges_from {
	CS_RANGES_NONE = 0,         /* neither: the module is not searched */
	CS_RANGES_SYMTAB,
	CS_RANGES_EH_FRAME,
};

/**
 * cs_func_ranges - the functions of the ELF file @fd in an executable PT_LOAD segment, sorted by
 * address, one per address (aliases dropped), into @out (allocated; free it), @n of them;
 * *@from says from where. 0 (perhaps none) or a negative errno.
 */
int cs_func_ranges(int fd, struct cs_range **out, size_t *n, enum cs_ranges_from *from);

/**
 * cs_eh_frame_ranges - the pure part: from the .eh_frame_hdr at module address @hdr_addr
 * (@hdr, @hdr_size bytes) and the .eh_frame bytes at @frame_addr (@frame, @frame_size), each
 * indexed FDE's [initial location, + address range), when its header uses the encodings GCC and
 * clang emit on x86-64 (table: datarel sdata4; FDE: pcrel sdata4, checked against the table),
 * into @out (at most @cap; addr and size set). Returns how many.
 */
size_t cs_eh_frame_ranges(const uint8_t *hdr, uint64_t hdr_size, uint64_t hdr_addr,
			  const uint8_t *frame, uint64_t frame_size, uint64_t frame_addr,
			  struct cs_range *out, size_t cap);

#endif
