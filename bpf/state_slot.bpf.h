/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Per-CPU state slots: the function probes' way to a thread's state without a helper call.
 *
 * A thread's state (struct task_state) lives in its task storage (task_states), which costs two
 * calls per program run (bpf_get_current_task_btf, bpf_task_storage_get: about 18 ns a run
 * here, where an empty program run costs 56). Each CPU also has one slot (state_slots, a PERCPU_ARRAY, whose
 * lookup the verifier inlines) that one thread at a time may own: while it does, its live state
 * is the slot's copy, its task storage says so (in_slot = that CPU + 1), and its function probes
 * on that CPU find it with one compare. The owner is named by the run's ctx, the thread's user
 * registers at the top of its own kernel stack (task_pt_regs), unique among live threads; the
 * slot also keeps the owner's task pointer, which the probes read instead of calling for the
 * current task, and whose run context (task->bpf_ctx, set for this very run) must lie on the
 * stack that ctx tops: so a slot whose owner died without its exit hook running (a tp_btf run
 * skipped as recursive under full preemption; a new thread may reuse a dead one's stack, and so
 * its ctx) is not taken for the new thread's, which takes it back on its slow path.
 *
 * The slow path (thread_state): the task storage as before; if its state is in another CPU's
 * slot (the thread migrated), it is copied back and that slot freed; then, if this CPU's slot is
 * free, the state moves in. A thread on a CPU whose slot another thread owns just uses its task
 * storage. Every other user of the state (exit, exec, the C++ unwind hooks, the session's end)
 * finds the live copy through the task storage's in_slot (current_state, live_state) and never
 * moves it; a thread's exit copies it back and frees the slot.
 *
 * Why no lock beyond the owner word. Only the owner thread reads or writes a slot's state (its
 * probes, its exit, exec and unwind hooks, all in its own context), and a thread runs on one CPU
 * at a time, a program run pinned to its CPU (migrate_disable). A free slot is claimed with a
 * compare-and-swap of the owner word 0 -> ctx, and only then written; the owner frees it only
 * after its copy back, with an atomic (a full barrier), so a claimer on that CPU never sees the
 * slot free while the copy reads it. Under full preemption a run may be preempted half-way on
 * its CPU: another thread running there then finds the slot owned (not its ctx) and uses its
 * task storage; it cannot claim or free that slot, since it claims only a free one and frees only
 * the one its own task storage names. The one reader from outside the thread is the session's
 * end (atf_flush_batches), which runs once the function links are closed: no state moves then.
 */
#ifndef ATFTRACE_STATE_SLOT_BPF_H
#define ATFTRACE_STATE_SLOT_BPF_H

/*
 * A run context this close below ctx is on ctx's own kernel stack (THREAD_SIZE, 16 KiB on x86_64
 * and arm64): another thread's stack is a separate vmalloc area with a guard page between. The
 * run context sits near the stack's top; with a larger THREAD_SIZE (KASAN) this still holds.
 */
#define KSTACK_MAX      (16 << 10)

struct state_slot {
	__u64 owner;            /* ctx (task_pt_regs) of the owning thread's runs; 0: free */
	__u64 task;             /* the owner's task_struct */
	struct task_state st;   /* the owner's live state */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state_slot);
} state_slots SEC(".maps");

/*
 * slots_usable - the slots need the task's run context to check an owner (see above); where the
 * kernel lacks it (CO-RE says so at load) every run takes the task storage as before.
 */
#define slots_usable() multi_run_ctx_readable()

/* What a function probe run starts with: run_begin(). */
struct probe_run {
	struct task_struct *task;       /* current: read through the slot, or from the helper */
	struct state_slot *slot;        /* this CPU's slot (NULL only if the lookup failed) */
	bool owned;                     /* the slot holds this thread's live state */
};

