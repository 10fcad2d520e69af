// SPDX-License-Identifier: MIT
/*
 * Entry trampolines in a traced process (include/trampoline.h).
 *
 * Order of one attach (every step while all threads are stopped; a failure at any step leaves
 * the functions it concerns on plain probes, never half-patched):
 *   1. plan each selected function from the file's bytes (trampoline_plan.c);
 *   2. a launched command: close the plain link attached before its exec (so the text in
 *      memory is the file's again, with no int3 of ours on it);
 *   3. leave out functions with a thread's instruction pointer, or a word of a thread's stack
 *      (a signal frame's saved pointer), strictly inside the replaced bytes, and functions
 *      whose bytes in memory are not the file's;
 *   4. make the module's trampoline file near it (trampoline_area.c), write its patch log
 *      (trampoline_log.c: what the next step changes, for `atftrace restore` should the
 *      session die before its own restore) and, after it, the trampolines;
 *   5. write each `jmp trampoline` through /proc/PID/mem (which makes the page private, the
 *      way the kernel's own uprobe writes do; the uprobes placed afterwards on other functions
 *      of the same page go into that private page);
 *   6. attach the link on the trampoline file (probe sites, function_id cookies), then the plain
 *      link for the module's other functions.
 * Restoring (trampoline_end.c) writes the original bytes back where our jmp still is.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "patch_log.h"
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "trampoline_int.h"
#include "textfmt.h"

#define PAGE 4096ull
#define ENOTSUPP_K 524                      /* the kernel's ENOTSUPP: an instruction uprobes refuse */

int tramp_seize_child(pid_t pid)
{
	return pt_seize_child(pid);
}

/* Steps 3 to 5 for the planned functions @tf of @tm; the rest keep their reason. */
static void patch_module(struct pt_target *pt, const struct ta_maps *maps, struct tramp_mod *tm,
			 struct tramp_fn *tf, size_t n, uint64_t dev, uint64_t ino)
{
	uint64_t (*ranges)[2] = calloc(n ? n : 1, sizeof(*ranges)), lo = 0, hi = 0, size;
	bool *on_stack = calloc(n ? n : 1, sizeof(*on_stack));
	uint8_t *code = NULL, *slots;
	uint32_t log_size;
	size_t ok = 0, live = n;         /* tf[0..live) still hold TRAMP_OK functions */

	if (!ranges || !on_stack)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		uint64_t file_off = tf[i].f->probe_offset;

		uint8_t now[sizeof(tf[i].moved)];

