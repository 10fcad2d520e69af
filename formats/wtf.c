// SPDX-License-Identifier: MIT
/*
 * wtf-trace exporter (`-F wtf`): the Web Tracing Framework chunked file format, readable by the
 * tracing-framework loader (wtf.db.load, bin/dump.js). Layout per NOTES.md §3; the mapping is
 * documented in docs/formats-wtf.md:
 *
 *   thread        -> zone: wtf.zone#create once (location "thread_<id>"), wtf.zone#set on change
 *                    and again at the start of every event-data chunk
 *   CALL          -> one scope event type per function (eventClass 1, flags 0, no arguments);
 *                    past WTF_MAX_FUNCTION_WIRE wire ids, the shared scope atftrace#scope(name)
 *   RETURN        -> wtf.scope#leave
 *   EXCEPTION     -> instance atftrace#exception(name, fid_hi, fid_lo, depth), then the leave
 *   detail record -> instance atftrace#callDetail / atftrace#returnDetail: every 64-bit value is
 *                    two uint32 arguments <reg>_hi, <reg>_lo (the loader has no 64-bit types);
 *                    inside the frame: after the call's enter, before the return's leave
 *   deeper than WTF_MAX_SCOPE_DEPTH open scopes (the loader aborts at 1024) -> instance events
 *                    atftrace#deepCall(name, depth) / atftrace#deepReturn(name, depth)
 *   time          -> u32 microseconds since WTF_TIME_BASE_LEAD_NS before the first event of the
 *                    range; longer ranges are refused
 *
 * Streaming: one event-data chunk (string table + event buffer, about opts->chunk_size bytes) is
 * built in memory at a time; state is O(threads + functions).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "byteorder.h"
#include "wtf.h"

#ifndef ATFTRACE_VERSION
#define ATFTRACE_VERSION "unknown"
#endif

#define WTF_DEFAULT_CHUNK_SIZE  (1u << 20)
#define WTF_MIN_CHUNK_SIZE      256u
/*
 * Wire ids and the loader's event type ids are uint16, and the loader turns every distinct
 * wtf.scope#enter name into a type of its own: past 65536 types it crashes (TypeError in
 * EventIterator.getName, seen with 65600 functions). So functions past this wire id share one
 * scope type, atftrace#scope(ascii name), leaving room for the loader's own types.
 */
#define WTF_MAX_FUNCTION_WIRE   65000u
#define WTF_FLAGS_BUILTIN       0x28u   /* BUILTIN 0x20 | INTERNAL 0x08 */
#define WTF_CLASS_INSTANCE      0u
#define WTF_CLASS_SCOPE         1u
/*
 * The time base is one tick (1 us) before the range's first event: the loader takes a scope whose
 * end time is 0 for an instance event, so a first call that returned within its first
 * microsecond would otherwise lose its scope.
 */
#define WTF_TIME_BASE_LEAD_NS   1000u

static const struct wtf_reg_names x86_64_regs = {
	{ "rdi", "rsi", "rdx", "rcx", "r8", "r9", "arg7", "arg8" }, { "rax", "rdx" },
	"ret_addr", "ret_ip", "rbp", "rsp",
};
static const struct wtf_reg_names arm64_regs = {
	{ "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7" }, { "x0", "x1" },
	"lr", "lr", "fp", "sp",
};

void **wtf_sink_state(struct export_ctx *ctx)
{
	return &((struct wtf_state *)ctx->priv)->sink_state;
}

/* wtf.event#define(uint16 wireId, uint16 eventClass, uint32 flags, ascii name, ascii args) */
static int define_type(struct export_ctx *ctx, struct wtf_state *st, uint32_t wire, uint32_t event_class,
		       uint32_t flags, const char *name, const char *args, uint32_t t_us)
{
	uint32_t name_ord, args_ord = WTF_STRING_NULL;
	int err = wtf_reserve(ctx, st, 28, wtf_str_need(name) + (args ? wtf_str_need(args) : 0), t_us);

	if (err || (err = wtf_intern(st, name, &name_ord)) || (args && (err = wtf_intern(st, args, &args_ord))))
		return err;
	wtf_put_words(st, (uint32_t[]){ W_DEFINE, t_us, wire, event_class, flags, name_ord, args_ord }, 7);
	return 0;
}

