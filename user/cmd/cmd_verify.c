// SPDX-License-Identifier: MIT
/*
 * atftrace verify SESSION: check every process directory of a session completely.
 * Exit 0 with "OK <dir>: N threads, N events, N detail events" per directory, or exit 1 with
 * "atftrace verify: <file>:<offset>: <message>" for the first problem found.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "atf.h"
#include "cmd_common.h"
#include "commands.h"
#include "textfmt.h"

static const char verify_doc[] =
	"Check a session completely: headers, footers, CRCs, counts, time order, call nesting,\n"
	"index<->detail links and function ids. Exit 1 at the first problem.";

/* Totals for the OK line, from a lenient open (verify already proved the files consistent). */
struct dir_totals {
	size_t threads;
	unsigned long long events, detail;
	unsigned long long lost_calls, lost_returns;    /* the manifest's per-thread counts, summed */
	unsigned long long filtered;    /* calls the record-time filters left out (process total) */
};

static int count_dir(const char *dir, struct dir_totals *n)
{
	struct atf_session *s;
	const struct atf_manifest *m;
	int err = atf_session__open(&s, dir, 0, NULL);

	if (err)
		return err;
	memset(n, 0, sizeof(*n));
	n->threads = s->nthreads;
	for (size_t i = 0; i < s->nthreads; i++) {
		n->events += s->threads[i].index.count;
		if (s->threads[i].has_detail)
			n->detail += s->threads[i].detail.count;
	}
	m = s->manifest;
	for (unsigned r = 0; r < ATF_FILTERED_REASONS; r++)
		n->filtered += m->filtered[r];
	for (size_t i = 0; i < m->nthreads; i++) {
		n->lost_calls += m->threads[i].lost_calls;
		n->lost_returns += m->threads[i].lost_returns;
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
		struct dir_totals tot;
		int err = atf_session_verify(dirs[i], &diag);

		if (err) {
			cmd_print_diag("verify", dirs[i], err, &diag, true);
			rc = 1;
			break;
		}
		err = count_dir(dirs[i], &tot);
		if (err) {
			cmd_print_diag("verify", dirs[i], err, NULL, false);
			rc = 1;
			break;
		}
		printf("OK %s: %zu %s, %llu %s, %llu detail %s", dirs[i], tot.threads,
		       textfmt_plural(tot.threads, "thread", "threads"), tot.events,
		       textfmt_plural(tot.events, "event", "events"), tot.detail,
		       textfmt_plural(tot.detail, "event", "events"));
		/* verify passed with losses only because the manifest counts them per thread: say so */
		if (tot.lost_calls || tot.lost_returns)
			printf("; %llu events lost and counted (%llu calls with their returns, %llu returns "
			       "whose calls stay open)", 2 * tot.lost_calls + tot.lost_returns, tot.lost_calls,
			       tot.lost_returns);
		/* not losses: left out on purpose, nothing of them in the files */
		if (tot.filtered)
			printf("; %llu calls left out by the record-time filters", tot.filtered);
		printf("\n");
	}
	atf_session_resolve_free(dirs, n);
	return rc;
}
