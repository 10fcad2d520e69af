// SPDX-License-Identifier: MIT
/* utf8.h: validation, maximal-subpart repair and JSON quoting, byte for byte. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "utf8.h"

#define FFFD "\xEF\xBF\xBD"

static void check_lossy(const char *in, const char *want)
{
	size_t len = strlen(in);
	char *buf = malloc(UTF8_LOSSY_BOUND(len) + 1), *dup = utf8_lossy_dup(in);

	assert_non_null(buf);
	assert_non_null(dup);
	*utf8_put_lossy(buf, in, len) = '\0';
	assert_string_equal(buf, want);
	assert_string_equal(dup, want);
	assert_true(utf8_valid(buf, strlen(buf)));
	assert_int_equal(utf8_valid(in, len), strcmp(in, want) == 0);
	free(buf);
	free(dup);
}

static void test_lossy_maximal_subparts(void **state)
{
	(void)state;
	check_lossy("", "");
	check_lossy("plain", "plain");
	check_lossy("caf\xc3\xa9 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", "caf\xc3\xa9 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf");
	check_lossy("bad\xff", "bad" FFFD);
	check_lossy("\xc0\xaf", FFFD FFFD);                     /* overlong lead: each byte alone */
	check_lossy("\xe0\x80\xaf", FFFD FFFD FFFD);            /* overlong 3-byte form */
	check_lossy("\xed\xa0\x80", FFFD FFFD FFFD);            /* surrogate */
	check_lossy("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD);   /* past U+10FFFF */
	check_lossy("\xe2\x82", FFFD);                          /* truncated: one maximal subpart */
	check_lossy("\xf0\x9f\x98(", FFFD "(");
	check_lossy("\xe2\x82\xe2\x82\xac", FFFD "\xe2\x82\xac");
	check_lossy("\x80\xbf", FFFD FFFD);                     /* lone continuation bytes */
}

static void check_json(const char *in, const char *want)
{
	size_t len = strlen(in);
	char *buf = malloc(UTF8_JSON_BOUND(len) + 1);

	assert_non_null(buf);
	*utf8_put_json(buf, in, len) = '\0';
	assert_string_equal(buf, want);
	free(buf);
}

static void test_json(void **state)
{
	(void)state;
	check_json("", "\"\"");
	check_json("a\"b\\c/", "\"a\\\"b\\\\c/\"");
	check_json("\n\t\r\b\f\x01\x1f\x7f", "\"\\n\\t\\r\\b\\f\\u0001\\u001f\x7f\"");
	check_json("x\xff\xc3(\xe2\x82\xac", "\"x" FFFD FFFD "(\xe2\x82\xac\"");
	check_json("\xe2\x82\"", "\"" FFFD "\\\"\"");   /* a truncated sequence never swallows the quote */
}

static void test_valid_embedded_nul(void **state)
{
	(void)state;
	assert_true(utf8_valid("a\0b", 3));
	assert_false(utf8_valid("a\0\xff", 3));
	assert_false(utf8_valid("\xc3", 1));
	assert_true(utf8_valid("\xc3\xa9", 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lossy_maximal_subparts),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_valid_embedded_nul),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
