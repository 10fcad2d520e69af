// SPDX-License-Identifier: MIT
/*
 * Forks while hot threads fill the ring (tests/e2e/test_record_fork_stopped.sh).
 *
 *   fork_calls DIR NCHILD NCALLS NTHREADS
 *
 * The functions, in assembly so that their first bytes do not depend on the compiler:
 *   fc_lea    lea 1(%rdi),%eax; lea 1(%rax),%eax         x + 2 (gets an entry trampoline)
 *   fc_nop5   nopl 0(%rax,%rax,1); lea 3(%rdi),%eax      x + 3 (a 5-byte nop: the kernel
 *                                                         optimises its probe after one hit)
 *   fc_hot    lea 5(%rdi),%eax; lea 1(%rax),%eax         x + 6 (what the hot threads call)
 *
 * The process calls fc_lea and fc_nop5 once each, starts NTHREADS threads that call fc_hot
 * until the end, creates DIR/ready, and waits for a line on the fifo DIR/go. Then it forks
 * NCHILD children at once (their pids, one a line, in DIR/pids); each calls fc_lea and
 * fc_nop5 NCALLS times, checks the results, writes DIR/child.<i> when they were right, and
 * exits 0 (1 if not). Once all are forked it creates DIR/forked, reaps them, stops the
 * threads, and writes DIR/done: "children NCHILD ok OK calls HOT PARENT", where OK is the
 * number that exited with status 0, HOT the fc_hot calls of the threads and PARENT its own
 * calls of each of fc_lea and fc_nop5 (1). Exits 0 when every child exited 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int fc_lea(int x);
int fc_nop5(int x);
int fc_hot(int x);

__asm__(
	".text\n"
	".globl fc_lea\n.type fc_lea,@function\nfc_lea:\n"
	"	lea 1(%rdi), %eax\n	lea 1(%rax), %eax\n	ret\n.size fc_lea, .-fc_lea\n"
	".globl fc_nop5\n.type fc_nop5,@function\nfc_nop5:\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n	lea 3(%rdi), %eax\n	ret\n"
	".size fc_nop5, .-fc_nop5\n"
	".globl fc_hot\n.type fc_hot,@function\nfc_hot:\n"
	"	lea 5(%rdi), %eax\n	lea 1(%rax), %eax\n	ret\n.size fc_hot, .-fc_hot\n");

static const char *dir;
static volatile int stop;
static long hot_calls[64];

static int touch(const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void *hot(void *arg)
{
	long id = (long)arg, n = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (fc_hot((int)n) != (int)n + 6)
			abort();
		n++;
	}
	hot_calls[id] = n;
	return NULL;
}

static int child(int i, int ncalls)
{
	char name[32];

	for (int k = 0; k < ncalls; k++)
		if (fc_lea(k) != k + 2 || fc_nop5(k) != k + 3)
			return 1;
	snprintf(name, sizeof(name), "child.%d", i);
	return touch(name, "ok\n") ? 1 : 0;
}

int main(int argc, char **argv)
{
	int nchild, ncalls, nthreads, ok = 0;
	pthread_t th[64];
	char path[4096], line[16], done[128];
	pid_t pids[1024];
	long hot_total = 0;
	FILE *go, *pf;

	if (argc != 5)
		return 2;
	dir = argv[1];
	nchild = atoi(argv[2]);
	ncalls = atoi(argv[3]);
	nthreads = atoi(argv[4]);
	if (nchild < 1 || nchild > 1024 || ncalls < 0 || nthreads < 0 || nthreads > 64)
		return 2;
	/* one hit each: the kernel optimises the probe at fc_nop5 in this process */
	if (fc_lea(0) != 2 || fc_nop5(0) != 3)
		return 1;
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, hot, (void *)i))
			return 2;
	snprintf(path, sizeof(path), "%s/pids", dir);
	pf = fopen(path, "w");
	if (!pf || touch("ready", "ready\n"))
		return 2;
	snprintf(path, sizeof(path), "%s/go", dir);
	go = fopen(path, "r");
	if (!go || !fgets(line, sizeof(line), go))
		return 2;
	fclose(go);
	for (int i = 0; i < nchild; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 2;
		if (pids[i] == 0)
			_exit(child(i, ncalls));
		fprintf(pf, "%d\n", (int)pids[i]);
		fflush(pf);
	}
	fclose(pf);
	if (touch("forked", "forked\n"))
		return 2;
	for (int i = 0; i < nchild; i++) {
		int status;

		while (waitpid(pids[i], &status, 0) < 0)
			if (errno != EINTR)
				return 2;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			ok++;
		else
			fprintf(stderr, "fork_calls: child %d (pid %d) ended with status 0x%x\n", i,
				(int)pids[i], status);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		hot_total += hot_calls[i];
	}
	snprintf(done, sizeof(done), "children %d ok %d calls %ld 1\n", nchild, ok, hot_total);
	if (touch("done", done))
		return 2;
	fputs(done, stdout);
	return ok == nchild ? 0 : 1;
}
