// SPDX-License-Identifier: MIT
/*
 * Call-site redirection in a traced process (include/callsite.h).
 *
 * Order of one attach, every step while all threads are stopped (a failure at any step leaves
 * the sites it concerns as they are: their calls reach the function's plain probe):
 *   1. for each selected function, its first instructions as the entry trampolines move them
 *      (tramp_plan_relocation(): the same checks, from the file's bytes; also for a function
 *      whose first instruction the kernel emulates, which gains here: no uretprobe);
 *   2. every `call f` in the module's code, decoded from the file (cs_find_calls()), and every
 *      `call f@plt` (the module's PLT entries and their GOT slots' symbols: callsite_plt.c);
 *   3. leave out sites whose bytes in memory are not the file's (another tool's breakpoint),
 *      tail calls in a function a thread is inside (instruction pointer or stack), and PLT sites
 *      whose GOT slot does not hold f's address now (not bound yet, or bound to another
 *      definition): those calls keep reaching f's plain probe, or not f at all;
 *   4. make the module's memfd near it (trampoline_area.c): its patch log (include/patch_log.h:
 *      every site's call as the file has it and as we write it, for `atftrace restore -p` should
 *      the session die before its own restore), the bodies (tramp_emit(): f's relocated
 *      instructions, then jmp f+len), each function's block (E_f, R_f, T_f:
 *      user/patch/callsite_plan.h), then one stub per site (a tail site jumps to T_f directly);
 *   5. attach the probes of the function blocks the sites need that are not probed yet
 *      (cs_mod__probe_fns(): per function, never per site), then write each site's new rel32
 *      through /proc/PID/mem.
 * Then the same for the PLT calls of every other mapped module into the traced ones
 * (callsite_xmod.c): their stubs in a second memfd near that module, each jumping to f's body
 * in f's module's memfd, which is made (with a body for every function) when any site needs
 * it. Modules mapped later get the same when ld.so announces them (cs_process__attach_late()).
 * Restoring writes each original rel32 back where ours still is, in a module still mapped
 * where it was, then marks the log restored; the memfd stays mapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "callsite.h"
#include "callsite_ind.h"
#include "callsite_plan.h"
#include "callsite_plt.h"
#include "patch_log.h"
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"
#include "textfmt.h"
#include "callsite_int.h"

#define PAGE 4096ull
#define CS_MAX_CALLERS 1024     /* modules whose PLT calls are redirected, and modules mapped later */

/*
 * The patch log of @cm's redirected sites into its first code_off bytes of @code: each call
 * (the whole 5-byte instruction) as the file has it and as we write it, so that a session that
 * dies before its restore leaves an area that `atftrace restore -p` can undo.
 */
static int log_sites(struct cs_mod *cm, const struct ta_maps *maps, uint8_t *code)
{
	struct patch_record *recs = calloc(cm->nsites + cm->nisites + 1, sizeof(*recs));
	int err = -EINVAL;

	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < cm->nsites; i++) {
		const struct cs_site *s = &cm->sites[i];

		if (patch_record_init(&recs[i], s->len ? PATCH_KIND_JMP_REL32 : PATCH_KIND_CALL_REL32,
				      s->addr, s->file_off, s->orig, s->call, cs_site_len(s)))
			goto cleanup;
	}
	memcpy(recs + cm->nsites, cm->isites, cm->nisites * sizeof(*recs));  /* indirect sites */
	err = ta_log_encode(cm->m, cm->dev, cm->ino, cm->area, maps, recs,
			    (uint32_t)(cm->nsites + cm->nisites), code, cm->code_off, &cm->log);
cleanup:
	free(recs);
	return err;
}

