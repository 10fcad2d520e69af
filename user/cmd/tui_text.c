// SPDX-License-Identifier: MIT
/*
 * Names for the tui's screen (tui.h: tui_escape): the one escaping every view and the search
 * line use, below the views (tui_model.c, tui_timeline.c) that call it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "tui.h"
#include "utf8.h"

/* ---- names for the screen ----------------------------------------------------------------- */

void tui_escape(char *out, size_t len, const char *in, bool utf8)
{
	const uint8_t *end = (const uint8_t *)in + strlen(in);
	size_t o = 0;

	if (!len)
		return;
	for (const uint8_t *p = (const uint8_t *)in; *p;) {
		unsigned skip = 1, seq = *p < 0x80 ? 1 : utf8 ? utf8_seq(p, (size_t)(end - p), &skip) : 0;
		char esc[8];
		const char *put = esc;
		size_t plen;

		if (seq == 1 && *p >= 0x20 && *p != 0x7f) {
			put = (const char *)p, plen = 1;
		} else if (seq == 2 && p[0] == 0xc2 && p[1] < 0xa0) {      /* C1: U+0080..U+009F */
			plen = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", p[1]);
		} else if (seq > 1) {
			put = (const char *)p, plen = seq;
		} else {
			plen = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", *p);
			seq = 1;                /* byte by byte: each byte that is not a character shows */
		}
		if (o + plen >= len)
			break;
		memcpy(out + o, put, plen);
		o += plen;
		p += seq;
	}
	out[o] = '\0';
}
