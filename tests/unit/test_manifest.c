// SPDX-License-Identifier: MIT
/*
 * manifest.json (user/atf/manifest.c): round trip of every field, escaping of quotes, backslashes,
 * control characters and non-UTF-8 bytes, the accepted function_id forms, module ids, symbol
 * lookup, and malformed manifests rejected with -ATF_E_MANIFEST and a message naming the key.
 */
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

static char tmpdir[] = "/tmp/test_manifest.XXXXXX";
static char path[256];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(path, sizeof(path), "%s/manifest.json", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

static void write_text(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_text(void)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static struct atf_manifest *save_and_load(const struct atf_manifest *m)
{
	struct atf_manifest *back = NULL;
	struct atf_diag diag = { 0 };
	char tmp[300];

	assert_int_equal(atf_manifest__save(m, path), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	assert_int_not_equal(access(tmp, F_OK), 0);   /* renamed away */
	assert_int_equal(atf_manifest__load(&back, path, &diag), 0);
	return back;
}

static void assert_str_or_null(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void test_module_id(void **state)
{
	(void)state;
	assert_int_equal(atf_module_id("a"), 0xE40C292Cu);          /* FNV-1a-32 reference value */
	assert_int_equal(atf_module_id(""), 0x811C9DC5u);
	assert_int_equal(atf_module_id("/USR/Lib/LIBC.so.6"), atf_module_id("/usr/lib/libc.so.6"));
	assert_int_not_equal(atf_module_id("/usr/lib/libc.so.6"), atf_module_id("/usr/lib/libm.so.6"));
}

static void test_round_trip_every_field(void **state)
{
	struct atf_manifest *m = atf_manifest__new(), *b;
	struct atf_thread_info *t;
	struct atf_module *mod;
	struct atf_symbol *s;

	(void)state;
	m->clock_type = 3;
	m->time_start_ns = 1234567890123456789ull;
	m->time_end_ns = 1234567890999999999ull;
	m->pid = 4242, m->ns_pid = 7;
	m->process_name = strdup("prog");
	m->argv = calloc(3, sizeof(char *));
	m->argv[0] = strdup("prog"), m->argv[1] = strdup("-x"), m->argv[2] = strdup("");
	m->argc = 3;
	m->lost_events = 11, m->lost_detail = 12, m->lost_records = 13;
	m->kernel = strdup("6.18.0"), m->host = strdup("box"), m->atftrace_version = strdup("v1");
	m->start_time = strdup("2024-05-06T07:08:09Z"), m->end_reason = strdup("signal");
	t = atf_manifest__add_thread(m, 0, 4242, "main");
	t->ns_tid = 7, t->has_detail = true, t->index_events = 1000, t->detail_events = 10;
	t = atf_manifest__add_thread(m, 1, 4243, NULL);
	t->index_events = 5, t->lost_calls = 3, t->lost_returns = 5;
	mod = atf_manifest__add_module(m, "/usr/bin/prog");
	mod->base_address = 0x55550000a000ull, mod->size = 0x3000, mod->build_id = strdup("abcdef");
	atf_manifest__add_module(m, "/lib/x.so");   /* moves the array: mod is stale from here */
	s = atf_manifest__add_symbol(m, m->modules[0].module_id, 1, "main");
	s->address = 0x1139, s->size = 42;
	s = atf_manifest__add_symbol(m, 0xffffffffu, 0xffffffffu, "_ZN1a1bEv");
	s->demangled = strdup("a::b()");

	b = save_and_load(m);
	assert_string_equal(b->format_version, "2.1");
	assert_int_equal(b->clock_type, 3);
	assert_true(b->time_start_ns == m->time_start_ns && b->time_end_ns == m->time_end_ns);
	assert_int_equal(b->pid, 4242);
	assert_int_equal(b->ns_pid, 7);
	assert_string_equal(b->process_name, "prog");
	assert_int_equal(b->argc, 3);
	for (int i = 0; i < 3; i++)
		assert_string_equal(b->argv[i], m->argv[i]);
	assert_int_equal(b->lost_events, 11);
	assert_int_equal(b->lost_detail, 12);
	assert_int_equal(b->lost_records, 13);
	assert_string_equal(b->kernel, "6.18.0");
	assert_string_equal(b->host, "box");
	assert_string_equal(b->atftrace_version, "v1");
	assert_string_equal(b->start_time, "2024-05-06T07:08:09Z");
	assert_string_equal(b->end_reason, "signal");
	assert_int_equal(b->nthreads, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(b->threads[i].id, m->threads[i].id);
		assert_int_equal(b->threads[i].tid, m->threads[i].tid);
		assert_int_equal(b->threads[i].ns_tid, m->threads[i].ns_tid);
		assert_str_or_null(b->threads[i].name, m->threads[i].name);
		assert_int_equal(b->threads[i].has_detail, m->threads[i].has_detail);
		assert_int_equal(b->threads[i].index_events, m->threads[i].index_events);
		assert_int_equal(b->threads[i].detail_events, m->threads[i].detail_events);
		assert_int_equal(b->threads[i].lost_calls, m->threads[i].lost_calls);
		assert_int_equal(b->threads[i].lost_returns, m->threads[i].lost_returns);
	}
	assert_int_equal(b->nmodules, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(b->modules[i].module_id, m->modules[i].module_id);
		assert_string_equal(b->modules[i].path, m->modules[i].path);
		assert_true(b->modules[i].base_address == m->modules[i].base_address);
		assert_true(b->modules[i].size == m->modules[i].size);
		assert_str_or_null(b->modules[i].build_id, m->modules[i].build_id);
	}
	assert_int_equal(b->nsymbols, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_true(b->symbols[i].function_id == m->symbols[i].function_id);
		assert_int_equal(b->symbols[i].module_id, m->symbols[i].module_id);
		assert_int_equal(b->symbols[i].symbol_index, m->symbols[i].symbol_index);
		assert_string_equal(b->symbols[i].name, m->symbols[i].name);
		assert_str_or_null(b->symbols[i].demangled, m->symbols[i].demangled);
		assert_true(b->symbols[i].address == m->symbols[i].address);
		assert_true(b->symbols[i].size == m->symbols[i].size);
	}
	atf_manifest__free(b);
	atf_manifest__free(m);
}

/* The written text: reference key forms and order, ids as strings. */
/* Record-time filter fields: written only for a session with filters, and read back. */
static void test_round_trip_filters(void **state)
{
	struct atf_manifest *m = atf_manifest__new(), *b;
	struct atf_thread_info *t;

	(void)state;
	t = atf_manifest__add_thread(m, 0, 4242, "main");
	t->filtered[ATF_FILTERED_TIME] = 7;
	b = save_and_load(m);     /* no filters: the keys are not written, the counts stay 0 */
	assert_null(b->record_filter);
	assert_int_equal(b->threads[0].filtered[ATF_FILTERED_TIME], 0);
	atf_manifest__free(b);
	m->record_filter = strdup("-t 10us -D 3");
	m->filter_min_ns = 10000;
	for (unsigned r = 0; r < ATF_FILTERED_REASONS; r++) {
		m->filtered[r] = 100 + r;
		t->filtered[r] = 10 + r;
	}
	b = save_and_load(m);
	assert_string_equal(b->record_filter, "-t 10us -D 3");
	assert_int_equal(b->filter_min_ns, 10000);
	for (unsigned r = 0; r < ATF_FILTERED_REASONS; r++) {
		assert_int_equal(b->filtered[r], 100 + r);
		assert_int_equal(b->threads[0].filtered[r], 10 + r);
	}
	assert_string_equal(atf_filtered_key(ATF_FILTERED_TIME), "filtered_time");
	atf_manifest__free(b);
	atf_manifest__free(m);
}

static void test_schema_text(void **state)
{
	struct atf_manifest *m = atf_manifest__new();
	struct atf_module *mod;
	char *text, *last;

	(void)state;
	atf_manifest__add_thread(m, 0, 1, "t");
	mod = atf_manifest__add_module(m, "/bin/x");
	mod->base_address = 0x400000;
	atf_manifest__add_symbol(m, 1, 0xab, "f");
	assert_int_equal(atf_manifest__save(m, path), 0);
	text = read_text();
	assert_non_null(strstr(text, "\"function_id\": \"0x00000001000000ab\""));
	assert_non_null(strstr(text, "\"base_address\": \"0x400000\""));
	assert_non_null(strstr(text, "\"clock_type\": 3"));
	assert_ptr_equal(strstr(text, "\"threads\""), strchr(text, '"'));   /* first key */
	last = strrchr(text, ',');
	assert_non_null(strstr(last, "\"format_version\": \"2.1\""));       /* last key */
	free(text);
	atf_manifest__free(m);
}

static void test_escaping_and_raw_bytes(void **state)
{
	static const char *const names[] = {
		"quote\"back\\slash", "ctl\x01\x1f\n\t\r", "bad\xff", "lone\xc3", "overlong\xc0\xaf",
		"surrogate\xed\xa0\x80", "ok \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\x80\x80",
	};
	const size_t n = sizeof(names) / sizeof(names[0]);
	struct atf_manifest *m = atf_manifest__new(), *b;
	char *text;

	(void)state;
	m->process_name = strdup(names[2]);
	m->argv = calloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		m->argv[m->argc++] = strdup(names[i]);
		atf_manifest__add_thread(m, (uint32_t)i, 1, names[i]);
		atf_manifest__add_module(m, names[i]);
		atf_manifest__add_symbol(m, 1, (uint32_t)i + 1, names[i])->demangled = strdup(names[(i + 1) % n]);
	}
	b = save_and_load(m);
	assert_string_equal(b->process_name, names[2]);
	assert_int_equal(b->argc, n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(b->argv[i], names[i]);
		assert_string_equal(b->threads[i].name, names[i]);
		assert_string_equal(b->modules[i].path, names[i]);
		assert_string_equal(b->symbols[i].name, names[i]);
		assert_string_equal(b->symbols[i].demangled, names[(i + 1) % n]);
	}
	text = read_text();
	assert_null(strchr(text, '\x01'));                          /* control chars escaped */
	assert_non_null(strstr(text, "ctl\\u0001\\u001F\\n\\t\\r"));
	assert_non_null(strstr(text, "quote\\\"back\\\\slash"));
	assert_non_null(strstr(text, "\"name\": \"bad\xef\xbf\xbd\""));   /* lossy form for other readers */
	assert_non_null(strstr(text, "\"name_hex\": \"626164ff\""));       /* exact form for us */
	assert_non_null(strstr(text, "\"argv_hex\""));
	assert_null(strstr(text, "\"name_hex\": \"717565"));            /* valid UTF-8 has no _hex */
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		assert_true(*p != 0xff && *p != 0xc0);   /* the file itself is clean UTF-8 */
	free(text);
	atf_manifest__free(b);
	atf_manifest__free(m);
}

static void test_function_id_forms(void **state)
{
	struct atf_manifest *m = NULL;
	struct atf_diag diag = { 0 };

	(void)state;
	write_text("{\"threads\": [], \"symbols\": ["
		   "{\"function_id\": \"0x00000001000000AA\", \"name\": \"hex\"},"
		   "{\"function_id\": \"4294967467\", \"name\": \"dec\"},"
		   "{\"function_id\": 4294967468, \"name\": \"num\"},"
		   "{\"function_id\": \"0xffffffffffffffff\", \"name\": \"max\"}], \"format_version\": \"2.1\"}");
	assert_int_equal(atf_manifest__load(&m, path, &diag), 0);
	assert_int_equal(m->nsymbols, 4);
	assert_string_equal(atf_manifest__symbol(m, 0x1000000aaull)->name, "hex");
	assert_string_equal(atf_manifest__symbol(m, 0x1000000abull)->name, "dec");
	assert_string_equal(atf_manifest__symbol(m, 0x1000000acull)->name, "num");
	assert_string_equal(atf_manifest__symbol(m, UINT64_MAX)->name, "max");
	assert_int_equal(atf_manifest__symbol(m, 0x1000000acull)->module_id, 1);   /* derived from the id */
	assert_int_equal(atf_manifest__symbol(m, 0x1000000acull)->symbol_index, 0xac);
	assert_null(atf_manifest__symbol(m, 0x1000000adull));
	atf_manifest__free(m);
}

static void test_symbol_lookup(void **state)
{
	struct atf_manifest *m = atf_manifest__new();

	(void)state;
	for (uint32_t i = 0; i < 1000; i++) {   /* added out of order */
		char name[16];

		snprintf(name, sizeof(name), "f%u", (i * 7919) % 1000);
		atf_manifest__add_symbol(m, 5, (i * 7919) % 1000 + 1, name);
	}
	for (uint32_t i = 0; i < 1000; i++) {
		const struct atf_symbol *s = atf_manifest__symbol(m, (uint64_t)5 << 32 | (i + 1));
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		assert_non_null(s);
		assert_string_equal(s->name, name);
	}
	assert_null(atf_manifest__symbol(m, (uint64_t)5 << 32));
	assert_null(atf_manifest__symbol(m, (uint64_t)6 << 32 | 1));
	atf_manifest__free(m);
}

static void test_malformed_rejected(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "", "line" },
		{ "{\"threads\": [", "line" },
		{ "[1, 2]", "top level" },
		{ "{}", "\"threads\": missing" },
		{ "{\"threads\": {}}", "\"threads\": expected an array" },
		{ "{\"threads\": [{\"id\": \"0\"}]}", "threads[0].\"id\"" },
		{ "{\"threads\": [{\"tid\": 1}]}", "threads[0].\"id\"" },
		{ "{\"threads\": [{\"id\": -1}]}", "threads[0].\"id\"" },
		{ "{\"threads\": [{\"id\": 4294967296}]}", "threads[0].\"id\"" },
		{ "{\"threads\": [{\"id\": 0}, 5]}", "threads[1].\"id\"" },
		{ "{\"threads\": [{\"id\": 0, \"has_detail\": 1}]}", "\"has_detail\"" },
		{ "{\"threads\": [{\"id\": 0, \"name\": 3}]}", "threads[0].\"name\"" },
		{ "{\"threads\": [{\"id\": 0, \"name_hex\": \"abc\"}]}", "\"name_hex\"" },
		{ "{\"threads\": [{\"id\": 0, \"name_hex\": \"6100\"}]}", "\"name_hex\"" },
		{ "{\"threads\": [{\"id\": 0, \"name_hex\": \"zz\"}]}", "\"name_hex\"" },
		{ "{\"threads\": [], \"clock_type\": 300}", "\"clock_type\"" },
		{ "{\"threads\": [], \"time_start_ns\": \"5\"}", "\"time_start_ns\"" },
		{ "{\"threads\": [], \"time_end_ns\": 1.5}", "\"time_end_ns\"" },
		{ "{\"threads\": [], \"argv\": \"a b\"}", "\"argv\"" },
		{ "{\"threads\": [], \"argv\": [\"a\", 2]}", "\"argv\"[1]" },
		{ "{\"threads\": [], \"argv\": [\"a\"], \"argv_hex\": []}", "\"argv_hex\"" },
		{ "{\"threads\": [], \"modules\": [{\"module_id\": 1}]}", "modules[0].\"path\"" },
		{ "{\"threads\": [], \"modules\": [{\"path\": \"/x\", \"base_address\": \"zz\"}]}", "\"base_address\"" },
		{ "{\"threads\": [], \"modules\": [7]}", "modules[0]" },
		{ "{\"threads\": [], \"symbols\": [{\"name\": \"f\"}]}", "symbols[0].\"function_id\"" },
		{ "{\"threads\": [], \"symbols\": [{\"function_id\": \"0x1\"}]}", "symbols[0].\"name\"" },
		{ "{\"threads\": [], \"symbols\": [{\"function_id\": \"0xZZ\", \"name\": \"f\"}]}", "\"function_id\"" },
		{ "{\"threads\": [], \"symbols\": [{\"function_id\": \"\", \"name\": \"f\"}]}", "\"function_id\"" },
		{ "{\"threads\": [], \"symbols\": [{\"function_id\": \"-1\", \"name\": \"f\"}]}", "\"function_id\"" },
		{ "{\"threads\": [], \"symbols\": [{\"function_id\": true, \"name\": \"f\"}]}", "\"function_id\"" },
		{ "{\"threads\": [], \"symbols\": [{\"function_id\": \"0x1ffffffffffffffff\", \"name\": \"f\"}]}",
		  "\"function_id\"" },
		{ "{\"threads\": [], \"threads\": []}", "duplicate" },
		{ "{\"threads\": [], \"format_version\": 2.1}", "\"format_version\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct atf_manifest *m = (struct atf_manifest *)&cases;   /* must be reset to NULL */
		struct atf_diag diag = { 0 };

		write_text(cases[i].text);
		if (atf_manifest__load(&m, path, &diag) != -ATF_E_MANIFEST || !strstr(diag.msg, cases[i].msg))
			fail_msg("case %zu (%s): got message '%s', wanted '%s'", i, cases[i].text, diag.msg, cases[i].msg);
		assert_null(m);
		assert_string_equal(diag.file, path);
	}
}

static void test_missing_file(void **state)
{
	struct atf_manifest *m = NULL;
	struct atf_diag diag = { 0 };

	(void)state;
	unlink(path);
	assert_int_equal(atf_manifest__load(&m, path, &diag), -ATF_E_MANIFEST);
	assert_null(m);
	assert_non_null(strstr(diag.msg, "cannot read"));
}

/* Reference manifests (no counts, no tids, ids only) load. */
static void test_reference_manifest(void **state)
{
	struct atf_manifest *m = NULL;
	struct atf_diag diag = { 0 };

	(void)state;
	write_text("{\"threads\": [{\"id\": 0, \"has_detail\": true}, {\"id\": 1, \"has_detail\": true}],"
		   " \"time_start_ns\": 0, \"time_end_ns\": 0, \"clock_type\": 1,"
		   " \"modules\": [{\"module_id\": 305419896, \"path\": \"/a\", \"base_address\": \"0x1000\","
		   " \"size\": 4096, \"uuid\": \"ABCDEF01-2345-6789-ABCD-EF0123456789\"}],"
		   " \"symbols\": [{\"function_id\": \"0x1234567800000001\", \"module_id\": 305419896,"
		   " \"symbol_index\": 1, \"name\": \"f\"}], \"format_version\": \"2.1\"}");
	assert_int_equal(atf_manifest__load(&m, path, &diag), 0);
	assert_int_equal(m->nthreads, 2);
	assert_int_equal(m->threads[1].id, 1);
	assert_true(m->threads[1].has_detail);
	assert_int_equal(m->clock_type, 1);
	assert_int_equal(m->modules[0].module_id, 305419896);   /* the file's id wins */
	assert_true(m->modules[0].base_address == 0x1000);
	assert_string_equal(atf_manifest__symbol(m, 0x1234567800000001ull)->name, "f");
	atf_manifest__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_id),
		cmocka_unit_test(test_round_trip_every_field),
		cmocka_unit_test(test_round_trip_filters),
		cmocka_unit_test(test_schema_text),
		cmocka_unit_test(test_escaping_and_raw_bytes),
		cmocka_unit_test(test_function_id_forms),
		cmocka_unit_test(test_symbol_lookup),
		cmocka_unit_test(test_malformed_rejected),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_reference_manifest),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
