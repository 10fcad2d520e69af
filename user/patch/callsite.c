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
 *   3. leave out sites whose bytes in memory are not the file's (another tool's breakpoint) or
 *      that a thread's instruction pointer or a word of a stack lies inside, and PLT sites
 *      whose GOT slot does not hold f's address now (not bound yet, or bound to another
 *      definition): those calls keep reaching f's plain probe, or not f at all;
 *   4. make the module's memfd near it (trampoline_area.c): its patch log (include/patch_log.h:
 *      every site's call as the file has it and as we write it, for `atftrace restore -p` should
 *      the session die before its own restore), the bodies (tramp_emit(): f's relocated
 *      instructions, then jmp f+len), then one stub per site;
 *   5. attach the stubs' probe links (probes__attach_call_sites()), then write each site's new
 *      rel32 through /proc/PID/mem.
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
#include "callsite_plan.h"
#include "callsite_plt.h"
#include "patch_log.h"
#include "proc.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"
#include "textfmt.h"

#define PAGE 4096ull

/* One traced function that its redirected calls enter through a body in the memfd. */
struct cs_fn {
	const struct sym_func *f;
	struct tramp_plan plan;
	uint8_t moved[32];
	uint64_t patch_addr;                /* in the process */
	uint32_t slot;                      /* its body: area + slot * TRAMP_SLOT */
	uint32_t nsites;
};

/* One redirected call. */
struct cs_site {
	uint64_t addr;                      /* of the e8, in the process */
	uint64_t file_off;                  /* of the e8, in the module's file */
	uint32_t fn;                        /* index into cs_mod.fns */
	uint64_t got;                       /* a PLT site: its GOT slot in the process, else 0 */
	uint64_t entry;                     /* a PLT site: f's entry in the process */
	uint8_t orig[CS_CALL_LEN];          /* the file's call */
	uint8_t call[CS_CALL_LEN];          /* ours: call stub */
};

struct cs_mod {
	const struct sym_module *m;
	uint64_t dev, ino;
	uint64_t lo, hi;                    /* the module's span in the process */
	uint64_t area;
	uint32_t code_off;                  /* the bodies start after the patch log's pages */
	uint64_t stubs;                     /* offset of the first stub in the memfd */
	int fd;                             /* our copy of the memfd, or -1 */
	uint8_t *log;                       /* the patch log as written (code_off bytes) */
	struct cs_fn *fns;
	size_t nfns;
	struct cs_site *sites;
	size_t nsites;
	size_t skipped_inside, skipped_differs, skipped_range;
	size_t skipped_unbound, skipped_elsewhere;      /* PLT sites whose slot is not f's */
};

struct cs_process {
	pid_t pid;
	uint64_t start_ticks;               /* a reused pid is not ours */
	bool own_child, restored;
	struct cs_mod *mods;
	size_t nmods;
};

/* @size bytes of the file @fd at @off into @buf (grown as needed); false when unreadable. */
static bool read_at(int fd, uint64_t off, uint64_t size, uint8_t **buf, uint64_t *cap)
{
	if (!size || size > (16u << 20))
		return false;
	if (size > *cap) {
		uint8_t *n = realloc(*buf, size);

		if (!n)
			return false;
		*buf = n;
		*cap = size;
	}
	return pread(fd, *buf, size, (off_t)off) == (ssize_t)size;
}

static int cmp_target(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];

	return x < y ? -1 : x > y;
}

/* A call target: its module address, the index of its function in cs_mod.fns, and for a PLT
 * entry the module address of its GOT slot (0 for the function's own entry). */
typedef uint64_t cs_target[3];

/* The module's PLT entries whose slot's symbol names a planned function, added to @targets. */
static int plan_plt(int fd, struct cs_mod *cm, cs_target **targets, size_t *n)
{
	const char **names = calloc(cm->nfns ? cm->nfns : 1, sizeof(*names));
	uint64_t (*plt)[3] = NULL;
	size_t nplt = 0;
	cs_target *nt;
	int err = -ENOMEM;

	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < cm->nfns; i++)
		names[i] = cm->fns[i].f->name;
	err = cs_plt_targets(fd, names, cm->nfns, &plt, &nplt);
	if (err || !nplt)
		goto cleanup;
	nt = realloc(*targets, (*n + nplt) * sizeof(**targets));
	if (!nt) {
		err = -ENOMEM;
		goto cleanup;
	}
	*targets = nt;
	memcpy(*targets + *n, plt, nplt * sizeof(*plt));
	*n += nplt;
cleanup:
	free(names);
	free(plt);
	return err;
}

