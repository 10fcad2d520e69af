// SPDX-License-Identifier: MIT
/*
 * atftrace export: convert one recorded process to another trace format.
 *
 *   atftrace export SESSION -F FORMAT -o OUT [--pid N] [--thread N] [--from T] [--to T]
 *                   [format options]
 *   atftrace export --list
 *
 * The conversion itself is export_session() (formats/export.c) driving one exporter's ops
 * table; this file only turns the command line into struct export_options: which process
 * directory, which thread, and which absolute time range.
 */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf.h"
#include "atf_file.h"
#include "commands.h"
#include "format.h"

#define CMD "atftrace export"

enum export_key {
	KEY_THREAD = 0x100,
	KEY_FROM,
	KEY_TO,
	KEY_CHUNK_SIZE,
	KEY_JSON_MODE,
	KEY_UNIT_SIZE,
	KEY_MINOR_UNIT_SIZE,
	KEY_COMPRESS,
	KEY_PID,
	KEY_LIST,
};

struct export_args {
	const char *session;
	const char *format;
	const char *out;
	bool list;
	int64_t pid;                    /* -1: not given */
	int64_t thread;                 /* -1: all threads */
	bool has_from, has_to;
	uint64_t from_rel, to_rel;      /* ns since session start */
	/* Format-specific options, with the option text for error messages. */
	const char *chunk_size_arg, *json_mode_arg, *unit_size_arg, *minor_unit_size_arg, *compress_arg;
	struct export_options opts;
};

static const struct argp_option export_options_table[] = {
	{ "format", 'F', "FORMAT", 0, "Output format (see --list)", 0 },
	{ "output", 'o', "OUT", 0, "Output file (a directory for zts)", 0 },
	{ "list", KEY_LIST, NULL, 0, "List the linked formats and exit", 0 },
	{ "pid", KEY_PID, "N", 0, "Process to export when SESSION holds several pid_* directories", 0 },
	{ "thread", KEY_THREAD, "N", 0, "Export only thread N (thread_<N> directory id, or OS tid)", 0 },
	{ "from", KEY_FROM, "T", 0, "Start of the range: time since session start, ns/us/ms/s suffix (default ns)", 0 },
	{ "to", KEY_TO, "T", 0, "End of the range (inclusive), same syntax as --from", 0 },
	{ NULL, 0, NULL, 0, "Format-specific options:", 1 },
	{ "chunk-size", KEY_CHUNK_SIZE, "B", 0, "wtf, wtf-json: bytes per event-data chunk (K/M suffix allowed)", 1 },
	{ "json-mode", KEY_JSON_MODE, "MODE", 0, "wtf-json: complete|partial", 1 },
	{ "unit-size", KEY_UNIT_SIZE, "B", 0, "rtc: Unit size in bytes, a power of two", 1 },
	{ "minor-unit-size", KEY_MINOR_UNIT_SIZE, "B", 0, "rtc: minor unit size in bytes, a power of two", 1 },
	{ "compress", KEY_COMPRESS, "ALG", 0, "zts: lz4|zlib|none", 1 },
	{ 0 }
};

/**
 * parse_time_offset - parse "1500", "1500ns", "2.5us", "10ms", "1s" into nanoseconds
 * Fraction digits below one nanosecond are dropped. Returns 0, or -EINVAL / -ERANGE.
 */
static int parse_time_offset(const char *s, uint64_t *out)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 }, { "", 1 },
	};
	uint64_t whole = 0, frac = 0, frac_scale = 1, mult = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (frac_scale < 1000000000) {  /* more than 9 digits is below 1 ns */
				frac = frac * 10 + (uint64_t)(*p - '0');
				frac_scale *= 10;
			}
		}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p, units[i].suffix)) {
			mult = units[i].mult;
			break;
		}
	if (!mult)
		return -EINVAL;
	if (whole > UINT64_MAX / mult)
		return -ERANGE;
	/* frac < frac_scale <= 1e9 and mult <= 1e9, so frac * mult fits in 64 bits. */
	*out = whole * mult + frac * mult / frac_scale;
	if (*out < whole * mult)
		return -ERANGE;
	return 0;
}

