/* SPDX-License-Identifier: MIT */
/*
 * wtf-trace chunk building (formats/wtf_chunk.c), below both wtf exporters: the wire constants,
 * the state of the chunk being built (string table, event buffer, zones, function wire ids), and
 * the sink that writes each finished chunk, as binary CFF (wtf.c) or as JSON (wtf_json.c).
 * Layout rules: docs/formats-wtf.md.
 */
#ifndef ATFTRACE_FORMATS_WTF_CHUNK_H
#define ATFTRACE_FORMATS_WTF_CHUNK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "byteorder.h"
#include "format.h"

#define WTF_MAGIC               0xDEADBEEFu
#define WTF_VERSION_BINARY      0xE8214400u     /* the value the reference C++ writer stores */
#define WTF_VERSION_JSON        1436947200000ull /* wtf.version of the 2015.7.15 loader; a newer one is refused */
#define WTF_FORMAT_VERSION      10u             /* ChunkedFileFormat.VERSION (NOTES.md §3) */

#define WTF_CHUNK_FILE_HEADER   1u
#define WTF_CHUNK_EVENT_DATA    2u
#define WTF_PART_FILE_HEADER    0x10000u
#define WTF_PART_EVENT_BUFFER   0x20002u        /* binary_event_buffer */
#define WTF_PART_STRING_TABLE   0x30000u

#define WTF_CHUNK_HEADER_SIZE   24u
#define WTF_PART_ENTRY_SIZE     12u
#define WTF_STRING_NULL         0xFFFFFFFFu
#define WTF_STRING_EMPTY        0xFFFFFFFEu

/* Fixed wire ids, all defined at the start of the first event-data chunk. */
#define W_DEFINE                1u
#define W_ZONE_CREATE           2u
#define W_ZONE_SET              3u
#define W_NAMED_SCOPE           4u
#define W_SCOPE_LEAVE           5u
#define W_EXCEPTION             6u
#define W_CALL_DETAIL           7u
#define W_RETURN_DETAIL         8u
#define W_DEEP_CALL             9u
#define W_DEEP_RETURN           10u
#define W_FIRST_FUNCTION        11u

/* Argument names of the detail payload slots (NOTES.md §6), by architecture. */
struct wtf_reg_names {
	const char *call_gp[ATF_DETAIL_GP_REGS];
	const char *ret_gp[2];
	const char *call_lr, *ret_lr, *fp, *sp;
};

#define WTF_MAX_SCOPE_DEPTH     1023u   /* the loader's scope stack holds 1024 entries, root included */

struct fn_slot {
	uint64_t function_id;
	uint32_t wire;                  /* 0: no wire id left, use atftrace#scope(name) */
	bool used;
};

struct str_slot {
	uint32_t hash;
	uint32_t ordinal_plus1;         /* 0: empty slot */
	uint32_t offset, len;
};

struct zone_state {
	uint32_t zone_id;               /* 0 until created; ids go 1, 2, ... in order of creation */
	uint32_t open_scopes;           /* scopes the loader sees open in this zone */
	uint32_t deep;                  /* frames beyond WTF_MAX_SCOPE_DEPTH, sent as instance events */
};

struct wtf_state {
	uint32_t zones_created;
	const struct wtf_sink *sink;
	void *sink_state;
	uint64_t base_ns;
	uint32_t chunk_size;
	uint32_t next_chunk_id;
	const struct wtf_reg_names *regs;

	/* the event-data chunk being built */
	uint8_t *ev; size_t ev_len, ev_cap;
	uint8_t *str; size_t str_len, str_cap; uint32_t nstr;
	struct str_slot *sslots; uint32_t sslot_cap;    /* power of two, at most half full */
	uint32_t chunk_start_us, chunk_end_us;

	bool fixed_defined;
	uint32_t current_zone;          /* zone id last set in the stream, 0 = none */
	struct zone_state *zones;
	size_t nzones;

	struct fn_slot *fns; uint32_t fn_cap, fn_count;
	uint32_t next_wire;

	char *scratch; size_t scratch_cap;
};

/* ---- chunk building (formats/wtf_chunk.c) ---- */

int wtf_grow(void *pp, size_t *cap, size_t need, size_t elem);
/** wtf_sanitize_utf8 - copy @s into st->scratch as valid UTF-8 (U+FFFD per bad byte). */
int wtf_sanitize_utf8(struct wtf_state *st, const char *s, size_t *out_len);
/** wtf_intern - ordinal of @s in the current chunk's string table, added when new. */
int wtf_intern(struct wtf_state *st, const char *s, uint32_t *ordinal);
/** wtf_flush_chunk - hand the chunk being built to the sink and start an empty one. */
int wtf_flush_chunk(struct export_ctx *ctx, struct wtf_state *st);
/**
 * wtf_reserve - make room for a record of @ev_bytes whose strings need at most @str_bytes,
 * starting a new chunk (which restates the current zone) when it would not fit.
 */
int wtf_reserve(struct export_ctx *ctx, struct wtf_state *st, size_t ev_bytes, size_t str_bytes, uint32_t t_us);
/** wtf_header_json - the file-header part: timebase, flags, contextInfo, metadata. */
struct json_t;
struct json_t *wtf_header_json(struct export_ctx *ctx, struct wtf_state *st);

static inline size_t wtf_align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static inline void wtf_put_words(struct wtf_state *st, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_le32(st->ev + st->ev_len + 4 * i, w[i]);
	st->ev_len += 4 * n;
}

/* Upper bound of the string-table bytes @s needs (invalid UTF-8 bytes triple). */
static inline size_t wtf_str_need(const char *s)
{
	return 3 * strlen(s) + 1;
}

/* One finished chunk, handed to a sink. Part lengths are exact; padding is the sink's business. */
struct wtf_chunk {
	uint32_t id;
	uint32_t type;                  /* WTF_CHUNK_* */
	uint32_t start_us, end_us;      /* informational time range */
	const char *header_json;        /* file-header chunk: the header part (JSON text) */
	size_t header_json_len;
	const uint8_t *strings;         /* event-data chunk: NUL-terminated strings back to back */
	size_t strings_len;
	uint32_t nstrings;
	const uint8_t *events;          /* binary event buffer, a multiple of 4 bytes */
	size_t events_len;
};

struct wtf_sink {
	/* Called once with the file-header chunk, first. */
	int (*file_begin)(struct export_ctx *ctx, const struct wtf_chunk *header);
	int (*chunk)(struct export_ctx *ctx, const struct wtf_chunk *c);
	int (*file_end)(struct export_ctx *ctx);
	void (*cleanup)(struct export_ctx *ctx);        /* free the sink's state; optional */
};

#endif
