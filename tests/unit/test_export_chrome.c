// SPDX-License-Identifier: MIT
/*
 * Chrome JSON exporter, read back with jansson (which rejects invalid UTF-8 and trailing
 * data): the top-level object, the process_name/thread_name metadata, then one B/E event per
 * event of the balanced stream (balance_model.h) in the merged order with pid, tid, the exact
 * nanosecond in "ts" (microseconds with three decimals), the name escaped and UTF-8-repaired on
 * B and E alike (speedscope closes a frame only on an E named as its B), no args on B or E,
 * slices nested per thread and all closed at the end, even for a range that starts and ends
 * inside calls; the detail registers and the exception flag as instant events.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "format.h"
#include "export_gen.h"

extern const struct export_ops chrome_ops;

#define FFFD "\xEF\xBF\xBD"

static const char *const repaired_names[GEN_NSYMS] = {
	"main", "parse_expr", "quote\"back\\slash\ttab\x01",
	"bad" FFFD FFFD "(" FFFD FFFD FFFD "utf8",
	"caf\xc3\xa9_\xf0\x9f\x98\x80",
};
static const char *const repaired_thread_names[] = { "main", "work" FFFD "er", NULL, "t3" };

/* Names for the escaping test, and what a JSON reader must get back (Python's 'replace'). */
static const char *const tricky_names[GEN_NSYMS] = {
	"\xc0\x80x\xf5\xf4\x90\x80\x80\xf0\x9f\x98",
	"del\x7f ctl\x1f\x08\x0c\r\n/",
	"\xe2\x80\xa8 ok \xef\xbf\xbf",
	"\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf",
	"\xe0\x80\xaf|\xe0\xa0\x80tail\xe2\x82",
};
static const char *const tricky_decoded[GEN_NSYMS] = {
	FFFD FFFD "x" FFFD FFFD FFFD FFFD FFFD FFFD,
	"del\x7f ctl\x1f\x08\x0c\r\n/",
	"\xe2\x80\xa8 ok \xef\xbf\xbf",
	"\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf",
	FFFD FFFD FFFD "|\xe0\xa0\x80tail" FFFD,
};

static const char *expected_name(const struct gen_event *e, const char *const *names, char *buf)
{
	uint32_t idx = (uint32_t)e->ev.function_id;

	if (idx >= 1 && idx <= GEN_NSYMS)
		return names[idx - 1];
	sprintf(buf, "0x%016llx", (unsigned long long)e->ev.function_id);
	return buf;
}

static void check_string(json_t *obj, const char *key, const char *want)
{
	json_t *v = json_object_get(obj, key);

	assert_non_null(v);
	assert_true(json_is_string(v));
	assert_int_equal(json_string_length(v), strlen(want));
	assert_memory_equal(json_string_value(v), want, strlen(want));
}

static void check_hex(json_t *args, const char *key, uint64_t want)
{
	const char *s = json_string_value(json_object_get(args, key));
	char *end;

	assert_non_null(s);
	assert_true(s[0] == '0' && s[1] == 'x');
	assert_int_equal(strtoull(s + 2, &end, 16), want);
	assert_int_equal(*end, 0);
}

static void check_metadata(json_t *ev, const char *what, uint64_t tid, const char *name)
{
	assert_int_equal(json_object_size(ev), 5);
	check_string(ev, "ph", "M");
	check_string(ev, "name", what);
	assert_int_equal(json_integer_value(json_object_get(ev, "pid")), GEN_PID);
	assert_int_equal(json_integer_value(json_object_get(ev, "tid")), tid);
	check_string(json_object_get(ev, "args"), "name", name);
}

/* The instant event ("ph":"i","s":"t") named @what that goes with @w. */
static void check_instant(json_t *ev, const struct gen_event *w, const char *what, const char *name)
{
	static const char *const gp[8] = { "gp0", "gp1", "gp2", "gp3", "gp4", "gp5", "gp6", "gp7" };
	json_t *args = json_object_get(ev, "args");
	bool detail = !strcmp(what, "detail");

	check_string(ev, "ph", "i");
	check_string(ev, "s", "t");
	check_string(ev, "name", what);
	assert_int_equal(json_integer_value(json_object_get(ev, "tid")), GEN_TID0 + w->thread);
	assert_int_equal((uint64_t)(json_real_value(json_object_get(ev, "ts")) * 1000.0 + 0.5), w->ev.timestamp_ns);
	assert_non_null(args);
	check_string(args, "function", name);
	assert_int_equal(json_object_size(args), detail ? 1 + 1 + 13 : 1);
	if (!detail)
		return;
	check_string(args, "event", w->ev.event_kind == ATF_KIND_CALL ? "call" : "return");
	for (int r = 0; r < 8; r++)
		check_hex(args, gp[r], w->pl.gp[r]);
	check_hex(args, "lr", w->pl.lr);
	check_hex(args, "fp", w->pl.fp);
	check_hex(args, "sp", w->pl.sp);
	assert_int_equal(json_integer_value(json_object_get(args, "flags")), w->detail_flags);
	assert_int_equal(json_integer_value(json_object_get(args, "stack_size")), w->pl.stack_size);
}