/** parse_size - bytes as a decimal u32 > 0 with an optional K or M (binary) suffix. */
static int parse_size(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end)
		return -EINVAL;
	if (v == 0 || v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

static int parse_int64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Each format-specific option belongs to exactly one format. */
/* @owners: the formats an option applies to, separated by '|'. */
static void check_format_option(struct argp_state *state, const char *format, const char *arg,
				const char *option, const char *owners)
{
	size_t n = strlen(format);

	for (const char *o = owners; arg && *o; o += strcspn(o, "|"), o += *o == '|')
		if (!strncmp(o, format, n) && (o[n] == '|' || o[n] == '\0'))
			return;
	if (arg) {
		char list[64];
		size_t k = 0;

		for (const char *o = owners; *o && k + 8 < sizeof(list); o++)
			k += (size_t)(*o == '|' ? snprintf(list + k, sizeof(list) - k, " or -F ")
						: snprintf(list + k, sizeof(list) - k, "%c", *o));
		argp_error(state, "%s: only applies to -F %s, not -F %s", option, list, format);
	}
}

static error_t export_parse_opt(int key, char *arg, struct argp_state *state)
{
	struct export_args *a = state->input;
	int err;

	switch (key) {
	case 'F':
		a->format = arg;
		break;
	case 'o':
		a->out = arg;
		break;
	case KEY_LIST:
		a->list = true;
		break;
	case KEY_PID:
		if (parse_int64(arg, &a->pid) || a->pid > UINT32_MAX)
			argp_error(state, "--pid %s: not a process id", arg);
		break;
	case KEY_THREAD:
		if (parse_int64(arg, &a->thread) || a->thread > UINT32_MAX)
			argp_error(state, "--thread %s: not a thread number", arg);
		break;
	case KEY_FROM:
	case KEY_TO:
		err = parse_time_offset(arg, key == KEY_FROM ? &a->from_rel : &a->to_rel);
		if (err)
			argp_error(state, "--%s %s: %s", key == KEY_FROM ? "from" : "to", arg,
				   err == -ERANGE ? "out of range" :
				   "expected a time such as 1500, 20us, 1.5ms or 2s");
		if (key == KEY_FROM)
			a->has_from = true;
		else
			a->has_to = true;
		break;
	case KEY_CHUNK_SIZE:
		a->chunk_size_arg = arg;
		if (parse_size(arg, &a->opts.chunk_size))
			argp_error(state, "--chunk-size %s: expected a positive byte count", arg);
		break;
	case KEY_JSON_MODE:
		a->json_mode_arg = arg;
		if (strcmp(arg, "complete") && strcmp(arg, "partial"))
			argp_error(state, "--json-mode %s: expected complete or partial", arg);
		a->opts.json_partial = !strcmp(arg, "partial");
		break;
	case KEY_UNIT_SIZE:
		a->unit_size_arg = arg;
		if (parse_size(arg, &a->opts.unit_size))
			argp_error(state, "--unit-size %s: expected a positive byte count", arg);
		break;
	case KEY_MINOR_UNIT_SIZE:
		a->minor_unit_size_arg = arg;
		if (parse_size(arg, &a->opts.minor_unit_size))
			argp_error(state, "--minor-unit-size %s: expected a positive byte count", arg);
		break;
	case KEY_COMPRESS:
		a->compress_arg = arg;
		if (strcmp(arg, "lz4") && strcmp(arg, "zlib") && strcmp(arg, "none"))
			argp_error(state, "--compress %s: expected lz4, zlib or none", arg);
		a->opts.compress = arg;
		break;
	case ARGP_KEY_ARG:
		if (a->session)
			argp_error(state, "%s: only one SESSION may be given", arg);
		a->session = arg;
		break;
	case ARGP_KEY_END:
		if (a->list)
			break;
		if (!a->session)
			argp_error(state, "SESSION: missing (a session directory or a pid_* directory)");
		if (!a->format)
			argp_error(state, "-F FORMAT: missing (see --list)");
		if (!export_find(a->format))
			argp_error(state, "-F %s: unknown format (see --list)", a->format);
		if (!a->out)
			argp_error(state, "-o OUT: missing");
		if (a->has_from && a->has_to && a->to_rel < a->from_rel)
			argp_error(state, "--to: earlier than --from");
		check_format_option(state, a->format, a->chunk_size_arg, "--chunk-size", "wtf|wtf-json");
		check_format_option(state, a->format, a->json_mode_arg, "--json-mode", "wtf-json");
		check_format_option(state, a->format, a->unit_size_arg, "--unit-size", "rtc");
		check_format_option(state, a->format, a->minor_unit_size_arg, "--minor-unit-size", "rtc");
		check_format_option(state, a->format, a->compress_arg, "--compress", "zts");
		/* RTC geometry (NOTES.md §4): both sizes powers of two, the minor unit above 1034. */
		if (a->unit_size_arg && (a->opts.unit_size & (a->opts.unit_size - 1)))
			argp_error(state, "--unit-size %s: must be a power of two", a->unit_size_arg);
		if (a->minor_unit_size_arg && ((a->opts.minor_unit_size & (a->opts.minor_unit_size - 1)) ||
					       a->opts.minor_unit_size <= 1034))
			argp_error(state, "--minor-unit-size %s: must be a power of two above 1034",
				   a->minor_unit_size_arg);
		if (a->opts.unit_size && a->opts.minor_unit_size && a->opts.minor_unit_size > a->opts.unit_size)
			argp_error(state, "--minor-unit-size: larger than --unit-size");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void list_formats(void)
{
	const struct export_ops *const *f = export_format_list();

	for (; *f; f++)
		printf("  %-10s %s\n", (*f)->name, (*f)->description ? (*f)->description : "");
}

/* Number after "pid_" in the last component of @dir, or -1. */
static int64_t dir_pid(const char *dir)
{
	const char *base = strrchr(dir, '/');
	int64_t pid;

	base = base ? base + 1 : dir;
	if (strncmp(base, "pid_", 4) || parse_int64(base + 4, &pid))
		return -1;
	return pid;
}

/**
 * pick_process_dir - the process directory of @a->session to export
 * Returns a malloc'd path, or NULL after printing why.
 */
static char *pick_process_dir(const struct export_args *a)
{
	char **dirs = NULL, *picked = NULL;
	int n = atf_session_resolve(a->session, &dirs);

	if (n < 0) {
		fprintf(stderr, CMD ": %s: %s\n", a->session, atf_strerror(n));
		return NULL;
	}
	if (a->pid < 0 && n == 1) {
		picked = strdup(dirs[0]);
		if (!picked)
			fprintf(stderr, CMD ": %s: %s\n", a->session, strerror(ENOMEM));
	} else if (a->pid < 0) {
		fprintf(stderr, CMD ": %s: holds %d processes; choose one with --pid:", a->session, n);
		for (int i = 0; i < n; i++)
			fprintf(stderr, " %" PRId64, dir_pid(dirs[i]));
		fputc('\n', stderr);
	} else {
		for (int i = 0; i < n && !picked; i++)
			if (dir_pid(dirs[i]) == a->pid || (n == 1 && dir_pid(dirs[i]) < 0))
				picked = strdup(dirs[i]);
		if (!picked)
			fprintf(stderr, CMD ": --pid %" PRId64 ": no pid_%" PRId64 " directory in %s\n",
				a->pid, a->pid, a->session);
	}
	atf_session_resolve_free(dirs, n);
	return picked;
}

/* Session start: the manifest's time_start_ns, or the earliest first event when it is 0. */
static uint64_t session_start_ns(const struct atf_session *s)
{
	uint64_t start = s->manifest ? s->manifest->time_start_ns : 0;
	struct atf_index_event ev;

	if (start)
		return start;
	start = UINT64_MAX;
	for (size_t i = 0; i < s->nthreads; i++) {
		if (!s->threads[i].index.count)
			continue;
		atf_index_get(&s->threads[i].index, 0, &ev);
		if (ev.timestamp_ns < start)
			start = ev.timestamp_ns;
	}
	return start == UINT64_MAX ? 0 : start;
}

static uint64_t add_clamped(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* --thread N: a thread_<N> directory id first, else an OS thread id. -1 when absent. */
static int64_t find_thread(const struct atf_session *s, int64_t n)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if ((int64_t)s->threads[i].id == n)
			return s->threads[i].id;
	for (size_t i = 0; i < s->nthreads; i++)
		if ((int64_t)s->threads[i].tid == n)
			return s->threads[i].id;
	return -1;
}

static void print_open_error(const char *dir, int err, const struct atf_diag *diag)
{
	if (diag->file[0])
		fprintf(stderr, CMD ": %s: %s (%s at offset %" PRIu64 "%s%s)\n", dir, atf_strerror(err),
			diag->file, diag->offset, diag->msg[0] ? ": " : "", diag->msg);
	else
		fprintf(stderr, CMD ": %s: %s\n", dir, atf_strerror(err));
}

/* The deepest existing directory on @path's way: @path itself, or the parent it will be created in. */
static int open_deepest_dir(const char *path)
{
	char *buf = strdup(path);
	int fd = -1;

	while (buf && fd < 0) {
		fd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 || !strcmp(buf, "/") || !strcmp(buf, "."))
			break;
		char *up = dirname(buf);     /* in place, or a static "." or "/" */

		memmove(buf, up, strlen(up) + 1);
	}
	free(buf);
	return fd;
}

/*
 * Is the output @out, or does it lie inside, the session @session or its process directory @dir?
 * Compared by device and inode along the output's physical parent chain (".." of each directory),
 * so no spelling of the path (links, "..", bind mounts of the same inode) gets past it.
 */
static bool output_in_session(const char *out, const char *session, const char *dir)
{
	struct stat in[2], st, up;
	int fd = open_deepest_dir(out);
	bool inside = false;

	if (fd < 0 || stat(session, &in[0]) < 0 || stat(dir, &in[1]) < 0) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!inside && fstat(fd, &st) == 0) {
		int parent;

		for (int i = 0; i < 2; i++)
			inside |= st.st_dev == in[i].st_dev && st.st_ino == in[i].st_ino;
		parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0 || fstat(parent, &up) < 0 || (up.st_dev == st.st_dev && up.st_ino == st.st_ino)) {
			if (parent >= 0)
				close(parent);
			break;          /* the root */
		}
		close(fd);
		fd = parent;
	}
	close(fd);
	return inside;
}

