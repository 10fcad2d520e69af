/* SPDX-License-Identifier: MIT */
/*
 * Export pipeline contract. user/cmd/cmd_export.c runs one reader loop over a session (threads
 * merged by timestamp, or thread by thread when ops->per_thread) and drives one ops table.
 * Every callback is optional. Exporters stream: they keep O(threads + functions) state,
 * never O(events), and write through struct obuf in large blocks.
 */
#ifndef ATFTRACE_FORMAT_H
#define ATFTRACE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include "atf.h"
#include "obuf.h"

struct export_options {
	const char *out_path;           /* file ("-": standard output), or directory for formats that write one (zts) */
	bool force;                     /* replace an existing output (obuf.h: OBUF_FORCE) */
	int64_t thread_id;              /* -1: all threads */
	uint64_t from_ns, to_ns;        /* absolute boottime ns; to_ns = UINT64_MAX for no limit */
	uint32_t chunk_size;            /* wtf: bytes per event-data chunk (0 = default) */
	bool json_partial;              /* wtf-json: --json-mode partial */
	uint32_t unit_size;             /* rtc: --unit-size (0 = default) */
	uint32_t minor_unit_size;       /* rtc: --minor-unit-size (0 = default) */
	const char *compress;           /* zts: "lz4" | "zlib" | "none" (NULL = default) */
	const char *weight;             /* folded: "self" | "total" | "calls" (NULL = self) */
	void *priv;                     /* initial ctx->priv, for consumers that are not exporters */
	char *error;                    /* optional: receives the exporter's one-line reason on failure */
	size_t error_len;
};

struct export_event {
	uint32_t thread;                /* index into session->threads */
	uint64_t seq;                   /* index_seq */
	struct atf_index_event ev;
	const char *name;               /* function display name (never NULL) */
	const struct atf_detail_event *detail;  /* linked detail record, or NULL */
	bool unfinished;                /* a RETURN made up for a call still open at the end */
};

struct export_ctx {
	struct atf_session *session;    /* the process being delivered */
	size_t process, nprocesses;     /* its index among the exported processes, and their number */
	const struct export_options *opts;
	struct obuf *out;               /* opened on opts->out_path unless ops->writes_directory */
	uint64_t time_base_ns;          /* first event's timestamp in the exported range (all processes) */
	uint64_t time_end_ns;           /* last event's timestamp in the exported range (all processes) */
	uint64_t nevents;               /* recorded events in the exported range (known before begin) */
	uint64_t dropped_returns;       /* returns and exceptions so far whose call lies before the range */
	void *priv;                     /* exporter state */
};

struct export_ops {
	const char *name;               /* -F value */
	const char *description;        /* one line for --list */
	bool per_thread;                /* deliver each thread's events contiguously, threads in order */
	bool writes_directory;          /* opts->out_path is a directory the exporter creates */
	bool processes;                 /* can hold several processes (a -a or --follow-fork session) */
	int (*begin)(struct export_ctx *ctx);
	/* before and after each process's threads; ctx->session is that process */
	int (*process_begin)(struct export_ctx *ctx);
	int (*process_end)(struct export_ctx *ctx);
	/* per_thread: before each thread's events; merged: once per selected thread, before any event */
	int (*thread_begin)(struct export_ctx *ctx, const struct atf_thread *t);
	int (*event)(struct export_ctx *ctx, const struct export_event *e);
	int (*thread_end)(struct export_ctx *ctx, const struct atf_thread *t); /* merged: after all events */
	int (*end)(struct export_ctx *ctx);     /* flush trailers; obuf is closed by the pipeline */
	void (*cleanup)(struct export_ctx *ctx);/* free priv; always called */
};

/** export_format_list - NULL-terminated table of the exporters linked in. */
const struct export_ops *const *export_format_list(void);

/**
 * export_error - record why an exporter failed, for the caller to print as its one error line
 * (opts->error), or on stderr when the caller gave no buffer. Exporters never print themselves.
 */
void export_error(struct export_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * export_open - open @path for an exporter's output (obuf__open, OBUF_FORCE with opts->force); a
 * refused output's reason goes to export_error().
 */
int export_open(struct export_ctx *ctx, struct obuf **out, const char *path);

/** export_find - ops for @name, or NULL. */
const struct export_ops *export_find(const char *name);

/**
 * export_session - run the reader loop over @s with @ops and @opts.
 * Returns 0, or a negative error (the partial output is removed).
 */
int export_session(struct atf_session *s, const struct export_ops *ops, const struct export_options *opts);

/**
 * export_sessions - export_session over @n processes into one output, one process after the
 * other (ops->process_begin/process_end around each). More than one needs ops->processes
 * (-EINVAL otherwise). opts->thread_id selects a thread in every process (-1: all).
 */
int export_sessions(struct atf_session *const *s, size_t n, const struct export_ops *ops,
		    const struct export_options *opts);

#endif
