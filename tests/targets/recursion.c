// SPDX-License-Identifier: MIT
/* recursion [DEPTH [TIMES]]: recurse(DEPTH) (default 100) TIMES times (default 1). */
#include <stdlib.h>

volatile int recursion_sink;

__attribute__((noinline)) int recurse(int n)
{
	if (n <= 1)
		return recursion_sink++;
	return recurse(n - 1) + 1;  /* not a tail call: every frame returns through us */
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 100;
	int times = argc > 2 ? atoi(argv[2]) : 1;

	for (int i = 0; i < times; i++)
		recursion_sink += recurse(depth);
	return 0;
}
