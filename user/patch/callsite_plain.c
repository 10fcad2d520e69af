// SPDX-License-Identifier: MIT
/*
 * Plain entries (callsite_int.h): the calls that reach a traced function f by a `jmp`, where no
 * call-site stub can take them, enter f through a per-function block in the module's memfd,
 *     P_f:  nop                  f's own plain probe: entry and return (the session's link kind,
 *                                the session or multi entry/return pair), cookie f's id
 *           jmp body_f           f's first instructions, relocated, then jmp f+len
 * instead of f's entry, whose first instruction the kernel may have to single-step (mov, sub,
 * lea: about 10 us a call, against about 1 us for the emulated nop). Its probe is exactly f's
 * plain probe, on another address: the kernel's uretprobe takes the return address at [sp], as
 * at f's entry, and BPF sees an ENTRY_PLAIN entry with the same registers and sp (so tail_call()
 * and close_dead_frames() decide as they would at f's entry). Two kinds of jumps are aimed at it:
 *   - plain tail sites: every `jmp f`, `jmp f@plt` (its GOT slot holding f) or `jcc f` rel32 in
 *     the module's code (every function, static ones by .symtab or .eh_frame) that no tail stub
 *     takes: in functions not traced, or when tail stubs are off (record-time filters, a hooked
 *     C++ process). Only the rel32 is written, logged as PATCH_KIND_JMP_REL32 with the other
 *     sites (so the session's end, a hand-back of f and `atftrace restore -p` put it back). No
 *     thread check beyond the bytes being the file's: the jump enters f exactly as before, plain
 *     probe and all, so a thread inside the jumping function changes nothing;
 *   - a body's first instruction that is a `jmp` or `jcc` to a traced f (or to f's PLT entry,
 *     its slot holding f): a function that begins by jumping (PyLong_FromSize_t: jmp
 *     PyLong_FromUnsignedLong). The body is ours: its rel32 is aimed at P_f in the process once
 *     P_f's probes are attached, and given its own target back by a hand-back of f.
 * The block lies after the indirect block, apart from the bodies and stubs (stub k stays site
 * k's: a plain tail site's stub slot is left int3).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "callsite_bounds.h"
#include "callsite_ind.h"
#include "probes.h"
#include "ptrace_target.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"
#include "callsite_int.h"

#define CS_PLAIN_SLOT 8      /* nop; jmp rel32 (the rest int3) */

