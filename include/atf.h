/* SPDX-License-Identifier: MIT */
/*
 * libatf: the one trusted reader and writer of ATF v2 sessions, shared by the recorder,
 * the subcommands, the exporters and the tests.
 *
 * Conventions: functions return 0 (or a count) on success and a negative error on failure:
 * -errno for OS errors, -ATF_E_* for format errors; atf_strerror() names either.
 * Objects are opaque where they own resources and follow object__verb() naming.
 */
#ifndef ATFTRACE_ATF_H
#define ATFTRACE_ATF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "atf_format.h"

/* ---- errors ------------------------------------------------------------------------------- */

enum atf_error {
	ATF_E_BASE = 4096,          /* below this, a value is an errno */
	ATF_E_MAGIC = ATF_E_BASE,   /* wrong magic bytes */
	ATF_E_VERSION,              /* unsupported endian, version or event size */
	ATF_E_TRUNCATED,            /* file shorter than its header or a record says */
	ATF_E_FOOTER,               /* footer missing, or disagreeing with the header */
	ATF_E_COUNT,                /* event count disagrees with the data */
	ATF_E_CRC,                  /* checksum mismatch */
	ATF_E_TIME_ORDER,           /* timestamps go backwards within a thread */
	ATF_E_RECORD,               /* malformed record (bad length, kind, type) */
	ATF_E_NESTING,              /* return without call, or call_depth inconsistent */
	ATF_E_LINK,                 /* index<->detail link dangling or not reciprocal */
	ATF_E_SYMBOL,               /* function id not in the manifest */
	ATF_E_MANIFEST,             /* manifest.json missing, malformed or inconsistent */
	ATF_E_RANGE,                /* sequence number out of range */
	ATF_E_NOT_SESSION,          /* neither manifest.json nor pid_* directories */
	ATF_E_END
};

/** atf_strerror - message for a negative error from any libatf function (or -errno). */
const char *atf_strerror(int err);

/* Where a problem was found: filled by open/verify functions when non-NULL. */
struct atf_diag {
	int err;
	char file[512];
	uint64_t offset;            /* byte offset in file of the problem */
	char msg[256];
};

/* ---- CRC ------------------------------------------------------------------------------------ */

/** atf_crc32 - CRC-32/ISO-HDLC (zlib crc32), chainable: start with crc = 0. */
uint32_t atf_crc32(uint32_t crc, const void *buf, size_t len);

/* ---- codec (user/atf/atf_codec.c): host-order structs <-> little-endian bytes ---------------- */

void atf_index_header_encode(uint8_t out[ATF_HEADER_SIZE], const struct atf_index_header *h);
void atf_index_header_decode(struct atf_index_header *h, const uint8_t in[ATF_HEADER_SIZE]);
void atf_index_event_encode(uint8_t out[ATF_INDEX_EVENT_SIZE], const struct atf_index_event *e);
void atf_index_event_decode(struct atf_index_event *e, const uint8_t in[ATF_INDEX_EVENT_SIZE]);
void atf_index_footer_encode(uint8_t out[ATF_FOOTER_SIZE], const struct atf_index_footer *f);
void atf_index_footer_decode(struct atf_index_footer *f, const uint8_t in[ATF_FOOTER_SIZE]);
void atf_detail_header_encode(uint8_t out[ATF_HEADER_SIZE], const struct atf_detail_header *h);
void atf_detail_header_decode(struct atf_detail_header *h, const uint8_t in[ATF_HEADER_SIZE]);
void atf_detail_event_header_encode(uint8_t out[ATF_DETAIL_EVENT_HDR_SIZE], const struct atf_detail_event_header *h);
void atf_detail_event_header_decode(struct atf_detail_event_header *h, const uint8_t in[ATF_DETAIL_EVENT_HDR_SIZE]);
void atf_detail_payload_encode(uint8_t out[ATF_DETAIL_PAYLOAD_SIZE], const struct atf_detail_payload *p);
void atf_detail_payload_decode(struct atf_detail_payload *p, const uint8_t in[ATF_DETAIL_PAYLOAD_SIZE]);
void atf_detail_footer_encode(uint8_t out[ATF_FOOTER_SIZE], const struct atf_detail_footer *f);
void atf_detail_footer_decode(struct atf_detail_footer *f, const uint8_t in[ATF_FOOTER_SIZE]);

