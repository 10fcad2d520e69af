// SPDX-License-Identifier: MIT
/*
 * Record-time call filters of `atftrace record` (include/record_filter.h), with uftrace's names
 * and meanings; bpf/callfilter.bpf.h applies them before the ring.
 *
 *   -D, --depth N              N levels of calls: from the thread's first traced call, or from
 *                              each -F function (itself level 1)
 *   -t, --time-filter TIME     only calls that lasted at least TIME (20us, 1.5ms; bare: ns), and
 *                              the calls that lead to them
 *   -F, --filter FUNC          only FUNC and what it calls (repeatable)
 *   -N, --notrace FUNC         never FUNC or what it calls (repeatable)
 *   -T, --trigger FUNC@ACT,..  at FUNC's calls: depth=N, trace_on, trace_off, filter, notrace,
 *                              detail (= --detail-on FUNC)
 *       --trace on|off         the trace_on/trace_off switch at the start (default on)
 *
 * FUNC is "[MODULE:]GLOB" as for -f (uftrace takes a regex). Each filtered call is counted per
 * thread and reason in the manifest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atftrace.h"
#include "record_filter.h"
#include "record_modules.h"
#include "recorder_detail.h"
#include "timefmt.h"

enum { OPT_TRACE = 2200 };

static const struct argp_option filter_options[] = {
	{ "depth", 'D', "N", 0,
	  "Record N levels of calls: from each thread's first traced call, or from each -F "
	  "function (uftrace -D)", 0 },
	{ "time-filter", 't', "TIME", 0,
	  "Record only calls that last at least TIME (20us, 1.5ms; a bare number is ns), and the "
	  "calls they are in (uftrace -t)", 0 },
	{ "filter", 'F', "FUNC", 0,
	  "Record only FUNC ([MODULE:]GLOB) and what it calls (repeatable; uftrace -F)", 0 },
	{ "notrace", 'N', "FUNC", 0,
	  "Never record FUNC ([MODULE:]GLOB) or what it calls (repeatable; uftrace -N)", 0 },
	{ "trigger", 'T', "FUNC@ACT[,ACT]", 0,
	  "At FUNC's calls: depth=N (N levels from FUNC), trace_on, trace_off, filter (= -F), "
	  "notrace (= -N), detail (= --detail-on FUNC) (repeatable; uftrace -T)", 0 },
	{ "trace", OPT_TRACE, "on|off", 0,
	  "The trace_on/trace_off switch at the start (default on; uftrace --trace)", 0 },
	{ 0 }
};

int filter_parse_depth(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || *s == '+' || !v || v > UINT32_MAX - 1)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* One ACTION of a -T argument into @r. */
static int parse_action(const char *a, size_t len, struct filter_rule *r, const char **why)
{
	char num[24];

#define IS(word) (len == sizeof(word) - 1 && !strncmp(a, word, len))
	if (len > 6 && !strncmp(a, "depth=", 6)) {
		if (len - 6 >= sizeof(num)) {
			*why = "depth= wants a positive number of levels";
			return -EINVAL;
		}
		memcpy(num, a + 6, len - 6);
		num[len - 6] = '\0';
		if (filter_parse_depth(num, &r->depth)) {
			*why = "depth= wants a positive number of levels";
			return -EINVAL;
		}
		r->flags |= FILTER_FN_DEPTH;
	} else if (IS("trace_on") || IS("trace-on")) {
		r->flags |= FILTER_FN_TRACE_ON;
	} else if (IS("trace_off") || IS("trace-off")) {
		r->flags |= FILTER_FN_TRACE_OFF;
	} else if (IS("filter")) {
		r->flags |= FILTER_FN_FOCUS;
	} else if (IS("notrace")) {
		r->flags |= FILTER_FN_NOTRACE;
	} else if (IS("detail")) {
		r->detail = true;
	} else {
		*why = "an action is not one of depth=N, trace_on, trace_off, filter, notrace, detail";
		return -EINVAL;
	}
#undef IS
	return 0;
}