		tf[i].patch_addr = ta_file_addr(maps, dev, ino, file_off);
		/* an empty range when not mapped, or not the file's code (never stepped through) */
		if (!tf[i].patch_addr || pt_read(pt, tf[i].patch_addr, now, tf[i].plan.patch_len) ||
		    memcmp(now, tf[i].moved, tf[i].plan.patch_len))
			continue;
		ranges[i][0] = tf[i].patch_addr + 1;       /* at the first byte is fine: same entry */
		ranges[i][1] = tf[i].patch_addr + tf[i].plan.patch_len;
	}
	/* a thread a few instructions into a function is stepped past the bytes to replace */
	if (pt_step_out(pt, (const uint64_t (*)[2])ranges, n, 8) < 0 ||
	    pt_stack_holds(pt, (const uint64_t (*)[2])ranges, n, on_stack) < 0)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		struct sym_func *f = tf[i].f;
		uint8_t now[sizeof(tf[i].moved)];

		if (!tf[i].patch_addr) {
			f->tramp = TRAMP_NOT_MAPPED;
			continue;
		}
		for (size_t k = 0; k < pt->nthreads && !on_stack[i]; k++)
			on_stack[i] = pt->threads[k].regs.rip >= ranges[i][0] &&
				       pt->threads[k].regs.rip < ranges[i][1];
		if (on_stack[i]) {
			f->tramp = TRAMP_THREAD_INSIDE;
			continue;
		}
		if (pt_read(pt, tf[i].patch_addr, now, tf[i].plan.patch_len) ||
		    memcmp(now, tf[i].moved, tf[i].plan.patch_len)) {
			f->tramp = TRAMP_TEXT_DIFFERS;
			if (!tramp_only_breakpoint(now, tf[i].moved, tf[i].plan.patch_len)) {
				f->tramp = TRAMP_REWRITTEN;     /* no probe at all over it */
				f->selected = false;
			}
			continue;
		}
		tf[ok++] = tf[i];
	}
	live = ok;
	if (!ok)
		goto cleanup;
	/* the patch log's pages first (trampoline_log.c), then the trampolines: all within reach */
	log_size = patch_log_size((uint32_t)ok);
	size = log_size + (((uint64_t)ok * TRAMP_SLOT + PAGE - 1) & ~(PAGE - 1));
	ta_module_span(maps, dev, ino, &lo, &hi);
	tm->area = log_size ? ta_find_gap(maps, lo, hi, size) : 0;
	code = malloc(size);
	if (!code || !tm->area || ta_seccomp(pt) || ta_area_create(pt, tm->area, size, &tm->fd) < 0) {
		bool sandboxed = code && tm->area && ta_seccomp(pt);

		for (size_t i = 0; i < ok; i++)
			tf[i].f->tramp = sandboxed ? TRAMP_SECCOMP : TRAMP_NO_AREA;
		goto cleanup;
	}
	memset(code, 0xcc, size);
	slots = code + log_size;
	tm->code_off = log_size;
	tm->fns = tf;
	tm->nfns = 0;
	for (size_t i = 0; i < ok; i++) {
		struct tramp_fn t = tf[i];
		uint64_t at = tramp_slot_addr(tm, (uint32_t)tm->nfns);
		enum tramp_reason r;

		t.plan.patch_addr = t.patch_addr;  /* the moved code runs for the process's addresses */
		r = tramp_emit(t.moved, &t.plan, at, slots + tm->nfns * TRAMP_SLOT);
		if (r == TRAMP_OK && !tramp_jmp(t.patch_addr, at, t.jmp))
			r = TRAMP_RANGE;
		if (r != TRAMP_OK) {
			memset(slots + tm->nfns * TRAMP_SLOT, 0xcc, TRAMP_SLOT);
			t.f->tramp = (uint8_t)r;
			continue;
		}
		t.slot = (uint32_t)tm->nfns;
		tm->fns[tm->nfns++] = t;
	}
	/* the log is in the file before any jmp is written: a session killed at any point after
	 * leaves an area that says what to undo */
	if (tramp_log_init(tm, maps, code, log_size) < 0 ||
	    pwrite(tm->fd, code, size, 0) != (ssize_t)size) {
		for (size_t i = 0; i < tm->nfns; i++)
			tm->fns[i].f->tramp = TRAMP_NO_AREA;
		tm->nfns = 0;
	}
cleanup:
	/* whatever stopped us before the trampolines were written: those keep plain probes */
	for (size_t i = 0; tm->fns != tf && i < live; i++)
		if (tf[i].f->tramp == TRAMP_OK)
			tf[i].f->tramp = TRAMP_NO_AREA;
	free(code);
	free(ranges);
	free(on_stack);
}

int tramp_fn_write_original(struct pt_target *pt, const struct tramp_fn *t)
{
	uint8_t now[TRAMP_JMP_LEN], out[TRAMP_JMP_LEN];
	int err = pt_read(pt, t->patch_addr, now, TRAMP_JMP_LEN);

	if (err)
		return err;
	if (!tramp_unpatch_bytes(t->jmp, t->moved, now, out))
		return 0;
	return pt_write(pt, t->patch_addr, out, TRAMP_JMP_LEN) ?: 1;
}

/* Write @on ? jmp : original bytes for the module's patched functions; how many were written. */
static size_t write_entries(struct pt_target *pt, struct tramp_mod *tm, bool on)
{
	size_t n = 0;

	for (size_t i = 0; i < tm->nfns; i++) {
		struct tramp_fn *t = &tm->fns[i];

		if (on) {
			if (pt_write(pt, t->patch_addr, t->jmp, TRAMP_JMP_LEN))
				break;
		} else if (tramp_fn_write_original(pt, t) <= 0) {
			continue;
		}
		n++;
	}
	return n;
}

