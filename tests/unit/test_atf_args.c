// SPDX-License-Identifier: MIT
/* atf_args.h: -A/-R spec parsing, args.txt lines, the string block, and value formatting. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "atf_args.h"

static void parse_ok(const char *text, const char *want_formatted)
{
	struct atf_arg_spec s = { .n = 0 };
	char err[256] = "", buf[1024];

	assert_int_equal(atf_arg_spec_parse(text, &s, err, sizeof(err)), 0);
	assert_non_null(atf_arg_spec_format(&s, buf, sizeof(buf)));
	assert_string_equal(buf, want_formatted);
	atf_arg_spec_free(&s);
}

static void test_parse(void **state)
{
	parse_ok("arg1", "arg1/d64");
	parse_ok("arg1/s,arg2,arg3/x32", "arg1/s,arg2/d64,arg3/x32");
	parse_ok("arg2/i32,arg3/u8,arg4/c,arg5/p,arg6/o16", "arg2/i32,arg3/u8,arg4/c8,arg5/p,arg6/o16");
	parse_ok("arg1/t16:mystruct", "arg1/t:mystruct");      /* uftrace's size of the struct */
	parse_ok("retval/d", "retval/d64");
	parse_ok("retval/s", "retval/s");
	parse_ok("fparg1,fparg2/32", "fparg1/64,fparg2/32");
	parse_ok("arg3/f", "fparg3/64");                 /* uftrace reads argN/f as a float */
	parse_ok("arg3/f32,retval/f80", "fparg3/32,retval/f80");
	parse_ok("arg1/e:color,arg2/t:struct pt", "arg1/e:color,arg2/t:struct pt");
	parse_ok("arg8/x", "arg8/x64");
	parse_ok("arg1,arg1/x", "arg1/d64");             /* the first item for a place wins */
}

