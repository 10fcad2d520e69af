/* SPDX-License-Identifier: MIT */
/*
 * Text for a terminal: the one escaping of names and command lines that come from the traced
 * program (process names, argv, symbol names, module paths), so that a control character in
 * them (an OSC title, a clear-screen) is shown, never obeyed; and plural nouns.
 */
#ifndef ATFTRACE_TEXTFMT_H
#define ATFTRACE_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/**
 * textfmt_escape - @s made safe to print into @buf of @len bytes (NUL-terminated, cut with
 * "..." when it does not fit): \n \r \t as such, every other C0 control, DEL,
 * C1 control (U+0080..U+009F) and byte of invalid UTF-8 as \xNN. Valid UTF-8 text, a
 * backslash included, is kept (names with a backslash are rare; escaping it would garble them).
 * A NULL @s gives "-". Returns @buf.
 */
char *textfmt_escape(char *buf, size_t len, const char *s);

/**
 * textfmt_show - textfmt_escape() into one of TEXTFMT_SLOTS static buffers used in turn, for
 * printf arguments: at most TEXTFMT_SLOTS results of one call are alive at once. Not thread-safe.
 */
const char *textfmt_show(const char *s);
#define TEXTFMT_SLOTS 8

/** textfmt_fputs - textfmt_escape() of @s, whatever its length, to @f. */
void textfmt_fputs(const char *s, FILE *f);

/** textfmt_plural - @one when @n is 1, else @many: "1 function", "2 functions". */
static inline const char *textfmt_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

#endif
