// SPDX-License-Identifier: MIT
/*
 * manifest.json writing: the reference "2.1" key order (threads, time range, clock_type,
 * modules, symbols), our keys, format_version last; ids and addresses as strings; names that
 * are not UTF-8 as a lossy "<key>" plus an exact "<key>_hex". Saved atomically.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "atf.h"
#include "atf_file.h"
#include "atf_int.h"
#include "manifest_int.h"
#include "utf8.h"

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
	if (utf8_valid(s, strlen(s)))
		return set_new(obj, key, json_string(s));
	lossy = utf8_lossy_dup(s);
	hex = manifest_hex_encode(s);
	snprintf(hkey, sizeof(hkey), "%s_hex", key);
	err = lossy && hex ? set_new(obj, key, json_string(lossy)) : -ENOMEM;
	if (!err)
		err = set_new(obj, hkey, json_string(hex));
	free(lossy);
	free(hex);
	return err;
}

static json_t *build_thread(const struct atf_thread_info *t, bool filters)
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
	err = err ?: set_u64(o, "lost_calls", t->lost_calls);
	err = err ?: set_u64(o, "lost_returns", t->lost_returns);
	for (unsigned i = 0; filters && i < ATF_FILTERED_REASONS; i++)
		err = err ?: set_u64(o, atf_filtered_key(i), t->filtered[i]);
	if (t->lost_first_ns) {
		err = err ?: set_u64(o, "lost_first_ns", t->lost_first_ns);
		err = err ?: set_u64(o, "lost_last_ns", t->lost_last_ns);
	}
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

/* "aliases": the symbol's other names (lossy UTF-8: they serve lookups), left out when none. */
static int set_aliases(json_t *o, const struct atf_symbol *s)
{
	json_t *arr;
	int err = 0;

	if (!s->naliases)
		return 0;
	if (!(arr = json_array()))
		return -ENOMEM;
	for (size_t i = 0; i < s->naliases && !err; i++) {
		char *lossy = utf8_lossy_dup(s->aliases[i]);

		err = lossy ? json_array_append_new(arr, json_string(lossy)) ? -ENOMEM : 0 : -ENOMEM;
		free(lossy);
	}
	if (err) {
		json_decref(arr);
		return err;
	}
	return set_new(o, "aliases", arr);
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
	err = err ?: set_aliases(o, s);
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

		if (utf8_valid(a, strlen(a))) {
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
		char *lossy = utf8_lossy_dup(a), *h = manifest_hex_encode(a);

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
		err = json_array_append_new(threads, build_thread(&m->threads[i], m->record_filter != NULL)) ? -ENOMEM : 0;
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
	err = err ?: set_u64(root, "lost_records", m->lost_records);
	err = err ?: set_str(root, "kernel", m->kernel);
	err = err ?: set_str(root, "host", m->host);
	err = err ?: set_str(root, "atftrace_version", m->atftrace_version);
	err = err ?: set_str(root, "start_time", m->start_time);
	err = err ?: set_str(root, "end_reason", m->end_reason);
	if (m->record_filter) {
		err = err ?: set_str(root, "record_filter", m->record_filter);
		err = err ?: set_u64(root, "filter_min_ns", m->filter_min_ns);
		for (unsigned i = 0; i < ATF_FILTERED_REASONS; i++)
			err = err ?: set_u64(root, atf_filtered_key(i), m->filtered[i]);
	}
	err = err ?: set_str(root, "format_version", m->format_version ? m->format_version : "2.1");
	if (err) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int atf_manifest__save(const struct atf_manifest *m, const char *path)
{
	return atf_file_replace_json(path, build_root(m), ATF_TMP_IN_SESSION);
}
