// SPDX-License-Identifier: MIT
/*
 * atftrace verify SESSION: check every process directory of a session completely.
 * Exit 0 with "OK <dir>: N threads, N events, N detail events" per directory, or exit 1 with
 * "atftrace verify: <file>:<offset>: <message>" for the first problem found.
 */
#include <errno.h>
#include <stdio.h>
#include "atf.h"
#include "cmd_common.h"
#include "commands.h"

static const char verify_doc[] =
	"Check a session completely: headers, footers, CRCs, counts, time order, call nesting,\n"
	"index<->detail links and function ids. Exit 1 at the first problem.";

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
	const char *session;
	char **dirs;
	int n, rc = 0;

	if (cmd_parse_session("verify", verify_doc, argc, argv, &session))
		return 2;
	if ((n = cmd_resolve("verify", session, &dirs)) < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		struct atf_diag diag = { 0 };
		unsigned long long events, detail;
		size_t threads;
		int err = atf_session_verify(dirs[i], &diag);

		if (err) {
			cmd_print_diag("verify", dirs[i], err, &diag, true);
			rc = 1;
			break;
		}
		err = count_dir(dirs[i], &threads, &events, &detail);
		if (err) {
			cmd_print_diag("verify", dirs[i], err, NULL, false);
			rc = 1;
			break;
		}
		printf("OK %s: %zu threads, %llu events, %llu detail events\n", dirs[i], threads, events, detail);
	}
	atf_session_resolve_free(dirs, n);
	return rc;
}
