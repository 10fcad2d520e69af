/* SPDX-License-Identifier: MIT */
/*
 * In-repo wtf-trace reader for test_export_wtf.c, kept apart from the test cases so each file
 * stays readable. parse_binary() reads the binary CFF form (NOTES.md §3) and parse_json() the
 * JSON form, COMPLETE or PARTIAL, both into the same list of chunks (struct file), so
 * assert_same_chunks() can prove the forms carry identical chunks. interpret() then walks the
 * event-data chunks as the loader does (event definitions before use, strings local to their
 * chunk, time never going back, each later chunk restating the current zone) and sorts the
 * application events into zones (struct trace). Every violation fails the calling cmocka test.
 */
#ifndef WTF_READER_H
#define WTF_READER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "byteorder.h"

/* ---- decoding: both forms into one list of chunks --------------------------------------------- */

struct chunk {
	uint32_t id, type, start, end;
	json_t *header;                 /* file-header part */
	char **strings; uint32_t nstrings;
	uint8_t *events; size_t events_len;
};

struct file {
	struct chunk *c;
	size_t n;
};

static struct chunk *new_chunk(struct file *f)
{
	f->c = realloc(f->c, (f->n + 1) * sizeof(*f->c));
	assert_non_null(f->c);
	memset(&f->c[f->n], 0, sizeof(*f->c));
	return &f->c[f->n++];
}

