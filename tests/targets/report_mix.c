// SPDX-License-Identifier: MIT
/*
 * report_mix: functions whose orders differ by every report sort key, with recursion, for the
 * exact report/graph/folded test (tests/e2e/test_report_exact.sh):
 *   recur   3 outermost calls of 4 nested frames, the innermost sleeping 3 ms: the largest
 *           total after main and driver (9 ms), 12 calls, an average over every frame (3 ms);
 *   one_long 1 call of 5 ms: the largest average after main and driver;
 *   vary    3 calls of 0.1, 0.1 and 6 ms: the largest max after main and driver, an average
 *           (2 ms) below recur's;
 *   tiny    20 calls that do nothing: the most calls.
 * The margins are a millisecond or more, so a loaded host keeps the orders apart.
 */
#include <time.h>

volatile int mix_sink;

static inline __attribute__((always_inline)) void nap_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) void recur(int n)
{
	if (n <= 1)
		nap_us(3000);
	else
		recur(n - 1);
	mix_sink++;     /* not a tail call: every frame returns through us */
}

__attribute__((noinline)) void one_long(void)
{
	nap_us(5000);
}

__attribute__((noinline)) void vary(long us)
{
	nap_us(us);
}

__attribute__((noinline)) void tiny(void)
{
	mix_sink++;
}

__attribute__((noinline)) void driver(void)
{
	for (int i = 0; i < 3; i++)
		recur(4);
	one_long();
	vary(100);
	vary(100);
	vary(6000);
	for (int i = 0; i < 20; i++)
		tiny();
}

int main(void)
{
	driver();
	return 0;
}
