// SPDX-License-Identifier: MIT
/*
 * Detail options of `atftrace record` (user/record/recorder_detail.c): every option's values and
 * cross-option rules through argp, and --detail-on globs resolved against synthetic modules.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "recorder_detail.h"

/* Parse @args (NULL-terminated) with detail_argp alone; errors return instead of exiting. */
static int parse(struct detail_args *d, ...)
{
	char *argv[16] = { "record" };
	int argc = 1;
	va_list ap;

	va_start(ap, d);
	for (char *a; (a = va_arg(ap, char *)) && argc < 15; )
		argv[argc++] = a;
	va_end(ap);
	return argp_parse(&detail_argp, argc, argv, ARGP_NO_EXIT | ARGP_NO_ERRS | ARGP_NO_HELP,
			  NULL, d);
}

static void test_defaults(void **state)
{
	struct detail_args d;

	assert_int_equal(parse(&d, NULL), 0);
	assert_false(d.always);
	assert_int_equal(d.stack_bytes, 256);
	assert_int_equal(d.non_globs, 0);
	assert_true(d.after_s < 0);
	assert_int_equal(d.on_count, 0);
	assert_int_equal(d.on_ns, 0);
	detail_args_free(&d);
}

static void test_values(void **state)
{
	struct detail_args d;

	assert_int_equal(parse(&d, "--detail=always", "--stack-bytes", "0", NULL), 0);
	assert_true(d.always);
	assert_int_equal(d.stack_bytes, 0);
	detail_args_free(&d);

	assert_int_equal(parse(&d, "--detail", "off", "--detail-on", "a*", "--detail-on", "lib.so:b",
			       "--detail-for", "250ms", "--detail-count", "7", "--stack-bytes", "256", NULL), 0);
	assert_false(d.always);
	assert_int_equal(d.non_globs, 2);
	assert_string_equal(d.on_globs[0], "a*");
	assert_string_equal(d.on_globs[1], "lib.so:b");
	assert_int_equal(d.on_ns, 250000000);
	assert_int_equal(d.on_count, 7);
	assert_int_equal(d.stack_bytes, 256);
	detail_args_free(&d);

	/* durations: a bare number is seconds; ns, us, ms, s */
	static const struct { const char *arg; uint64_t ns; } durs[] = {
		{ "2", 2000000000ull }, { "1.5s", 1500000000ull }, { "10us", 10000 }, { "3ns", 3 },
		{ "0.5ms", 500000 },
	};
	for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		assert_int_equal(parse(&d, "--detail-on", "f", "--detail-for", durs[i].arg, NULL), 0);
		assert_int_equal(d.on_ns, durs[i].ns);
		detail_args_free(&d);
	}
	assert_int_equal(parse(&d, "--detail-after", "0", NULL), 0);
	assert_true(d.after_s == 0);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail-after", "2.5", NULL), 0);
	assert_true(d.after_s == 2.5);
	detail_args_free(&d);
}

static void test_errors(void **state)
{
	struct detail_args d;

	assert_int_equal(parse(&d, "--detail", "sometimes", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--stack-bytes", "257", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--stack-bytes", "-1", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--stack-bytes", "", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail-on", "f", "--detail-count", "0", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail-on", "f", "--detail-count", "x", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail-on", "f", "--detail-for", "0", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail-on", "f", "--detail-for", "5min", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail-after", "-1", NULL), EINVAL);
	detail_args_free(&d);
	/* cross-option rules */
	assert_int_equal(parse(&d, "--detail-count", "3", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail-for", "1s", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail=always", "--detail-on", "f", NULL), EINVAL);
	detail_args_free(&d);
	assert_int_equal(parse(&d, "--detail=always", "--detail-after", "1", NULL), EINVAL);
	detail_args_free(&d);
}

/* Two modules: an executable and a library, with selected, unselected and skipped functions. */
static struct sym_func exe_funcs[] = {
	{ .symbol_index = 1, .name = "trigger", .selected = true },
	{ .symbol_index = 2, .name = "trigger_hot", .selected = true },
	{ .symbol_index = 3, .name = "tri_not_traced", .selected = false },
	{ .symbol_index = 4, .name = "trig_skipped", .selected = true, .skip = SYM_SKIP_INSN },
	{ .symbol_index = 5, .name = "_ZN1a3runEv", .demangled = "a::run()", .selected = true },
};
static struct sym_func lib_funcs[] = {
	{ .symbol_index = 7, .name = "trigger", .selected = true },
};
static struct sym_module exe = { .module_id = 0x11, .path = "/bin/prog", .funcs = exe_funcs, .nfuncs = 5 };
static struct sym_module lib = { .module_id = 0x22, .path = "/usr/lib/libx.so.1", .funcs = lib_funcs, .nfuncs = 1 };

static int resolve(struct detail_args *d, const char *glob)
{
	struct sym_module *ms[] = { &exe, &lib };
	struct rm_modules mods = { .m = ms, .n = 2 };

	*d = (struct detail_args){ .after_s = -1 };
	d->on_globs = calloc(1, sizeof(char *));
	d->on_globs[0] = strdup(glob);
	d->non_globs = 1;
	return detail_resolve(d, &mods);
}

static void test_resolve(void **state)
{
	struct detail_args d;

	/* every traced module unless MODULE is given; only selected, probe-able functions */
	assert_int_equal(resolve(&d, "tri*"), 0);
	assert_int_equal(d.ntriggers, 3);
	assert_int_equal(d.trigger_ids[0], 0x11ull << 32 | 1);
	assert_int_equal(d.trigger_ids[1], 0x11ull << 32 | 2);
	assert_int_equal(d.trigger_ids[2], 0x22ull << 32 | 7);
	detail_args_free(&d);

	/* MODULE by base name, by path, or by glob */
	assert_int_equal(resolve(&d, "libx.so.1:trigger"), 0);
	assert_int_equal(d.ntriggers, 1);
	assert_int_equal(d.trigger_ids[0], 0x22ull << 32 | 7);
	detail_args_free(&d);
	assert_int_equal(resolve(&d, "/bin/prog:trigger"), 0);
	assert_int_equal(d.ntriggers, 1);
	assert_int_equal(d.trigger_ids[0], 0x11ull << 32 | 1);
	detail_args_free(&d);

	/* demangled names match too, and "::" is not a module separator */
	assert_int_equal(resolve(&d, "a::run*"), 0);
	assert_int_equal(d.ntriggers, 1);
	assert_int_equal(d.trigger_ids[0], 0x11ull << 32 | 5);
	detail_args_free(&d);

	/* nothing traced matches: an error */
	assert_int_equal(resolve(&d, "tri_not_traced"), -ENOENT);
	detail_args_free(&d);
	assert_int_equal(resolve(&d, "trig_skipped"), -ENOENT);
	detail_args_free(&d);
	assert_int_equal(resolve(&d, "libnone.so:trigger"), -ENOENT);
	detail_args_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
