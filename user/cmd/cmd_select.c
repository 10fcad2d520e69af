// SPDX-License-Identifier: MIT
/* Process, thread and time-range selection shared by the reading subcommands (cmd_select.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calltree.h"
#include "cmd_common.h"
#include "cmd_select.h"
#include "timefmt.h"

enum { KEY_PID = 0x300, KEY_THREAD, KEY_FROM, KEY_TO, KEY_DEMANGLE, KEY_NO_DEMANGLE };

static const struct argp_option select_options[] = {
	{ "pid", KEY_PID, "N", 0, "Only process N of a session of several (default: all, where the output can hold them)", 0 },
	{ "thread", KEY_THREAD, "N", 0, "Only thread N: its thread_<N> directory id, or its OS tid (the tid alone in a session of several processes)", 0 },
	{ "from", KEY_FROM, "T", 0, "Start of the range, since the session start: 1500 (ns), 20us, 1.5ms, 2s, 1m", 0 },
	{ "to", KEY_TO, "T", 0, "End of the range (inclusive), same syntax as --from", 0 },
	{ "demangle", KEY_DEMANGLE, "full|simple|no", 0,
	  "C++ names: full (the default), simple (no parameters or template arguments) or no (as in the ELF file)", 0 },
	{ "no-demangle", KEY_NO_DEMANGLE, NULL, 0, "C++ names as in the ELF file (--demangle=no)", 0 },
	{ 0 }
};

static int parse_id(const char *s, int64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > UINT32_MAX)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

static error_t select_parse(int key, char *arg, struct argp_state *state)
{
	struct cmd_select_args *a = state->input;
	int err;

	switch (key) {
	case ARGP_KEY_INIT:
		*a = (struct cmd_select_args){ .pid = -1, .thread = -1 };
		return 0;
	case KEY_PID:
		if (parse_id(arg, &a->pid))
			argp_error(state, "--pid %s: not a process id", arg);
		return 0;
	case KEY_THREAD:
		if (parse_id(arg, &a->thread))
			argp_error(state, "--thread %s: not a thread number", arg);
		return 0;
	case KEY_FROM:
	case KEY_TO:
		err = timefmt_parse(arg, TIMEFMT_NS, key == KEY_FROM ? &a->from_rel : &a->to_rel);
		if (err)
			argp_error(state, "--%s %s: %s", key == KEY_FROM ? "from" : "to", arg, timefmt_strerror(err));
		*(key == KEY_FROM ? &a->has_from : &a->has_to) = true;
		return 0;
	case KEY_DEMANGLE:
		if (!strcmp(arg, "full"))
			atf_set_name_style(ATF_NAMES_DEMANGLED);
		else if (!strcmp(arg, "simple"))
			atf_set_name_style(ATF_NAMES_SIMPLE);
		else if (!strcmp(arg, "no"))
			atf_set_name_style(ATF_NAMES_RAW);
		else
			argp_error(state, "--demangle %s: expected full, simple or no", arg);
		return 0;
	case KEY_NO_DEMANGLE:
		atf_set_name_style(ATF_NAMES_RAW);
		return 0;
	case ARGP_KEY_END:
		if (a->has_from && a->has_to && a->to_rel < a->from_rel)
			argp_error(state, "--to: earlier than --from");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

const struct argp cmd_select_argp = { .options = select_options, .parser = select_parse };

int64_t cmd_pid_of_dir(const char *dir)
{
	const char *base = strrchr(dir, '/');
	int64_t pid;

	base = base ? base + 1 : dir;
	if (strncmp(base, "pid_", 4) || parse_id(base + 4, &pid))
		return -1;
	return pid;
}

/* Start of a process's session: the manifest's when it precedes every event, else the earliest event. */
static uint64_t process_start_ns(const struct atf_session *s)
{
	uint64_t start = UINT64_MAX;
	struct atf_index_event ev;

	for (size_t i = 0; i < s->nthreads; i++) {
		if (!s->threads[i].index.count)
			continue;
		atf_index_get(&s->threads[i].index, 0, &ev);
		if (ev.timestamp_ns < start)
			start = ev.timestamp_ns;
	}
	if (s->manifest->time_start_ns && s->manifest->time_start_ns <= start)
		return s->manifest->time_start_ns;
	return start == UINT64_MAX ? 0 : start;
}

