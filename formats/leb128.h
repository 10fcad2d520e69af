/* SPDX-License-Identifier: MIT */
/* Unsigned LEB128 (7 bits a byte, least significant group first, MSb = "more bytes follow"). */
#ifndef ATFTRACE_LEB128_H
#define ATFTRACE_LEB128_H

#include <stddef.h>
#include <stdint.h>

#define ULEB128_MAX_LEN 10      /* enough for any uint64_t */

/** uleb128_size - bytes uleb128_put() writes for @v. */
static inline size_t uleb128_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/** uleb128_put - encode @v at @p (room for ULEB128_MAX_LEN bytes); returns the bytes written. */
static inline size_t uleb128_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/**
 * uleb128_get - decode one value from [@p, @end)
 * Returns the bytes consumed, or 0 when the value is truncated or longer than 64 bits.
 */
static inline size_t uleb128_get(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	size_t n = 0;

	while (p + n < end && n < ULEB128_MAX_LEN) {
		uint8_t b = p[n++];

		if (shift == 63 && (b & 0x7e))
			return 0;               /* bits beyond 64 */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return n;
		}
		shift += 7;
	}
	return 0;
}

#endif
