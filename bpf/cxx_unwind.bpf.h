/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The C++ unwinder's hooks (atf_unwind_raise, atf_unwind_catch) and the unwind holds they make.
 * Part of bpf/atftrace.bpf.c, included after the function probes' programs: it uses on_entry's
 * helpers (close_dead_frames, current_state, tgid_traced) and defines the holds' shared state
 * (unwind_holds_off, unwind_inflight, ATF_SIGSTOP) that the registration guard, the fork holds
 * and the process lifecycle hooks (lifecycle.bpf.h) use as well.
 */
#ifndef ATFTRACE_CXX_UNWIND_BPF_H
#define ATFTRACE_CXX_UNWIND_BPF_H

/*
 * C++ exceptions and uretprobes. A uretprobe replaces the return address on the stack with the
 * kernel's trampoline (the first slot of the [uprobes] page), which has no unwind information:
 * the C++ unwinder's search phase stops there and the program calls std::terminate. So while an
 * exception is raised, every pending return instance of the thread must have its original
 * return address back in its stack slot (the kernel keeps slot and address in
 * current->utask->return_instances), and at the catch the frames still alive (slot above the
 * catching sp) must get the trampoline again, so their returns are seen as usual. The kernel
 * discards the return instances of the frames that died, as it does after longjmp.
 *
 * BPF may not write user memory on a locked-down kernel (bpf_probe_write_user), so the writes
 * are done by the recorder while the thread is held still: the hook lists (slot, value it holds
 * now, value to write) in a REC_UNWIND_FIXUP record, sends the thread SIGSTOP (it stops before
 * it runs the unwinder) and forces a ring wakeup; user/record/recorder_unwind.c waits until the thread
 * is stopped, writes the slots and sends SIGCONT. Only throws pay: a thread without a pending
 * uretprobe nor an open traced frame returns at once, and a raise or catch with nothing to
 * write does not stop. Frames entered through call-site stubs get the same treatment
 * (bpf/site_unwind.bpf.h).
 *
 * Holding stops: the recorder sets unwind_holds_off before its last drain and waits until
 * unwind_inflight is 0, so no thread is stopped after the recorder's last look at the ring.
 * The hooks are attached before the function probes and are the last to go: before the holds
 * stop, the recorder has closed the function links and ptrace-stopped every process with
 * uretprobes pending, and afterwards it puts back their real return addresses
 * (user/record/recorder_detach.c), so no trampoline is ever left for an unwinder to meet.
 * The hook counts itself in before it reads the flag (a full barrier between), the recorder
 * writes the flag before it reads the count: one of the two always sees the other.
 *
 * x86_64 only: there the slot is ri->stack, the sp at the entry probe. On arm64 the return
 * address is in the link register at entry and its slot is wherever the prologue puts it.
 */
__u32 unwind_holds_off;         /* written by the recorder (mmaped .bss) */
__u64 unwind_inflight;          /* hooks between their holds_off check and their submit */

#define ATF_SIGSTOP 19          /* same number on x86_64 and arm64 */

#if defined(__TARGET_ARCH_x86)
/*
 * collect_unwind_slots - the stack writes a raise (@rearm false) or a catch at @live_sp
 * (@rearm true) needs, into @rec->pairs and @rec->count. The count lives in the record, not in
 * a register: a register count would be a different known value on every path, and the
 * verifier would walk each combination (it runs out of its 1M instructions).
 */
static __always_inline void collect_unwind_slots(struct rec_unwind_fixup *rec,
						 struct return_instance *ri, __u64 tramp,
						 bool rearm, __u64 live_sp)
{
	__u64 prev_stack = 0;

	for (int i = 0; i < REC_UNWIND_MAX_SLOTS && ri; i++) {
		__u64 stack = BPF_CORE_READ(ri, stack);
		__u64 orig = BPF_CORE_READ(ri, orig_ret_vaddr);
		__u64 slot = 0, expect, value;

		ri = BPF_CORE_READ(ri, next);
		/* a chained instance (tail call) shares its caller's slot: one write is enough */
		if (stack == prev_stack || orig == tramp)
			continue;
		prev_stack = stack;
		if (bpf_probe_read_user(&slot, sizeof(slot), (void *)stack))
			continue;
		if (!rearm && slot == tramp) {
			expect = tramp;
			value = orig;
		} else if (rearm && stack > live_sp && slot == orig) {
			expect = orig;
			value = tramp;
		} else {
			continue;
		}
		__u32 n = rec->count;

		if (n >= REC_UNWIND_MAX_SLOTS)
			break;
		struct rec_unwind_slot *w = &rec->pairs[n & (REC_UNWIND_MAX_SLOTS - 1)];

		w->addr = stack;
		w->expect = expect;
		w->value = value;
		rec->count = n + 1;
	}
	if (ri)
		rec->flags |= REC_UNWIND_F_TRUNCATED;
}

