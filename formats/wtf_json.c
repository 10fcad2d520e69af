// SPDX-License-Identifier: MIT
/*
 * wtf-trace JSON exporter (`-F wtf-json`): the same chunks, parts and event records as `-F wtf`,
 * in the JSON form of the chunked file format as the tracing-framework loader reads it
 * (wtf.io.cff.JsonStreamSource; a COMPLETE file loads with bin/dump.js as *.wtf-json):
 *
 *   {"wtfVersion":1436947200000,"formatVersion":10,"chunks":[
 *   {"id":0,"type":"file_header","startTime":0,"endTime":E,
 *    "parts":[{"type":"file_header","flags":[...],"timebase":T,"contextInfo":{...},"metadata":{...}}]},
 *   {"id":1,"type":"event_data","startTime":S,"endTime":E,
 *    "parts":[{"type":"string_table","value":["name",...]},
 *             {"type":"binary_event_buffer","mode":"base64","byteLength":N,"value":"..."}]},
 *   ...
 *   ]}
 *
 * The loader ignores "json_event_buffer" contents, so events stay binary records (base64), exactly
 * as its own JSON writer emits them. PARTIAL mode (opts->json_partial) writes the header object
 * {"wtfVersion":...,"formatVersion":10} on the first line, then one standalone {"chunks":[chunk]}
 * object per line, so a reader can parse the stream line by line (JsonStreamTarget's PARTIAL form).
 * Chunk key names follow the reference reader: wtfVersion/formatVersion, not the spec's
 * wtf_version/format_version.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wtf.h"

#define B64_IN_BLOCK    (3u * 16384u)

struct json_sink_state {
	bool any_chunk;
	char b64[B64_IN_BLOCK / 3 * 4];
};

static int put_str(struct obuf *o, const char *s)
{
	return obuf__write(o, s, strlen(s));
}

/* Writes @s (@len bytes of valid UTF-8) as a JSON string literal. */
static int put_json_string(struct obuf *o, const char *s, size_t len)
{
	size_t run = 0;
	int err = obuf__write(o, "\"", 1);

	for (size_t i = 0; !err && i < len; i++) {
		uint8_t c = (uint8_t)s[i];
		char esc[8];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		if ((err = obuf__write(o, s + run, i - run)))
			break;
		if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		err = put_str(o, esc);
		run = i + 1;
	}
	if (!err)
		err = obuf__write(o, s + run, len - run);
	return err ? err : obuf__write(o, "\"", 1);
}

/* Standard base64 with padding (goog.crypt.base64 decodes it), encoded in fixed-size blocks. */
static int put_base64(struct obuf *o, char *buf, const uint8_t *data, size_t len)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	int err = 0;

	for (size_t off = 0; !err && off < len; off += B64_IN_BLOCK) {
		size_t n = len - off < B64_IN_BLOCK ? len - off : B64_IN_BLOCK, w = 0;
		const uint8_t *p = data + off;

		for (size_t i = 0; i < n; i += 3) {
			uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
				     (i + 2 < n ? p[i + 2] : 0);

			buf[w++] = tbl[v >> 18 & 63];
			buf[w++] = tbl[v >> 12 & 63];
			buf[w++] = i + 1 < n ? tbl[v >> 6 & 63] : '=';
			buf[w++] = i + 2 < n ? tbl[v & 63] : '=';
		}
		err = obuf__write(o, buf, w);
	}
	return err;
}

static int put_chunk_open(struct export_ctx *ctx, struct json_sink_state *js, const struct wtf_chunk *c,
			  const char *type)
{
	char head[160];

	snprintf(head, sizeof(head), "{\"id\":%" PRIu32 ",\"type\":\"%s\",\"startTime\":%" PRIu32
		 ",\"endTime\":%" PRIu32 ",\"parts\":[", c->id, type, c->start_us, c->end_us);
	if (ctx->opts->json_partial)
		return obuf__write(ctx->out, "{\"chunks\":[", 11) ?: put_str(ctx->out, head);
	return put_str(ctx->out, js->any_chunk ? ",\n" : "") ?: put_str(ctx->out, head);
}

