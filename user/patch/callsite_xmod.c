// SPDX-License-Identifier: MIT
/*
 * Call sites in the modules that call a traced module's functions through their own PLT (a
 * program calling `sqlite3_step@plt` in libsqlite3), steps 1 to 3 of callsite.c for them.
 *
 * Such a site's stub is in a memfd near the calling module (its rel32 must reach it); f's body
 * and its entry and return blocks are in the traced module's memfd, which may be out of rel32
 * reach from there, so the stub calls them through absolute jumps (cs_stub_emit_far()), never
 * through the GOT:
 * that would reach f's plain probe and count the call twice. A site is redirected only when the
 * calling module's GOT slot holds f's address in the stopped process; no GOT entry is written.
 * The calling module's text is decoded function by function, from its .symtab or, stripped,
 * its .eh_frame FDEs (callsite_bounds.c); a module with neither is not searched. Also what
 * modules mapped later need: whether the process maps other files than when last searched.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "callsite_bounds.h"
#include "callsite_plt.h"
#include "symbols.h"
#include "callsite_int.h"

#define CS_SEARCH_AGAIN 3        /* searches of a module whose slots are not bound yet, after the first */
#define SEARCH_ARMED (1ull << 32)
#define SEARCHES_LEFT 0xffffffffull

/* A function with a body, by name: its cs_mod and index there. */
struct xm_target {
	uint32_t tmod, fn;
};

/* Every traced function that has a body or can have one, as names (for the PLT's symbols). */
static int body_names(const struct cs_process *cp, const char ***names, struct xm_target **who,
		      size_t *n)
{
	size_t cap = 0;

	*n = 0;
	for (size_t i = 0; i < cp->nmods; i++)
		if (!cp->mods[i].caller)
			cap += cp->mods[i].nfns;
	*names = calloc(cap ? cap : 1, sizeof(**names));
	*who = calloc(cap ? cap : 1, sizeof(**who));
	if (!*names || !*who)
		return -ENOMEM;
	for (size_t i = 0; i < cp->nmods; i++) {
		const struct cs_mod *cm = &cp->mods[i];

		for (size_t k = 0; !cm->caller && k < cm->nfns; k++) {
			if ((cm->area && !cm->fns[k].body) || cm->fns[k].handed_back)
				continue;
			(*names)[*n] = cm->fns[k].f->name;
			(*who)[(*n)++] = (struct xm_target){ (uint32_t)i, (uint32_t)k };
		}
	}
	return 0;
}

/* Was the file searched before (and not to be searched again)? Else it is now, at @*at. */
static bool seen(struct cs_process *cp, uint64_t dev, uint64_t ino, size_t *at)
{
	uint64_t (*nv)[3];

	for (size_t i = 0; i < cp->nseen; i++)
		if (cp->seen[i][0] == dev && cp->seen[i][1] == ino) {
			*at = i;
			if (!(cp->seen[i][2] & SEARCHES_LEFT))
				return true;
			cp->seen[i][2]--;
			return false;
		}
	nv = realloc(cp->seen, (cp->nseen + 1) * sizeof(*nv));
	if (!nv)
		return true;            /* not searched: its calls reach the plain probes */
	cp->seen = nv;
	cp->seen[cp->nseen][0] = dev;
	cp->seen[cp->nseen][1] = ino;
	cp->seen[cp->nseen][2] = 0;
	*at = cp->nseen++;
	return false;
}

static int cmp_entry(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];

	return x < y ? -1 : x > y;
}

