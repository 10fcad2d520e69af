// SPDX-License-Identifier: MIT
/*
 * The debuginfod client (include/symbols.h: sym_debuginfod_*), elfutils' libdebuginfod loaded
 * on first use, as libdw itself does: the binary does not link it (nor the HTTP stack it
 * brings), and a host without it simply has no debuginfod lookups.
 *
 * A server must not stall a session nor fill the disk, so each query is bounded by our own
 * progress callback, on top of what the library does with the same variables:
 *   - DEBUGINFOD_TIMEOUT (seconds, default SYM_DEBUGINFOD_TIMEOUT): no answer, or no new byte,
 *     for that long ends the query; the servers are then skipped for the rest of the run, said
 *     in one line;
 *   - DEBUGINFOD_MAXSIZE (bytes, default SYM_DEBUGINFOD_MAXSIZE): a larger answer (announced or
 *     downloaded so far) ends the query, said in one line.
 * libdebuginfod 0.188 (Debian 12) writes a download to a temporary file in its cache and
 * removes it when a query ends early (its empty "not found" mark is removed here too); an
 * answer we reject afterwards (another build-id) is removed by sym_debuginfod_discard().
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <elfutils/debuginfod.h>
#include "symbols.h"

struct debuginfod_api {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*end)(debuginfod_client *);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
};

static const struct debuginfod_api *debuginfod_api(void)
{
	static struct debuginfod_api api;
	static bool tried;
	void *h;

	if (tried)
		return api.begin ? &api : NULL;
	tried = true;
	h = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!h)
		return NULL;
	*(void **)&api.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	*(void **)&api.end = dlsym(h, "debuginfod_end");
	*(void **)&api.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
	*(void **)&api.set_user_data = dlsym(h, "debuginfod_set_user_data");
	*(void **)&api.get_user_data = dlsym(h, "debuginfod_get_user_data");
	*(void **)&api.begin = dlsym(h, "debuginfod_begin");
	/* without the progress callback a query could not be bounded: no lookups then */
	if (!api.find_debuginfo || !api.end || !api.set_progressfn || !api.set_user_data ||
	    !api.get_user_data)
		api.begin = NULL;
	return api.begin ? &api : NULL;
}

enum query_end { QUERY_RAN = 0, QUERY_TIMEOUT, QUERY_TOO_LARGE };

struct query {
	double start, last_progress;    /* CLOCK_MONOTONIC seconds */
	long last_bytes;
	double timeout;
	long maxsize;
	enum query_end end;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * libdebuginfod calls this about once a second while it waits. Until a server has answered,
 * @a counts those calls and @b is 0; from then on @a is the bytes downloaded and @b the length
 * the server announced (-1 when it did not). Non-zero ends the query.
 */
static int on_progress(debuginfod_client *c, long a, long b)
{
	const struct debuginfod_api *api = debuginfod_api();
	struct query *q = api ? api->get_user_data(c) : NULL;
	double t = now();
	bool answered = b != 0;

	if (!q)
		return 0;
	if (answered && (b > q->maxsize || a > q->maxsize)) {
		q->end = QUERY_TOO_LARGE;
		return 1;
	}
	if (answered && a != q->last_bytes) {
		q->last_bytes = a;
		q->last_progress = t;
	}
	if (t - q->last_progress > q->timeout) {
		q->end = QUERY_TIMEOUT;
		return 1;
	}
	return 0;
}

/* A positive number from the environment variable @name, else @dflt. */
static double env_limit(const char *name, double dflt)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return dflt;
	d = strtod(v, &end);
	return *end || d <= 0 ? dflt : d;
}

