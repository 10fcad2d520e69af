// SPDX-License-Identifier: MIT
/*
 * Modules that appear while recording: a new program image at exec, and libraries the dynamic
 * loader maps later (dlopen, or at start-up). Both BPF hooks (bpf/lifecycle.bpf.h, "Holds for
 * modules that appear later") can hold the process: it is stopped (SIGSTOP) before it runs
 * another user instruction, and its record says so. Here, for that record, the process's
 * mappings are read again and every file it maps that this session has not seen in it yet is
 * announced to the module hooks (recorder__on_module_mapped), after the exec hooks for an exec;
 * they attach probes while the process waits. The process is resumed (SIGCONT) after the drain
 * that handled its record, so what it runs next is already probed: events before the attach
 * are never invented, and none after it is missed.
 *
 * A process that was not held (the hook fired while holds were off) is still scanned: its new
 * modules are attached as soon as the record is read, and calls made before that are not
 * recorded. The parent of a launched target is the recorder, which does not wait for stops; a
 * -p target's job-control shell may print "Stopped" / "Continued" around a hold (see README).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "atftrace.h"
#include "clock.h"
#include "proc.h"
#include "recorder_int.h"

struct module_hook {
	recorder_module_fn fn;
	void *ctx;
};

struct exec_hook {
	recorder_exec_fn fn;
	void *ctx;
};

struct seen_file {
	pid_t pid;
	char *path;
};

struct rec_watch {
	struct module_hook *mod;
	size_t nmod;
	struct exec_hook *exec;
	size_t nexec;
	pid_t *held;                /* processes to resume after this drain */
	size_t nheld, cap_held;
	struct seen_file *seen;     /* files already announced, per process */
	size_t nseen, cap_seen;
};

static struct rec_watch *watch_state(struct recorder *r)
{
	if (!r->watch)
		r->watch = calloc(1, sizeof(*r->watch));
	return r->watch;
}

int recorder__on_module_mapped(struct recorder *r, recorder_module_fn fn, void *ctx)
{
	struct rec_watch *w = watch_state(r);
	struct module_hook *n;

	if (!w || !(n = realloc(w->mod, (w->nmod + 1) * sizeof(*n))))
		return -ENOMEM;
	w->mod = n;
	w->mod[w->nmod++] = (struct module_hook){ fn, ctx };
	return 0;
}

int recorder__on_exec(struct recorder *r, recorder_exec_fn fn, void *ctx)
{
	struct rec_watch *w = watch_state(r);
	struct exec_hook *n;

	if (!w || !(n = realloc(w->exec, (w->nexec + 1) * sizeof(*n))))
		return -ENOMEM;
	w->exec = n;
	w->exec[w->nexec++] = (struct exec_hook){ fn, ctx };
	return 0;
}

static void hold(struct recorder *r, struct rec_watch *w, pid_t pid)
{
	for (size_t i = 0; i < w->nheld; i++)
		if (w->held[i] == pid)
			return;
	if (w->nheld == w->cap_held) {
		size_t cap = w->cap_held ? w->cap_held * 2 : 8;
		pid_t *n = realloc(w->held, cap * sizeof(*n));

		if (!n) {
			rec_holds_resume(r, pid);       /* never leave a process stopped */
			return;
		}
		w->held = n;
		w->cap_held = cap;
	}
	w->held[w->nheld++] = pid;
}

static bool seen_before(struct rec_watch *w, pid_t pid, const char *path)
{
	struct seen_file *n;

	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i].pid == pid && !strcmp(w->seen[i].path, path))
			return true;
	if (w->nseen == w->cap_seen) {
		size_t cap = w->cap_seen ? w->cap_seen * 2 : 64;

		n = realloc(w->seen, cap * sizeof(*n));
		if (!n)
			return false;   /* announced again later: hooks ignore what they have */
		w->seen = n;
		w->cap_seen = cap;
	}
	w->seen[w->nseen].pid = pid;
	w->seen[w->nseen].path = strdup(path);
	if (w->seen[w->nseen].path)
		w->nseen++;
	return false;
}

/* A new image: what the old one mapped is gone. */
static void forget(struct rec_watch *w, pid_t pid)
{
	size_t k = 0;

	for (size_t i = 0; i < w->nseen; i++) {
		if (w->seen[i].pid == pid)
			free(w->seen[i].path);
		else
			w->seen[k++] = w->seen[i];
	}
	w->nseen = k;
}

