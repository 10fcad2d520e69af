// SPDX-License-Identifier: MIT
/*
 * libcsplt.so: exported functions that call each other through the library's own PLT (built
 * -fPIC with default visibility, linked -z now: every GOT slot is bound at load), for
 * record --call-sites' PLT sites (tests/e2e/test_record_call_sites_plt.sh). pl_swap is also
 * defined by libcsplt_pre.so: with that library preloaded, the call to pl_swap@plt reaches the
 * preloaded definition, not this one.
 */
volatile int pl_sink;

__attribute__((noinline)) int pl_leaf(int x) { pl_sink += x; return x + 1; }
__attribute__((noinline)) int pl_swap(int x) { pl_sink -= x; return x ^ 1; }
__attribute__((noinline)) int pl_mid(int x) { int y = x * 3 + 1; return pl_leaf(y ^ x) * 2; }
__attribute__((noinline)) int pl_outer(int x) { return pl_mid(x) + pl_mid(x + 1) + pl_swap(x); }
