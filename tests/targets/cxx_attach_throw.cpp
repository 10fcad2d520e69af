// SPDX-License-Identifier: MIT
/*
 * cxx_attach_throw CMD_FIFO [THREADS [PAUSE_US]]: a running C++ program for record -p. It prints
 * its pid, starts THREADS workers (default 4), each throwing through thrower_a -> thrower_b ->
 * thrower_c every PAUSE_US microseconds (default 4000; 0: back to back) and catching in
 * worker(), and answers commands read from CMD_FIFO, one per line, on stdout:
 *   wait N    "throws T" once N more throws were caught (T: all caught so far)
 *   hold      a holder thread enters held_outer -> held_inner, which waits there; "holding"
 *   release   held_inner checks that its return address is its caller's (not a uretprobe
 *             trampoline left behind), returns 41, then held_outer throws through its own
 *             frame; the holder catches: "held: returned R, caught C, return addresses A"
 *   q         stop the workers; "caught C of T" and exit 0 only if every throw was caught
 * An exception that cannot pass a frame ends the program in std::terminate (status 134).
 * Every wait is on the program's own progress, so a test needs no sleeps.
 */
#include <pthread.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <unistd.h>

volatile int attach_sink;
static std::atomic<long> thrown, caught;
static std::atomic<bool> stopping;
static long pause_us = 4000;

__attribute__((noinline)) void thrower_c(int i)
{
	attach_sink = i;
	thrown++;
	if (i >= 0)     /* always (worker passes i >= 0); opaque to the compiler */
		throw std::runtime_error("thrown through three frames");
}
__attribute__((noinline)) void thrower_b(int i) { thrower_c(i); attach_sink++; }
__attribute__((noinline)) void thrower_a(int i) { thrower_b(i); attach_sink++; }

static void *worker(void *)
{
	struct timespec pause = { pause_us / 1000000, pause_us % 1000000 * 1000 };

	for (int i = 0; !stopping; i++) {
		try {
			thrower_a(i & 0xffff);
		} catch (const std::runtime_error &) {
			caught++;
		}
		if (pause_us)
			nanosleep(&pause, nullptr);
	}
	return nullptr;
}

/* ---- the holder: frames entered while traced, still open when the recorder detaches ---- */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_state;          /* 0 idle, 1 inside held_inner, 2 released, 3 done */
static int held_returned, held_caught, held_ret_ok;

static void hold_set(int s)
{
	pthread_mutex_lock(&hold_lock);
	hold_state = s;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
}

static void hold_wait(int s)
{
	pthread_mutex_lock(&hold_lock);
	while (hold_state != s)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
}

/* Is @ret inside the [uprobes] mapping (where the kernel's uretprobe trampoline lives)? */
static bool in_uprobes_page(void *ret)
{
	unsigned long a = (unsigned long)ret, lo, hi;
	char line[512];
	bool in = false;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[uprobes]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
			in = true;
	if (f)
		fclose(f);
	return in;
}

__attribute__((noinline)) int held_inner(void)
{
	hold_set(1);
	hold_wait(2);
	held_ret_ok += !in_uprobes_page(__builtin_return_address(0));
	return 41;
}

__attribute__((noinline)) void held_outer(void)
{
	held_returned = held_inner();
	held_ret_ok += !in_uprobes_page(__builtin_return_address(0));
	attach_sink = held_returned;
	if (held_returned)
		throw std::runtime_error("thrown through a frame open at detach");
}

static void *holder(void *)
{
	try {
		held_outer();
	} catch (const std::runtime_error &) {
		held_caught++;
	}
	hold_set(3);
	return nullptr;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 2 ? std::atoi(argv[2]) : 4;
	pthread_t t[64], h;
	bool holding = false;
	char line[64];
	FILE *in;

	if (argc > 3)
		pause_us = std::atol(argv[3]);
	if (argc < 2 || nthreads < 1 || nthreads > 64 || pause_us < 0) {
		fprintf(stderr, "usage: cxx_attach_throw CMD_FIFO [THREADS<=64 [PAUSE_US]]\n");
		return 2;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (int k = 0; k < nthreads; k++)
		if (pthread_create(&t[k], nullptr, worker, nullptr))
			return 2;
	in = fopen(argv[1], "r");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		struct timespec tick = { 0, 1000 * 1000 };

		if (line[0] == 'q')
			break;
		if (!strncmp(line, "wait ", 5)) {
			long want = caught + std::atol(line + 5);

			while (caught < want)
				nanosleep(&tick, nullptr);
			printf("throws %ld\n", (long)caught);
		} else if (!strncmp(line, "hold", 4) && !holding) {
			holding = true;
			if (pthread_create(&h, nullptr, holder, nullptr))
				return 2;
			hold_wait(1);
			printf("holding\n");
		} else if (!strncmp(line, "release", 7) && holding) {
			hold_set(2);
			hold_wait(3);
			pthread_join(h, nullptr);
			holding = false;
			printf("held: returned %d, caught %d, return addresses %s\n", held_returned,
			       held_caught, held_ret_ok == 2 ? "original" : "in [uprobes]");
		} else {
			printf("unknown command %s", line);
		}
		fflush(stdout);
	}
	fclose(in);
	stopping = true;
	for (int k = 0; k < nthreads; k++)
		pthread_join(t[k], nullptr);
	printf("caught %ld of %ld\n", (long)caught, (long)thrown);
	return caught == thrown ? 0 : 1;
}