static int put_chunk_close(struct export_ctx *ctx, struct json_sink_state *js)
{
	js->any_chunk = true;
	return put_str(ctx->out, ctx->opts->json_partial ? "]}]}\n" : "]}");
}

static int json_file_begin(struct export_ctx *ctx, const struct wtf_chunk *c)
{
	struct json_sink_state *js = calloc(1, sizeof(*js));
	char head[128];
	int err;

	if (!js)
		return -ENOMEM;
	*wtf_sink_state(ctx) = js;
	snprintf(head, sizeof(head), "{\"wtfVersion\":%llu,\"formatVersion\":%u%s",
		 (unsigned long long)WTF_VERSION_JSON, WTF_FORMAT_VERSION,
		 ctx->opts->json_partial ? "}\n" : ",\"chunks\":[\n");
	if ((err = put_str(ctx->out, head)) || (err = put_chunk_open(ctx, js, c, "file_header")))
		return err;
	/* the file-header part is the header object itself with "type" added */
	if (c->header_json_len < 2 || c->header_json[0] != '{')
		return -EINVAL;
	if ((err = put_str(ctx->out, "{\"type\":\"file_header\"")) ||
	    (err = obuf__write(ctx->out, c->header_json_len > 2 ? "," : "", c->header_json_len > 2)) ||
	    (err = obuf__write(ctx->out, c->header_json + 1, c->header_json_len - 1)))
		return err;
	return put_chunk_close(ctx, js);
}

static int json_chunk(struct export_ctx *ctx, const struct wtf_chunk *c)
{
	struct json_sink_state *js = *wtf_sink_state(ctx);
	char head[128];
	int err = put_chunk_open(ctx, js, c, "event_data");

	if (!err && c->nstrings) {
		const char *s = (const char *)c->strings, *end = s + c->strings_len;

		err = put_str(ctx->out, "{\"type\":\"string_table\",\"value\":[");
		for (uint32_t i = 0; !err && s < end; i++) {
			size_t len = strnlen(s, (size_t)(end - s));

			err = (i ? obuf__write(ctx->out, ",", 1) : 0) ?: put_json_string(ctx->out, s, len);
			s += len + 1;
		}
		if (!err)
			err = put_str(ctx->out, "]},");
	}
	snprintf(head, sizeof(head), "{\"type\":\"binary_event_buffer\",\"mode\":\"base64\",\"byteLength\":%zu,"
		 "\"value\":\"", c->events_len);
	if (err || (err = put_str(ctx->out, head)) ||
	    (err = put_base64(ctx->out, js->b64, c->events, c->events_len)) || (err = put_str(ctx->out, "\"}")))
		return err;
	return put_chunk_close(ctx, js);
}

static int json_file_end(struct export_ctx *ctx)
{
	return ctx->opts->json_partial ? 0 : put_str(ctx->out, "\n]}\n");
}

static void json_cleanup(struct export_ctx *ctx)
{
	void **state = wtf_sink_state(ctx);

	free(*state);
	*state = NULL;
}

static const struct wtf_sink json_sink = {
	.file_begin = json_file_begin, .chunk = json_chunk, .file_end = json_file_end, .cleanup = json_cleanup,
};

static int wtf_json_begin(struct export_ctx *ctx)
{
	return wtf_export_begin(ctx, &json_sink);
}

const struct export_ops wtf_json_ops = {
	.name = "wtf-json",
	.description = "wtf-trace JSON (.wtf-json; --json-mode complete|partial)",
	.begin = wtf_json_begin,
	.event = wtf_export_event,
	.end = wtf_export_end,
	.cleanup = wtf_export_cleanup,
};
