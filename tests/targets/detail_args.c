// SPDX-License-Identifier: MIT
/*
 * detail_args: a target for the detail lane's tests (tests/e2e/test_detail_*.sh).
 *
 *   detail_args regs
 *       f6(1, 2, 3, 4, 5, 6); f8(0x11, ..., 0x18); g() returns G_VALUE; canary_caller() keeps
 *       CANARY in a volatile local of its frame while it calls canary_leaf(). Prints
 *       "main ADDR frame main RBP" and "frame canary_caller RBP": main's run-time address and
 *       the frame pointers the callees' entries see (the targets keep frame pointers).
 *   detail_args script CMD_FIFO ACK_FIFO
 *       reads one command per line from CMD_FIFO, runs it, then writes "ok\n" to ACK_FIFO, so the
 *       test decides when each phase runs:
 *         work N      work(i) for i < N                         (2N events)
 *         trig N      trigger(N): calls work(i) for i < N       (2N + 2 events)
 *         wait MS     block until MS ms after the last trig returned (CLOCK_BOOTTIME, the
 *                     probes' clock), so a --detail-for window has certainly ended
 *         thread N    work N on a new thread, joined
 *         hot N       hot() N times; trighot N: trigger_hot(N), which calls hot() N times
 *         timed CMD   CMD, acknowledged as "ok NS" with the ns it took (bench/bench_detail.sh)
 *         quit        exit 0
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define G_VALUE 0x1122334455667788ull
#define CANARY  0xC0FFEE1234567890ull

volatile uint64_t detail_sink;

__attribute__((noinline)) uint64_t f6(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
				      uint64_t f)
{
	return detail_sink += a + b + c + d + e + f;
}

__attribute__((noinline)) uint64_t f8(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
				      uint64_t f, uint64_t g, uint64_t h)
{
	return detail_sink += a + b + c + d + e + f + g + h;
}

__attribute__((noinline)) uint64_t g(void)
{
	detail_sink++;
	return G_VALUE;
}

__attribute__((noinline)) void canary_leaf(void)
{
	detail_sink++;
}

__attribute__((noinline)) void canary_caller(void)
{
	volatile uint64_t canary = CANARY;     /* in this frame, just above canary_leaf's return address */

	/* built with frame pointers: rbp in this frame, which canary_leaf's entry still sees */
	printf("frame canary_caller %p\n", __builtin_frame_address(0));
	fflush(stdout);
	canary_leaf();
	detail_sink += canary;
}

__attribute__((noinline)) void work(int i)
{
	detail_sink += (uint64_t)i;
}

__attribute__((noinline)) void trigger(int n)
{
	for (int i = 0; i < n; i++)
		work(i);
}

/*
 * hot() starts with a 5-byte nop, which the kernel turns into a call to its uprobe trampoline:
 * the cheapest probe (kernel-facts.md), so bench/bench_detail.sh measures the detail record and
 * not the several microseconds of single-stepping work()'s first instruction.
 */
#if defined(__x86_64__)
__asm__(".pushsection .text\n"
	".globl hot\n"
	".type hot, @function\n"
	"hot:\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"      /* nopl 0x0(%rax,%rax,1) */
	"\tret\n"
	".size hot, .-hot\n"
	".popsection\n");
void hot(void);
#else
__attribute__((noinline)) void hot(void)
{
	__asm__ volatile("");
}
#endif

__attribute__((noinline)) void trigger_hot(int n)
{
	for (int i = 0; i < n; i++)
		hot();
}

static void *thread_main(void *arg)
{
	int n = (int)(intptr_t)arg;

	for (int i = 0; i < n; i++)
		work(i);
	return NULL;
}

static int script(const char *cmd_path, const char *ack_path)
{
	struct timespec trig_end = { 0 };
	char line[128];
	FILE *cmd = fopen(cmd_path, "r");
	FILE *ack = fopen(ack_path, "w");

	if (!cmd || !ack) {
		perror("detail_args: fifo");
		return 2;
	}
	while (fgets(line, sizeof(line), cmd)) {
		struct timespec t0, t1;
		char op[16];
		long n = 0;
		bool timed = !strncmp(line, "timed ", 6);

		if (sscanf(line + (timed ? 6 : 0), "%15s %ld", op, &n) < 1)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (!strcmp(op, "quit"))
			break;
		if (!strcmp(op, "work")) {
			for (long i = 0; i < n; i++)
				work((int)i);
		} else if (!strcmp(op, "trig")) {
			trigger((int)n);
			clock_gettime(CLOCK_BOOTTIME, &trig_end);
		} else if (!strcmp(op, "hot")) {
			for (long i = 0; i < n; i++)
				hot();
		} else if (!strcmp(op, "trighot")) {
			trigger_hot((int)n);
		} else if (!strcmp(op, "wait")) {
			struct timespec until = trig_end;

			until.tv_sec += n / 1000;
			until.tv_nsec += (n % 1000) * 1000000;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			while (clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &until, NULL))
				;
		} else if (!strcmp(op, "thread")) {
			pthread_t t;

			if (pthread_create(&t, NULL, thread_main, (void *)(intptr_t)n) || pthread_join(t, NULL))
				return 2;
		} else {
			fprintf(stderr, "detail_args: unknown command %s\n", op);
			return 2;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (timed)
			fprintf(ack, "ok %lld\n", (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
				(t1.tv_nsec - t0.tv_nsec));
		else
			fputs("ok\n", ack);
		fflush(ack);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "regs")) {
		/* where main runs (the load address, for lr) and its rbp (the callees' fp at entry) */
		printf("main %p frame main %p\n", (void *)main, __builtin_frame_address(0));
		fflush(stdout);
		f6(1, 2, 3, 4, 5, 6);
		f8(0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18);
		if (g() != G_VALUE)
			return 1;
		canary_caller();
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "script"))
		return script(argv[2], argv[3]);
	fprintf(stderr, "usage: detail_args regs | script CMD_FIFO ACK_FIFO\n");
	return 2;
}
