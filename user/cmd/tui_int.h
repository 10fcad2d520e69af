/* SPDX-License-Identifier: MIT */
/* Between the tui model's files (tui_model.c, tui_timeline.c): the views they each own. */
#ifndef ATFTRACE_TUI_INT_H
#define ATFTRACE_TUI_INT_H

#include "tui.h"

#define TUI_NAME_LEN 1024       /* an escaped name on one line; longer ones are cut */

int tui_timeline_build(struct tui *t);
void tui_timeline_free(struct tui *t);
void tui_timeline_line(struct tui *t, size_t i, char *buf, size_t len);
int64_t tui_timeline_toggle(struct tui *t, size_t i, int how);
const char *tui_timeline_function(struct tui *t, size_t i, char *buf, size_t len);
void tui_timeline_detail(struct tui *t, size_t i, char *buf, size_t len);

int tui_info_build(struct tui *t);
size_t tui_help_lines(void);
const char *tui_help_line(size_t i);

#endif
