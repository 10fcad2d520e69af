// SPDX-License-Identifier: MIT
/* threads [THREADS [CALLS]]: THREADS threads (default 8) each call thread_work CALLS times (default 100000). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int calls = 100000;
volatile int threads_sink;

__attribute__((noinline)) void thread_work(int i) { threads_sink += i; }

__attribute__((noinline)) void *thread_main(void *arg)
{
	for (int i = 0; i < calls; i++)
		thread_work(i);
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t *t;

	if (argc > 2)
		calls = atoi(argv[2]);
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, thread_main, NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
