/* SPDX-License-Identifier: MIT */
/* Private helpers of user/manifest*.c: UTF-8 checks and the "<key>_hex" byte encoding. */
#ifndef ATFTRACE_MANIFEST_INT_H
#define ATFTRACE_MANIFEST_INT_H

#include <stdbool.h>

/** manifest_utf8_valid - whether @s is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool manifest_utf8_valid(const char *s);
/** manifest_utf8_lossy - malloc'd copy of @s with each byte outside valid UTF-8 replaced by U+FFFD. */
char *manifest_utf8_lossy(const char *s);
/** manifest_hex_encode - malloc'd lowercase hex of the bytes of @s. */
char *manifest_hex_encode(const char *s);
/**
 * manifest_hex_decode - bytes of the even-length hex string @h as a NUL-terminated string
 * Returns NULL for bad hex or a 00 byte (which a C string cannot hold); *@nomem set on ENOMEM.
 */
char *manifest_hex_decode(const char *h, bool *nomem);

#endif
