// SPDX-License-Identifier: MIT
/*
 * csmods: calls libcsplt.so's pl_outer through its own PLT (linked -z now, or -z lazy as
 * csmods_lazy), and, once told to, maps libcsdl.so (dlopen, beside it) and calls its dl_outer
 * through a pointer; built stripped (no .symtab: its functions are known by .eh_frame only).
 * Reads lines from stdin: a number N runs N rounds and prints "sum S" (libcsplt's, then
 * libcsdl's once loaded), "load" maps libcsdl.so and prints "loaded", "MARK" prints MARK.
 * `csmods N` runs N rounds, loads, runs N rounds more, and prints both sums.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pl_outer(int x);

static int (*dl_outer)(int);

static long rounds(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++) {
		sum += pl_outer((int)(i & 1023));
		if (dl_outer)
			sum += dl_outer((int)(i & 511));
	}
	return sum;
}

static int load(void)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 32);
	void *h;

	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	strcpy(slash + 1, "libcsdl.so");
	h = dlopen(exe, RTLD_NOW);
	dl_outer = h ? (int (*)(int))dlsym(h, "dl_outer") : NULL;
	return dl_outer ? 0 : -1;
}

int main(int argc, char **argv)
{
	char line[64];

	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "-")) {
		long first = rounds(atol(argv[1]));

		if (load())
			return 1;
		printf("sum %ld %ld\n", first, rounds(atol(argv[1])));
		return 0;
	}
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "MARK", 4))
			printf("MARK\n");
		else if (!strncmp(line, "load", 4))
			printf(load() ? "not loaded\n" : "loaded\n");
		else
			printf("sum %ld\n", rounds(atol(line)));
		fflush(stdout);
	}
	return 0;
}
