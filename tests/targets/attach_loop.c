// SPDX-License-Identifier: MIT
/*
 * attach_loop CMD_FIFO: prints its pid, then loops reading commands from CMD_FIFO, one per
 * line: "K" calls loop_work() K times and prints "done K"; "tK" does the same on a new thread and
 * prints "thread TID done K" (TID: gettid() of that thread); "w" calls loop_outer(), which calls
 * loop_wait(), which prints "waiting" and reads one more line before both return and "done w"
 * is printed (frames that stay open while a test attaches or detaches); "q" exits. A test
 * attaches while the target sits in this loop, and then knows exactly how many calls happen
 * after the attach.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

volatile int loop_sink;
static FILE *in;

__attribute__((noinline)) void loop_wait(void)
{
	char line[64];

	printf("waiting\n");
	fflush(stdout);
	if (fgets(line, sizeof(line), in))
		loop_sink += line[0];
}

__attribute__((noinline)) void loop_outer(void)
{
	loop_wait();
	loop_sink++;
}

__attribute__((noinline)) void loop_work(int i) { loop_sink += i; }

struct work {
	int k;
	pid_t tid;
};

static void *work_thread(void *arg)
{
	struct work *w = arg;

	w->tid = gettid();
	for (int i = 0; i < w->k; i++)
		loop_work(i);
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64];

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
		if (line[0] == 'w') {
			loop_outer();
			printf("done w\n");
			fflush(stdout);
			continue;
		}
		if (line[0] == 't') {
			struct work w = { .k = atoi(line + 1) };
			pthread_t t;

			if (pthread_create(&t, NULL, work_thread, &w) || pthread_join(t, NULL))
				return 1;
			printf("thread %d done %d\n", (int)w.tid, w.k);
			fflush(stdout);
			continue;
		}
		int k = atoi(line);
		for (int i = 0; i < k; i++)
			loop_work(i);
		printf("done %d\n", k);
		fflush(stdout);
	}
	fclose(in);
	return 0;
}
