// SPDX-License-Identifier: MIT
/* Dense function numbering for exporters (see func_index.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "func_index.h"

static size_t slot_of(uint64_t x, size_t nslots)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (nslots - 1);
}

static int grow_slots(struct func_index *fi)
{
	size_t n = fi->nslots ? fi->nslots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < fi->n; i++) {
		size_t j = slot_of(fi->funcs[i].function_id, n);

		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(fi->slots);
	fi->slots = s;
	fi->nslots = n;
	return 0;
}

int64_t func_index__get(struct func_index *fi, uint64_t function_id, const char *name)
{
	bool added;

	return func_index__get_new(fi, function_id, name, &added);
}

int64_t func_index__get_new(struct func_index *fi, uint64_t function_id, const char *name, bool *added)
{
	struct func_entry *e;
	size_t j;
	int err;

	*added = false;
	if ((fi->n + 1) * 2 > fi->nslots && (err = grow_slots(fi)))
		return err;
	for (j = slot_of(function_id, fi->nslots); fi->slots[j]; j = (j + 1) & (fi->nslots - 1))
		if (fi->funcs[fi->slots[j] - 1].function_id == function_id)
			return fi->slots[j] - 1;
	if (fi->n == fi->cap) {
		size_t cap = fi->cap ? fi->cap * 2 : 256;
		struct func_entry *f = realloc(fi->funcs, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		fi->funcs = f;
		fi->cap = cap;
	}
	e = &fi->funcs[fi->n];
	*e = (struct func_entry){ .function_id = function_id };
	if (fi->name_max && !(e->name = strndup(name ? name : "", fi->name_max)))
		return -ENOMEM;
	fi->slots[j] = (uint32_t)++fi->n;
	*added = true;
	return (int64_t)fi->n - 1;
}

void func_index__free(struct func_index *fi)
{
	for (size_t i = 0; i < fi->n; i++)
		free(fi->funcs[i].name);
	free(fi->funcs);
	free(fi->slots);
	*fi = (struct func_index){ 0 };
}

uint64_t func_name_hash(const char *name)
{
	uint64_t h = 1469598103934665603ull;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 1099511628211ull;
	return h;
}
