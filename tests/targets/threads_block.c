// SPDX-License-Identifier: MIT
/*
 * threads_block THREADS CALLS: THREADS threads each call block_work CALLS times and then wait
 * forever; once all have made their calls, the main thread prints "ready PID" and waits too.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int calls;
static pthread_barrier_t done;
volatile int block_sink;

__attribute__((noinline)) void block_work(int i) { block_sink += i; }

static void *thread_main(void *arg)
{
	for (int i = 0; i < calls; i++)
		block_work(i);
	pthread_barrier_wait(&done);
	for (;;)
		pause();
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0;
	pthread_t t;

	if (n < 1)
		return 2;
	calls = atoi(argv[2]);
	if (pthread_barrier_init(&done, NULL, (unsigned)n + 1))
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, thread_main, NULL))
			return 1;
	pthread_barrier_wait(&done);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
