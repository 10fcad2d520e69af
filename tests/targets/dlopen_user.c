// SPDX-License-Identifier: MIT
/*
 * dlopen_user CMD_FIFO PLUGIN: prints its pid, then reads commands from CMD_FIFO, one a line:
 *   "l K"  dlopens PLUGIN, calls its plugin_work K times at once, prints "loaded K";
 *   "c K"  calls plugin_work K times more, prints "done K";
 *   "u"    dlcloses PLUGIN (unmapped: nothing else holds it), prints "closed";
 *   "b"    (after "u") maps a page where the plugin began, so that the next load puts it
 *          elsewhere, prints "blocked";
 *   "s"    starts a thread that keeps calling spin_work (in the program), prints "spinning";
 *   "h"    starts a thread that keeps calling the plugin's hot_lea, prints "hot";
 *   "H"    stops that thread, prints "hot N" (N: its calls of hot_lea);
 *   "q"    exits.
 * The calls right after dlopen show whether the plugin's probes were in place when dlopen
 * returned. The address of plugin_work stays on the stack after dlclose, as a program's stale
 * pointers do.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>

static volatile unsigned long spins;
static volatile int hot_stop;
static unsigned long hot_calls;
static int (*hot)(int);

__attribute__((noinline)) void spin_work(void) { spins++; }

static void *spinner(void *arg)
{
	(void)arg;
	for (;;)
		spin_work();
	return NULL;
}

static void *hot_loop(void *arg)
{
	(void)arg;
	for (int i = 0; !hot_stop; i++) {
		if (hot(i) != 2 * i + 1)
			abort();        /* a wrongly moved instruction */
		hot_calls++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t hot_thread;
	pthread_t spin;
	void (*work)(int) = NULL;
	void *h = NULL;
	struct link_map *lm = NULL;
	uintptr_t base = 0;                 /* where the plugin was loaded last */
	volatile uintptr_t last_work = 0;   /* on the stack, kept after dlclose (a stale pointer) */
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

			if (!h || !(work = (void (*)(int))dlsym(h, "plugin_work")) ||
			    dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
				fprintf(stderr, "dlopen_user: %s\n", dlerror());
				return 1;
			}
			base = lm->l_addr;
			last_work = (uintptr_t)work;
			int k = atoi(line + 1);

			for (int i = 0; i < k; i++)
				work(i);
			printf("loaded %d\n", k);
		} else if (line[0] == 'c' && work) {
			int k = atoi(line + 1);

			for (int i = 0; i < k; i++)
				work(i);
			printf("done %d\n", k);
		} else if (line[0] == 'b' && !h && base) {
			if (mmap((void *)base, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
				 MAP_FIXED_NOREPLACE, -1, 0) != (void *)base) {
				perror("dlopen_user: mmap");
				return 1;
			}
			printf("blocked\n");
		} else if (line[0] == 'h' && h) {
			hot_stop = 0;
			if (!(hot = (int (*)(int))dlsym(h, "hot_lea")) ||
			    pthread_create(&hot_thread, NULL, hot_loop, NULL)) {
				fprintf(stderr, "dlopen_user: cannot start the hot thread\n");
				return 1;
			}
			printf("hot\n");
		} else if (line[0] == 'H') {
			hot_stop = 1;
			pthread_join(hot_thread, NULL);
			printf("hot %lu\n", hot_calls);
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
	return last_work == 1;
}
