// SPDX-License-Identifier: MIT
/*
 * atftrace tui SESSION [--pid N] [--thread N] [--from T] [--to T]
 *
 * An interactive view of a recorded session in the terminal, like `uftrace tui`: the report,
 * the call graph (expand and collapse its nodes) and a per-thread timeline, with search, and a
 * jump from a report line to its function's graph. The model (tui.h: the views' lines, built
 * from the same call tree walker as report and graph) is in tui_model.c and tui_timeline.c;
 * this file parses the arguments, loads the session, and runs the ncurses screen and keys.
 *
 * A bad SESSION is one error line before the terminal is touched. The screen shows only text
 * the model escaped: a name's control characters never reach the terminal.
 */
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <ncursesw/curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include "calltree.h"
#include "cmd_common.h"
#include "cmd_select.h"
#include "commands.h"
#include "tui.h"

#define LINE_LEN 4096
#define KEY_ESC  27

struct tui_args {
	const char *session;
	struct cmd_select_args sel;
};

static error_t tui_parse(int key, char *arg, struct argp_state *state)
{
	struct tui_args *a = state->input;

	if (key == ARGP_KEY_INIT) {
		state->child_inputs[0] = &a->sel;
		return 0;
	}
	return cmd_session_arg(key, arg, state, &a->session);
}

/* Writes @s (escaped text: printable ASCII and UTF-8) at row @y in at most @width columns. */
static void put_line(int y, const char *s, int width, attr_t attr)
{
	mbstate_t st = { 0 };
	int col = 0;

	move(y, 0);
	attrset(attr);
	for (const char *p = s; *p;) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, p, strlen(p), &st);
		bool bad = n == (size_t)-1 || n == (size_t)-2 || n == 0;     /* never, after tui_escape */
		int w = bad ? 1 : wcwidth(wc);

		if (w < 0)
			w = 1;
		if (col + w > width)
			break;
		if (bad) {
			memset(&st, 0, sizeof(st));
			n = 1;
			addch('?');
		} else if (n == 1) {
			addch((chtype)(unsigned char)*p);
		} else {
			addnstr(p, (int)n);
		}
		col += w;
		p += n;
	}
	for (; col < width; col++)
		addch(' ');
	attrset(A_NORMAL);
}

struct screen {
	struct tui *t;
	char msg[LINE_LEN];         /* the status line until the next key */
	char search[256];
};

static int body_rows(void)
{
	return LINES - 3 > 0 ? LINES - 3 : 0;
}

/* Keeps the cursor on a line and on the screen. */
static void clamp(struct tui *t)
{
	size_t n = tui__nlines(t), rows = (size_t)(body_rows() ?: 1);
	size_t *cur = &t->cursor[t->view], *top = &t->top[t->view];

	if (*cur >= n)
		*cur = n ? n - 1 : 0;
	if (*top > *cur)
		*top = *cur;
	if (*cur >= *top + rows)
		*top = *cur - rows + 1;
}

static void draw(struct screen *sc)
{
	struct tui *t = sc->t;
	char buf[LINE_LEN];
	int width = COLS - 1, rows = body_rows();
	size_t n = tui__nlines(t);

	erase();
	if (LINES < 4 || COLS < 16) {       /* tiny: say so, and keep going (a resize may follow) */
		put_line(0, "too small", COLS > 0 ? COLS - 1 : 0, A_NORMAL);
		refresh();
		return;
	}
	clamp(t);
	tui__title(t, buf, sizeof(buf));
	put_line(0, buf, width, A_REVERSE);
	tui__header(t, buf, sizeof(buf));
	put_line(1, buf, width, A_BOLD);
	for (int r = 0; r < rows; r++) {
		size_t i = t->top[t->view] + (size_t)r;

		if (i >= n) {
			if (!n && !r)
				put_line(2, t->view == TUI_TIMELINE ? "(no thread in the selection)" :
					 "(no calls recorded in the selection)", width, A_NORMAL);
			break;
		}
		tui__line(t, i, buf, sizeof(buf));
		put_line(2 + r, buf, width, i == t->cursor[t->view] ? A_REVERSE : A_NORMAL);
	}
	if (sc->msg[0])
		put_line(LINES - 1, sc->msg, width, A_NORMAL);
	else {
		snprintf(buf, sizeof(buf), "[%zu/%zu]  R report  G graph  T timeline  / search  h help  q quit",
			 n ? t->cursor[t->view] + 1 : 0, n);
		put_line(LINES - 1, buf, width, A_NORMAL);
	}
	refresh();
}

