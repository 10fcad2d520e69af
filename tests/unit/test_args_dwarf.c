// SPDX-License-Identifier: MIT
/*
 * user/sym/args_dwarf.c against a real DWARF: tests/targets/typed_args (built with -g), each
 * function's spec in the x86_64 SysV order, and typed_args_nodw (no DWARF). Skips when the
 * targets are not built (make targets).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "args_dwarf.h"

static char targets[1024];

static struct sym_module *open_target(const char *name)
{
	struct sym_module *m = NULL;
	char path[1200];

	snprintf(path, sizeof(path), "%s/%s", targets, name);
	if (access(path, R_OK)) {
		fprintf(stderr, "%s not built (make targets)\n", path);
		skip();
	}
	assert_int_equal(sym_module__open(&m, path, -1), 0);
	return m;
}

static const struct sym_func *find(const struct sym_module *m, const char *name)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].name, name))
			return &m->funcs[i];
	fail_msg("no function %s", name);
	return NULL;
}

static void expect(struct args_dwarf *d, const struct sym_module *m, struct atf_args *set, const char *fn,
		   const char *want)
{
	struct atf_arg_spec spec = { .n = 0 };
	char buf[1024];

	assert_int_equal(args_dwarf_spec(d, find(m, fn), &spec, set), 0);
	assert_non_null(atf_arg_spec_format(&spec, buf, sizeof(buf)));
	assert_string_equal(buf, want);
	atf_arg_spec_free(&spec);
}

static void test_types(void **state)
{
	struct sym_module *m = open_target("typed_args");
	struct atf_args *set = calloc(1, sizeof(*set));
	struct args_dwarf *d = NULL;
	const struct atf_enum *e;

	assert_non_null(set);
	assert_int_equal(args_dwarf_open(&d, m), 0);
	expect(d, m, set, "typed", "retval/i32,arg1/i32,arg2/s,arg3/e:color,arg4/p,fparg1/64,arg5/i64,arg6/c8");
	expect(d, m, set, "color_name", "retval/s,arg1/e:color");
	expect(d, m, set, "half", "retval/f64,fparg1/64");
	expect(d, m, set, "take_pt", "retval/i32,arg1/t:struct pt,arg2/u32");
	/* a struct returned through memory: rdi holds where, so k is arg2 */
	expect(d, m, set, "make_big", "retval/t:struct big,arg2/i32,arg3/s");
	expect(d, m, set, "count8", "retval/i64,arg1/i64,arg2/i64,arg3/i64,arg4/i64,arg5/i64,arg6/i64,arg7/s,arg8/i64");
	expect(d, m, set, "main", "retval/i32,arg1/i32,arg2/p");
	/* the enum's value names, once however many functions use it */
	assert_int_equal(set->nenums, 1);
	e = atf_args_enum(set, "color");
	assert_non_null(e);
	assert_int_equal(e->n, 3);
	assert_string_equal(e->labels[1], "GREEN");
	assert_int_equal(e->values[1], 5);
	args_dwarf_close(d);
	atf_args_free(set);
	sym_module__free(m);
}

static void test_no_dwarf(void **state)
{
	struct sym_module *m = open_target("typed_args_nodw");
	struct args_dwarf *d = NULL;

	assert_int_equal(args_dwarf_open(&d, m), -ENOENT);
	assert_null(d);
	sym_module__free(m);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_no_dwarf),
	};
	const char *out = getenv("OUTPUT");

	if (argc > 1)
		snprintf(targets, sizeof(targets), "%s", argv[1]);
	else
		snprintf(targets, sizeof(targets), "%s/targets", out && *out ? out : ".output");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
