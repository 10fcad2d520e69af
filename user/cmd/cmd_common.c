// SPDX-License-Identifier: MIT
/* Argument parsing and error lines shared by the session-reading subcommands (cmd_common.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cmd_common.h"

error_t cmd_session_arg(int key, char *arg, struct argp_state *state, const char **session)
{
	switch (key) {
	case ARGP_KEY_ARG:
		if (*session)
			argp_error(state, "only one SESSION may be given");
		*session = arg;
		return 0;
	case ARGP_KEY_END:
		if (!*session)
			argp_error(state, "SESSION is required");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

int cmd_parse(const struct argp *argp, const char *cmd, int argc, char **argv, void *input)
{
	char name[64], *argv0 = argv[0];
	error_t err;

	snprintf(name, sizeof(name), "atftrace %s", cmd);
	argv[0] = name;                 /* argp names the program after argv[0] */
	argp_err_exit_status = 2;       /* a usage error, as for export */
	err = argp_parse(argp, argc, argv, ARGP_IN_ORDER, NULL, input);
	argv[0] = argv0;
	return err ? 2 : 0;
}

static error_t session_only_parse(int key, char *arg, struct argp_state *state)
{
	return cmd_session_arg(key, arg, state, state->input);
}

int cmd_parse_session(const char *cmd, const char *doc, int argc, char **argv, const char **session)
{
	struct argp argp = { .parser = session_only_parse, .args_doc = "SESSION", .doc = doc };

	*session = NULL;
	return cmd_parse(&argp, cmd, argc, argv, session);
}

int cmd_resolve(const char *cmd, const char *session, char ***dirs)
{
	int n = atf_session_resolve(session, dirs);

	if (n < 0) {
		fprintf(stderr, "atftrace %s: %s: %s\n", cmd, session, atf_strerror(n));
		return -1;
	}
	return n;
}

void cmd_print_diag(const char *cmd, const char *path, int err, const struct atf_diag *diag, bool offset)
{
	const char *file = diag && diag->file[0] ? diag->file : path;
	const char *msg = diag && diag->msg[0] ? diag->msg : atf_strerror(err);

	if (offset)
		fprintf(stderr, "atftrace %s: %s:%llu: %s\n", cmd, file,
			(unsigned long long)(diag ? diag->offset : 0), msg);
	else
		fprintf(stderr, "atftrace %s: %s: %s\n", cmd, file, msg);
}

int cmd_open(const char *cmd, const char *dir, struct atf_session **s)
{
	struct atf_diag diag = { 0 };
	int err = atf_session__open(s, dir, 0, &diag);

	if (err)
		cmd_print_diag(cmd, dir, err, &diag, false);
	return err;
}

bool cmd_parse_pid(const char *arg, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > 0x3fffffff)
		return false;
	*pid = (pid_t)v;
	return true;
}