static void hex(char *out, const unsigned char *id, int len)
{
	for (int i = 0; i < len && i < 64; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/*
 * The client cache's directory, found as libdebuginfod 0.188 finds it: $DEBUGINFOD_CACHE_PATH,
 * else ~/.debuginfod_client_cache when it exists, else $XDG_CACHE_HOME/debuginfod_client or
 * ~/.cache/debuginfod_client. 0, or -1 when there is none to name.
 */
static int cache_dir(char *out, size_t len)
{
	const char *v = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME");
	const char *xdg = getenv("XDG_CACHE_HOME");
	struct stat st;

	if (v && *v)
		return snprintf(out, len, "%s", v) < (int)len ? 0 : -1;
	if (!home)
		return -1;
	if (snprintf(out, len, "%s/.debuginfod_client_cache", home) < (int)len && !stat(out, &st))
		return 0;
	if (xdg && *xdg)
		return snprintf(out, len, "%s/debuginfod_client", xdg) < (int)len ? 0 : -1;
	return snprintf(out, len, "%s/.cache/debuginfod_client", home) < (int)len ? 0 : -1;
}

/*
 * A query we ended early leaves the library's empty "not found" mark for the build-id, which
 * would keep it from asking again for cache_miss_s (600 s): with a larger DEBUGINFOD_MAXSIZE or
 * a server that answers again, the next run asks.
 */
static void forget_miss(const char *idhex)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	struct stat st;

	if (cache_dir(dir, sizeof(dir)) || strlen(dir) + strlen(idhex) + 2 >= sizeof(dir))
		return;
	strcat(dir, "/");
	strcat(dir, idhex);
	snprintf(file, sizeof(file), "%s/debuginfo", dir);
	if (!lstat(file, &st) && S_ISREG(st.st_mode) && st.st_size == 0)
		unlink(file);
	rmdir(dir);     /* only when it is empty */
}

int sym_debuginfod_fetch(const unsigned char *id, int len, char **path)
{
	static bool servers_skipped;
	const char *urls = getenv("DEBUGINFOD_URLS");
	const struct debuginfod_api *api;
	struct query q = { 0 };
	debuginfod_client *c;
	char idhex[129] = "";
	int fd;

	*path = NULL;
	if (servers_skipped || !id || len <= 0 || !urls || !urls[strspn(urls, " ")] ||
	    !(api = debuginfod_api()))
		return -1;
	c = api->begin();
	if (!c)
		return -1;
	q.timeout = env_limit("DEBUGINFOD_TIMEOUT", SYM_DEBUGINFOD_TIMEOUT);
	q.maxsize = (long)env_limit("DEBUGINFOD_MAXSIZE", (double)SYM_DEBUGINFOD_MAXSIZE);
	q.start = q.last_progress = now();
	api->set_user_data(c, &q);
	api->set_progressfn(c, on_progress);
	fd = api->find_debuginfo(c, id, len, path);
	api->end(c);
	hex(idhex, id, len);
	if (q.end == QUERY_TIMEOUT) {
		servers_skipped = true;
		fprintf(stderr, "atftrace: debuginfod: %s: no answer for %.0f s (DEBUGINFOD_TIMEOUT): "
			"skipped for the rest of this run\n", urls, q.timeout);
	} else if (q.end == QUERY_TOO_LARGE) {
		fprintf(stderr, "atftrace: debuginfod: %s: the debug file of build-id %s is larger "
			"than %ld bytes (DEBUGINFOD_MAXSIZE): not downloaded\n", urls, idhex, q.maxsize);
	}
	if (q.end != QUERY_RAN)
		forget_miss(idhex);
	if (fd < 0 || q.end != QUERY_RAN) {
		if (fd >= 0)
			sym_debuginfod_discard(fd, path);
		free(*path);
		*path = NULL;
		return -1;
	}
	return fd;
}

void sym_debuginfod_discard(int fd, char **path)
{
	close(fd);
	if (*path) {
		char *slash;

		unlink(*path);
		/* the cache keeps a directory per build-id: gone when this was all it held */
		slash = strrchr(*path, '/');
		if (slash) {
			*slash = '\0';
			rmdir(*path);
		}
	}
	free(*path);
	*path = NULL;
}