/*
 * Files @pid no longer maps (a library it unloaded) are forgotten, so that loading one again
 * announces it again: its text is new, and what was written into the old (entry trampolines'
 * jmps) is gone with it.
 */
static void forget_unmapped(struct rec_watch *w, pid_t pid, const struct proc_mapping *maps,
			    size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < w->nseen; i++) {
		bool mapped = w->seen[i].pid != pid;

		for (size_t j = 0; j < n && !mapped; j++)
			mapped = maps[j].exec && !strcmp(maps[j].path, w->seen[i].path);
		if (mapped)
			w->seen[k++] = w->seen[i];
		else
			free(w->seen[i].path);
	}
	w->nseen = k;
}

/*
 * Did the hold that the record says was sent stop thread @tid of @pid (waiting at most 50 ms
 * for the SIGSTOP to land)? A SIGCONT meanwhile (the registration guard ends its own stops so)
 * discards it: then the process runs, and the modules it mapped may have run code already.
 */
static bool hold_effective(pid_t pid, pid_t tid)
{
	uint64_t started = clock_mono_ns();
	long pause_ns = 10 * 1000;

	/* polled as the unwind holds poll: the stop lands within microseconds, a sleep would
	 * cost each hold (every exec and dlopen) a millisecond */
	while (clock_mono_ns() - started < 50 * 1000 * 1000) {
		char s = rec_thread_state(pid, tid, NULL);

		if (s == 'T' || s == 't')
			return true;
		if (rec_state_gone(s))
			return false;
		rec_backoff(started, &pause_ns);
	}
	return false;
}

/* Announce every executable file @pid maps that its hooks have not seen yet. */
static void scan(struct rec_watch *w, pid_t pid, bool held)
{
	struct proc_mapping *maps;
	size_t n;

	if (!w->nmod || proc_maps(pid, &maps, &n) < 0)
		return;
	forget_unmapped(w, pid, maps, n);
	for (size_t i = 0; i < n; i++) {
		if (!maps[i].exec || maps[i].path[0] != '/' || strstr(maps[i].path, " (deleted)") ||
		    seen_before(w, pid, maps[i].path))
			continue;
		for (size_t h = 0; h < w->nmod; h++)
			w->mod[h].fn(w->mod[h].ctx, pid, maps[i].path, maps[i].start, maps[i].end,
				     held);
	}
	proc_maps_free(maps, n);
}

void rec_watch_on_dl_state(struct recorder *r, const void *data, size_t size)
{
	struct rec_watch *w = r->watch;
	struct rec_task tk;

	if (size < sizeof(tk)) {
		r->st.bad_records++;
		return;
	}
	memcpy(&tk, data, sizeof(tk));
	if (w)
		scan(w, (pid_t)tk.pid, tk.child_pid == REC_TASK_HELD &&
		     hold_effective((pid_t)tk.pid, (pid_t)tk.tid));
	if (tk.child_pid == REC_TASK_HELD) {
		rec_holds_seen(r, (pid_t)tk.pid, tk.hold_seq);
		if (w)
			hold(r, w, (pid_t)tk.pid);
		else
			rec_holds_resume(r, (pid_t)tk.pid);
	}
}

void rec_watch_on_exec(struct recorder *r, pid_t pid, bool new_image, bool held)
{
	struct rec_watch *w = r->watch;

	if (w && new_image) {
		forget(w, pid);
		for (size_t h = 0; h < w->nexec; h++)
			w->exec[h].fn(w->exec[h].ctx, pid);
		scan(w, pid, held && hold_effective(pid, pid));
	}
	if (held) {
		if (w)
			hold(r, w, pid);
		else
			rec_holds_resume(r, pid);
	}
}

bool rec_watch_holding(const struct recorder *r)
{
	return r->watch && r->watch->nheld;
}

void rec_watch_resume(struct recorder *r)
{
	struct rec_watch *w = r->watch;

	if (!w)
		return;
	for (size_t i = 0; i < w->nheld; i++)
		rec_holds_resume(r, w->held[i]);
	w->nheld = 0;
}

void rec_watch_free(struct recorder *r)
{
	struct rec_watch *w = r->watch;

	if (!w)
		return;
	rec_watch_resume(r);
	for (size_t i = 0; i < w->nseen; i++)
		free(w->seen[i].path);
	free(w->seen);
	free(w->held);
	free(w->mod);
	free(w->exec);
	free(w);
	r->watch = NULL;
}
