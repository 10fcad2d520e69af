// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a detail.atf file of any bytes. Lenient and strict opens must never crash,
 * every readable record decodes within the file, and recovery must either refuse the file or
 * leave one that a strict, CRC-checking open accepts with the same records.
 */
#include "atf.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct atf_detail_file f;
	struct atf_detail_event ev;
	char path[512];
	uint64_t count = 0;
	volatile uint8_t sink = 0;
	int rc;

	fuzz_path(path, sizeof(path), "pid_1/thread_0/detail.atf");
	fuzz_write(path, data, size);
	if (atf_detail_open(&f, path, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL) == 0)
		atf_detail_close(&f);
	if (atf_detail_open(&f, path, 0, NULL) == 0) {
		count = f.count;
		for (uint64_t i = 0; i < f.count; i++) {
			if (atf_detail_get(&f, i, &ev))
				abort();        /* every counted record is readable */
			if (ev.has_payload && ev.payload.stack_size)        /* the stack lies in the file */
				sink ^= ev.stack[0] ^ ev.stack[ev.payload.stack_size - 1];
		}
		if (atf_detail_get(&f, f.count, &ev) != -ATF_E_RANGE)
			abort();
		atf_detail_close(&f);
	}
	(void)sink;
	rc = atf_file_recover(path, NULL);
	/* recovery tells the kinds apart by magic: the other kind is fuzz_index's */
	if (rc < 0 || size < 4 || memcmp(data, ATF_DETAIL_MAGIC, 4))
		return 0;
	if (atf_detail_open(&f, path, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL) != 0)
		abort();
	if (f.count != count)
		abort();
	atf_detail_close(&f);
	return 0;
}