/* "uint32 fid_hi, uint32 fid_lo, uint32 <r>_hi, uint32 <r>_lo, ..., uint32 flags, uint8[] stack" */
static void detail_signature(char *buf, size_t size, const char *const *gp, size_t ngp, const char *lr,
			     const char *fp, const char *sp)
{
	const char *names[ATF_DETAIL_GP_REGS + 4];
	size_t n = 0, o = 0;

	names[n++] = "fid";
	for (size_t i = 0; i < ngp; i++)
		names[n++] = gp[i];
	names[n++] = lr;
	names[n++] = fp;
	names[n++] = sp;
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, size - o, "uint32 %s_hi, uint32 %s_lo, ", names[i], names[i]);
	snprintf(buf + o, size - o, "uint32 flags, uint8[] stack");
}

static int define_fixed_types(struct export_ctx *ctx, struct wtf_state *st, uint32_t t_us)
{
	const struct wtf_reg_names *r = st->regs;
	char call_sig[512], ret_sig[256];
	int err;

	detail_signature(call_sig, sizeof(call_sig), r->call_gp, ATF_DETAIL_GP_REGS, r->call_lr, r->fp, r->sp);
	detail_signature(ret_sig, sizeof(ret_sig), r->ret_gp, 2, r->ret_lr, r->fp, r->sp);
	if ((err = define_type(ctx, st, W_ZONE_CREATE, WTF_CLASS_INSTANCE, WTF_FLAGS_BUILTIN, "wtf.zone#create",
			       "uint16 zoneId, ascii name, ascii type, ascii location", t_us)) ||
	    (err = define_type(ctx, st, W_ZONE_SET, WTF_CLASS_INSTANCE, WTF_FLAGS_BUILTIN, "wtf.zone#set",
			       "uint16 zoneId", t_us)) ||
	    (err = define_type(ctx, st, W_NAMED_SCOPE, WTF_CLASS_SCOPE, 0, "atftrace#scope", "ascii name", t_us)) ||
	    (err = define_type(ctx, st, W_SCOPE_LEAVE, WTF_CLASS_INSTANCE, WTF_FLAGS_BUILTIN, "wtf.scope#leave",
			       NULL, t_us)) ||
	    (err = define_type(ctx, st, W_EXCEPTION, WTF_CLASS_INSTANCE, 0, "atftrace#exception",
			       "ascii name, uint32 fid_hi, uint32 fid_lo, uint32 depth", t_us)) ||
	    (err = define_type(ctx, st, W_CALL_DETAIL, WTF_CLASS_INSTANCE, 0, "atftrace#callDetail", call_sig, t_us)) ||
	    (err = define_type(ctx, st, W_RETURN_DETAIL, WTF_CLASS_INSTANCE, 0, "atftrace#returnDetail", ret_sig, t_us)) ||
	    (err = define_type(ctx, st, W_DEEP_CALL, WTF_CLASS_INSTANCE, 0, "atftrace#deepCall",
			       "ascii name, uint32 depth", t_us)) ||
	    (err = define_type(ctx, st, W_DEEP_RETURN, WTF_CLASS_INSTANCE, 0, "atftrace#deepReturn",
			       "ascii name, uint32 depth", t_us)))
		return err;
	st->fixed_defined = true;
	return 0;
}

