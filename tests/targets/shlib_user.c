// SPDX-License-Identifier: MIT
/* shlib_user N: calls lib_entry() of libatftest.so N times (each calls lib_leaf twice). */
#include <stdlib.h>

int lib_entry(int x);

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, sum = 0;

	for (int i = 0; i < n; i++)
		sum += lib_entry(i);
	return sum == -1;
}
