// SPDX-License-Identifier: MIT
/*
 * pod_app DIR: the app of the container tests, installed as /usr/local/bin/app in a test image.
 * It makes the FIFOs DIR/cmd and DIR/out, writes "ready" on stdout, then reads commands from
 * DIR/cmd, one per line: "K" runs handle_request() K times and answers "done K" on DIR/out; "q"
 * (or the end of DIR/cmd) exits. Each handle_request() allocates and frees one buffer, and
 * nothing else allocates after "ready" (raw read/write, no stdio), so a tracer attached in
 * between sees exactly K calls of handle_request and K of malloc per command.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

volatile int request_sink;

__attribute__((noinline)) void handle_request(int i)
{
	char *buf = malloc(64 + (size_t)i % 16);

	if (buf) {
		buf[0] = (char)i;
		request_sink += buf[0];
	}
	free(buf);
}

static void say(int fd, const char *word, int k)
{
	char line[32], digits[12];
	size_t n = 0, d = 0;
	unsigned u = (unsigned)k;

	do
		digits[d++] = (char)('0' + u % 10);
	while ((u /= 10) && d < sizeof(digits));
	while (*word)
		line[n++] = *word++;
	if (k >= 0) {
		line[n++] = ' ';
		while (d)
			line[n++] = digits[--d];
	}
	line[n++] = '\n';
	if (write(fd, line, n) < 0)
		exit(1);
}

int main(int argc, char **argv)
{
	char cmd[512], out[512], line[64];
	size_t len = 0;
	int in, ans;

	if (argc < 2) {
		fprintf(stderr, "usage: pod_app DIR\n");
		return 2;
	}
	snprintf(cmd, sizeof(cmd), "%s/cmd", argv[1]);
	snprintf(out, sizeof(out), "%s/out", argv[1]);
	if ((mkfifo(cmd, 0600) && errno != EEXIST) || (mkfifo(out, 0600) && errno != EEXIST)) {
		perror(argv[1]);
		return 1;
	}
	say(1, "ready", -1);
	in = open(cmd, O_RDONLY);
	ans = in < 0 ? -1 : open(out, O_WRONLY);
	if (ans < 0) {
		perror(argv[1]);
		return 1;
	}
	for (;;) {
		char c;
		ssize_t r = read(in, &c, 1);

		if (r <= 0)
			break;
		if (c != '\n') {
			if (len < sizeof(line) - 1)
				line[len++] = c;
			continue;
		}
		line[len] = '\0';
		len = 0;
		if (line[0] == 'q')
			break;
		int k = atoi(line);
		for (int i = 0; i < k; i++)
			handle_request(i);
		say(ans, "done", k);
	}
	return 0;
}
