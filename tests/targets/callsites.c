// SPDX-License-Identifier: MIT
/*
 * Call-site redirection target (record --call-sites): functions whose first instruction the
 * kernel single-steps, in assembly so the bytes do not depend on the compiler, called directly
 * from many places; each returns a value the caller checks (a wrong relocation shows as a wrong
 * result, exit 1):
 *   tr_mov    mov %edi,%eax; add $3,%eax                  x + 3
 *   tr_sub    sub $0x18,%rsp; ... (a stack slot)          x + 4
 *   tr_lea    lea 1(%rdi),%eax; lea 1(%rax),%eax          x + 2
 *   cs_rec    mov %edi,%eax; ...; call cs_rec             recursion: x levels deep, returns x
 *   cs_tail   mov %edi,%eax; ...; jmp tr_sub              a tail call: x + 4
 *   cs_ripk   mov cs_k(%rip),%eax; add %edi,%eax          x + 9 (a rip-relative load)
 *
 *   callsites all N               N rounds; print one line per function with the sum of its
 *                                 results (the output an untraced run must match)
 *   callsites threads T K READY   T threads call tr_sub and tr_mov in a loop; READY once all
 *                                 run; at SIGUSR1 each calls tr_mark, then exactly K of tr_sub,
 *                                 K of tr_mov directly (x < K) and K of tr_mov through a
 *                                 pointer (x = 1000000 + i: an indirect call, never
 *                                 redirected), then tr_done, and ends
 *   callsites rounds T READY      T threads call tr_sub and tr_mov directly in a loop; READY
 *                                 once all run; then for each line N on stdin, each thread calls
 *                                 tr_mark, exactly N of tr_sub, N of tr_mov directly and N of
 *                                 tr_mov through a pointer, then tr_done, and loops again; once
 *                                 all did, "round N: tr_sub S tr_mov M" (the calls of the round,
 *                                 counted by the threads); at the end of stdin, "total: tr_sub S
 *                                 tr_mov M" (every call the threads made, hot ones too), and ends
 *   callsites serve READY         create READY, call everything until SIGTERM; print "served N";
 *                                 at SIGUSR1, create READY.more after 1000 more rounds
 *   callsites fork N              fork a child that runs "all N" and exits 0 if its results
 *                                 were right; wait for it; then "all N" itself
 *   callsites time KIND N         call tr_mov (KIND mov) or cs_ripk (KIND ripk) N times from one
 *                                 site; print "KIND N ns_per_call" (bench)
 */
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

int tr_mov(int x);
int tr_sub(int x);
int tr_lea(int x);
int cs_rec(int x);
int cs_tail(int x);
int cs_ripk(int x);
const int cs_k = 9;

__asm__(
	".text\n"
	".globl tr_mov\n.type tr_mov,@function\ntr_mov:\n"
	"	mov %edi, %eax\n	add $3, %eax\n	ret\n.size tr_mov, .-tr_mov\n"
	".globl tr_sub\n.type tr_sub,@function\ntr_sub:\n"
	"	sub $0x18, %rsp\n	mov %edi, 8(%rsp)\n	mov 8(%rsp), %eax\n	add $4, %eax\n"
	"	add $0x18, %rsp\n	ret\n.size tr_sub, .-tr_sub\n"
	".globl tr_lea\n.type tr_lea,@function\ntr_lea:\n"
	"	lea 1(%rdi), %eax\n	lea 1(%rax), %eax\n	ret\n.size tr_lea, .-tr_lea\n"
	".globl cs_rec\n.type cs_rec,@function\ncs_rec:\n"
	"	mov %edi, %eax\n	test %edi, %edi\n	jle 1f\n	push %rbx\n"
	"	lea -1(%rdi), %edi\n	call cs_rec\n	add $1, %eax\n	pop %rbx\n1:	ret\n"
	".size cs_rec, .-cs_rec\n"
	".globl cs_tail\n.type cs_tail,@function\ncs_tail:\n"
	"	mov %edi, %eax\n	mov %eax, %edi\n	jmp tr_sub\n.size cs_tail, .-cs_tail\n"
	".globl cs_ripk\n.type cs_ripk,@function\ncs_ripk:\n"
	"	mov cs_k(%rip), %eax\n	add %edi, %eax\n	ret\n.size cs_ripk, .-cs_ripk\n");

