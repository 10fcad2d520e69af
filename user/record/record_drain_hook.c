// SPDX-License-Identifier: MIT
/*
 * One hook that the recorder runs at the end of each drain (include/recorder.h): a layer above
 * it acts on what BPF noted meanwhile, outside the ring (record --call-sites hands functions
 * back there: user/cmd/record_call_sites.c).
 */
#include "recorder_int.h"

void recorder__on_drain(struct recorder *r, recorder_drain_fn fn, void *ctx)
{
	if (!r)
		return;
	r->drain_fn = fn;
	r->drain_ctx = ctx;
}

void rec_drain_hook_run(struct recorder *r)
{
	if (r->drain_fn)
		r->drain_fn(r->drain_ctx);
}