/* Add the calls of @cm's function @r to one of the PLT entries @plt (sorted) as sites. */
static int add_calls(struct cs_process *cp, struct cs_mod *cm, const struct ta_maps *maps,
		     const struct cs_range *r, const uint8_t *code, const uint64_t (*plt)[3],
		     const uint64_t *addrs, size_t nplt, const struct xm_target *who, size_t *scap)
{
	struct cs_call calls[64];
	size_t n, done = 0;

	/* in chunks of what fits: decoding resumes after the last call found */
	while (done < r->size) {
		uint64_t from = r->addr + done;

		n = cs_find_calls(code + done, r->size - done, from, addrs, nplt, calls, 64);
		for (size_t k = 0; k < n; k++) {
			uint64_t off = r->off + (calls[k].site - r->addr);
			uint64_t at = ta_file_addr(maps, cm->dev, cm->ino, off);
			const struct xm_target *t = &who[plt[calls[k].target][1]];
			const struct cs_mod *tm = &cp->mods[t->tmod];
			const struct cs_fn *c = &tm->fns[t->fn];
			uint64_t hop = c->f->endbr64 ? 4 : 0;
			struct cs_site *site;

			if (!at)
				continue;
			if (cm->nsites == *scap) {
				struct cs_site *ns = realloc(cm->sites, (*scap ? 2 * *scap : 64) * sizeof(*ns));

				if (!ns)
					return -ENOMEM;
				cm->sites = ns;
				*scap = *scap ? 2 * *scap : 64;
			}
			site = &cm->sites[cm->nsites++];
			*site = (struct cs_site){
				.addr = at, .file_off = off, .fn = t->fn, .tmod = t->tmod,
				.got = plt[calls[k].target][2] + (at - calls[k].site),
				.entry = c->patch_addr - hop,
				.cookie = (uint64_t)tm->m->module_id << 32 | c->f->symbol_index,
			};
			memcpy(site->orig, code + (calls[k].site - r->addr), CS_CALL_LEN);
		}
		if (n < 64)
			break;
		done = calls[n - 1].site + CS_CALL_LEN - r->addr;
	}
	return 0;
}

/* The sites of the module mapped at @mp (its file), into @cm; 0 when it has none. */
static int find_in(struct cs_process *cp, struct cs_mod *cm, const struct ta_maps *maps,
		   int fd, const char *const *names, const struct xm_target *who, size_t nnames)
{
	uint64_t (*plt)[3] = NULL, *addrs = NULL, cap = 0;
	struct cs_range *r = NULL;
	enum cs_ranges_from from;
	size_t nplt = 0, nr = 0, scap = 0, k = 0;
	uint8_t *code = NULL;
	int err = cs_plt_targets(fd, names, nnames, &plt, &nplt);

	/* its own functions' PLT entries are the traced module's own sites */
	for (size_t i = 0; !err && i < nplt; i++) {
		const struct cs_mod *tm = &cp->mods[who[plt[i][1]].tmod];

		if (tm->dev != cm->dev || tm->ino != cm->ino)
			memcpy(plt[k++], plt[i], sizeof(*plt));
	}
	nplt = k;
	if (err || !nplt)
		goto cleanup;
	err = cs_func_ranges(fd, &r, &nr, &from);
	if (err || !nr) {
		cm->no_bounds = !err;
		goto cleanup;
	}
	qsort(plt, nplt, sizeof(*plt), cmp_entry);
	addrs = calloc(nplt, sizeof(*addrs));
	if (!addrs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < nplt; i++)
		addrs[i] = plt[i][0];
	for (size_t i = 0; !err && i < nr; i++)
		if (cs_read_at(fd, r[i].off, r[i].size, &code, &cap))
			err = add_calls(cp, cm, maps, &r[i], code, (const uint64_t (*)[3])plt, addrs,
					nplt, who, &scap);
cleanup:
	free(plt);
	free(addrs);
	free(r);
	free(code);
	return err;
}

