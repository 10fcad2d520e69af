// SPDX-License-Identifier: MIT
/*
 * Registration-guard target: processes that call a patched function hot while another tool
 * registers uprobes. gl_sub starts with `sub $0x18,%rsp` (not emulated: it gets a trampoline)
 * and returns x + 4; every caller checks the result, so a wrongly run function shows.
 *
 *   guard_loop loop READY          create READY, then call gl_sub until SIGTERM; print
 *                                  "loop N" (job-control and host-activity tests)
 *   guard_loop forks N READY       call gl_sub, then fork N children that call it until
 *                                  SIGTERM; READY once every child has called it; at SIGTERM
 *                                  end them and print "children N ok K" (K: exited 0)
 *   guard_loop clonevm READY       the same with one clone(CLONE_VM) child (its own pid, the
 *                                  same memory) and the parent both calling gl_sub; at SIGTERM
 *                                  print "clonevm ok K" (K of 2 ran right to the end)
 * Exit status: 0 when every process computed right and ended normally.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int gl_sub(int x);

__asm__(
	".text\n"
	".globl gl_sub\n.type gl_sub,@function\ngl_sub:\n"
	"	sub $0x18, %rsp\n	mov %edi, 8(%rsp)\n	mov 8(%rsp), %eax\n	add $4, %eax\n"
	"	add $0x18, %rsp\n	ret\n.size gl_sub, .-gl_sub\n");

static volatile sig_atomic_t stop;
static volatile int wrong;

static void on_term(int sig)
{
	(void)sig;
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

/* Call gl_sub until SIGTERM; how many calls. */
static long hot(void)
{
	long n = 0;

	while (!stop) {
		if (gl_sub((int)(n & 63)) != (int)(n & 63) + 4)
			wrong = 1;
		n++;
	}
	return n;
}

static int loop(const char *ready)
{
	long n;

	gl_sub(0);
	if (touch(ready))
		return 2;
	n = hot();
	printf("loop %ld\n", n);
	return wrong;
}

static int forks(int n, const char *ready)
{
	pid_t *kids = calloc((size_t)n, sizeof(*kids));
	int up[2], ok = 0;
	char c;

	if (!kids || n < 1 || pipe(up))
		return 2;
	gl_sub(0);
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			return 2;
		if (kids[i] == 0) {
			close(up[0]);
			gl_sub(1);
			if (write(up[1], "k", 1) != 1)
				_exit(2);
			hot();
			_exit(wrong);
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
	for (int i = 0; i < n; i++) {
		int status;

		while (waitpid(kids[i], &status, 0) < 0 && errno == EINTR)
			;
		ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	printf("children %d ok %d\n", n, ok);
	return ok == n ? 0 : 1;
}

static volatile int vm_child_running, vm_child_done;

/* The CLONE_VM child: no libc that uses its thread pointer (it shares the parent's). */
static int vm_child(void *arg)
{
	long n = 0;

	(void)arg;
	__atomic_store_n(&vm_child_running, 1, __ATOMIC_SEQ_CST);
	while (!stop) {
		if (gl_sub((int)(n & 63)) != (int)(n & 63) + 4)
			wrong = 1;
		n++;
	}
	__atomic_store_n(&vm_child_done, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int clonevm(const char *ready)
{
	size_t size = 1 << 20;
	char *stack = malloc(size);
	int status, ok = 0;
	pid_t child;

	if (!stack)
		return 2;
	gl_sub(0);
	child = clone(vm_child, stack + size, CLONE_VM | SIGCHLD, NULL);
	if (child < 0)
		return 2;
	while (!__atomic_load_n(&vm_child_running, __ATOMIC_SEQ_CST))
		sched_yield();
	if (touch(ready))
		return 2;
	hot();
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	ok = !wrong + (!wrong && WIFEXITED(status) && WEXITSTATUS(status) == 0 && vm_child_done);
	printf("clonevm ok %d\n", ok);
	return ok == 2 ? 0 : 1;
}

int main(int argc, char **argv)
{
	signal(SIGTERM, on_term);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "loop"))
		return loop(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "forks"))
		return forks(atoi(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "clonevm"))
		return clonevm(argv[2]);
	fprintf(stderr, "usage: guard_loop loop READY | forks N READY | clonevm READY\n");
	return 2;
}
