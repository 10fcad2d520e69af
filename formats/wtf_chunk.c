// SPDX-License-Identifier: MIT
/*
 * wtf-trace chunk building, shared by -F wtf and -F wtf-json: the current event-data chunk's
 * string table (UTF-8 sanitised, de-duplicated per chunk) and event buffer, flushed to the sink
 * when the next record would pass opts->chunk_size; and the file-header JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "byteorder.h"
#include "wtf_chunk.h"

#ifndef ATFTRACE_VERSION
#define ATFTRACE_VERSION "unknown"
#endif

int wtf_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*(void **)pp, n * elem);
	if (!p)
		return -ENOMEM;
	*(void **)pp = p;
	*cap = n;
	return 0;
}

/*
 * Copies @s into st->scratch as valid UTF-8 (the loader decodes the string table as UTF-8 and
 * JSON must be UTF-8): each byte of an invalid sequence becomes U+FFFD. Returns the length.
 */
int wtf_sanitize_utf8(struct wtf_state *st, const char *s, size_t *out_len)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = strlen(s), o = 0;
	int err = wtf_grow(&st->scratch, &st->scratch_cap, 3 * n + 1, 1);

	if (err)
		return err;
	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];
		size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
		bool ok = len > 0 && i + len <= n;
		uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;

		for (size_t k = 1; ok && k < len; k++) {
			ok = (p[i + k] & 0xC0) == 0x80;
			cp = cp << 6 | (p[i + k] & 0x3Fu);
		}
		/* reject overlong forms, surrogates and values past U+10FFFF */
		if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
			   (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
			ok = false;
		if (ok) {
			memcpy(st->scratch + o, p + i, len);
			o += len;
			i += len;
		} else {
			memcpy(st->scratch + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	st->scratch[o] = '\0';
	*out_len = o;
	return 0;
}

static uint32_t hash_bytes(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* Ordinal of @s in the current chunk's string table, adding it when new. */
int wtf_intern(struct wtf_state *st, const char *s, uint32_t *ordinal)
{
	size_t len;
	uint32_t h, mask, i;
	int err = wtf_sanitize_utf8(st, s, &len);

	if (err)
		return err;
	if (len == 0) {
		*ordinal = WTF_STRING_EMPTY;    /* "" stored in the table would read back as null */
		return 0;
	}
	if (2 * (st->nstr + 1) > st->sslot_cap) {
		uint32_t ncap = st->sslot_cap ? 2 * st->sslot_cap : 64;
		struct str_slot *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (uint32_t k = 0; k < st->sslot_cap; k++) {
			struct str_slot *o = &st->sslots[k];

			if (!o->ordinal_plus1)
				continue;
			for (i = o->hash & (ncap - 1); ns[i].ordinal_plus1; i = (i + 1) & (ncap - 1))
				;
			ns[i] = *o;
		}
		free(st->sslots);
		st->sslots = ns;
		st->sslot_cap = ncap;
	}
	h = hash_bytes(st->scratch, len);
	mask = st->sslot_cap - 1;
	for (i = h & mask; st->sslots[i].ordinal_plus1; i = (i + 1) & mask) {
		struct str_slot *sl = &st->sslots[i];

		if (sl->hash == h && sl->len == len && memcmp(st->str + sl->offset, st->scratch, len) == 0) {
			*ordinal = sl->ordinal_plus1 - 1;
			return 0;
		}
	}
	if ((err = wtf_grow(&st->str, &st->str_cap, st->str_len + len + 1, 1)))
		return err;
	memcpy(st->str + st->str_len, st->scratch, len + 1);
	st->sslots[i] = (struct str_slot){ h, st->nstr + 1, (uint32_t)st->str_len, (uint32_t)len };
	st->str_len += len + 1;
	*ordinal = st->nstr++;
	return 0;
}

/* Hands the chunk being built to the sink and starts an empty one. */
int wtf_flush_chunk(struct export_ctx *ctx, struct wtf_state *st)
{
	struct wtf_chunk c = {
		.id = st->next_chunk_id, .type = WTF_CHUNK_EVENT_DATA,
		.start_us = st->chunk_start_us, .end_us = st->chunk_end_us,
		.strings = st->str, .strings_len = st->str_len, .nstrings = st->nstr,
		.events = st->ev, .events_len = st->ev_len,
	};
	int err;

	if (st->ev_len == 0)
		return 0;
	if ((err = st->sink->chunk(ctx, &c)))
		return err;
	st->next_chunk_id++;
	st->ev_len = st->str_len = 0;
	st->nstr = 0;
	if (st->sslots)
		memset(st->sslots, 0, st->sslot_cap * sizeof(*st->sslots));
	return 0;
}

/*
 * Makes room for a record of @ev_bytes whose strings need at most @str_bytes, starting a new
 * chunk first when it would not fit. A new chunk begins with wtf.zone#set of the current zone,
 * so every event-data chunk can be read on its own.
 */
int wtf_reserve(struct export_ctx *ctx, struct wtf_state *st, size_t ev_bytes, size_t str_bytes, uint32_t t_us)
{
	size_t total = 2 * WTF_CHUNK_HEADER_SIZE + wtf_align4(st->str_len + str_bytes) + st->ev_len + ev_bytes;
	int err;

	if (total > st->chunk_size && st->ev_len > 0 && (err = wtf_flush_chunk(ctx, st)))
		return err;
	if ((err = wtf_grow(&st->ev, &st->ev_cap, st->ev_len + ev_bytes + 12, 1)) ||
	    (err = wtf_grow(&st->str, &st->str_cap, st->str_len + str_bytes, 1)))
		return err;
	if (st->ev_len == 0) {
		st->chunk_start_us = t_us;
		if (st->current_zone)
			wtf_put_words(st, (uint32_t[]){ W_ZONE_SET, t_us, st->current_zone }, 3);
	}
	st->chunk_end_us = t_us;
	return 0;
}

/* A JSON string of @s made valid UTF-8 (jansson refuses anything else). */
static json_t *json_str(struct wtf_state *st, const char *s)
{
	size_t len;

	return wtf_sanitize_utf8(st, s ? s : "", &len) ? NULL : json_stringn(st->scratch, len);
}

/* contextInfo names the traced process; metadata keeps what wtf-trace cannot (the exact ns base). */
json_t *wtf_header_json(struct export_ctx *ctx, struct wtf_state *st)
{
	const struct atf_manifest *m = ctx->session->manifest;
	const char *dir = ctx->session->dir ? ctx->session->dir : "session";
	const char *slash = strrchr(dir, '/');
	const char *title = m && m->process_name ? m->process_name : (slash ? slash + 1 : dir);
	json_t *args = json_array(), *ua = json_object(), *ci = json_object(), *meta = json_object();
	json_t *h = NULL;
	char buf[64], uri[4096];
	int bad = !args || !ua || !ci || !meta;

	for (size_t i = 0; !bad && m && i < m->argc; i++)
		bad |= json_array_append_new(args, json_str(st, m->argv[i]));
	snprintf(uri, sizeof(uri), "atftrace://%s", dir);
	snprintf(buf, sizeof(buf), "%" PRIu32, m ? m->pid : 0);
	if (bad)
		goto cleanup;
	/* the loader requires "contextType": "script" and dump.js reads args and userAgent */
	bad |= json_object_set_new(ci, "contextType", json_string("script"));
	bad |= json_object_set_new(ci, "uri", json_str(st, uri));
	bad |= json_object_set_new(ci, "title", json_str(st, title));
	bad |= json_object_set_new(ci, "taskId", json_string(buf));
	bad |= json_object_set(ci, "args", args);
	bad |= json_object_set_new(ua, "value", json_string("atftrace " ATFTRACE_VERSION));
	bad |= json_object_set_new(ua, "type", json_string("unknown"));
	bad |= json_object_set_new(ua, "platform", json_string("linux"));
	bad |= json_object_set_new(ua, "platformVersion", json_str(st, m ? m->kernel : ""));
	bad |= json_object_set_new(ua, "device", json_string("server"));
	bad |= json_object_set(ci, "userAgent", ua);
	snprintf(buf, sizeof(buf), "%" PRIu64, st->base_ns);
	bad |= json_object_set_new(meta, "atftrace_time_base_ns", json_string(buf));
	snprintf(buf, sizeof(buf), "%" PRIu64, ctx->time_end_ns);
	bad |= json_object_set_new(meta, "atftrace_time_end_ns", json_string(buf));
	bad |= json_object_set_new(meta, "atftrace_clock", json_string("boottime"));
	bad |= json_object_set_new(meta, "atftrace_events", json_integer((json_int_t)ctx->nevents));
	bad |= json_object_set_new(meta, "atftrace_max_scope_depth", json_integer(WTF_MAX_SCOPE_DEPTH));
	bad |= json_object_set_new(meta, "atftrace_version", json_string(ATFTRACE_VERSION));
	if (bad)
		goto cleanup;
	/* "timebase" is required: the first exported event's boottime in milliseconds */
	h = json_pack("{s:[s], s:f, s:O, s:O}", "flags", "has_high_resolution_times",
		      "timebase", (double)st->base_ns / 1e6, "contextInfo", ci, "metadata", meta);
cleanup:
	json_decref(args);
	json_decref(ua);
	json_decref(ci);
	json_decref(meta);
	return h;
}