/* The plain entry at @at: `nop` (its probe), then `jmp @body`. False when out of reach. */
static bool plain_emit(uint64_t at, uint64_t body, uint8_t out[CS_PLAIN_SLOT])
{
	memset(out, 0xcc, CS_PLAIN_SLOT);
	out[0] = 0x90;
	return tramp_jmp(at + 1, body, out + 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Each function whose first instruction jumps to one of @targets (@addrs, their addresses). */
static void find_body_jumps(struct cs_mod *cm, const cs_target *targets, const uint64_t *addrs,
			    size_t ntargets)
{
	for (size_t i = 0; i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];
		uint64_t bias = c->patch_addr - c->plan.patch_addr;     /* process - module address */
		uint32_t n;
		int64_t rel;
		bool jcc;
		int k;

		c->jmp_to = 0;
		if (!cs_jump_form(c->moved, c->plan.patch_len, &rel, &n, &jcc))
			continue;
		k = cs_target_index(c->plan.patch_addr + n + (uint64_t)rel, addrs, ntargets);
		if (k < 0)
			continue;
		c->jmp_to = (uint32_t)targets[k][1] + 1;
		c->jmp_got = targets[k][2] ? targets[k][2] + bias : 0;
		c->jmp_entry = targets[k][2] ? cm->fns[targets[k][1]].f->addr + bias : 0;
	}
}

/* The file offsets no plain tail site may have, sorted: the tail stubs' sites, and every probed
 * function's entry (a jump there is that function's first instruction, under its probe). */
static uint64_t *taken_offsets(const struct cs_mod *cm, size_t *n)
{
	const struct sym_module *m = cm->m;
	uint64_t *v = malloc((cm->nsites + m->nfuncs + 1) * sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < cm->nsites; i++)
		if (cm->sites[i].len)
			v[(*n)++] = cm->sites[i].file_off;
	for (size_t i = 0; v && i < m->nfuncs; i++)
		if (m->funcs[i].selected && !m->funcs[i].skip)
			v[(*n)++] = m->funcs[i].probe_offset;
	if (v)
		qsort(v, *n, sizeof(*v), cmp_u64);
	return v;
}

int cs_plain__find(int fd, struct cs_mod *cm, const struct ta_maps *maps,
		   const cs_target *targets, size_t ntargets)
{
	uint64_t *addrs = cs_target_addrs(targets, ntargets), *taken = NULL, cap = 0;
	size_t scap = cm->nsites, tcap = 0, nfuncs = 0, ntaken = 0;
	struct cs_tail_call *tails = NULL;
	struct cs_range *funcs = NULL;
	enum cs_ranges_from from;
	uint8_t *code = NULL;
	int err = -ENOMEM;

	if (!addrs || !(taken = taken_offsets(cm, &ntaken)))
		goto cleanup;
	find_body_jumps(cm, targets, addrs, ntargets);
	err = cs_func_ranges(fd, &funcs, &nfuncs, &from);
	if (err)
		goto cleanup;
	err = -ENOMEM;
	for (size_t j = 0; j < nfuncs; j++) {
		const struct cs_range *r = &funcs[j];
		size_t n;

		if (!cs_read_at(fd, r->off, r->size, &code, &cap))
			continue;
		void *grown = cs_reserve(tails, &tcap, r->size / CS_TAIL_JMP_LEN + 1, sizeof(*tails));
		if (!grown)
			goto cleanup;
		tails = grown;
		n = cs_find_tails(code, r->size, r->addr, addrs, ntargets, tails, tcap);
		for (size_t k = 0; k < n; k++) {
			uint64_t off = r->off + (tails[k].site - r->addr);
			size_t before = cm->nsites;

			if (bsearch(&off, taken, ntaken, sizeof(*taken), cmp_u64))
				continue;
			if (cs_tail__add(cm, &scap, &tails[k], targets, r->addr, r->size, r->off, code,
					 maps))
				goto cleanup;
			if (cm->nsites > before) {  /* no function to keep threads out of */
				cm->sites[before].plain = true;
				cm->sites[before].in_lo = cm->sites[before].in_hi = 0;
			}
		}
	}
	err = 0;
cleanup:
	free(addrs);
	free(taken);
	free(tails);
	free(funcs);
	free(code);
	return err;
}

void cs_plain__check(struct pt_target *pt, struct cs_mod *cm)
{
	for (size_t i = 0; i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];
		uint64_t slot = 0;

		if (c->jmp_to && c->jmp_got &&
		    (pt_read(pt, c->jmp_got, &slot, sizeof(slot)) || slot != c->jmp_entry))
			c->jmp_to = 0;      /* not bound to f (yet): its PLT entry as before */
	}
}

uint64_t cs_plain__size(struct cs_mod *cm, uint64_t off)
{
	cm->nplain = 0;
	cm->plain_off = (off + 15) & ~15ull;
	for (size_t i = 0; i < cm->nfns; i++)
		cm->fns[i].plain = 0;
	for (size_t i = 0; !cm->caller && i < cm->nsites; i++)
		if (cm->sites[i].plain)
			cm->fns[cm->sites[i].fn].plain = 1;
	for (size_t i = 0; i < cm->nfns; i++)
		if (cm->fns[i].jmp_to)
			cm->fns[cm->fns[i].jmp_to - 1].plain = 1;
	for (size_t i = 0; i < cm->nfns; i++)
		if (cm->fns[i].plain)
			cm->fns[i].plain = ++cm->nplain;
	return cm->nplain ? cm->plain_off + (uint64_t)cm->nplain * CS_PLAIN_SLOT - off : 0;
}

/* Where @c's plain entry is in the memfd. */
static uint64_t plain_off(const struct cs_mod *cm, const struct cs_fn *c)
{
	return cm->plain_off + (uint64_t)(c->plain - 1) * CS_PLAIN_SLOT;
}