__attribute__((noinline, noipa)) void tr_mark(void) { __asm__ volatile(""); }
__attribute__((noinline, noipa)) void tr_done(void) { __asm__ volatile(""); }

static volatile sig_atomic_t stop, go;
static int bad;
static long sum_mov, sum_sub, sum_lea, sum_rec, sum_tail;

static int check(const char *what, int x, int got, int want)
{
	if (got != want && bad++ < 5)
		fprintf(stderr, "callsites: %s(%d) = %d, expected %d\n", what, x, got, want);
	return got;
}

/* Several callers, each with its own direct call sites. */
__attribute__((noinline)) static void caller_a(int x)
{
	sum_mov += check("tr_mov", x, tr_mov(x), x + 3);
	sum_sub += check("tr_sub", x, tr_sub(x), x + 4);
	sum_lea += check("tr_lea", x, tr_lea(x), x + 2);
}

__attribute__((noinline)) static void caller_b(int x)
{
	sum_lea += check("tr_lea", x, tr_lea(x), x + 2);
	sum_mov += check("tr_mov", x, tr_mov(x), x + 3);
	sum_mov += check("tr_mov", x + 1, tr_mov(x + 1), x + 4);
}

__attribute__((noinline)) static void caller_c(int x)
{
	sum_sub += check("tr_sub", x, tr_sub(x), x + 4);
	sum_tail += check("cs_tail", x, cs_tail(x), x + 4);
	sum_rec += check("cs_rec", x % 8, cs_rec(x % 8), x % 8);
}

static void round_all(int x)
{
	caller_a(x);
	caller_b(x);
	caller_c(x);
}

static int run_all(int n)
{
	for (int i = 0; i < n; i++)
		round_all(i % 64);
	sum_rec += check("cs_rec", 200, cs_rec(200), 200);     /* deeper than 64 */
	printf("tr_mov %ld\ntr_sub %ld\ntr_lea %ld\ncs_rec %ld\ncs_tail %ld\n", sum_mov, sum_sub,
	       sum_lea, sum_rec, sum_tail);
	return bad ? 1 : 0;
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		go = 1;
	else
		stop = 1;
}

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int serve(const char *ready)
{
	char more[4096];
	long n = 0, mark = -1;

	signal(SIGTERM, on_signal);
	signal(SIGUSR1, on_signal);
	snprintf(more, sizeof(more), "%s.more", ready);
	if (touch(ready))
		return 2;
	while (!stop) {
		round_all((int)(n % 64));
		n++;
		if (go && mark < 0)
			mark = n;
		if (mark >= 0 && n == mark + 1000 && touch(more))
			return 2;
	}
	printf("served %ld\n", n);
	return bad ? 1 : 0;
}

static int fork_test(int n)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		_exit(run_all(n));
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "callsites: the forked child failed (status 0x%x)\n", status);
		return 1;
	}
	return run_all(n);
}

static int per_thread;
static int (*volatile mov_ptr)(int) = tr_mov;
static volatile int running;

/* The hot loop's calls, and a window's (threads and rounds share these call sites). */
__attribute__((noinline)) static void hot_calls(int x)
{
	check("tr_sub", x, tr_sub(x), x + 4);
	check("tr_mov", x, tr_mov(x), x + 3);
}

__attribute__((noinline)) static void window_calls(int i)
{
	check("tr_sub", i, tr_sub(i), i + 4);
	check("tr_mov", i, tr_mov(i), i + 3);
	check("tr_mov", 1000000 + i, mov_ptr(1000000 + i), 1000003 + i);
}

