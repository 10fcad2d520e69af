// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a whole process directory. The input is split into manifest.json, index.atf
 * and detail.atf (two little-endian u16 lengths first; the rest is the detail file). verify,
 * the session reader, the k-way merge and name lookup must never crash, whatever they hold.
 */
#include "atf.h"
#include "fuzz_common.h"

static size_t take(const uint8_t **data, size_t *size)
{
	size_t n;

	if (*size < 2)
		return 0;
	n = (size_t)(*data)[0] | (size_t)(*data)[1] << 8;
	*data += 2;
	*size -= 2;
	return n < *size ? n : *size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char mpath[512], ipath[512], dpath[512], dir[512], name[128];
	size_t mlen = take(&data, &size), ilen;
	const uint8_t *manifest = data;
	struct atf_session *s = NULL;
	struct atf_merge *mg = NULL;
	struct atf_merge_event ev;

	data += mlen, size -= mlen;
	ilen = take(&data, &size);
	fuzz_path(dir, sizeof(dir), "pid_1");
	fuzz_write(fuzz_path(mpath, sizeof(mpath), "pid_1/manifest.json"), manifest, mlen);
	fuzz_write(fuzz_path(ipath, sizeof(ipath), "pid_1/thread_0/index.atf"), data, ilen);
	fuzz_write(fuzz_path(dpath, sizeof(dpath), "pid_1/thread_0/detail.atf"), size > ilen ? data + ilen : NULL,
		   size > ilen ? size - ilen : 0);
	(void)atf_session_verify(dir, NULL);
	if (atf_session__open(&s, dir, 0, NULL))
		return 0;
	if (atf_merge__new(&mg, s, 0, UINT64_MAX, -1) == 0) {
		for (int i = 0; i < 100000 && atf_merge__next(mg, &ev) == 1; i++)
			(void)atf_session__name(s, ev.ev.function_id, name, sizeof(name));
		atf_merge__free(mg);
	}
	atf_session__close(s);
	return 0;
}
