// SPDX-License-Identifier: MIT
/*
 * The call tree walker (calltree.h). Nodes live in one array; a node's children are a linked
 * list, found through an open-addressing table keyed by (parent, name). Names are interned
 * once per distinct string, and a small per-process cache maps function ids to them, so the
 * per-event cost is a few array reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calltree.h"
#include "func_index.h"

#define ID_CACHE_SIZE 4096

struct frame {
	uint32_t node;
	uint64_t start_ns;
	uint64_t child_ns;          /* time spent in traced callees */
};

struct thread_stack {
	struct frame *f;
	size_t depth, cap;
};

struct calltree {
	struct calltree_node *nodes;
	size_t nnodes, cap;
	uint32_t *slots;            /* node index, 0 = empty; key (parent, name) */
	size_t nslots;

	char **names;               /* interned strings */
	size_t nnames, names_cap;
	uint32_t *name_slots;       /* name index + 1, 0 = empty */
	size_t nname_slots;

	uint64_t cache_id[ID_CACHE_SIZE];       /* function id -> name index, this process */
	uint32_t cache_name[ID_CACHE_SIZE];     /* name index + 1, 0 = empty */

	bool process_nodes, flat;
	uint32_t process_root;      /* current process node, or CALLTREE_ROOT */
	struct thread_stack *stacks;            /* one per thread of the current process */
	size_t nstacks;
	uint64_t traced_ns;
};

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Doubles an open-addressing table of @n slots holding indexes + @bias; @key of entry i. */
static int rehash(uint32_t **slots, size_t *n, size_t used, uint32_t bias,
		  uint64_t (*key)(const struct calltree *, uint32_t), const struct calltree *ct)
{
	size_t nn = *n ? *n * 2 : 1024;
	uint32_t *s;

	if ((used + 1) * 2 < *n)
		return 0;
	if (!(s = calloc(nn, sizeof(*s))))
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++) {
		size_t j;

		if (!(*slots)[i])
			continue;
		for (j = key(ct, (*slots)[i] - bias) & (nn - 1); s[j]; j = (j + 1) & (nn - 1))
			;
		s[j] = (*slots)[i];
	}
	free(*slots);
	*slots = s;
	*n = nn;
	return 0;
}

static uint64_t name_key(const struct calltree *ct, uint32_t i)
{
	return func_name_hash(ct->names[i]);
}

static uint64_t node_key(const struct calltree *ct, uint32_t i)
{
	return hash64((uint64_t)ct->nodes[i].parent << 32 | ct->nodes[i].name);
}

