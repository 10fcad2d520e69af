/* SPDX-License-Identifier: MIT */
/* One entry point per subcommand, one file per subcommand (user/cmd/cmd_<name>.c). */
#ifndef ATFTRACE_COMMANDS_H
#define ATFTRACE_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_list_functions(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_tui(int argc, char **argv);

#endif