int filter_parse_trigger(const char *arg, struct filter_rule *r, const char **why)
{
	const char *at = strrchr(arg, '@'), *a;

	*r = (struct filter_rule){ 0 };
	if (!at || at == arg || !at[1]) {
		*why = "expected FUNC@ACTION[,ACTION...]";
		return -EINVAL;
	}
	for (a = at + 1; *a; ) {
		size_t len = strcspn(a, ",");
		int err;

		if (!len) {
			*why = "an empty action";
			return -EINVAL;
		}
		err = parse_action(a, len, r, why);
		if (err)
			return err;
		a += len;
		if (*a == ',' && !*++a) {
			*why = "an empty action";
			return -EINVAL;
		}
	}
	if ((r->flags & FILTER_FN_FOCUS) && (r->flags & FILTER_FN_NOTRACE)) {
		*why = "filter and notrace contradict each other";
		return -EINVAL;
	}
	if ((r->flags & FILTER_FN_TRACE_ON) && (r->flags & FILTER_FN_TRACE_OFF)) {
		*why = "trace_on and trace_off contradict each other";
		return -EINVAL;
	}
	r->spec = strndup(arg, (size_t)(at - arg));
	if (!r->spec) {
		*why = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

static int push_rule(struct filter_args *f, struct filter_rule *r)
{
	struct filter_rule *n = realloc(f->rules, (f->nrules + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	f->rules = n;
	n[f->nrules++] = *r;
	return 0;
}

/* Append " -X ARG" to the spec string the manifest keeps. */
static int spec_add(struct filter_args *f, const char *opt, const char *arg)
{
	size_t old = f->spec ? strlen(f->spec) : 0;
	size_t add = strlen(opt) + strlen(arg) + 3;
	char *n = realloc(f->spec, old + add);

	if (!n)
		return -ENOMEM;
	snprintf(n + old, add, "%s%s %s", old ? " " : "", opt, arg);
	f->spec = n;
	return 0;
}

/* Each error: one line (argp_error), then EINVAL for callers that parse with ARGP_NO_EXIT. */
static error_t filter_parse(int key, char *arg, struct argp_state *state)
{
	struct filter_args *f = state->input;
	struct filter_rule r = { 0 };
	const char *why = NULL;
	int err;

	switch (key) {
	case ARGP_KEY_INIT:
		*f = (struct filter_args){ 0 };
		return 0;
	case 'D':
		if (filter_parse_depth(arg, &f->max_depth)) {
			argp_error(state, "-D %s: expected a positive number of levels", arg);
			return EINVAL;
		}
		break;
	case 't':
		if ((err = timefmt_parse(arg, TIMEFMT_NS, &f->min_ns)) || !f->min_ns) {
			argp_error(state, "-t %s: not a positive duration (e.g. 10us, 1.5ms): %s", arg,
				   err ? timefmt_strerror(err) : "zero");
			return EINVAL;
		}
		break;
	case 'F':
	case 'N':
		if (!*arg) {
			argp_error(state, "-%c: expected a function ([MODULE:]GLOB)", key);
			return EINVAL;
		}
		r.flags = key == 'F' ? FILTER_FN_FOCUS : FILTER_FN_NOTRACE;
		if (!(r.spec = strdup(arg)) || push_rule(f, &r)) {
			free(r.spec);
			argp_failure(state, 1, ENOMEM, "-%c", key);
			return ENOMEM;
		}
		break;
	case 'T':
		err = filter_parse_trigger(arg, &r, &why);
		if (!err && push_rule(f, &r)) {
			free(r.spec);
			err = -ENOMEM;
			why = "out of memory";
		}
		if (err) {
			argp_error(state, "-T %s: %s", arg, why);
			return EINVAL;
		}
		break;
	case OPT_TRACE:
		if (strcmp(arg, "on") && strcmp(arg, "off")) {
			argp_error(state, "--trace %s: expected on or off", arg);
			return EINVAL;
		}
		f->trace_off = !strcmp(arg, "off");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	/* every option above that got here is kept, as given, for the manifest */
	{
		char opt[3] = { '-', (char)key, '\0' };

		if (spec_add(f, key == OPT_TRACE ? "--trace" : opt, arg)) {
			argp_failure(state, 1, ENOMEM, "filter options");
			return ENOMEM;
		}
	}
	return 0;
}

const struct argp filter_argp = { .options = filter_options, .parser = filter_parse };

bool filter_active(const struct filter_args *f)
{
	return f->max_depth || f->min_ns || f->trace_off || f->nrules;
}

/* The entry of function @id in the resolved table, made if new; NULL when out of memory. */
static struct filter_fn *fn_slot(struct filter_args *f, uint64_t id)
{
	uint64_t *ids;
	struct filter_fn *vals;

	for (size_t i = 0; i < f->nfns; i++)
		if (f->fn_ids[i] == id)
			return &f->fn_vals[i];
	ids = realloc(f->fn_ids, (f->nfns + 1) * sizeof(*ids));
	if (!ids)
		return NULL;
	f->fn_ids = ids;
	vals = realloc(f->fn_vals, (f->nfns + 1) * sizeof(*vals));
	if (!vals)
		return NULL;
	f->fn_vals = vals;
	ids[f->nfns] = id;
	vals[f->nfns] = (struct filter_fn){ 0 };
	return &vals[f->nfns++];
}

int filter_resolve(struct filter_args *f, const struct rm_modules *mods, struct detail_args *detail)
{
	bool detail_on = detail->non_globs > 0;

	for (size_t i = 0; i < f->nrules; i++) {
		const struct filter_rule *r = &f->rules[i];
		uint64_t *ids = NULL;
		size_t n = 0;
		int found = rm_match_ids(mods, r->spec, &ids, &n);

		if (found == 0)
			fprintf(stderr, "atftrace record: %s: matches no traced function (trace it "
				"with -f)\n", r->spec);
		for (size_t k = 0; found > 0 && r->flags && k < n; k++) {
			struct filter_fn *v = fn_slot(f, ids[k]);

			if (!v) {
				found = -ENOMEM;
				break;
			}
			v->flags |= r->flags;
			if (r->flags & FILTER_FN_DEPTH)
				v->depth = r->depth;
		}
		free(ids);
		if (found < 0)
			fprintf(stderr, "atftrace record: out of memory\n");
		if (found <= 0)
			return found < 0 ? found : -ENOENT;
		if (r->flags & FILTER_FN_FOCUS)
			f->focus = true;
		if (r->detail) {
			if (detail_add_on(detail, r->spec) < 0) {
				fprintf(stderr, "atftrace record: out of memory\n");
				return -ENOMEM;
			}
			detail_on = true;
		}
	}
	if (detail_on && detail->always) {
		fprintf(stderr, "atftrace record: --detail=always records detail for every event "
			"already: -T FUNC@detail needs --detail=off\n");
		return -EINVAL;
	}
	if (detail_on && f->min_ns) {
		fprintf(stderr, "atftrace record: -t writes a call only at its return, without the "
			"registers of its entry: no --detail-on or -T FUNC@detail with it\n");
		return -EINVAL;
	}
	return 0;
}

void filter_probe_opts(const struct filter_args *f, struct probe_opts *po)
{
	po->call_filter = f->max_depth || f->min_ns || f->trace_off || f->nfns;
	po->filter_max_depth = f->max_depth;
	po->filter_min_ns = f->min_ns;
	po->filter_focus = f->focus;
	po->filter_trace_off = f->trace_off;
	po->filter_fn_ids = f->fn_ids;
	po->filter_fn_vals = f->fn_vals;
	po->nfilter_fns = f->nfns;
}

void filter_args_free(struct filter_args *f)
{
	for (size_t i = 0; i < f->nrules; i++)
		free(f->rules[i].spec);
	free(f->rules);
	free(f->spec);
	free(f->fn_ids);
	free(f->fn_vals);
	*f = (struct filter_args){ 0 };
}
