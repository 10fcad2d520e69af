// SPDX-License-Identifier: MIT
/*
 * manifest.json: build, save (atomically) and load the per-process session manifest.
 *
 * Schema: the reference "2.1" layout (NOTES.md §1) - threads, time range, clock_type, modules,
 * symbols, format_version last - plus our own keys. function_id and addresses are JSON strings
 * because ada-cli rejects numbers there. Strings that are not valid UTF-8 are written twice: a
 * lossy "<key>" (U+FFFD per bad byte) that any JSON reader accepts, and an exact "<key>_hex"
 * that our loader prefers, so every byte string round-trips.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "atf.h"

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
	}
	free(m->symbols);
	free(m);
}

/* Grow @arr (of @n elements of @size) by one zeroed element; NULL on ENOMEM. */
static void *grow(void **arr, size_t *n, size_t size)
{
	void *p = realloc(*arr, (*n + 1) * size);

	if (!p)
		return NULL;
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

/* ---- UTF-8 ---------------------------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at @p (of @n bytes), or 0 when it is not one. */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;   /* overlong, out of range or a surrogate */
	return len;
}

static bool utf8_valid(const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0, l; i < n; i += l)
		if (!(l = utf8_seq_len((const unsigned char *)s + i, n - i)))
			return false;
	return true;
}

/* Copy of @s with every byte that is not part of valid UTF-8 replaced by U+FFFD. */
static char *utf8_lossy(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out = malloc(n * 3 + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq_len((const unsigned char *)s + i, n - i);

		if (l) {
			memcpy(out + o, s + i, l);
			o += l, i += l;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3, i++;
		}
	}
	out[o] = 0;
	return out;
}

static char *hex_encode(const char *s)
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
static char *hex_decode(const char *h, bool *nomem)
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

/* ---- saving --------------------------------------------------------------------------------- */

/* Each setter returns 0 or -ENOMEM; a NULL string sets nothing. */
static int set_new(json_t *obj, const char *key, json_t *v)
{
	return v && !json_object_set_new(obj, key, v) ? 0 : -ENOMEM;
}

static int set_u64(json_t *obj, const char *key, uint64_t v)
{
	return set_new(obj, key, json_integer((json_int_t)v));
}

static int set_hexaddr(json_t *obj, const char *key, uint64_t v, bool pad)
{
	char buf[24];

	snprintf(buf, sizeof(buf), pad ? "0x%016llx" : "0x%llx", (unsigned long long)v);
	return set_new(obj, key, json_string(buf));
}

/* String @s under @key; not valid UTF-8: lossy under @key plus exact bytes under "<key>_hex". */
static int set_str(json_t *obj, const char *key, const char *s)
{
	char hkey[64], *lossy, *hex;
	int err;

	if (!s)
		return 0;
	if (utf8_valid(s))
		return set_new(obj, key, json_string(s));
	lossy = utf8_lossy(s);
	hex = hex_encode(s);
	snprintf(hkey, sizeof(hkey), "%s_hex", key);
	err = lossy && hex ? set_new(obj, key, json_string(lossy)) : -ENOMEM;
	if (!err)
		err = set_new(obj, hkey, json_string(hex));
	free(lossy);
	free(hex);
	return err;
}

