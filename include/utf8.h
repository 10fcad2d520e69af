/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 checks and repair for names that come from ELF files, /proc and the command line, which
 * may hold any bytes. Every writer of a format that requires UTF-8 (JSON, protobuf strings,
 * CBOR text, dial9 pool strings, the manifest's lossy keys) repairs names the same way: each
 * maximal invalid subpart becomes one U+FFFD (Unicode §3.9, "substitution of maximal subparts",
 * also what WHATWG TextDecoder and Python's errors="replace" do).
 */
#ifndef ATFTRACE_UTF8_H
#define ATFTRACE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Worst-case output sizes: an invalid byte becomes 3 bytes, a control character "\u00XX". */
#define UTF8_LOSSY_BOUND(len)   ((len) * 3)
#define UTF8_JSON_BOUND(len)    ((len) * 6 + 2)

/**
 * utf8_seq - length (1-4) of the well-formed UTF-8 sequence at @p, of which @n >= 1 bytes may be
 * read; or 0 with *@skip set to the length of its maximal invalid subpart (1-3 bytes), which a
 * lossy copy replaces with one U+FFFD. Rejects overlongs, surrogates and values past U+10FFFF.
 */
unsigned utf8_seq(const uint8_t *p, size_t n, unsigned *skip);

/** utf8_valid - whether the @len bytes at @s are well-formed UTF-8 (NUL bytes are valid). */
bool utf8_valid(const char *s, size_t len);

/**
 * utf8_put_lossy - copy the @len bytes at @s to @out with each maximal invalid subpart replaced
 * by U+FFFD. @out needs UTF8_LOSSY_BOUND(@len) bytes; nothing is NUL-terminated.
 * Returns the end of what was written.
 */
char *utf8_put_lossy(char *out, const char *s, size_t len);

/** utf8_lossy_dup - malloc'd NUL-terminated lossy copy of @s (see utf8_put_lossy), or NULL. */
char *utf8_lossy_dup(const char *s);

/**
 * utf8_put_json - the @len bytes at @s as a quoted JSON string: '"' and '\\' escaped, control
 * characters as \n \t \r \b \f or \u00xx, invalid UTF-8 repaired as utf8_put_lossy does, so the
 * result is always valid JSON. @out needs UTF8_JSON_BOUND(@len) bytes; returns its new end.
 */
char *utf8_put_json(char *out, const char *s, size_t len);

#endif
