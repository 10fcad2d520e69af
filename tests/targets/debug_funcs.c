// SPDX-License-Identifier: MIT
/*
 * debug_funcs N: main calls dbg_outer N times, each dbg_outer calls dbg_inner twice. The
 * functions are static: once the binary is stripped, only a separate debug file names them.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile int dbg_sink;

__attribute__((noinline)) static void dbg_inner(int i) { dbg_sink += i; }

__attribute__((noinline)) static void dbg_outer(int i)
{
	dbg_inner(i);
	dbg_inner(-i);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;

	for (int i = 0; i < n; i++)
		dbg_outer(i);
	printf("%d\n", dbg_sink);
	return 0;
}