/* ---- writer (user/atf/atf_writer.c) ------------------------------------------------------------ */

struct atf_thread_writer;

/* One detail record to append together with an index event. */
struct atf_detail_in {
	uint16_t event_type;        /* ATF_DETAIL_CALL / ATF_DETAIL_RETURN */
	uint16_t flags;             /* ATF_DETAIL_F_* */
	const void *payload;        /* already-encoded payload bytes (e.g. atf_detail_payload + stack) */
	uint32_t payload_len;
};

/**
 * atf_thread_writer__new - create <session_dir>/thread_<dir_id>/index.atf for OS thread @tid
 * The index header is written as a placeholder at once (events_offset = footer_offset = 64),
 * so a file cut short at any point is recoverable. detail.atf is created lazily on the first
 * detail record, so threads that never record detail have no detail file.
 */
int atf_thread_writer__new(struct atf_thread_writer **out, const char *session_dir,
			   uint32_t dir_id, uint32_t tid);

/**
 * atf_thread_writer__append - buffer one index event, and its detail record when @detail != NULL
 * The writer assigns the links: ev->detail_seq (ATF_NO_DETAIL when @detail is NULL) and the
 * detail record's index_seq; ev->thread_id is taken as given. Returns the event's index_seq.
 */
int64_t atf_thread_writer__append(struct atf_thread_writer *w, struct atf_index_event *ev,
				  const struct atf_detail_in *detail);

/**
 * atf_thread_writer__set_durable - whether finalize fsyncs the files (the default: true)
 * The recorder turns it off, so that a thread's exit never stalls the ring drain on the disk,
 * and syncs the whole session once at its end. Without fsync the files are still complete and
 * ordered for every reader after the process dies; only a power loss can tear them, which
 * recovery handles.
 */
void atf_thread_writer__set_durable(struct atf_thread_writer *w, bool durable);

/** atf_thread_writer__flush - write buffered records to the files (the recorder calls it every drain). */
int atf_thread_writer__flush(struct atf_thread_writer *w);

/**
 * atf_thread_writer__finalize - flush, rewrite the headers with counts, times and flags, append
 * the footers with the CRC32 of each events section, and close the files. Idempotent.
 */
int atf_thread_writer__finalize(struct atf_thread_writer *w);

/** atf_thread_writer__free - finalize if needed, then release. NULL is ignored. */
void atf_thread_writer__free(struct atf_thread_writer *w);

uint64_t atf_thread_writer__index_count(const struct atf_thread_writer *w);
/** atf_thread_writer__index_written - index events that reached the file (the rest are buffered). */
uint64_t atf_thread_writer__index_written(const struct atf_thread_writer *w);
uint64_t atf_thread_writer__detail_count(const struct atf_thread_writer *w);
uint64_t atf_thread_writer__time_start(const struct atf_thread_writer *w);
uint64_t atf_thread_writer__time_end(const struct atf_thread_writer *w);

/* ---- readers (user/atf/atf_reader.c) ----------------------------------------------------------- */

#define ATF_OPEN_CHECK_CRC   0x1u   /* verify the footer CRC (reads the whole events section) */
#define ATF_OPEN_STRICT      0x2u   /* fail when the footer is missing or the tail is torn */

struct atf_index_file {
	int fd;
	const uint8_t *map;
	size_t map_len;
	struct atf_index_header hdr;
	bool has_footer;
	struct atf_index_footer footer;
	bool recovered;             /* no valid footer: count derived from the file size */
	uint64_t count;             /* events readable */
	uint64_t torn_bytes;        /* bytes of an incomplete last record (ignored) */
	uint64_t events_offset;
};

/**
 * atf_index_open - map an index file and validate it
 * Without ATF_OPEN_STRICT, a file whose recorder died (placeholder header, no footer, torn
 * last record) opens with every whole record readable and @f->recovered set.
 */
int atf_index_open(struct atf_index_file *f, const char *path, unsigned flags, struct atf_diag *diag);
void atf_index_close(struct atf_index_file *f);

