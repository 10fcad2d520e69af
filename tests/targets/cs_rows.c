// SPDX-License-Identifier: MIT
/*
 * Target of the call-site rows tests (tests/e2e/test_call_sites_rows_*.sh): each way an entry
 * trampoline once harmed a target, as a process shape. One traced function, in assembly so its
 * bytes do not depend on the compiler:
 *   tr_sub  +0 sub $0x18,%rsp  +4 mov %edi,8(%rsp)  +8 mov 8(%rsp),%eax  +12 add $4,%eax
 *           +15 add $0x18,%rsp  +19 ret                                   returns x + 4
 * An entry trampoline's jmp covers +0..+4; a call-site body relocates +0..+8 and jumps to +8,
 * which the symbol rows_body names (bpftrace 0.17 here takes no uprobe at FUNC+OFFSET).
 * Every call's result is checked: a wrongly run tr_sub makes the process exit 1.
 * Hot loops call tr_sub(HOT + thread) (HOT = 2000000) in batches of 5, pausing ROWS_HOT_US
 * microseconds (environment, default 1000; 0: no pause) between batches; a window's calls use
 * x < 1000000, so another tool can count them alone by their argument (%di).
 *
 *   cs_rows rounds T READY     T hot threads; READY once all run; for each line N on stdin each
 *                              thread calls tr_mark, then N x (tr_sub(i) directly, tr_sub(i)
 *                              through a pointer), then tr_done; once all did, print
 *                              "round N: direct D indirect I"; ends at a line 0 or the end of stdin
 *   cs_rows serve T READY      T hot threads and the main thread's rounds (one direct, one
 *                              indirect call of tr_sub); at each SIGUSR1 create READY.more after
 *                              1000 more rounds; at SIGTERM print "served N conts C" (C: SIGCONTs
 *                              received)
 *   cs_rows forks N T READY    T hot threads; READY; at SIGUSR1, once the hot threads made
 *                              ROWS_FILL (environment, default 0) more calls, fork N children one
 *                              after the other, each calling tr_sub 2000 times and exiting 0 if right;
 *                              print "forks N ok K"; ends at SIGTERM
 *   cs_rows children N READY   N children that call tr_sub hot; READY once each called it; at
 *                              SIGTERM end them and print "children N ok K"
 *   cs_rows vfork T READY      T hot threads; READY; at SIGUSR1 the main thread vforks a child
 *                              that creates READY.vfork and waits for SIGUSR2 (the main thread
 *                              stays blocked in vfork meanwhile), then exits; print "vfork ok";
 *                              ends at SIGTERM
 *   cs_rows clonevm READY      a clone(CLONE_VM) child and the parent call tr_sub hot; READY; at
 *                              each SIGUSR1 the parent calls tr_mark, 1000 x (tr_sub(i) directly,
 *                              tr_sub(i) through a pointer), tr_done, then creates READY.win; at
 *                              SIGTERM print "clonevm ok K" (K of 2 ran right to the end)
 *   cs_rows gaps READY         one loop calling tr_sub; at each SIGUSR1 print "gap MAX_US
 *                              conts C" (the longest time between two iterations since the last
 *                              SIGUSR1, SIGCONTs received so far); ends at SIGTERM
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

int tr_sub(int x);

__asm__(
	".text\n"
	".globl tr_sub\n.type tr_sub,@function\ntr_sub:\n"
	"	sub $0x18, %rsp\n	mov %edi, 8(%rsp)\n"
	".globl rows_body\n.type rows_body,@function\nrows_body:\n"
	"	mov 8(%rsp), %eax\n	add $4, %eax\n"
	"	add $0x18, %rsp\n	ret\n.size tr_sub, .-tr_sub\n.size rows_body, .-rows_body\n");

__attribute__((noinline, noipa)) void tr_mark(void) { __asm__ volatile(""); }
__attribute__((noinline, noipa)) void tr_done(void) { __asm__ volatile(""); }

#define HOT 2000000

static volatile sig_atomic_t stop, go, release, report;
static volatile int wrong, conts;
static int hot_us = 1000;
static long hot_calls;
static int (*volatile sub_ptr)(int) = tr_sub;

static void on_signal(int sig)
{
	if (sig == SIGTERM)
		stop = 1;
	else if (sig == SIGUSR1)
		go = report = 1;
	else if (sig == SIGUSR2)
		release = 1;
	else if (sig == SIGCONT)
		conts++;
}

static void handle(int sig)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	sigaction(sig, &sa, NULL);      /* pause() and usleep() still return at a signal */
}

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static void check(int x, int got)
{
	if (got != x + 4 && wrong++ < 5)
		fprintf(stderr, "cs_rows: tr_sub(%d) = %d, expected %d\n", x, got, x + 4);
}

