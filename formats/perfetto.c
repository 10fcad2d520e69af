// SPDX-License-Identifier: MIT
/*
 * Perfetto exporter: the native protobuf trace (perfetto.protos.Trace), written directly as
 * varints and length-delimited fields. Field numbers are those of Perfetto's trace.proto;
 * tests/data/perfetto_trace.proto lists exactly the fields written here.
 *
 * One packet sequence per process (trusted_packet_sequence_id 1, 2, ... for a session of
 * several processes, each with its own interned names, since function ids are per process):
 *   - a process TrackDescriptor (pid, cmdline, process name), flagged
 *     SEQ_INCREMENTAL_STATE_CLEARED because it is the first packet of the sequence;
 *   - one thread TrackDescriptor per thread (uuid, parent_uuid = the process, pid, tid, name);
 *   - one TrackEvent packet per event, merged by timestamp: a call is TYPE_SLICE_BEGIN with an
 *     interned name (InternedData.event_names is emitted in the packet of first use, and the
 *     packet is flagged SEQ_NEEDS_INCREMENTAL_STATE); a return is TYPE_SLICE_END; an exception
 *     is TYPE_SLICE_END with the debug annotation exception = true. A linked detail record
 *     adds its registers as debug annotations (gp0..gp7 as uint, lr/fp/sp as pointers), which
 *     trace processor shows as the slice's arguments; a function with typed arguments
 *     (record -A/-R/--auto-args) adds the string annotation "args" ("42, \"s\"", as dump
 *     prints them) to its begin and "retval" to its end.
 *
 * Timestamps are ATF's CLOCK_BOOTTIME nanoseconds, written as they are. timestamp_clock_id is
 * left unset on purpose: trace_packet.proto defines an unset clock id (with no
 * TracePacketDefaults) as BUILTIN_CLOCK_BOOTTIME (6), so it is exact and saves 2 bytes a packet.
 *
 * Nested lengths are written after the body: each length-delimited field reserves one byte and
 * the body is moved up when the length needs more, so every varint is minimal.
 * Memory: a function_id -> iid table (O(functions)) and a staging buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "atf_args.h"
#include "format.h"
#include "leb128.h"
#include "func_index.h"
#include "utf8.h"

/* Field numbers (perfetto/protos/perfetto/trace/...). */
#define TRACE_PACKET                    1
#define PKT_TIMESTAMP                   8
#define PKT_TRUSTED_SEQUENCE_ID         10
#define PKT_TRACK_EVENT                 11
#define PKT_INTERNED_DATA               12
#define PKT_SEQUENCE_FLAGS              13
#define PKT_TRACK_DESCRIPTOR            60
#define TD_UUID                         1
#define TD_PROCESS                      3
#define TD_THREAD                       4
#define TD_PARENT_UUID                  5
#define PD_PID                          1
#define PD_CMDLINE                      2
#define PD_PROCESS_NAME                 6
#define THD_PID                         1
#define THD_TID                         2
#define THD_THREAD_NAME                 5
#define TE_DEBUG_ANNOTATIONS            4
#define TE_TYPE                         9
#define TE_NAME_IID                     10
#define TE_TRACK_UUID                   11
#define DA_BOOL_VALUE                   2
#define DA_UINT_VALUE                   3
#define DA_STRING_VALUE                 6
#define DA_POINTER_VALUE                7
#define DA_NAME                         10
#define ID_EVENT_NAMES                  2
#define EN_IID                          1
#define EN_NAME                         2

#define SEQ_INCREMENTAL_STATE_CLEARED   1
#define SEQ_NEEDS_INCREMENTAL_STATE     2
#define TYPE_SLICE_BEGIN                1
#define TYPE_SLICE_END                  2

#define WT_VARINT                       0
#define WT_LEN                          2