static void free_file(struct file *f)
{
	for (size_t i = 0; i < f->n; i++) {
		json_decref(f->c[i].header);
		for (uint32_t k = 0; k < f->c[i].nstrings; k++)
			free(f->c[i].strings[k]);
		free(f->c[i].strings);
		free(f->c[i].events);
	}
	free(f->c);
	memset(f, 0, sizeof(*f));
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = 0;
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

/* Binary CFF (NOTES.md §3): every bound checked; part offsets count from the end of the table. */
static void parse_binary(const char *path, struct file *f)
{
	size_t len, off = 12;
	uint8_t *b = slurp(path, &len);

	assert_true(len >= 12 && len % 4 == 0);
	assert_int_equal(get_le32(b), 0xDEADBEEFu);
	assert_int_equal(get_le32(b + 8), 10);
	while (off < len) {
		struct chunk *c = new_chunk(f);
		uint32_t clen, nparts, table;

		assert_true(len - off >= 24);
		c->id = get_le32(b + off);
		c->type = get_le32(b + off + 4);
		clen = get_le32(b + off + 8);
		c->start = get_le32(b + off + 12);
		c->end = get_le32(b + off + 16);
		nparts = get_le32(b + off + 20);
		table = 24 + 12 * nparts;
		assert_true(clen >= table && clen <= len - off && clen % 4 == 0);
		for (uint32_t p = 0; p < nparts; p++) {
			const uint8_t *e = b + off + 24 + 12 * p;
			uint32_t type = get_le32(e), poff = get_le32(e + 4), plen = get_le32(e + 8);
			const uint8_t *data = b + off + table + poff;

			assert_true(poff % 4 == 0 && (uint64_t)table + poff + plen <= clen);
			if (type == 0x10000) {
				assert_int_equal(c->type, 1);
				c->header = json_loadb((const char *)data, plen, 0, NULL);
				assert_non_null(c->header);
			} else if (type == 0x30000) {
				assert_true(plen > 0 && data[plen - 1] == 0);   /* trailing NUL */
				for (const uint8_t *s = data; s < data + plen; s += strlen((const char *)s) + 1) {
					c->strings = realloc(c->strings, (c->nstrings + 1) * sizeof(char *));
					c->strings[c->nstrings++] = strdup((const char *)s);
				}
			} else if (type == 0x20002) {
				assert_int_equal(plen % 4, 0);
				c->events = malloc(plen + 1);
				memcpy(c->events, data, plen);
				c->events_len = plen;
			} else {
				fail_msg("unexpected part type 0x%x", type);
			}
		}
		off += clen;
	}
	assert_int_equal(off, len);
	free(b);
}

static int b64val(int ch)
{
	const char *tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = ch ? strchr(tbl, ch) : NULL;

	return p ? (int)(p - tbl) : -1;
}

static void parse_json_chunk(json_t *jc, struct file *f)
{
	struct chunk *c = new_chunk(f);
	const char *type = json_string_value(json_object_get(jc, "type"));
	json_t *parts = json_object_get(jc, "parts"), *part;
	size_t i;

	assert_non_null(type);
	c->type = strcmp(type, "file_header") == 0 ? 1 : strcmp(type, "event_data") == 0 ? 2 : 0;
	assert_true(c->type != 0);
	c->id = (uint32_t)json_integer_value(json_object_get(jc, "id"));
	c->start = (uint32_t)json_integer_value(json_object_get(jc, "startTime"));
	c->end = (uint32_t)json_integer_value(json_object_get(jc, "endTime"));
	assert_true(json_is_array(parts));
	json_array_foreach(parts, i, part) {
		const char *pt = json_string_value(json_object_get(part, "type"));

		assert_non_null(pt);
		if (strcmp(pt, "file_header") == 0) {
			c->header = json_deep_copy(part);
			json_object_del(c->header, "type");
		} else if (strcmp(pt, "string_table") == 0) {
			json_t *v = json_object_get(part, "value"), *s;
			size_t k;

			c->nstrings = (uint32_t)json_array_size(v);
			c->strings = calloc(c->nstrings, sizeof(char *));
			json_array_foreach(v, k, s)
				c->strings[k] = strdup(json_string_value(s));
		} else if (strcmp(pt, "binary_event_buffer") == 0) {
			const char *v = json_string_value(json_object_get(part, "value"));
			size_t n = (size_t)json_integer_value(json_object_get(part, "byteLength")), w = 0, sl;

			assert_string_equal(json_string_value(json_object_get(part, "mode")), "base64");
			assert_non_null(v);
			sl = strlen(v);
			assert_int_equal(sl % 4, 0);
			c->events = malloc(sl / 4 * 3 + 1);
			for (size_t q = 0; q < sl; q += 4) {
				int a = b64val(v[q]), b = b64val(v[q + 1]), cc = b64val(v[q + 2]), d = b64val(v[q + 3]);

				assert_true(a >= 0 && b >= 0);
				c->events[w++] = (uint8_t)(a << 2 | b >> 4);
				if (cc >= 0)
					c->events[w++] = (uint8_t)(b << 4 | cc >> 2);
				if (d >= 0)
					c->events[w++] = (uint8_t)(cc << 6 | d);
			}
			assert_int_equal(w, n);
			c->events_len = n;
		} else {
			fail_msg("unexpected part %s", pt);
		}
	}
}

/* COMPLETE: one document. PARTIAL: a header line, then one standalone {"chunks":[c]} per line. */
static void parse_json(const char *path, bool partial, struct file *f)
{
	json_error_t jerr;
	json_t *root, *chunks, *jc;
	size_t i;

	if (!partial) {
		root = json_load_file(path, 0, &jerr);
		if (!root)
			fail_msg("%s: %s (line %d)", path, jerr.text, jerr.line);
		assert_int_equal(json_integer_value(json_object_get(root, "formatVersion")), 10);
		assert_true(json_integer_value(json_object_get(root, "wtfVersion")) > 0);
		chunks = json_object_get(root, "chunks");
		json_array_foreach(chunks, i, jc)
			parse_json_chunk(jc, f);
		json_decref(root);
		return;
	}
	size_t len, line = 0;
	char *text = (char *)slurp(path, &len), *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save), line++) {
		root = json_loads(l, 0, &jerr);
		if (!root)
			fail_msg("line %zu: %s", line, jerr.text);
		if (line == 0) {
			assert_int_equal(json_integer_value(json_object_get(root, "formatVersion")), 10);
			assert_null(json_object_get(root, "chunks"));
		} else {
			chunks = json_object_get(root, "chunks");
			assert_int_equal(json_array_size(chunks), 1);
			parse_json_chunk(json_array_get(chunks, 0), f);
		}
		json_decref(root);
	}
	free(text);
}