/* One hot batch: 5 direct calls, then the pause. */
__attribute__((noinline)) static void hot_batch(int x)
{
	for (int i = 0; i < 5; i++)
		check(x, tr_sub(x));
	__atomic_add_fetch(&hot_calls, 5, __ATOMIC_RELAXED);
	if (hot_us)
		usleep((useconds_t)hot_us);
}

/* A window's pair: one direct call (a redirected site), one through a pointer (never). */
__attribute__((noinline)) static void window_pair(int i)
{
	check(i, tr_sub(i));
	check(i, sub_ptr(i));
}

static volatile int running, round_gen, round_n, round_quit;
static long round_direct, round_indirect, round_done;

static void *round_thread(void *arg)
{
	int x = HOT + (int)(long)arg, gen = 0;

	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		long n = 0;

		while (__atomic_load_n(&round_gen, __ATOMIC_ACQUIRE) == gen && !round_quit && !stop)
			hot_batch(x);
		if (round_quit || stop)
			return NULL;
		gen = __atomic_load_n(&round_gen, __ATOMIC_ACQUIRE);
		tr_mark();
		for (int i = 0; i < round_n; i++, n++)
			window_pair(i);
		tr_done();
		__atomic_add_fetch(&round_direct, n, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&round_indirect, n, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&round_done, 1, __ATOMIC_SEQ_CST);
	}
}

static int start_threads(pthread_t *th, int n)
{
	if (n < 0 || n > 16)
		return -1;
	for (long i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, round_thread, (void *)i))
			return -1;
	while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < n)
		sched_yield();
	return 0;
}

static void join_threads(pthread_t *th, int n)
{
	round_quit = 1;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

static int rounds(int nthreads, const char *ready)
{
	pthread_t th[16];
	char line[64];

	if (start_threads(th, nthreads) || touch(ready))
		return 2;
	while (fgets(line, sizeof(line), stdin)) {
		if ((round_n = atoi(line)) <= 0)
			break;
		round_direct = round_indirect = round_done = 0;
		__atomic_add_fetch(&round_gen, 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&round_done, __ATOMIC_SEQ_CST) < nthreads)
			usleep(1000);
		printf("round %d: direct %ld indirect %ld\n", round_n, round_direct, round_indirect);
	}
	join_threads(th, nthreads);
	return wrong ? 1 : 0;
}

static int serve(int nthreads, const char *ready)
{
	pthread_t th[16];
	char more[4096];
	long n = 0, mark = -1;

	snprintf(more, sizeof(more), "%s.more", ready);
	if (start_threads(th, nthreads) || touch(ready))
		return 2;
	while (!stop) {
		window_pair((int)(n % 64));
		n++;
		if (go) {
			go = 0;
			mark = n;
		}
		if (mark >= 0 && n == mark + 1000 && touch(more))
			return 2;
		if (hot_us && n % 5 == 0)
			usleep((useconds_t)hot_us);
	}
	join_threads(th, nthreads);
	printf("served %ld conts %d\n", n, conts);
	return wrong ? 1 : 0;
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int forks(int n, int nthreads, const char *ready)
{
	pthread_t th[16];
	int ok = 0;

	if (start_threads(th, nthreads) || touch(ready))
		return 2;
	/* polled: SIGUSR1 may be taken by a hot thread, which would leave pause() asleep */
	while (!go && !stop)
		usleep(1000);
	for (long base = __atomic_load_n(&hot_calls, __ATOMIC_RELAXED), fill = getenv("ROWS_FILL") ?
	     atol(getenv("ROWS_FILL")) : 0; __atomic_load_n(&hot_calls, __ATOMIC_RELAXED) - base < fill;)
		usleep(1000);
	for (int i = 0; i < n && !stop; i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			for (int k = 0; k < 2000; k++)
				window_pair(k);
			_exit(wrong ? 1 : 0);
		}
		ok += wait_child(pid);
	}
	printf("forks %d ok %d\n", n, ok);
	while (!stop)
		pause();
	join_threads(th, nthreads);
	return wrong || ok != n ? 1 : 0;
}

