// SPDX-License-Identifier: MIT
/*
 * cxx_c_main [N [FIFO]]: a C program linked against the C++ library libcxxthrow.so (found
 * beside it): N times, lib_catch runs c_through, which calls into the library where an
 * exception is thrown; it unwinds through c_through (a C frame) and is caught in the library.
 * With FIFO, it prints "pid P" and waits for a line on FIFO first (record -p attaches then).
 * Prints "caught C of N" and exits 0 only if every throw was caught.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void lib_thrower_b(int i);
int lib_catch(int i, void (*through)(int));
volatile int c_sink;

__attribute__((noinline)) void c_through(int i)
{
	lib_thrower_b(i);
	c_sink++;       /* never reached */
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, caught = 0;

	if (argc > 2) {
		char line[16];
		FILE *f;

		printf("pid %d\n", (int)getpid());
		fflush(stdout);
		f = fopen(argv[2], "r");
		if (!f || !fgets(line, sizeof(line), f))
			return 2;
		fclose(f);
	}
	for (int i = 0; i < n; i++)
		caught += lib_catch(i, c_through);
	printf("caught %d of %d\n", caught, n);
	return caught == n ? 0 : 1;
}
