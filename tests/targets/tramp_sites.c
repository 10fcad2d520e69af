// SPDX-License-Identifier: MIT
/*
 * Entry-trampoline target: one function per kind of first instruction, in assembly so the
 * bytes do not depend on the compiler, each returning a value the caller checks (a wrongly
 * moved instruction shows as a wrong result, exit 1):
 *   tr_lea    lea 1(%rdi),%eax; lea 1(%rax),%eax          x + 2
 *   tr_mov    mov %edi,%eax; add $3,%eax                  x + 3
 *   tr_sub    sub $0x18,%rsp; ... (a stack slot)          x + 4
 *   tr_rip    mov tr_total(%rip),%eax; add; store back    running total (rip-relative load/store)
 *   tr_ripk   mov tr_k(%rip),%eax; add %edi,%eax         x + 9 (a rip-relative load only: thread-safe)
 *   tr_jcc    test; js (a short jcc moved and widened)    x + 5, or -1 for x < 0
 *   tr_endbr  endbr64; sub $8,%rsp; ...                   x + 6 (patched at +4)
 *   tr_short  lea 7(%rdi),%eax; ret                       4 bytes: never patched (short)
 *   tr_loop   xor; L: add; cmp; jl L                      branches into its first bytes: never patched
 *   tr_nop5   nopl 0(%rax,%rax,1); ...                    already a nop5 site
 *
 *   tramp_sites all N              call each function N times (with x = 0..N-1)
 *   tramp_sites KIND N             call one N times; print "KIND N ns_per_call"
 *   tramp_sites serve READY        create READY, then call all of them until SIGTERM;
 *                                  print "served N" (the -p and text-restore tests)
 *   tramp_sites sandboxed READY    the same under a seccomp filter that kills the process at
 *                                  memfd_create (no syscall may be run inside it)
 *   tramp_sites fork N             all N; fork a child that runs all N and exits 0 if its
 *                                  results were right; wait for it; all N again
 *   tramp_sites threads T K READY  T threads call tr_sub and tr_mov in a loop; READY once all
 *                                  run; at SIGUSR1 each calls tr_mark, then exactly K of each,
 *                                  then tr_done, and ends
 *   tramp_sites mt T N             T threads call tr_ripk N times each; print "mt T N seconds"
 *   tramp_sites forkserve READY    call all of them for a while, then fork a child that serves
 *                                  (as serve READY); wait for it and exit with its status
 *   tramp_sites rounds             print "ready"; for each line N read on stdin, call all of
 *                                  them N times and print "round N ok" (or "round N bad");
 *                                  end at EOF (exact counts for each of several tools in turn)
 *   tramp_sites syscalls N         N getppid syscalls; print "syscalls N ns-per-syscall" (bench:
 *                                  what the registration guard costs every syscall)
 *                                  (bench: a hot function that starts with a rip-relative load)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int tr_lea(int x);
int tr_mov(int x);
int tr_sub(int x);
int tr_rip(int x);
int tr_jcc(int x);
int tr_endbr(int x);
int tr_short(int x);
int tr_loop(int x);
int tr_nop5(int x);
int tr_ripk(int x);
int tr_total;
const int tr_k = 9;

__asm__(
	".text\n"
	".globl tr_lea\n.type tr_lea,@function\ntr_lea:\n"
	"	lea 1(%rdi), %eax\n	lea 1(%rax), %eax\n	ret\n.size tr_lea, .-tr_lea\n"
	".globl tr_mov\n.type tr_mov,@function\ntr_mov:\n"
	"	mov %edi, %eax\n	add $3, %eax\n	ret\n.size tr_mov, .-tr_mov\n"
	".globl tr_sub\n.type tr_sub,@function\ntr_sub:\n"
	"	sub $0x18, %rsp\n	mov %edi, 8(%rsp)\n	mov 8(%rsp), %eax\n	add $4, %eax\n"
	"	add $0x18, %rsp\n	ret\n.size tr_sub, .-tr_sub\n"
	".globl tr_rip\n.type tr_rip,@function\ntr_rip:\n"
	"	mov tr_total(%rip), %eax\n	add %edi, %eax\n	mov %eax, tr_total(%rip)\n	ret\n"
	".size tr_rip, .-tr_rip\n"
	".globl tr_jcc\n.type tr_jcc,@function\ntr_jcc:\n"
	"	test %edi, %edi\n	.byte 0x78, 0x04\n	lea 5(%rdi), %eax\n	ret\n"
	"	mov $-1, %eax\n	ret\n.size tr_jcc, .-tr_jcc\n"
	".globl tr_endbr\n.type tr_endbr,@function\ntr_endbr:\n"
	"	.byte 0xf3, 0x0f, 0x1e, 0xfa\n	sub $8, %rsp\n	lea 6(%rdi), %eax\n	add $8, %rsp\n"
	"	ret\n.size tr_endbr, .-tr_endbr\n"
	".globl tr_short\n.type tr_short,@function\ntr_short:\n"
	"	lea 7(%rdi), %eax\n	ret\n.size tr_short, .-tr_short\n"
	".globl tr_loop\n.type tr_loop,@function\ntr_loop:\n"
	"	xor %eax, %eax\n1:	add $1, %eax\n	cmp %edi, %eax\n	jl 1b\n	ret\n"
	".size tr_loop, .-tr_loop\n"
	".globl tr_ripk\n.type tr_ripk,@function\ntr_ripk:\n"
	"	mov tr_k(%rip), %eax\n	add %edi, %eax\n	ret\n.size tr_ripk, .-tr_ripk\n"
	".globl tr_nop5\n.type tr_nop5,@function\ntr_nop5:\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n	lea 8(%rdi), %eax\n	ret\n"
	".size tr_nop5, .-tr_nop5\n");

__attribute__((noinline, noipa)) void tr_mark(void) { __asm__ volatile(""); }
__attribute__((noinline, noipa)) void tr_done(void) { __asm__ volatile(""); }

static volatile sig_atomic_t stop, go;
static int bad;

static void check(const char *what, int x, int got, int want)
{
	if (got != want && bad++ < 5)
		fprintf(stderr, "tramp_sites: %s(%d) = %d, expected %d\n", what, x, got, want);
}

/* One round: every function once with argument @x; the running total is checked by caller. */
static void round_all(int x)
{
	check("tr_lea", x, tr_lea(x), x + 2);
	check("tr_mov", x, tr_mov(x), x + 3);
	check("tr_sub", x, tr_sub(x), x + 4);
	check("tr_jcc", x, tr_jcc(x), x + 5);
	check("tr_jcc", -x - 1, tr_jcc(-x - 1), -1);
	check("tr_endbr", x, tr_endbr(x), x + 6);
	check("tr_short", x, tr_short(x), x + 7);
	check("tr_loop", x, tr_loop(x), x > 1 ? x : 1);
	check("tr_nop5", x, tr_nop5(x), x + 8);
	int before = tr_total;
	check("tr_rip", x, tr_rip(x), before + x);
}

