// SPDX-License-Identifier: MIT
/*
 * cxx_throw [N]: N times (default 1), main calls thrower_a -> thrower_b -> thrower_c, which
 * throws; the exception unwinds the three traced frames and is caught in main.
 */
#include <cstdlib>
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

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 1, caught = 0;

	for (int i = 0; i < n; i++) {
		try {
			thrower_a(i);
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	return caught == n ? 0 : 1;
}