/* Index of @name, interned on first use; -ENOMEM. */
static int64_t intern(struct calltree *ct, const char *name)
{
	size_t j;
	char *copy;

	if (rehash(&ct->name_slots, &ct->nname_slots, ct->nnames, 1, name_key, ct))
		return -ENOMEM;
	for (j = func_name_hash(name) & (ct->nname_slots - 1); ct->name_slots[j]; j = (j + 1) & (ct->nname_slots - 1))
		if (!strcmp(ct->names[ct->name_slots[j] - 1], name))
			return ct->name_slots[j] - 1;
	if (ct->nnames == ct->names_cap) {
		size_t cap = ct->names_cap ? ct->names_cap * 2 : 256;
		char **n = realloc(ct->names, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ct->names = n;
		ct->names_cap = cap;
	}
	if (!(copy = strdup(name)))
		return -ENOMEM;
	ct->names[ct->nnames] = copy;
	ct->name_slots[j] = (uint32_t)++ct->nnames;
	return (int64_t)ct->nnames - 1;
}

static int64_t child_of(struct calltree *ct, uint32_t parent, uint32_t name)
{
	struct calltree_node *n;
	size_t j;

	if (rehash(&ct->slots, &ct->nslots, ct->nnodes, 0, node_key, ct))
		return -ENOMEM;
	for (j = hash64((uint64_t)parent << 32 | name) & (ct->nslots - 1); ct->slots[j];
	     j = (j + 1) & (ct->nslots - 1)) {
		n = &ct->nodes[ct->slots[j]];
		if (n->parent == parent && n->name == name)
			return ct->slots[j];
	}
	if (ct->nnodes == ct->cap) {
		size_t cap = ct->cap * 2;
		struct calltree_node *nn = realloc(ct->nodes, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		ct->nodes = nn;
		ct->cap = cap;
	}
	n = &ct->nodes[ct->nnodes];
	*n = (struct calltree_node){ .name = name, .parent = parent, .min_ns = UINT64_MAX };
	n->next_sibling = ct->nodes[parent].first_child;
	ct->nodes[parent].first_child = (uint32_t)ct->nnodes;
	ct->slots[j] = (uint32_t)ct->nnodes;
	return (int64_t)ct->nnodes++;
}

struct calltree *calltree__new(unsigned flags)
{
	struct calltree *ct = calloc(1, sizeof(*ct));

	if (!ct)
		return NULL;
	ct->cap = 256;
	if (!(ct->nodes = calloc(ct->cap, sizeof(*ct->nodes)))) {
		free(ct);
		return NULL;
	}
	ct->nnodes = 1;                 /* the root */
	ct->process_nodes = flags & CALLTREE_PROCESS_NODES;
	ct->flat = flags & CALLTREE_FLAT;
	return ct;
}

static void free_stacks(struct calltree *ct)
{
	for (size_t i = 0; i < ct->nstacks; i++)
		free(ct->stacks[i].f);
	free(ct->stacks);
	ct->stacks = NULL;
	ct->nstacks = 0;
}

void calltree__free(struct calltree *ct)
{
	if (!ct)
		return;
	free_stacks(ct);
	for (size_t i = 0; i < ct->nnames; i++)
		free(ct->names[i]);
	free(ct->names);
	free(ct->name_slots);
	free(ct->slots);
	free(ct->nodes);
	free(ct);
}

int calltree__process_begin(struct calltree *ct, struct export_ctx *ctx)
{
	const struct atf_manifest *m = ctx->session->manifest;
	size_t n = ctx->session->nthreads;
	int64_t node;

	free_stacks(ct);
	memset(ct->cache_name, 0, sizeof(ct->cache_name));      /* function ids are per process */
	if (!(ct->stacks = calloc(n ? n : 1, sizeof(*ct->stacks))))
		return -ENOMEM;
	ct->nstacks = n;
	ct->process_root = CALLTREE_ROOT;
	if (ct->process_nodes) {
		const char *comm = m->process_name ? m->process_name :
				   n && ctx->session->threads[0].name ? ctx->session->threads[0].name :
				   m->argc && m->argv[0] ? m->argv[0] : "?";
		char label[300];

		snprintf(label, sizeof(label), "%s [%u]", comm, m->pid);
		if ((node = intern(ct, label)) < 0 || (node = child_of(ct, CALLTREE_ROOT, (uint32_t)node)) < 0)
			return -ENOMEM;
		ct->nodes[node].process = true;
		ct->process_root = (uint32_t)node;
	}
	return 0;
}

static int64_t name_of(struct calltree *ct, const struct export_event *e)
{
	size_t slot = (size_t)(hash64(e->ev.function_id) & (ID_CACHE_SIZE - 1));
	int64_t name;

	if (ct->cache_name[slot] && ct->cache_id[slot] == e->ev.function_id)
		return ct->cache_name[slot] - 1;
	if ((name = intern(ct, e->name)) < 0)
		return name;
	ct->cache_id[slot] = e->ev.function_id;
	ct->cache_name[slot] = (uint32_t)name + 1;
	return name;
}

void calltree__add(struct calltree *ct, uint32_t node, const struct calltree_node *from)
{
	struct calltree_node *n = &ct->nodes[node];

	n->calls += from->calls;
	n->total_ns += from->total_ns;
	n->self_ns += from->self_ns;
	n->unwound += from->unwound;
	n->unfinished += from->unfinished;
	n->outer_ns += from->outer_ns;
	if (from->min_ns < n->min_ns)
		n->min_ns = from->min_ns;
	if (from->max_ns > n->max_ns)
		n->max_ns = from->max_ns;
}

int calltree__event(struct calltree *ct, const struct export_event *e)
{
	struct thread_stack *st;
	struct frame *f;
	uint64_t dur;
	int64_t node;

	if (e->thread >= ct->nstacks)
		return -ATF_E_RANGE;
	st = &ct->stacks[e->thread];
	if (e->ev.event_kind == ATF_KIND_CALL) {
		int64_t name = name_of(ct, e);

		if (name < 0)
			return (int)name;
		node = child_of(ct, st->depth && !ct->flat ? st->f[st->depth - 1].node : ct->process_root,
				(uint32_t)name);
		if (node < 0)
			return (int)node;
		ct->nodes[node].active++;
		if (st->depth == st->cap) {
			size_t cap = st->cap ? st->cap * 2 : 64;

			if (!(f = realloc(st->f, cap * sizeof(*f))))
				return -ENOMEM;
			st->f = f;
			st->cap = cap;
		}
		st->f[st->depth++] = (struct frame){ .node = (uint32_t)node, .start_ns = e->ev.timestamp_ns };
		return 0;
	}
	if (!st->depth)                 /* export_sessions balances: never happens */
		return 0;
	f = &st->f[--st->depth];
	dur = e->ev.timestamp_ns > f->start_ns ? e->ev.timestamp_ns - f->start_ns : 0;
	if (!--ct->nodes[f->node].active)
		ct->nodes[f->node].outer_ns += dur;
	calltree__add(ct, f->node, &(struct calltree_node){
		.calls = 1, .total_ns = dur, .self_ns = dur > f->child_ns ? dur - f->child_ns : 0,
		.min_ns = dur, .max_ns = dur, .unwound = e->ev.event_kind == ATF_KIND_EXCEPTION,
		.unfinished = e->unfinished,
	});
	if (st->depth)
		st->f[st->depth - 1].child_ns += dur;
	else
		ct->traced_ns += dur;
	return 0;
}

/* ---- as an ops table, for calltree__run -------------------------------------------------- */

static int walker_process_begin(struct export_ctx *ctx)
{
	return calltree__process_begin(ctx->priv, ctx);
}

static int walker_event(struct export_ctx *ctx, const struct export_event *e)
{
	return calltree__event(ctx->priv, e);
}

int calltree__run(struct calltree *ct, struct atf_session *const *s, size_t n, const struct export_options *opts)
{
	static const struct export_ops walker_ops = {
		.name = "calltree",
		.per_thread = true,
		.processes = true,
		.process_begin = walker_process_begin,
		.event = walker_event,
	};
	struct export_options o = *opts;

	o.out_path = NULL;
	o.priv = ct;
	return export_sessions(s, n, &walker_ops, &o);
}

size_t calltree__nnodes(const struct calltree *ct)
{
	return ct->nnodes;
}

const struct calltree_node *calltree__node(const struct calltree *ct, uint32_t i)
{
	return &ct->nodes[i];
}

const char *calltree__name(const struct calltree *ct, uint32_t name)
{
	return name < ct->nnames ? ct->names[name] : "";
}

size_t calltree__nnames(const struct calltree *ct)
{
	return ct->nnames;
}

uint64_t calltree__traced_ns(const struct calltree *ct)
{
	return ct->traced_ns;
}

int64_t calltree__child(struct calltree *ct, uint32_t parent, const char *name)
{
	int64_t id = intern(ct, name);

	return id < 0 ? id : child_of(ct, parent, (uint32_t)id);
}

/* ---- views over a built tree (graph FUNCTION, graph --callers, the tui) ------------------ */

/* Copies the subtree of @src's node @from (its counts, and its descendants') below @dst's @to. */
static int merge_subtree(struct calltree *dst, uint32_t to, const struct calltree *src, uint32_t from)
{
	size_t sp = 0;
	struct { uint32_t s, d; } *todo = malloc(src->nnodes * sizeof(*todo));

	if (!todo)
		return -ENOMEM;
	todo[sp++] = (typeof(*todo)){ from, to };
	while (sp) {
		uint32_t s = todo[--sp].s, d = todo[sp].d;

		calltree__add(dst, d, &src->nodes[s]);
		for (uint32_t c = src->nodes[s].first_child; c; c = src->nodes[c].next_sibling) {
			int64_t dc = calltree__child(dst, d, calltree__name(src, src->nodes[c].name));

			if (dc < 0) {
				free(todo);
				return (int)dc;
			}
			todo[sp++] = (typeof(*todo)){ c, (uint32_t)dc };
		}
	}
	free(todo);
	return 0;
}

/* Whether an ancestor of @node is named @name too (then @node's time is in that one's). */
static bool inside_same(const struct calltree *ct, uint32_t node, uint32_t name)
{
	for (uint32_t p = ct->nodes[node].parent; p != CALLTREE_ROOT; p = ct->nodes[p].parent)
		if (ct->nodes[p].name == name && !ct->nodes[p].process)
			return true;
	return false;
}

int64_t calltree__function_view(struct calltree *view, const struct calltree *ct, const char *function,
				bool callers)
{
	int64_t top = calltree__child(view, CALLTREE_ROOT, function), found = 0;

	if (top < 0)
		return top;
	for (uint32_t i = 1; i < ct->nnodes; i++) {
		const struct calltree_node *n = &ct->nodes[i];
		int err;

		if (n->process || strcmp(calltree__name(ct, n->name), function) || inside_same(ct, i, n->name))
			continue;
		found++;
		if (!callers) {
			if ((err = merge_subtree(view, (uint32_t)top, ct, i)))
				return err;
			continue;
		}
		calltree__add(view, (uint32_t)top, n);
		for (uint32_t p = n->parent, d = (uint32_t)top; p != CALLTREE_ROOT; p = ct->nodes[p].parent) {
			int64_t c = calltree__child(view, d, calltree__name(ct, ct->nodes[p].name));

			if (c < 0)
				return c;
			calltree__add(view, (uint32_t)c, n);
			d = (uint32_t)c;
		}
	}
	return found;
}

static const struct calltree *cmp_tree;

static int by_total(const void *pa, const void *pb)
{
	const struct calltree_node *a = &cmp_tree->nodes[*(const uint32_t *)pa];
	const struct calltree_node *b = &cmp_tree->nodes[*(const uint32_t *)pb];

	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	return strcmp(calltree__name(cmp_tree, a->name), calltree__name(cmp_tree, b->name));
}

int64_t calltree__children(const struct calltree *ct, uint32_t node, uint32_t **kids)
{
	size_t nk = 0;

	*kids = NULL;
	for (uint32_t c = ct->nodes[node].first_child; c; c = ct->nodes[c].next_sibling)
		nk++;
	if (!nk)
		return 0;
	if (!(*kids = malloc(nk * sizeof(**kids))))
		return -ENOMEM;
	nk = 0;
	for (uint32_t c = ct->nodes[node].first_child; c; c = ct->nodes[c].next_sibling)
		(*kids)[nk++] = c;
	cmp_tree = ct;
	qsort(*kids, nk, sizeof(**kids), by_total);
	return (int64_t)nk;
}
