// SPDX-License-Identifier: MIT
/* timefmt.h: the one time syntax of every option, and the display of durations. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "timefmt.h"

static uint64_t parse_ok(const char *s, uint64_t bare)
{
	uint64_t v = 12345;

	assert_int_equal(timefmt_parse(s, bare, &v), 0);
	return v;
}

static void test_units(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("1500", TIMEFMT_NS), 1500);
	assert_int_equal(parse_ok("1500ns", TIMEFMT_S), 1500);
	assert_int_equal(parse_ok("20us", TIMEFMT_NS), 20000);
	assert_int_equal(parse_ok("1.5ms", TIMEFMT_NS), 1500000);
	assert_int_equal(parse_ok("2s", TIMEFMT_NS), 2000000000ull);
	assert_int_equal(parse_ok("1m", TIMEFMT_NS), 60000000000ull);
	assert_int_equal(parse_ok("1.5h", TIMEFMT_NS), 5400000000000ull);
	assert_int_equal(parse_ok("0", TIMEFMT_NS), 0);
	assert_int_equal(parse_ok("0.2", TIMEFMT_S), 200000000ull);        /* record --duration 0.2 */
	assert_int_equal(parse_ok("10", TIMEFMT_S), 10000000000ull);
	assert_int_equal(parse_ok("2.5us", TIMEFMT_NS), 2500);
	assert_int_equal(parse_ok("1.0000000009s", TIMEFMT_NS), 1000000000ull);  /* below 1 ns: dropped */
	assert_int_equal(parse_ok("0.123456789123456s", TIMEFMT_NS), 123456789ull);
	assert_int_equal(parse_ok("18446744073709551615", TIMEFMT_NS), UINT64_MAX);
	assert_int_equal(parse_ok("18446744073.709551615s", TIMEFMT_NS), UINT64_MAX);
}

/* 20µs as typed (U+00B5 and U+03BC), and compounds of descending units such as 1m30s */
static void test_micro_and_compound(void **state)
{
	static const char *const bad[] = {
		"30s1m", "1s1s", "1m30", "1m 30s", "1m-30s", "1ms1m", "1µ", "1µx", "1h1",
	};
	uint64_t v = 7;

	(void)state;
	assert_int_equal(parse_ok("20\u00b5s", TIMEFMT_NS), 20000);
	assert_int_equal(parse_ok("20\u03bcs", TIMEFMT_NS), 20000);
	assert_int_equal(parse_ok("1.5\u00b5s", TIMEFMT_S), 1500);
	assert_int_equal(parse_ok("1m30s", TIMEFMT_NS), 90000000000ull);
	assert_int_equal(parse_ok("1h2m3s4ms5us6ns", TIMEFMT_NS), 3723004005006ull);
	assert_int_equal(parse_ok("2s500ms", TIMEFMT_S), 2500000000ull);
	assert_int_equal(parse_ok("1m0.5s", TIMEFMT_NS), 60500000000ull);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(timefmt_parse(bad[i], TIMEFMT_NS, &v), -EINVAL);
	assert_int_equal(timefmt_parse("5124095h59m59s1000000000000ns", TIMEFMT_NS, &v), -ERANGE);
	assert_int_equal(v, 7);
	assert_non_null(strstr(timefmt_strerror(-EINVAL), "1m30s"));
}

static void test_errors(void **state)
{
	static const char *const bad[] = {
		"", "ms", "-1", "+1", " 1", "1 ms", "1.", ".5", "1.5.2", "3parsecs", "1e3", "1S", "1sec", "0x10", "1ms ",
	};
	uint64_t v = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(timefmt_parse(bad[i], TIMEFMT_NS, &v), -EINVAL);
		assert_int_equal(v, 7);         /* untouched on error */
	}
	assert_int_equal(timefmt_parse(NULL, TIMEFMT_NS, &v), -EINVAL);
	assert_non_null(strstr(timefmt_strerror(-EINVAL), "1.5ms"));
}

static void test_overflow(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(timefmt_parse("1000000000000000000s", TIMEFMT_NS, &v), -ERANGE);   /* 1e18 s */
	assert_int_equal(timefmt_parse("1000000000000000000", TIMEFMT_S, &v), -ERANGE);
	assert_int_equal(timefmt_parse("18446744073709551616", TIMEFMT_NS, &v), -ERANGE);
	assert_int_equal(timefmt_parse("99999999999999999999999999ns", TIMEFMT_NS, &v), -ERANGE);
	assert_int_equal(timefmt_parse("18446744073.709551616s", TIMEFMT_NS, &v), -ERANGE);
	assert_int_equal(timefmt_parse("5124096h", TIMEFMT_NS, &v), -ERANGE);
	assert_int_equal(v, 7);
	assert_non_null(strstr(timefmt_strerror(-ERANGE), "too large"));
}

static void test_format(void **state)
{
	static const struct { uint64_t ns; const char *want; } cases[] = {
		{ 0, "0 ns" }, { 999, "999 ns" }, { 1000, "1.000 us" }, { 1234, "1.234 us" },
		{ 999999, "999.999 us" }, { 1000000, "1.000 ms" }, { 12345678, "12.345 ms" },
		{ 3500000000ull, "3.500 s" }, { UINT64_MAX, "18446744073.709 s" },
	};
	char buf[TIMEFMT_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(timefmt_format(buf, sizeof(buf), cases[i].ns), cases[i].want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_micro_and_compound),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
