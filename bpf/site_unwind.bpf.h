/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * C++ exceptions through call-site stubs (user/patch/callsite_plan.h). A function entered
 * through a stub returns into the stub's return point, its `call R_f`: the frame's
 * return-address slot (its entry sp, shadow_frame.entry_sp) holds that address
 * (shadow_frame.site_ret), which has no unwind information, so the unwinder would stop there
 * and the program would call std::terminate. The same hold as for
 * uretprobe trampolines fixes it (bpf/atftrace.bpf.c, "C++ exceptions and uretprobes"):
 *
 *  - at the raise, each stub frame still alive (entry sp at or above the raising sp) gets the
 *    return address its original call pushed, site + 5: the stack is then exactly the one the
 *    program would have without the redirection, and the unwinder sees the real caller;
 *  - at the catch, each stub frame still alive (entry sp above the catching sp) whose slot
 *    holds site + 5 gets the stub's return point back, so its return is seen at R_f as usual;
 *    the frames the throw unwound were closed as unwound just before (atf_unwind_catch).
 *
 * site + 5 is a constant of the stub, read from the stub itself: the `jmp site+5` that follows
 * its `call R_f`. The frames are the thread's shadow stack, innermost first: a stub frame whose
 * CALL was not recorded (ring full) or that is deeper than SHADOW_MAX is not remembered and
 * keeps the stub's return (a throw through it terminates the program, see README "Call-site
 * redirection").
 * Part of bpf/atftrace.bpf.c, x86_64 only.
 */
#ifndef ATFTRACE_SITE_UNWIND_BPF_H
#define ATFTRACE_SITE_UNWIND_BPF_H

struct site_unwind_ctx {
	struct rec_unwind_fixup *rec;
	struct task_state *st;
	__u64 live_sp;
	__u32 top;              /* remembered frames: min(depth, SHADOW_MAX) */
	bool rearm;
};

/* site + 5 of the stub whose return point is @site_ret (its `jmp site+5`), or 0. */
static __always_inline __u64 site_caller_ret(__u64 site_ret)
{
	__u8 jmp[8] = {};
	__s32 rel;

	if (bpf_probe_read_user(jmp, 5, (void *)(site_ret + ATF_SITE_JMP_FROM_RET)) ||
	    jmp[0] != 0xe9)
		return 0;
	__builtin_memcpy(&rel, &jmp[1], sizeof(rel));
	return site_ret + ATF_SITE_JMP_FROM_RET + 5 + (__s64)rel;
}

/* bpf_loop body: frame top - 1 - @i, if it was entered through a stub; 1 stops. */
static int collect_site_slot(__u32 i, void *data)
{
	struct site_unwind_ctx *c = data;
	struct rec_unwind_fixup *rec = c->rec;
	struct shadow_frame *f;
	__u64 stack, site_ret, back, slot = 0;
	__u32 n;

	if (i >= c->top)
		return 1;
	f = frame_at(c->st, c->top - 1 - i);
	site_ret = f->site_ret;
	stack = f->entry_sp;
	if (!site_ret)
		return 0;
	/* raise: a frame below the raising sp is dead already; catch: only the living ones */
	if (c->rearm ? stack <= c->live_sp : stack < c->live_sp)
		return 0;
	back = site_caller_ret(site_ret);
	if (!back || bpf_probe_read_user(&slot, sizeof(slot), (void *)stack))
		return 0;
	if (c->rearm ? slot != back : slot != site_ret)
		return 0;
	n = rec->count;
	if (n >= REC_UNWIND_MAX_SLOTS) {
		rec->flags |= REC_UNWIND_F_TRUNCATED;
		return 1;
	}
	struct rec_unwind_slot *w = &rec->pairs[n & (REC_UNWIND_MAX_SLOTS - 1)];

	w->addr = stack;
	w->expect = slot;
	w->value = c->rearm ? site_ret : back;
	rec->count = n + 1;
	return 0;
}

/*
 * collect_site_slots - append to @rec the slot writes the stub frames of @st need at a raise
 * (@rearm false; @live_sp: the raising sp) or at a catch at @live_sp (@rearm true).
 */
static __always_inline void collect_site_slots(struct rec_unwind_fixup *rec,
					       struct task_state *st, bool rearm, __u64 live_sp)
{
	__u32 top = st->depth < SHADOW_MAX ? st->depth : SHADOW_MAX;
	struct site_unwind_ctx c = { .rec = rec, .st = st, .live_sp = live_sp, .top = top,
				     .rearm = rearm };

	if (top)
		bpf_loop(SHADOW_MAX, collect_site_slot, &c, 0);
}

#endif