/* Creates the thread's zone on its first event and makes it current. */
static int enter_zone(struct export_ctx *ctx, struct wtf_state *st, uint32_t thread, uint32_t t_us)
{
	const struct atf_thread *t = &ctx->session->threads[thread];
	struct zone_state *z = &st->zones[thread];
	uint32_t zone_id = z->zone_id ? z->zone_id : st->zones_created + 1;
	char name[320], location[32];
	uint32_t name_ord, type_ord, loc_ord;
	int err;

	if (!z->zone_id) {
		snprintf(name, sizeof(name), "%.256s:%" PRIu32, t->name ? t->name : "thread", t->tid);
		snprintf(location, sizeof(location), "thread_%" PRIu32, t->id);
		if ((err = wtf_reserve(ctx, st, 24, wtf_str_need(name) + wtf_str_need(location) + 16, t_us)) ||
		    (err = wtf_intern(st, name, &name_ord)) || (err = wtf_intern(st, "native_script", &type_ord)) ||
		    (err = wtf_intern(st, location, &loc_ord)))
			return err;
		wtf_put_words(st, (uint32_t[]){ W_ZONE_CREATE, t_us, zone_id, name_ord, type_ord, loc_ord }, 6);
		z->zone_id = zone_id;
		st->zones_created++;
	}
	if (st->current_zone != zone_id) {
		if ((err = wtf_reserve(ctx, st, 12, 0, t_us)))
			return err;
		/* a fresh chunk already starts with a zone#set of the old zone: harmless, then ours */
		wtf_put_words(st, (uint32_t[]){ W_ZONE_SET, t_us, zone_id }, 3);
		st->current_zone = zone_id;
	}
	return 0;
}

static struct fn_slot *function_slot(struct wtf_state *st, uint64_t function_id)
{
	uint32_t mask = st->fn_cap - 1;
	uint32_t i = (uint32_t)((function_id * 0x9E3779B97F4A7C15ull) >> 32) & mask;

	while (st->fns[i].used && st->fns[i].function_id != function_id)
		i = (i + 1) & mask;
	return &st->fns[i];
}

/* The wire id of @e's function (0: use atftrace#scope), defining its scope type on first use. */
static int function_wire(struct export_ctx *ctx, struct wtf_state *st, const struct export_event *e,
			 uint32_t t_us, uint32_t *wire)
{
	struct fn_slot *sl;
	int err;

	if (2 * (st->fn_count + 1) > st->fn_cap) {
		struct fn_slot *old = st->fns;
		uint32_t old_cap = st->fn_cap;

		st->fn_cap = old_cap ? 2 * old_cap : 1024;
		st->fns = calloc(st->fn_cap, sizeof(*st->fns));
		if (!st->fns) {
			st->fns = old;
			st->fn_cap = old_cap;
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < old_cap; i++)
			if (old[i].used)
				*function_slot(st, old[i].function_id) = old[i];
		free(old);
	}
	sl = function_slot(st, e->ev.function_id);
	if (!sl->used) {
		uint32_t w = st->next_wire <= WTF_MAX_FUNCTION_WIRE ? st->next_wire++ : 0;

		if (w && (err = define_type(ctx, st, w, WTF_CLASS_SCOPE, 0, e->name, NULL, t_us)))
			return err;
		*sl = (struct fn_slot){ .function_id = e->ev.function_id, .wire = w, .used = true };
		st->fn_count++;
	}
	*wire = sl->wire;
	return 0;
}

static void put_u64_pair(uint32_t *w, size_t *n, uint64_t v)
{
	w[(*n)++] = (uint32_t)(v >> 32);
	w[(*n)++] = (uint32_t)v;
}