/** atf_index_get - decode event @seq (< f->count). */
static inline void atf_index_get(const struct atf_index_file *f, uint64_t seq, struct atf_index_event *ev)
{
	atf_index_event_decode(ev, f->map + f->events_offset + seq * ATF_INDEX_EVENT_SIZE);
}

/** atf_index_lower_bound - first seq whose timestamp >= @ts (f->count if none); O(log n). */
uint64_t atf_index_lower_bound(const struct atf_index_file *f, uint64_t ts);

/**
 * atf_index_release - drop the mapped pages holding events [@from, @to) from this process's
 * resident set; they stay in the page cache and fault back in if read again. Long sequential
 * passes (merge, export) call it as they go, so their memory does not grow with the file.
 */
void atf_index_release(const struct atf_index_file *f, uint64_t from, uint64_t to);

struct atf_detail_event {
	struct atf_detail_event_header hdr;
	bool has_payload;           /* total_length >= 24 + 100 */
	struct atf_detail_payload payload;
	const uint8_t *stack;       /* payload.stack_size bytes (bounds-checked) */
	const uint8_t *raw;         /* the whole record, header included */
};

struct atf_detail_file {
	int fd;
	const uint8_t *map;
	size_t map_len;
	struct atf_detail_header hdr;
	bool has_footer;
	struct atf_detail_footer footer;
	bool recovered;
	uint64_t count;
	uint64_t torn_bytes;
	uint64_t events_offset;
	uint64_t bytes_length;      /* bytes of whole records */
	uint32_t uniform_len;       /* non-zero: every record has this length, so seq -> offset is a multiply */
	uint64_t *offsets;          /* otherwise: offset of each record (built once at open) */
};

int atf_detail_open(struct atf_detail_file *f, const char *path, unsigned flags, struct atf_diag *diag);
void atf_detail_close(struct atf_detail_file *f);

/** atf_detail_get - decode detail event @seq in O(1); -ATF_E_RANGE when out of range. */
int atf_detail_get(const struct atf_detail_file *f, uint64_t seq, struct atf_detail_event *out);

/* ---- manifest (user/atf/manifest.c) ------------------------------------------------------------ */

struct atf_module {
	uint32_t module_id;         /* FNV-1a-32 of the lower-cased path (0 -> 0x9E3779B9) */
	char *path;
	uint64_t base_address;      /* 0 when unknown */
	uint64_t size;
	char *build_id;             /* hex, or NULL */
};

struct atf_symbol {
	uint64_t function_id;       /* module_id << 32 | symbol_index */
	uint32_t module_id;
	uint32_t symbol_index;      /* from 1 */
	char *name;                 /* raw bytes as in the ELF file (may be non-UTF-8) */
	char *demangled;            /* C++ demangled, or NULL */
	uint64_t address;           /* st_value, 0 when unknown */
	uint64_t size;
	char *simple;               /* demangled without parameters (ATF_NAMES_SIMPLE), made on first use */
	char **aliases;             /* other names of the same code: symbols at its address, the ifunc
				     * it implements (manifest "aliases", optional) */
	size_t naliases;
};

/* Why a call was not recorded by a record-time filter (= FILTERED_* in bpf/atftrace.h). */
enum { ATF_FILTERED_DEPTH, ATF_FILTERED_TIME, ATF_FILTERED_FUNCTION, ATF_FILTERED_TRACE_OFF,
       ATF_FILTERED_REASONS };

/** atf_filtered_key - the manifest key of a filtered-calls reason: "filtered_depth", ... */
const char *atf_filtered_key(unsigned reason);

struct atf_thread_info {
	uint32_t id;                /* thread_<id> directory; dense, in order of first appearance */
	uint32_t tid;               /* OS thread id in the recorder's pid namespace (host: host tid) */
	uint32_t ns_tid;            /* tid in the target's pid namespace, 0 when unknown */
	char *name;                 /* comm, or NULL */
	bool has_detail;
	uint64_t index_events;
	uint64_t detail_events;
	/*
	 * Events of this thread that were not written. A lost CALL takes its RETURN with it, so
	 * the thread's events = index_events + 2 * lost_calls + lost_returns; each lost RETURN (or
	 * EXCEPTION) leaves its recorded CALL without an end, which verify accepts exactly that often.
	 */
	uint64_t lost_calls;
	uint64_t lost_returns;
	/*
	 * Calls the record-time filters left out on purpose (record -D, -t, -F, -N, -T, --trace),
	 * by reason (ATF_FILTERED_*): not losses, and nothing of them is in the files.
	 */
	uint64_t filtered[ATF_FILTERED_REASONS];
	/* when the first and the last of those were made (absolute, as time_start_ns), 0 if none */
	uint64_t lost_first_ns, lost_last_ns;
};