/* Step 4: the memfd with the bodies and the stubs; drops what cannot be encoded. */
static int write_area(struct pt_target *pt, const struct ta_maps *maps, struct cs_mod *cm)
{
	uint64_t lo = 0, hi = 0, size, stubs;
	uint8_t *code = NULL;
	size_t nfns = 0, ok = 0;
	int err;

	/* a body for every function: another module's calls (one mapped later too) may need it */
	for (size_t i = 0; !cm->caller && i < cm->nsites; i++)
		cm->fns[cm->sites[i].fn].nsites++;
	for (size_t i = 0; i < cm->nfns; i++)
		cm->fns[i].slot = (uint32_t)nfns++;
	if (!cm->nsites && !cm->nisites && !cm->wanted)
		return 0;               /* nothing calls a body */
	/* the patch log's pages first, then the bodies, the function blocks and the stubs: all
	 * within reach */
	cm->code_off = patch_log_size((uint32_t)(cm->nsites + cm->nisites));
	if (!cm->code_off)
		return -E2BIG;
	cm->fnblocks = cm->code_off + (uint64_t)nfns * TRAMP_SLOT;
	stubs = cm->stubs = cm->fnblocks + (uint64_t)nfns * CS_FN_SLOT;
	size = stubs + (uint64_t)cm->nsites * CS_STUB_SLOT;
	size += cs_ind__size(cm, size);                                     /* then the indirect block */
	size = (size + cs_plain__size(cm, size) + PAGE - 1) & ~(PAGE - 1); /* then the plain entries */
	ta_module_span(maps, cm->dev, cm->ino, &lo, &hi);
	cm->area = ta_find_gap(maps, lo, hi, size);
	if (!cm->area)
		return -ENOSPC;
	code = malloc(size);
	if (!code)
		return -ENOMEM;
	err = ta_area_create(pt, cm->area, size, &cm->fd);
	if (err < 0)
		goto cleanup;
	memset(code, 0xcc, size);
	for (size_t i = 0; i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];
		struct tramp_plan plan = c->plan;

		plan.patch_addr = c->patch_addr;    /* the moved code runs for the process's addresses */
		c->body = tramp_emit(c->moved, &plan, cm->area + cs_body_off(cm, c),
				     code + cs_body_off(cm, c)) == TRAMP_OK &&
			  cs_fn_block_emit(cm->area + cs_fn_off(cm, c), cm->area + cs_body_off(cm, c),
					   code + cs_fn_off(cm, c));
		if (!c->body) {                     /* its sites are left out */
			memset(code + cs_body_off(cm, c), 0xcc, TRAMP_SLOT);
			memset(code + cs_fn_off(cm, c), 0xcc, CS_FN_SLOT);
		}
	}
	cs_plain__emit(cm, code);
	for (size_t i = 0; i < cm->nsites; i++) {
		struct cs_site s = cm->sites[i];
		const struct cs_fn *c = cm->caller ? NULL : &cm->fns[s.fn];
		uint64_t stub = cm->area + stubs + (uint64_t)ok * CS_STUB_SLOT;
		uint8_t *out = code + stubs + (uint64_t)ok * CS_STUB_SLOT;

		if (s.plain) {  /* a tail call to f's plain entry: its stub slot stays int3 */
			if (cs_plain__aim(cm, &s))
				cm->sites[ok++] = s;
			else
				cm->skipped_range++;
			continue;
		}
		/* a call's stub calls f's block, in another module's memfd through absolute
		 * jumps; a tail call jumps to f's tail entry itself (its stub slot stays int3) */
		if (s.len ? !c || !c->body ||
			    !cs_tail_bytes(s.orig, s.len, s.addr, cm->area + cs_fn_off(cm, c) + CS_FN_TAIL,
					   s.call)
			  : (c ? !c->body || !cs_stub_emit(stub, s.addr, cm->area + cs_fn_off(cm, c), out)
			       : !cs_stub_emit_far(stub, s.addr, s.far, out)) ||
			    !cs_call_bytes(s.addr, stub, s.call)) {
			memset(code + stubs + (uint64_t)ok * CS_STUB_SLOT, 0xcc, CS_STUB_SLOT);
			cm->skipped_range++;
			continue;
		}
		cm->sites[ok++] = s;
	}
	cm->nsites = ok;
	cs_ind__emit(cm, code);
	/* the log is in the file before any rel32 is written */
	err = log_sites(cm, maps, code);
	if (!err && pwrite(cm->fd, code, size, 0) != (ssize_t)size)
		err = -EIO;
