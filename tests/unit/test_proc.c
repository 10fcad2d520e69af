// SPDX-License-Identifier: MIT
/* Unit tests for the pure parts of the recorder's helpers: /proc/PID/maps lines and -f splitting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "proc.h"
#include "record_modules.h"

static void test_maps_line_file(void **state)
{
	char line[] = "7f3a10500000-7f3a10519000 r-xp 00012000 fe:01 1234567                    "
		      "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6\n";
	uint64_t start, end, off;
	bool exec;
	char *path;

	assert_int_equal(proc_maps_parse_line(line, &start, &end, &exec, &off, &path), 1);
	assert_int_equal(start, 0x7f3a10500000ull);
	assert_int_equal(end, 0x7f3a10519000ull);
	assert_true(exec);
	assert_int_equal(off, 0x12000);
	assert_string_equal(path, "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6");
}

static void test_maps_line_anonymous_and_pseudo(void **state)
{
	char anon[] = "7ffd1000-7ffd2000 rw-p 00000000 00:00 0 \n";
	char vdso[] = "7ffd3000-7ffd4000 r-xp 00000000 00:00 0                          [vdso]";
	char spaces[] = "1000-2000 r--p 00000000 08:01 42   /tmp/with space/lib x.so (deleted)";
	uint64_t start, end, off;
	bool exec;
	char *path;

	assert_int_equal(proc_maps_parse_line(anon, &start, &end, &exec, &off, &path), 1);
	assert_null(path);
	assert_false(exec);
	assert_int_equal(proc_maps_parse_line(vdso, &start, &end, &exec, &off, &path), 1);
	assert_string_equal(path, "[vdso]");
	assert_int_equal(proc_maps_parse_line(spaces, &start, &end, &exec, &off, &path), 1);
	assert_string_equal(path, "/tmp/with space/lib x.so (deleted)");
}

static void test_maps_line_malformed(void **state)
{
	const char *bad[] = { "", "zzzz", "1000-", "1000-2000", "1000-2000 r-x", "1000-2000 r-xp",
			      "1000-2000 r-xp 0", "1000-2000 r-xp 00000000 08:01", "-2000 r-xp 0 0:0 0 /x" };
	uint64_t start, end, off;
	bool exec;
	char *path;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[64];
		strcpy(buf, bad[i]);
		assert_int_equal(proc_maps_parse_line(buf, &start, &end, &exec, &off, &path), 0);
	}
}

static void test_split_module(void **state)
{
	assert_int_equal(rm_split("main"), -1);
	assert_int_equal(rm_split("libc.so.6:malloc"), 9);
	assert_int_equal(rm_split("/usr/lib/libz.so.1:inflate*"), 18);
	assert_int_equal(rm_split("ns::func*"), -1);                /* C++ scope, not a module */
	assert_int_equal(rm_split("libx.so:ns::f"), 7);
	assert_int_equal(rm_split(":glob"), -1);                    /* empty module: all a glob */
	assert_int_equal(rm_split("std::vector<int>::push_back"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_line_file),
		cmocka_unit_test(test_maps_line_anonymous_and_pseudo),
		cmocka_unit_test(test_maps_line_malformed),
		cmocka_unit_test(test_split_module),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