static json_t *build_thread(const struct atf_thread_info *t)
{
	json_t *o = json_object();
	int err;

	if (!o)
		return NULL;
	err = set_u64(o, "id", t->id);
	err = err ?: set_new(o, "has_detail", json_boolean(t->has_detail));
	err = err ?: set_u64(o, "tid", t->tid);
	err = err ?: set_u64(o, "ns_tid", t->ns_tid);
	err = err ?: set_str(o, "name", t->name);
	err = err ?: set_u64(o, "index_events", t->index_events);
	err = err ?: set_u64(o, "detail_events", t->detail_events);
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *build_module(const struct atf_module *mod)
{
	json_t *o = json_object();
	int err;

	if (!o)
		return NULL;
	err = set_u64(o, "module_id", mod->module_id);
	err = err ?: set_str(o, "path", mod->path);
	err = err ?: set_hexaddr(o, "base_address", mod->base_address, false);
	err = err ?: set_u64(o, "size", mod->size);
	err = err ?: set_str(o, "build_id", mod->build_id);
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *build_symbol(const struct atf_symbol *s)
{
	json_t *o = json_object();
	int err;

	if (!o)
		return NULL;
	err = set_hexaddr(o, "function_id", s->function_id, true);
	err = err ?: set_u64(o, "module_id", s->module_id);
	err = err ?: set_u64(o, "symbol_index", s->symbol_index);
	err = err ?: set_str(o, "name", s->name ? s->name : "");
	err = err ?: set_str(o, "demangled", s->demangled);
	err = err ?: set_hexaddr(o, "address", s->address, false);
	err = err ?: set_u64(o, "size", s->size);
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* argv as an array of (lossy) strings, plus "argv_hex" (hex or null per element) when any is not UTF-8. */
static int set_argv(json_t *root, const struct atf_manifest *m)
{
	json_t *arr = json_array(), *hex = NULL;
	int err = arr ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < m->argc; i++) {
		const char *a = m->argv[i] ? m->argv[i] : "";

		if (utf8_valid(a)) {
			err = json_array_append_new(arr, json_string(a)) ? -ENOMEM : 0;
			if (!err && hex)   /* exact already: null keeps the indices aligned */
				err = json_array_append_new(hex, json_null()) ? -ENOMEM : 0;
			continue;
		}
		if (!hex) {   /* first bad element: earlier ones are exact, so null */
			hex = json_array();
			for (size_t j = 0; hex && j < i; j++)
				json_array_append_new(hex, json_null());
			if (!hex || json_array_size(hex) != i) {
				err = -ENOMEM;
				break;
			}
		}
		char *lossy = utf8_lossy(a), *h = hex_encode(a);

		err = lossy && h && !json_array_append_new(arr, json_string(lossy)) &&
		      !json_array_append_new(hex, json_string(h)) ? 0 : -ENOMEM;
		free(lossy);
		free(h);
	}
	if (err) {
		json_decref(arr);
		json_decref(hex);
		return err;
	}
	err = set_new(root, "argv", arr);
	if (hex)
		err = err ?: set_new(root, "argv_hex", hex);
	return err;
}

static json_t *build_root(const struct atf_manifest *m)
{
	json_t *root = json_object(), *threads = json_array(), *modules = json_array(), *symbols = json_array();
	int err = root && threads && modules && symbols ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < m->nthreads; i++)
		err = json_array_append_new(threads, build_thread(&m->threads[i])) ? -ENOMEM : 0;
	for (size_t i = 0; !err && i < m->nmodules; i++)
		err = json_array_append_new(modules, build_module(&m->modules[i])) ? -ENOMEM : 0;
	for (size_t i = 0; !err && i < m->nsymbols; i++)
		err = json_array_append_new(symbols, build_symbol(&m->symbols[i])) ? -ENOMEM : 0;
	if (err) {
		json_decref(threads);
		json_decref(modules);
		json_decref(symbols);
		json_decref(root);
		return NULL;
	}
	/* jansson keeps insertion order: reference keys first, format_version last. */
	err = set_new(root, "threads", threads);
	err = err ?: set_u64(root, "time_start_ns", m->time_start_ns);
	err = err ?: set_u64(root, "time_end_ns", m->time_end_ns);
	err = err ?: set_u64(root, "clock_type", m->clock_type);
	err = err ?: set_new(root, "modules", modules);
	err = err ?: set_new(root, "symbols", symbols);
	err = err ?: set_u64(root, "pid", m->pid);
	err = err ?: set_u64(root, "ns_pid", m->ns_pid);
	err = err ?: set_str(root, "process_name", m->process_name);
	err = err ?: set_argv(root, m);
	err = err ?: set_u64(root, "lost_events", m->lost_events);
	err = err ?: set_u64(root, "lost_detail", m->lost_detail);
	err = err ?: set_str(root, "kernel", m->kernel);
	err = err ?: set_str(root, "host", m->host);
	err = err ?: set_str(root, "atftrace_version", m->atftrace_version);
	err = err ?: set_str(root, "start_time", m->start_time);
	err = err ?: set_str(root, "end_reason", m->end_reason);
	err = err ?: set_str(root, "format_version", m->format_version ? m->format_version : "2.1");
	if (err) {
		json_decref(root);
		return NULL;
	}
	return root;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n, len -= (size_t)n;
	}
	return 0;
}

/* fsync the directory holding @path so a rename into it is durable. */
static int fsync_parent(const char *path)
{
	char *copy = strdup(path);
	int fd, err = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		err = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return err;
}

