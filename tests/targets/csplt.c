// SPDX-License-Identifier: MIT
/*
 * csplt: calls libcsplt.so's pl_outer (through its own PLT), which calls pl_mid, pl_leaf and
 * pl_swap through the library's PLT. `csplt N` runs N rounds and prints the sum; `csplt -`
 * reads a number of rounds per line from stdin, runs them and prints "sum S" for each, and
 * echoes a line MARK (bench/call_sites_share.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pl_outer(int x);

static long rounds(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		sum += pl_outer((int)(i & 1023));
	return sum;
}

int main(int argc, char **argv)
{
	char line[64];

	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "-")) {
		printf("sum %ld\n", rounds(atol(argv[1])));
		return 0;
	}
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "MARK", 4))
			printf("MARK\n");
		else
			printf("sum %ld\n", rounds(atol(line)));
		fflush(stdout);
	}
	return 0;
}