static void assert_same_chunks(const struct file *a, const struct file *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct chunk *x = &a->c[i], *y = &b->c[i];

		assert_int_equal(x->id, y->id);
		assert_int_equal(x->type, y->type);
		assert_int_equal(x->start, y->start);
		assert_int_equal(x->end, y->end);
		assert_true(json_equal(x->header, y->header) || (!x->header && !y->header));
		assert_int_equal(x->nstrings, y->nstrings);
		for (uint32_t k = 0; k < x->nstrings; k++)
			assert_string_equal(x->strings[k], y->strings[k]);
		assert_int_equal(x->events_len, y->events_len);
		assert_memory_equal(x->events, y->events, x->events_len);
	}
}

/* ---- interpreting the event buffers ------------------------------------------------------------ */

#define MAX_ARGS 32

struct dtype {
	char *name;
	uint32_t cls, flags, nargs;
	char arg_type[MAX_ARGS][12], arg_name[MAX_ARGS][24];
};

struct dev {                    /* one application event as the loader would insert it */
	uint32_t t;
	const struct dtype *type;
	uint32_t w[MAX_ARGS];       /* numeric arguments in order (strings and arrays excluded) */
	uint32_t nw;
	char *s[4];                 /* ascii arguments in order */
	uint32_t ns;
	uint8_t arr[256];
	uint32_t arr_len;
};

struct zone {
	uint32_t thread_dir_id;
	char *name;
	struct dev *ev;
	size_t n, cap;
	uint32_t depth, max_depth;
};

struct trace {
	struct dtype *types[65536];
	struct zone zones[64];
	uint32_t nzones;
	json_t *header;
	uint64_t records;
};

static void free_trace(struct trace *tr)
{
	for (size_t i = 0; i < 65536; i++)
		if (tr->types[i]) {
			free(tr->types[i]->name);
			free(tr->types[i]);
		}
	for (uint32_t z = 0; z < tr->nzones; z++) {
		for (size_t i = 0; i < tr->zones[z].n; i++)
			free(tr->zones[z].ev[i].s[0]);
		free(tr->zones[z].ev);
		free(tr->zones[z].name);
	}
	json_decref(tr->header);
	free(tr);
}

static const char *chunk_string(const struct chunk *c, uint32_t ord)
{
	if (ord == 0xFFFFFFFFu)
		return NULL;
	if (ord == 0xFFFFFFFEu)
		return "";
	assert_true(ord < c->nstrings);     /* strings never leave their chunk */
	return c->strings[ord];
}

static struct dtype *parse_define(const uint32_t *a, const struct chunk *c)
{
	struct dtype *d = calloc(1, sizeof(*d));
	const char *args = chunk_string(c, a[4]);

	d->cls = a[1];
	d->flags = a[2];
	d->name = strdup(chunk_string(c, a[3]));
	for (const char *p = args; p && *p;) {
		int used = 0;

		assert_true(d->nargs < MAX_ARGS);
		assert_int_equal(sscanf(p, "%11s %23[A-Za-z0-9_]%n", d->arg_type[d->nargs], d->arg_name[d->nargs],
					&used), 2);
		d->nargs++;
		p += used;
		if (*p == ',')
			p++;
		while (*p == ' ')
			p++;
	}
	return d;
}

/* Walks every event-data chunk as the loader does, checking the framing rules on the way. */
static struct trace *interpret(const struct file *f)
{
	struct trace *tr = calloc(1, sizeof(*tr));
	int32_t current = -1;
	uint32_t last_t = 0;

