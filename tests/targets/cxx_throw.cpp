// SPDX-License-Identifier: MIT
/*
 * cxx_throw [N [MODE [THREADS]]]: C++ exceptions thrown through (traceable) frames, N times.
 *   main     (default) main -> thrower_a -> thrower_b -> thrower_c, which throws; the exception
 *            unwinds the three frames and is caught in main.
 *   middle   main -> thrower_a -> catcher_b, which calls thrower_c inside a try block: only
 *            thrower_c is unwound; catcher_b and thrower_a return normally after the catch.
 *   threads  THREADS threads (default 4) released together, each doing N "main" throws from
 *            worker(); exceptions are raised and caught in several threads at once.
 *   exit     a thread runs thrower_a -> thrower_b -> exiter_c, which calls pthread_exit: a
 *            forced unwind (_Unwind_ForcedUnwind) through the traced frames, N times.
 * Prints "caught C of N" (or "exited C of N") and exits 0 only if every throw was caught.
 * With CXX_THROW_NS set in the environment, main mode also prints the mean time per throw and
 * catch to stderr (bench/bench_cxx_throw.sh).
 */
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

volatile int cxx_sink;

__attribute__((noinline)) void thrower_c(int i)
{
	cxx_sink += i;
	if (cxx_sink >= 0)
		throw std::runtime_error("thrown through three frames");
}
__attribute__((noinline)) void thrower_b(int i) { thrower_c(i); cxx_sink++; }
__attribute__((noinline)) void thrower_a(int i) { thrower_b(i); cxx_sink++; }

/* catches in the middle of the chain: the frames above it stay alive */
__attribute__((noinline)) int catcher_b(int i)
{
	try {
		thrower_c(i);
	} catch (const std::runtime_error &) {
		return 1;
	}
	return 0;
}
__attribute__((noinline)) int thrower_a_middle(int i) { return catcher_b(i); }

__attribute__((noinline)) void exiter_c(int i)
{
	cxx_sink += i;
	pthread_exit(nullptr);
}
__attribute__((noinline)) void exiter_b(int i) { exiter_c(i); cxx_sink++; }
__attribute__((noinline)) void *exiter_a(void *arg)
{
	exiter_b((int)(long)arg);
	return arg;     /* never reached */
}

static pthread_barrier_t start_together;
static int per_thread;

__attribute__((noinline)) void *worker(void *arg)
{
	long caught = 0;

	pthread_barrier_wait(&start_together);
	for (int i = 0; i < per_thread; i++) {
		try {
			thrower_a(i);
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	return (void *)caught;
}

static int run_threads(int n, int nthreads)
{
	pthread_t t[64];
	long caught = 0;

	if (nthreads < 1 || nthreads > 64)
		return 2;
	per_thread = n;
	pthread_barrier_init(&start_together, nullptr, (unsigned)nthreads);
	for (int k = 0; k < nthreads; k++)
		if (pthread_create(&t[k], nullptr, worker, nullptr))
			return 2;
	for (int k = 0; k < nthreads; k++) {
		void *ret;
		pthread_join(t[k], &ret);
		caught += (long)ret;
	}
	printf("caught %ld of %d\n", caught, n * nthreads);
	return caught == (long)n * nthreads ? 0 : 1;
}

static int run_exit(int n)
{
	int exited = 0;

	for (int i = 0; i < n; i++) {
		pthread_t t;
		void *ret = nullptr;

		if (pthread_create(&t, nullptr, exiter_a, (void *)(long)i))
			return 2;
		pthread_join(t, &ret);
		exited += ret == nullptr;       /* pthread_exit(nullptr), not exiter_a's return */
	}
	printf("exited %d of %d\n", exited, n);
	return exited == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 1, caught = 0;
	const char *mode = argc > 2 ? argv[2] : "main";

	if (!strcmp(mode, "threads"))
		return run_threads(n, argc > 3 ? std::atoi(argv[3]) : 4);
	if (!strcmp(mode, "exit"))
		return run_exit(n);
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		if (!strcmp(mode, "middle")) {
			caught += thrower_a_middle(i);
			continue;
		}
		try {
			thrower_a(i);
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (getenv("CXX_THROW_NS") && n > 0)
		fprintf(stderr, "ns_per_throw %.0f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 +
							(t1.tv_nsec - t0.tv_nsec)) / n);
	printf("caught %d of %d\n", caught, n);
	return caught == n ? 0 : 1;
}
