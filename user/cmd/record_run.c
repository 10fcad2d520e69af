// SPDX-License-Identifier: MIT
/* record's drain loop and its summary (record_run.h): ticks, signals, --duration, the status line. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "clock.h"
#include "probes.h"
#include "ptrace_target.h"
#include "ready_file.h"
#include "recorder.h"
#include "recorder_detail.h"
#include "record_run.h"

#define TICK_MS 5

/* ---- the launched command's start ---------------------------------------------------------- */

/* While it runs to its entry: a short tick, as each of its stops (exec, holds) waits for one. */
static void start_tick(void *ctx)
{
	recorder__tick(ctx, 1);         /* an error comes again at record_run()'s first tick */
}

int record_run_to_entry(struct recorder *r, pid_t target)
{
	int err = pt_park_at_entry(target, start_tick, r);

	if (err < 0 && err != -ESRCH)
		fprintf(stderr, "atftrace record: cannot run %d to its entry point (%s): plain "
			"probes\n", (int)target, strerror(-err));
	return err;
}

/* ---- the drain loop ------------------------------------------------------------------------- */

static double mono_s(void)
{
	return (double)clock_mono_ns() / 1e9;
}

static void status_line(const struct recorder *r, double now, double *last_t, uint64_t *last_ev)
{
	struct recorder_stats st;

	recorder__stats(r, &st);
	fprintf(stderr, "\r\033[K  %llu events (%.0f/s), %u threads, %u processes, %llu lost",
		(unsigned long long)st.events, (double)(st.events - *last_ev) / (now - *last_t),
		st.threads, st.processes, (unsigned long long)st.lost_events);
	*last_t = now;
	*last_ev = st.events;
}

const char *record_run(struct recorder *r, int sigfd, double duration,
			       struct detail_args *detail, struct probes *probes, bool until_stopped,
			       const char *ready, bool force)
{
	bool tty = isatty(STDERR_FILENO);
	double start = mono_s(), last_status = start;
	uint64_t last_events = 0;
	const char *reason = NULL;

	while (!reason) {
		struct signalfd_siginfo si;
		double now;
		int err = recorder__tick(r, TICK_MS);

		if (err < 0) {
			fprintf(stderr, "atftrace record: draining the ring buffer: %s\n", strerror(-err));
			return NULL;
		}
		while (!reason && read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			sigset_t set;

			if (si.ssi_signo == SIGUSR1) {  /* not an end: flips detail */
				detail_toggle(detail, probes);
				continue;
			}
			/* a second Ctrl-C/SIGTERM now ends us at once; files are flushed every tick */
			sigemptyset(&set);
			sigaddset(&set, SIGINT);
			sigaddset(&set, SIGTERM);
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			reason = "signal";
		}
		/* a system-wide session (-a) goes on without processes, until stopped */
		if (!reason && !until_stopped && !recorder__live_processes(r))
			reason = "target exited";
		if (ready && ready_file_signal(ready, force) != 1)
			ready = NULL;   /* its reader came (or it failed, as said): not tried again */
		now = mono_s();
		detail_tick(detail, probes, now - start);
		if (!reason && duration > 0 && now - start >= duration)
			reason = "duration";
		if (tty && now - last_status >= 1.0)
			status_line(r, now, &last_status, &last_events);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	return reason;
}

void record_summary(const struct recorder *r, const char *session_dir, const char *reason,
			  double seconds)
{
	struct recorder_stats st;

	recorder__stats(r, &st);
	fprintf(stderr, "atftrace record: %llu events (%llu with detail) from %u thread%s in %u "
		"process%s, %llu lost, %.3f s, ended by %s; output in %s\n",
		(unsigned long long)st.events, (unsigned long long)st.detail_events, st.threads,
		st.threads == 1 ? "" : "s", st.processes, st.processes == 1 ? "" : "es",
		(unsigned long long)st.lost_events, seconds, reason, session_dir);
	if (st.lost_events)
		fprintf(stderr, "atftrace record: %llu events could not enter the ring buffer; "
			"a larger --ring-size may help\n", (unsigned long long)st.lost_events);
	if (st.lost_unattributed)
		fprintf(stderr, "atftrace record: %llu of them are in no thread's count (too many threads "
			"lost events)\n", (unsigned long long)st.lost_unattributed);
	if (st.lost_records)
		fprintf(stderr, "atftrace record: %llu %s of a thread's exit, a fork, an exec or a "
			"thread's name %s lost (the ring buffer was full), so some threads may show no end "
			"or no name; a larger --ring-size may help\n", (unsigned long long)st.lost_records,
			st.lost_records == 1 ? "notice" : "notices", st.lost_records == 1 ? "was" : "were");
	/* a detail record that did not fit left its event in the index without detail */
	if (st.lost_detail)
		fprintf(stderr, "atftrace record: %llu detail records could not enter the ring buffer "
			"(their events were recorded without detail); a larger --ring-size or a smaller "
			"--stack-bytes may help\n", (unsigned long long)st.lost_detail);
	if (st.bad_records)
		fprintf(stderr, "atftrace record: %llu malformed ring records were skipped\n",
			(unsigned long long)st.bad_records);
	if (st.ignored_events)
		fprintf(stderr, "atftrace record: %llu events after an exec were not recorded\n",
			(unsigned long long)st.ignored_events);
	if (st.write_errors)
		fprintf(stderr, "atftrace record: %llu events could not be written\n",
			(unsigned long long)st.write_errors);
}