/* End of a process's session: its last event, or the manifest's end when later. */
static uint64_t process_end_ns(const struct atf_session *s)
{
	uint64_t end = s->manifest->time_end_ns;
	struct atf_index_event ev;

	for (size_t i = 0; i < s->nthreads; i++) {
		if (!s->threads[i].index.count)
			continue;
		atf_index_get(&s->threads[i].index, s->threads[i].index.count - 1, &ev);
		if (ev.timestamp_ns > end)
			end = ev.timestamp_ns;
	}
	return end;
}

/*
 * A --from past the end of every selected process selects nothing, ever: one line saying so and
 * the session's length, and a failure (exit 1), rather than an empty result that looks like one.
 */
static int check_from(const char *cmd, const char *session, const struct cmd_select_args *a,
		      const struct cmd_selection *sel)
{
	char from[TIMEFMT_LEN], len[TIMEFMT_LEN];
	uint64_t end = 0;

	for (size_t i = 0; i < sel->n; i++)
		if (process_end_ns(sel->s[i]) > end)
			end = process_end_ns(sel->s[i]);
	if (!a->has_from || sel->from_ns <= end)
		return 0;
	fprintf(stderr, "atftrace %s: --from %s is past the end of %s: it lasts %s\n", cmd,
		timefmt_format(from, sizeof(from), a->from_rel), session,
		timefmt_format(len, sizeof(len), end > sel->start_ns ? end - sel->start_ns : 0));
	return -1;
}

