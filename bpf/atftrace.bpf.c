// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * atftrace probes: function entry/return events into one BPF ring buffer.
 *
 * The same event logic (on_entry / on_return) runs behind three attach styles, chosen by
 * user/probe/probes.c before load:
 *   atf_session                   one uprobe-session link (entry and return in one program)
 *   atf_multi_entry/_return       two uprobe_multi links (the return one with the RETURN flag)
 *   atf_uprobe / atf_uretprobe    per-function perf-event uprobes (old kernels)
 * The link cookie of every probed offset is the function_id (module_id << 32 | symbol_index).
 *
 * Depth and unwinding. Each thread keeps a shadow stack of its open traced frames with the
 * stack pointer at their entry. A live caller always has a higher entry sp than its callees,
 * so a frame whose entry sp is <= the sp of a new call is dead: something (C++ throw,
 * longjmp) unwound it without running its uretprobe (the kernel drops those return
 * instances). Such frames are closed with EXCEPTION events, innermost first, with their own
 * function_id and depth. CALL depth = traced frames open before the call; RETURN repeats the
 * depth and function_id of its CALL. When a CALL could not be recorded (ring full, counted in
 * lost_events), its frame is not pushed and its RETURN is not emitted either; both are counted.
 *
 * Limits: one probe hit closes every dead frame (bpf_loop, up to MAX_POPS: all the remembered
 * ones; a hit that closed only some would push a live frame above the rest, which would then
 * never be found dead); frames deeper than SHADOW_MAX are counted in depth but not remembered, so
 * their returns carry the link cookie and unwinding through them closes only the remembered
 * frames below SHADOW_MAX.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "atftrace.h"
#include "atftrace.bpf.h"

#define KIND_CALL       1   /* ATF_KIND_CALL */
#define KIND_RETURN     2   /* ATF_KIND_RETURN */
#define KIND_EXCEPTION  3   /* ATF_KIND_EXCEPTION */

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* ---- configuration: set by user/probe/probes.c between open and load ------------------------ */
const volatile bool system_wide = false;      /* no tgid filter */
const volatile bool follow_fork = false;      /* children of traced processes become traced */
const volatile __u64 cgroup_id = 0;           /* 0: any cgroup */
const volatile __u32 wakeup_bytes = 0;        /* force a wakeup above this much unread data */
/* Detail lane: see detail.bpf.h. --detail=always starts detail_switch (.bss) on. */
const volatile bool detail_always = false;
const volatile __u32 stack_bytes = 0;

/*
 * ---- drop counters, read by the recorder (probes__lost) --------------------------------------
 * Nothing is dropped without a count. lost_events: index events not written; a lost CALL counts
 * twice, itself and the RETURN or EXCEPTION that then is not written either (see on_entry).
 * lost_detail: detail records not written (their event was recorded plain, or counted above).
 * lost_records: the other ring records (thread exit/fork/exec, process identity, unwind fix-ups),
 * which are not events. lost_unattributed: the part of lost_events that thread_losses had no room
 * for, so it is in no thread's count.
 */
__u64 lost_events[MAX_CPUS];
__u64 lost_detail[MAX_CPUS];
__u64 lost_records[MAX_CPUS];
__u64 lost_unattributed[MAX_CPUS];

/* ---- maps --------------------------------------------------------------------------------- */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);   /* resized before load */
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TGIDS);
	__type(key, __u32);     /* tgid */
	__type(value, __u8);
} tgid_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} task_states SEC(".maps");

/* Per-thread loss counts (struct thread_loss in atftrace.h), by tid; touched only when a loss happens. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_LOSS_THREADS);
	__type(key, __u32);
	__type(value, struct thread_loss);
} thread_losses SEC(".maps");

/* ---- helpers (and count_lost() in atftrace.bpf.h) ------------------------------------------- */

/*
 * count_event_lost - an index event of kind @kind, made at @ts, of the current thread was not written
 * Per CPU (lost_events) and per thread (thread_losses). A lost CALL counts its RETURN too: the
 * frame is not pushed, so on_return never emits it (a session link does not even run it).
 */
