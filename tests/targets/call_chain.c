// SPDX-License-Identifier: MIT
/* call_chain N: main -> chain_a -> chain_b -> chain_c, N times (default 1). */
#include <stdlib.h>

volatile int chain_sink;

__attribute__((noinline)) void chain_c(int i) { chain_sink += i; }
__attribute__((noinline)) void chain_b(int i) { chain_c(i); chain_sink++; }
__attribute__((noinline)) void chain_a(int i) { chain_b(i); chain_sink++; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;

	for (int i = 0; i < n; i++)
		chain_a(i);
	return 0;
}
