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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple),
		cmocka_unit_test(test_styles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
