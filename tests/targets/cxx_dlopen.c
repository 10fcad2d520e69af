// SPDX-License-Identifier: MIT
/*
 * cxx_dlopen LIB [N [FIFO]]: a C program that dlopens the C++ library LIB (libcxxthrow.so)
 * and, N times, has its lib_catch run c_through, which calls the library's lib_thrower_b: the
 * exception thrown there unwinds through c_through (a C frame) and is caught in the library.
 * With FIFO, it prints "pid P" and waits for a line on FIFO before the dlopen (record -p
 * attaches then). Prints "caught C of N" and exits 0 only if every throw was caught.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void (*thrower_b)(int);
volatile int c_sink;

__attribute__((noinline)) void c_through(int i)
{
	thrower_b(i);
	c_sink++;       /* never reached */
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 1, caught = 0;
	int (*lib_catch)(int, void (*)(int));
	void *h;

	if (argc < 2) {
		fprintf(stderr, "usage: cxx_dlopen LIB [N [FIFO]]\n");
		return 2;
	}
	if (argc > 3) {
		char line[16];
		FILE *f;

		printf("pid %d\n", (int)getpid());
		fflush(stdout);
		f = fopen(argv[3], "r");
		if (!f || !fgets(line, sizeof(line), f))
			return 2;
		fclose(f);
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "cxx_dlopen: %s\n", dlerror());
		return 2;
	}
	thrower_b = (void (*)(int))dlsym(h, "lib_thrower_b");
	lib_catch = (int (*)(int, void (*)(int)))dlsym(h, "lib_catch");
	if (!thrower_b || !lib_catch)
		return 2;
	for (int i = 0; i < n; i++)
		caught += lib_catch(i, c_through);
	printf("caught %d of %d\n", caught, n);
	return caught == n ? 0 : 1;
}