/* Exports are as private as the session they come from: its manifest's mode (atf_file.h). */
static void inherit_session_mode(const char *dir)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	atf_file_mode_set(stat(path, &st) == 0 ? st.st_mode & 0777 : ATF_FILE_MODE_DEFAULT);
}

/**
 * cmd_export - `atftrace export`: see the comment at the top of this file.
 * Returns the process exit status: 0 on success, 1 on failure, 2 on a usage error.
 */
int cmd_export(int argc, char **argv)
{
	static const char doc[] =
		"Convert a recorded process to another trace format.\v"
		"SESSION is a session directory with one pid_* directory (or several, with --pid), "
		"or a pid_* directory itself. T is a time since the session start: 1500, 1500ns, "
		"20us, 1.5ms, 2s. Formats: see --list.";
	struct argp argp = { export_options_table, export_parse_opt, "SESSION", doc, NULL, NULL, NULL };
	struct export_args a = { .pid = -1, .thread = -1 };
	const struct export_ops *ops;
	struct atf_session *s = NULL;
	struct atf_diag diag = { 0 };
	char **args = NULL, *dir = NULL, reason[512] = "";
	uint64_t start;
	int err, rc = 1;

	/* argp names the program after argv[0]: make usage and errors say "atftrace export". */
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args) {
		fprintf(stderr, CMD ": %s\n", strerror(ENOMEM));
		return 1;
	}
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	args[0] = (char *)CMD;
	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, args, ARGP_IN_ORDER, NULL, &a)) {
		rc = 2;
		goto cleanup;
	}
	if (a.list) {
		list_formats();
		rc = 0;
		goto cleanup;
	}
	ops = export_find(a.format);
	dir = pick_process_dir(&a);
	if (!dir)
		goto cleanup;
	if (output_in_session(a.out, a.session, dir)) {
		fprintf(stderr, CMD ": -o %s: lies inside the session being read (%s); write it elsewhere\n",
			a.out, a.session);
		goto cleanup;
	}
	inherit_session_mode(dir);
	err = atf_session__open(&s, dir, 0, &diag);
	if (err) {
		print_open_error(dir, err, &diag);
		goto cleanup;
	}

	a.opts.out_path = a.out;
	a.opts.thread_id = -1;
	if (a.thread >= 0) {
		a.opts.thread_id = find_thread(s, a.thread);
		if (a.opts.thread_id < 0) {
			fprintf(stderr, CMD ": --thread %" PRId64 ": no such thread in %s\n", a.thread, dir);
			goto cleanup;
		}
	}
	start = session_start_ns(s);
	a.opts.from_ns = a.has_from ? add_clamped(start, a.from_rel) : 0;
	a.opts.to_ns = a.has_to ? add_clamped(start, a.to_rel) : UINT64_MAX;

	a.opts.error = reason;
	a.opts.error_len = sizeof(reason);
	err = export_session(s, ops, &a.opts);
	if (err) {
		if (reason[0])
			fprintf(stderr, CMD ": %s\n", reason);
		else
			fprintf(stderr, CMD ": %s: %s\n", a.out, atf_strerror(err));
		goto cleanup;
	}
	rc = 0;
cleanup:
	if (s)
		atf_session__close(s);
	free(dir);
	free(args);
	return rc;
}