int cs_xmod__find(struct cs_process *cp, struct pt_target *pt, const struct ta_maps *maps)
{
	const char **names = NULL;
	struct xm_target *who = NULL;
	size_t nnames = 0;
	int err = body_names(cp, &names, &who, &nnames);

	for (size_t i = 0; !err && nnames && i < maps->n; i++) {
		const struct ta_map *mp = &maps->v[i];
		struct cs_mod cm = { .caller = true, .fd = -1, .dev = mp->dev, .ino = mp->ino };
		char path[PATH_MAX], link[96];
		struct sym_module *own;
		size_t found, at;
		ssize_t len;
		int fd;

		if (!mp->exec || !mp->ino || mp->kind == 'a' || seen(cp, mp->dev, mp->ino, &at))
			continue;
		if (cp->nmods == cp->capmods)
			break;          /* no room: the rest keep their plain probes */
		snprintf(link, sizeof(link), "/proc/%d/map_files/%llx-%llx", (int)cp->pid,
			 (unsigned long long)mp->lo, (unsigned long long)mp->hi);
		len = readlink(link, path, sizeof(path) - 1);
		fd = len > 0 ? open(link, O_RDONLY | O_CLOEXEC) : -1;
		if (fd < 0)
			continue;
		path[len] = 0;
		ta_module_span(maps, mp->dev, mp->ino, &cm.lo, &cm.hi);
		err = find_in(cp, &cm, maps, fd, names, who, nnames);
		close(fd);
		found = cm.nsites;
		if (!err && cm.nsites) {
			err = cs_mod__check_sites(pt, &cm);
			/* slots not bound yet (a library being loaded is relocated after ld.so
			 * announces it): searched again at the next changes of ld.so's list, a few
			 * times (a lazy slot that is never called stays unbound) */
			if (!err && !cm.nsites && cm.skipped_unbound + cm.skipped_elsewhere &&
			    !(cp->seen[at][2] & SEARCH_ARMED))
				cp->seen[at][2] = SEARCH_ARMED | CS_SEARCH_AGAIN;
			for (size_t k = 0; k < cm.nsites; k++)
				cp->mods[cm.sites[k].tmod].wanted = true;   /* their bodies */
		}
		own = calloc(1, sizeof(*own));
		if (!err && (found || cm.no_bounds) && own && (own->path = strdup(path))) {
			cm.m = own;
			cp->mods[cp->nmods++] = cm;
			continue;
		}
		free(own);
		free(cm.sites);
		err = err ? err : found && !own ? -ENOMEM : 0;
	}
	free(names);
	free(who);
	return err;
}

/* The executable files mapped where, other than our memfds, as one number; @exe: the program's
 * file (device, inode). */
uint64_t cs_maps_signature(const struct ta_maps *maps, uint64_t exe[2])
{
	uint64_t h = 1469598103934665603ull;        /* FNV-1a over (address, device, inode) */

	exe[0] = exe[1] = 0;
	for (size_t i = 0; i < maps->n; i++) {
		const struct ta_map *mp = &maps->v[i];
		uint64_t v[3] = { mp->lo, mp->dev, mp->ino };

		if (mp->kind == 'x' && !exe[1]) {
			exe[0] = mp->dev;
			exe[1] = mp->ino;
		}
		if (!mp->exec || mp->kind == 'a')
			continue;
		for (size_t k = 0; k < 3; k++)
			for (int b = 0; b < 64; b += 8)
				h = (h ^ ((v[k] >> b) & 0xff)) * 1099511628211ull;
	}
	return h;
}

/* @maps again once @cm's memfd is mapped: the next module's memfd must not take its place. */
void cs_refresh_maps(const struct cs_process *cp, struct ta_maps *maps, const struct cs_mod *cm)
{
	struct ta_maps now;

	if (cm->area && ta_maps_read(cp->pid, &now) == 0) {
		ta_maps_free(maps);
		*maps = now;
	}
}

/* Each caller site of @cm: f's function block in its module's memfd, or left out (none there). */
void cs_far_sites(struct cs_process *cp, struct cs_mod *cm)
{
	size_t ok = 0;

	for (size_t i = 0; i < cm->nsites; i++) {
		struct cs_site s = cm->sites[i];
		const struct cs_mod *tm = &cp->mods[s.tmod];
		const struct cs_fn *c = &tm->fns[s.fn];

		if (!tm->area || !c->body) {
			cm->skipped_range++;
			continue;
		}
		s.far = tm->area + cs_fn_off(tm, c);
		cm->sites[ok++] = s;
	}
	cm->nsites = ok;
}