cleanup:
	free(code);
	return err;
}

/* Step 5: the probes of the function blocks @cm's sites reach, then the rel32s. The number of
 * sites redirected, or -errno. */
static int attach_sites(struct cs_process *cp, struct probes *p, struct pt_target *pt,
			struct cs_mod *cm, pid_t link_pid)
{
	size_t n;
	int err = 0;

	for (size_t i = 0; i < cm->nsites; i++) {
		const struct cs_site *s = &cm->sites[i];
		struct cs_mod *tm = cm->caller ? &cp->mods[s->tmod] : cm;

		if (s->plain)
			continue;       /* a tail call to f's plain entry: cs_plain__attach */
		tm->fns[s->fn].want |= s->len ? CS_PROBE_T : CS_PROBE_E | CS_PROBE_R;
	}
	for (size_t t = 0; t < cp->nmods && !err; t++)
		if (!cp->mods[t].caller && cp->mods[t].area)
			err = cs_mod__probe_fns(p, &cp->mods[t], link_pid);
	if (!err) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", cm->fd);
		err = cs_plain__attach(p, cm, path, link_pid);
	}
	if (err < 0)
		return err;
	/* each site on its own: a site written is whole and probed, the others stay the file's */
	for (n = 0; n < cm->nsites; n++)
		if (pt_write(pt, cm->sites[n].addr, cm->sites[n].call, cs_site_len(&cm->sites[n])))
			break;
	cm->nsites = n;
	cs_plain__aim_bodies(pt, cm);
	return (int)n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* How many functions @cm's redirected sites call (each function's nsites set). */
static size_t count_fns(struct cs_mod *cm)
{
	uint64_t *v = cm->caller ? calloc(cm->nsites ? cm->nsites : 1, sizeof(*v)) : NULL;
	size_t n = 0;

	for (size_t i = 0; i < cm->nfns; i++)
		cm->fns[i].nsites = 0;
	for (size_t i = 0; !cm->caller && i < cm->nsites; i++)
		n += cm->fns[cm->sites[i].fn].nsites++ == 0;
	for (size_t i = 0; v && i < cm->nsites; i++)
		v[i] = cm->sites[i].cookie;
	if (v && cm->nsites)
		qsort(v, cm->nsites, sizeof(*v), cmp_u64);
	for (size_t i = 0; v && i < cm->nsites; i++)
		n += !i || v[i] != v[i - 1];
	free(v);
	return n;
}

