// SPDX-License-Identifier: MIT
/* textfmt.h: names from the target escaped for a terminal, and plurals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "textfmt.h"

static void test_escape(void **state)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "main", "main" },
		{ "a b\tc\nd\re", "a b\\tc\\nd\\re" },
		{ "\033]0;owned\007", "\\x1b]0;owned\\x07" },          /* an OSC title */
		{ "\033[2J\033[H", "\\x1b[2J\\x1b[H" },                 /* a clear-screen */
		{ "back\\slash", "back\\slash" },
		{ "del\x7f", "del\\x7f" },
		{ "\xc2\x9b" "31m", "\\xc2\\x9b31m" },                  /* C1 CSI in UTF-8 */
		{ "\x9b" "31m", "\\x9b31m" },                           /* a lone CSI byte */
		{ "caf\xc3\xa9 \xce\xbcs \xe2\x82\xac", "caf\xc3\xa9 \xce\xbcs \xe2\x82\xac" },  /* text stays */
		{ "\xe2\x82", "\\xe2\\x82" },                           /* cut UTF-8 */
		{ "", "" },
	};
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(textfmt_escape(buf, sizeof(buf), cases[i].in), cases[i].want);
	assert_string_equal(textfmt_escape(buf, sizeof(buf), NULL), "-");
	assert_string_equal(textfmt_show("x\033y"), "x\\x1by");
}

static void test_cut(void **state)
{
	char buf[10], big[5000];

	(void)state;
	assert_string_equal(textfmt_escape(buf, sizeof(buf), "abcdefghijkl"), "abcdef...");
	assert_string_equal(textfmt_escape(buf, sizeof(buf), "abcdefghi"), "abcdefghi");
	assert_string_equal(textfmt_escape(buf, sizeof(buf), "abcde\033xyz"), "abcde...");   /* no half escape */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(strlen(textfmt_show(big)), 4095);
}

static void test_fputs(void **state)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	(void)state;
	assert_non_null(f);
	textfmt_fputs("t\033[Hx", f);
	fclose(f);
	assert_string_equal(out, "t\\x1b[Hx");
	free(out);
}

static void test_plural(void **state)
{
	(void)state;
	assert_string_equal(textfmt_plural(1, "function", "functions"), "function");
	assert_string_equal(textfmt_plural(0, "function", "functions"), "functions");
	assert_string_equal(textfmt_plural(12, "process", "processes"), "processes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_fputs),
		cmocka_unit_test(test_plural),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
