// SPDX-License-Identifier: MIT
/* libatfplugin.so: a plugin dlopen_user loads on command; plugin_work calls plugin_leaf twice;
 * dlopen_user's hot thread calls hot_lea. */
volatile int plugin_sink;

__attribute__((noinline)) void plugin_leaf(int i) { plugin_sink += i; }

__attribute__((noinline)) void plugin_work(int i)
{
	plugin_leaf(i);
	plugin_leaf(-i);
}

/*
 * hot_lea: a 3-byte first instruction (lea), which the kernel single-steps, so it is entered
 * through a trampoline; a breakpoint another tool writes over that jmp would make the kernel
 * resume 3 bytes in, inside the jmp. Returns 2 * i + 1.
 */
__asm__(".text\n"
	".globl hot_lea\n"
	".type hot_lea, @function\n"
	"hot_lea:\n"
	"\tlea 1(%rdi), %eax\n"
	"\tadd %edi, %eax\n"
	"\tret\n"
	".size hot_lea, .-hot_lea\n");
