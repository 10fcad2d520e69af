/* SPDX-License-Identifier: MIT */
/* Private helpers of user/manifest*.c: the "<key>_hex" byte encoding (UTF-8 checks: utf8.h). */
#ifndef ATFTRACE_MANIFEST_INT_H
#define ATFTRACE_MANIFEST_INT_H

#include <stdbool.h>

/** manifest_hex_encode - malloc'd lowercase hex of the bytes of @s. */
char *manifest_hex_encode(const char *s);
/**
 * manifest_hex_decode - bytes of the even-length hex string @h as a NUL-terminated string
 * Returns NULL for bad hex or a 00 byte (which a C string cannot hold); *@nomem set on ENOMEM.
 */
char *manifest_hex_decode(const char *h, bool *nomem);

#endif