/* Reads a search pattern on the status line; false when cancelled (Esc, or empty). */
static bool prompt(struct screen *sc, char *out, size_t len)
{
	size_t n = 0;
	char shown[1600];

	out[0] = '\0';
	for (;;) {
		int ch;

		shown[0] = '/';
		tui_escape(shown + 1, sizeof(shown) - 1, out, sc->t->utf8);   /* what was typed, never raw */
		if (LINES >= 4 && COLS >= 16)
			put_line(LINES - 1, shown, COLS - 1, A_NORMAL);
		refresh();
		ch = getch();
		if (ch == '\n' || ch == '\r' || ch == KEY_ENTER)
			return n > 0;
		if (ch == KEY_ESC || ch == ERR)
			return false;
		if (ch == KEY_RESIZE) {
			draw(sc);
		} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n) {
			out[--n] = '\0';
		} else if (ch >= 0x20 && ch < 0x100 && ch != 127 && n + 1 < len) {
			out[n++] = (char)ch;
			out[n] = '\0';
		}
	}
}

static void search(struct screen *sc, int dir)
{
	struct tui *t = sc->t;
	int64_t at;

	if (!sc->search[0]) {
		snprintf(sc->msg, sizeof(sc->msg), "no search yet: / starts one");
		return;
	}
	at = tui__search(t, sc->search, t->cursor[t->view], dir);
	if (at < 0) {
		char esc[1600];

		tui_escape(esc, sizeof(esc), sc->search, t->utf8);
		snprintf(sc->msg, sizeof(sc->msg), "not found: %s", esc);
		return;
	}
	t->cursor[t->view] = (size_t)at;
}

/* The graph of the selected line's function ('g', and Enter on the report). */
static void graph_of_selected(struct screen *sc)
{
	struct tui *t = sc->t;
	char buf[64], *fn;
	const char *name = tui__function(t, t->cursor[t->view], buf, sizeof(buf));
	int err;

	if (!name) {
		snprintf(sc->msg, sizeof(sc->msg), "no function on this line");
		return;
	}
	if (!(fn = strdup(name)) || (err = tui__graph(t, fn))) {
		if (fn && err == -ENOENT)       /* a timeline call that never returned in the range */
			snprintf(sc->msg, sizeof(sc->msg), "graph: no finished call of it in the selection");
		else
			snprintf(sc->msg, sizeof(sc->msg), "graph: %s", strerror(fn ? -err : ENOMEM));
		free(fn);
		return;
	}
	free(fn);
	t->view = TUI_GRAPH;
}

static void toggle(struct screen *sc, int how)
{
	struct tui *t = sc->t;
	int64_t at = tui__toggle(t, t->cursor[t->view], how);

	if (at < 0)
		snprintf(sc->msg, sizeof(sc->msg), "%s", atf_strerror((int)at));
	else
		t->cursor[t->view] = (size_t)at;
}

static void show(struct tui *t, enum tui_view v)
{
	if (t->view != TUI_HELP && t->view != TUI_INFO)
		t->back = t->view;
	t->view = v;
}

