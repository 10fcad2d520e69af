// SPDX-License-Identifier: MIT
/*
 * fork_exec [K [M]]: forks; the child calls child_work() K times (default 5) and execs
 * /bin/true; the parent waits for it and then calls parent_work() M times (default 3).
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int fork_sink;

__attribute__((noinline)) void child_work(int i) { fork_sink += i; }
__attribute__((noinline)) void parent_work(int i) { fork_sink -= i; }

int main(int argc, char **argv)
{
	int k = argc > 1 ? atoi(argv[1]) : 5, m = argc > 2 ? atoi(argv[2]) : 3, status;
	pid_t pid = fork();

	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 0; i < k; i++)
			child_work(i);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	for (int i = 0; i < m; i++)
		parent_work(i);
	return 0;
}