struct atf_manifest {
	char *format_version;       /* "2.1" */
	uint8_t clock_type;
	uint64_t time_start_ns, time_end_ns;
	/* ours */
	uint32_t pid, ns_pid;
	char *process_name;
	char **argv; size_t argc;
	uint64_t lost_events;       /* index events not written (a lost CALL counts with its RETURN) */
	uint64_t lost_detail;       /* detail records not written */
	uint64_t lost_records;      /* other ring records not written (thread exit/fork/exec, ...) */
	char *kernel, *host, *atftrace_version;
	char *start_time;           /* ISO-8601 UTC wall clock */
	char *end_reason;           /* "target exited", "signal", "duration", ... */
	/* record-time filters: the options as given (NULL: none), -t's threshold, and the calls
	 * of the whole process left out by reason (threads without files included) */
	char *record_filter;
	uint64_t filter_min_ns;
	uint64_t filtered[ATF_FILTERED_REASONS];

	struct atf_thread_info *threads; size_t nthreads;
	struct atf_module *modules; size_t nmodules;
	struct atf_symbol *symbols; size_t nsymbols;
	bool symbols_sorted;        /* internal: symbols sorted by function_id for lookup */
};

/** atf_module_id - FNV-1a-32 of the lower-cased @path, never 0. */
uint32_t atf_module_id(const char *path);

struct atf_manifest *atf_manifest__new(void);
void atf_manifest__free(struct atf_manifest *m);
/* Builders copy their string arguments. They return the new element or NULL on ENOMEM. */
struct atf_thread_info *atf_manifest__add_thread(struct atf_manifest *m, uint32_t id, uint32_t tid, const char *name);
struct atf_module *atf_manifest__add_module(struct atf_manifest *m, const char *path);
struct atf_symbol *atf_manifest__add_symbol(struct atf_manifest *m, uint32_t module_id, uint32_t symbol_index, const char *name);

/** atf_symbol__add_alias - add @name to @s's aliases unless it is its name or already there. */
int atf_symbol__add_alias(struct atf_symbol *s, const char *name);

/**
 * atf_symbol__matches - the one name resolver of the reading commands: whether @pattern (a glob
 * with @glob, else an exact name) names @s by any of its names: the symbol's, its demangled and
 * simple forms, and its aliases; a version suffix ("malloc@@GLIBC_2.2.5") is ignored on either
 * side when the other has none.
 */
bool atf_symbol__matches(struct atf_symbol *s, const char *pattern, bool glob);

/**
 * atf_manifest__load - parse manifest.json (reference schema 2.0/2.1 plus ours)
 * Names that are not valid UTF-8 are stored as a lossy "name" plus an exact "name_hex",
 * which the loader prefers, so any byte string round-trips.
 */
int atf_manifest__load(struct atf_manifest **out, const char *path, struct atf_diag *diag);

/** atf_manifest__save - write atomically (temp file, fsync, rename). */
int atf_manifest__save(const struct atf_manifest *m, const char *path);

/** atf_manifest__symbol - symbol for @function_id, or NULL; O(log n). */
const struct atf_symbol *atf_manifest__symbol(struct atf_manifest *m, uint64_t function_id);

/* ---- session (user/atf/atf_session.c) ---------------------------------------------------------- */

struct atf_thread {
	uint32_t id;                /* thread_<id> */
	uint32_t tid;
	const char *name;           /* from the manifest, or NULL */
	struct atf_index_file index;
	bool has_detail;
	struct atf_detail_file detail;
};

struct atf_args;

struct atf_session {
	char *dir;                  /* the process directory holding manifest.json */
	struct atf_manifest *manifest;
	struct atf_thread *threads;
	size_t nthreads;
	struct atf_args *args;      /* typed-argument specs (args.txt, include/atf_args.h), or NULL */
};

