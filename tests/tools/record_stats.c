// SPDX-License-Identifier: MIT
/*
 * record_stats SESSION: exact counts of a recorded session, for the record e2e tests.
 * For every process directory (in atf_session_resolve order) it prints
 *
 *   process PID threads T events E calls C returns R exceptions X maxdepth D lost L end REASON
 *   losses PID events L records R                 (the manifest's lost_events and lost_records)
 *   thread PID ID TID EVENTS calls C returns R lost_calls LC lost_returns LR
 *                                (RETURN and EXCEPTION events both count as returns here)
 *   call PID NAME COUNT          (CALL events per function)
 *   exception PID NAME COUNT     (EXCEPTION events per function)
 *   unbalanced PID N             (frames still open at the end of a thread, summed)
 *
 * Files are opened leniently (a session cut short still counts every whole record).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atf.h"

struct fcount {
	uint64_t function_id;
	uint64_t calls, exceptions;
};

static struct fcount *find(struct fcount **arr, size_t *n, uint64_t fid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i].function_id == fid)
			return &(*arr)[i];
	struct fcount *na = realloc(*arr, (*n + 1) * sizeof(*na));
	if (!na)
		exit(2);
	*arr = na;
	na[*n] = (struct fcount){ .function_id = fid };
	return &na[(*n)++];
}

static int one_process(const char *dir)
{
	struct atf_session *s = NULL;
	struct atf_diag diag = { 0 };
	struct fcount *fc = NULL;
	size_t nfc = 0;
	uint64_t events = 0, calls = 0, rets = 0, excs = 0, maxdepth = 0, open_frames = 0;
	int err = atf_session__open(&s, dir, 0, &diag);

	if (err < 0) {
		fprintf(stderr, "record_stats: %s: %s (%s)\n", dir, atf_strerror(err), diag.msg);
		return 1;
	}
	for (size_t t = 0; t < s->nthreads; t++) {
		const struct atf_index_file *f = &s->threads[t].index;
		const struct atf_thread_info *ti = NULL;
		uint64_t tcalls = 0, tends = 0;
		int64_t open = 0;

		for (size_t k = 0; k < s->manifest->nthreads; k++)
			if (s->manifest->threads[k].id == s->threads[t].id)
				ti = &s->manifest->threads[k];
		for (uint64_t i = 0; i < f->count; i++) {
			struct atf_index_event ev;

			atf_index_get(f, i, &ev);
			if (ev.event_kind == ATF_KIND_CALL)
				tcalls++;
			else
				tends++;
		}
		printf("thread %u %u %u %llu calls %llu returns %llu lost_calls %llu lost_returns %llu\n",
		       s->manifest->pid, s->threads[t].id, s->threads[t].tid, (unsigned long long)f->count,
		       (unsigned long long)tcalls, (unsigned long long)tends,
		       (unsigned long long)(ti ? ti->lost_calls : 0), (unsigned long long)(ti ? ti->lost_returns : 0));
		for (uint64_t i = 0; i < f->count; i++) {
			struct atf_index_event ev;

			atf_index_get(f, i, &ev);
			events++;
			if (ev.call_depth > maxdepth)
				maxdepth = ev.call_depth;
			switch (ev.event_kind) {
			case ATF_KIND_CALL:
				calls++;
				open++;
				find(&fc, &nfc, ev.function_id)->calls++;
				break;
			case ATF_KIND_RETURN:
				rets++;
				open--;
				break;
			case ATF_KIND_EXCEPTION:
				excs++;
				open--;
				find(&fc, &nfc, ev.function_id)->exceptions++;
				break;
			}
		}
		open_frames += (uint64_t)(open > 0 ? open : 0);
	}
	printf("process %u threads %zu events %llu calls %llu returns %llu exceptions %llu maxdepth %llu "
	       "lost %llu end %s\n", s->manifest->pid, s->nthreads, (unsigned long long)events,
	       (unsigned long long)calls, (unsigned long long)rets, (unsigned long long)excs,
	       (unsigned long long)maxdepth, (unsigned long long)s->manifest->lost_events,
	       s->manifest->end_reason ? s->manifest->end_reason : "-");
	printf("losses %u events %llu records %llu\n", s->manifest->pid,
	       (unsigned long long)s->manifest->lost_events, (unsigned long long)s->manifest->lost_records);
	for (size_t i = 0; i < nfc; i++) {
		char buf[64];
		const char *name = atf_session__name(s, fc[i].function_id, buf, sizeof(buf));
		if (fc[i].calls)
			printf("call %u %s %llu\n", s->manifest->pid, name, (unsigned long long)fc[i].calls);
		if (fc[i].exceptions)
			printf("exception %u %s %llu\n", s->manifest->pid, name,
			       (unsigned long long)fc[i].exceptions);
	}
	printf("unbalanced %u %llu\n", s->manifest->pid, (unsigned long long)open_frames);
	free(fc);
	atf_session__close(s);
	return 0;
}

int main(int argc, char **argv)
{
	char **dirs = NULL;
	int n, ret = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: record_stats SESSION\n");
		return 2;
	}
	n = atf_session_resolve(argv[1], &dirs);
	if (n < 0) {
		fprintf(stderr, "record_stats: %s: %s\n", argv[1], atf_strerror(n));
		return 1;
	}
	printf("processes %d\n", n);
	for (int i = 0; i < n; i++)
		ret |= one_process(dirs[i]);
	atf_session_resolve_free(dirs, n);
	return ret;
}