/* One key. Returns false to quit. */
static bool key(struct screen *sc, int ch)
{
	struct tui *t = sc->t;
	size_t *cur = &t->cursor[t->view], n = tui__nlines(t), page = (size_t)(body_rows() ?: 1);

	sc->msg[0] = '\0';
	switch (ch) {
	case 'q':
		return false;
	case KEY_UP: case 'k':
		*cur -= *cur > 0;
		return true;
	case KEY_DOWN: case 'j':
		*cur += *cur + 1 < n;
		return true;
	case KEY_PPAGE:
		*cur = *cur > page ? *cur - page : 0;
		return true;
	case KEY_NPAGE:
		*cur += page;
		return true;
	case KEY_HOME:
		*cur = 0;
		return true;
	case KEY_END:
		*cur = n ? n - 1 : 0;
		return true;
	case KEY_RESIZE: case ERR:
		return true;
	}
	if (t->view == TUI_HELP || t->view == TUI_INFO) {      /* any other key goes back */
		if (ch <= 0 || ch > 0x7f || !strchr("RGTIh?", ch)) {
			t->view = t->back;
			return true;
		}
	}
	switch (ch) {
	case '\n': case '\r': case KEY_ENTER:
		if (t->view == TUI_REPORT)
			graph_of_selected(sc);
		else
			toggle(sc, 0);
		break;
	case KEY_RIGHT: toggle(sc, 1); break;
	case KEY_LEFT:  toggle(sc, -1); break;
	case 'E': case 'C':
		if (t->view == TUI_GRAPH)
			tui__expand_all(t, ch == 'E');
		break;
	case 'R': show(t, TUI_REPORT); break;
	case 'G':
		if (t->g.function && tui__graph(t, NULL))
			snprintf(sc->msg, sizeof(sc->msg), "graph: %s", strerror(ENOMEM));
		show(t, TUI_GRAPH);
		break;
	case 'g': graph_of_selected(sc); break;
	case 'T': show(t, TUI_TIMELINE); break;
	case 't': case '\t': case KEY_BTAB:
		if (t->view == TUI_TIMELINE)
			*cur = tui__thread_step(t, *cur, ch == KEY_BTAB ? -1 : 1);
		break;
	case 's': case 'S':
		if (t->view == TUI_REPORT)
			tui__sort(t, ch == 's' ? 1 : -1);
		else
			snprintf(sc->msg, sizeof(sc->msg), "s sorts the report (R)");
		break;
	case '/': {
		char pattern[sizeof(sc->search)];

		if (prompt(sc, pattern, sizeof(pattern))) {     /* Esc keeps the last pattern */
			memcpy(sc->search, pattern, sizeof(pattern));
			search(sc, 1);
		}
		break;
	}
	case 'n': search(sc, 1); break;
	case 'N': search(sc, -1); break;
	case 'i':
		tui__detail(t, *cur, sc->msg, sizeof(sc->msg));
		break;
	case 'I': show(t, TUI_INFO); break;
	case 'h': case '?': show(t, TUI_HELP); break;
	default:
		snprintf(sc->msg, sizeof(sc->msg), "h: the keys");
		break;
	}
	return true;
}

static int run_screen(struct tui *t)
{
	struct screen sc = { .t = t };
	SCREEN *scr = newterm(NULL, stdout, stdin);

	if (!scr) {
		fprintf(stderr, "atftrace tui: TERM=%s: not a terminal ncurses knows\n", getenv("TERM") ?: "");
		return 1;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	do
		draw(&sc);
	while (key(&sc, getch()));
	endwin();
	delscreen(scr);
	return 0;
}

int cmd_tui(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cmd_select_argp, 0, NULL, 0 }, { 0 } };
	static const char doc[] =
		"Browse a recorded session in the terminal: its report, call graph and per-thread "
		"timeline.\v"
		"Every process of SESSION unless --pid; T is a time since the session start (1500, 20us, "
		"1.5ms, 2s). Press h in the tui for its keys.";
	struct argp argp = { NULL, tui_parse, "SESSION", doc, children, NULL, NULL };
	struct tui_args a = { 0 };
	struct cmd_selection sel = { 0 };
	struct export_options o = { 0 };
	struct calltree *flat, *full;
	struct tui t;
	int err, rc = 1;

	if (cmd_parse(&argp, "tui", argc, argv, &a))
		return 2;
	if (!(flat = cmd_select_calltree("tui", a.session, &a.sel, CALLTREE_FLAT, &sel)))
		return 1;
	o.thread_id = sel.thread_id;
	o.from_ns = sel.from_ns;
	o.to_ns = sel.to_ns;
	full = calltree__new(sel.n > 1 ? CALLTREE_PROCESS_NODES : 0);
	err = full ? calltree__run(full, sel.s, sel.n, &o) : -ENOMEM;
	if (!err && !(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)))
		err = -ENOTTY;
	if (err) {
		fprintf(stderr, "atftrace tui: %s: %s\n", err == -ENOTTY ? "standard input and output" : a.session,
			err == -ENOTTY ? "not a terminal (the tui needs one)" : atf_strerror(err));
		calltree__free(flat);
		calltree__free(full);
		goto cleanup;
	}
	setlocale(LC_ALL, "");
	if (tui__init(&t, a.session, &sel, flat, full, !strcmp(nl_langinfo(CODESET), "UTF-8"))) {
		fprintf(stderr, "atftrace tui: %s\n", strerror(ENOMEM));
		tui__free(&t);
		goto cleanup;
	}
	rc = run_screen(&t);
	tui__free(&t);
cleanup:
	cmd_selection_free(&sel);
	return rc;
}
