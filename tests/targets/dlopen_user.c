// SPDX-License-Identifier: MIT
/*
 * dlopen_user CMD_FIFO PLUGIN: prints its pid, then reads commands from CMD_FIFO, one a line:
 * "l K" dlopens PLUGIN, calls its plugin_work K times at once and prints "loaded K"; "c K" calls
 * plugin_work K times more and prints "done K"; "u" dlcloses PLUGIN (unmapped: nothing else
 * holds it) and prints "closed"; "s" starts a thread that keeps calling spin_work (in the program)
 * until the end and prints "spinning"; "q" exits. The calls right after dlopen show whether the
 * plugin's probes were in place when dlopen returned.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long spins;

__attribute__((noinline)) void spin_work(void) { spins++; }

static void *spinner(void *arg)
{
	(void)arg;
	for (;;)
		spin_work();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t spin;
	void (*work)(int) = NULL;
	void *h = NULL;
	char line[64];
	FILE *in;

	if (argc != 3) {
		fprintf(stderr, "usage: dlopen_user CMD_FIFO PLUGIN\n");
		return 2;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	in = fopen(argv[1], "r");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(line, sizeof(line), in) && line[0] != 'q') {
		if (line[0] == 'l') {
			h = dlopen(argv[2], RTLD_NOW);

			if (!h || !(work = (void (*)(int))dlsym(h, "plugin_work"))) {
				fprintf(stderr, "dlopen_user: %s\n", dlerror());
				return 1;
			}
			int k = atoi(line + 1);

			for (int i = 0; i < k; i++)
				work(i);
			printf("loaded %d\n", k);
		} else if (line[0] == 'c' && work) {
			int k = atoi(line + 1);

			for (int i = 0; i < k; i++)
				work(i);
			printf("done %d\n", k);
		} else if (line[0] == 's') {
			if (pthread_create(&spin, NULL, spinner, NULL)) {
				fprintf(stderr, "dlopen_user: cannot start a thread\n");
				return 1;
			}
			printf("spinning\n");
		} else if (line[0] == 'u' && h) {
			if (dlclose(h)) {
				fprintf(stderr, "dlopen_user: %s\n", dlerror());
				return 1;
			}
			h = NULL;
			work = NULL;
			printf("closed\n");
		}
		fflush(stdout);
	}
	fclose(in);
	return 0;
}
