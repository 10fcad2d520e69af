// SPDX-License-Identifier: MIT
/*
 * libcsdl.so: a library that csmods maps with dlopen while a session runs, whose functions call
 * each other directly (hidden visibility: `call rel32`, no PLT), for record --call-sites' late
 * modules (tests/e2e/test_record_call_sites_modules.sh). dl_outer is found with dlsym.
 */
volatile int dl_sink;

__attribute__((visibility("hidden"), noinline, noclone)) int dl_leaf(int x)
{
	dl_sink += x;
	return x + 7;
}

__attribute__((visibility("hidden"), noinline, noclone)) int dl_mid(int x)
{
	int y = x * 5 + 3;

	return dl_leaf(y ^ x) + dl_leaf(x);
}

__attribute__((noinline)) int dl_outer(int x)
{
	dl_sink -= x;
	return dl_mid(x) * 2 + 1;
}
