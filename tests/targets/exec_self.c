// SPDX-License-Identifier: MIT
/*
 * exec_self CMD ACK: reads commands from the fifo CMD, one a line, and answers "ok" on ACK:
 *   work N   call self_work N times
 *   exec M   exec this program again as "exec_self again M", which calls self_work M times
 *            and exits (no answer: the test waits for the recorder to end)
 *   fork N   fork a child that calls self_work N times and exits; answered once it has
 *   quit 0   exit
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int self_sink;

__attribute__((noinline)) void self_work(int i) { self_sink += i; }

int main(int argc, char **argv)
{
	char line[64], op[16];
	long n;
	FILE *cmd, *ack;

	if (argc == 3 && !strcmp(argv[1], "again")) {
		for (int i = 0; i < atoi(argv[2]); i++)
			self_work(i);
		return 0;
	}
	if (argc != 3 || !(cmd = fopen(argv[1], "r")) || !(ack = fopen(argv[2], "w")))
		return 2;
	while (fgets(line, sizeof(line), cmd)) {
		if (sscanf(line, "%15s %ld", op, &n) != 2)
			return 2;
		if (!strcmp(op, "work")) {
			for (long i = 0; i < n; i++)
				self_work((int)i);
		} else if (!strcmp(op, "fork")) {
			pid_t pid = fork();
			int status;

			if (pid == 0) {
				for (long i = 0; i < n; i++)
					self_work((int)i);
				_exit(0);
			}
			if (pid < 0 || waitpid(pid, &status, 0) != pid || status)
				return 1;
		} else if (!strcmp(op, "quit")) {
			return 0;
		} else if (!strcmp(op, "exec")) {
			snprintf(line, sizeof(line), "%ld", n);
			fflush(ack);
			execl(argv[0], argv[0], "again", line, (char *)NULL);
			return 127;
		}
		fprintf(ack, "ok\n");
		fflush(ack);
	}
	return 0;
}
