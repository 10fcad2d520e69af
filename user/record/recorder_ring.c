// SPDX-License-Identifier: MIT
/*
 * Ring records -> writers: one switch on the record's type tag. Events go to their thread's
 * writer (a one-entry cache in front of the tid table, since events come in bursts per thread);
 * task records end threads, announce forked children and carry a process on through its exec.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "args.h"
#include "atf_args.h"
#include "atftrace.h"
#include "proc.h"
#include "recorder_int.h"

/*
 * event_thread - the thread that @n events of (@pid, @tid) go to, made at its first event; NULL
 * when they are not recorded (counted, or on purpose: see below).
 */
static struct rec_thread *event_thread(struct recorder *r, uint32_t pid, uint32_t tid, uint32_t n)
{
	struct rec_thread *t = r->last_thread;
	struct rec_process *p;

	if (t && t->tid == tid && !t->ended)
		return t;
	t = rec_tid_lookup(r, tid);
	if (!t || t->ended || t->proc->pid != (pid_t)pid) {
		p = rec_proc_find(r, (pid_t)pid);
		if (!p) {
			/* not announced (e.g. a fork record was lost): record it anyway */
			if (recorder__add_process(r, (pid_t)pid, NULL, 0, false) < 0) {
				r->st.write_errors += n;
				return NULL;
			}
			p = rec_proc_find(r, (pid_t)pid);
		}
		if (p->state == REC_PROC_ENDED) {
			r->st.ignored_events += n;
			return NULL;
		}
		if (p->expect_exec) {
			/*
			 * The gated child before its exec is still atftrace's launcher (its libc
			 * read/close of the gate): not the target, whose events start at the exec.
			 * They are ours, not the user's: dropped on purpose, not counted.
			 */
			return NULL;
		}
		t = rec_thread_new(r, p, tid);
		if (!t) {
			r->st.write_errors += n;
			return NULL;
		}
	}
	r->last_thread = t;
	return t;
}

static void on_event(struct recorder *r, const void *data, size_t size, bool with_detail)
{
	struct rec_event re;
	struct rec_detail rd;
	struct rec_thread *t;
	struct atf_detail_in din, *dp = NULL;
	uint8_t payload[ATF_DETAIL_PAYLOAD_SIZE + ATF_DETAIL_MAX_STACK + ATF_ARGS_STR_HDR +
			ARGS_MAX_STR * (ATF_ARGS_STR_ENTRY_HDR + ARGS_MAX_STR_BYTES)];
	int ext;

	if (size < sizeof(re)) {
		r->st.bad_records++;
		return;
	}
	memcpy(&re, data, sizeof(re));
	if (with_detail) {
		if (size < sizeof(re) + sizeof(rd)) {
			r->st.bad_records++;
			return;
		}
		memcpy(&rd, (const uint8_t *)data + sizeof(re), sizeof(rd));
		if (rd.stack_size > ATF_DETAIL_MAX_STACK || size < sizeof(re) + sizeof(rd) + rd.stack_size) {
			r->st.bad_records++;
			return;
		}
	}
	t = event_thread(r, re.pid, re.tid, 1);
	if (!t)
		return;
	if (with_detail) {
		struct atf_detail_payload pl = { .function_id = re.function_id, .lr = rd.lr,
						 .fp = rd.fp, .sp = rd.sp,
						 .stack_size = (uint16_t)rd.stack_size };
		memcpy(pl.gp, rd.gp, sizeof(pl.gp));
		atf_detail_payload_encode(payload, &pl);
		memcpy(payload + ATF_DETAIL_PAYLOAD_SIZE, (const uint8_t *)data + sizeof(re) + sizeof(rd),
		       rd.stack_size);
		ext = rec_args_extension(data, size, &rd, (pid_t)re.pid,
				     payload + ATF_DETAIL_PAYLOAD_SIZE + rd.stack_size);
		if (ext < 0) {
			r->st.bad_records++;
			return;
		}
		din = (struct atf_detail_in){
			.event_type = re.kind == ATF_KIND_CALL ? ATF_DETAIL_CALL : ATF_DETAIL_RETURN,
			.flags = (uint16_t)re.flags,
			.payload = payload,
			.payload_len = ATF_DETAIL_PAYLOAD_SIZE + rd.stack_size + (uint32_t)ext,
		};
		dp = &din;
	}
	rec_append_event(r, t, re.ts, re.function_id, re.kind, re.depth, dp);
}

/* A batch of one thread's events (bpf/batch.bpf.h), in the order the thread made them. */
static void on_batch(struct recorder *r, const void *data, size_t size)
{
	struct rec_batch b;
	struct rec_thread *t;

	if (size < REC_BATCH_HDR_SIZE) {
		r->st.bad_records++;
		return;
	}
	memcpy(&b, data, REC_BATCH_HDR_SIZE);
	if (b.count == 0 || b.count > REC_BATCH_MAX ||
	    size < REC_BATCH_HDR_SIZE + b.count * sizeof(b.ev[0])) {
		r->st.bad_records++;
		return;
	}
	memcpy(b.ev, (const uint8_t *)data + REC_BATCH_HDR_SIZE, b.count * sizeof(b.ev[0]));
	t = event_thread(r, b.pid, b.tid, b.count);
	if (!t)
		return;
	for (uint32_t i = 0; i < b.count; i++)
		rec_append_event(r, t, b.ev[i].ts, b.ev[i].function_id, b.ev[i].kind, b.ev[i].depth, NULL);
}