/* Step 1: the functions that can have a body; their entry addresses and PLT entries, sorted,
 * with indexes. */
static int plan_functions(int fd, struct cs_mod *cm, const struct ta_maps *maps,
			  cs_target **targets, size_t *ntargets)
{
	const struct sym_module *m = cm->m;
	size_t n = 0;
	int err;

	cm->fns = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*cm->fns));
	*targets = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(**targets));
	if (!cm->fns || !*targets)
		return -ENOMEM;
	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *f = &m->funcs[i];
		struct cs_fn *c = &cm->fns[cm->nfns];

		if (!tramp_wanted(f) || f->ifunc_impl ||
		    tramp_plan_relocation(fd, m, i, &c->plan, c->moved, sizeof(c->moved)) != TRAMP_OK)
			continue;
		c->patch_addr = ta_file_addr(maps, cm->dev, cm->ino, f->probe_offset);
		if (!c->patch_addr)
			continue;
		c->f = f;
		(*targets)[n][0] = f->addr;
		(*targets)[n][1] = cm->nfns++;
		(*targets)[n++][2] = 0;
	}
	err = plan_plt(fd, cm, targets, &n);
	if (err)
		return err;
	qsort(*targets, n, sizeof(**targets), cmp_target);
	*ntargets = n;
	return 0;
}

/* Step 2: every call of the module's code to one of @targets, into cm->sites. */
static int find_sites(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		      const cs_target *targets, size_t ntargets)
{
	const struct sym_module *m = cm->m;
	uint64_t *addrs = calloc(ntargets ? ntargets : 1, sizeof(*addrs)), cap = 0;
	size_t scap = 0, ccap = 0;
	struct cs_call *calls = NULL;
	uint8_t *code = NULL;
	int err = -ENOMEM;

	if (!addrs)
		return -ENOMEM;
	for (size_t i = 0; i < ntargets; i++)
		addrs[i] = targets[i][0];
	for (size_t j = 0; j < m->nfuncs; j++) {
		const struct sym_func *s = &m->funcs[j];
		uint64_t hop = s->endbr64 ? 4 : 0, start = s->probe_offset - hop;
		size_t n;

		if (!s->size || !s->probe_offset || s->ifunc_impl ||
		    (j && m->funcs[j - 1].addr == s->addr))
			continue;       /* no code of its own (or an alias of the one before) */
		if (!read_at(fd, start, s->size, &code, &cap))
			continue;
		if (ccap < s->size / CS_CALL_LEN + 1) {
			struct cs_call *nc = realloc(calls, (s->size / CS_CALL_LEN + 1) * sizeof(*nc));

			if (!nc)
				goto cleanup;
			calls = nc;
			ccap = s->size / CS_CALL_LEN + 1;
		}
		n = cs_find_calls(code, s->size, s->addr, addrs, ntargets, calls, ccap);
		for (size_t k = 0; k < n; k++) {
			uint64_t off = start + (calls[k].site - s->addr);
			uint64_t at = ta_file_addr(maps, cm->dev, cm->ino, off);
			const uint64_t *t = targets[calls[k].target];
			struct cs_site *site;

			if (!at)
				continue;
			if (cm->nsites == scap) {
				struct cs_site *ns = realloc(cm->sites, (scap ? 2 * scap : 64) * sizeof(*ns));

				if (!ns)
					goto cleanup;
				cm->sites = ns;
				scap = scap ? 2 * scap : 64;
			}
			site = &cm->sites[cm->nsites++];
			*site = (struct cs_site){ .addr = at, .file_off = off, .fn = (uint32_t)t[1] };
			if (t[2]) {     /* the load bias is the site's: at - its module address */
				site->got = t[2] + (at - calls[k].site);
				site->entry = cm->fns[t[1]].f->addr + (at - calls[k].site);
			}
			memcpy(site->orig, code + (calls[k].site - s->addr), CS_CALL_LEN);
		}
	}
	err = 0;
cleanup:
	free(addrs);
	free(calls);
	free(code);
	return err;
}

/*
 * A PLT site is redirected only when its GOT slot holds f's entry now: the call would reach f
 * anyway. A slot ld.so has not bound yet still points into the PLT; one bound to another
 * definition (an interposed one, LD_PRELOAD) is not f. Counts the ones left out.
 */
static bool plt_bound_to_entry(struct pt_target *pt, struct cs_mod *cm, const struct cs_site *s)
{
	uint64_t slot = 0;

	if (!pt_read(pt, s->got, &slot, sizeof(slot)) && slot == s->entry)
		return true;
	/* unbound: a lazy slot still points back into the module's own PLT (its push) */
	if (slot >= cm->lo && slot < cm->hi)
		cm->skipped_unbound++;
	else
		cm->skipped_elsewhere++;
	return false;
}

