// SPDX-License-Identifier: MIT
/* libatftest.so: a shared library for tracing a library's functions (used by shlib_user). */
volatile int lib_sink;

__attribute__((noinline)) int lib_leaf(int x) { lib_sink += x; return x * 2; }
__attribute__((noinline)) int lib_entry(int x) { return lib_leaf(x) + lib_leaf(x + 1); }
