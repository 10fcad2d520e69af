// SPDX-License-Identifier: MIT
/*
 * manifest.json in memory: module ids, builders and symbol lookup (saving: manifest_save.c,
 * loading: manifest_load.c).
 *
 * Schema: the reference "2.1" layout (NOTES.md §1) - threads, time range, clock_type, modules,
 * symbols, format_version last - plus our own keys. function_id and addresses are JSON strings
 * because ada-cli rejects numbers there. Strings that are not valid UTF-8 are written twice: a
 * lossy "<key>" (utf8.h: one U+FFFD per maximal invalid subpart) that any JSON reader accepts,
 * and an exact "<key>_hex" that our loader prefers, so every byte string round-trips.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "atf.h"
#include "manifest_int.h"

/* ---- ids ------------------------------------------------------------------------------------ */

uint32_t atf_module_id(const char *path)
{
	uint32_t h = 0x811C9DC5u;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		unsigned char c = *p;

		if (c >= 'A' && c <= 'Z')   /* ASCII only: locale must not change ids */
			c = (unsigned char)(c - 'A' + 'a');
		h ^= c;
		h *= 0x01000193u;
	}
	return h ? h : 0x9E3779B9u;
}

/* ---- building ------------------------------------------------------------------------------- */

struct atf_manifest *atf_manifest__new(void)
{
	struct atf_manifest *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->format_version = strdup("2.1");
	if (!m->format_version) {
		free(m);
		return NULL;
	}
	m->clock_type = ATF_CLOCK_BOOTTIME;
	return m;
}

void atf_manifest__free(struct atf_manifest *m)
{
	if (!m)
		return;
	free(m->format_version);
	free(m->process_name);
	for (size_t i = 0; i < m->argc; i++)
		free(m->argv[i]);
	free(m->argv);
	free(m->kernel);
	free(m->host);
	free(m->atftrace_version);
	free(m->start_time);
	free(m->end_reason);
	free(m->record_filter);
	for (size_t i = 0; i < m->nthreads; i++)
		free(m->threads[i].name);
	free(m->threads);
	for (size_t i = 0; i < m->nmodules; i++) {
		free(m->modules[i].path);
		free(m->modules[i].build_id);
	}
	free(m->modules);
	for (size_t i = 0; i < m->nsymbols; i++) {
		free(m->symbols[i].name);
		free(m->symbols[i].demangled);
		free(m->symbols[i].simple);
		for (size_t j = 0; j < m->symbols[i].naliases; j++)
			free(m->symbols[i].aliases[j]);
		free(m->symbols[i].aliases);
	}
	free(m->symbols);
	free(m);
}

/*
 * Grow @arr (of @n elements of @size) by one zeroed element; NULL on ENOMEM. Arrays only ever
 * grow here, so their capacity is the next power of two >= n: reallocating when n reaches a
 * power of two keeps adding a module's thousands of symbols linear.
 */
static void *grow(void **arr, size_t *n, size_t size)
{
	void *p = *arr;

	if (*n == 0 || (*n & (*n - 1)) == 0) {
		p = realloc(*arr, (*n ? *n * 2 : 1) * size);
		if (!p)
			return NULL;
	}
	*arr = p;
	memset((char *)p + *n * size, 0, size);
	return (char *)p + (*n)++ * size;
}

/* strdup that keeps NULL as NULL; sets *@fail on ENOMEM. */
static char *dup_opt(const char *s, bool *fail)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*fail = true;
	return d;
}

struct atf_thread_info *atf_manifest__add_thread(struct atf_manifest *m, uint32_t id, uint32_t tid, const char *name)
{
	bool fail = false;
	char *n = dup_opt(name, &fail);
	struct atf_thread_info *t;

	if (fail)
		return NULL;
	t = grow((void **)&m->threads, &m->nthreads, sizeof(*t));
	if (!t) {
		free(n);
		return NULL;
	}
	t->id = id;
	t->tid = tid;
	t->name = n;
	return t;
}

struct atf_module *atf_manifest__add_module(struct atf_manifest *m, const char *path)
{
	char *p = strdup(path);
	struct atf_module *mod;

	if (!p)
		return NULL;
	mod = grow((void **)&m->modules, &m->nmodules, sizeof(*mod));
	if (!mod) {
		free(p);
		return NULL;
	}
	mod->path = p;
	mod->module_id = atf_module_id(path);
	return mod;
}

struct atf_symbol *atf_manifest__add_symbol(struct atf_manifest *m, uint32_t module_id, uint32_t symbol_index, const char *name)
{
	char *n = strdup(name);
	struct atf_symbol *s;

	if (!n)
		return NULL;
	s = grow((void **)&m->symbols, &m->nsymbols, sizeof(*s));
	if (!s) {
		free(n);
		return NULL;
	}
	s->module_id = module_id;
	s->symbol_index = symbol_index;
	s->function_id = (uint64_t)module_id << 32 | symbol_index;
	s->name = n;
	m->symbols_sorted = false;
	return s;
}

int atf_symbol__add_alias(struct atf_symbol *s, const char *name)
{
	char **a;

	if (!name || (s->name && !strcmp(s->name, name)))
		return 0;
	for (size_t i = 0; i < s->naliases; i++)
		if (!strcmp(s->aliases[i], name))
			return 0;
	if (!(a = realloc(s->aliases, (s->naliases + 1) * sizeof(*a))))
		return -ENOMEM;
	s->aliases = a;
	if (!(a[s->naliases] = strdup(name)))
		return -ENOMEM;
	s->naliases++;
	return 0;
}

/* ---- lookup --------------------------------------------------------------------------------- */

static int symbol_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct atf_symbol *)a)->function_id, y = ((const struct atf_symbol *)b)->function_id;

	return x < y ? -1 : x > y;
}

const struct atf_symbol *atf_manifest__symbol(struct atf_manifest *m, uint64_t function_id)
{
	struct atf_symbol key = { .function_id = function_id };

	if (!m || !m->nsymbols)
		return NULL;
	if (!m->symbols_sorted) {   /* once: builders append in any order */
		qsort(m->symbols, m->nsymbols, sizeof(*m->symbols), symbol_cmp);
		m->symbols_sorted = true;
	}
	return bsearch(&key, m->symbols, m->nsymbols, sizeof(*m->symbols), symbol_cmp);
}

/* ---- hex (manifest_int.h: shared with manifest_save.c and manifest_load.c) ------------------ */

char *manifest_hex_encode(const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = strlen(s);
	char *out = malloc(n * 2 + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[(unsigned char)s[i] >> 4];
		out[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	out[n * 2] = 0;
	return out;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode an even-length hex string into a NUL-terminated byte string (no NUL inside); NULL if bad. */
char *manifest_hex_decode(const char *h, bool *nomem)
{
	size_t n = strlen(h);
	char *out;

	if (n % 2)
		return NULL;
	out = malloc(n / 2 + 1);
	if (!out) {
		*nomem = true;
		return NULL;
	}
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hex_digit(h[2 * i]), lo = hex_digit(h[2 * i + 1]);

		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			free(out);
			return NULL;
		}
		out[i] = (char)(hi << 4 | lo);
	}
	out[n / 2] = 0;
	return out;
}


const char *atf_filtered_key(unsigned reason)
{
	static const char *const keys[ATF_FILTERED_REASONS] = {
		"filtered_depth", "filtered_time", "filtered_function", "filtered_trace_off",
	};

	return reason < ATF_FILTERED_REASONS ? keys[reason] : "filtered_other";
}