void cs_plain__emit(struct cs_mod *cm, uint8_t *code)
{
	for (size_t i = 0; i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];

		if (c->plain && (!c->body || !plain_emit(cm->area + plain_off(cm, c),
							  cm->area + cs_body_off(cm, c),
							  code + plain_off(cm, c)))) {
			memset(code + plain_off(cm, c), 0xcc, CS_PLAIN_SLOT);
			c->plain = 0;       /* its jumps keep their targets */
		}
	}
}

bool cs_plain__aim(const struct cs_mod *cm, struct cs_site *s)
{
	const struct cs_fn *c = &cm->fns[s->fn];

	return c->plain && cs_tail_bytes(s->orig, s->len, s->addr, cm->area + plain_off(cm, c),
					 s->call);
}

int cs_plain__attach(struct probes *p, struct cs_mod *cm, const char *path, pid_t link_pid)
{
	uint64_t *offs = calloc(cm->nplain ? cm->nplain : 1, sizeof(*offs));
	uint64_t *cookies = calloc(cm->nplain ? cm->nplain : 1, sizeof(*cookies));
	uint32_t n = 0;
	int err = -ENOMEM;

	if (!offs || !cookies)
		goto cleanup;
	for (size_t i = 0; i < cm->nfns; i++) {
		const struct cs_fn *c = &cm->fns[i];

		if (!c->plain)
			continue;
		offs[n] = plain_off(cm, c);
		cookies[n++] = (uint64_t)cm->m->module_id << 32 | c->f->symbol_index;
	}
	/* f's own kind of probe: entry and return, as probes__attach_module() attaches at f */
	err = n ? probes__attach_plain_entries(p, cm, path, offs, cookies, n, link_pid) : 0;
cleanup:
	free(offs);
	free(cookies);
	return err;
}

/* Where @c's body's first jump keeps its rel32 (in the process), or 0 (no such jump). */
static uint64_t body_rel(const struct cs_mod *cm, const struct cs_fn *c, uint32_t *end)
{
	size_t probe_len;
	uint32_t n;
	int64_t rel;
	bool jcc;

	if (!c->body || !cs_jump_form(c->moved, c->plan.patch_len, &rel, &n, &jcc))
		return 0;
	tramp_probe_site(&probe_len);
	*end = (uint32_t)probe_len + (jcc ? 6 : 5);     /* emitted as jcc rel32 or jmp rel32 */
	return cm->area + cs_body_off(cm, c) + *end - 4;
}

void cs_plain__aim_bodies(struct pt_target *pt, struct cs_mod *cm)
{
	cm->plain_bodies = 0;
	for (size_t i = 0; i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];
		const struct cs_fn *t = c->jmp_to ? &cm->fns[c->jmp_to - 1] : NULL;
		uint32_t end = 0;
		uint64_t at = t && t->plain && !t->handed_back ? body_rel(cm, c, &end) : 0;
		int64_t rel = at ? (int64_t)(cm->area + plain_off(cm, t) -
					     (cm->area + cs_body_off(cm, c) + end)) : 0;
		int32_t v = (int32_t)rel;

		c->jmp_rel = 0;
		if (!at || rel != v || pt_read(pt, at, c->jmp_orig, sizeof(c->jmp_orig)) ||
		    pt_write(pt, at, &v, sizeof(v)))
			continue;
		c->jmp_rel = at;
		cm->plain_bodies++;
	}
}

size_t cs_plain__picked(const struct cs_mod *cm, const bool *pick)
{
	size_t n = 0;

	for (size_t i = 0; i < cm->nfns; i++)
		n += cm->fns[i].jmp_rel && pick[cm->fns[i].jmp_to - 1];
	return n;
}

void cs_plain__hand_back(struct pt_target *pt, struct cs_mod *cm, const bool *pick)
{
	for (size_t i = 0; i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];

		if (!c->jmp_rel || !pick[c->jmp_to - 1])
			continue;
		/* back to f's entry (or PLT entry), where the other tool's probe sees the call */
		if (!pt_write(pt, c->jmp_rel, c->jmp_orig, sizeof(c->jmp_orig))) {
			c->jmp_rel = 0;
			cm->plain_bodies--;
		}
	}
}
