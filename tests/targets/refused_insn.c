// SPDX-License-Identifier: MIT
/*
 * refused_insn N: calls plain_a, plain_b and refused_lock N times each. refused_lock begins with
 * a LOCK-prefixed instruction and refused_io with an I/O instruction (never called): the kernel's
 * uprobes refuse to probe both (ENOTSUPP), so a recording must leave them out and trace the rest.
 */
#include <stdlib.h>

volatile int sink;
int counter;

#if defined(__x86_64__)
__attribute__((naked, noinline)) void refused_lock(int *p)
{
	__asm__ volatile("lock incl (%rdi)\n\tret");
}

__attribute__((naked, noinline)) void refused_io(void)
{
	__asm__ volatile("inb %dx, %al\n\tret");
}
#else   /* the e2e test is x86_64 only; elsewhere this only has to build */
__attribute__((noinline)) void refused_lock(int *p) { __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST); }
__attribute__((noinline)) void refused_io(void) { }
#endif

__attribute__((noinline)) void plain_a(int i) { sink += i; }
__attribute__((noinline)) void plain_b(int i) { sink -= i; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;

	for (int i = 0; i < n; i++) {
		plain_a(i);
		refused_lock(&counter);
		plain_b(i);
	}
	if (argc > 2)
		refused_io();           /* never: only there to be probed */
	return counter == n ? 0 : 1;
}