/* The link on the trampoline file; on failure the functions go back to their own bytes. */
static int attach_tramp_link(struct probes *p, struct pt_target *pt, struct tramp_mod *tm,
			     pid_t link_pid)
{
	uint64_t *offs = calloc(tm->nfns, sizeof(*offs)), *cookies = calloc(tm->nfns, sizeof(*cookies));
	char path[32];
	int err = -ENOMEM;
	size_t written = 0;

	if (!offs || !cookies)
		goto fail;
	for (size_t i = 0; i < tm->nfns; i++) {
		offs[i] = tramp_slot_off(tm, tm->fns[i].slot);      /* the probe site opens the slot */
		cookies[i] = (uint64_t)tm->m->module_id << 32 | tm->fns[i].f->symbol_index;
	}
	written = write_entries(pt, tm, true);
	if (written != tm->nfns) {
		err = -EIO;
		goto fail;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", tm->fd);
	/* owned by the functions' array, which stays where it is when the module list grows */
	err = probes__attach_sites(p, tm->fns, path, offs, cookies, (uint32_t)tm->nfns, link_pid);
	if (err)
		goto fail;
	for (size_t i = 0; i < tm->nfns; i++) {
		tm->fns[i].f->tramp = TRAMP_OK;
		tm->fns[i].f->via_tramp = true;
	}
	free(offs);
	free(cookies);
	return 0;
fail:
	/* the jmps already written go: no function is left without its probe */
	for (size_t i = 0; i < tm->nfns; i++)
		tm->fns[i].f->tramp = TRAMP_LINK_FAILED;
	tm->nfns = written;
	write_entries(pt, tm, false);
	tm->nfns = 0;
	free(offs);
	free(cookies);
	return err;
}

/* Say which functions keep a plain probe, and why (record -v). */
static void report(const struct tramp_mod *tm)
{
	size_t counts[TRAMP_NREASONS] = { 0 };
	const struct sym_module *m = tm->m;

	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];

		if (!tramp_wanted(f) || f->tramp >= TRAMP_NREASONS)
			continue;
		counts[f->tramp]++;
		if (f->tramp != TRAMP_OK && f->tramp != TRAMP_NOT_NEEDED)
			fprintf(stderr, "atftrace record: %s: %s: plain probe (%s)\n", m->path,
				f->name, tramp_reason_str(f->tramp));
	}
	fprintf(stderr, "atftrace record: %s: %zu %s through trampolines, %zu at nop5 sites",
		m->path, counts[TRAMP_OK], textfmt_plural(counts[TRAMP_OK], "function", "functions"),
		counts[TRAMP_NOT_NEEDED]);
	for (int r = TRAMP_SHORT; r < TRAMP_NREASONS; r++)
		if (counts[r])
			fprintf(stderr, ", %zu %s", counts[r], tramp_reason_str((enum tramp_reason)r));
	fprintf(stderr, "\n");
}

static void mark_all(struct sym_module *m, enum tramp_reason r)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		if (tramp_wanted(&m->funcs[i]))
			m->funcs[i].tramp = (uint8_t)r;
}

/*
 * Attach [lo, hi) of @offs/@cookies as one link, or, when the kernel refuses one of them
 * (an instruction its uprobes cannot take), as smaller links without the ones it refuses.
 * Returns how many are attached, or -errno for anything but a refused instruction.
 */
static int attach_split(struct probes *p, const struct sym_module *m, const uint64_t *offs,
			const uint64_t *cookies, uint32_t n, pid_t pid)
{
	int err, a, b;

	if (!n)
		return 0;
	err = probes__attach_sites(p, m, tramp_module_file(m), offs, cookies, n, pid);
	if (!err)
		return (int)n;
	if (err != -ENOTSUPP_K && err != -EINVAL && err != -EOPNOTSUPP)
		return err;
	if (n == 1)
		return 0;       /* refused: left out, and counted by the caller */
	a = attach_split(p, m, offs, cookies, n / 2, pid);
	if (a < 0)
		return a;
	b = attach_split(p, m, offs + n / 2, cookies + n / 2, n - n / 2, pid);
	return b < 0 ? b : a + b;
}

/* Plain probes on the functions without a trampoline (or, with @via_tramp, on those with one).
 * The number attached, or -errno. */
