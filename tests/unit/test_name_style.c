// SPDX-License-Identifier: MIT
/* atf.h name styles: --demangle=simple's short C++ names, and atf_session__name per style. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "atf.h"

static void test_simple(void **state)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "foo::Bar::method(int)", "foo::Bar::method" },
		{ "a::B<int>::f(int) const", "a::B::f" },
		{ "std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector::push_back" },
		{ "operator<<(std::ostream&, int)", "operator<<" },
		{ "a::B::operator()(int)", "a::B::operator()" },
		{ "a::B::operator<(a::B const&) const", "a::B::operator<" },
		{ "a::B::operator->() const", "a::B::operator->" },
		{ "plain_c_name", "plain_c_name" },
		{ "f(void (*)(int))", "f" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = atf_name_simple(cases[i].in);

		assert_non_null(got);
		assert_string_equal(got, cases[i].want);
		free(got);
	}
}

static void test_styles(void **state)
{
	struct atf_symbol sym = { .function_id = 0x100000001ull, .module_id = 1, .symbol_index = 1,
				  .name = "_ZN3foo3Bar6methodEi", .demangled = "foo::Bar::method(int)" };
	struct atf_manifest m = { .symbols = &sym, .nsymbols = 1 };
	struct atf_session s = { .manifest = &m };
	char buf[32];

	(void)state;
	assert_string_equal(atf_session__name(&s, sym.function_id, buf, sizeof(buf)), "foo::Bar::method(int)");
	atf_set_name_style(ATF_NAMES_SIMPLE);
	assert_string_equal(atf_session__name(&s, sym.function_id, buf, sizeof(buf)), "foo::Bar::method");
	atf_set_name_style(ATF_NAMES_RAW);
	assert_string_equal(atf_session__name(&s, sym.function_id, buf, sizeof(buf)), "_ZN3foo3Bar6methodEi");
	atf_set_name_style(ATF_NAMES_DEMANGLED);
	assert_string_equal(atf_session__name(&s, sym.function_id, buf, sizeof(buf)), "foo::Bar::method(int)");
	free(sym.simple);
}

/* The one resolver: every name of a symbol, exact or as a glob, with or without a version. */
static void test_resolver(void **state)
{
	struct atf_manifest *m = atf_manifest__new();
	struct atf_symbol *sym;

	(void)state;
	assert_non_null(m);
	sym = atf_manifest__add_symbol(m, 7, 1, "__libc_malloc");
	assert_non_null(sym);
	assert_int_equal(atf_symbol__add_alias(sym, "malloc"), 0);
	assert_int_equal(atf_symbol__add_alias(sym, "malloc"), 0);          /* once */
	assert_int_equal(atf_symbol__add_alias(sym, "__libc_malloc"), 0);   /* its own name: not an alias */
	assert_int_equal(sym->naliases, 1);
	assert_true(atf_symbol__matches(sym, "__libc_malloc", false));
	assert_true(atf_symbol__matches(sym, "malloc", false));
	assert_true(atf_symbol__matches(sym, "malloc@@GLIBC_2.2.5", false));
	assert_true(atf_symbol__matches(sym, "mall*", true));
	assert_false(atf_symbol__matches(sym, "mall*", false));
	assert_false(atf_symbol__matches(sym, "calloc", false));
	sym = atf_manifest__add_symbol(m, 7, 2, "_ZN3foo3Bar6methodEi");
	sym->demangled = strdup("foo::Bar::method(int)");
	assert_true(atf_symbol__matches(sym, "foo::Bar::method(int)", false));
	assert_true(atf_symbol__matches(sym, "foo::Bar::method", false));   /* the simple form */
	assert_true(atf_symbol__matches(sym, "foo::*", true));
	sym = atf_manifest__add_symbol(m, 7, 3, "memcpy@@GLIBC_2.14");
	assert_true(atf_symbol__matches(sym, "memcpy", false));
	atf_manifest__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple),
		cmocka_unit_test(test_styles),
		cmocka_unit_test(test_resolver),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
