// SPDX-License-Identifier: MIT
/*
 * dial9-trace-format exporter (/work/shared/specs/dial9-trace-format.md with NOTES.md §2: the
 * decoder at 606e863 wins over the spec text).
 *
 * Layout: the 5-byte header once, then four schema frames (call, return, exception, detail;
 * every one has_timestamp = 1, the timestamp is never a field), then the events merged by
 * timestamp. A function name is a PooledString defined by a one-entry string-pool frame just
 * before its first use, because the JS decoder resolves pooled strings while decoding the event.
 * Pool entries are always valid UTF-8 (invalid bytes become U+FFFD), because the Rust decoder
 * silently drops the others. A timestamp-reset frame precedes an event's tag exactly when
 * ts < base or ts - base > 0xFFFFFF; the base becomes each event's timestamp afterwards.
 *
 * Field types are only those the 606e863 decoders know: Varint (9, LEB128) for integers, which
 * holds any of them up to 64 bits in the fewest bytes; I64 (1) for register bit patterns; Bytes
 * (5) for the stack. (U8/U16/U32, types 11-13, are read there as fixed-width little-endian
 * values of 1, 2 and 4 bytes, which the Rust decoder reports as Varint values; they are unused.)
 *
 * Memory: a function_id -> pool id table (O(functions)) and a fixed staging buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "byteorder.h"
#include "format.h"
#include "func_index.h"
#include "utf8.h"

#define D9_TAG_SCHEMA       0x01
#define D9_TAG_EVENT        0x02
#define D9_TAG_STRING_POOL  0x03
#define D9_TAG_TS_RESET     0x05

#define D9_I64              1
#define D9_BYTES            5
#define D9_POOLED_STRING    7
#define D9_VARINT           9

#define D9_MAX_DELTA        0xFFFFFFu

enum d9_type { D9_CALL, D9_RETURN, D9_EXCEPTION, D9_DETAIL };

#define STAGE_SIZE          (256u * 1024)
#define STAGE_EVENT_MAX     512u    /* bound on a schema frame or an event frame without its stack bytes */

struct dial9_state {
	struct func_index pool_ids;     /* function_id -> pool id (defined on first use) */
	uint64_t base_ns;               /* timestamp base, 0 at stream start */
	char *scratch;                  /* UTF-8 repaired names */
	size_t scratch_cap;
	size_t len;
	uint8_t stage[STAGE_SIZE];
};

/* ---- UTF-8 repair -------------------------------------------------------------------------- */

/* @name with invalid UTF-8 replaced, in st->scratch; returns its length or -ENOMEM. */
static int64_t utf8_repair(struct dial9_state *st, const char *name, size_t len)
{
	if (UTF8_LOSSY_BOUND(len) + 1 > st->scratch_cap) {
		char *bigger = realloc(st->scratch, UTF8_LOSSY_BOUND(len) + 1);

		if (!bigger)
			return -ENOMEM;
		st->scratch = bigger;
		st->scratch_cap = UTF8_LOSSY_BOUND(len) + 1;
	}
	return utf8_put_lossy(st->scratch, name, len) - st->scratch;
}

/* ---- staging buffer ------------------------------------------------------------------------ */

static int stage_flush(struct export_ctx *ctx, struct dial9_state *st)
{
	int err = st->len ? obuf__write(ctx->out, st->stage, st->len) : 0;

	st->len = 0;
	return err;
}

/* Room for @n <= STAGE_EVENT_MAX bytes at the end of the staging buffer. */
static int stage_room(struct export_ctx *ctx, struct dial9_state *st, size_t n, uint8_t **p)
{
	int err = 0;

	if (st->len + n > STAGE_SIZE)
		err = stage_flush(ctx, st);
	*p = st->stage + st->len;
	return err;
}

