/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The detail lane: registers and a stack snapshot next to an index event.
 * Included by bpf/atftrace.bpf.c after emit_event() (bpf/batch.bpf.h), which it builds on, and
 * site_caller_ret() (bpf/site_unwind.bpf.h); nothing else includes it.
 *
 * When is an event recorded with detail?
 *   - detail_switch (.bss) is on: every event of every traced thread. The recorder writes it
 *     through the skeleton's mmaped .bss: on from the start with --detail=always, on at
 *     --detail-after SEC, toggled by SIGUSR1.
 *   - the thread is inside a --detail-on window (per thread, in task storage): it opens at the
 *     CALL of a trigger function (function id in detail_triggers) and lasts until that call's
 *     RETURN inclusive, or, with --detail-count N / --detail-for D, for N events / D ns from the
 *     trigger's CALL, whichever ends first. A trigger met while a window is open changes nothing.
 * Only CALL and RETURN events carry detail; EXCEPTION events (frames closed by unwinding) are
 * plain, and do not count towards --detail-count.
 *
 * Cost when detail is off: one load of detail_switch and one branch. The window code exists
 * only when detail_on (rodata) is set; the verifier removes it otherwise.
 *
 * Ring record: struct rec_event (type REC_EVENT_DETAIL) + struct rec_detail + stack_bytes bytes;
 * stack_bytes is rodata, so the reserve has a constant size. A failed reserve counts in
 * lost_detail and the event is recorded plain instead (or counted in lost_events if that fails too).
 */
#ifndef ATFTRACE_DETAIL_BPF_H
#define ATFTRACE_DETAIL_BPF_H

/* ---- configuration ----------------------------------------------------------------------- */
/* --detail-on: trigger windows exist (rodata, set by user/probe/probes.c before load). */
const volatile bool detail_on = false;
const volatile __u64 detail_on_count = 0;     /* window = this many detail events (0: no limit) */
const volatile __u64 detail_on_ns = 0;        /* window = this long after the trigger (0: no limit) */

/* The global switch: written by the recorder at run time (probes__detail_set). */
bool detail_switch = false;

/* Smallest page size of any architecture: the stack is mapped at least up to such a boundary. */
#define DETAIL_MIN_PAGE 4096
#define DETAIL_MAX_STACK        256     /* ATF_DETAIL_MAX_STACK */
#define DETAIL_F_STACK_ARGS     0x1u    /* ATF_DETAIL_F_STACK_ARGS: gp[6..7] read from the stack */

struct rec_event_detail {
	struct rec_event ev;
	struct rec_detail d;
	__u8 stack[];
};

/* One --detail-on window of one thread. */
struct detail_window {
	__u32 open;
	__u32 depth;            /* the trigger CALL's depth (until-return windows) */
	__u64 remaining;        /* detail events left (--detail-count) */
	__u64 deadline_ns;      /* events at or after this are outside (--detail-for) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);         /* resized before load to the number of trigger functions */
	__type(key, __u64);             /* function_id */
	__type(value, __u8);
} detail_triggers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct detail_window);
} detail_windows SEC(".maps");

/*
 * detail_window_step - is this event of the current thread inside a --detail-on window?
 * Advances the window: opens it at a trigger's CALL, consumes one event of --detail-count,
 * closes it after the trigger's RETURN or at the deadline.
 */
static __always_inline bool detail_window_step(__u32 kind, __u64 function_id, __u32 depth, __u64 ts)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct detail_window *w = bpf_task_storage_get(&detail_windows, task, NULL, 0);

	if (w && w->open) {
		if (detail_on_count || detail_on_ns) {
			if (!detail_on_ns || ts < w->deadline_ns) {
				if (detail_on_count && --w->remaining == 0)
					w->open = 0;
				return true;
			}
			w->open = 0;
		} else if (depth > w->depth) {
			return true;            /* inside the trigger's frame */
		} else if (depth == w->depth && kind == KIND_RETURN) {
			w->open = 0;            /* the trigger's own RETURN: the last event inside */
			return true;
		} else {
			/* at or below the trigger's depth: its frame is gone (unwound, or its CALL lost) */
			w->open = 0;
		}
	}
	if (kind != KIND_CALL || !bpf_map_lookup_elem(&detail_triggers, &function_id))
		return false;
	if (!w)
		w = bpf_task_storage_get(&detail_windows, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!w) {       /* no memory for the window: this event's detail is lost, and counted */
		count_lost(lost_detail);
		return false;
	}
	w->depth = depth;
	w->remaining = detail_on_count ? detail_on_count - 1 : 0;
	w->deadline_ns = ts + detail_on_ns;
	w->open = !(detail_on_count == 1);
	return true;
}

