// SPDX-License-Identifier: MIT
/*
 * migrate [THREADS [ROUNDS]]: THREADS threads (default 4) share the CPUs the process may use,
 * and move between them in the middle of their traced calls. In each round (all threads start
 * it together) thread k calls mig_round, which pins the thread to CPU (k + round) of the allowed
 * ones, calls mig_nest k + 1 levels deep down to mig_leaf, pins itself to the next CPU and
 * returns there. So per round thread k makes 1 + (k + 1) + 1 calls, the deepest at depth k + 2,
 * and its frames are open while it changes CPU.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static int rounds = 200;
static int ncpus;
static int cpus[CPU_SETSIZE];
static pthread_barrier_t round_start;
volatile int migrate_sink;

static void pin(int i)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpus[i % ncpus], &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity");
}

__attribute__((noinline)) void mig_leaf(int k) { migrate_sink += k; }

__attribute__((noinline)) void mig_nest(int k, int level)
{
	if (level > 1)
		mig_nest(k, level - 1);
	else
		mig_leaf(k);
	migrate_sink++;
}

__attribute__((noinline)) void mig_round(int k, int r)
{
	pin(k + r);
	mig_nest(k, k + 1);
	pin(k + r + 1);
	migrate_sink++;
}

static void *thread_main(void *arg)
{
	int k = (int)(long)arg;

	for (int r = 0; r < rounds; r++) {
		pthread_barrier_wait(&round_start);
		mig_round(k, r);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t *t;
	cpu_set_t all;

	if (argc > 2)
		rounds = atoi(argv[2]);
	if (sched_getaffinity(0, sizeof(all), &all))
		return 1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all))
			cpus[ncpus++] = c;
	t = calloc((size_t)n, sizeof(*t));
	if (!t || !ncpus || pthread_barrier_init(&round_start, NULL, (unsigned)n))
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)(long)i)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