static void *hot_thread(void *arg)
{
	int x = (int)(long)arg;

	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	while (!go)
		hot_calls(x);
	tr_mark();
	for (int i = 0; i < per_thread; i++)
		window_calls(i);
	tr_done();
	return NULL;
}

static int threads_test(int nthreads, int k, const char *ready)
{
	pthread_t th[64];

	if (nthreads < 1 || nthreads > 64)
		return 2;
	per_thread = k;
	signal(SIGUSR1, on_signal);
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, hot_thread, (void *)i))
			return 2;
	while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < nthreads)
		sched_yield();
	if (touch(ready))
		return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("threads %d calls %d\n", nthreads, k);
	return bad ? 1 : 0;
}

static volatile int round_gen, round_n, round_quit;
static long round_sub, round_mov, round_done, total_sub, total_mov;

static void *round_thread(void *arg)
{
	int x = (int)(long)arg, gen = 0;
	long hot = 0;

	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		long sub = 0, mov = 0;

		while (__atomic_load_n(&round_gen, __ATOMIC_ACQUIRE) == gen && !round_quit) {
			hot_calls(x);
			hot++;
		}
		if (round_quit) {
			__atomic_add_fetch(&total_sub, hot, __ATOMIC_SEQ_CST);
			__atomic_add_fetch(&total_mov, hot, __ATOMIC_SEQ_CST);
			return NULL;
		}
		gen = __atomic_load_n(&round_gen, __ATOMIC_ACQUIRE);
		tr_mark();
		for (int i = 0; i < round_n; i++) {
			window_calls(i);    /* one tr_sub, two tr_mov (one through a pointer) */
			sub++;
			mov += 2;
		}
		tr_done();
		__atomic_add_fetch(&round_sub, sub, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&round_mov, mov, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&total_sub, sub, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&total_mov, mov, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&round_done, 1, __ATOMIC_SEQ_CST);
	}
}

static int rounds_test(int nthreads, const char *ready)
{
	pthread_t th[64];
	char line[64];

	if (nthreads < 1 || nthreads > 64)
		return 2;
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, round_thread, (void *)i))
			return 2;
	while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < nthreads)
		sched_yield();
	if (touch(ready))
		return 2;
	while (fgets(line, sizeof(line), stdin)) {
		round_n = atoi(line);
		round_sub = round_mov = round_done = 0;
		__atomic_add_fetch(&round_gen, 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&round_done, __ATOMIC_SEQ_CST) < nthreads)
			usleep(1000);
		printf("round %d: tr_sub %ld tr_mov %ld\n", round_n, round_sub, round_mov);
	}
	round_quit = 1;
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("total: tr_sub %ld tr_mov %ld\n", total_sub, total_mov);
	return bad ? 1 : 0;
}

static int time_one(const char *kind, int n)
{
	int (*fn)(int) = !strcmp(kind, "mov") ? tr_mov : !strcmp(kind, "ripk") ? cs_ripk : NULL;
	struct timespec a, b;

	if (!fn)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		fn(i & 1);      /* through a pointer: one indirect call, never redirected */
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%s %d %.1f\n", kind, n,
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (n ? n : 1));
	return 0;
}

/* The same through a direct call site. */
static int time_direct(int n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		tr_mov(i & 1);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("direct %d %.1f\n", n,
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (n ? n : 1));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "all"))
		return run_all(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "threads"))
		return threads_test(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (argc == 3 && !strcmp(argv[1], "fork"))
		return fork_test(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "rounds"))
		return rounds_test(atoi(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "time"))
		return !strcmp(argv[2], "direct") ? time_direct(atoi(argv[3]))
						  : time_one(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: callsites all N | threads T K READY | rounds T READY | serve READY | "
		"fork N | time mov|ripk|direct N\n");
	return 2;
}
