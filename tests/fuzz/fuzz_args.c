// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: an args.txt of any bytes, then (after a NUL) a detail record's string block
 * of any bytes. The loader must refuse the file or give specs that print without overrunning
 * and that format back to text it parses again to the same text; the block must be refused or
 * give strings inside it.
 */
#include "atf_args.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size;
	const uint8_t *block = nul ? nul + 1 : data + size;
	size_t blen = (size_t)(data + size - block);
	struct atf_arg_str strs[ATF_ARGS_MAX_STR];
	struct atf_args *set = NULL;
	uint64_t gp[8] = { 0, 1, (uint64_t)-1, 0x7fffffff, 0x80000000, 100001, 'a', 0 };
	char path[512], buf[256], spec[4096];
	int n = atf_args_strings(block, blen, strs);

	for (int i = 0; i < n; i++)
		if (strs[i].bytes < block || strs[i].bytes + strs[i].len > block + blen)
			abort();
	fuzz_path(path, sizeof(path), "args.txt");
	fuzz_write(path, data, tlen);
	if (atf_args_load(fuzz_dir(), &set) || !set)
		return 0;
	for (size_t i = 0; i < set->nfn; i++) {
		const struct atf_arg_spec *s = &set->fn[i].spec;
		struct atf_arg_spec again = { .n = 0 };
		char err[256], spec2[4096];

		atf_args_format_call(set, s, gp, 8, strs, n > 0 ? n : 0, buf, sizeof(buf));
		if (strlen(buf) >= sizeof(buf))
			abort();
		atf_args_format_ret(set, s, gp[2], strs, n > 0 ? n : 0, buf, sizeof(buf));
		if (!atf_arg_spec_format(s, spec, sizeof(spec)) || !s->n)
			continue;
		if (atf_arg_spec_parse(spec, &again, err, sizeof(err)) ||
		    !atf_arg_spec_format(&again, spec2, sizeof(spec2)) || strcmp(spec, spec2))
			abort();
		atf_arg_spec_free(&again);
	}
	atf_args_free(set);
	return 0;
}
