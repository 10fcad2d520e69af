// SPDX-License-Identifier: MIT
/*
 * atftrace info SESSION: summarise each process directory - the manifest's process and host
 * facts, module and symbol counts, and one line per thread with its counts, time range,
 * duration and whether its files had to be read without a footer (recovered).
 * Files are opened leniently, so info also describes a session whose recorder was killed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "atf.h"
#include "cmd_common.h"
#include "commands.h"
#include "textfmt.h"
#include "timefmt.h"

typedef unsigned long long ull;

static const char info_doc[] = "Summarise a session: manifest, threads, counts and times.";

/* Text from the target or the host, escaped for the terminal; "-" when there is none. */
static const char *or_dash(const char *s)
{
	return textfmt_show(s && *s ? s : "-");
}

static void print_thread(const struct atf_thread *t)
{
	const struct atf_index_file *f = &t->index;
	struct atf_index_event first, last;
	char dur[TIMEFMT_LEN];
	bool recovered = f->recovered || (t->has_detail && t->detail.recovered);

	printf("  thread_%u  tid=%u  name=%s  events=%llu  detail=%llu", t->id, t->tid, or_dash(t->name),
	       (ull)f->count, (ull)(t->has_detail ? t->detail.count : 0));
	if (f->count) {
		atf_index_get(f, 0, &first);
		atf_index_get(f, f->count - 1, &last);
		printf("  time=%llu..%llu  duration=%s", (ull)first.timestamp_ns, (ull)last.timestamp_ns,
		       timefmt_format(dur, sizeof(dur), last.timestamp_ns - first.timestamp_ns));
	} else {
		printf("  time=-  duration=0 ns");
	}
	printf("  recovered=%s\n", recovered ? "yes" : "no");
}

/* The record-time filters and what they left out, as sentences: "12 calls under 10.000 us not recorded". */
static void print_filters(const struct atf_manifest *m)
{
	char t[TIMEFMT_LEN];
	bool any = false;

	if (!m->record_filter)
		return;
	printf("filters:    %s\n", m->record_filter);
	if (m->filtered[ATF_FILTERED_TIME] || m->filter_min_ns) {
		printf("filtered:   %llu calls under %s not recorded\n", (ull)m->filtered[ATF_FILTERED_TIME],
		       timefmt_format(t, sizeof(t), m->filter_min_ns));
		any = true;
	}
	if (m->filtered[ATF_FILTERED_DEPTH]) {
		printf("filtered:   %llu calls below the depth limit not recorded\n",
		       (ull)m->filtered[ATF_FILTERED_DEPTH]);
		any = true;
	}
	if (m->filtered[ATF_FILTERED_FUNCTION]) {
		printf("filtered:   %llu calls outside -F or inside -N not recorded\n",
		       (ull)m->filtered[ATF_FILTERED_FUNCTION]);
		any = true;
	}
	if (m->filtered[ATF_FILTERED_TRACE_OFF]) {
		printf("filtered:   %llu calls made while tracing was off not recorded\n",
		       (ull)m->filtered[ATF_FILTERED_TRACE_OFF]);
		any = true;
	}
	if (!any)
		printf("filtered:   no call left out\n");
}

static void print_session(struct atf_session *s)
{
	const struct atf_manifest *m = s->manifest;
	ull events = 0, detail = 0;
	char dur[TIMEFMT_LEN];

	printf("session:    %s\n", textfmt_show(s->dir));
	/* a pid inside a pid namespace (a container) is its own number there too; 0: a host process */
	if (m->ns_pid && m->ns_pid != m->pid)
		printf("pid:        %u (%u in its pid namespace)\n", m->pid, m->ns_pid);
	else
		printf("pid:        %u\n", m->pid);
	printf("process:    %s\n", or_dash(m->process_name));
	printf("argv:      ");
	for (size_t i = 0; i < m->argc; i++)
		printf(" %s", textfmt_show(m->argv[i]));
	printf("%s\n", m->argc ? "" : " -");
	printf("kernel:     %s\n", or_dash(m->kernel));
	printf("host:       %s\n", or_dash(m->host));
	printf("version:    %s (format %s)\n", or_dash(m->atftrace_version), or_dash(m->format_version));
	printf("start:      %s\n", or_dash(m->start_time));
	printf("end reason: %s\n", or_dash(m->end_reason));
	printf("time:       %llu..%llu ns (%s, clock %u)\n", (ull)m->time_start_ns, (ull)m->time_end_ns,
	       timefmt_format(dur, sizeof(dur), m->time_end_ns >= m->time_start_ns ?
			      m->time_end_ns - m->time_start_ns : 0), m->clock_type);
	/* a session its recorder never finished (kill -9) lost what was in the ring, uncounted */
	if (!m->end_reason || !strcmp(m->end_reason, "recovered"))
		printf("lost:       unknown (the recorder did not finish this session)\n");
	else
		printf("lost:       %llu events, %llu detail records\n", (ull)m->lost_events, (ull)m->lost_detail);
	print_filters(m);
	printf("modules:    %zu\n", m->nmodules);
	printf("symbols:    %zu\n", m->nsymbols);
	for (size_t i = 0; i < s->nthreads; i++) {
		events += s->threads[i].index.count;
		if (s->threads[i].has_detail)
			detail += s->threads[i].detail.count;
	}
	printf("threads:    %zu\n", s->nthreads);
	printf("events:     %llu index, %llu detail\n", events, detail);
	for (size_t i = 0; i < s->nthreads; i++)
		print_thread(&s->threads[i]);
}

int cmd_info(int argc, char **argv)
{
	const char *session;
	char **dirs;
	int n, rc = 0;

	if (cmd_parse_session("info", info_doc, argc, argv, &session))
		return 2;
	if ((n = cmd_resolve("info", session, &dirs)) < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		struct atf_session *s;

		if (cmd_open("info", dirs[i], &s)) {
			rc = 1;
			continue;
		}
		if (i)
			printf("\n");
		print_session(s);
		atf_session__close(s);
	}
	atf_session_resolve_free(dirs, n);
	return rc;
}