static int attach_plain(struct probes *p, struct sym_module *m, pid_t pid, bool verbose,
			bool via_tramp)
{
	uint64_t *offs = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*offs));
	uint64_t *cookies = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*cookies));
	uint32_t n = 0, nostep = 0;
	int got = -ENOMEM;

	if (!offs || !cookies)
		goto cleanup;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];

		if (!tramp_wanted(f) || f->via_tramp != via_tramp)
			continue;
		if (!sym_plain_probe_ok(f)) {     /* the kernel's single-step would corrupt it */
			nostep++;
			if (verbose)
				fprintf(stderr, "atftrace record: %s: %s: not traced (EVEX first "
					"instruction, no trampoline: %s)\n", m->path, f->name,
					tramp_reason_str(f->tramp));
			continue;
		}
		offs[n] = f->probe_offset;
		cookies[n++] = (uint64_t)m->module_id << 32 | f->symbol_index;
	}
	if (nostep)
		fprintf(stderr, "atftrace record: %s: %u %s that start%s with an AVX-512 (EVEX) "
			"instruction got no trampoline: not traced (a plain probe's single-step would "
			"corrupt %s)\n", m->path, nostep, textfmt_plural(nostep, "function", "functions"),
			nostep == 1 ? "s" : "", nostep == 1 ? "it" : "them");
	got = attach_split(p, m, offs, cookies, n, pid);
	if (got >= 0 && (uint32_t)got != n)
		fprintf(stderr, "atftrace record: %s: the kernel refused to probe %u %s%s\n",
			m->path, n - (uint32_t)got, textfmt_plural(n - (uint32_t)got, "function", "functions"),
			verbose ? "" : " (their first instruction)");
cleanup:
	free(offs);
	free(cookies);
	return got;
}

/* One module, all threads stopped: plan, patch, attach. Plain probes attached, or -errno. */
static int attach_one(struct probes *p, struct pt_target *pt, const struct ta_maps *maps,
		      struct tramp_mod *tm, const struct tramp_opts *o, bool no_guard)
{
	struct sym_module *m = tm->m;
	struct tramp_fn *tf = NULL;
	struct stat st;
	uint64_t lo, hi;
	size_t n = 0;
	int fd = -1, plain;

	if (!pt || stat(tramp_module_file(m), &st) ||
	    !ta_module_span(maps, st.st_dev, st.st_ino, &lo, &hi)) {
		mark_all(m, no_guard ? TRAMP_NO_GUARD : pt ? TRAMP_NOT_MAPPED : TRAMP_NO_PTRACE);
		/* a launched command's plain link, attached before its exec, stays */
		return o->launched ? 0 : probes__attach_module(p, m, o->link_pid);
	}
	tm->dev = st.st_dev;
	tm->ino = st.st_ino;
	fd = open(tramp_module_file(m), O_RDONLY | O_CLOEXEC);
	tf = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*tf));
	for (size_t i = 0; fd >= 0 && tf && i < m->nfuncs; i++) {
		struct sym_func *f = &m->funcs[i];

		if (!tramp_wanted(f))
			continue;
		f->tramp = (uint8_t)tramp_plan_function(fd, m, i, &tf[n].plan, tf[n].moved,
							sizeof(tf[n].moved));
		if (f->tramp == TRAMP_OK)
			tf[n++].f = f;
	}
	if (fd >= 0)
		close(fd);
	if (!tf)
		return -ENOMEM;
	/* the plain probes placed before a launched command's exec: the text is the file's again */
	probes__detach_owner(p, m);
	patch_module(pt, maps, tm, tf, n, st.st_dev, st.st_ino);
	if (tm->fns != tf)
		free(tf);
	if (tm->nfns)
		attach_tramp_link(p, pt, tm, o->link_pid);
	if (o->verbose)
		report(tm);
	/* a process killed meanwhile: nothing to attach, its end ends the session */
	if (!proc_alive(pt->pid))
		return 0;
	plain = attach_plain(p, m, o->link_pid, o->verbose, false);
	if (plain == -ESRCH && !proc_alive(pt->pid))
		plain = 0;
	if (plain < 0)
		return plain;
	return plain + (int)tm->nfns;
}

