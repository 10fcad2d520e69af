// SPDX-License-Identifier: MIT
/*
 * attach_loop CMD_FIFO: prints its pid, then loops reading commands from CMD_FIFO, one per
 * line: "K" calls loop_work() K times and prints "done K"; "q" exits. A test attaches while the
 * target sits in this loop, and then knows exactly how many calls happen after the attach.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

volatile int loop_sink;

__attribute__((noinline)) void loop_work(int i) { loop_sink += i; }

int main(int argc, char **argv)
{
	char line[64];
	FILE *in;

	if (argc < 2) {
		fprintf(stderr, "usage: attach_loop CMD_FIFO\n");
		return 2;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	in = fopen(argv[1], "r");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		if (line[0] == 'q')
			break;
		int k = atoi(line);
		for (int i = 0; i < k; i++)
			loop_work(i);
		printf("done %d\n", k);
		fflush(stdout);
	}
	fclose(in);
	return 0;
}