/* Process k (from 0) has sequence id 1 + k, track uuid k << 32 | 1, its thread i k << 32 | (2 + i). */
#define SEQUENCE_ID(ctx)                (1 + (uint64_t)(ctx)->process)
#define PROCESS_UUID(ctx)               ((uint64_t)(ctx)->process << 32 | 1)
#define THREAD_UUID(ctx, i)             ((uint64_t)(ctx)->process << 32 | (2 + (uint64_t)(i)))

#define STAGE_SIZE                      (256u * 1024)
#define PACKET_FIXED_MAX                1024u   /* bound on a packet without its strings */

struct perfetto_state {
	struct func_index iids;         /* function_id -> event name iid - 1 (interned on first use) */
	uint8_t *stage;
	size_t len, cap;
};

/* ---- protobuf encoding --------------------------------------------------------------------- */

/* Protobuf varints are unsigned LEB128. */
static inline uint8_t *pb_varint(uint8_t *p, uint64_t v)
{
	return p + uleb128_put(p, v);
}

static inline uint8_t *pb_uint(uint8_t *p, unsigned field, uint64_t v)
{
	p = pb_varint(p, (uint64_t)field << 3 | WT_VARINT);
	return pb_varint(p, v);
}

/* Opens a length-delimited field: returns where its body starts (one length byte reserved). */
static inline uint8_t *pb_open(uint8_t *p, unsigned field)
{
	p = pb_varint(p, (uint64_t)field << 3 | WT_LEN);
	return p + 1;
}

/* Closes the field whose body starts at @body and ends at @end; returns the new end. */
static inline uint8_t *pb_close(uint8_t *body, uint8_t *end)
{
	size_t len = (size_t)(end - body);
	unsigned n = (unsigned)uleb128_size(len);

	if (n > 1)
		memmove(body + n - 1, body, len);
	pb_varint(body - 1, len);
	return body - 1 + n + len;
}

/* A string field, invalid UTF-8 replaced by U+FFFD (proto strings must be UTF-8); needs 3*len+10. */
static uint8_t *pb_string(uint8_t *p, unsigned field, const char *s)
{
	uint8_t *body = pb_open(p, field);

	return pb_close(body, (uint8_t *)utf8_put_lossy((char *)body, s, strlen(s)));
}

/* ---- staging ------------------------------------------------------------------------------- */

static int stage_flush(struct export_ctx *ctx, struct perfetto_state *st)
{
	int err = st->len ? obuf__write(ctx->out, st->stage, st->len) : 0;

	st->len = 0;
	return err;
}

/* Room for a packet of at most @n bytes; the caller advances st->len. */
static int stage_room(struct export_ctx *ctx, struct perfetto_state *st, size_t n, uint8_t **p)
{
	int err;

	if (st->len + n > st->cap) {
		if ((err = stage_flush(ctx, st)))
			return err;
		if (n > st->cap) {      /* a packet with a huge name */
			uint8_t *bigger = realloc(st->stage, n);

			if (!bigger)
				return -ENOMEM;
			st->stage = bigger;
			st->cap = n;
		}
	}
	*p = st->stage + st->len;
	return 0;
}

/* Worst-case encoded size of @s as a string field. */
static size_t string_bound(const char *s)
{
	return s ? UTF8_LOSSY_BOUND(strlen(s)) + 16 : 0;
}

/* ---- packets ------------------------------------------------------------------------------- */

static int perfetto_begin(struct export_ctx *ctx)
{
	struct perfetto_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	st->cap = STAGE_SIZE;
	if (!(st->stage = malloc(st->cap)))
		return -ENOMEM;
	return 0;
}