static int run_all(int n)
{
	for (int i = 0; i < n; i++)
		round_all(i % 64);
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
	long n = 0;

	signal(SIGTERM, on_signal);
	if (touch(ready))
		return 2;
	while (!stop) {
		round_all((int)(n % 64));
		n++;
	}
	printf("served %ld\n", n);
	return bad ? 1 : 0;
}

static int sandbox(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

static int fork_test(int n)
{
	int status;
	pid_t pid;

	if (run_all(n))
		return 1;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		_exit(run_all(n));
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "tramp_sites: the forked child failed (status 0x%x)\n", status);
		return 1;
	}
	return run_all(n);
}

static int per_thread;
static volatile int running;

static void *hot_thread(void *arg)
{
	long id = (long)arg;
	int x = (int)id;

	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	while (!go) {
		check("tr_sub", x, tr_sub(x), x + 4);
		check("tr_mov", x, tr_mov(x), x + 3);
	}
	tr_mark();
	for (int i = 0; i < per_thread; i++) {
		check("tr_sub", i, tr_sub(i), i + 4);
		check("tr_mov", i, tr_mov(i), i + 3);
	}
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
	return bad ? 1 : 0;
}

static int (*const kinds[])(int) = { tr_lea, tr_mov, tr_sub, tr_rip, tr_jcc, tr_endbr,
				      tr_short, tr_loop, tr_nop5, tr_ripk };
static const char *const names[] = { "lea", "mov", "sub", "rip", "jcc", "endbr", "short",
				     "loop", "nop5", "ripk" };

static void *mt_thread(void *arg)
{
	long n = (long)arg;

	for (long i = 0; i < n; i++)
		check("tr_ripk", (int)i, tr_ripk((int)i), (int)i + 9);
	return NULL;
}

static int mt_test(int nthreads, long n)
{
	pthread_t th[64];
	struct timespec a, b;

	if (nthreads < 1 || nthreads > 64)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, mt_thread, (void *)n))
			return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("mt %d %ld %.3f\n", nthreads, n, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return bad ? 1 : 0;
}

static int time_one(const char *kind, int n)
{
	struct timespec a, b;

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		if (strcmp(kind, names[k]))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < n; i++)
			kinds[k](i & 1);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("%s %d %.1f\n", kind, n,
		       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (n ? n : 1));
		return 0;
	}
	return 2;
}

static int forkserve(const char *ready)
{
	int status;
	pid_t child;

	for (int i = 0; i < 100; i++)
		round_all(i % 64);
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0)
		_exit(serve(ready));
	if (waitpid(child, &status, 0) != child)
		return 2;
	return bad ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

static int rounds(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int n = atoi(line);

		printf("round %d %s\n", n, run_all(n) ? "bad" : "ok");
		fflush(stdout);
	}
	return bad ? 1 : 0;
}

static int syscalls_test(long n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("syscalls %ld %.1f\n", n,
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (n ? n : 1));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "all"))
		return run_all(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "sandboxed"))
		return sandbox() ? 2 : serve(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "fork"))
		return fork_test(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "threads"))
		return threads_test(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (argc == 4 && !strcmp(argv[1], "mt"))
		return mt_test(atoi(argv[2]), atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "forkserve"))
		return forkserve(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "rounds"))
		return rounds();
	if (argc == 3 && !strcmp(argv[1], "syscalls"))
		return syscalls_test(atol(argv[2]));
	if (argc == 3)
		return time_one(argv[1], atoi(argv[2]));
	fprintf(stderr, "usage: tramp_sites all|serve|fork|threads|KIND ...\n");
	return 2;
}
