// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: an index.atf file of any bytes. Lenient and strict opens must never crash,
 * every readable event decodes, and recovery must either refuse the file or leave one that a
 * strict, CRC-checking open accepts with the same events.
 */
#include "atf.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct atf_index_file f;
	struct atf_index_event ev;
	char path[512];
	uint64_t count = 0, last_ts = 0;
	int rc;

	fuzz_path(path, sizeof(path), "pid_1/thread_0/index.atf");
	fuzz_write(path, data, size);
	if (atf_index_open(&f, path, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL) == 0)
		atf_index_close(&f);
	if (atf_index_open(&f, path, 0, NULL) == 0) {
		count = f.count;
		for (uint64_t i = 0; i < f.count; i++)
			atf_index_get(&f, i, &ev);
		if (f.count) {
			atf_index_get(&f, f.count - 1, &ev);
			last_ts = ev.timestamp_ns;
			(void)atf_index_lower_bound(&f, last_ts / 2);
		}
		atf_index_close(&f);
	}
	rc = atf_file_recover(path, NULL);
	/* recovery tells the kinds apart by magic: the other kind is fuzz_detail's */
	if (rc < 0 || size < 4 || memcmp(data, ATF_INDEX_MAGIC, 4))
		return 0;
	/* recovered (or already whole): strictly valid, nothing readable lost */
	if (atf_index_open(&f, path, ATF_OPEN_STRICT | ATF_OPEN_CHECK_CRC, NULL) != 0)
		abort();
	if (f.count != count)
		abort();
	if (f.count) {
		atf_index_get(&f, f.count - 1, &ev);
		if (ev.timestamp_ns != last_ts)
			abort();
	}
	atf_index_close(&f);
	return 0;
}
