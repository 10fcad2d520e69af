// SPDX-License-Identifier: MIT
/* Unit tests for the call-site hand-back's reading of tracefs's uprobe_events lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "record_call_sites.h"

static bool parse(const char *text, char *buf, const char **path, uint64_t *off)
{
	strcpy(buf, text);
	return record_cs_parse_uprobe_event(buf, path, off);
}

static void test_uprobe_lines(void **state)
{
	char buf[256];
	const char *path;
	uint64_t off;

	(void)state;
	assert_true(parse("p:uprobes/p_x_0x1139 /usr/bin/x:0x0000000000001139\n", buf, &path, &off));
	assert_string_equal(path, "/usr/bin/x");
	assert_int_equal(off, 0x1139);
	/* a return probe, a reference counter, arguments */
	assert_true(parse("r:g/ret /lib/a b.so:0x20(0x4008) x=%di:s32\n", buf, &path, &off) == false);
	assert_true(parse("r:g/ret /lib/ab.so:0x20(0x4008) x=%di:s32\n", buf, &path, &off));
	assert_string_equal(path, "/lib/ab.so");
	assert_int_equal(off, 0x20);
	assert_true(parse("p:atf/trmov /t/callsites:0x127f x=%di:s32\n", buf, &path, &off));
	assert_string_equal(path, "/t/callsites");
	assert_int_equal(off, 0x127f);
}

static void test_other_lines(void **state)
{
	char buf[256];
	const char *path = NULL;
	uint64_t off = 0;

	(void)state;
	/* kprobes (dynamic_events lists them too), relative paths, no offset, junk */
	assert_false(parse("p:kprobes/open do_sys_open+0\n", buf, &path, &off));
	assert_false(parse("p:g/e bin/x:0x10\n", buf, &path, &off));
	assert_false(parse("p:g/e /bin/x\n", buf, &path, &off));
	assert_false(parse("p:g/e /bin/x:\n", buf, &path, &off));
	assert_false(parse("p:g/e /bin/x:0x10zz\n", buf, &path, &off));
	assert_false(parse("e:g/e syscalls/sys_enter_open\n", buf, &path, &off));
	assert_false(parse("\n", buf, &path, &off));
	assert_null(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uprobe_lines),
		cmocka_unit_test(test_other_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
