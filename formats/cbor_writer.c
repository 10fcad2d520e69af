// SPDX-License-Identifier: MIT
/* Minimal CBOR writer (see cbor_writer.h). Big-endian heads, shortest argument encoding. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "byteorder.h"
#include "cbor_writer.h"

bool cbw_reserve(struct cbor_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return false;
	if (b->len + n <= b->cap)
		return true;
	for (cap = b->cap ? b->cap : 4096; cap < b->len + n; cap *= 2)
		;
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void cbw_head(struct cbor_buf *b, unsigned major, uint64_t v)
{
	uint8_t *p;

	if (!cbw_reserve(b, 9))
		return;
	p = b->data + b->len;
	major <<= 5;
	if (v < 24) {
		p[0] = (uint8_t)(major | v);
		b->len += 1;
	} else if (v <= UINT8_MAX) {
		p[0] = (uint8_t)(major | 24);
		p[1] = (uint8_t)v;
		b->len += 2;
	} else if (v <= UINT16_MAX) {
		p[0] = (uint8_t)(major | 25);
		put_be16(p + 1, (uint16_t)v);
		b->len += 3;
	} else if (v <= UINT32_MAX) {
		p[0] = (uint8_t)(major | 26);
		put_be32(p + 1, (uint32_t)v);
		b->len += 5;
	} else {
		p[0] = (uint8_t)(major | 27);
		put_be64(p + 1, v);
		b->len += 9;
	}
}

void cbw_raw(struct cbor_buf *b, const void *p, size_t n)
{
	if (!cbw_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void cbw_text(struct cbor_buf *b, const char *s, size_t n)
{
	cbw_head(b, CBOR_MAJOR_TEXT, n);
	cbw_raw(b, s, n);
}

void cbw_int(struct cbor_buf *b, int64_t v)
{
	if (v >= 0)
		cbw_head(b, CBOR_MAJOR_UINT, (uint64_t)v);
	else
		cbw_head(b, CBOR_MAJOR_NINT, (uint64_t)(-1 - v));
}

void cbw_free(struct cbor_buf *b)
{
	free(b->data);
	*b = (struct cbor_buf){ 0 };
}