	assert_true(f->n >= 1);
	assert_int_equal(f->c[0].type, 1);
	assert_int_equal(f->c[0].id, 0);
	tr->header = json_incref(f->c[0].header);
	for (size_t ci = 1; ci < f->n; ci++) {
		const struct chunk *c = &f->c[ci];
		const uint8_t *b = c->events;
		size_t off = 0;

		assert_int_equal(c->type, 2);
		assert_int_equal(c->id, ci);
		assert_true(c->events_len > 0);
		if (ci > 1)     /* self-contained: a later chunk restates the current zone first */
			assert_int_equal(get_le32(b), 3);
		while (off < c->events_len) {
			uint32_t wire = get_le32(b + off), t = get_le32(b + off + 4), a[MAX_ARGS + 8];
			struct dev d = { .t = t };
			const struct dtype *ty;

			assert_true(off + 8 <= c->events_len);
			off += 8;
			assert_true(t >= last_t);       /* merged stream: time never goes back */
			last_t = t;
			tr->records++;
			if (wire == 1) {
				assert_true(off + 20 <= c->events_len);
				for (int k = 0; k < 5; k++)
					a[k] = get_le32(b + off + 4 * k);
				off += 20;
				assert_true(a[0] >= 2 && a[0] <= 65535);
				assert_null(tr->types[a[0]]);
				tr->types[a[0]] = parse_define(a, c);
				if (strncmp(tr->types[a[0]]->name, "wtf.", 4) == 0)
					assert_int_equal(tr->types[a[0]]->flags, 0x28);
				continue;
			}
			ty = tr->types[wire];
			assert_non_null(ty);    /* defined before use */
			d.type = ty;
			for (uint32_t k = 0; k < ty->nargs; k++) {
				const char *at = ty->arg_type[k];

				assert_true(off + 4 <= c->events_len);
				if (!strcmp(at, "uint32") || !strcmp(at, "uint16")) {
					d.w[d.nw++] = get_le32(b + off);
					off += 4;
				} else if (!strcmp(at, "ascii")) {
					const char *str = chunk_string(c, get_le32(b + off));

					assert_true(d.ns < 4);
					d.s[d.ns++] = str ? strdup(str) : NULL;
					off += 4;
				} else if (!strcmp(at, "uint8[]")) {
					d.arr_len = get_le32(b + off);
					off += 4;
					assert_true(d.arr_len <= sizeof(d.arr) && off + ((d.arr_len + 3) & ~3u) <= c->events_len);
					memcpy(d.arr, b + off, d.arr_len);
					off += (d.arr_len + 3) & ~3u;
				} else {
					fail_msg("argument type %s is not one the exporter should use", at);
				}
			}
			if (!strcmp(ty->name, "wtf.zone#create")) {
				struct zone *z = &tr->zones[tr->nzones];

				assert_true(tr->nzones < 64 && d.w[0] == tr->nzones + 1 && d.ns == 3);
				z->name = strdup(d.s[0]);
				assert_string_equal(d.s[1], "native_script");
				assert_int_equal(sscanf(d.s[2], "thread_%u", &z->thread_dir_id), 1);
				tr->nzones++;
			} else if (!strcmp(ty->name, "wtf.zone#set")) {
				assert_true(d.w[0] >= 1 && d.w[0] <= tr->nzones);
				current = (int32_t)d.w[0] - 1;
			} else {
				struct zone *z;

				assert_true(current >= 0);
				assert_true(d.ns <= 1);
				z = &tr->zones[current];
				if (z->n == z->cap) {
					z->cap = z->cap ? 2 * z->cap : 1024;
					z->ev = realloc(z->ev, z->cap * sizeof(*z->ev));
					assert_non_null(z->ev);
				}
				if (ty->cls == 1 && ++z->depth > z->max_depth)
					z->max_depth = z->depth;
				else if (!strcmp(ty->name, "wtf.scope#leave") && z->depth)
					z->depth--;
				z->ev[z->n++] = d;
				continue;
			}
			for (uint32_t k = 0; k < d.ns; k++)
				free(d.s[k]);
		}
		assert_int_equal(off, c->events_len);
	}
	return tr;
}

#endif