/* Copy stack_bytes from @sp up, or what is mapped up to the page end when the stack ends sooner. */
static __always_inline __u32 detail_read_stack(__u8 *dst, __u64 sp)
{
	__u32 room;

	if (!stack_bytes)
		return 0;
	if (!bpf_probe_read_user(dst, stack_bytes, (const void *)sp))
		return stack_bytes;
	room = DETAIL_MIN_PAGE - (__u32)(sp & (DETAIL_MIN_PAGE - 1));
	if (room >= stack_bytes)
		return 0;
	/* room < stack_bytes <= 256: the mask changes nothing but tells the verifier */
	asm volatile("" : "+r"(room));
	room &= DETAIL_MAX_STACK - 1;
	if (bpf_probe_read_user(dst, room, (const void *)sp))
		return 0;
	return room;
}

/*
 * struct probe_hit - where a probe hit stands against the function it records, so that the
 * detail lane shows what a plain probe at the function's entry (or after its `ret`) would see,
 * whichever way the call came in (bpf/atftrace.bpf.c, on_entry's ENTRY_* and on_return):
 * @sp: at a CALL, the function's entry sp (its return-address slot): the probe's sp at a
 *      plain probe and at a stub's entry block E_f or tail entry T_f alike; at a RETURN, the
 *      sp after `ret` (entry sp + 8), which is the probe's sp at a return probe but not at a
 *      stub's return block R (one word lower: the stub's `call R` pushed its return);
 * @site_ret: the return point of the call-site stub the call came through (its `call R`), or
 *      0. At a CALL, what the return-address slot holds at E_f (a direct, PLT or indirect
 *      stub); for a tail call, that of the tail chain's call through a stub
 *      (tail_chain_site_ret()), which a plain probe's uretprobe in the chain may have replaced
 *      in the slot by its trampoline since. At a RETURN, the returning frame's (recorded at
 *      E_f) at R, and at a return probe the one it returns into (its ip), if any.
 * The program's own return address is then read from the stub (site_caller_ret()).
 */
struct probe_hit {
	__u64 sp;
	__u64 site_ret;
};

#if defined(__TARGET_ARCH_x86)
/* The kernel's uretprobe trampoline: what a slot hijacked by a return probe holds (0: none). */
static __always_inline __u64 uretprobe_trampoline(struct task_struct *task)
{
	return BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
}

/* Return instances looked at for a hijacked slot: the newest ones (see program_return). */
#define RET_INSTANCES_LOOKED_AT 4

/*
 * program_return - the address a call returns to in the program, as its caller pushed it
 * @slot_addr: the call's return-address slot (its entry sp); @slot: what the slot holds now;
 * @site_ret: probe_hit.site_ret.
 * Through a stub: the constant the stub jumps back to (site + 5, site + L). A slot that a
 * return probe hijacked (a tail call out of a function with a plain probe: its uretprobe
 * replaced the address before the tail-called function's entry): the address the kernel saved
 * in the return instance of that slot, one of the newest (the hijack is that of the frame the
 * tail call replaces; the instances of the calls it made before have returned). Else @slot.
 * Not inlined: one copy for every caller of emit_traced().
 */
static __noinline __u64 program_return(__u64 slot_addr, __u64 slot, __u64 site_ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct return_instance *ri;
	__u64 ret;

	if (site_ret) {
		ret = site_caller_ret(site_ret);
		return ret ? ret : slot;
	}
	if (!slot || slot != uretprobe_trampoline(task))
		return slot;
	ri = BPF_CORE_READ(task, utask, return_instances);
	for (int i = 0; i < RET_INSTANCES_LOOKED_AT && ri; i++) {
		if (BPF_CORE_READ(ri, stack) == slot_addr)
			return BPF_CORE_READ(ri, orig_ret_vaddr);
		ri = BPF_CORE_READ(ri, next);
	}
	return slot;
}
#endif

/*
 * Registers into @r->d per NOTES.md §6 (x86_64) or the spec's DetailFunctionPayload (arm64), and
 * the stack snapshot. Returns the detail flags. On x86_64 a CALL's stack is read from the
 * function's entry sp (@hit->sp): the return address and stack arguments 7 and 8 are [sp],
 * [sp+8], [sp+16], taken from the snapshot when it holds them (one read of user memory instead
 * of two), else read on their own. lr is the program's return address (program_return()), at
 * a CALL and at a RETURN alike, and the snapshot's first word is that address too: what a
 * plain probe sees, also where the slot holds a stub's return point or the uretprobe trampoline.
 */
