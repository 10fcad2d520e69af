// SPDX-License-Identifier: MIT
/*
 * nest_sleep: a call tree with known nesting and known sleeps, for report, graph and the
 * browser test. main -> run -> outer (x2); outer -> inner (x3), leaf, nap(4 ms);
 * inner -> nap(2 ms). So nap is called 8 times (6 from inner, 2 from outer), and at least
 * 20 ms go by in nap, 12 ms of them below inner.
 */
#include <time.h>

volatile int nest_sink;

__attribute__((noinline)) void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) void leaf(int i) { nest_sink += i; }
__attribute__((noinline)) void inner(int i) { nap(2); nest_sink += i; }

__attribute__((noinline)) void outer(int i)
{
	for (int k = 0; k < 3; k++)
		inner(i + k);
	leaf(i);
	nap(4);
}

__attribute__((noinline)) void run(int n)
{
	for (int i = 0; i < n; i++)
		outer(i);
}

int main(void)
{
	run(2);
	return 0;
}