/* Steps 4 and 5 for @cm (its sites found and checked), and its line. Sites redirected or -errno. */
static int commit_module(struct cs_process *cp, struct probes *p, struct pt_target *pt,
			 const struct ta_maps *maps, struct cs_mod *cm, const struct cs_opts *o, int err)
{
	const struct sym_module *m = cm->m;
	size_t nfns, nplt = 0, ntail = 0, nplain = 0, left;

	if (!err && !cm->no_bounds)
		err = write_area(pt, maps, cm);
	if (!err && cm->nsites)
		err = attach_sites(cp, p, pt, cm, o->link_pid);
	if (err >= 0 && cm->nisites && cs_ind__attach(p, pt, cm, o->link_pid, o->verbose) > 0)
		err = (int)(cm->nsites + cm->nisites);
	if (err < 0)
		cm->nsites = cm->nisites = 0;
	nfns = count_fns(cm);
	for (size_t i = 0; i < cm->nsites; i++) {
		nplt += cm->sites[i].got != 0;
		ntail += cm->sites[i].len && !cm->sites[i].plain;
		nplain += cm->sites[i].plain;
	}
	if (cm->no_bounds) {
		if (o->verbose)
			fprintf(stderr, "atftrace record: %s: its PLT calls traced functions, but it has "
				"neither .symtab nor .eh_frame to decode its functions by: not searched\n",
				m->path);
		return 0;
	}
	if (cm->caller && !cm->nsites && !o->verbose)
		return err;
	left = cm->skipped_inside + cm->skipped_differs + cm->skipped_range + cm->skipped_unbound +
	       cm->skipped_elsewhere;
	if (o->verbose || err < 0)
		fprintf(stderr, "atftrace record: %s%s: %zu call %s of %zu %s redirected%s%s%s"
			" (%zu direct, %zu through the PLT; %zu left out: %zu with a thread inside, %zu "
			"not the file's bytes, %zu out of reach, %zu PLT slots not bound yet, %zu PLT "
			"slots bound elsewhere)\n", m->path,
			cm->caller ? " (its calls into the traced modules)" : "", cm->nsites,
			textfmt_plural(cm->nsites, "site", "sites"), nfns,
			textfmt_plural(nfns, "function", "functions"), err < 0 ? " (" : "",
			err < 0 ? strerror(-err) : "", err < 0 ? ")" : "", cm->nsites - nplt, nplt, left,
			cm->skipped_inside, cm->skipped_differs, cm->skipped_range, cm->skipped_unbound,
			cm->skipped_elsewhere);
	if (o->verbose && ntail)
		fprintf(stderr, "atftrace record: %s: %zu of them tail %s (jmp or jcc) in traced "
			"functions, to their functions' tail entries\n", m->path, ntail, textfmt_plural(ntail, "call", "calls"));
	if (o->verbose && (nplain || cm->plain_bodies))
		fprintf(stderr, "atftrace record: %s: %zu of them tail %s (jmp or jcc) to plain entries; "
			"%zu %s aimed at one\n", m->path, nplain, textfmt_plural(nplain, "call", "calls"),
			cm->plain_bodies, textfmt_plural(cm->plain_bodies, "body's first jump",
							 "bodies' first jumps"));
	return err;
}

