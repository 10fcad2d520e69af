/* SPDX-License-Identifier: MIT */
/*
 * Private to the wtf-trace exporters (formats/wtf.c, formats/wtf_json.c). wtf.c maps the session
 * onto wtf-trace chunks, parts and binary event records; a sink writes each finished chunk either
 * as binary CFF (wtf.c) or as the JSON form of the same chunks (wtf_json.c).
 * Layout rules: ../shared/specs/wtf-trace-cff.md as corrected by NOTES.md §3; docs/formats-wtf.md.
 */
#ifndef ATFTRACE_FORMATS_WTF_H
#define ATFTRACE_FORMATS_WTF_H

#include <stddef.h>
#include <stdint.h>
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

/**
 * wtf_export_begin - shared begin() of both exporters: checks the time span, builds the
 * header JSON and hands the file-header chunk to @sink, which stays in use until cleanup.
 */
int wtf_export_begin(struct export_ctx *ctx, const struct wtf_sink *sink);
int wtf_export_event(struct export_ctx *ctx, const struct export_event *e);
int wtf_export_end(struct export_ctx *ctx);
void wtf_export_cleanup(struct export_ctx *ctx);

/** wtf_sink_state - a sink's own state pointer, kept alongside the exporter state. */
void **wtf_sink_state(struct export_ctx *ctx);

#endif
