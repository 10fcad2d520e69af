// SPDX-License-Identifier: MIT
/*
 * atf_session_verify on sessions with lost events. A lost RETURN leaves its CALL open; verify
 * must accept exactly as many such frames as the thread's manifest lost_returns counts (closed
 * on the way, or still open at the thread's end), and still fail on a nesting that the counted
 * losses do not explain: too few counted, too many counted, or a real corruption next to them.
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "atf.h"

#define TID 777
#define MOD 0x1234u
#define F   ((uint64_t)MOD << 32 | 1)      /* outer */
#define G   ((uint64_t)MOD << 32 | 2)      /* inner */
#define H   ((uint64_t)MOD << 32 | 3)

struct ev {
	char kind;              /* C, R or X */
	uint64_t fid;
	uint32_t depth;
};

static char dir[64];

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

/* One process directory: thread_0 with @evs, and a manifest counting @lost_calls / @lost_returns. */
static void write_session(const struct ev *evs, size_t n, uint64_t lost_calls, uint64_t lost_returns)
{
	struct atf_thread_writer *w;
	struct atf_manifest *m = atf_manifest__new();
	struct atf_thread_info *ti;
	char path[128];

	snprintf(dir, sizeof(dir), "/tmp/atf_vl_XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(atf_thread_writer__new(&w, dir, 0, TID), 0);
	atf_thread_writer__set_durable(w, false);
	for (size_t i = 0; i < n; i++) {
		struct atf_index_event e = {
			.timestamp_ns = 1000 + i, .function_id = evs[i].fid, .thread_id = TID,
			.event_kind = evs[i].kind == 'C' ? ATF_KIND_CALL : evs[i].kind == 'R' ? ATF_KIND_RETURN
											: ATF_KIND_EXCEPTION,
			.call_depth = evs[i].depth,
		};
		assert_int_equal(atf_thread_writer__append(w, &e, NULL), (int64_t)i);
	}
	assert_int_equal(atf_thread_writer__finalize(w), 0);
	atf_thread_writer__free(w);

	assert_non_null(m);
	m->pid = TID;
	m->lost_events = 2 * lost_calls + lost_returns;
	assert_non_null(atf_manifest__add_module(m, "/bin/target"));
	m->modules[0].module_id = MOD;
	for (uint32_t i = 1; i <= 3; i++)
		assert_non_null(atf_manifest__add_symbol(m, MOD, i, i == 1 ? "f" : i == 2 ? "g" : "h"));
	ti = atf_manifest__add_thread(m, 0, TID, "t");
	assert_non_null(ti);
	ti->index_events = n;
	ti->lost_calls = lost_calls;
	ti->lost_returns = lost_returns;
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	assert_int_equal(atf_manifest__save(m, path), 0);
	atf_manifest__free(m);
}

/* verify the session written last; returns its error (0 = accepted) and removes it */
static int verify(struct atf_diag *diag)
{
	int err = atf_session_verify(dir, diag);

	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	return err;
}

static void expect_ok(const struct ev *evs, size_t n, uint64_t lost_calls, uint64_t lost_returns)
{
	struct atf_diag d;
	int err;

	write_session(evs, n, lost_calls, lost_returns);
	err = verify(&d);
	if (err)
		fail_msg("rejected: %s:%llu: %s", d.file, (unsigned long long)d.offset, d.msg);
}

static void expect_nesting_error(const struct ev *evs, size_t n, uint64_t lost_returns, const char *msg_part)
{
	struct atf_diag d;

	write_session(evs, n, 0, lost_returns);
	assert_int_equal(verify(&d), -ATF_E_NESTING);
	if (!strstr(d.msg, msg_part))
		fail_msg("message '%s' lacks '%s'", d.msg, msg_part);
}

/* f { g { [RETURN g lost] } f: the next event (f's RETURN) is one frame shallower than open */
static const struct ev lost_inner_return[] = {
	{ 'C', F, 0 }, { 'C', G, 1 }, { 'R', F, 0 }, { 'C', H, 0 }, { 'R', H, 0 },
};
/* the RETURN of g lost, then a CALL at g's depth: g's frame is ended by the loss */
static const struct ev lost_then_call[] = {
	{ 'C', F, 0 }, { 'C', G, 1 }, { 'C', H, 1 }, { 'R', H, 1 }, { 'R', F, 0 },
};
/* two lost RETURNs (g's and f's), seen at once by the next depth-0 CALL */
static const struct ev two_lost[] = {
	{ 'C', F, 0 }, { 'C', G, 1 }, { 'C', H, 0 }, { 'R', H, 0 },
};
/* f's RETURN lost at the very end: its frame is still open when the thread ends */
static const struct ev lost_at_end[] = {
	{ 'C', F, 0 }, { 'C', G, 1 }, { 'R', G, 1 },
};

static void test_counted_losses_accepted(void **state)
{
	(void)state;
	expect_ok(lost_inner_return, 5, 0, 1);
	expect_ok(lost_then_call, 5, 0, 1);
	expect_ok(two_lost, 4, 0, 2);
	expect_ok(lost_at_end, 3, 0, 1);
	/* lost CALLs take their RETURNs with them: the nesting stays whole, only the count changes */
	expect_ok(lost_at_end, 2, 7, 0);
}

static void test_uncounted_losses_rejected(void **state)
{
	(void)state;
	/* no loss counted: the same files are a nesting error */
	expect_nesting_error(lost_inner_return, 5, 0, "but its call was at depth");
	expect_nesting_error(lost_then_call, 5, 0, "frames are open");
	/* one counted, two frames left open at once */
	expect_nesting_error(two_lost, 4, 1, "this thread lost 1 returns");
	/* more lost returns counted than frames left open, on the way or at the end */
	expect_nesting_error(lost_inner_return, 5, 2, "thread 0 lost 2 returns, but only 1 frames");
	expect_nesting_error(lost_at_end, 3, 2, "thread 0 lost 2 returns, but only 0 frames");
}

static void test_corruption_next_to_losses_rejected(void **state)
{
	static const struct ev wrong_function[] = {   /* after the lost RETURN, f's RETURN names h */
		{ 'C', F, 0 }, { 'C', G, 1 }, { 'R', H, 0 },
	};
	static const struct ev too_deep[] = {         /* a CALL deeper than the open frames */
		{ 'C', F, 0 }, { 'C', G, 3 },
	};
	static const struct ev return_first[] = {     /* a RETURN with nothing open */
		{ 'R', F, 0 }, { 'C', G, 0 },
	};

	(void)state;
	expect_nesting_error(wrong_function, 3, 1, "but the open frame is");
	expect_nesting_error(too_deep, 2, 5, "call of");
	expect_nesting_error(return_first, 2, 5, "without a matching call");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counted_losses_accepted),
		cmocka_unit_test(test_uncounted_losses_rejected),
		cmocka_unit_test(test_corruption_next_to_losses_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