static void on_task(struct recorder *r, const void *data, size_t size)
{
	struct rec_task tk;
	struct rec_thread *t;
	struct rec_process *p, *child;
	int err;

	if (size < sizeof(tk)) {
		r->st.bad_records++;
		return;
	}
	memcpy(&tk, data, sizeof(tk));
	switch (tk.type) {
	case REC_TASK_EXIT:
		t = rec_tid_lookup(r, tk.tid);
		if (t && t->proc->pid == (pid_t)tk.pid) {
			t->proc->exit_code = (int)tk.exit_code;
			rec_thread_name_late(r, t, tk.comm, sizeof(tk.comm));
			rec_thread_end(r, t);
		}
		break;
	case REC_TASK_FORK:
		p = rec_proc_find(r, (pid_t)tk.pid);
		if (!p || tk.child_pid == tk.pid || rec_proc_find(r, (pid_t)tk.child_pid))
			break;
		err = recorder__add_process(r, (pid_t)tk.child_pid, p->man->argv, p->man->argc, false);
		if (err < 0) {
			rec_report_write_error(r, "cannot record a forked child in", r->session_dir, err);
			break;
		}
		child = rec_proc_find(r, (pid_t)tk.child_pid);
		fprintf(stderr, "atftrace record: process %d forked %d, recorded in %s\n",
			(int)tk.pid, (int)tk.child_pid, child->dir);
		break;
	case REC_TASK_EXEC:
		if (tk.child_pid == REC_TASK_HELD)
			rec_holds_seen(r, (pid_t)tk.pid, tk.hold_seq);
		p = rec_proc_find(r, (pid_t)tk.pid);
		if (!p || p->state == REC_PROC_ENDED) {
			rec_watch_on_exec(r, (pid_t)tk.pid, false, tk.child_pid == REC_TASK_HELD);
			break;
		}
		if (p->expect_exec) {
			char comm[64];
			p->expect_exec = false;     /* the gated child became the target */
			if (!proc_comm(p->pid, 0, comm, sizeof(comm))) {
				free(p->man->process_name);
				p->man->process_name = strdup(comm);
			}
			/* its first image: modules attached before the release are not attached
			 * twice; a #! script's interpreter is read only now */
			rec_watch_on_exec(r, p->pid, true, tk.child_pid == REC_TASK_HELD);
			break;
		}
		/* the process goes on with its new image, in the same pid_<PID>/ (a wrapper, a
		 * #! script, a shim): the old image's threads end here, the new one's modules are
		 * attached while the process is held (user/record/record_watch.c) */
		rec_session_process_exec(r, p);
		if (!r->opts.system_wide)
			fprintf(stderr, "atftrace record: process %d called exec (%s); recording goes on "
				"in %s\n", (int)tk.pid, p->man->process_name ? p->man->process_name : "?",
				p->dir);
		rec_watch_on_exec(r, p->pid, !r->opts.system_wide, tk.child_pid == REC_TASK_HELD);
		break;
	}
}

/*
 * A tick's drain is cut at its deadline (the rest stays in the ring for the next tick), so a
 * flood of events, faster than we write them, cannot keep the recorder from its signals and its
 * --duration. Never while a process is held: a hold is resumed only after the drain that read
 * all its fix-ups (recorder_unwind.c); holds whose records are still in the ring wait, stopped.
 */
static int drain_budget(struct recorder *r)
{
	if (!r->drain_deadline_ns || (++r->drain_records & 255) ||
	    clock_mono_ns() < r->drain_deadline_ns || r->guard_pending ||
	    rec_unwind_holding(r) || rec_watch_holding(r))
		return 0;
	r->drain_cut = true;
	return -ECANCELED;      /* ring_buffer__consume stops after this record */
}

int rec_on_record(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;
	uint32_t type;

	if (size < sizeof(type)) {
		r->st.bad_records++;
		return 0;
	}
	memcpy(&type, data, sizeof(type));
	switch (type) {
	case REC_EVENT:
		on_event(r, data, size, false);
		break;
	case REC_EVENT_DETAIL:
		on_event(r, data, size, true);
		break;
	case REC_EVENT_BATCH:
		on_batch(r, data, size);
		break;
	case REC_TASK_EXIT:
	case REC_TASK_FORK:
	case REC_TASK_EXEC:
		on_task(r, data, size);
		break;
	case REC_UNWIND_FIXUP:
		rec_unwind_on_fixup(r, data, size);
		break;
	case REC_DL_STATE:
		rec_watch_on_dl_state(r, data, size);
		break;
	case REC_REG_GUARD:
		rec_tramp_guard_on_record(r, data, size);
		break;
	case REC_FORK_HOLD:
		rec_forks_take(r);     /* a wakeup: the notes are in fork_notes */
		break;
	case REC_PROC_INFO:
		rec_session_on_info(r, data, size);
		break;
	default:
		r->st.bad_records++;
		break;
	}
	return drain_budget(r);
}


void rec_adopt_parked(struct recorder *r)
{
	uint32_t tid, prev = 0, pid;
	struct rec_batch b;
	bool first = true;

	for (; !probes__parked_next(r->opts.probes, first ? NULL : &prev, &tid); prev = tid) {
		first = false;
		if (probes__parked_pid(r->opts.probes, tid, &pid) <= 0 || rec_proc_find(r, (pid_t)pid))
			continue;
		/* not announced (its fork record was lost): recorded anyway, as its events would be */
		if (recorder__add_process(r, (pid_t)pid, NULL, 0, false) < 0 &&
		    probes__take_parked(r->opts.probes, tid, &b) > 0)
			r->st.write_errors += b.count;
	}
}