/**
 * atf_session__open - open a process directory (<session>/pid_N, holding manifest.json)
 * and every thread listed in its manifest. @flags as for atf_index_open.
 */
int atf_session__open(struct atf_session **out, const char *dir, unsigned flags, struct atf_diag *diag);
void atf_session__close(struct atf_session *s);

/**
 * atf_session_resolve - list the process directories under @path
 * @path may be a process directory itself, or a session directory holding pid_* directories.
 * Returns the number found (>= 1) with *@dirs an array of malloc'd paths, or a negative error.
 */
int atf_session_resolve(const char *path, char ***dirs);
void atf_session_resolve_free(char **dirs, int n);

/* How atf_session__name shows C++ names; set once by a command (--demangle, --no-demangle). */
enum atf_name_style {
	ATF_NAMES_DEMANGLED = 0,    /* "ns::Cls<int>::method(int, char const*)": the default */
	ATF_NAMES_SIMPLE,           /* "ns::Cls::method": no parameter lists, no template arguments */
	ATF_NAMES_RAW,              /* "_ZN2ns3ClsIiE6methodEiPKc": the ELF name */
};
void atf_set_name_style(enum atf_name_style style);

/**
 * atf_name_simple - @demangled without its parameter lists and template arguments (uftrace's
 * --demangle=simple): "a::B<int>::f(int) const" -> "a::B::f"; operator names are kept whole.
 * Returns a malloc'd string, or NULL on ENOMEM.
 */
char *atf_name_simple(const char *demangled);

/**
 * atf_session__name - display name for @function_id: symbol (demangled when known, as the name
 * style says) or "0x%llx".
 */
const char *atf_session__name(struct atf_session *s, uint64_t function_id, char *buf, size_t buflen);

/* ---- k-way merge by timestamp (user/atf/atf_merge.c) ------------------------------------------- */

struct atf_merge_event {
	uint32_t thread;            /* index into session->threads */
	uint64_t seq;               /* index_seq within that thread */
	struct atf_index_event ev;
};

struct atf_merge;

/**
 * atf_merge__new - iterate events of @s in timestamp order across threads
 * Only events with from_ns <= ts <= to_ns (to_ns = UINT64_MAX for no limit); @thread_id
 * selects a single thread directory id, or -1 for all. Ties keep thread order, then seq.
 * Memory is O(threads), whatever the session length.
 */
int atf_merge__new(struct atf_merge **out, const struct atf_session *s, uint64_t from_ns,
		   uint64_t to_ns, int64_t thread_id);
/** atf_merge__next - 1 with *@out filled, 0 at the end. */
int atf_merge__next(struct atf_merge *m, struct atf_merge_event *out);
void atf_merge__free(struct atf_merge *m);

/* ---- verify and recover (user/atf/atf_verify.c, user/atf/atf_recover.c) ---------------------------- */

/**
 * atf_session_verify - check one process directory completely: headers, footers, counts,
 * CRCs, time order, nesting (returns match calls, depths consistent; EXCEPTION closes a frame),
 * links both ways, function ids in the manifest. 0 when consistent; else the first problem in @diag.
 */
int atf_session_verify(const char *dir, struct atf_diag *diag);

/**
 * atf_file_recover - rewrite the header and footer of an index or detail file from its whole
 * records, dropping a torn tail; atomic (new file, fsync, rename). Returns 1 if the file was
 * rewritten, 0 if it was already valid, -ATF_E_CRC (file left as it is) if it has a footer that
 * its events do not match: corruption, which recovery must not seal with a new checksum.
 */
int atf_file_recover(const char *path, struct atf_diag *diag);

/**
 * atf_thread_recover_links - after atf_file_recover() of both files of a thread: drop the detail
 * records whose index event was cut off the index, and clear the link (ATF_NO_DETAIL) of index
 * events whose detail record was cut off, so that the thread verifies. No index event is lost.
 * Returns 1 if a file was rewritten, 0 if the links were whole, or a negative error.
 */
int atf_thread_recover_links(const char *index_path, const char *detail_path, struct atf_diag *diag);

#endif
