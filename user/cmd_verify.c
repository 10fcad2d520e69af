// SPDX-License-Identifier: MIT
/*
 * atftrace verify SESSION: check every process directory of a session completely.
 * Exit 0 with "OK <dir>: N threads, N events, N detail events" per directory, or exit 1 with
 * "atftrace verify: <file>:<offset>: <message>" for the first problem found.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include "atf.h"
#include "commands.h"

struct verify_args {
	const char *session;
};

static const char verify_doc[] =
	"Check a session completely: headers, footers, CRCs, counts, time order, call nesting,\n"
	"index<->detail links and function ids. Exit 1 at the first problem.";

static error_t verify_parse(int key, char *arg, struct argp_state *state)
{
	struct verify_args *a = state->input;

	switch (key) {
	case ARGP_KEY_ARG:
		if (a->session)
			argp_error(state, "only one SESSION may be given");
		a->session = arg;
		return 0;
	case ARGP_KEY_END:
		if (!a->session)
			argp_error(state, "SESSION is required");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/* Totals for the OK line, from a lenient open (verify already proved the files consistent). */
static int count_dir(const char *dir, size_t *threads, unsigned long long *events, unsigned long long *detail)
{
	struct atf_session *s;
	int err = atf_session__open(&s, dir, 0, NULL);

	if (err)
		return err;
	*threads = s->nthreads;
	*events = *detail = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		*events += s->threads[i].index.count;
		if (s->threads[i].has_detail)
			*detail += s->threads[i].detail.count;
	}
	atf_session__close(s);
	return 0;
}

int cmd_verify(int argc, char **argv)
{
	struct verify_args args = { 0 };
	struct argp argp = { .parser = verify_parse, .args_doc = "SESSION", .doc = verify_doc };
	char **dirs = NULL;
	int n, rc = 0;

	argv[0] = (char *)"atftrace verify";   /* argp names the program after argv[0] */
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &args))
		return 2;
	n = atf_session_resolve(args.session, &dirs);
	if (n < 0) {
		fprintf(stderr, "atftrace verify: %s: %s\n", args.session, atf_strerror(n));
		return 1;
	}
	for (int i = 0; i < n && !rc; i++) {
		struct atf_diag diag = { 0 };
		unsigned long long events, detail;
		size_t threads;
		int err = atf_session_verify(dirs[i], &diag);

		if (err) {
			fprintf(stderr, "atftrace verify: %s:%llu: %s\n", diag.file[0] ? diag.file : dirs[i],
				(unsigned long long)diag.offset, diag.msg[0] ? diag.msg : atf_strerror(err));
			rc = 1;
			break;
		}
		err = count_dir(dirs[i], &threads, &events, &detail);
		if (err) {
			fprintf(stderr, "atftrace verify: %s: %s\n", dirs[i], atf_strerror(err));
			rc = 1;
			break;
		}
		printf("OK %s: %zu threads, %llu events, %llu detail events\n", dirs[i], threads, events, detail);
	}
	atf_session_resolve_free(dirs, n);
	return rc;
}