/* run_begin - this CPU's slot, and the current task without a call when the slot is ours. */
static __always_inline void run_begin(struct probe_run *run, struct pt_regs *ctx)
{
	__u32 zero = 0;

	run->owned = false;
	run->slot = bpf_map_lookup_elem(&state_slots, &zero);
	if (slots_usable() && run->slot && run->slot->owner == (__u64)ctx) {
		struct task_struct *t = bpf_rdonly_cast((void *)run->slot->task,
							bpf_core_type_id_kernel(struct task_struct));
		void *regs = ctx;

		/*
		 * The owner's run context is on this run's kernel stack: the owner is current. A
		 * difference of two pointers (not of ctx's value the compiler knows equal to owner):
		 * a pointer minus a number is refused.
		 */
		asm volatile("" : "+r"(regs));
		if ((__u64)((char *)regs - (char *)t->bpf_ctx) < KSTACK_MAX) {
			run->task = t;
			run->owned = true;
			return;
		}
	}
	run->task = bpf_get_current_task_btf();
}

/* state_copy - @dst = @src: the header and batch, and the frames that are remembered. */
static __always_inline void state_copy(struct task_state *dst, struct task_state *src)
{
	__u32 depth = src->depth;
	__u64 bytes = (depth < SHADOW_MAX ? depth : SHADOW_MAX) * sizeof(struct shadow_frame);

	bpf_probe_read_kernel(dst, __builtin_offsetof(struct task_state, frames), src);
	asm volatile("" : "+r"(bytes));         /* keep the bound below for the verifier */
	if (bytes > sizeof(dst->frames))
		bytes = sizeof(dst->frames);
	bpf_probe_read_kernel(dst->frames, bytes, src->frames);
}

/* slot_holding - the slot that holds the live copy of the state whose task storage is @home. */
static __always_inline struct state_slot *slot_holding(struct task_state *home)
{
	__u32 zero = 0;

	if (!slots_usable() || !home || !home->in_slot)
		return NULL;
	return bpf_map_lookup_percpu_elem(&state_slots, &zero, home->in_slot - 1);
}

/* live_state - the live copy of the state whose task storage is @home (NULL: none). */
static __always_inline struct task_state *live_state(struct task_state *home)
{
	struct state_slot *s = slot_holding(home);

	return s ? &s->st : home;
}

/* current_state - the current thread's live state, for the hooks that do not move it. */
static __always_inline struct task_state *current_state(void)
{
	return live_state(task_state_of(bpf_get_current_task_btf(), false));
}

/*
 * slot_leave - the state whose task storage is @home goes back there from its slot, which is
 * freed (the owner only: its probes' slow path, its exit).
 */
static __always_inline void slot_leave(struct task_state *home)
{
	struct state_slot *s = slot_holding(home);

	if (!s)
		return;
	state_copy(home, &s->st);
	home->in_slot = 0;
	/* free only after the copy: an atomic is a full barrier */
	__sync_fetch_and_and(&s->owner, 0);
}

/*
 * thread_state - the current thread's live state, for a function probe run
 * @run: from run_begin(); @create: make the task storage when there is none.
 * NULL: no state (and none made).
 */
static __always_inline struct task_state *thread_state(struct probe_run *run, struct pt_regs *ctx,
						       bool create)
{
	struct state_slot *slot = run->slot;
	struct task_struct *task;
	struct task_state *home;

	if (run->owned)
		return &slot->st;
	task = bpf_get_current_task_btf();
	home = task_state_of(task, create);
	if (!home || !slots_usable())
		return home;
	slot_leave(home);
	if (!slot)
		return home;
	/* a slot left by a thread that died unseen (see above) is this stack's to take back */
	if (slot->owner == (__u64)ctx)
		__sync_val_compare_and_swap(&slot->owner, (__u64)ctx, 0);
	if (slot->owner || __sync_val_compare_and_swap(&slot->owner, 0, (__u64)ctx))
		return home;
	state_copy(&slot->st, home);
	slot->task = (__u64)task;
	home->in_slot = slot->st.in_slot = bpf_get_smp_processor_id() + 1;
	run->owned = true;
	return &slot->st;
}

#endif
