// SPDX-License-Identifier: MIT
/*
 * thread_exec N: the main thread calls exec_work() once, then a second thread calls it once and
 * execs this program again as "thread_exec N again". The kernel gives the exec'ing thread the
 * process's pid (the main thread's tid), so the new image's N calls of exec_work() are made
 * under the tid the main thread had.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile int exec_sink;
static char *self;
static char *count;

__attribute__((noinline)) void exec_work(int i) { exec_sink += i; }

static void *exec_from_thread(void *arg)
{
	exec_work(1);
	execl(self, self, count, "again", (char *)NULL);
	_exit(127);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2)
		return 2;
	if (argc > 2 && !strcmp(argv[2], "again")) {
		for (int i = 0; i < atoi(argv[1]); i++)
			exec_work(i);
		return 0;
	}
	self = argv[0];
	count = argv[1];
	exec_work(0);
	if (pthread_create(&t, NULL, exec_from_thread, NULL))
		return 1;
	pthread_join(t, NULL);  /* never returns: the exec ends this thread */
	return 1;
}