/* atftrace#callDetail / atftrace#returnDetail with the registers of @d (see detail_signature). */
static int emit_detail(struct export_ctx *ctx, struct wtf_state *st, const struct atf_detail_event *d,
		       bool is_return, uint32_t t_us)
{
	const struct atf_detail_payload *p = &d->payload;
	uint32_t w[2 + 2 * (ATF_DETAIL_GP_REGS + 4) + 2];
	uint32_t stack_len = d->stack ? p->stack_size : 0;
	size_t n = 0, ngp = is_return ? 2 : ATF_DETAIL_GP_REGS;
	int err;

	if (!d->has_payload)
		return 0;       /* no registers recorded: nothing to carry */
	w[n++] = is_return ? W_RETURN_DETAIL : W_CALL_DETAIL;
	w[n++] = t_us;
	put_u64_pair(w, &n, p->function_id);
	for (size_t i = 0; i < ngp; i++)
		put_u64_pair(w, &n, p->gp[i]);
	put_u64_pair(w, &n, p->lr);
	put_u64_pair(w, &n, p->fp);
	put_u64_pair(w, &n, p->sp);
	w[n++] = d->hdr.flags;
	w[n++] = stack_len;
	if ((err = wtf_reserve(ctx, st, 4 * n + wtf_align4(stack_len), 0, t_us)))
		return err;
	wtf_put_words(st, w, n);
	memset(st->ev + st->ev_len, 0, wtf_align4(stack_len));
	if (stack_len)
		memcpy(st->ev + st->ev_len, d->stack, stack_len);
	st->ev_len += wtf_align4(stack_len);
	return 0;
}

/* Records with one name string argument: [wire, t, name, extra...]. */
static int emit_named(struct export_ctx *ctx, struct wtf_state *st, uint32_t wire, uint32_t t_us,
		      const char *name, const uint32_t *extra, size_t nextra)
{
	uint32_t ord;
	int err = wtf_reserve(ctx, st, 12 + 4 * nextra, wtf_str_need(name), t_us);

	if (err || (err = wtf_intern(st, name, &ord)))
		return err;
	wtf_put_words(st, (uint32_t[]){ wire, t_us, ord }, 3);
	wtf_put_words(st, extra, nextra);
	return 0;
}

/* Closes the innermost frame: a deep instance pair, or wtf.scope#leave. */
static int close_frame(struct export_ctx *ctx, struct wtf_state *st, struct zone_state *z,
		       const struct export_event *e, uint32_t t_us)
{
	int err;

	if (z->deep) {
		z->deep--;
		return emit_named(ctx, st, W_DEEP_RETURN, t_us, e->name, (uint32_t[]){ e->ev.call_depth }, 1);
	}
	if ((err = wtf_reserve(ctx, st, 8, 0, t_us)))
		return err;
	wtf_put_words(st, (uint32_t[]){ W_SCOPE_LEAVE, t_us }, 2);
	if (z->open_scopes)
		z->open_scopes--;
	return 0;
}

int wtf_export_event(struct export_ctx *ctx, const struct export_event *e)
{
	struct wtf_state *st = ctx->priv;
	struct zone_state *z = &st->zones[e->thread];
	uint64_t rel = e->ev.timestamp_ns > st->base_ns ? e->ev.timestamp_ns - st->base_ns : 0;
	uint32_t t_us = (uint32_t)(rel / 1000), wire, fid[2];
	int err;

	if (!st->fixed_defined && (err = define_fixed_types(ctx, st, t_us)))
		return err;
	if ((err = enter_zone(ctx, st, e->thread, t_us)))
		return err;
	switch (e->ev.event_kind) {
	case ATF_KIND_CALL:
		if (z->open_scopes >= WTF_MAX_SCOPE_DEPTH) {
			z->deep++;
			err = emit_named(ctx, st, W_DEEP_CALL, t_us, e->name, (uint32_t[]){ e->ev.call_depth }, 1);
		} else {
			if ((err = function_wire(ctx, st, e, t_us, &wire)))
				return err;
			if (wire) {
				if ((err = wtf_reserve(ctx, st, 8, 0, t_us)))
					return err;
				wtf_put_words(st, (uint32_t[]){ wire, t_us }, 2);
			} else {
				err = emit_named(ctx, st, W_NAMED_SCOPE, t_us, e->name, NULL, 0);
			}
			z->open_scopes++;
		}
		if (!err && e->detail)
			err = emit_detail(ctx, st, e->detail, false, t_us);
		return err;
	case ATF_KIND_RETURN:
		if (e->detail && (err = emit_detail(ctx, st, e->detail, true, t_us)))
			return err;
		return close_frame(ctx, st, z, e, t_us);
	case ATF_KIND_EXCEPTION:
		fid[0] = (uint32_t)(e->ev.function_id >> 32);
		fid[1] = (uint32_t)e->ev.function_id;
		if ((err = emit_named(ctx, st, W_EXCEPTION, t_us, e->name,
				      (uint32_t[]){ fid[0], fid[1], e->ev.call_depth }, 3)))
			return err;
		if (e->detail && (err = emit_detail(ctx, st, e->detail, true, t_us)))
			return err;
		return close_frame(ctx, st, z, e, t_us);
	default:
		export_error(ctx, "wtf: thread %" PRIu32 " event %" PRIu64 ": unknown kind %" PRIu32,
			ctx->session->threads[e->thread].id, e->seq, e->ev.event_kind);
		return -ATF_E_RECORD;
	}
}