static uint64_t add_clamped(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* --thread N in @s: a thread_<N> directory id first, else an OS thread id; -1 when absent. */
static int64_t find_thread(const struct atf_session *s, int64_t n, bool by_tid_only)
{
	for (size_t i = 0; !by_tid_only && i < s->nthreads; i++)
		if ((int64_t)s->threads[i].id == n)
			return s->threads[i].id;
	for (size_t i = 0; i < s->nthreads; i++)
		if ((int64_t)s->threads[i].tid == n)
			return s->threads[i].id;
	return -1;
}

/* Keeps only the process holding OS thread @tid (with several processes, --thread is a tid). */
static int select_thread(const char *cmd, const char *session, const struct cmd_select_args *a,
			 struct cmd_selection *sel)
{
	for (size_t i = 0; i < sel->n; i++) {
		int64_t id = find_thread(sel->s[i], a->thread, sel->n > 1);

		if (id < 0)
			continue;
		for (size_t j = 0; j < sel->n; j++)
			if (j != i)
				atf_session__close(sel->s[j]);
		sel->s[0] = sel->s[i];
		sel->n = 1;
		sel->thread_id = id;
		return 0;
	}
	fprintf(stderr, "atftrace %s: --thread %" PRId64 ": no such thread in %s\n", cmd, a->thread,
		sel->n == 1 ? sel->s[0]->dir : session);
	return -1;
}

int cmd_select(const char *cmd, const char *session, const struct cmd_select_args *a, bool one_process,
	       const char *why_one, struct cmd_selection *sel)
{
	char **dirs = NULL;
	int n = cmd_resolve(cmd, session, &dirs), rc = -1;

	*sel = (struct cmd_selection){ .thread_id = -1, .to_ns = UINT64_MAX };
	if (n < 0)
		return -1;
	if (!(sel->s = calloc((size_t)n, sizeof(*sel->s)))) {
		fprintf(stderr, "atftrace %s: %s\n", cmd, strerror(ENOMEM));
		goto cleanup;
	}
	if (a->pid < 0 && n > 1 && one_process) {
		fprintf(stderr, "atftrace %s: %s: holds %d processes%s%s; choose one with --pid:", cmd, session, n,
			why_one ? ", and " : "", why_one ? why_one : "");
		for (int i = 0; i < n; i++)
			fprintf(stderr, " %" PRId64, cmd_pid_of_dir(dirs[i]));
		fputc('\n', stderr);
		goto cleanup;
	}
	for (int i = 0; i < n; i++) {
		if (a->pid >= 0 && cmd_pid_of_dir(dirs[i]) != a->pid && !(n == 1 && cmd_pid_of_dir(dirs[i]) < 0))
			continue;
		if (cmd_open(cmd, dirs[i], &sel->s[sel->n]))
			goto cleanup;
		sel->n++;
	}
	if (!sel->n) {
		fprintf(stderr, "atftrace %s: --pid %" PRId64 ": no pid_%" PRId64 " directory in %s\n", cmd, a->pid,
			a->pid, session);
		goto cleanup;
	}
	sel->start_ns = UINT64_MAX;
	for (size_t i = 0; i < sel->n; i++) {
		uint64_t start = process_start_ns(sel->s[i]);

		if (start < sel->start_ns)
			sel->start_ns = start;
	}
	if (a->has_from)
		sel->from_ns = add_clamped(sel->start_ns, a->from_rel);
	if (a->has_to)
		sel->to_ns = add_clamped(sel->start_ns, a->to_rel);
	if (a->thread >= 0 && select_thread(cmd, session, a, sel))
		goto cleanup;
	if (check_from(cmd, session, a, sel))
		goto cleanup;
	rc = 0;
cleanup:
	atf_session_resolve_free(dirs, n);
	if (rc)
		cmd_selection_free(sel);
	return rc;
}

void cmd_selection_free(struct cmd_selection *sel)
{
	for (size_t i = 0; i < sel->n; i++)
		atf_session__close(sel->s[i]);
	free(sel->s);
	*sel = (struct cmd_selection){ 0 };
}

/*
 * note_losses - one line per selected thread that lost events within the selected range: its
 * figures there are not whole (the manifest keeps when its first and last loss happened).
 */
static void note_losses(const char *cmd, const struct cmd_selection *sel)
{
	char from[TIMEFMT_LEN], to[TIMEFMT_LEN];

	for (size_t i = 0; i < sel->n; i++) {
		const struct atf_manifest *m = sel->s[i]->manifest;

		for (size_t j = 0; j < m->nthreads; j++) {
			const struct atf_thread_info *ti = &m->threads[j];
			uint64_t lost = 2 * ti->lost_calls + ti->lost_returns;

			if (!lost || (sel->thread_id >= 0 && ti->id != (uint64_t)sel->thread_id))
				continue;
			if (ti->lost_first_ns && (ti->lost_last_ns < sel->from_ns || ti->lost_first_ns > sel->to_ns))
				continue;
			if (!ti->lost_first_ns || ti->lost_first_ns < sel->start_ns) {   /* no window recorded */
				fprintf(stderr, "atftrace %s: pid %u thread_%u lost %" PRIu64 " events; its "
					"figures are not whole\n", cmd, m->pid, ti->id, lost);
				continue;
			}
			fprintf(stderr, "atftrace %s: pid %u thread_%u lost %" PRIu64 " events between %s and %s "
				"(since the session start); its figures there are not whole\n", cmd, m->pid, ti->id,
				lost, timefmt_format(from, sizeof(from), ti->lost_first_ns - sel->start_ns),
				timefmt_format(to, sizeof(to), ti->lost_last_ns - sel->start_ns));
		}
	}
}

struct calltree *cmd_select_calltree(const char *cmd, const char *session, const struct cmd_select_args *a,
				     unsigned flags, struct cmd_selection *sel)
{
	struct export_options o = { 0 };
	struct calltree *ct;
	int err;

	if (cmd_select(cmd, session, a, false, NULL, sel))
		return NULL;
	o.thread_id = sel->thread_id;
	o.from_ns = sel->from_ns;
	o.to_ns = sel->to_ns;
	if (sel->n < 2)
		flags &= ~CALLTREE_PROCESS_NODES;
	err = (ct = calltree__new(flags)) ? calltree__run(ct, sel->s, sel->n, &o) : -ENOMEM;
	if (err) {
		fprintf(stderr, "atftrace %s: %s: %s\n", cmd, session, atf_strerror(err));
		calltree__free(ct);
		cmd_selection_free(sel);
		return NULL;
	}
	note_losses(cmd, sel);
	return ct;
}