int atf_manifest__save(const struct atf_manifest *m, const char *path)
{
	json_t *root = build_root(m);
	char *text = NULL, tmp[4096];
	int fd = -1, err = 0;

	if (!root)
		return -ENOMEM;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	text = json_dumps(root, JSON_INDENT(2));
	if (!text) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = write_all(fd, text, strlen(text));
	err = err ?: write_all(fd, "\n", 1);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	if (!err && rename(tmp, path))
		err = -errno;
	err = err ?: fsync_parent(path);
cleanup:
	if (fd >= 0)
		close(fd);
	if (err)
		unlink(tmp);
	free(text);
	json_decref(root);
	return err;
}

/* ---- loading -------------------------------------------------------------------------------- */

struct loader {
	struct atf_diag *diag;
	const char *path;
	int err;
};

static int load_fail(struct loader *L, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int load_fail(struct loader *L, int err, const char *fmt, ...)
{
	va_list ap;

	if (L->err)
		return L->err;   /* keep the first problem */
	L->err = err;
	if (L->diag) {
		L->diag->err = err;
		snprintf(L->diag->file, sizeof(L->diag->file), "%s", L->path);
		L->diag->offset = 0;
		va_start(ap, fmt);
		vsnprintf(L->diag->msg, sizeof(L->diag->msg), fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Optional unsigned integer @key of @obj that must fit @max; absent keeps *@out. */
static void get_uint(struct loader *L, json_t *obj, const char *where, const char *key, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) {
		load_fail(L, -ATF_E_MANIFEST, "%s\"%s\": expected an integer in 0..%llu", where, key,
			  (unsigned long long)max);
		return;
	}
	*out = (uint64_t)json_integer_value(v);
}

/* Parse "0x<hex>", a decimal string, or a JSON integer (function ids, addresses). */
static void get_num_or_str(struct loader *L, json_t *obj, const char *where, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);
	const char *s, *digits;
	char *end;
	int base = 10;

	if (!v)
		return;
	if (json_is_integer(v)) {
		get_uint(L, obj, where, key, UINT64_MAX, out);
		return;
	}
	s = json_string_value(v);
	if (!s)
		goto bad;
	digits = s;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		digits = s + 2, base = 16;
	if (!*digits || *digits == '-' || *digits == '+' || *digits == ' ')
		goto bad;
	errno = 0;
	*out = strtoull(digits, &end, base);
	if (errno || *end)
		goto bad;
	return;
bad:
	load_fail(L, -ATF_E_MANIFEST, "%s\"%s\": expected \"0x<hex>\", a decimal string or an integer", where, key);
}

/* Optional string @key (exact "<key>_hex" preferred); absent leaves *@out NULL. */
static void get_str(struct loader *L, json_t *obj, const char *where, const char *key, char **out)
{
	char hkey[64];
	json_t *v = json_object_get(obj, key), *h;
	bool nomem = false;

	snprintf(hkey, sizeof(hkey), "%s_hex", key);
	h = json_object_get(obj, hkey);
	if (h) {
		if (!json_is_string(h) || !(*out = hex_decode(json_string_value(h), &nomem)))
			load_fail(L, nomem ? -ENOMEM : -ATF_E_MANIFEST,
				  "%s\"%s\": expected an even-length hex string without 00 bytes", where, hkey);
		return;
	}
	if (!v || json_is_null(v))
		return;
	if (!json_is_string(v) || memchr(json_string_value(v), 0, json_string_length(v))) {
		load_fail(L, -ATF_E_MANIFEST, "%s\"%s\": expected a string", where, key);
		return;
	}
	if (!(*out = strdup(json_string_value(v))))
		load_fail(L, -ENOMEM, "out of memory");
}

/* Array @key of @obj, or NULL when absent; a non-array is an error. */
static json_t *get_array(struct loader *L, json_t *obj, const char *key, bool required)
{
	json_t *v = json_object_get(obj, key);

	if (!v && !required)
		return NULL;
	if (!json_is_array(v)) {
		load_fail(L, -ATF_E_MANIFEST, "\"%s\": %s", key, v ? "expected an array" : "missing (required)");
		return NULL;
	}
	return v;
}

static void load_threads(struct loader *L, json_t *root, struct atf_manifest *m)
{
	json_t *arr = get_array(L, root, "threads", true), *t;
	size_t i;
	char where[64];

	json_array_foreach(arr, i, t) {
		uint64_t id = 0, tid = 0, ns_tid = 0;
		json_t *hd;

		snprintf(where, sizeof(where), "threads[%zu].", i);
		if (!json_is_object(t) || !json_is_integer(json_object_get(t, "id"))) {
			load_fail(L, -ATF_E_MANIFEST, "%s\"id\": missing or not an integer", where);
			return;
		}
		get_uint(L, t, where, "id", UINT32_MAX, &id);
		get_uint(L, t, where, "tid", UINT32_MAX, &tid);
		get_uint(L, t, where, "ns_tid", UINT32_MAX, &ns_tid);
		if (L->err)
			return;
		struct atf_thread_info *ti = atf_manifest__add_thread(m, (uint32_t)id, (uint32_t)tid, NULL);

		if (!ti) {
			load_fail(L, -ENOMEM, "out of memory");
			return;
		}
		ti->ns_tid = (uint32_t)ns_tid;
		hd = json_object_get(t, "has_detail");
		if (hd && !json_is_boolean(hd))
			load_fail(L, -ATF_E_MANIFEST, "%s\"has_detail\": expected true or false", where);
		ti->has_detail = json_is_true(hd);
		get_str(L, t, where, "name", &ti->name);
		get_uint(L, t, where, "index_events", UINT64_MAX, &ti->index_events);
		get_uint(L, t, where, "detail_events", UINT64_MAX, &ti->detail_events);
		if (L->err)
			return;
	}
}

static void load_modules(struct loader *L, json_t *root, struct atf_manifest *m)
{
	json_t *arr = get_array(L, root, "modules", false), *o;
	size_t i;
	char where[64];

	json_array_foreach(arr, i, o) {
		char *path = NULL;
		uint64_t mid;

		snprintf(where, sizeof(where), "modules[%zu].", i);
		if (!json_is_object(o)) {
			load_fail(L, -ATF_E_MANIFEST, "modules[%zu]: expected an object", i);
			return;
		}
		get_str(L, o, where, "path", &path);
		if (!L->err && !path)
			load_fail(L, -ATF_E_MANIFEST, "%s\"path\": missing (required)", where);
		struct atf_module *mod = L->err ? NULL : atf_manifest__add_module(m, path);

		free(path);
		if (!mod) {
			load_fail(L, -ENOMEM, "out of memory");
			return;
		}
		mid = mod->module_id;
		get_uint(L, o, where, "module_id", UINT32_MAX, &mid);
		mod->module_id = (uint32_t)mid;
		get_num_or_str(L, o, where, "base_address", &mod->base_address);
		get_uint(L, o, where, "size", UINT64_MAX, &mod->size);
		get_str(L, o, where, "build_id", &mod->build_id);
		if (L->err)
			return;
	}
}

static void load_symbols(struct loader *L, json_t *root, struct atf_manifest *m)
{
	json_t *arr = get_array(L, root, "symbols", false), *o;
	size_t i;
	char where[64];

	json_array_foreach(arr, i, o) {
		char *name = NULL;
		uint64_t fid = 0, mid, idx;

		snprintf(where, sizeof(where), "symbols[%zu].", i);
		if (!json_is_object(o)) {
			load_fail(L, -ATF_E_MANIFEST, "symbols[%zu]: expected an object", i);
			return;
		}
		if (!json_object_get(o, "function_id")) {
			load_fail(L, -ATF_E_MANIFEST, "%s\"function_id\": missing (required)", where);
			return;
		}
		get_num_or_str(L, o, where, "function_id", &fid);
		get_str(L, o, where, "name", &name);
		if (!L->err && !name)
			load_fail(L, -ATF_E_MANIFEST, "%s\"name\": missing (required)", where);
		mid = fid >> 32, idx = fid & UINT32_MAX;
		get_uint(L, o, where, "module_id", UINT32_MAX, &mid);
		get_uint(L, o, where, "symbol_index", UINT32_MAX, &idx);
		struct atf_symbol *s = L->err ? NULL : atf_manifest__add_symbol(m, (uint32_t)mid, (uint32_t)idx, name);

		free(name);
		if (!s) {
			load_fail(L, L->err ?: -ENOMEM, "out of memory");
			return;
		}
		s->function_id = fid;   /* the manifest's id is authoritative */
		get_str(L, o, where, "demangled", &s->demangled);
		get_num_or_str(L, o, where, "address", &s->address);
		get_uint(L, o, where, "size", UINT64_MAX, &s->size);
		if (L->err)
			return;
	}
}

static void load_argv(struct loader *L, json_t *root, struct atf_manifest *m)
{
	json_t *arr = get_array(L, root, "argv", false), *hex = json_object_get(root, "argv_hex"), *v;
	size_t i;

	if (!arr)
		return;
	if (hex && (!json_is_array(hex) || json_array_size(hex) != json_array_size(arr))) {
		load_fail(L, -ATF_E_MANIFEST, "\"argv_hex\": expected an array as long as \"argv\"");
		return;
	}
	m->argv = calloc(json_array_size(arr) + 1, sizeof(*m->argv));
	if (!m->argv) {
		load_fail(L, -ENOMEM, "out of memory");
		return;
	}
	json_array_foreach(arr, i, v) {
		json_t *h = hex ? json_array_get(hex, i) : NULL;
		bool nomem = false;

		if (h && !json_is_null(h)) {
			if (!json_is_string(h) || !(m->argv[i] = hex_decode(json_string_value(h), &nomem))) {
				load_fail(L, nomem ? -ENOMEM : -ATF_E_MANIFEST, "\"argv_hex\"[%zu]: bad hex string", i);
				return;
			}
		} else if (!json_is_string(v) || memchr(json_string_value(v), 0, json_string_length(v))) {
			load_fail(L, -ATF_E_MANIFEST, "\"argv\"[%zu]: expected a string", i);
			return;
		} else if (!(m->argv[i] = strdup(json_string_value(v)))) {
			load_fail(L, -ENOMEM, "out of memory");
			return;
		}
		m->argc = i + 1;
	}
}

int atf_manifest__load(struct atf_manifest **out, const char *path, struct atf_diag *diag)
{
	struct loader L = { .diag = diag, .path = path };
	struct atf_manifest *m = NULL;
	json_error_t jerr;
	json_t *root;
	uint64_t v;

	*out = NULL;
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (access(path, F_OK))
			return load_fail(&L, -ATF_E_MANIFEST, "cannot read: %s", strerror(errno));
		load_fail(&L, -ATF_E_MANIFEST, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
		if (diag)
			diag->offset = jerr.position > 0 ? (uint64_t)jerr.position : 0;
		return L.err;
	}
	if (!json_is_object(root)) {
		load_fail(&L, -ATF_E_MANIFEST, "top level: expected an object");
		goto cleanup;
	}
	m = atf_manifest__new();
	if (!m) {
		load_fail(&L, -ENOMEM, "out of memory");
		goto cleanup;
	}
	free(m->format_version);
	m->format_version = NULL;
	get_str(&L, root, "", "format_version", &m->format_version);
	v = m->clock_type;
	get_uint(&L, root, "", "clock_type", UINT8_MAX, &v);
	m->clock_type = (uint8_t)v;
	get_uint(&L, root, "", "time_start_ns", UINT64_MAX, &m->time_start_ns);
	get_uint(&L, root, "", "time_end_ns", UINT64_MAX, &m->time_end_ns);
	v = 0;
	get_uint(&L, root, "", "pid", UINT32_MAX, &v);
	m->pid = (uint32_t)v;
	v = 0;
	get_uint(&L, root, "", "ns_pid", UINT32_MAX, &v);
	m->ns_pid = (uint32_t)v;
	get_str(&L, root, "", "process_name", &m->process_name);
	get_uint(&L, root, "", "lost_events", UINT64_MAX, &m->lost_events);
	get_uint(&L, root, "", "lost_detail", UINT64_MAX, &m->lost_detail);
	get_str(&L, root, "", "kernel", &m->kernel);
	get_str(&L, root, "", "host", &m->host);
	get_str(&L, root, "", "atftrace_version", &m->atftrace_version);
	get_str(&L, root, "", "start_time", &m->start_time);
	get_str(&L, root, "", "end_reason", &m->end_reason);
	if (!L.err)
		load_argv(&L, root, m);
	if (!L.err)
		load_threads(&L, root, m);
	if (!L.err)
		load_modules(&L, root, m);
	if (!L.err)
		load_symbols(&L, root, m);
cleanup:
	json_decref(root);
	if (L.err) {
		atf_manifest__free(m);
		return L.err;
	}
	*out = m;
	return 0;
}
