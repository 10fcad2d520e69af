// SPDX-License-Identifier: MIT
/*
 * Indirect call sites in a traced process (user/patch/callsite_ind.h has the code and the
 * layout): each `call *mem` of at least 5 bytes in a traced module's functions jumps to a stub
 * that looks the target up in the module's table of traced entries and calls a traced function
 * through its entry block E_f (probed, then its relocated body: the one the direct sites use),
 * any other target as before.
 *
 * The steps follow the direct sites' (callsite.c), all while every thread is stopped:
 *   find   decode every function of the module (cs_find_ind_calls()), by .symtab or, in a
 *          stripped file, by its .eh_frame FDEs (callsite_bounds.c): static functions too;
 *   check  keep the sites whose bytes are the file's and that no thread's instruction pointer
 *          is inside (a stack word cannot point inside one instruction; site+L, the pending
 *          return of a call already made, is unchanged by the redirection);
 *   emit   after the direct stubs in the memfd: the table (the module's functions with a body
 *          that are not handed back), the lookup routine, the shared return block R, the stubs;
 *   log    one PATCH_KIND_CALL_IND record per site in the memfd's patch log (callsite.c);
 *   attach R's probe (atf_site_fn_return, cookie 0) and the table's functions' E_f probes
 *          (atf_site_fn_entry, those not probed for direct sites yet), then each site's `jmp
 *          stub`;
 *   end    the file's call back where our jmp still is.
 * A handed-back function's key becomes a tombstone: its calls miss and reach its first bytes.
 * The table holds the module's own functions: a pointer to another module's function misses
 * (a plain call, counted by that function's plain probe).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "callsite.h"
#include "callsite_bounds.h"
#include "callsite_ind.h"
#include "callsite_plt.h"
#include "textfmt.h"
#include "callsite_int.h"

#define PAGE 4096ull

/* Offsets in the indirect block. */
static uint64_t table_bytes(const struct cs_mod *cm)
{
	return cs_ind_table_slots(cm->ind_bits) * 16;
}

static uint64_t lookup_off(const struct cs_mod *cm)
{
	return cm->ind_off + table_bytes(cm);
}

static uint64_t ret_off(const struct cs_mod *cm)
{
	return lookup_off(cm) + CS_IND_LOOKUP_SIZE;
}

static uint64_t stub_off(const struct cs_mod *cm, size_t k)
{
	uint64_t first = (ret_off(cm) + CS_IND_RET_SIZE + 15) & ~15ull;

	return first + (uint64_t)k * CS_IND_STUB_SLOT;
}

