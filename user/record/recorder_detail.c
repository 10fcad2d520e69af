// SPDX-License-Identifier: MIT
/*
 * Detail options of `atftrace record` (include/recorder_detail.h): which events get registers
 * and a stack snapshot (bpf/detail.bpf.h does the recording).
 *
 *   --detail=off|always       off (default): only inside trigger windows; always: every event
 *   --detail-on GLOB          a window opens on the thread that enters a matching function and
 *                             lasts until that call returns (its RETURN included) ...
 *   --detail-for DURATION     ... or, instead, this long after the trigger's call
 *   --detail-count N          ... or, instead, for N events (calls and returns) from that call
 *   --detail-after SEC        the global switch goes on SEC seconds after the probes are attached
 *   SIGUSR1                   flips the global switch (on <-> off), whatever turned it on
 *   --stack-bytes N           bytes of stack copied from the stack pointer up (0..256, default 256)
 *
 * The global switch and the windows add up: an event gets detail when either says so.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "recorder_detail.h"
#include "timefmt.h"

enum {
	OPT_DETAIL = 2000, OPT_DETAIL_ON, OPT_DETAIL_FOR, OPT_DETAIL_COUNT, OPT_DETAIL_AFTER,
	OPT_STACK_BYTES,
};

static const struct argp_option detail_options[] = {
	{ "detail", OPT_DETAIL, "off|always", 0,
	  "Record registers and a stack snapshot with every event (always), or only where a trigger "
	  "below or SIGUSR1 asks for it (off, the default)", 0 },
	{ "detail-on", OPT_DETAIL_ON, "[MODULE:]GLOB", 0,
	  "Record detail on the thread that calls a matching traced function, until that call "
	  "returns (repeatable)", 0 },
	{ "detail-for", OPT_DETAIL_FOR, "DURATION", 0,
	  "With --detail-on: instead, for DURATION after the call (e.g. 500ms, 2s; ns/us/ms/s)", 0 },
	{ "detail-count", OPT_DETAIL_COUNT, "N", 0,
	  "With --detail-on: instead, for N events (calls and returns) from the call on", 0 },
	{ "detail-after", OPT_DETAIL_AFTER, "SEC", 0,
	  "Turn detail on for every event SEC seconds after the probes are attached", 0 },
	{ "stack-bytes", OPT_STACK_BYTES, "N", 0,
	  "Bytes of stack copied from the stack pointer up with each detail record (0-256, default 256)", 0 },
	{ 0 }
};

/* "1.5", "250ms", "10us", "2s": a duration in ns; -EINVAL when malformed or not positive. */
static int push_glob(struct detail_args *d, const char *glob)
{
	char **n = realloc(d->on_globs, (d->non_globs + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	d->on_globs = n;
	if (!(n[d->non_globs] = strdup(glob)))
		return -ENOMEM;
	d->non_globs++;
	return 0;
}

int detail_add_on(struct detail_args *d, const char *glob)
{
	return push_glob(d, glob);
}

/* Each error: one line (argp_error), then EINVAL for callers that parse with ARGP_NO_EXIT. */
static error_t detail_parse(int key, char *arg, struct argp_state *state)
{
	struct detail_args *d = state->input;
	char *end;
	unsigned long long v;
	int err = 0;

	switch (key) {
	case ARGP_KEY_INIT:
		*d = (struct detail_args){ .after_s = -1, .stack_bytes = DETAIL_DEFAULT_STACK_BYTES };
		return 0;
	case OPT_DETAIL:
		if (strcmp(arg, "always") && strcmp(arg, "off")) {
			argp_error(state, "--detail: '%s' is not off or always", arg);
			return EINVAL;
		}
		d->always = !strcmp(arg, "always");
		return 0;
	case OPT_DETAIL_ON:
		if (push_glob(d, arg) < 0) {
			argp_failure(state, 1, ENOMEM, "--detail-on");
			return ENOMEM;
		}
		return 0;
	case OPT_DETAIL_FOR:
		if ((err = timefmt_parse(arg, TIMEFMT_S, &d->on_ns)) || !d->on_ns) {
			argp_error(state, "--detail-for: '%s' is not a positive duration (e.g. 500ms, 2s): %s", arg,
				   err ? timefmt_strerror(err) : "zero");
			return EINVAL;
		}
		return 0;
	case OPT_DETAIL_COUNT:
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v == 0) {
			argp_error(state, "--detail-count: '%s' is not a positive number of events", arg);
			return EINVAL;
		}
		d->on_count = v;
		return 0;
	case OPT_DETAIL_AFTER:
		errno = 0;
		d->after_s = strtod(arg, &end);
		if (errno || end == arg || *end || !(d->after_s >= 0) || d->after_s > 1e9) {
			argp_error(state, "--detail-after: '%s' is not a number of seconds", arg);
			return EINVAL;
		}
		return 0;
	case OPT_STACK_BYTES:
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v > 256) {
			argp_error(state, "--stack-bytes: '%s' is not a number from 0 to 256", arg);
			return EINVAL;
		}
		d->stack_bytes = (uint32_t)v;
		d->stack_bytes_given = true;
		return 0;
	case ARGP_KEY_END:
		if ((d->on_count || d->on_ns) && !d->non_globs) {
			argp_error(state, "--detail-%s limits the windows of --detail-on: give --detail-on too",
				   d->on_count ? "count" : "for");
			return EINVAL;
		}
		if (d->always && (d->non_globs || d->after_s >= 0)) {
			argp_error(state, "--detail=always records detail for every event already: "
				   "--detail-on and --detail-after need --detail=off");
			return EINVAL;
		}
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

const struct argp detail_argp = { .options = detail_options, .parser = detail_parse };

int detail_resolve(struct detail_args *d, const struct rm_modules *mods)
{
	for (size_t g = 0; g < d->non_globs; g++) {
		int found = rm_match_ids(mods, d->on_globs[g], &d->trigger_ids, &d->ntriggers);

		if (found < 0)
			return found;
		if (!found) {
			fprintf(stderr, "atftrace record: --detail-on %s: matches no traced function "
				"(trace it with -f)\n", d->on_globs[g]);
			return -ENOENT;
		}
	}
	return 0;
}

void detail_probe_opts(const struct detail_args *d, struct probe_opts *po)
{
	po->detail_always = d->always;
	po->stack_bytes = d->stack_bytes;
	po->detail_trigger_ids = d->trigger_ids;
	po->ndetail_triggers = d->ntriggers;
	po->detail_on_count = d->on_count;
	po->detail_on_ns = d->on_ns;
}

void detail_tick(struct detail_args *d, struct probes *p, double elapsed_s)
{
	if (d->after_s < 0 || d->after_done || elapsed_s < d->after_s)
		return;
	d->after_done = true;
	probes__detail_set(p, true);
	fprintf(stderr, "atftrace record: detail on (--detail-after %g)\n", d->after_s);
}

void detail_toggle(struct detail_args *d, struct probes *p)
{
	bool on = !probes__detail_get(p);

	probes__detail_set(p, on);
	fprintf(stderr, "atftrace record: detail %s (SIGUSR1)\n", on ? "on" : "off");
}

void detail_args_free(struct detail_args *d)
{
	for (size_t i = 0; i < d->non_globs; i++)
		free(d->on_globs[i]);
	free(d->on_globs);
	free(d->trigger_ids);
	d->on_globs = NULL;
	d->trigger_ids = NULL;
	d->non_globs = d->ntriggers = 0;
}