static void parse_bad(const char *text, const char *want_err)
{
	struct atf_arg_spec s = { .n = 0 };
	char err[256] = "";

	assert_int_equal(atf_arg_spec_parse(text, &s, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, want_err);
	atf_arg_spec_free(&s);
}

static void test_parse_errors(void **state)
{
	parse_bad("", "'': empty");
	parse_bad("arg0", "'arg0': argN takes N from 1 to 8");
	parse_bad("arg9/s", "'arg9/s': argN takes N from 1 to 8");
	parse_bad("fparg9", "'fparg9': fpargN takes N from 1 to 8");
	parse_bad("args", "'args': not argN, fpargN or retval");
	parse_bad("ret", "'ret': not argN, fpargN or retval");
	parse_bad("arg1/", "'arg1/': no format after '/'");
	parse_bad("arg1/z", "'arg1/z': unknown format (d i u x o p s c f e:NAME t:NAME)");
	parse_bad("arg1/S", "'arg1/S': std::string (S) is not supported");
	parse_bad("arg1/x%rdi", "'arg1/x%rdi': register or stack placement (%...) is not supported");
	parse_bad("arg2%stack+8", "'arg2%stack+8': register or stack placement (%...) is not supported");
	parse_bad("arg1/d12", "'arg1/d12': size must be 8, 16, 32 or 64");
	parse_bad("arg1/s8", "'arg1/s8': size must be 8, 16, 32 or 64");
	parse_bad("arg6/f8", "'arg6/f8': a float's size must be 32, 64 or 80");
	parse_bad("arg1/e", "'arg1/e': /e needs a name: /e:NAME");
	parse_bad("fparg1/x", "'fparg1/x': fpargN takes /32, /64 or /80");
	parse_bad("arg1,", "'arg1,': ends with ','");
	parse_bad("arg1,,arg2", "'': not argN, fpargN or retval");
}

static struct atf_args *set_of(const char *const *lines)
{
	struct atf_args *set = calloc(1, sizeof(*set));

	assert_non_null(set);
	for (; *lines; lines++)
		assert_int_equal(atf_args_parse_line(set, *lines), 0);
	return set;
}

static void test_format(void **state)
{
	static const char *const lines[] = {
		"# comment",
		"enum color 0=RED,5=GREEN,6=BLUE",
		"fn 0x100000007 arg1/d32,arg2/s,arg3/e:color,arg4/p,fparg1,arg5/d64,arg6/c,retval/d32",
		"fn 0x100000008 arg1/u8,arg2/x16,arg3/t:struct pt,arg7/d,arg8/s,retval/s",
		"future-kind ignored by this version",
		NULL,
	};
	struct atf_args *set = set_of(lines);
	const struct atf_arg_spec *s;
	uint64_t gp[8] = { 0xffffffffull, 0x1000, 6, 0xdead, -1ull, '\n', 7, 0x2000 };
	const struct atf_arg_str strs[] = {
		{ .slot = 1, .status = ATF_ARG_STR_OK, .len = 8, .bytes = (const uint8_t *)"a\"b\tc\x01xy" },
		{ .slot = 7, .status = ATF_ARG_STR_TRUNCATED, .len = 3, .bytes = (const uint8_t *)"abc" },
	};
	char buf[512];

	assert_int_equal(set->nfn, 2);
	assert_null(atf_args_find(set, 0x100000009));
	s = atf_args_find(set, 0x100000007);
	assert_non_null(s);
	assert_true(atf_args_has_ret(s));
	atf_args_format_call(set, s, gp, 8, strs, 2, buf, sizeof(buf));
	assert_string_equal(buf, "-1, \"a\\\"b\\tc\\x01xy\", BLUE, 0xdead, ?, -1, '\\n'");
	assert_true(atf_args_format_ret(set, s, 0x1ffffffffull, NULL, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "-1");
	/* an enum value without a name prints as a number; stack arguments need flag bit 0 */
	gp[2] = 3;
	atf_args_format_call(set, s, gp, 6, NULL, 0, buf, sizeof(buf));
	assert_string_equal(buf, "-1, 0x1000, 3, 0xdead, ?, -1, '\\n'");

	s = atf_args_find(set, 0x100000008);
	assert_non_null(s);
	gp[0] = 0x1ff;
	gp[1] = 0x12345;
	atf_args_format_call(set, s, gp, 8, strs, 2, buf, sizeof(buf));
	assert_string_equal(buf, "255, 0x2345, struct pt, 7, \"abc\"...");
	atf_args_format_call(set, s, gp, 6, strs, 2, buf, sizeof(buf));
	assert_string_equal(buf, "255, 0x2345, struct pt, ?, ?");
	/* a string return: NULL, unreadable, not recorded */
	const struct atf_arg_str null_str = { .slot = 0, .status = ATF_ARG_STR_NULL };
	const struct atf_arg_str bad_str = { .slot = 0, .status = ATF_ARG_STR_FAULT };

	assert_true(atf_args_format_ret(set, s, 0, &null_str, 1, buf, sizeof(buf)));
	assert_string_equal(buf, "(null)");
	assert_true(atf_args_format_ret(set, s, 8, &bad_str, 1, buf, sizeof(buf)));
	assert_string_equal(buf, "<bad string 0x8>");
	assert_true(atf_args_format_ret(set, s, 0x4000, NULL, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "0x4000");
	/* d (and no format): decimal up to +-100000, hex beyond, as uftrace prints; i u o */
	static const char *const more[] = {
		"fn 0x100000009 arg1,arg2,arg3/d32,arg4/i,arg5/u16,arg6/o", NULL,
	};
	struct atf_args *set2 = set_of(more);
	uint64_t g2[8] = { 100000, 100001, 0xffffffffull, 0xffffffffull, 0x12345, 8 };

	atf_args_format_call(set2, atf_args_find(set2, 0x100000009), g2, 6, NULL, 0, buf, sizeof(buf));
	assert_string_equal(buf, "100000, 0x186a1, -1, 4294967295, 9029, 010");
	atf_args_free(set2);
	/* a small buffer cuts the text, never overruns */
	atf_args_format_call(set, s, gp, 8, strs, 2, buf, 8);
	assert_string_equal(buf, "255, 0x");
	atf_args_free(set);
}

static void test_bad_lines(void **state)
{
	struct atf_args *set = calloc(1, sizeof(*set));

	assert_int_equal(atf_args_parse_line(set, "fn 0x1"), -EINVAL);
	assert_int_equal(atf_args_parse_line(set, "fn zz arg1"), -EINVAL);
	assert_int_equal(atf_args_parse_line(set, "fn 0x1 arg99"), -EINVAL);
	assert_int_equal(atf_args_parse_line(set, "enum e 1RED"), -EINVAL);
	assert_int_equal(atf_args_parse_line(set, "enum e x=RED"), -EINVAL);
	atf_args_free(set);
}

static void test_strings(void **state)
{
	struct atf_arg_str out[ATF_ARGS_MAX_STR];
	uint8_t b[64] = "ATAS\x02\x00\x00\x00"
			"\x01\x00\x03\x00" "abc"
			"\x00\x02\x00\x00";

	assert_int_equal(atf_args_strings(b, 8 + 7 + 4, out), 2);
	assert_int_equal(out[0].slot, 1);
	assert_int_equal(out[0].len, 3);
	assert_memory_equal(out[0].bytes, "abc", 3);
	assert_int_equal(out[1].status, ATF_ARG_STR_NULL);
	assert_int_equal(atf_args_strings(b, 8 + 7 + 3, out), -EINVAL);    /* cut short */
	assert_int_equal(atf_args_strings(b, 8 + 6, out), -EINVAL);
	assert_int_equal(atf_args_strings(b, 4, out), 0);                  /* no block */
	b[0] = 'X';
	assert_int_equal(atf_args_strings(b, 8 + 7 + 4, out), 0);
	memcpy(b, "ATAS\x09\x00", 6);                                       /* too many */
	assert_int_equal(atf_args_strings(b, sizeof(b), out), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
