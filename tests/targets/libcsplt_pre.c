// SPDX-License-Identifier: MIT
/* libcsplt_pre.so: an interposed pl_swap (LD_PRELOAD) for tests/e2e/test_record_call_sites_plt.sh. */
__attribute__((noinline)) int pl_swap(int x) { return x + 100; }