int wtf_export_begin(struct export_ctx *ctx, const struct wtf_sink *sink)
{
	const struct export_options *o = ctx->opts;
	struct atf_session *s = ctx->session;
	struct wtf_state *st;
	struct wtf_chunk hc = { .id = 0, .type = WTF_CHUNK_FILE_HEADER };
	uint64_t base_ns = ctx->time_base_ns > WTF_TIME_BASE_LEAD_NS ? ctx->time_base_ns - WTF_TIME_BASE_LEAD_NS : 0;
	uint64_t span_us = (ctx->time_end_ns - base_ns) / 1000;
	json_t *h;
	int err;

	if (span_us > UINT32_MAX) {
		export_error(ctx, "wtf: the range spans %.1f minutes; wtf-trace times are u32 "
			"microseconds (at most 71.5 minutes): export a shorter range with --from/--to",
			(double)span_us / 60e6);
		return -ERANGE;
	}
	if (s->nthreads >= 65535) {
		export_error(ctx, "wtf: %zu threads, but wtf-trace zone ids are uint16", s->nthreads);
		return -ERANGE;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	st->sink = sink;
	st->base_ns = base_ns;
	st->chunk_size = o->chunk_size ? o->chunk_size : WTF_DEFAULT_CHUNK_SIZE;
	if (st->chunk_size < WTF_MIN_CHUNK_SIZE)
		st->chunk_size = WTF_MIN_CHUNK_SIZE;
	st->next_chunk_id = 1;
	st->next_wire = W_FIRST_FUNCTION;
	st->regs = &x86_64_regs;
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].has_detail) {
			if (s->threads[i].detail.hdr.arch == ATF_ARCH_ARM64)
				st->regs = &arm64_regs;
			break;
		}
	st->nzones = s->nthreads;
	st->zones = calloc(s->nthreads ? s->nthreads : 1, sizeof(*st->zones));
	if (!st->zones)
		return -ENOMEM;
	if (!(h = wtf_header_json(ctx, st)))
		return -ENOMEM;
	hc.header_json = json_dumps(h, JSON_COMPACT);
	json_decref(h);
	if (!hc.header_json)
		return -ENOMEM;
	hc.header_json_len = strlen(hc.header_json);
	hc.end_us = (uint32_t)span_us;
	err = sink->file_begin(ctx, &hc);
	free((char *)hc.header_json);
	return err;
}

int wtf_export_end(struct export_ctx *ctx)
{
	struct wtf_state *st = ctx->priv;
	int err = wtf_flush_chunk(ctx, st);

	return err ? err : st->sink->file_end(ctx);
}

void wtf_export_cleanup(struct export_ctx *ctx)
{
	struct wtf_state *st = ctx->priv;

	if (!st)
		return;
	if (st->sink && st->sink->cleanup)
		st->sink->cleanup(ctx);
	free(st->ev);
	free(st->str);
	free(st->sslots);
	free(st->zones);
	free(st->fns);
	free(st->scratch);
	free(st);
	ctx->priv = NULL;
}