static __noinline void count_event_lost(__u32 kind, __u64 pid_tgid, __u64 ts)
{
	struct thread_loss zero = { .pid = pid_tgid >> 32 }, *tl;
	__u32 tid = (__u32)pid_tgid;
	bool call = kind == KIND_CALL;

	count_lost_n(lost_events, call ? 2 : 1);
	tl = bpf_map_lookup_elem(&thread_losses, &tid);
	if (!tl) {
		bpf_map_update_elem(&thread_losses, &tid, &zero, BPF_NOEXIST);
		tl = bpf_map_lookup_elem(&thread_losses, &tid);
	}
	if (!tl) {      /* the map is full: still counted, in no thread */
		count_lost_n(lost_unattributed, call ? 2 : 1);
		return;
	}
	if (call)
		__sync_fetch_and_add(&tl->calls, 1);
	else
		__sync_fetch_and_add(&tl->returns, 1);
	/* only the thread itself (or its exit, after it) loses its events: plain stores will do */
	if (!tl->first_ts || ts < tl->first_ts)
		tl->first_ts = ts;
	if (ts > tl->last_ts)
		tl->last_ts = ts;
}

/*
 * Wake the reader only when enough has piled up; otherwise it drains on its own timer. The fill
 * level is looked at on every 16th record of a CPU: that bounds the overshoot to 16 records
 * (far below the ring's spare room) and takes the query off most events' path.
 */
__u32 submits[MAX_CPUS];

static __always_inline __u64 wakeup_flag(void)
{
	__u32 cpu = bpf_get_smp_processor_id() & (MAX_CPUS - 1);

	if (submits[cpu]++ & 15)
		return BPF_RB_NO_WAKEUP;
	return bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) > wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									: BPF_RB_NO_WAKEUP;
}

/* Pids in the recorder's pid namespace: current_pid_tgid(), task_pid_tgid(). */
#include "pidns.bpf.h"
#include "holds.bpf.h"
/* System-wide sessions (record -a): --cgroup/--container, --comm, process identity. */
#include "filter.bpf.h"

/* tgid_traced - is process @tgid (0: not visible to the recorder) traced? */
static __always_inline bool tgid_traced(__u32 tgid)
{
	if (!pid_visible(tgid) || !task_filters_pass())
		return false;
	if (system_wide)
		return true;
	return bpf_map_lookup_elem(&tgid_filter, &tgid) != NULL;
}