static int children(int n, const char *ready)
{
	pid_t *kids = calloc((size_t)n, sizeof(*kids));
	int up[2], ok = 0;
	char c;

	if (!kids || n < 1 || pipe(up))
		return 2;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			return 2;
		if (kids[i] == 0) {
			close(up[0]);
			check(1, tr_sub(1));
			if (write(up[1], "k", 1) != 1)
				_exit(2);
			while (!stop)
				hot_batch(HOT + i);
			_exit(wrong ? 1 : 0);
		}
	}
	close(up[1]);
	for (int i = 0; i < n; i++)
		if (read(up[0], &c, 1) != 1)
			return 2;
	if (touch(ready))
		return 2;
	while (!stop)
		pause();
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGTERM);
	for (int i = 0; i < n; i++)
		ok += wait_child(kids[i]);
	printf("children %d ok %d\n", n, ok);
	return ok == n ? 0 : 1;
}

static int vforked(int nthreads, const char *ready)
{
	char path[4096];
	pthread_t th[16];
	pid_t pid;

	snprintf(path, sizeof(path), "%s.vfork", ready);
	if (start_threads(th, nthreads) || touch(ready))
		return 2;
	while (!go && !stop)
		pause();
	pid = vfork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		/* the parent's memory: only flags, a file and pause until SIGUSR2 */
		if (touch(path))
			_exit(2);
		while (!release)
			pause();
		_exit(0);
	}
	if (!wait_child(pid))
		return 1;
	printf("vfork ok\n");
	while (!stop)
		pause();
	join_threads(th, nthreads);
	return wrong ? 1 : 0;
}

static volatile int vm_child_running, vm_child_done;

/* The CLONE_VM child: no libc that uses its thread pointer (it shares the parent's). */
static int vm_child(void *arg)
{
	long n = 0;

	(void)arg;
	__atomic_store_n(&vm_child_running, 1, __ATOMIC_SEQ_CST);
	while (!stop) {
		if (tr_sub((int)(n & 63)) != (int)(n & 63) + 4)
			wrong = 1;
		n++;
	}
	__atomic_store_n(&vm_child_done, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int clonevm(const char *ready)
{
	size_t size = 1 << 20;
	char *stack = malloc(size), win[4096];
	int ok;
	pid_t child;

	if (!stack)
		return 2;
	child = clone(vm_child, stack + size, CLONE_VM | SIGCHLD, NULL);
	if (child < 0)
		return 2;
	while (!__atomic_load_n(&vm_child_running, __ATOMIC_SEQ_CST))
		sched_yield();
	if (touch(ready))
		return 2;
	snprintf(win, sizeof(win), "%s.win", ready);
	while (!stop) {
		hot_batch(HOT);
		if (go) {
			go = 0;
			tr_mark();
			for (int i = 0; i < 1000; i++)
				window_pair(i);
			tr_done();
			if (touch(win))
				return 2;
		}
	}
	ok = wait_child(child) && vm_child_done && !wrong;
	ok += !wrong;
	printf("clonevm ok %d\n", ok);
	return ok == 2 ? 0 : 1;
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static int gaps(const char *ready)
{
	long last = now_us(), max = 0, n = 0;

	if (touch(ready))
		return 2;
	while (!stop) {
		long t;

		check((int)(n & 63), tr_sub((int)(n & 63)));
		n++;
		t = now_us();
		if (t - last > max)
			max = t - last;
		last = t;
		if (report) {
			report = 0;
			printf("gap %ld conts %d\n", max, conts);
			max = 0;
			last = now_us();
		}
	}
	return wrong ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *us = getenv("ROWS_HOT_US");

	if (us)
		hot_us = atoi(us);
	handle(SIGTERM);
	handle(SIGUSR1);
	handle(SIGUSR2);
	handle(SIGCONT);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "rounds"))
		return rounds(atoi(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), argv[3]);
	if (argc == 5 && !strcmp(argv[1], "forks"))
		return forks(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (argc == 4 && !strcmp(argv[1], "children"))
		return children(atoi(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "vfork"))
		return vforked(atoi(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "clonevm"))
		return clonevm(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "gaps"))
		return gaps(argv[2]);
	fprintf(stderr, "usage: cs_rows rounds T READY | serve T READY | forks N T READY | "
		"children N READY | vfork T READY | clonevm READY | gaps READY\n");
	return 2;
}