/* Adds @r to cm->isites (grown by doubling, *@cap). */
static bool add_site(struct cs_mod *cm, size_t *cap, const struct patch_record *r)
{
	if (cm->nisites == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct patch_record *n = realloc(cm->isites, ncap * sizeof(*n));

		if (!n)
			return false;
		cm->isites = n;
		*cap = ncap;
	}
	cm->isites[cm->nisites++] = *r;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Does the call @c (its bytes @insn) load its target from a GOT slot of @foreign (sorted): one
 * that holds another module's address, never in this module's table (_start's call of
 * __libc_start_main, -fno-plt calls to other libraries)?
 */
static bool foreign_slot(const struct cs_ind_call *c, const uint8_t *insn, const uint64_t *foreign,
			 size_t n)
{
	uint32_t o = (insn[0] & 0xf0) == 0x40 ? 1 : 0;
	uint64_t slot;
	int32_t disp;

	if ((insn[o + 1] & 0xc7) != 0x05)
		return false;           /* not rip-relative */
	memcpy(&disp, insn + o + 2, sizeof(disp));
	slot = c->site + c->len + (uint64_t)(int64_t)disp;
	return n && bsearch(&slot, foreign, n, sizeof(*foreign), cmp_u64);
}

int cs_ind__find(int fd, struct cs_mod *cm, const struct ta_maps *maps)
{
	struct cs_ind_call *calls = NULL;
	struct cs_range *funcs = NULL;
	size_t ccap = 0, scap = 0, nforeign = 0, nfuncs = 0;
	uint64_t cap = 0, *foreign = NULL;
	enum cs_ranges_from from;
	uint8_t *code = NULL;
	int err;

	if (!cm->ind || !cm->nfns)
		return 0;
	/* every function's code, static ones too (a stripped library's by its .eh_frame) */
	err = cs_func_ranges(fd, &funcs, &nfuncs, &from);
	if (!err)
		err = cs_got_foreign(fd, &foreign, &nforeign);
	if (err)
		goto cleanup;
	err = -ENOMEM;
	for (size_t j = 0; j < nfuncs; j++) {
		const struct cs_range *f = &funcs[j];
		size_t n;

		if (!cs_read_at(fd, f->off, f->size, &code, &cap))
			continue;
		void *grown = cs_reserve(calls, &ccap, f->size / CS_IND_MIN_LEN + 1, sizeof(*calls));
		if (!grown)
			goto cleanup;
		calls = grown;
		n = cs_find_ind_calls(code, f->size, f->addr, calls, ccap, &cm->ind_short);
		for (size_t k = 0; k < n; k++) {
			uint64_t off = f->off + (calls[k].site - f->addr);
			struct patch_record r = { .file_off = off, .len = calls[k].len,
						  .kind = PATCH_KIND_CALL_IND };

			r.addr = ta_file_addr(maps, cm->dev, cm->ino, off);
			if (!r.addr)
				continue;
			memcpy(r.orig, code + (calls[k].site - f->addr), r.len);
			if (foreign_slot(&calls[k], r.orig, foreign, nforeign)) {
				cm->ind_foreign++;
				continue;
			}
			if (!add_site(cm, &scap, &r))
				goto cleanup;
		}
	}
	err = 0;
cleanup:
	free(funcs);
	free(foreign);
	free(calls);
	free(code);
	return err;
}

void cs_ind__check(struct pt_target *pt, struct cs_mod *cm)
{
	size_t ok = 0;

	for (size_t i = 0; i < cm->nisites; i++) {
		struct patch_record *r = &cm->isites[i];
		uint8_t now[PATCH_LOG_MAX_BYTES];
		bool inside = false;

		for (size_t k = 0; k < pt->nthreads && !inside; k++)
			inside = pt->threads[k].regs.rip > r->addr &&
				 pt->threads[k].regs.rip < r->addr + r->len;
		if (inside) {
			cm->ind_inside++;
			continue;
		}
		if (pt_read(pt, r->addr, now, r->len) || memcmp(now, r->orig, r->len)) {
			cm->ind_differs++;
			continue;
		}
		cm->isites[ok++] = *r;
	}
	cm->nisites = ok;
}

uint64_t cs_ind__size(struct cs_mod *cm, uint64_t off)
{
	if (!cm->nisites) {
		cm->ind_off = 0;
		return 0;
	}
	cm->ind_off = (off + PAGE - 1) & ~(PAGE - 1);
	cm->ind_bits = cs_ind_table_bits(cm->nfns);
	return stub_off(cm, cm->nisites) - off;
}

void cs_ind__emit(struct cs_mod *cm, uint8_t *code)
{
	uint64_t (*table)[2] = (uint64_t (*)[2])(void *)(code + cm->ind_off);
	uint64_t base = cm->area, lookup = base + lookup_off(cm);
	size_t ok = 0;

	if (!cm->nisites)
		return;
	memset(table, 0, table_bytes(cm));
	cm->ind_entries = 0;
	for (size_t i = 0; i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];

		c->ind_slot = -1;
		if (!c->body || c->handed_back)
			continue;
		/* the key: what a pointer to f holds, its entry (the endbr64, if any); the value: its
		 * entry block (callsite.c wrote it with the body) */
		c->ind_slot = cs_ind_table_put(table, cm->ind_bits,
					       c->patch_addr - (c->f->endbr64 ? 4 : 0),
					       base + cs_fn_off(cm, c) + CS_FN_ENTRY);
		cm->ind_entries += c->ind_slot >= 0;
	}
	cs_ind_lookup_emit(base + cm->ind_off, cm->ind_bits, code + lookup_off(cm));
	cs_ind_ret_emit(code + ret_off(cm));
	for (size_t k = 0; k < cm->nisites; k++) {
		struct patch_record r = cm->isites[k];
		uint8_t *out = code + stub_off(cm, ok);
		uint32_t b, miss;

		if (!cm->ind_entries ||
		    !cs_ind_stub_emit(base + stub_off(cm, ok), r.addr, r.orig, r.len, lookup,
				      base + ret_off(cm), out, &b, &miss) ||
		    !cs_ind_site_bytes(r.addr, r.len, base + stub_off(cm, ok), r.written)) {
			memset(out, 0xcc, CS_IND_STUB_SLOT);
			cm->ind_range++;
			continue;
		}
		cm->isites[ok++] = r;
	}
	cm->nisites = ok;
}

