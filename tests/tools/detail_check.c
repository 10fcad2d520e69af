// SPDX-License-Identifier: MIT
/*
 * detail_check SESSION [CANARY_HEX]: the detail side of a recorded session, for the detail e2e
 * tests, read with libatf. For every process directory it prints
 *
 *   process PID lost_events L lost_detail D
 *   thread PID ID TID index N detail M file yes|no flag F has_detail yes|no
 *   ev ID SEQ C|R|X NAME DEPTH D|- TS               every index event; D: it has detail
 *   reg ID SEQ C|R NAME flags F gp G0,...,G7 lr LR fp FP sp SP stack S      (hex, per detail record)
 *   canary ID SEQ C|R NAME OFFSET                   CANARY_HEX found in the stack snapshot (LE)
 *   links ID ok N                                   every link checked both ways (N records)
 *
 * A link that does not resolve both ways (index -> detail -> same index event, same time and
 * kind, and every detail record reached from exactly its index event) prints
 * "links ID bad: ..." and makes the exit status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "atf.h"

typedef unsigned long long ull;

static char kind_char(uint32_t kind)
{
	return kind == ATF_KIND_CALL ? 'C' : kind == ATF_KIND_RETURN ? 'R' : 'X';
}

/* Both directions of every link of one thread; prints one "links" line. */
static int check_links(struct atf_session *s, const struct atf_thread *t)
{
	const struct atf_index_file *f = &t->index;
	uint64_t ndetail = t->has_detail ? t->detail.count : 0, linked = 0;

	for (uint64_t i = 0; i < f->count; i++) {
		struct atf_index_event ev;
		struct atf_detail_event d;

		atf_index_get(f, i, &ev);
		if (ev.detail_seq == ATF_NO_DETAIL)
			continue;
		if (ev.detail_seq >= ndetail || atf_detail_get(&t->detail, ev.detail_seq, &d)) {
			printf("links %u bad: event %llu -> detail %u, which does not exist\n", t->id,
			       (ull)i, ev.detail_seq);
			return 1;
		}
		if (d.hdr.index_seq != i || d.hdr.timestamp != ev.timestamp_ns ||
		    d.hdr.event_type != (ev.event_kind == ATF_KIND_CALL ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN) ||
		    !d.has_payload || d.payload.function_id != ev.function_id) {
			printf("links %u bad: event %llu -> detail %u -> event %u\n", t->id, (ull)i,
			       ev.detail_seq, d.hdr.index_seq);
			return 1;
		}
		linked++;
	}
	for (uint64_t k = 0; k < ndetail; k++) {
		struct atf_detail_event d;
		struct atf_index_event ev;

		if (atf_detail_get(&t->detail, k, &d) || d.hdr.index_seq >= f->count) {
			printf("links %u bad: detail %llu points outside the index\n", t->id, (ull)k);
			return 1;
		}
		atf_index_get(f, d.hdr.index_seq, &ev);
		if (ev.detail_seq != k) {
			printf("links %u bad: detail %llu -> event %u -> detail %u\n", t->id, (ull)k,
			       d.hdr.index_seq, ev.detail_seq);
			return 1;
		}
	}
	if (linked != ndetail) {
		printf("links %u bad: %llu events link, %llu detail records\n", t->id, (ull)linked,
		       (ull)ndetail);
		return 1;
	}
	printf("links %u ok %llu\n", t->id, (ull)ndetail);
	(void)s;
	return 0;
}

static void print_events(struct atf_session *s, const struct atf_thread *t, uint64_t canary,
			 bool want_canary)
{
	char buf[128];

	for (uint64_t i = 0; i < t->index.count; i++) {
		struct atf_index_event ev;
		struct atf_detail_event d;
		const char *name;

		atf_index_get(&t->index, i, &ev);
		name = atf_session__name(s, ev.function_id, buf, sizeof(buf));
		printf("ev %u %llu %c %s %u %c %llu\n", t->id, (ull)i, kind_char(ev.event_kind), name,
		       ev.call_depth, ev.detail_seq == ATF_NO_DETAIL ? '-' : 'D', (ull)ev.timestamp_ns);
		if (ev.detail_seq == ATF_NO_DETAIL || !t->has_detail ||
		    atf_detail_get(&t->detail, ev.detail_seq, &d) || !d.has_payload)
			continue;
		printf("reg %u %llu %c %s flags %u gp", t->id, (ull)i, kind_char(ev.event_kind), name,
		       d.hdr.flags);
		for (int r = 0; r < ATF_DETAIL_GP_REGS; r++)
			printf("%c%llx", r ? ',' : ' ', (ull)d.payload.gp[r]);
		printf(" lr %llx fp %llx sp %llx stack %u\n", (ull)d.payload.lr, (ull)d.payload.fp,
		       (ull)d.payload.sp, d.payload.stack_size);
		for (unsigned off = 0; want_canary && off + 8 <= d.payload.stack_size; off++) {
			uint64_t v = 0;

			for (int b = 7; b >= 0; b--)
				v = v << 8 | d.stack[off + (unsigned)b];
			if (v == canary)
				printf("canary %u %llu %c %s %u\n", t->id, (ull)i, kind_char(ev.event_kind),
				       name, off);
		}
	}
}

static int one_process(const char *dir, uint64_t canary, bool want_canary)
{
	struct atf_session *s = NULL;
	struct atf_diag diag = { 0 };
	int ret = 0, err = atf_session__open(&s, dir, ATF_OPEN_CHECK_CRC, &diag);

	if (err < 0) {
		fprintf(stderr, "detail_check: %s: %s (%s)\n", dir, atf_strerror(err), diag.msg);
		return 1;
	}
	printf("process %u lost_events %llu lost_detail %llu\n", s->manifest->pid,
	       (ull)s->manifest->lost_events, (ull)s->manifest->lost_detail);
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct atf_thread *t = &s->threads[i];
		const struct atf_thread_info *ti = NULL;
		char path[4096];
		struct stat sb;

		for (size_t k = 0; k < s->manifest->nthreads; k++)
			if (s->manifest->threads[k].id == t->id)
				ti = &s->manifest->threads[k];
		snprintf(path, sizeof(path), "%s/thread_%u/detail.atf", dir, t->id);
		printf("thread %u %u %u index %llu detail %llu file %s flag %u has_detail %s\n",
		       s->manifest->pid, t->id, t->tid, (ull)t->index.count,
		       (ull)(t->has_detail ? t->detail.count : 0), stat(path, &sb) ? "no" : "yes",
		       t->index.hdr.flags & 1u, ti && ti->has_detail ? "yes" : "no");
		print_events(s, t, canary, want_canary);
		ret |= check_links(s, t);
	}
	atf_session__close(s);
	return ret;
}

int main(int argc, char **argv)
{
	char **dirs = NULL;
	uint64_t canary = 0;
	int n, ret = 0;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: detail_check SESSION [CANARY_HEX]\n");
		return 2;
	}
	if (argc == 3)
		canary = strtoull(argv[2], NULL, 16);
	n = atf_session_resolve(argv[1], &dirs);
	if (n < 0) {
		fprintf(stderr, "detail_check: %s: %s\n", argv[1], atf_strerror(n));
		return 1;
	}
	for (int i = 0; i < n; i++)
		ret |= one_process(dirs[i], canary, argc == 3);
	atf_session_resolve_free(dirs, n);
	return ret;
}