/* Step 3: keep the sites whose bytes are the file's and that no thread is inside. */
static int check_sites(struct pt_target *pt, struct cs_mod *cm)
{
	uint64_t (*ranges)[2] = calloc(cm->nsites ? cm->nsites : 1, sizeof(*ranges));
	bool *inside = calloc(cm->nsites ? cm->nsites : 1, sizeof(*inside));
	size_t ok = 0;
	int err = -ENOMEM;

	if (!ranges || !inside)
		goto cleanup;
	for (size_t i = 0; i < cm->nsites; i++) {
		ranges[i][0] = cm->sites[i].addr + 1;      /* at the first byte is fine: the new call */
		ranges[i][1] = cm->sites[i].addr + CS_CALL_LEN;
	}
	err = pt_stack_holds(pt, (const uint64_t (*)[2])ranges, cm->nsites, inside);
	if (err < 0)
		goto cleanup;
	for (size_t i = 0; i < cm->nsites; i++) {
		struct cs_site *s = &cm->sites[i];
		uint8_t now[CS_CALL_LEN];

		for (size_t k = 0; k < pt->nthreads && !inside[i]; k++)
			inside[i] = pt->threads[k].regs.rip >= ranges[i][0] &&
				    pt->threads[k].regs.rip < ranges[i][1];
		if (inside[i]) {
			cm->skipped_inside++;
			continue;
		}
		if (pt_read(pt, s->addr, now, sizeof(now)) || memcmp(now, s->orig, sizeof(now))) {
			cm->skipped_differs++;
			continue;
		}
		if (s->got && !plt_bound_to_entry(pt, cm, s))
			continue;
		cm->sites[ok++] = *s;
	}
	cm->nsites = ok;
cleanup:
	free(ranges);
	free(inside);
	return err;
}

/* Where @c's body is in the memfd. */
static uint64_t body_off(const struct cs_mod *cm, const struct cs_fn *c)
{
	return cm->code_off + (uint64_t)c->slot * TRAMP_SLOT;
}

/*
 * The patch log of @cm's redirected sites into its first code_off bytes of @code: each call
 * (the whole 5-byte instruction) as the file has it and as we write it, so that a session that
 * dies before its restore leaves an area that `atftrace restore -p` can undo.
 */
static int log_sites(struct cs_mod *cm, const struct ta_maps *maps, uint8_t *code)
{
	struct patch_record *recs = calloc(cm->nsites ? cm->nsites : 1, sizeof(*recs));
	int err = -EINVAL;

	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < cm->nsites; i++) {
		const struct cs_site *s = &cm->sites[i];

		if (patch_record_init(&recs[i], PATCH_KIND_CALL_REL32, s->addr, s->file_off, s->orig,
				      s->call, CS_CALL_LEN))
			goto cleanup;
	}
	err = ta_log_encode(cm->m, cm->dev, cm->ino, cm->area, maps, recs, (uint32_t)cm->nsites,
			    code, cm->code_off, &cm->log);
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

	/* bodies only for the functions that have a site */
	for (size_t i = 0; i < cm->nsites; i++)
		cm->fns[cm->sites[i].fn].nsites++;
	for (size_t i = 0; i < cm->nfns; i++)
		if (cm->fns[i].nsites)
			cm->fns[i].slot = (uint32_t)nfns++;
	if (!cm->nsites)
		return 0;
	/* the patch log's pages first, then the bodies and the stubs: all within reach */
	cm->code_off = patch_log_size((uint32_t)cm->nsites);
	if (!cm->code_off)
		return -E2BIG;
	stubs = cm->stubs = cm->code_off + (uint64_t)nfns * TRAMP_SLOT;
	size = (stubs + (uint64_t)cm->nsites * CS_STUB_SLOT + PAGE - 1) & ~(PAGE - 1);
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
		if (c->nsites && tramp_emit(c->moved, &plan, cm->area + body_off(cm, c),
					    code + body_off(cm, c)) != TRAMP_OK)
			c->nsites = 0;              /* its sites are left out below */
	}
	for (size_t i = 0; i < cm->nsites; i++) {
		struct cs_site s = cm->sites[i];
		const struct cs_fn *c = &cm->fns[s.fn];
		uint64_t stub = cm->area + stubs + (uint64_t)ok * CS_STUB_SLOT;

		/* the body's first byte: the trampoline's unprobed nop, then f's instructions */
		if (!c->nsites || !cs_stub_emit(stub, s.addr, cm->area + body_off(cm, c),
						code + stubs + (uint64_t)ok * CS_STUB_SLOT) ||
		    !cs_call_bytes(s.addr, stub, s.call)) {
			memset(code + stubs + (uint64_t)ok * CS_STUB_SLOT, 0xcc, CS_STUB_SLOT);
			cm->skipped_range++;
			continue;
		}
		cm->sites[ok++] = s;
	}
	cm->nsites = ok;
	/* the log is in the file before any rel32 is written */
	err = log_sites(cm, maps, code);
	if (!err && pwrite(cm->fd, code, size, 0) != (ssize_t)size)
		err = -EIO;
