// SPDX-License-Identifier: MIT
/*
 * manifest.json reading: the reference schema (2.0/2.1, NOTES.md §1) plus ours. Only "threads"
 * is required; every other key is optional but must have the right type when present. A
 * "<key>_hex" form wins over its lossy "<key>". Any problem is -ATF_E_MANIFEST with a message
 * naming the key, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "atf.h"
#include "manifest_int.h"

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
		if (!json_is_string(h) || !(*out = manifest_hex_decode(json_string_value(h), &nomem)))
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
		get_uint(L, t, where, "lost_calls", UINT64_MAX, &ti->lost_calls);
		get_uint(L, t, where, "lost_returns", UINT64_MAX, &ti->lost_returns);
		for (unsigned r = 0; r < ATF_FILTERED_REASONS; r++)
			get_uint(L, t, where, atf_filtered_key(r), UINT64_MAX, &ti->filtered[r]);
		get_uint(L, t, where, "lost_first_ns", UINT64_MAX, &ti->lost_first_ns);
		get_uint(L, t, where, "lost_last_ns", UINT64_MAX, &ti->lost_last_ns);
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

/* A symbol's optional "aliases": an array of strings. */
static void load_aliases(struct loader *L, json_t *o, const char *where, struct atf_symbol *s)
{
	json_t *arr = json_object_get(o, "aliases"), *v;
	size_t i;

	if (!arr || L->err)
		return;
	if (!json_is_array(arr)) {
		load_fail(L, -ATF_E_MANIFEST, "%s\"aliases\": expected an array", where);
		return;
	}
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v) || memchr(json_string_value(v), 0, json_string_length(v))) {
			load_fail(L, -ATF_E_MANIFEST, "%s\"aliases\"[%zu]: expected a string", where, i);
			return;
		}
		if (atf_symbol__add_alias(s, json_string_value(v))) {
			load_fail(L, -ENOMEM, "out of memory");
			return;
		}
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
		load_aliases(L, o, where, s);
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
			if (!json_is_string(h) || !(m->argv[i] = manifest_hex_decode(json_string_value(h), &nomem))) {
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
	int fd;

	*out = NULL;
	/* never through a link: a session's manifest is a file of its own directory (and never a
	 * FIFO that would hang us: O_NONBLOCK) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return load_fail(&L, -ATF_E_MANIFEST, "cannot read: %s", errno == ELOOP ?
				 "a symbolic link, not followed" : strerror(errno));
	root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
	close(fd);
	if (!root) {
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
	get_uint(&L, root, "", "lost_records", UINT64_MAX, &m->lost_records);
	get_str(&L, root, "", "kernel", &m->kernel);
	get_str(&L, root, "", "host", &m->host);
	get_str(&L, root, "", "atftrace_version", &m->atftrace_version);
	get_str(&L, root, "", "start_time", &m->start_time);
	get_str(&L, root, "", "end_reason", &m->end_reason);
	get_str(&L, root, "", "record_filter", &m->record_filter);
	get_uint(&L, root, "", "filter_min_ns", UINT64_MAX, &m->filter_min_ns);
	for (unsigned r = 0; r < ATF_FILTERED_REASONS; r++)
		get_uint(&L, root, "", atf_filtered_key(r), UINT64_MAX, &m->filtered[r]);
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
