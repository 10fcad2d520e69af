// SPDX-License-Identifier: MIT
/*
 * report_mix: functions whose orders differ by every report sort key, with recursion, for the
 * exact report/graph/folded test (tests/e2e/test_report_exact.sh):
 *   recur   3 outermost calls of 4 nested frames, the innermost sleeping 2 ms: the largest
 *           total after main and driver, 12 calls, an average over every frame;
 *   one_long 1 call of 5 ms: the largest max and average after main and driver;
 *   vary    3 calls of 0.2, 0.2 and 4 ms: a max above recur's, an average below it;
 *   tiny    20 calls that do nothing: the most calls.
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
		nap_us(2000);
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
	vary(200);
	vary(200);
	vary(4000);
	for (int i = 0; i < 20; i++)
		tiny();
}

int main(void)
{
	driver();
	return 0;
}