/* Any number of bytes. */
static int stage_put(struct export_ctx *ctx, struct dial9_state *st, const void *data, size_t n)
{
	int err;

	if (st->len + n <= STAGE_SIZE) {
		memcpy(st->stage + st->len, data, n);
		st->len += n;
		return 0;
	}
	if ((err = stage_flush(ctx, st)))
		return err;
	return obuf__write(ctx->out, data, n);
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* ---- frames -------------------------------------------------------------------------------- */

struct d9_field {
	const char *name;
	uint8_t type;
};

static const struct d9_field index_fields[] = {
	{ "thread", D9_VARINT }, { "function", D9_POOLED_STRING }, { "depth", D9_VARINT },
};

static const struct d9_field detail_fields[] = {
	{ "thread", D9_VARINT }, { "function", D9_POOLED_STRING }, { "depth", D9_VARINT },
	{ "kind", D9_VARINT }, { "flags", D9_VARINT },
	{ "gp0", D9_I64 }, { "gp1", D9_I64 }, { "gp2", D9_I64 }, { "gp3", D9_I64 },
	{ "gp4", D9_I64 }, { "gp5", D9_I64 }, { "gp6", D9_I64 }, { "gp7", D9_I64 },
	{ "lr", D9_I64 }, { "fp", D9_I64 }, { "sp", D9_I64 }, { "stack", D9_BYTES },
};

static int write_schema(struct export_ctx *ctx, struct dial9_state *st, uint16_t type_id,
			const char *name, const struct d9_field *fields, uint16_t nfields)
{
	uint8_t *p, *start;
	size_t nlen = strlen(name);
	int err = stage_room(ctx, st, STAGE_EVENT_MAX, &p);

	if (err)
		return err;
	start = p;
	*p++ = D9_TAG_SCHEMA;
	put_le16(p, type_id), p += 2;
	put_le16(p, (uint16_t)nlen), p += 2;
	memcpy(p, name, nlen), p += nlen;
	*p++ = 1;                       /* has_timestamp */
	put_le16(p, nfields), p += 2;
	for (uint16_t i = 0; i < nfields; i++) {
		size_t flen = strlen(fields[i].name);

		put_le16(p, (uint16_t)flen), p += 2;
		memcpy(p, fields[i].name, flen), p += flen;
		*p++ = fields[i].type;
	}
	st->len += (size_t)(p - start);
	return 0;
}

/* Pool id for @e's function, defining it in a string-pool frame on first use. */
static int pool_id_for(struct export_ctx *ctx, struct dial9_state *st, const struct export_event *e,
		       uint32_t *pool_id)
{
	uint8_t hdr[13];
	int64_t id, len;
	bool added;
	int err;

	if ((id = func_index__get_new(&st->pool_ids, e->ev.function_id, NULL, &added)) < 0)
		return (int)id;
	*pool_id = (uint32_t)id;
	if (!added)
		return 0;
	len = utf8_repair(st, e->name, strlen(e->name));
	if (len < 0)
		return (int)len;
	if ((uint64_t)len > UINT32_MAX)
		return -E2BIG;
	hdr[0] = D9_TAG_STRING_POOL;
	put_le32(hdr + 1, 1);
	put_le32(hdr + 5, *pool_id);
	put_le32(hdr + 9, (uint32_t)len);
	if ((err = stage_put(ctx, st, hdr, sizeof(hdr))))
		return err;
	return stage_put(ctx, st, st->scratch, (size_t)len);
}

/* Event tag, type id and u24 delta, preceded by a timestamp-reset frame when the delta needs it. */
static uint8_t *put_event_header(struct dial9_state *st, uint8_t *p, enum d9_type type, uint64_t ts)
{
	uint64_t delta = ts - st->base_ns;

	if (ts < st->base_ns || delta > D9_MAX_DELTA) {
		*p++ = D9_TAG_TS_RESET;
		put_le64(p, ts), p += 8;
		delta = 0;
	}
	st->base_ns = ts;
	*p++ = D9_TAG_EVENT;
	put_le16(p, (uint16_t)type), p += 2;
	*p++ = (uint8_t)delta;
	*p++ = (uint8_t)(delta >> 8);
	*p++ = (uint8_t)(delta >> 16);
	return p;
}

static int write_detail(struct export_ctx *ctx, struct dial9_state *st, const struct export_event *e,
			uint64_t tid, uint32_t pool_id)
{
	const struct atf_detail_event *d = e->detail;
	const struct atf_detail_payload *pl = &d->payload;
	uint8_t *p, *start;
	int err = stage_room(ctx, st, STAGE_EVENT_MAX, &p);

	if (err)
		return err;
	start = p;
	p = put_event_header(st, p, D9_DETAIL, e->ev.timestamp_ns);
	p = put_varint(p, tid);
	put_le32(p, pool_id), p += 4;
	p = put_varint(p, e->ev.call_depth);
	p = put_varint(p, d->hdr.event_type);
	p = put_varint(p, d->hdr.flags);
	for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
		put_le64(p, pl->gp[i]), p += 8;
	put_le64(p, pl->lr), p += 8;
	put_le64(p, pl->fp), p += 8;
	put_le64(p, pl->sp), p += 8;
	/* stack_size is bounded by the record (libatf checks it), not by 256: stage it separately. */
	put_le32(p, pl->stack_size), p += 4;
	st->len += (size_t)(p - start);
	return pl->stack_size ? stage_put(ctx, st, d->stack, pl->stack_size) : 0;
}

/* ---- ops ----------------------------------------------------------------------------------- */

static int dial9_begin(struct export_ctx *ctx)
{
	static const uint8_t header[5] = { 0x54, 0x52, 0x43, 0x00, 0x01 };
	struct dial9_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	if ((err = stage_put(ctx, st, header, sizeof(header))))
		return err;
	if ((err = write_schema(ctx, st, D9_CALL, "call", index_fields, 3)) ||
	    (err = write_schema(ctx, st, D9_RETURN, "return", index_fields, 3)) ||
	    (err = write_schema(ctx, st, D9_EXCEPTION, "exception", index_fields, 3)))
		return err;
	return write_schema(ctx, st, D9_DETAIL, "detail", detail_fields,
			    sizeof(detail_fields) / sizeof(detail_fields[0]));
}

static int dial9_event(struct export_ctx *ctx, const struct export_event *e)
{
	struct dial9_state *st = ctx->priv;
	uint64_t tid = ctx->session->threads[e->thread].tid;
	enum d9_type type;
	uint32_t pool_id = 0;
	uint8_t *p, *start;
	int err;

	switch (e->ev.event_kind) {
	case ATF_KIND_CALL:
		type = D9_CALL;
		break;
	case ATF_KIND_RETURN:
		type = D9_RETURN;
		break;
	case ATF_KIND_EXCEPTION:
		type = D9_EXCEPTION;
		break;
	default:
		return -ATF_E_RECORD;
	}
	if ((err = pool_id_for(ctx, st, e, &pool_id)))
		return err;
	if ((err = stage_room(ctx, st, 32, &p)))
		return err;
	start = p;
	p = put_event_header(st, p, type, e->ev.timestamp_ns);
	p = put_varint(p, tid);
	put_le32(p, pool_id), p += 4;
	p = put_varint(p, e->ev.call_depth);
	st->len += (size_t)(p - start);
	if (e->detail && e->detail->has_payload)
		return write_detail(ctx, st, e, tid, pool_id);
	return 0;
}

static int dial9_end(struct export_ctx *ctx)
{
	return stage_flush(ctx, ctx->priv);
}

static void dial9_cleanup(struct export_ctx *ctx)
{
	struct dial9_state *st = ctx->priv;

	if (!st)
		return;
	func_index__free(&st->pool_ids);
	free(st->scratch);
	free(st);
	ctx->priv = NULL;
}

const struct export_ops dial9_ops = {
	.name = "dial9",
	.description = "dial9-trace-format (TRC\\0 v1): call/return/exception/detail events, pooled names",
	.per_thread = false,
	.begin = dial9_begin,
	.event = dial9_event,
	.end = dial9_end,
	.cleanup = dial9_cleanup,
};
