// SPDX-License-Identifier: MIT
/* UTF-8 validation, lossy repair and JSON quoting shared by the exporters and the manifest (utf8.h). */
#include <stdlib.h>
#include <string.h>
#include "utf8.h"

#define REPLACEMENT "\xEF\xBF\xBD"     /* U+FFFD */

unsigned utf8_seq(const uint8_t *p, size_t n, unsigned *skip)
{
	uint8_t b = p[0], lo = 0x80, hi = 0xBF;
	unsigned need;

	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF) {
		need = 1;
	} else if (b >= 0xE0 && b <= 0xEF) {
		need = 2;
		lo = b == 0xE0 ? 0xA0 : 0x80;   /* no overlongs */
		hi = b == 0xED ? 0x9F : 0xBF;   /* no surrogates */
	} else if (b >= 0xF0 && b <= 0xF4) {
		need = 3;
		lo = b == 0xF0 ? 0x90 : 0x80;   /* no overlongs */
		hi = b == 0xF4 ? 0x8F : 0xBF;   /* nothing past U+10FFFF */
	} else {
		*skip = 1;
		return 0;
	}
	for (unsigned i = 1; i <= need; i++) {
		if (i >= n || p[i] < lo || p[i] > hi) {
			*skip = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return need + 1;
}

bool utf8_valid(const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	unsigned skip, n;

	for (size_t i = 0; i < len; i += n)
		if (!(n = utf8_seq(p + i, len - i, &skip)))
			return false;
	return true;
}

char *utf8_put_lossy(char *out, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;

	for (size_t i = 0; i < len;) {
		unsigned skip, n = utf8_seq(p + i, len - i, &skip);

		if (n) {
			memcpy(out, p + i, n);
			out += n;
			i += n;
		} else {
			memcpy(out, REPLACEMENT, 3);
			out += 3;
			i += skip;
		}
	}
	return out;
}

char *utf8_lossy_dup(const char *s)
{
	size_t len = strlen(s);
	char *out = malloc(UTF8_LOSSY_BOUND(len) + 1);

	if (out)
		*utf8_put_lossy(out, s, len) = '\0';
	return out;
}

char *utf8_put_json(char *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *in = (const uint8_t *)s;
	size_t i = 0;

	*out++ = '"';
	while (i < len) {
		uint8_t c = in[i];
		size_t run = i;

		if (c >= 0x80) {        /* a run of non-ASCII bytes: repaired as a whole */
			while (run < len && in[run] >= 0x80)
				run++;
			out = utf8_put_lossy(out, s + i, run - i);
			i = run;
			continue;
		}
		i++;
		if (c >= 0x20 && c != '"' && c != '\\') {
			*out++ = (char)c;
			continue;
		}
		*out++ = '\\';
		switch (c) {
		case '"': *out++ = '"'; break;
		case '\\': *out++ = '\\'; break;
		case '\n': *out++ = 'n'; break;
		case '\t': *out++ = 't'; break;
		case '\r': *out++ = 'r'; break;
		case '\b': *out++ = 'b'; break;
		case '\f': *out++ = 'f'; break;
		default:
			memcpy(out, "u00", 3);
			out[3] = hex[c >> 4];
			out[4] = hex[c & 15];
			out += 5;
		}
	}
	*out++ = '"';
	return out;
}