/* Steps 1 to 3 for the traced module @cm, all threads stopped; 1 when it is mapped. */
static int prepare_module(struct pt_target *pt, const struct ta_maps *maps, struct cs_mod *cm,
			  const struct cs_opts *o)
{
	const struct sym_module *m = cm->m;
	cs_target *targets = NULL;
	size_t ntargets = 0;
	struct stat st;
	int fd, err;

	if (stat(tramp_module_file(m), &st) ||
	    !ta_module_span(maps, st.st_dev, st.st_ino, &cm->lo, &cm->hi))
		return 0;               /* not mapped (yet): its plain probes do */
	cm->dev = st.st_dev;
	cm->ino = st.st_ino;
	fd = open(tramp_module_file(m), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = cs_mod__plan(fd, cm, maps, &targets, &ntargets);
	if (!err)
		err = cs_mod__find_sites(fd, cm, maps, targets, ntargets);
	if (!err)
		err = cs_ind__find(fd, cm, maps);
	if (!err && o->tails)
		err = cs_mod__find_tails(fd, cm, maps, targets, ntargets);
	if (!err)
		err = cs_plain__find(fd, cm, maps, targets, ntargets);
	close(fd);
	free(targets);
	if (!err)
		err = cs_mod__check_sites(pt, cm);
	if (!err) {
		cs_ind__check(pt, cm);
		cs_plain__check(pt, cm);
	}
	return err < 0 ? err : 1;
}

/*
 * The traced modules of @mods not redirected so far that are mapped now, then the other
 * modules' PLT calls into them (those not searched so far), all threads stopped: a traced
 * module's memfd (with a body for each function) is made when its own or another module's
 * sites need it. The number of sites redirected.
 */
static size_t attach_new(struct cs_process *cp, struct probes *p, struct pt_target *pt,
			 struct ta_maps *maps, struct sym_module **mods, size_t nmods,
			 const struct cs_opts *o)
{
	size_t n = 0, first = cp->nmods, callers;
	int err;

	for (size_t i = 0; i < nmods && cp->nmods < cp->capmods; i++) {
		struct cs_mod *cm = &cp->mods[cp->nmods];
		bool known = false;

		for (size_t k = 0; k < cp->nmods && !known; k++)
			known = cp->mods[k].m == mods[i];
		if (known)
			continue;
		*cm = (struct cs_mod){ .m = mods[i], .fd = -1, .ind = !cp->no_ind };
		err = prepare_module(pt, maps, cm, o);
		if (!err) {
			cs_mod__release(cm);        /* not mapped yet: perhaps later */
			continue;
		}
		cp->nmods++;
		if (err < 0) {                      /* said now; no body for the others */
			commit_module(cp, p, pt, maps, cm, o, err);
			cm->nfns = 0;
			cm->committed = true;
		}
	}
	callers = cp->nmods;
	err = cs_xmod__find(cp, pt, maps);
	if (err < 0)
		fprintf(stderr, "atftrace record: process %d: other modules' calls not redirected: %s\n",
			(int)cp->pid, strerror(-err));
	for (size_t i = 0; i < callers; i++) {
		struct cs_mod *cm = &cp->mods[i];

		if (cm->caller)
			continue;
		if (i >= first && !cm->committed) {
			cm->committed = true;
			if (commit_module(cp, p, pt, maps, cm, o, 0) > 0)
				n += cm->nsites + cm->nisites;
		} else if (cm->wanted && !cm->area && write_area(pt, maps, cm) < 0) {
			cm->area = 0;               /* its callers' sites are left out */
		}
		cs_refresh_maps(cp, maps, cm);
	}
	for (size_t i = callers; i < cp->nmods; i++) {
		cs_far_sites(cp, &cp->mods[i]);
		if (commit_module(cp, p, pt, maps, &cp->mods[i], o, 0) > 0)
			n += cp->mods[i].nsites;
		cs_refresh_maps(cp, maps, &cp->mods[i]);
	}
	return n;
}

/* Does the process map a C++ unwinder (libgcc_s, libstdc++, or a static copy in a file)? */
static const char *maps_unwinder(pid_t pid, char *buf, size_t size)
{
	static const char *const names[] = { "_Unwind_RaiseException", "__cxa_begin_catch" };
	char path[64], line[4096], last[4096] = "";
	const char *found = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char perms[5], *file;
		int pos = 0;

		if (sscanf(line, "%*x-%*x %4s %*x %*x:%*x %*u %n", perms, &pos) < 1 || !pos ||
		    perms[2] != 'x' || line[pos] != '/')
			continue;
		file = line + pos;
		file[strcspn(file, "\n")] = 0;
		if (!strcmp(file, last) || strstr(file, " (deleted)"))
			continue;
		snprintf(last, sizeof(last), "%s", file);
		if (sym_elf_defines(file, names, 2)) {
			snprintf(buf, size, "%s", file);
			found = buf;
		}
	}
	fclose(f);
	return found;
}

