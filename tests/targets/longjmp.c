// SPDX-License-Identifier: MIT
/*
 * longjmp [N]: N times (default 1), main calls jump_a -> jump_b -> jump_c, which longjmps back
 * to main, leaving three traced frames without their returns; main then calls after_jump().
 */
#include <setjmp.h>
#include <stdlib.h>

static jmp_buf env;
volatile int jump_sink;

__attribute__((noinline)) void jump_c(int i) { jump_sink += i; longjmp(env, 1); }
__attribute__((noinline)) void jump_b(int i) { jump_c(i); jump_sink++; }
__attribute__((noinline)) void jump_a(int i) { jump_b(i); jump_sink++; }
__attribute__((noinline)) void after_jump(int i) { jump_sink -= i; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;

	for (volatile int i = 0; i < n; i++) {
		if (!setjmp(env))
			jump_a(i);
		after_jump(i);
	}
	return 0;
}