/* Frames entered through call-site stubs: collect_site_slots(). */
#include "site_unwind.bpf.h"

/*
 * hold_for_unwind - list the slot writes (uretprobe trampolines, then call-site stubs), stop
 * the thread, hand the list to the recorder. @live_sp: the raising or the catching sp.
 */
static __always_inline void hold_for_unwind(__u64 pid_tgid, bool rearm, __u64 live_sp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *st = current_state();
	struct return_instance *ri = NULL;
	struct rec_unwind_fixup *rec;
	__u64 tramp = 0;

	if (bpf_core_field_exists(struct uprobe_task, return_instances))
		ri = BPF_CORE_READ(task, utask, return_instances);
	if (ri)
		tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	if (!tramp)
		ri = NULL;
	if (st && !st->depth)
		st = NULL;      /* no open frame: no stub frame either */
	if (!ri && !st)
		return;         /* no pending uretprobe nor traced frame: nothing to do */
	__sync_fetch_and_add(&unwind_inflight, 1);
	if (*(volatile __u32 *)&unwind_holds_off)
		goto out;
	rec = bpf_ringbuf_reserve(&rb, sizeof(*rec), 0);
	if (!rec) {
		count_lost(lost_records);
		goto out;
	}
	rec->type = REC_UNWIND_FIXUP;
	rec->pid = pid_tgid >> 32;
	rec->tid = (__u32)pid_tgid;
	rec->flags = rearm ? REC_UNWIND_F_REARM : 0;
	rec->hold_seq = 0;
	rec->ts = atf_now();
	rec->count = 0;
	if (ri)
		collect_unwind_slots(rec, ri, tramp, rearm, live_sp);
	if (st)
		collect_site_slots(rec, st, rearm, live_sp);
	if (rec->count == 0) {
		bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
		goto out;
	}
	/*
	 * Nobody would resume a thread whose record is not in the ring: signal, then submit. A
	 * process someone else stops is not stopped by us (holds.bpf.h): that stop holds it for
	 * the fix-up all the same, and it is not in the held set, so the recorder leaves it so.
	 */
	rec->hold_seq = hold_begin(task, rec->pid);
	if (rec->hold_seq && bpf_send_signal_thread(ATF_SIGSTOP)) {
		bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
		count_lost(lost_records);
		goto out;
	}
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
out:
	__sync_fetch_and_add(&unwind_inflight, -1);
}
#endif

/* Entry of _Unwind_RaiseException / _Unwind_ForcedUnwind / _Unwind_Resume_or_Rethrow. */
SEC("uprobe")
int atf_unwind_raise(struct pt_regs *ctx)
{
	__u64 pid_tgid = current_pid_tgid();

	if (!tgid_traced(pid_tgid >> 32))
		return 0;
#if defined(__TARGET_ARCH_x86)
	hold_for_unwind(pid_tgid, false, PT_REGS_SP(ctx));
#endif
	return 0;
}

/*
 * Entry of the C++ runtime's catch (__cxa_begin_catch): the frames the exception unwound
 * (entry sp <= this sp; the catching frame itself is above) are closed now, at the catch,
 * and the frames still alive get their uretprobe trampolines back.
 */
SEC("uprobe")
int atf_unwind_catch(struct pt_regs *ctx)
{
	__u64 pid_tgid = current_pid_tgid();

	if (!tgid_traced(pid_tgid >> 32))
		return 0;

	struct task_state *st = current_state();

	/*
	 * Not once the session is ending: the recorder takes every thread's batch after the holds
	 * are off and none is in flight, and nothing may add to a batch after that.
	 */
	__sync_fetch_and_add(&unwind_inflight, 1);
	if (st && st->depth && !*(volatile __u32 *)&unwind_holds_off)
		close_dead_frames(st, PT_REGS_SP(ctx), true, pid_tgid, atf_now());
	__sync_fetch_and_add(&unwind_inflight, -1);
#if defined(__TARGET_ARCH_x86)
	hold_for_unwind(pid_tgid, true, PT_REGS_SP(ctx));
#endif
	return 0;
}

#endif
