// SPDX-License-Identifier: MIT
/*
 * atftrace restore -p PID [--dry-run]: give a process back the function entries (and, after
 * record --call-sites, the call sites) that an atftrace session patched and did not restore (a
 * recorder killed with -9, or one that ended while a debugger held the process). Each
 * trampoline area describes its patches
 * (include/patch_log.h); user/probe/trampoline_restore.c finds, checks and writes them back.
 * One line per area (per module): "PATH: restored N of M patches". Refused with one line and
 * exit 1, before anything is written, when a live session owns an area, when a header is
 * damaged, or when the process cannot be stopped (another tracer holds it).
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_common.h"
#include "commands.h"
#include "proc.h"
#include "textfmt.h"
#include "tramp_restore.h"

#define WHO "atftrace restore"

struct restore_args {
	pid_t pid;
	bool dry_run;
};

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "the process whose patched functions and call sites to restore", 0 },
	{ "dry-run", 'n', NULL, 0, "print what would be written, write nothing", 0 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct restore_args *a = state->input;

	switch (key) {
	case 'p':
		if (!cmd_parse_pid(arg, &a->pid))
			argp_error(state, "-p %s: not a process id", arg);
		return 0;
	case 'n':
		a->dry_run = true;
		return 0;
	case ARGP_KEY_ARG:
		argp_error(state, "%s: unexpected argument", arg);
		return 0;
	case ARGP_KEY_END:
		if (!a->pid)
			argp_error(state, "-p PID is required");
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

static void print_bytes(const uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		printf("%s%02x", i ? " " : "", b[i]);
}

/* --dry-run: one line per patch that would be written. */
static void print_writes(const struct tramp_area *a)
{
	const struct patch_log *l = &a->log;

	for (uint32_t i = 0; a->patches && i < l->nrecords; i++) {
		const struct patch_record *r = &l->records[i];

		if (a->patches[i].state != TPATCH_RESTORED)
			continue;
		printf("would write ");
		print_bytes(a->patches[i].out, r->len);
		printf(" at 0x%llx (%s+0x%llx) over ", (unsigned long long)r->addr, l->path,
		       (unsigned long long)r->file_off);
		print_bytes(a->patches[i].now, r->len);
		printf("\n");
	}
}

/* "PATH: restored N of M patches (...)" */
static void print_summary(const struct tramp_area *a, bool dry_run)
{
	const struct patch_log *l = &a->log;
	const char *sep = " (";

	printf("%s: %s %u of %u %s", l->path[0] ? l->path : "(unnamed module)",
	       dry_run ? "would restore" : "restored", a->restored, l->nrecords,
	       textfmt_plural(l->nrecords, "patch", "patches"));
	if (!a->module_mapped && l->nrecords) {
		printf("%sthe module is no longer mapped where its patches were", sep);
		sep = "; ";
	}
	if (a->original) {
		printf("%s%u already original%s", sep, a->original,
		       l->state == PATCH_LOG_RESTORED ? ": its session restored them" : "");
		sep = "; ";
	}
	if (a->foreign) {
		printf("%s%u no longer ours: left as they are", sep, a->foreign);
		sep = "; ";
	}
	if (a->unmapped && a->module_mapped) {
		printf("%s%u no longer mapped", sep, a->unmapped);
		sep = "; ";
	}
	if (a->failed) {
		printf("%s%u could not be written", sep, a->failed);
		sep = "; ";
	}
	printf("%s\n", sep[0] == ';' ? ")" : "");
}

/* Refuse, before anything is written, an area that is damaged or owned by a live session. */
static int refuse(const struct restore_args *o, const struct tramp_areas *areas)
{
	for (size_t i = 0; i < areas->n; i++) {
		const struct tramp_area *a = &areas->v[i];

		if (a->err) {
			fprintf(stderr, WHO ": process %d: trampoline area at 0x%llx: %s: nothing "
				"written\n", (int)o->pid, (unsigned long long)a->lo,
				a->err < 0 ? strerror(-a->err) : patch_log_strerror(a->err));
			return 1;
		}
		if (a->owner) {
			fprintf(stderr, WHO ": process %d: its trampolines or call-site stubs (%s) belong "
				"to a running atftrace session (process %d): end that session, it restores "
				"them; nothing written\n", (int)o->pid, a->log.path, (int)a->owner);
			return 1;
		}
	}
	return 0;
}

int cmd_restore(int argc, char **argv)
{
	static const struct argp argp = { options, parse_opt, "-p PID",
		"Write back the original bytes of the function entries and call sites that an atftrace "
		"session patched in process PID and did not restore (its recorder was killed, or a debugger "
		"held the process at its end). Every thread is stopped meanwhile. Refused while the "
		"session runs, for a damaged trampoline header, and while another tracer holds the "
		"process.", NULL, NULL, NULL };
	struct restore_args a = { 0 };
	struct tramp_areas areas = { 0 };
	char *args[argc + 1];
	int err, rc = 1;

	memcpy(args, argv, sizeof(args[0]) * (size_t)argc);
	args[0] = (char *)WHO;
	args[argc] = NULL;
	if (argp_parse(&argp, argc, args, 0, NULL, &a))
		return 2;
	if (!proc_alive(a.pid)) {
		fprintf(stderr, WHO ": -p %d: no such process\n", (int)a.pid);
		return 1;
	}
	err = tramp_areas__read(a.pid, &areas);
	if (err) {
		fprintf(stderr, WHO ": process %d: cannot read its mappings: %s\n", (int)a.pid,
			strerror(-err));
		return 1;
	}
	if (!areas.n) {
		printf("process %d has no atftrace trampolines or call-site stubs: nothing to "
		       "restore\n", (int)a.pid);
		return 0;
	}
	if (refuse(&a, &areas))
		goto cleanup;
	err = tramp_areas__restore(a.pid, &areas, a.dry_run);
	if (err) {
		fprintf(stderr, WHO ": process %d: cannot %s it (%s%s): nothing written\n", (int)a.pid,
			a.dry_run ? "read" : "stop", strerror(-err),
			err == -EPERM ? "; traced by another tool, a debugger?" : "");
		goto cleanup;
	}
	rc = 0;
	for (size_t i = 0; i < areas.n; i++) {
		if (a.dry_run)
			print_writes(&areas.v[i]);
		print_summary(&areas.v[i], a.dry_run);
		if (areas.v[i].failed)
			rc = 1;
	}
cleanup:
	tramp_areas__free(&areas);
	return rc;
}
