// SPDX-License-Identifier: MIT
/*
 * typed_args: known arguments and return values of every kind --auto-args and -A/-R show
 * (tests/e2e/test_record_typed_args.sh). Built with -g (DWARF) and, as typed_args_nodw, with
 * -g0. Prints "ptr ADDR": the pointer passed to typed(), which the test expects in the dump.
 *
 *   typed_args HOLD_FIFO
 *       passes cold_len() a string constant on a page the process has not touched (a probe
 *       cannot read it), prints "cold", then waits until HOLD_FIFO is opened for writing.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum color { RED, GREEN = 5, BLUE };
struct pt { int x, y; };
struct big { long a[4]; };     /* returned through memory: rdi holds where, arguments shift */

volatile long typed_sink;

__attribute__((noinline)) int typed(int i, const char *s, enum color c, void *p, double d, long neg, char ch)
{
	typed_sink += i + (long)strlen(s) + c + (long)(uintptr_t)p + (long)d + neg + ch;
	return i * 2;
}

__attribute__((noinline)) const char *color_name(enum color c)
{
	typed_sink += c;
	return c == GREEN ? "green" : "other";
}

__attribute__((noinline)) double half(double d)
{
	return d / 2;
}

__attribute__((noinline)) int take_pt(struct pt p, unsigned k)
{
	return p.x + p.y + (int)k;
}

__attribute__((noinline)) struct big make_big(int k, const char *s)
{
	struct big b = { { k, (long)strlen(s), 0, 0 } };

	return b;
}

/* never dereferences @s: it is NULL, or not a valid address, on purpose */
__attribute__((noinline)) int maybe(const char *s)
{
	typed_sink += (long)(uintptr_t)s;
	return s == NULL;
}

__attribute__((noinline)) long count8(long a, long b, long c, long d, long e, long f, const char *g, long h)
{
	return a + b + c + d + e + f + (long)strlen(g) + h;
}

/*
 * A constant alone in its 64 KiB window of the file's mapping, so that no fault on its
 * neighbours maps its page in (the kernel maps up to 64 KiB around a faulting address).
 */
__attribute__((aligned(65536))) const char cold_string[65536] = "cold constant";

__attribute__((noinline)) long cold_len(const char *s)
{
	return (long)strlen(s);
}

int main(int argc, char **argv)
{
	static char buf[8];
	char longs[101];

	if (argc == 2) {
		FILE *hold;

		typed_sink += cold_len(cold_string);
		printf("cold\n");
		fflush(stdout);
		hold = fopen(argv[1], "r");     /* blocks until the test opens it for writing */
		if (hold)
			fclose(hold);
		return 0;
	}
	memset(longs, 'z', 100);
	longs[100] = '\0';
	printf("ptr %p\n", (void *)buf);
	fflush(stdout);
	typed(42, "INSERT INTO t VALUES(?)", GREEN, buf, 1.5, -1, 'q');
	typed(7, "tab\there \"quoted\"", BLUE, NULL, 0, -123456789012L, '\n');
	/* every result is used: a pure call whose result is dropped would be left out */
	typed_sink += (long)strlen(color_name(GREEN));
	typed_sink += (long)half(3.0);
	typed_sink += take_pt((struct pt){ 1, 2 }, 3);
	typed_sink += make_big(3, "big").a[1];
	typed_sink += maybe(NULL);
	typed_sink += maybe((const char *)8);
	typed_sink += count8(1, 2, 3, 4, 5, 6, "seventh", -8);
	typed_sink += count8(1, 2, 3, 4, 5, 6, longs, 8);
	return 0;
}