int tramp_process__attach(struct tramp_process **out, struct probes *p, struct sym_module **mods,
			  size_t nmods, pid_t pid, const struct tramp_opts *o, size_t *ntramp)
{
	struct tramp_process *tp = calloc(1, sizeof(*tp));
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	bool stopped = false;
	int err = 0, err2, total = 0;

	*out = NULL;
	*ntramp = 0;
	if (!tp || !(tp->mods = calloc(nmods ? nmods : 1, sizeof(*tp->mods)))) {
		free(tp);
		return -ENOMEM;
	}
	tp->pid = pid;
	proc_start_time(pid, &tp->start_ticks);
	tp->own_child = o->launched;
	tp->verbose = o->verbose;
	tp->probes = p;
	tp->link_pid = o->link_pid;
	tp->nmods = nmods;
	/* a vfork parent does not stop until its child execs or exits (the attach would wait for
	 * it), and a process sharing its memory would run on while the text is written */
	err = o->launched ? pt_run_to_entry(&pt, pid) :
	      proc_mm_shared(pid) ? -EBUSY : pt_stop_all(&pt, pid, false);
	if (err == -ESRCH && o->launched) {
		tp->restored = true;    /* it exited before its entry: nothing was patched */
		*out = tp;
		return 0;
	}
	if (err)
		fprintf(stderr, "atftrace record: process %d: cannot stop it to place trampolines "
			"(%s%s): plain probes\n", (int)pid, strerror(-err),
			err == -EPERM ? ", traced by another tool?" :
			err == -EBUSY ? ": another process shares its memory, a vfork or CLONE_VM child" :
			"");
	stopped = !err;
	if (stopped && ta_maps_read(pid, &maps) < 0)
		memset(&maps, 0, sizeof(maps));
	/* no function is patched unless another tool's later uprobe on it can be met */
	err = stopped ? probes__guard_ready(p) : 0;
	if (err) {
		fprintf(stderr, "atftrace record: process %d: no entry trampolines without the "
			"registration guard (%s%s): plain probes\n", (int)pid, strerror(-err),
			err == -EOPNOTSUPP ? "; a recorder in a pid namespace has none" : "");
		tp->no_guard = true;
	}
	err = 0;
	for (size_t i = 0; i < nmods && err >= 0; i++) {
		tp->mods[i] = (struct tramp_mod){ .m = mods[i], .fd = -1 };
		err = attach_one(p, stopped && !tp->no_guard ? &pt : NULL, &maps, &tp->mods[i], o,
				 tp->no_guard);
		if (err >= 0) {
			total += err;
			*ntramp += tp->mods[i].nfns;
		}
	}
	ta_maps_free(&maps);
	/*
	 * Guarded from here on. Not before: a stop the guard sends while the threads are held
	 * would cut into the syscalls run inside the process to map the trampolines.
	 */
	if (*ntramp && !(tp->guarded = (err2 = probes__guard_pid(p, pid, true)) == 0))
		fprintf(stderr, "atftrace record: process %d: cannot guard its trampolines (%s): "
			"another tool's uprobe on a patched function would crash it\n", (int)pid,
			strerror(-err2));
	if (stopped)
		pt_detach_all(&pt);
	*out = tp;
	return err < 0 ? err : total;
}

/* ---- for modules mapped later (trampoline_late.c, trampoline_int.h) ---- */

int tramp_mod_attach(struct probes *p, struct pt_target *pt, const struct ta_maps *maps,
		     struct tramp_mod *tm, const struct tramp_opts *o)
{
	return attach_one(p, pt, maps, tm, o, false);
}

int tramp_mod_attach_plain(struct probes *p, struct sym_module *m, pid_t pid, bool verbose,
			   bool via_tramp)
{
	return attach_plain(p, m, pid, verbose, via_tramp);
}

size_t tramp_mod_write(struct pt_target *pt, struct tramp_mod *tm, bool on)
{
	return write_entries(pt, tm, on);
}

void tramp_mod_report(const struct tramp_mod *tm)
{
	report(tm);
}

void tramp_mark_all(struct sym_module *m, enum tramp_reason r)
{
	mark_all(m, r);
}