int cs_process__attach(struct cs_process **out, struct probes *p, struct sym_module **mods,
		       size_t nmods, pid_t pid, const struct cs_opts *o, size_t *nsites)
{
	struct cs_process *cp = calloc(1, sizeof(*cp));
	size_t cap = nmods + CS_MAX_CALLERS;
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	const char *why = NULL;
	char unwinder[4096] = "";
	int err;

	*out = NULL;
	*nsites = 0;
	if (!cp || !(cp->mods = calloc(cap, sizeof(*cp->mods)))) {
		free(cp);
		return -ENOMEM;
	}
	cp->pid = pid;
	cp->capmods = cap;
	cp->own_child = o->launched;
	proc_start_time(pid, &cp->start_ticks);
	*out = cp;
	/* before any stop: a vfork parent does not stop until its child execs or exits, and a
	 * process sharing its memory would run on while the text is written */
	if (!o->launched && proc_mm_shared(pid)) {
		cp->restored = cp->refused = true;
		fprintf(stderr, "atftrace record: process %d: no call sites redirected: another "
			"process shares its memory (a vfork or CLONE_VM child); plain probes\n",
			(int)pid);
		return 0;
	}
	err = o->launched ? pt_run_to_entry(&pt, pid) : pt_stop_all(&pt, pid, false);
	if (err) {
		cp->restored = cp->refused = true;
		if (err == -ESRCH)
			return 0;       /* it exited before its entry: nothing to redirect */
		fprintf(stderr, "atftrace record: process %d: cannot stop it to redirect call sites "
			"(%s%s): plain probes\n", (int)pid, strerror(-err),
			err == -EPERM ? ", traced by another tool?" : "");
		return 0;
	}
	/* without the unwind hooks a throw would unwind through a stub's return, which has no
	 * unwind information */
	if (!o->unwind_hooked && maps_unwinder(pid, unwinder, sizeof(unwinder)))
		why = "it maps a C++ unwinder";
	else if (ta_seccomp(&pt))
		why = "it has a seccomp filter";
	else if (ta_maps_read(pid, &maps) < 0)
		why = "its maps cannot be read";
	cp->refused = why != NULL;
	if (why)
		fprintf(stderr, "atftrace record: process %d: no call sites redirected: %s%s%s%s; "
			"plain probes\n", (int)pid, why, *unwinder ? " (" : "", unwinder,
			*unwinder ? ")" : "");
	if (!why) {
		/* a throw would unwind through an indirect stub's frame: the hooks map direct ones only */
		cp->no_ind = *unwinder || maps_unwinder(pid, unwinder, sizeof(unwinder));
		cp->maps_sig = cs_maps_signature(&maps, cp->exe);
		cp->tails = o->tails;
		*nsites = attach_new(cp, p, &pt, &maps, mods, nmods, o);
	}
	ta_maps_free(&maps);
	if (!*nsites)
		cp->restored = true;    /* nothing to write back */
	pt_detach_all(&pt);
	return 0;
}

int cs_process__attach_late(struct cs_process *cp, struct probes *p, struct sym_module **mods,
			    size_t nmods, const struct cs_opts *o, size_t *nsites)
{
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	char unwinder[4096];
	uint64_t sig, exe[2];
	int err;

	*nsites = 0;
	if (!cp || cp->refused || cp->ended)
		return 0;
	/* the modules it maps the same as when last looked at (the hook runs once per module
	 * announced): nothing to stop it for */
	if (ta_maps_read(cp->pid, &maps) < 0)
		return 0;
	sig = cs_maps_signature(&maps, exe);
	ta_maps_free(&maps);
	if (sig == cp->maps_sig)
		return 0;
	if (exe[0] != cp->exe[0] || exe[1] != cp->exe[1]) {
		cp->refused = true;     /* another program (exec): it keeps plain probes */
		return 0;
	}
	err = pt_stop_all(&pt, cp->pid, cp->own_child);
	if (err)
		return err == -ESRCH ? 0 : err;
	/*
	 * One that maps an unwinder now gets its calls back (below): a throw could unwind through
	 * a stub frame of the sites redirected without the unwind hooks' view (tail and indirect
	 * stubs too), so it goes on with the plain probes, every stub frame alive given its site's
	 * return address (cs_stacks_to_sites), before it can run the unwinder's code.
	 */
	if (maps_unwinder(cp->pid, unwinder, sizeof(unwinder))) {
		fprintf(stderr, "atftrace record: process %d maps a C++ unwinder now (%s): its redirected "
			"calls written back, plain probes from now on\n", (int)cp->pid, unwinder);
		cp->refused = true;
	} else if (ta_maps_read(cp->pid, &maps) == 0) {
		cp->maps_sig = cs_maps_signature(&maps, exe);
		struct cs_opts late = *o;

		late.tails = cp->tails;     /* as decided at the first attach */
		*nsites = attach_new(cp, p, &pt, &maps, mods, nmods, &late);
		if (*nsites)
			cp->restored = false;       /* something to write back now */
	}
	ta_maps_free(&maps);
	pt_detach_all(&pt);
	if (cp->refused && (err = cs_process__restore(cp)) < 0)
		return err;
	return 0;
}
