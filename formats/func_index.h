/* SPDX-License-Identifier: MIT */
/*
 * Dense numbering of function ids for exporters that refer to functions by a small number
 * (RTC names stream, ZTS METHOD, dial9 pool ids, Perfetto interned-name iids). Open addressing;
 * O(functions) memory.
 */
#ifndef ATFTRACE_FUNC_INDEX_H
#define ATFTRACE_FUNC_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct func_entry {
	uint64_t function_id;
	char *name;                 /* copy (at most name_max bytes), or NULL when not kept */
	uint64_t mark;              /* free for the exporter (RTC: Unit the name was last sent in) */
};

struct func_index {
	struct func_entry *funcs;   /* funcs[i] has index i, in order of first lookup */
	size_t n, cap;
	uint32_t *slots;            /* index + 1, 0 = empty */
	size_t nslots;
	size_t name_max;            /* 0: do not keep names */
};

/**
 * func_index__get - index of @function_id, added (with a copy of @name, when names are kept)
 * on first sight. Returns the index (>= 0) or -ENOMEM.
 */
int64_t func_index__get(struct func_index *fi, uint64_t function_id, const char *name);
/**
 * func_index__get_new - func_index__get that also tells whether @function_id was added by this
 * call (*@added), for exporters that define a function on its first use (dial9, Perfetto).
 */
int64_t func_index__get_new(struct func_index *fi, uint64_t function_id, const char *name, bool *added);
void func_index__free(struct func_index *fi);

/** func_name_hash - 64-bit FNV-1a of @name: a key for exporters that number functions by name. */
uint64_t func_name_hash(const char *name);

#endif
