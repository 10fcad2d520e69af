// SPDX-License-Identifier: MIT
/* Escaping of the target's names for a terminal, and plurals (textfmt.h). */
#include <string.h>
#include "textfmt.h"
#include "utf8.h"

/* Writes the escaped form of the one character at @p (@n bytes left) to @out (8 bytes free);
 * returns the bytes written and sets *@used to the input bytes it stands for. */
static size_t escape_one(const unsigned char *p, size_t n, char *out, size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	unsigned skip = 1, len = utf8_seq(p, n, &skip);

	*used = len ? len : skip;
	if (len == 1 && p[0] >= 0x20 && p[0] != 0x7f) {
		out[0] = (char)p[0];
		return 1;
	}
	if (len == 1 && (p[0] == '\n' || p[0] == '\r' || p[0] == '\t')) {
		out[0] = '\\';
		out[1] = p[0] == '\n' ? 'n' : p[0] == '\r' ? 'r' : 't';
		return 2;
	}
	if (len > 1 && !(len == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {     /* not a C1 control */
		memcpy(out, p, len);
		return len;
	}
	/* a control character, or the first byte of invalid UTF-8 (the rest come next, one by one) */
	*used = len == 2 ? 2 : 1;
	for (size_t i = 0, o = 0;; i++) {
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[p[i] >> 4];
		out[o++] = hex[p[i] & 15];
		if (i + 1 == *used)
			return o;
	}
}

/* The length of @p's escaped form. */
static size_t escaped_len(const unsigned char *p, size_t n)
{
	size_t total = 0;

	while (n) {
		char piece[8];
		size_t used;

		total += escape_one(p, n, piece, &used);
		p += used;
		n -= used;
	}
	return total;
}

char *textfmt_escape(char *buf, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "-");
	size_t n = strlen((const char *)p), o = 0, room;

	if (len < 4) {
		if (len)
			buf[0] = '\0';
		return buf;
	}
	room = escaped_len(p, n) < len ? len : len - 3;  /* cut: keep room for "..." */
	while (n) {
		char piece[8];
		size_t used, w = escape_one(p, n, piece, &used);

		if (o + w + 1 > room) {          /* keep room for "..." and the NUL */
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, piece, w);
		o += w;
		p += used;
		n -= used;
	}
	buf[o] = '\0';
	return buf;
}

const char *textfmt_show(const char *s)
{
	static char slots[TEXTFMT_SLOTS][4096];
	static unsigned next;

	return textfmt_escape(slots[next++ % TEXTFMT_SLOTS], sizeof(slots[0]), s);
}

void textfmt_fputs(const char *s, FILE *f)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "-");
	size_t n = strlen((const char *)p);

	while (n) {
		char piece[8];
		size_t used, w = escape_one(p, n, piece, &used);

		fwrite(piece, 1, w, f);
		p += used;
		n -= used;
	}
}
