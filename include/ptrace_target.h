/* SPDX-License-Identifier: MIT */
/*
 * A traced process held still with ptrace (user/proc/ptrace_target.c), for rewriting its text:
 * every thread seized and stopped, memory read and written through /proc/PID/mem, syscalls
 * run inside it, a launched child run to its entry point. Private to user/probe/, user/patch/
 * and record's run of a launched child to its entry (user/cmd/record_run.c).
 */
#ifndef ATFTRACE_PTRACE_TARGET_H
#define ATFTRACE_PTRACE_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct pt_thread {
	pid_t tid;
	int pending_sig;            /* signal it stopped with: given back at detach */
	struct user_regs_struct regs;
};

struct pt_target {
	pid_t pid;
	bool own_child;             /* our child: its exit status is left for the recorder to reap */
	int mem_fd;                 /* /proc/PID/mem */
	struct pt_thread *threads;
	size_t nthreads, cap;
	uint64_t syscall_insn;      /* address of a `syscall` instruction in the target, or 0 */
};

/**
 * pt_seize_child - before a gated child execs: trace it (it keeps running) so that its exec
 * stops it. Then pt_run_to_entry() after releasing it.
 */
int pt_seize_child(pid_t pid);

/**
 * pt_run_to_entry - wait for the seized child's exec, run it to its program entry (AT_ENTRY,
 * reached after the dynamic loader mapped the libraries it needs) with a hardware breakpoint,
 * and hold it there: @t then holds every thread stopped, as after pt_stop_all(). A child that
 * pt_park_at_entry() ran there already is held where it is.
 */
int pt_run_to_entry(struct pt_target *t, pid_t pid);

/* Run while a launched child is on its way to its entry: the recorder's drain. */
typedef void (*pt_idle_fn)(void *ctx);

/**
 * pt_park_at_entry - as pt_run_to_entry() runs the child to its entry, with @idle(@ctx) run
 * whenever it is not stopped for us: the recorder drains the ring, so the holds at its exec
 * and at the loader's hook (probes for the libraries it maps) are met while it waits, as
 * without ptrace. A SIGSTOP on the way keeps it stopped until a SIGCONT. It stays stopped at
 * its entry, traced, for the pt_run_to_entry() that comes next. 0, -ESRCH when it exited
 * first, or a negative errno (then it is not traced any more, or gone).
 */
int pt_park_at_entry(pid_t pid, pt_idle_fn idle, void *ctx);

/**
 * pt_stop_all - seize and stop every thread of @pid (threads started meanwhile too) and read
 * their registers. -EPERM when another tracer has it, -ESRCH when it is gone.
 */
int pt_stop_all(struct pt_target *t, pid_t pid, bool own_child);

/** pt_detach_all - let every thread run again, each with the signal it stopped with. */
void pt_detach_all(struct pt_target *t);

/**
 * pt_step_out - single-step each thread whose instruction pointer is strictly inside one of
 * @ranges (@n of them), at most @max_steps instructions, until it is out: it runs the
 * instructions it was about to run anyway. A thread that stopped with a signal to take is left
 * where it is. Returns how many threads were moved out, or a negative errno.
 */
int pt_step_out(struct pt_target *t, const uint64_t (*ranges)[2], size_t n, int max_steps);

/** pt_read / pt_write - the target's memory (text too: a write makes the page private). */
int pt_read(struct pt_target *t, uint64_t addr, void *buf, size_t len);
int pt_write(struct pt_target *t, uint64_t addr, const void *buf, size_t len);

/**
 * pt_syscall - run syscall @nr with @args in the first stopped thread, which is then put back
 * exactly as it was (an interrupted syscall of its own restarts when it runs again).
 * Returns 0 with the syscall's return value in @ret, or a negative errno of ptrace itself.
 */
int pt_syscall(struct pt_target *t, long nr, const uint64_t args[6], int64_t *ret);

/**
 * pt_stack_holds - does any thread's stack (from its stack pointer to the end of that mapping,
 * at most 8 MiB) hold a word in [lo, hi) for one of the @n ranges? A signal frame saves the
 * interrupted instruction pointer there: a thread in a signal handler that will return into
 * the middle of replaced bytes. @hit gets one flag per range; empty ranges (hi <= lo) never hit.
 */
int pt_stack_holds(struct pt_target *t, const uint64_t (*ranges)[2], size_t n, bool *hit);

/**
 * pt_stack_replace - in each stopped thread's stack (from its sp to the end of its mapping, at
 * most 8 MiB), every word equal to some @pairs[i][0] gets @pairs[i][1]; @pairs sorted by
 * [0], distinct. Returns the number of words written, or a negative errno.
 */
int pt_stack_replace(struct pt_target *t, const uint64_t (*pairs)[2], size_t n);

#endif