static __always_inline struct task_state *task_state_of(struct task_struct *task, bool create)
{
	return bpf_task_storage_get(&task_states, task, NULL, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* Per-CPU state slots: thread_state() for the function probes, current_state() for the hooks. */
#include "state_slot.bpf.h"

/* emit_event(): index events through the thread's batch. */
#include "batch.bpf.h"

/*
 * frame_at - &st->frames[i] in a form the verifier can bound: the compiler would drop a plain
 * mask it can prove redundant (i < SHADOW_MAX already), and the verifier loses that proof.
 */
static __always_inline struct shadow_frame *frame_at(struct task_state *st, __u64 i)
{
	asm volatile("" : "+r"(i));
	return &st->frames[i & (SHADOW_MAX - 1)];
}

#if defined(__TARGET_ARCH_x86)
/* site_caller_ret(): the return address a call-site stub stands in for (and the C++ unwind
 * hooks' stub frames, collect_site_slots()). */
#include "site_unwind.bpf.h"
#endif

/* Detail lane: emit_traced() = emit_event() plus registers and stack when wanted. */
#include "detail.bpf.h"

/* Record-time filters (record -D, -t, -F, -N, -T): filter_entry(), filter_end(). */
#include "callfilter.bpf.h"

/* Frames that unwinding left behind: close_dead_frames(). */
#include "dead_frames.bpf.h"

/*
 * tail_call - is this entry a tail call from the innermost open frame?
 * `jmp g` at the end of f enters g with f's own entry sp, which otherwise means f is dead (it
 * was unwound and its caller made a new call at the same place). The difference: f's return
 * address slot, at that sp, still holds what our probe of f left there, while a new call has
 * just pushed a real return address: the uretprobe trampoline the kernel put there at f's
 * entry (the kernel chains g's return instance to f's, so both return probes fire at g's
 * `ret`, innermost first), or, for f entered through a call-site stub, the stub's return point
 * (g's `ret` returns there, and the stub's `call R` closes f after g). Only read when the sps are equal,
 * which is rare: no cost on ordinary calls. (arm64 keeps the return address in a register at
 * entry; there a tail call is still closed as unwound.)
 */
static __always_inline bool tail_call(struct task_struct *task, struct task_state *st, __u64 sp)
{
#if defined(__TARGET_ARCH_x86)
	__u32 d = st->depth;
	__u64 slot = 0, tramp, site_ret;
	struct shadow_frame *f;

	if (d == 0 || d > SHADOW_MAX)
		return false;
	f = frame_at(st, d - 1);
	if (f->entry_sp != sp)
		return false;
	site_ret = f->site_ret;
	if (bpf_probe_read_user(&slot, sizeof(slot), (void *)sp))
		return false;
	if (site_ret)
		return slot == site_ret;
	tramp = uretprobe_trampoline(task);
	return tramp && slot == tramp;
#else
	return false;
#endif
}

#define ENTRY_PLAIN 0
#define ENTRY_FN    1
#define ENTRY_TAIL  2

/* The return address a frame entered at this probe has in its slot when it came through a stub
 * (the stub's return point, a `call R`), or 0 (see on_entry's @site). */
static __always_inline __u64 site_return(int site, __u64 sp)
{
	__u64 ret = 0;

	if (site == ENTRY_FN && bpf_probe_read_user(&ret, sizeof(ret), (void *)sp))
		return 0;
	return ret;
}

/* Frames of a tail chain looked at for its call through a stub (tail_chain_site_ret). */
#define TAIL_CHAIN_LOOKED_AT 4

/*
 * tail_chain_site_ret - the stub return point (shadow_frame.site_ret) of the tail chain that a
 * tail call at entry sp @sp extends: the first one, innermost first, of its open frames with
 * that entry sp, at most @frames of them (1: the tail-caller's); 0 if none came through a stub.
 */
static __always_inline __u64 tail_chain_site_ret(struct task_state *st, __u32 depth, __u64 sp,
						 __u32 frames)
{
	for (__u32 i = 1; i <= TAIL_CHAIN_LOOKED_AT; i++) {
		if (i > frames || i > depth || depth - i >= SHADOW_MAX)
			return 0;
		struct shadow_frame *f = frame_at(st, depth - i);

		if (f->entry_sp != sp)
			return 0;
		if (f->site_ret)
			return f->site_ret;
	}
	return 0;
}

/*
 * on_entry - a traced function was called
 * @run: run_begin()'s (the current task, this CPU's state slot); @multi: on a uprobe_multi or
 * session link (hit_cookie).
 * @site: ENTRY_PLAIN, the function's own entry; ENTRY_FN, the function's entry block E_f
 * (user/patch/callsite_plan.h), reached by a direct, PLT or indirect stub's `call`: this sp is
 * the entry sp, and the return-address slot at it holds that stub's return point (its `call
 * R`); ENTRY_TAIL, the function's tail entry T_f (user/patch/callsite_tail.h): entered by the
 * tail-caller's `jmp`, which pushed nothing, so this sp is the entry sp, the open frame with
 * the same entry sp is the tail-caller (never dead), and the return slot is the tail-caller's:
 * the new frame takes its site_ret, so that tail_call() still tells the next tail call.
 * The detail lane gets the entry sp and the stub's return point (struct probe_hit), so that it
 * shows what a plain probe at the function's entry shows.
 * Returns 0 when a CALL was recorded (its return must be seen), 1 otherwise (a session
 * program returns this to skip the return run).
 */
static __always_inline int on_entry(struct pt_regs *ctx, struct probe_run *run, bool multi,
				    int site)
{
	struct task_struct *task = run->task;
	struct task_state *st = NULL;
	__u64 pid_tgid;

	/*
	 * A thread whose process passed the tgid filter once keeps passing (its tgid leaves the
	 * filter only when the whole process is gone), so the hash lookup is done once per thread;
	 * the per-task filters (cgroup, comm, self) are still checked on every call. Its pids are
	 * kept with it: a thread's pids change only at exec (atf_exec takes the new ones).
	 */
	if (!system_wide && task_filters_pass())
		st = thread_state(run, ctx, false);
	if (!st || !st->traced) {
		pid_tgid = current_pid_tgid();
		if (!tgid_traced(pid_tgid >> 32))
			return 1;
		st = thread_state(run, ctx, true);
		if (!st) {      /* no memory for this thread's state: the call is lost, and counted */
			count_event_lost(KIND_CALL, pid_tgid, atf_now());
			return 1;
		}
		st->pid_tgid = pid_tgid;
		st->traced = 1;
	}
	pid_tgid = st->pid_tgid;
	__u64 ts = atf_now();

	announce_task(pid_tgid);        /* record -a: the process's identity, once per thread */
	__u64 sp = PT_REGS_SP(ctx);
	__u64 function_id = hit_cookie(ctx, task, multi);
	/* a plain probe's tail call: the tail-caller's slot is ours */
	bool plain_tail = site == ENTRY_PLAIN && tail_call(task, st, sp);

	/* an entry block is entered by a stub's call, never by a tail call's jmp; a tail entry
	 * only by a tail call's */
	close_dead_frames(st, sp, site == ENTRY_FN || (site == ENTRY_PLAIN && !plain_tail),
			  pid_tgid, ts);

	__u32 depth = st->depth;
	__u64 site_ret = site_return(site, sp);
	struct probe_hit hit = { .sp = sp, .site_ret = site_ret };

	/*
	 * A tail call returns through its tail-caller's slot, and so what it holds: a tail entry's
	 * frame takes the tail-caller's site_ret (tail_call()). The program's return address is
	 * that of the chain's call through a stub, if it had one, even where a plain probe's
	 * uretprobe in the chain has since put its trampoline in the slot.
	 */
	if (site == ENTRY_TAIL || plain_tail) {
		site_ret = tail_chain_site_ret(st, depth, sp, 1);
		hit.site_ret = tail_chain_site_ret(st, depth, sp, TAIL_CHAIN_LOOKED_AT);
	}
	/* before the push (here or in filter_entry): a frame that is not pushed is not read; a
	 * plain probe's frame gets the uretprobe trampoline in its slot (tail_call()) */
	if (depth < SHADOW_MAX)
		frame_at(st, depth)->site_ret = site == ENTRY_PLAIN ? 0 : site_ret;

	if (call_filter_on)
		return filter_entry(ctx, &hit, st, depth, function_id, sp, pid_tgid, ts);
	if (!emit_traced(ctx, &hit, st, KIND_CALL, function_id, depth, pid_tgid, ts))
		return 1;
	if (depth < SHADOW_MAX) {
		struct shadow_frame *f = frame_at(st, depth);

		f->function_id = function_id;
		f->entry_sp = sp;
	}
	st->depth = depth + 1;
	return 0;
}

/* What close_one_tail_frame hands to the loop body. */
struct tail_ctx {
	struct pt_regs *ctx;
	struct probe_hit hit;
	struct task_state *st;
	__u64 entry_sp;
	__u64 pid_tgid;
	__u64 ts;
};

/*
 * close_one_tail_frame - bpf_loop body: the innermost frame, if it has the returning entry sp
 * (the tail-caller of the frame just closed), returns too, with the same registers (a tail
 * call's caller returns what its callee returns); 1 stops.
 */
static int close_one_tail_frame(__u32 i, void *data)
{
	struct tail_ctx *c = data;
	struct task_state *st = c->st;
	__u32 d = st->depth;
	struct shadow_frame *f;

	if (d == 0 || d > SHADOW_MAX)
		return 1;
	f = frame_at(st, d - 1);
	if (f->entry_sp != c->entry_sp)
		return 1;
	if (call_filter_on)
		filter_end(c->ctx, &c->hit, st, d - 1, KIND_RETURN, f->function_id, c->pid_tgid, c->ts);
	else
		emit_traced(c->ctx, &c->hit, st, KIND_RETURN, f->function_id, d - 1, c->pid_tgid,
			    c->ts);
	st->depth = d - 1;
	return 0;
}

/*
 * on_return - a traced function returned; only threads with open frames get here usefully.
 * @at_entry_sp: false for a return probe (after `ret`), which runs with the returning frame's
 * entry sp one word below its sp; true for a return block R (user/patch/callsite_plan.h), which
 * the stub's `call R` reached right after the function returned: its push put sp back at the
 * frame's entry sp. Past SHADOW_MAX the frame's id is the link cookie: f's id at a function's
 * R_f, 0 at an indirect stubs' shared R (the function is not known there).
 * Every frame open with that entry sp returns with it, innermost first, with these registers:
 * a tail-called function returns through its tail-caller's return slot (a tail stub has no
 * return probe of its own, nor has a plain probe's past the kernel's 64 pending uretprobes),
 * so one return closes the whole tail chain. A plain tail call's second return run (the kernel
 * chains the two uretprobes' instances) then finds no frame of that sp: a no-op.
 * The detail lane gets the sp a plain probe's return run has and the return point of the stub
 * the frame came through (struct probe_hit): at R, the frame's (or its tail chain's) site_ret,
 * recorded at E_f; at a return probe, only when it returns into that stub (a tail chain that
 * began through a stub, whose slot a plain probe's uretprobe took after it).
 */
static __always_inline void on_return(struct pt_regs *ctx, struct probe_run *run, bool multi,
				      bool at_entry_sp)
{
	struct task_struct *task = run->task;
	struct task_state *st = thread_state(run, ctx, false);

	if (!st || st->depth == 0)
		return;

	__u64 pid_tgid = st->pid_tgid;      /* set with the depth's first frame (on_entry) */
	__u64 ts = atf_now();
	__u64 entry_sp = PT_REGS_SP(ctx) - (at_entry_sp ? 0 : RET_SP_ADJUST);
	/* the sp a plain probe's return run has (after `ret`), also at R */
	struct probe_hit hit = { .sp = entry_sp + RET_SP_ADJUST };

	close_dead_frames(st, entry_sp, false, pid_tgid, ts);

	__u32 d = st->depth;

	if (d == 0)
		return;
	if (d > SHADOW_MAX && !call_filter_on) {   /* not remembered: trust the cookie and the count */
		/* at R, [sp] is what the stub's `call R` pushed: the address of its `jmp site+L` */
		if (at_entry_sp && !bpf_probe_read_user(&hit.site_ret, sizeof(hit.site_ret),
							(void *)entry_sp))
			hit.site_ret -= ATF_SITE_JMP_FROM_RET;
		emit_traced(ctx, &hit, st, KIND_RETURN, hit_cookie(ctx, task, multi), d - 1, pid_tgid,
			    ts);
		st->depth = d - 1;
		return;
	}
	struct shadow_frame *f = frame_at(st, d - 1);

	if (f->entry_sp != entry_sp)    /* its CALL was not recorded (lost): no RETURN either */
		return;
	__u64 chain = tail_chain_site_ret(st, d, entry_sp, TAIL_CHAIN_LOOKED_AT);

	if (at_entry_sp || chain == PT_REGS_IP(ctx))
		hit.site_ret = chain;
	if (call_filter_on)
		filter_end(ctx, &hit, st, d - 1, KIND_RETURN, f->function_id, pid_tgid, ts);
	else
		emit_traced(ctx, &hit, st, KIND_RETURN, f->function_id, d - 1, pid_tgid, ts);
	st->depth = d - 1;
	/* its tail-callers: rare, so the loop only when the next frame is one */
	if (d < 2 || frame_at(st, d - 2)->entry_sp != entry_sp)
		return;

	struct tail_ctx c = { .ctx = ctx, .hit = hit, .st = st, .entry_sp = entry_sp,
			      .pid_tgid = pid_tgid, .ts = ts };

	bpf_loop(MAX_POPS, close_one_tail_frame, &c, 0);
}

/* on_entry and on_return of a program that runs for one of them only. */
static __always_inline void probe_entry(struct pt_regs *ctx, bool multi, int site)
{
	struct probe_run run;

	run_begin(&run, ctx);
	on_entry(ctx, &run, multi, site);
}

static __always_inline void probe_return(struct pt_regs *ctx, bool multi, bool at_entry_sp)
{
	struct probe_run run;

	run_begin(&run, ctx);
	on_return(ctx, &run, multi, at_entry_sp);
}

/* ---- programs --------------------------------------------------------------------------- */

/* A uprobe session link's run: the entry, or (hit_is_return) the return of a plain probe. */
static __always_inline int session_run(struct pt_regs *ctx)
{
	struct probe_run run;

	run_begin(&run, ctx);
	if (hit_is_return(run.task)) {
		on_return(ctx, &run, true, false);
		return 0;
	}
	return on_entry(ctx, &run, true, ENTRY_PLAIN);
}

/* Uprobe session (expected attach type BPF_TRACE_UPROBE_SESSION): one program, two runs. */
SEC("uprobe")
int atf_session(struct pt_regs *ctx)
{
	return session_run(ctx);
}

/* Two uprobe_multi links (expected attach type BPF_TRACE_UPROBE_MULTI). */
SEC("uprobe")
int atf_multi_entry(struct pt_regs *ctx)
{
	probe_entry(ctx, true, ENTRY_PLAIN);
	return 0;
}

SEC("uprobe")
int atf_multi_return(struct pt_regs *ctx)
{
	probe_return(ctx, true, false);
	return 0;
}

/*
 * Call-site redirection (user/patch/callsite.c): uprobe_multi links on a module's memfd, one
 * probe per function and kind, never per site (user/patch/callsite_plan.h): E_f (entry), R_f
 * (return; the indirect stubs' shared R, cookie 0), T_f (tail entry); cookies = function ids.
 */
SEC("uprobe")
int atf_site_fn_entry(struct pt_regs *ctx)
{
	probe_entry(ctx, true, ENTRY_FN);
	return 0;
}

SEC("uprobe")
int atf_site_tail(struct pt_regs *ctx)
{
	probe_entry(ctx, true, ENTRY_TAIL);
	return 0;
}

/*
 * Plain entries (user/patch/callsite_plain.c): a function's own plain probe on its `nop; jmp
 * body` block in the module's stub file, for the jumps no stub takes; the same runs as
 * atf_session / atf_multi_entry (ENTRY_PLAIN, the kernel's uretprobe at [sp]), in programs of
 * their own so that their run counts tell these calls from those that reach the entry.
 */
SEC("uprobe")
int atf_site_plain(struct pt_regs *ctx)
{
	return session_run(ctx);
}

SEC("uprobe")
int atf_site_plain_entry(struct pt_regs *ctx)
{
	probe_entry(ctx, true, ENTRY_PLAIN);
	return 0;
}

SEC("uprobe")
int atf_site_fn_return(struct pt_regs *ctx)
{
	probe_return(ctx, true, true);
	return 0;
}

/* Per-function perf-event uprobes: the fallback on kernels without multi links. */
SEC("uprobe")
int atf_uprobe(struct pt_regs *ctx)
{
	probe_entry(ctx, false, ENTRY_PLAIN);
	return 0;
}

SEC("uretprobe")
int atf_uretprobe(struct pt_regs *ctx)
{
	probe_return(ctx, false, false);
	return 0;
}

/* C++ exceptions: the unwinder's hooks and their holds (atf_unwind_raise, atf_unwind_catch). */
#include "cxx_unwind.bpf.h"

#if defined(__TARGET_ARCH_x86)
/* Another tool registering a uprobe while a process runs on our entry trampolines. */
#include "reg_guard.bpf.h"
/* Forked children with optimised probe sites, or with entry trampolines. */
#include "fork_hold.bpf.h"
/* Another tool's uprobe on a function whose callers a call-site stub takes: hand it back. */
#include "cs_handback.bpf.h"
#endif

/* Process lifecycle: fork, exit, exec, ld.so's debug state (atf_fork ... atf_dl_state). */
#include "lifecycle.bpf.h"