static void say(const struct cs_mod *cm, int err)
{
	size_t left = cm->ind_inside + cm->ind_differs + cm->ind_range;

	fprintf(stderr, "atftrace record: %s: %zu indirect call %s redirected, %zu %s in the lookup "
		"table%s%s%s (%zu left out: %zu with a thread inside, %zu not the file's bytes, %zu "
		"out of reach; not redirected: %zu shorter than a jmp, %zu through another module's "
		"GOT slot)\n", cm->m->path, cm->nisites,
		textfmt_plural(cm->nisites, "site", "sites"), cm->ind_entries,
		textfmt_plural(cm->ind_entries, "function", "functions"), err < 0 ? " (" : "",
		err < 0 ? strerror(-err) : "", err < 0 ? ")" : "", left, cm->ind_inside,
		cm->ind_differs, cm->ind_range, cm->ind_short, cm->ind_foreign);
}

int cs_ind__attach(struct probes *p, struct pt_target *pt, struct cs_mod *cm, pid_t link_pid,
		   bool verbose)
{
	const uint64_t ro = ret_off(cm), rc = 0;
	size_t n = 0;
	char path[32];
	int err = 0;

	if (!cm->nisites)
		goto cleanup;
	/* R's cookie is read only past the shadow stack's depth: the function is not known there */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", cm->fd);
	if (!cm->ind_ret_probed) {
		err = probes__attach_site_probes(p, cm, path, PROBE_SITE_RETURN, &ro, &rc, 1, link_pid);
		cm->ind_ret_probed = !err;
	}
	for (size_t i = 0; !err && i < cm->nfns; i++)
		if (cm->fns[i].ind_slot >= 0)
			cm->fns[i].want |= CS_PROBE_E;
	if (!err)
		err = cs_mod__probe_fns(p, cm, link_pid);
	if (err < 0)
		goto cleanup;
	/* each site on its own: a site written is whole and probed, the others stay the file's */
	for (n = 0; n < cm->nisites; n++)
		if (pt_write(pt, cm->isites[n].addr, cm->isites[n].written, cm->isites[n].len))
			break;
	cm->nisites = n;
	err = (int)n;
cleanup:
	if (err < 0)
		cm->nisites = 0;
	if (verbose || err < 0)
		say(cm, err);
	return err;
}

size_t cs_ind__write_back(struct pt_target *pt, const struct ta_maps *maps, const struct cs_mod *cm)
{
	size_t n = 0;

	for (size_t k = 0; k < cm->nisites; k++) {
		const struct patch_record *r = &cm->isites[k];
		uint8_t now[PATCH_LOG_MAX_BYTES], back[PATCH_LOG_MAX_BYTES];

		/* only where our jmp still is, in a module still mapped where it was */
		if (ta_file_addr(maps, cm->dev, cm->ino, r->file_off) == r->addr &&
		    !pt_read(pt, r->addr, now, r->len) &&
		    patch_log_unpatch(r, now, back) == PATCH_NOW_OURS &&
		    !pt_write(pt, r->addr, back, r->len))
			n++;
	}
	return n;
}

size_t cs_ind__picked(const struct cs_mod *cm, const bool *pick, size_t *count)
{
	size_t n = 0;

	for (size_t i = 0; cm->nisites && i < cm->nfns; i++)
		if (pick[i] && cm->fns[i].ind_slot >= 0) {
			count[i]++;
			n++;
		}
	return n;
}

/*
 * Is @cm's table still where we made it: our memfd mapped over it in the process (@maps)? After
 * an exec the address may hold anything of the new program, which must never be written.
 */
static bool table_mapped(const struct ta_maps *maps, const struct cs_mod *cm)
{
	uint64_t at = cm->area + cm->ind_off;
	struct stat st;

	if (cm->fd < 0 || fstat(cm->fd, &st))
		return false;
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].lo <= at && at + 16 <= maps->v[i].hi)
			return maps->v[i].dev == (uint64_t)st.st_dev && maps->v[i].ino == (uint64_t)st.st_ino;
	return false;
}

size_t cs_ind__hand_back(struct pt_target *pt, const struct ta_maps *maps, struct cs_mod *cm,
			 const bool *pick, size_t *written)
{
	const uint64_t tomb = CS_IND_TOMBSTONE;
	size_t n = 0;

	if (!cm->nisites || !table_mapped(maps, cm))
		return 0;
	for (size_t i = 0; cm->nisites && i < cm->nfns; i++) {
		struct cs_fn *c = &cm->fns[i];

		if (!pick[i] || c->ind_slot < 0)
			continue;
		/* the key only: a lookup that read it before goes on to the same value */
		if (!pt_write(pt, cm->area + cm->ind_off + (uint64_t)c->ind_slot * 16, &tomb,
			      sizeof(tomb))) {
			written[i]++;
			n++;
		}
		c->ind_slot = -1;
		cm->ind_entries--;
	}
	/* every call misses now: the file's calls back, as for the direct sites of those handed back */
	if (n && !cm->ind_entries)
		cs_ind__write_back(pt, maps, cm);
	return n;
}
