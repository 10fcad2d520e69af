/* SPDX-License-Identifier: MIT */
/*
 * Private to the wtf-trace exporters (formats/wtf.c, formats/wtf_json.c). wtf.c maps the session
 * onto wtf-trace chunks, parts and binary event records (built by wtf_chunk.c); a sink writes each
 * finished chunk either as binary CFF (wtf.c) or as the JSON form of the same chunks (wtf_json.c).
 */
#ifndef ATFTRACE_FORMATS_WTF_H
#define ATFTRACE_FORMATS_WTF_H

#include "wtf_chunk.h"

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