static int perfetto_process_begin(struct export_ctx *ctx)
{
	struct perfetto_state *st = ctx->priv;
	const struct atf_manifest *m = ctx->session->manifest;
	uint8_t *p, *start, *pkt, *td, *pd;
	size_t bound = PACKET_FIXED_MAX + string_bound(m->process_name);
	int err;

	func_index__free(&st->iids);    /* a new sequence: names are interned afresh */
	for (size_t i = 0; i < m->argc; i++)
		bound += string_bound(m->argv[i]);
	if ((err = stage_room(ctx, st, bound, &p)))
		return err;
	start = p;
	pkt = pb_open(p, TRACE_PACKET);
	p = pb_uint(pkt, PKT_TRUSTED_SEQUENCE_ID, SEQUENCE_ID(ctx));
	p = pb_uint(p, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	td = pb_open(p, PKT_TRACK_DESCRIPTOR);
	p = pb_uint(td, TD_UUID, PROCESS_UUID(ctx));
	pd = pb_open(p, TD_PROCESS);
	p = pb_uint(pd, PD_PID, m->pid);
	for (size_t i = 0; i < m->argc; i++)
		if (m->argv[i])
			p = pb_string(p, PD_CMDLINE, m->argv[i]);
	if (m->process_name)
		p = pb_string(p, PD_PROCESS_NAME, m->process_name);
	p = pb_close(pd, p);
	p = pb_close(td, p);
	p = pb_close(pkt, p);
	st->len += (size_t)(p - start);
	return 0;
}

static int perfetto_thread_begin(struct export_ctx *ctx, const struct atf_thread *t)
{
	struct perfetto_state *st = ctx->priv;
	uint8_t *p, *start, *pkt, *td, *thd;
	uint64_t uuid = THREAD_UUID(ctx, t - ctx->session->threads);
	int err = stage_room(ctx, st, PACKET_FIXED_MAX + string_bound(t->name), &p);

	if (err)
		return err;
	start = p;
	pkt = pb_open(p, TRACE_PACKET);
	p = pb_uint(pkt, PKT_TRUSTED_SEQUENCE_ID, SEQUENCE_ID(ctx));
	td = pb_open(p, PKT_TRACK_DESCRIPTOR);
	p = pb_uint(td, TD_UUID, uuid);
	p = pb_uint(p, TD_PARENT_UUID, PROCESS_UUID(ctx));
	thd = pb_open(p, TD_THREAD);
	p = pb_uint(thd, THD_PID, ctx->session->manifest->pid);
	p = pb_uint(p, THD_TID, t->tid);
	if (t->name)
		p = pb_string(p, THD_THREAD_NAME, t->name);
	p = pb_close(thd, p);
	p = pb_close(td, p);
	p = pb_close(pkt, p);
	st->len += (size_t)(p - start);
	return 0;
}

static uint8_t *put_annotation(uint8_t *p, const char *name, unsigned value_field, uint64_t v)
{
	size_t nlen = strlen(name);
	uint8_t *da = pb_open(p, TE_DEBUG_ANNOTATIONS);

	p = pb_varint(da, DA_NAME << 3 | WT_LEN);
	p = pb_varint(p, nlen);
	memcpy(p, name, nlen);
	p = pb_uint(p + nlen, value_field, v);
	return pb_close(da, p);
}

static uint8_t *put_registers(uint8_t *p, const struct atf_detail_payload *pl)
{
	static const char *const gp_names[ATF_DETAIL_GP_REGS] = {
		"gp0", "gp1", "gp2", "gp3", "gp4", "gp5", "gp6", "gp7",
	};

	for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
		p = put_annotation(p, gp_names[i], DA_UINT_VALUE, pl->gp[i]);
	p = put_annotation(p, "lr", DA_POINTER_VALUE, pl->lr);
	p = put_annotation(p, "fp", DA_POINTER_VALUE, pl->fp);
	return put_annotation(p, "sp", DA_POINTER_VALUE, pl->sp);
}

/* A string debug annotation: a call's typed "args", a return's "retval" (-A/-R/--auto-args). */
static uint8_t *put_string_annotation(uint8_t *p, const char *name, const char *v)
{
	uint8_t *da = pb_open(p, TE_DEBUG_ANNOTATIONS);

	p = pb_string(da, DA_NAME, name);
	p = pb_string(p, DA_STRING_VALUE, v);
	return pb_close(da, p);
}

static int perfetto_event(struct export_ctx *ctx, const struct export_event *e)
{
	char typed[2048];
	bool has_typed = e->detail && atf_args_detail_text(ctx->session->args, e->detail, e->ev.event_kind,
			 ctx->session->threads[e->thread].index.hdr.arch == ATF_ARCH_ARM64, typed, sizeof(typed)) == 1;
	struct perfetto_state *st = ctx->priv;
	bool begin = e->ev.event_kind == ATF_KIND_CALL, new_name = false;
	uint8_t *p, *start, *pkt, *te, *idata, *en;
	int64_t iid = 0;
	int err;

	if (e->ev.event_kind != ATF_KIND_CALL && e->ev.event_kind != ATF_KIND_RETURN &&
	    e->ev.event_kind != ATF_KIND_EXCEPTION)
		return -ATF_E_RECORD;
	if (begin) {
		if ((iid = func_index__get_new(&st->iids, e->ev.function_id, NULL, &new_name)) < 0)
			return (int)iid;
		iid++;                  /* iids start at 1 */
	}
	if ((err = stage_room(ctx, st, PACKET_FIXED_MAX + (new_name ? string_bound(e->name) : 0) +
			      (has_typed ? string_bound(typed) : 0), &p)))
		return err;
	start = p;
	pkt = pb_open(p, TRACE_PACKET);
	p = pb_uint(pkt, PKT_TIMESTAMP, e->ev.timestamp_ns);
	p = pb_uint(p, PKT_TRUSTED_SEQUENCE_ID, SEQUENCE_ID(ctx));
	if (new_name) {
		idata = pb_open(p, PKT_INTERNED_DATA);
		en = pb_open(idata, ID_EVENT_NAMES);
		p = pb_uint(en, EN_IID, (uint64_t)iid);
		p = pb_string(p, EN_NAME, e->name);
		p = pb_close(en, p);
		p = pb_close(idata, p);
	}
	if (begin)
		p = pb_uint(p, PKT_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	te = pb_open(p, PKT_TRACK_EVENT);
	p = pb_uint(te, TE_TYPE, begin ? TYPE_SLICE_BEGIN : TYPE_SLICE_END);
	p = pb_uint(p, TE_TRACK_UUID, THREAD_UUID(ctx, e->thread));
	if (begin)
		p = pb_uint(p, TE_NAME_IID, (uint64_t)iid);
	if (e->ev.event_kind == ATF_KIND_EXCEPTION)
		p = put_annotation(p, "exception", DA_BOOL_VALUE, 1);
	if (e->detail && e->detail->has_payload)
		p = put_registers(p, &e->detail->payload);
	if (has_typed)
		p = put_string_annotation(p, begin ? "args" : "retval", typed);
	p = pb_close(te, p);
	p = pb_close(pkt, p);
	st->len += (size_t)(p - start);
	return 0;
}

static int perfetto_end(struct export_ctx *ctx)
{
	return stage_flush(ctx, ctx->priv);
}

static void perfetto_cleanup(struct export_ctx *ctx)
{
	struct perfetto_state *st = ctx->priv;

	if (!st)
		return;
	func_index__free(&st->iids);
	free(st->stage);
	free(st);
	ctx->priv = NULL;
}

const struct export_ops perfetto_ops = {
	.name = "perfetto",
	.description = "Perfetto protobuf trace: thread tracks, slices with interned names (ui.perfetto.dev)",
	.per_thread = false,
	.processes = true,
	.begin = perfetto_begin,
	.process_begin = perfetto_process_begin,
	.thread_begin = perfetto_thread_begin,
	.event = perfetto_event,
	.end = perfetto_end,
	.cleanup = perfetto_cleanup,
};
