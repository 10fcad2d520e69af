/* SPDX-License-Identifier: MIT */
/*
 * Minimal CBOR (RFC 8949) writer into a growable buffer: just the items the ZTS0 exporter
 * emits. Errors are sticky (b->err), so callers check once after a batch of puts.
 */
#ifndef ATFTRACE_CBOR_WRITER_H
#define ATFTRACE_CBOR_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CBOR_MAJOR_UINT  0
#define CBOR_MAJOR_NINT  1
#define CBOR_MAJOR_BYTES 2
#define CBOR_MAJOR_TEXT  3
#define CBOR_MAJOR_ARRAY 4
#define CBOR_MAJOR_MAP   5
#define CBOR_MAJOR_TAG   6

struct cbor_buf {
	uint8_t *data;
	size_t len, cap;
	int err;                /* first error (-ENOMEM), sticky */
};

/** cbw_reserve - make room for @n more bytes; false (and b->err set) when out of memory. */
bool cbw_reserve(struct cbor_buf *b, size_t n);
/** cbw_head - an item head: major type @major with argument @v in the shortest form. */
void cbw_head(struct cbor_buf *b, unsigned major, uint64_t v);
/** cbw_raw - append @n bytes as they are (e.g. the 0x9f / 0xff of indefinite arrays). */
void cbw_raw(struct cbor_buf *b, const void *p, size_t n);
/** cbw_text - a text string of @n bytes (the caller vouches for UTF-8). */
void cbw_text(struct cbor_buf *b, const char *s, size_t n);
/** cbw_int - a signed integer: major 0 when >= 0, else major 1. */
void cbw_int(struct cbor_buf *b, int64_t v);
void cbw_free(struct cbor_buf *b);

static inline void cbw_uint(struct cbor_buf *b, uint64_t v) { cbw_head(b, CBOR_MAJOR_UINT, v); }
static inline void cbw_tag(struct cbor_buf *b, uint64_t tag) { cbw_head(b, CBOR_MAJOR_TAG, tag); }
static inline void cbw_map(struct cbor_buf *b, uint64_t n) { cbw_head(b, CBOR_MAJOR_MAP, n); }
static inline void cbw_array(struct cbor_buf *b, uint64_t n) { cbw_head(b, CBOR_MAJOR_ARRAY, n); }
static inline void cbw_array_indef(struct cbor_buf *b) { cbw_raw(b, "\x9f", 1); }
static inline void cbw_break(struct cbor_buf *b) { cbw_raw(b, "\xff", 1); }
static inline void cbw_bool(struct cbor_buf *b, bool v) { cbw_raw(b, v ? "\xf5" : "\xf4", 1); }

#endif
