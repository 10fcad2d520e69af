// SPDX-License-Identifier: MIT
/* atftrace: dispatch to one subcommand. Each subcommand parses its own options with argp. */
#include <stdio.h>
#include <string.h>
#include "commands.h"

/* Weak so the binary links while subcommands land one by one; a missing one says so. */
#pragma weak cmd_record
#pragma weak cmd_attach
#pragma weak cmd_list_functions
#pragma weak cmd_dump
#pragma weak cmd_info
#pragma weak cmd_verify
#pragma weak cmd_recover
#pragma weak cmd_restore
#pragma weak cmd_export
#pragma weak cmd_report
#pragma weak cmd_graph
#pragma weak cmd_tui

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "record",         cmd_record,         "trace a command (-- CMD) or a running process (-p PID)" },
	{ "attach",         cmd_attach,         "trace a running process: same as record -p PID" },
	{ "list-functions", cmd_list_functions, "print the functions record would probe" },
	{ "dump",           cmd_dump,           "print a session's events as an indented call tree" },
	{ "info",           cmd_info,           "summarise a session: manifest, threads, counts, times" },
	{ "verify",         cmd_verify,         "check a session completely; exit 1 at the first problem" },
	{ "recover",        cmd_recover,        "repair headers and footers of a session cut short" },
	{ "restore",        cmd_restore,        "undo the function-entry patches of a session killed with -9 (-p PID)" },
	{ "export",         cmd_export,         "convert a session to another trace format" },
	{ "report",         cmd_report,         "per-function calls, total and self time of a session" },
	{ "graph",          cmd_graph,          "the aggregated call graph below a function, or its callers" },
	{ "tui",            cmd_tui,            "browse a session's report, call graph and timeline in the terminal" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: atftrace COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].fn)
			fprintf(f, "  %-15s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'atftrace COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("atftrace %s\n", ATFTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (!commands[i].fn)
			break;
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "atftrace: unknown command '%s' (see 'atftrace --help')\n", argv[1]);
	return 2;
}
