/* SPDX-License-Identifier: MIT */
/*
 * Private helpers of libatf's file code (atf_reader.c, atf_recover.c, atf_writer.c, manifest_save.c).
 * Creating files safely is atf_file.h, which the recorder and the exporters use too.
 */
#ifndef ATFTRACE_ATF_INT_H
#define ATFTRACE_ATF_INT_H

#include <stddef.h>
#include <stdint.h>
#include "atf.h"
#include "atf_file.h"     /* atf_write_all */

/**
 * atf_diag_set - fill @d (when not NULL) with @err, @path, @offset and a printf message.
 * Returns @err, so a failure path reads "return atf_diag_set(...)".
 */
int atf_diag_set(struct atf_diag *d, const char *path, int err, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
