// SPDX-License-Identifier: MIT
/*
 * calls_libc: exact numbers of libc calls, for tests of libc's ifuncs and debug symbols.
 *   calls_libc strlen N       calls strlen N times and exits
 *   calls_libc loop CMD_FIFO  prints its pid, then reads commands from CMD_FIFO, one a line:
 *                             "s K" calls strlen K times, "m K" mallocs and frees K blocks of
 *                             growing sizes (printing "done" after each), "q" exits.
 * Built with -fno-builtin, so every strlen is a real call into libc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char text[64] = "a line of text";
volatile size_t libc_sink;

static void call_strlen(int k)
{
	for (int i = 0; i < k; i++) {
		text[0] = (char)('a' + i % 26);
		libc_sink += strlen(text);
	}
}

static void call_malloc(int k)
{
	void *keep[64] = { 0 };

	for (int i = 0; i < k; i++) {
		free(keep[i % 64]);
		keep[i % 64] = malloc(16 + (size_t)(i * 97) % 70000);
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
}

int main(int argc, char **argv)
{
	char line[64];
	FILE *in;

	if (argc == 3 && !strcmp(argv[1], "strlen")) {
		call_strlen(atoi(argv[2]));
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "loop")) {
		fprintf(stderr, "usage: calls_libc strlen N | loop CMD_FIFO\n");
		return 2;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	in = fopen(argv[2], "r");
	if (!in) {
		perror(argv[2]);
		return 1;
	}
	while (fgets(line, sizeof(line), in) && line[0] != 'q') {
		int k = atoi(line + 1);

		if (line[0] == 's')
			call_strlen(k);
		else if (line[0] == 'm')
			call_malloc(k);
		printf("done %c %d\n", line[0], k);
		fflush(stdout);
	}
	fclose(in);
	return 0;
}
