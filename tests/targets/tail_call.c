// SPDX-License-Identifier: MIT
/*
 * Tail calls: built with -O2, mid() ends in `jmp leaf` (no frame of its own at leaf's entry), so
 * leaf is entered with mid's entry stack pointer. A tracer must show leaf as mid's child, not mid
 * as unwound. Usage: tail_call N
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int leaf(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) int mid(int x)
{
	return leaf(x + 1);     /* a sibling call: gcc -O2 emits jmp */
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	long sum = 0;

	for (int i = 0; i < n; i++)
		sum += mid(i);
	printf("tail_call: %ld\n", sum);
	return 0;
}
