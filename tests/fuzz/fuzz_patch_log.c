// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a trampoline area's patch log (user/probe/patch_log.c) of any bytes, as
 * `atftrace restore` reads it out of another process. The decoder must refuse it or return a
 * log whose records are in range and which encodes back to the very same bytes.
 */
#include <stdlib.h>
#include <string.h>
#include "../../user/probe/patch_log.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct patch_log log;
	uint8_t *again;

	if (patch_log_decode(data, size, &log) != PATCH_LOG_OK) {
		if (log.records)
			abort();
		return 0;
	}
	for (uint32_t i = 0; i < log.nrecords; i++) {
		const struct patch_record *r = &log.records[i];
		uint8_t out[PATCH_LOG_MAX_BYTES];

		if (!r->len || r->len > PATCH_LOG_MAX_BYTES)
			abort();
		/* its own written bytes are ours, its original bytes are not to be written */
		if (patch_log_unpatch(r, r->written, out) != PATCH_NOW_OURS ||
		    memcmp(out, r->orig, r->len) ||
		    patch_log_unpatch(r, r->orig, out) == PATCH_NOW_FOREIGN)
			abort();
	}
	again = malloc(log.header_size);
	if (!again || patch_log_encode(&log, again, log.header_size) != PATCH_LOG_OK ||
	    memcmp(again, data, log.header_size))
		abort();
	free(again);
	patch_log_free(&log);
	return 0;
}