cleanup:
	free(code);
	return err;
}

/* Step 5: the stubs' probes, then the rel32s. The number of sites redirected, or -errno. */
static int attach_sites(struct probes *p, struct pt_target *pt, struct cs_mod *cm, pid_t link_pid)
{
	uint64_t *a = calloc(cm->nsites, sizeof(*a)), *b = calloc(cm->nsites, sizeof(*b));
	uint64_t *cookies = calloc(cm->nsites, sizeof(*cookies));
	uint64_t stubs = cm->stubs;
	char path[32];
	size_t n = 0;
	int err = -ENOMEM;

	if (!a || !b || !cookies)
		goto cleanup;
	for (size_t i = 0; i < cm->nsites; i++) {
		const struct sym_func *f = cm->fns[cm->sites[i].fn].f;

		a[i] = stubs + i * CS_STUB_SLOT + CS_PROBE_A;
		b[i] = stubs + i * CS_STUB_SLOT + CS_PROBE_B;
		cookies[i] = (uint64_t)cm->m->module_id << 32 | f->symbol_index;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", cm->fd);
	err = probes__attach_call_sites(p, cm, path, a, b, cookies, (uint32_t)cm->nsites, link_pid);
	if (err < 0)
		goto cleanup;
	/* each site on its own: a site written is whole and probed, the others stay the file's */
	for (n = 0; n < cm->nsites; n++)
		if (pt_write(pt, cm->sites[n].addr, cm->sites[n].call, CS_CALL_LEN))
			break;
	cm->nsites = n;
	err = (int)n;
cleanup:
	free(a);
	free(b);
	free(cookies);
	return err;
}

/* One module, all threads stopped. The number of sites redirected, or -errno. */
static int attach_module(struct probes *p, struct pt_target *pt, const struct ta_maps *maps,
			 struct cs_mod *cm, const struct cs_opts *o)
{
	const struct sym_module *m = cm->m;
	cs_target *targets = NULL;
	size_t ntargets = 0, nfns = 0, nplt = 0, left;
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
	err = plan_functions(fd, cm, maps, &targets, &ntargets);
	if (!err)
		err = find_sites(fd, cm, maps, targets, ntargets);
	close(fd);
	free(targets);
	if (!err)
		err = check_sites(pt, cm);
	if (!err)
		err = write_area(pt, maps, cm);
	if (!err && cm->nsites)
		err = attach_sites(p, pt, cm, o->link_pid);
	if (err < 0)
		cm->nsites = 0;
	for (size_t i = 0; i < cm->nfns; i++)
		cm->fns[i].nsites = 0;
	for (size_t i = 0; i < cm->nsites; i++) {
		nfns += cm->fns[cm->sites[i].fn].nsites++ == 0;
		nplt += cm->sites[i].got != 0;
	}
	left = cm->skipped_inside + cm->skipped_differs + cm->skipped_range + cm->skipped_unbound +
	       cm->skipped_elsewhere;
	if (o->verbose || err < 0)
		fprintf(stderr, "atftrace record: %s: %zu call %s of %zu %s redirected%s%s%s"
			" (%zu direct, %zu through the PLT; %zu left out: %zu with a thread inside, %zu "
			"not the file's bytes, %zu out of reach, %zu PLT slots not bound yet, %zu PLT "
			"slots bound elsewhere)\n", m->path, cm->nsites,
			textfmt_plural(cm->nsites, "site", "sites"), nfns,
			textfmt_plural(nfns, "function", "functions"), err < 0 ? " (" : "",
			err < 0 ? strerror(-err) : "", err < 0 ? ")" : "", cm->nsites - nplt, nplt, left,
			cm->skipped_inside, cm->skipped_differs, cm->skipped_range, cm->skipped_unbound,
			cm->skipped_elsewhere);
	return err;
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
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	const char *why = NULL;
	char unwinder[4096] = "";
	int err;

	*out = NULL;
	*nsites = 0;
	if (!cp || !(cp->mods = calloc(nmods ? nmods : 1, sizeof(*cp->mods)))) {
		free(cp);
		return -ENOMEM;
	}
	cp->pid = pid;
	cp->own_child = o->launched;
	proc_start_time(pid, &cp->start_ticks);
	*out = cp;
	err = o->launched ? pt_run_to_entry(&pt, pid) : pt_stop_all(&pt, pid, false);
	if (err) {
		cp->restored = true;
		if (err == -ESRCH)
			return 0;       /* it exited before its entry: nothing to redirect */
		fprintf(stderr, "atftrace record: process %d: cannot stop it to redirect call sites "
			"(%s%s): plain probes\n", (int)pid, strerror(-err),
			err == -EPERM ? ", traced by another tool?" : "");
		return 0;
	}
	/* a throw would unwind through a stub's return, which has no unwind information */
	if (maps_unwinder(pid, unwinder, sizeof(unwinder)))
		why = "it maps a C++ unwinder";
	else if (ta_seccomp(&pt))
		why = "it has a seccomp filter";
	else if (ta_maps_read(pid, &maps) < 0)
		why = "its maps cannot be read";
	if (why)
		fprintf(stderr, "atftrace record: process %d: no call sites redirected: %s%s%s%s; "
			"plain probes\n", (int)pid, why, *unwinder ? " (" : "", unwinder,
			*unwinder ? ")" : "");
	for (size_t i = 0; !why && i < nmods; i++) {
		cp->mods[i] = (struct cs_mod){ .m = mods[i], .fd = -1 };
		cp->nmods = i + 1;
		if (attach_module(p, &pt, &maps, &cp->mods[i], o) > 0)
			*nsites += cp->mods[i].nsites;
	}
	ta_maps_free(&maps);
	if (!*nsites)
		cp->restored = true;    /* nothing to write back */
	pt_detach_all(&pt);
	return 0;
}

/* Is @s still at its place: its file offset mapped at its address? */
static bool site_mapped(const struct ta_maps *maps, const struct cs_mod *cm, const struct cs_site *s)
{
	return ta_file_addr(maps, cm->dev, cm->ino, s->file_off) == s->addr;
}

int cs_process__restore(struct cs_process *cp)
{
	struct ta_maps maps = { 0 };
	struct pt_target pt;
	uint64_t start = 0;
	int err, n = 0;

	if (!cp || cp->restored)
		return 0;
	cp->restored = true;
	if (!proc_alive(cp->pid) || proc_start_time(cp->pid, &start) || start != cp->start_ticks)
		return 0;       /* gone, or its pid reused */
	err = pt_stop_all(&pt, cp->pid, cp->own_child);
	if (err)
		return err == -ESRCH ? 0 : err;
	err = ta_maps_read(cp->pid, &maps);
	if (err < 0) {
		/* nothing written: the log stays "patched" for atftrace restore */
		pt_detach_all(&pt);
		return err == -ENOENT || err == -ESRCH ? 0 : err;   /* gone meanwhile: nothing to do */
	}
	for (size_t i = 0; i < cp->nmods; i++) {
		struct cs_mod *cm = &cp->mods[i];

		for (size_t k = 0; k < cm->nsites; k++) {
			const struct cs_site *s = &cm->sites[k];
			uint8_t now[CS_CALL_LEN], back[CS_CALL_LEN];

			/* only where our call still is (another tool's int3 over it is kept) */
			if (!site_mapped(&maps, cm, s) || pt_read(&pt, s->addr, now, sizeof(now)) ||
			    !tramp_unpatch_bytes(s->call, s->orig, now, back) ||
			    pt_write(&pt, s->addr, back, sizeof(back)))
				continue;
			n++;
		}
		ta_log_mark_restored(cm->fd, cm->log, cm->code_off);
	}
	ta_maps_free(&maps);
	pt_detach_all(&pt);
	return n;
}

pid_t cs_process__pid(const struct cs_process *cp)
{
	return cp ? cp->pid : 0;
}

void cs_process__free(struct cs_process *cp)
{
	if (!cp)
		return;
	cs_process__restore(cp);
	for (size_t i = 0; i < cp->nmods; i++) {
		if (cp->mods[i].fd >= 0)
			close(cp->mods[i].fd);
		free(cp->mods[i].fns);
		free(cp->mods[i].sites);
		free(cp->mods[i].log);
	}
	free(cp->mods);
	free(cp);
}
