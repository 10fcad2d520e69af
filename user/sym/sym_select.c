// SPDX-License-Identifier: MIT
/*
 * Names and selection (include/symbols.h): C++ names demangled, functions selected by
 * -f [MODULE:]GLOB and -x GLOB on the raw and the demangled name; a glob naming an alias
 * selects the symbol probed in its place.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "symbols.h"

/* C++ demangling through the C++ runtime, when it is installed. */

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

char *sym_demangle(const char *name)
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

/*
 * Does "[MODULE:]GLOB" apply to @f of module @path? MODULE (before a single ':', so C++ "::"
 * stays part of the function glob) is matched against the full path and its basename; the
 * function glob against the raw and the demangled name.
 */
bool sym_glob_matches(const char *glob, const char *path, const struct sym_func *f)
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
			want = sym_glob_matches(globs[g], m->path, f);
		for (size_t x = 0; x < nexcludes; x++) {
			if (sym_glob_matches(excludes[x], m->path, f)) {
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
			want = sym_glob_matches(globs[g], m->path, f);
		for (size_t x = 0; x < nexcludes && want; x++)
			excluded = sym_glob_matches(excludes[x], m->path, f);
		if (want && !excluded) {
			primary->selected = true;
			count++;
		}
	}
	return count;
}


/* The ELF entry point of @path (e_entry), or 0. */
static uint64_t elf_entry(const char *path)
{
	uint64_t entry = 0;
	GElf_Ehdr eh;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && gelf_getehdr(elf, &eh))
		entry = eh.e_entry;
	elf_end(elf);
	close(fd);
	return entry;
}

size_t sym_module__skip_entry(struct sym_module *m, const char *path)
{
	uint64_t entry = elf_entry(path);
	size_t n = 0;

	for (size_t i = 0; entry && i < m->nfuncs; i++) {
		struct sym_func *f = &m->funcs[i];

		if (f->addr != entry || f->skip != SYM_OK)
			continue;
		n += f->selected;
		f->selected = false;
		f->skip = SYM_SKIP_ENTRY;
	}
	return n;
}

bool sym_module__names_any(const struct sym_module *m, const char *glob)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		if (sym_glob_matches(glob, m->path, &m->funcs[i]))
			return true;
	return false;
}

/* Levenshtein distance of @a and @b, or @cap + 1 once it is certain to exceed @cap. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b), best, *row;

	if ((la > lb ? la - lb : lb - la) > cap || la > 256 || lb > 256)
		return cap + 1;
	row = malloc((lb + 1) * sizeof(*row));
	if (!row)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = best = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], v = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
			if (v < best)
				best = v;
		}
		if (best > cap) {
			free(row);
			return cap + 1;
		}
	}
	best = row[lb];
	free(row);
	return best;
}

size_t sym_module__closest(const struct sym_module *m, const char *name, const char **out, size_t max)
{
	size_t n = 0, dist[8], cap = strlen(name) / 3 + 1;

	if (max > 8)
		max = 8;
	for (size_t i = 0; i < m->nfuncs; i++)
		for (int k = 0; k < 2; k++) {
			const char *cand = k ? m->funcs[i].demangled : m->funcs[i].name;
			size_t d, at;
			bool dup = false;

			if (!cand || (d = edit_distance(name, cand, cap)) > cap)
				continue;
			for (size_t j = 0; j < n && !dup; j++)
				dup = !strcmp(out[j], cand);
			if (dup)
				continue;
			/* insert in order of distance, then name; drop what falls off the end */
			for (at = n; at > 0 && (dist[at - 1] > d || (dist[at - 1] == d && strcmp(out[at - 1], cand) > 0)); at--)
				;
			if (at >= max)
				continue;
			if (n < max)
				n++;
			memmove(&out[at + 1], &out[at], (n - 1 - at) * sizeof(*out));
			memmove(&dist[at + 1], &dist[at], (n - 1 - at) * sizeof(*dist));
			out[at] = cand;
			dist[at] = d;
		}
	return n;
}
