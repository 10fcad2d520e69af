// SPDX-License-Identifier: MIT
/*
 * atftrace export: convert one recorded process to another trace format.
 *
 *   atftrace export SESSION -F FORMAT -o OUT|- [--force] [--pid N] [--thread N] [--from T] [--to T]
 *                   [format options]
 *   atftrace export --list
 *
 * The conversion itself is export_session() (formats/export.c) driving one exporter's ops
 * table; this file only turns the command line into struct export_options: which processes
 * (cmd_select.c: all of them for formats that hold several, else the one of --pid), which
 * thread, which absolute time range, and the format's own options.
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
#include "cmd_select.h"
#include "format.h"
#include "timefmt.h"

#define CMD "atftrace export"

enum export_key {
	KEY_CHUNK_SIZE = 0x100,
	KEY_JSON_MODE,
	KEY_UNIT_SIZE,
	KEY_MINOR_UNIT_SIZE,
	KEY_COMPRESS,
	KEY_LIST,
	KEY_WEIGHT,
	KEY_FORCE,
};

struct export_args {
	const char *session;
	const char *format;
	const char *out;
	bool list;
	struct cmd_select_args sel;     /* --pid, --thread, --from, --to */
	/* Format-specific options, with the option text for error messages. */
	const char *chunk_size_arg, *json_mode_arg, *unit_size_arg, *minor_unit_size_arg, *compress_arg;
	const char *weight_arg;
	struct export_options opts;
};

static const struct argp_option export_options_table[] = {
	{ "format", 'F', "FORMAT", 0, "Output format (see --list)", 0 },
	{ "output", 'o', "OUT", 0, "Output file, - for standard output (a new directory for zts); an "
	  "existing file, link or directory is refused unless --force", 0 },
	{ "force", KEY_FORCE, NULL, 0, "Replace an existing -o file (it takes the session's mode); a "
	  "link is followed only when it is yours and leads to your own file (or a device)", 0 },
	{ "list", KEY_LIST, NULL, 0, "List the linked formats and exit", 0 },
	{ NULL, 0, NULL, 0, "Format-specific options:", 1 },
	{ "chunk-size", KEY_CHUNK_SIZE, "B", 0, "wtf, wtf-json: bytes per event-data chunk (K/M suffix allowed)", 1 },
	{ "json-mode", KEY_JSON_MODE, "MODE", 0, "wtf-json: complete|partial", 1 },
	{ "unit-size", KEY_UNIT_SIZE, "B", 0, "rtc: Unit size in bytes, a power of two", 1 },
	{ "minor-unit-size", KEY_MINOR_UNIT_SIZE, "B", 0, "rtc: minor unit size in bytes, a power of two", 1 },
	{ "compress", KEY_COMPRESS, "ALG", 0, "zts: lz4|zlib|none", 1 },
	{ "weight", KEY_WEIGHT, "W", 0, "folded: each stack's weight: self (time, default), total (time) or calls", 1 },
	{ 0 }
};

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

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->sel;
		break;
	case 'F':
		a->format = arg;
		break;
	case 'o':
		a->out = arg;
		break;
	case KEY_LIST:
		a->list = true;
		break;
	case KEY_FORCE:
		a->opts.force = true;
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
	case KEY_WEIGHT:
		a->weight_arg = arg;
		if (strcmp(arg, "self") && strcmp(arg, "total") && strcmp(arg, "calls"))
			argp_error(state, "--weight %s: expected self, total or calls", arg);
		a->opts.weight = arg;
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
		if (!strcmp(a->out, "-") && export_find(a->format)->writes_directory)
			argp_error(state, "-o -: -F %s writes a directory, not one file", a->format);
		check_format_option(state, a->format, a->chunk_size_arg, "--chunk-size", "wtf|wtf-json");
		check_format_option(state, a->format, a->json_mode_arg, "--json-mode", "wtf-json");
		check_format_option(state, a->format, a->unit_size_arg, "--unit-size", "rtc");
		check_format_option(state, a->format, a->minor_unit_size_arg, "--minor-unit-size", "rtc");
		check_format_option(state, a->format, a->compress_arg, "--compress", "zts");
		check_format_option(state, a->format, a->weight_arg, "--weight", "folded");
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
 * Is the output @out the session directory @session, or does it lie inside it (a process
 * directory, a thread file, the manifest)? Compared by device and inode along the output's
 * physical parent chain (".." of each directory), so no spelling of the path (links, "..", bind
 * mounts of the same inode) gets past it.
 */
static bool output_in_session(const char *out, const char *session)
{
	struct stat in, st, up;
	int fd = open_deepest_dir(out);
	bool inside = false;

	if (fd < 0 || stat(session, &in) < 0) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!inside && fstat(fd, &st) == 0) {
		int parent;

		inside = st.st_dev == in.st_dev && st.st_ino == in.st_ino;
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
		"Convert a recorded session to another trace format.\v"
		"SESSION is a session directory or a pid_* directory. A session of several processes "
		"(-a, --follow-fork) exports as one trace to the formats that hold processes (chrome, "
		"perfetto, speedscope, folded); the others need --pid. T is a time since the session "
		"start: 1500 (ns), 1500ns, 20us, 1.5ms, 2s, 1m. Formats: see --list.";
	static const struct argp_child children[] = { { &cmd_select_argp, 0, NULL, 0 }, { 0 } };
	struct argp argp = { export_options_table, export_parse_opt, "SESSION", doc, children, NULL, NULL };
	struct export_args a = { 0 };
	struct cmd_selection sel = { 0 };
	const struct export_ops *ops;
	char **args = NULL, reason[512] = "", why_one[64];
	struct stat st;
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
	snprintf(why_one, sizeof(why_one), "-F %s holds one process", ops->name);
	if (cmd_select("export", a.session, &a.sel, !ops->processes, why_one, &sel))
		goto cleanup;

	if (strcmp(a.out, "-") && output_in_session(a.out, a.session)) {
		fprintf(stderr, CMD ": -o %s: lies inside the session being read (%s); write it elsewhere\n",
			a.out, a.session);
		goto cleanup;
	}
	/* a directory format (zts) creates its -o: an existing one only with --force */
	if (ops->writes_directory && !a.opts.force && !lstat(a.out, &st)) {
		fprintf(stderr, CMD ": -o %s: exists; add --force to write into it\n", a.out);
		goto cleanup;
	}
	inherit_session_mode(sel.n ? sel.s[0]->dir : a.session);
	a.opts.out_path = a.out;
	a.opts.thread_id = sel.thread_id;
	a.opts.from_ns = sel.from_ns;
	a.opts.to_ns = sel.to_ns;
	a.opts.error = reason;
	a.opts.error_len = sizeof(reason);
	err = export_sessions(sel.s, sel.n, ops, &a.opts);
	if (err) {
		if (reason[0])
			fprintf(stderr, CMD ": %s\n", reason);
		else
			fprintf(stderr, CMD ": %s: %s\n", a.out, atf_strerror(err));
		goto cleanup;
	}
	rc = 0;
cleanup:
	cmd_selection_free(&sel);
	free(args);
	return rc;
}
