// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a manifest.json of any bytes. The loader must refuse it or build a manifest
 * whose lookups work and which saves and loads back to the same threads, modules and symbols.
 */
#include "atf.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct atf_manifest *m = NULL, *again = NULL;
	char path[512], copy[512];

	fuzz_path(path, sizeof(path), "pid_1/manifest.json");
	fuzz_path(copy, sizeof(copy), "copy.json");
	fuzz_write(path, data, size);
	if (atf_manifest__load(&m, path, NULL))
		return 0;
	for (size_t i = 0; i < m->nsymbols; i++)
		if (!atf_manifest__symbol(m, m->symbols[i].function_id))
			abort();
	(void)atf_manifest__symbol(m, 0);
	if (atf_manifest__save(m, copy) == 0) {
		if (atf_manifest__load(&again, copy, NULL))
			abort();
		if (again->nthreads != m->nthreads || again->nmodules != m->nmodules ||
		    again->nsymbols != m->nsymbols || again->argc != m->argc)
			abort();
		atf_manifest__free(again);
	}
	atf_manifest__free(m);
	return 0;
}