/* The events for @w from events[*k] on: its B or E, and its instant events. */
static void check_event(json_t *events, size_t *k, const struct gen_event *w, const char *const *names,
			size_t *depth)
{
	bool call = w->ev.event_kind == ATF_KIND_CALL, exc = w->ev.event_kind == ATF_KIND_EXCEPTION;
	json_t *ev;
	char buf[32];
	const char *name = expected_name(w, names, buf);

	if (w->has_detail && !call)
		check_instant(json_array_get(events, (*k)++), w, "detail", name);
	if (exc)
		check_instant(json_array_get(events, (*k)++), w, "unwound", name);
	ev = json_array_get(events, (*k)++);
	check_string(ev, "ph", call ? "B" : "E");
	assert_int_equal(json_integer_value(json_object_get(ev, "pid")), GEN_PID);
	assert_int_equal(json_integer_value(json_object_get(ev, "tid")), GEN_TID0 + w->thread);
	assert_true(json_is_real(json_object_get(ev, "ts")));
	assert_int_equal((uint64_t)(json_real_value(json_object_get(ev, "ts")) * 1000.0 + 0.5), w->ev.timestamp_ns);
	check_string(ev, "name", name);
	assert_int_equal(json_object_size(ev), 5);     /* ph pid tid ts name: never args */
	if (call) {
		depth[w->thread]++;
	} else {
		assert_true(depth[w->thread] > 0);      /* every E closes an open B */
		depth[w->thread]--;
	}
	if (w->has_detail && call)
		check_instant(json_array_get(events, (*k)++), w, "detail", name);
}

static void export_and_check(struct gen *g, int64_t thread, uint64_t from, uint64_t to, size_t min_events,
			     const char *const *names)
{
	const struct gen_event **want = calloc(2 * g->n + 1, sizeof(*want));
	size_t n = gen_select(g, thread, from, to, want), len, k = 0;
	size_t depth[8] = { 0 };
	uint8_t *out = gen_export(g, &chrome_ops, thread, from, to, &len);
	json_error_t jerr;
	json_t *root = json_loadb((const char *)out, len, 0, &jerr), *events;
	char text[64];

	if (!root)
		fail_msg("jansson: %s at line %d column %d", jerr.text, jerr.line, jerr.column);
	assert_true(n >= min_events);
	assert_int_equal(json_object_size(root), 2);
	check_string(root, "displayTimeUnit", "ns");
	events = json_object_get(root, "traceEvents");
	assert_true(json_is_array(events));
	check_metadata(json_array_get(events, k++), "process_name", GEN_PID, gen_process_name);
	for (uint32_t t = 0; t < g->nthreads; t++)
		if ((thread < 0 || thread == t) && repaired_thread_names[t % 4])
			check_metadata(json_array_get(events, k++), "thread_name", GEN_TID0 + t,
				       repaired_thread_names[t % 4]);
	for (size_t i = 0; i < n; i++) {
		check_event(events, &k, want[i], names, depth);
		if (i < 8) {    /* the text itself keeps the nanosecond, whatever a double does */
			const char *at;

			snprintf(text, sizeof(text), "\"ts\":%" PRIu64 ".%03" PRIu64,
				 want[i]->ev.timestamp_ns / 1000, want[i]->ev.timestamp_ns % 1000);
			at = strstr((const char *)out, text);
			assert_non_null(at);
			assert_true(at[strlen(text)] == ',' || at[strlen(text)] == '}');
		}
	}
	assert_int_equal(json_array_size(events), k);
	for (uint32_t t = 0; t < g->nthreads; t++)
		assert_int_equal(depth[t], 0);          /* balanced: nothing left open */
	json_decref(root);
	free(out);
	free(want);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_roundtrip_three_threads(void **state)
{
	static const uint64_t gaps[] = { 0, 1, 7, 300, 999, 1000, 40000, 0x1000000 };
	struct gen g;

	gen_session(&g, 3, 700, gaps, 8, 0x777);
	export_and_check(&g, -1, 0, UINT64_MAX, 2100, repaired_names);
	gen_free(&g);
}

static void test_thread_and_range(void **state)
{
	static const uint64_t gaps[] = { 3, 1000, 20000000 };
	struct gen g;

	gen_session(&g, 2, 300, gaps, 3, 21);
	uint64_t from = g.ev[g.n / 3].ev.timestamp_ns, to = g.ev[g.n / 2].ev.timestamp_ns;

	export_and_check(&g, 1, from, to, 20, repaired_names);
	gen_free(&g);
}

/* Every byte string gives valid JSON that reads back as the Unicode-recommended repair. */
static void test_escaping(void **state)
{
	static const uint64_t gaps[] = { 10 };
	struct atf_manifest *m = NULL;
	struct gen g;
	char path[256];

	gen_session(&g, 1, 200, gaps, 1, 3);
	snprintf(path, sizeof(path), "%s/manifest.json", g.dir);
	assert_int_equal(atf_manifest__load(&m, path, NULL), 0);
	for (size_t i = 0; i < m->nsymbols; i++) {
		free(m->symbols[i].name);
		m->symbols[i].name = strdup(tricky_names[m->symbols[i].symbol_index - 1]);
	}
	assert_int_equal(atf_manifest__save(m, path), 0);
	atf_manifest__free(m);
	export_and_check(&g, -1, 0, UINT64_MAX, 200, tricky_decoded);

	size_t len;
	char *out = (char *)gen_export(&g, &chrome_ops, -1, 0, UINT64_MAX, &len);

	/* control characters escaped, DEL and '/' left alone */
	assert_non_null(strstr(out, "\"del\x7f ctl\\u001f\\b\\f\\r\\n/\""));
	free(out);
	gen_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_three_threads),
		cmocka_unit_test(test_thread_and_range),
		cmocka_unit_test(test_escaping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
