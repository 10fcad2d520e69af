// SPDX-License-Identifier: MIT
/*
 * Record-time filter options (user/record/record_filter.c): -D, -t, -F, -N, -T and --trace
 * through argp, the -T trigger syntax, and the spec string kept for the manifest.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "atftrace.h"
#include "record_filter.h"

/* Parse @args (NULL-terminated) with filter_argp alone; errors return instead of exiting. */
static int parse(struct filter_args *f, ...)
{
	char *argv[16] = { "record" };
	int argc = 1;
	va_list ap;

	va_start(ap, f);
	for (char *a; (a = va_arg(ap, char *)) && argc < 15; )
		argv[argc++] = a;
	va_end(ap);
	return argp_parse(&filter_argp, argc, argv, ARGP_NO_EXIT | ARGP_NO_ERRS | ARGP_NO_HELP,
			  NULL, f);
}

static void test_defaults(void **state)
{
	struct filter_args f;

	(void)state;
	assert_int_equal(parse(&f, NULL), 0);
	assert_false(filter_active(&f));
	assert_null(f.spec);
	filter_args_free(&f);
}

static void test_options(void **state)
{
	struct filter_args f;

	(void)state;
	assert_int_equal(parse(&f, "-D", "3", "-t", "10us", "-F", "libc.so.6:mem*", "-N", "leaf",
			       "--trace=off", NULL), 0);
	assert_true(filter_active(&f));
	assert_int_equal(f.max_depth, 3);
	assert_int_equal(f.min_ns, 10000);
	assert_true(f.trace_off);
	assert_int_equal(f.nrules, 2);
	assert_string_equal(f.rules[0].spec, "libc.so.6:mem*");
	assert_int_equal(f.rules[0].flags, FILTER_FN_FOCUS);
	assert_int_equal(f.rules[1].flags, FILTER_FN_NOTRACE);
	assert_string_equal(f.spec, "-D 3 -t 10us -F libc.so.6:mem* -N leaf --trace off");
	filter_args_free(&f);
	/* a bare -t number is in nanoseconds, as dump's --min-duration */
	assert_int_equal(parse(&f, "--time-filter", "1500", "--depth=7", NULL), 0);
	assert_int_equal(f.min_ns, 1500);
	assert_int_equal(f.max_depth, 7);
	filter_args_free(&f);
}

static void test_bad_options(void **state)
{
	static const char *const bad[][2] = {
		{ "-D", "0" }, { "-D", "-1" }, { "-D", "x" }, { "-D", "4294967295" }, { "-t", "0" },
		{ "-t", "5 parsecs" }, { "--trace", "maybe" }, { "-T", "main" }, { "-T", "@trace_on" },
		{ "-T", "main@" }, { "-T", "main@depth=" }, { "-T", "main@depth=0" },
		{ "-T", "main@trace_on,,depth=2" }, { "-T", "main@trace_on," }, { "-T", "main@color=red" },
		{ "-T", "main@filter,notrace" }, { "-T", "main@trace_on,trace_off" }, { "-F", "" },
	};
	struct filter_args f;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_not_equal(parse(&f, bad[i][0], bad[i][1], NULL), 0);
		filter_args_free(&f);
	}
}

static void test_triggers(void **state)
{
	struct filter_rule r;
	const char *why = NULL;

	(void)state;
	assert_int_equal(filter_parse_trigger("outer@depth=2,trace_off", &r, &why), 0);
	assert_string_equal(r.spec, "outer");
	assert_int_equal(r.flags, FILTER_FN_DEPTH | FILTER_FN_TRACE_OFF);
	assert_int_equal(r.depth, 2);
	free(r.spec);
	assert_int_equal(filter_parse_trigger("lib.so:f*@trace-on,filter,detail", &r, &why), 0);
	assert_string_equal(r.spec, "lib.so:f*");
	assert_int_equal(r.flags, FILTER_FN_TRACE_ON | FILTER_FN_FOCUS);
	assert_true(r.detail);
	free(r.spec);
	/* the last '@' splits: a name may hold one */
	assert_int_equal(filter_parse_trigger("a@b@notrace", &r, &why), 0);
	assert_string_equal(r.spec, "a@b");
	assert_int_equal(r.flags, FILTER_FN_NOTRACE);
	free(r.spec);
	assert_int_not_equal(filter_parse_trigger("f@backtrace", &r, &why), 0);
	assert_non_null(strstr(why, "not one of"));
}

static void test_depth_syntax(void **state)
{
	uint32_t d = 0;

	(void)state;
	assert_int_equal(filter_parse_depth("1", &d), 0);
	assert_int_equal(d, 1);
	assert_int_equal(filter_parse_depth("4294967294", &d), 0);
	assert_int_equal(filter_parse_depth("+3", &d), -EINVAL);
	assert_int_equal(filter_parse_depth("", &d), -EINVAL);
	assert_int_equal(filter_parse_depth("3x", &d), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_triggers),
		cmocka_unit_test(test_depth_syntax),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