static __always_inline __u32 detail_fill(struct pt_regs *ctx, const struct probe_hit *hit,
					 __u32 kind, struct rec_event_detail *r)
{
	struct rec_detail *d = &r->d;
	__u32 flags = 0;

#if defined(__TARGET_ARCH_arm64)
	const struct user_pt_regs *u = (const void *)ctx;

	for (int i = 0; i < 8; i++)
		d->gp[i] = u->regs[i];
	d->lr = u->regs[30];
	d->fp = u->regs[29];
	d->sp = u->sp;
	d->stack_size = detail_read_stack(r->stack, d->sp);
#else
	__u64 sp = hit->sp;

	d->fp = PT_REGS_FP(ctx);
	d->sp = sp;
	d->stack_size = detail_read_stack(r->stack, sp);
	if (kind == KIND_CALL) {
		__u64 top[3] = {};      /* return address, then integer arguments 7 and 8 */

		d->gp[0] = PT_REGS_PARM1(ctx);
		d->gp[1] = PT_REGS_PARM2(ctx);
		d->gp[2] = PT_REGS_PARM3(ctx);
		d->gp[3] = PT_REGS_PARM4(ctx);
		d->gp[4] = PT_REGS_PARM5(ctx);
		d->gp[5] = ctx->r9;     /* libbpf 1.1 has no PT_REGS_PARM6 */
		if (stack_bytes >= sizeof(top) && d->stack_size >= sizeof(top)) {
			__builtin_memcpy(top, r->stack, sizeof(top));
			flags |= DETAIL_F_STACK_ARGS;
		} else if (!bpf_probe_read_user(top, sizeof(top), (const void *)sp)) {
			flags |= DETAIL_F_STACK_ARGS;
		} else if (bpf_probe_read_user(&top[0], sizeof(top[0]), (const void *)sp)) {
			top[0] = 0;
		}
		d->lr = program_return(sp, top[0], hit->site_ret);
		d->gp[6] = top[1];
		d->gp[7] = top[2];
		if (stack_bytes >= sizeof(d->lr) && d->stack_size >= sizeof(d->lr))
			__builtin_memcpy(r->stack, &d->lr, sizeof(d->lr));
	} else {
		d->gp[0] = PT_REGS_RC(ctx);
		d->gp[1] = ctx->dx;     /* the high half of a 128-bit INTEGER return */
		for (int i = 2; i < 8; i++)
			d->gp[i] = 0;
		/* a uretprobe sees the address returned to; through a stub, R's ip is R's own */
		d->lr = hit->site_ret ? program_return(0, PT_REGS_IP(ctx), hit->site_ret)
				      : PT_REGS_IP(ctx);
	}
#endif
	return flags;
}

#include "args.bpf.h"

/*
 * One index event with its detail record (and, with @spec, its argument strings); falls back to
 * a plain event when the ring is full.
 */
static __always_inline bool emit_detail(struct pt_regs *ctx, const struct probe_hit *hit,
					struct task_state *st, __u32 kind, __u64 function_id,
					__u32 depth, __u64 pid_tgid, __u64 ts,
					const struct arg_fn_spec *spec)
{
	struct rec_event_detail *r = NULL;

	if (spec && !args_has_strings(spec, kind))
		spec = NULL;    /* registers only: the plain detail record holds them */
	/* the thread's batched events go first; while they cannot, this one joins them plain */
	if (flush_batch(st)) {
		if (spec)
			r = bpf_ringbuf_reserve(&rb, sizeof(*r) + ARGS_OFF + ARGS_BYTES, 0);
		else
			r = bpf_ringbuf_reserve(&rb, sizeof(*r) + stack_bytes, 0);
	}
	if (!r) {
		count_lost(lost_detail);
		return emit_event(st, kind, function_id, depth, pid_tgid, ts);
	}
	r->ev.type = REC_EVENT_DETAIL;
	r->ev.kind = kind;
	r->ev.pid = pid_tgid >> 32;
	r->ev.tid = (__u32)pid_tgid;
	r->ev.ts = ts;
	r->ev.function_id = function_id;
	r->ev.depth = depth;
	r->ev.flags = detail_fill(ctx, hit, kind, r);
	r->d.args_off = spec ? args_fill(spec, kind, &r->d, r->stack) : 0;
	bpf_ringbuf_submit(r, wakeup_flag());
	return true;
}

/*
 * emit_traced - record a CALL or RETURN of a probe hit, with detail when it is wanted
 * @hit: where the hit stands (struct probe_hit). Returns false when nothing could be recorded
 * (counted in lost_events), like emit_event().
 */
static __always_inline bool emit_traced(struct pt_regs *ctx, const struct probe_hit *hit,
					struct task_state *st, __u32 kind, __u64 function_id,
					__u32 depth, __u64 pid_tgid, __u64 ts)
{
	bool want = *(volatile bool *)&detail_switch;
	const struct arg_fn_spec *spec = args_lookup(function_id);   /* -A/-R/--auto-args */

	if (spec && !(kind == KIND_CALL ? spec->at_call : spec->at_return))
		spec = NULL;    /* e.g. -R only: the CALL needs no registers */
	if (detail_on && detail_window_step(kind, function_id, depth, ts))
		want = true;
	if (!want && !spec)
		return emit_event(st, kind, function_id, depth, pid_tgid, ts);
	return emit_detail(ctx, hit, st, kind, function_id, depth, pid_tgid, ts, spec);
}

#endif
