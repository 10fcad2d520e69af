// SPDX-License-Identifier: MIT
/*
 * A process that makes exactly known calls in waves, on a signal (record -a --call-sites):
 *
 *   cs_waves DIR N     writes its pid to DIR/<pid>.up, then, for each SIGUSR1, one wave of N
 *                      calls of wv_outer(i), each of which calls wv_mov(i) twice and wv_lea(i)
 *                      once directly (mov- and lea-first functions, whose first instruction the
 *                      kernel single-steps), prints "wave K: S" (the sum of the results, the
 *                      output an untraced run must match) and creates DIR/<pid>.K; exits 0 at
 *                      SIGTERM (1 if a result was wrong); at SIGUSR2, forks a child that
 *                      goes on the same way (its own DIR/<child>.up, waves from 1), and writes
 *                      the child's pid to DIR/<pid>.forked; at SIGHUP, execs itself as
 *   cs_waves DIR N exec  the same, its files named DIR/<pid>.exec.up and DIR/<pid>.exec.K
 *
 * The signals are taken with sigwaitinfo(), blocked otherwise: nothing is lost between waves.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int wv_mov(int x);
int wv_lea(int x);

__asm__(
	".text\n"
	".globl wv_mov\n.type wv_mov,@function\nwv_mov:\n"
	"	mov %edi, %eax\n	add $3, %eax\n	ret\n.size wv_mov, .-wv_mov\n"
	".globl wv_lea\n.type wv_lea,@function\nwv_lea:\n"
	"	lea 1(%rdi), %eax\n	lea 1(%rax), %eax\n	ret\n.size wv_lea, .-wv_lea\n");

static int bad;

__attribute__((noinline, noipa)) int wv_outer(int x)
{
	int a = wv_mov(x), b = wv_mov(x + 1), c = wv_lea(x);

	if (a != x + 3 || b != x + 4 || c != x + 2)
		bad++;
	return a + b + c;
}

/* DIR/<pid>.<what>, holding @value, whole once it appears (written aside, then renamed) */
static const char *tag = "";

static void touch(const char *dir, int pid, const char *what, int value)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d.%s%s", dir, pid, tag, what);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", value) < 0 || fclose(f) || rename(tmp, path)) {
		perror(path);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	sigset_t set;
	int n, wave = 0, sig;
	char name[32];
	pid_t child;

	if (argc < 3 || argc > 4 || (n = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: cs_waves DIR N [exec]\n");
		return 2;
	}
	if (argc == 4)
		tag = "exec.";
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	touch(argv[1], getpid(), "up", getpid());
	while ((sig = sigwaitinfo(&set, NULL)) != SIGTERM) {
		long sum = 0;

		if (sig == SIGHUP) {
			char *args[] = { argv[0], argv[1], argv[2], "exec", NULL };

			execv(argv[0], args);
			perror("exec");
			return 2;
		}
		if (sig == SIGUSR2 && (child = fork()) == 0) {
			wave = 0;
			touch(argv[1], getpid(), "up", getpid());
		} else if (sig == SIGUSR2 && child > 0) {
			touch(argv[1], getpid(), "forked", child);
		}
		if (sig != SIGUSR1)
			continue;
		for (int i = 0; i < n; i++)
			sum += wv_outer(i % 100);
		printf("wave %d: %ld\n", ++wave, sum);
		snprintf(name, sizeof(name), "%d", wave);
		touch(argv[1], getpid(), name, wave);
	}
	return bad ? 1 : 0;
}
