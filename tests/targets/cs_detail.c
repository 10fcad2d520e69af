// SPDX-License-Identifier: MIT
/*
 * cs_detail: calls libcsdetail.so's cd_f8 (eight integer arguments) through this program's PLT,
 * then cd_run, which calls it directly, through a pointer and by a tail call, and cd_chain8
 * (tests/e2e/test_record_call_sites_detail.sh). The arguments of each call differ: argument i
 * of the call through the PLT is 0x1i, directly 0x2i, through the pointer 0x3i, through the
 * tail call 0x4i (its first + 0x100), each plus 0x1000 * round; cd_chain8's 0x5i reach
 * cd_leaf8 (the first + 0x600).
 *   cs_detail N    prints "main ADDR cd_f8 ADDR" (where the program and the library run, for
 *                  return addresses as module offsets), then N rounds; prints the sum
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef uint64_t u64;

u64 cd_f8(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h);
u64 cd_run(u64 base);

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	u64 s = 0;

	printf("main %p cd_f8 %p\n", (void *)main, (void *)cd_f8);
	for (int i = 0; i < n; i++) {
		u64 b = 0x1000 * (u64)i;

		s += cd_f8(b + 0x11, b + 0x12, b + 0x13, b + 0x14, b + 0x15, b + 0x16, b + 0x17, b + 0x18);
		s += cd_run(b);
	}
	printf("%llu\n", (unsigned long long)s);
	return 0;
}