/* ---- binary sink: 12-byte file header, then chunk header + part table + parts, 4-aligned ---- */

static int write_chunk_header(struct obuf *out, const struct wtf_chunk *c, uint32_t (*parts)[3], uint32_t nparts,
			      uint32_t data_len)
{
	uint8_t hdr[WTF_CHUNK_HEADER_SIZE + 2 * WTF_PART_ENTRY_SIZE];
	uint32_t table = WTF_CHUNK_HEADER_SIZE + WTF_PART_ENTRY_SIZE * nparts;

	put_le32(hdr, c->id);
	put_le32(hdr + 4, c->type);
	put_le32(hdr + 8, table + data_len);
	put_le32(hdr + 12, c->start_us);
	put_le32(hdr + 16, c->end_us);
	put_le32(hdr + 20, nparts);
	for (uint32_t i = 0; i < nparts; i++)   /* offsets count from the end of the part table */
		for (int k = 0; k < 3; k++)
			put_le32(hdr + WTF_CHUNK_HEADER_SIZE + WTF_PART_ENTRY_SIZE * i + 4 * k, parts[i][k]);
	return obuf__write(out, hdr, table);
}

static int write_padded(struct obuf *out, const void *data, size_t len)
{
	static const uint8_t zeros[4];
	int err = len ? obuf__write(out, data, len) : 0;

	return err ? err : obuf__write(out, zeros, wtf_align4(len) - len);
}

static int binary_file_begin(struct export_ctx *ctx, const struct wtf_chunk *c)
{
	uint8_t fh[12];
	uint32_t part[1][3] = { { WTF_PART_FILE_HEADER, 0, (uint32_t)c->header_json_len } };
	int err;

	put_le32(fh, WTF_MAGIC);
	put_le32(fh + 4, WTF_VERSION_BINARY);
	put_le32(fh + 8, WTF_FORMAT_VERSION);
	if ((err = obuf__write(ctx->out, fh, sizeof(fh))) ||
	    (err = write_chunk_header(ctx->out, c, part, 1, (uint32_t)wtf_align4(c->header_json_len))))
		return err;
	return write_padded(ctx->out, c->header_json, c->header_json_len);
}

static int binary_chunk(struct export_ctx *ctx, const struct wtf_chunk *c)
{
	uint32_t str_padded = (uint32_t)wtf_align4(c->strings_len);
	uint32_t parts[2][3] = {
		{ WTF_PART_STRING_TABLE, 0, (uint32_t)c->strings_len },
		{ WTF_PART_EVENT_BUFFER, str_padded, (uint32_t)c->events_len },
	};
	int err;

	if (c->strings_len == 0)        /* no strings: the event buffer is the only part */
		return (err = write_chunk_header(ctx->out, c, parts + 1, 1, (uint32_t)c->events_len)) ? err :
			obuf__write(ctx->out, c->events, c->events_len);
	if ((err = write_chunk_header(ctx->out, c, parts, 2, str_padded + (uint32_t)c->events_len)) ||
	    (err = write_padded(ctx->out, c->strings, c->strings_len)))
		return err;
	return obuf__write(ctx->out, c->events, c->events_len);
}

static int binary_file_end(struct export_ctx *ctx)
{
	return 0;
}

static const struct wtf_sink binary_sink = {
	.file_begin = binary_file_begin, .chunk = binary_chunk, .file_end = binary_file_end,
};

static int wtf_begin(struct export_ctx *ctx)
{
	return wtf_export_begin(ctx, &binary_sink);
}

const struct export_ops wtf_ops = {
	.name = "wtf",
	.description = "wtf-trace binary (Web Tracing Framework chunked file, .wtf-trace)",
	.begin = wtf_begin,
	.event = wtf_export_event,
	.end = wtf_export_end,
	.cleanup = wtf_export_cleanup,
};
