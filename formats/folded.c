// SPDX-License-Identifier: MIT
/*
 * Folded stacks ("main;parse;lex 1234" per line), as read by flamegraph.pl, inferno and
 * speedscope: one line per distinct call path, weighted by the path's self time in
 * nanoseconds (--weight self, the default, so a flame graph's widths are time), its total
 * time (--weight total) or its number of calls (--weight calls). Lines with weight 0 are left
 * out. Threads are added together; in a session of several processes each path starts with
 * a "comm [pid]" frame. The paths come from the call tree walker (calltree.h): memory is
 * O(call paths). In a name, ';' (the frame separator) and line breaks become '_'.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calltree.h"

enum folded_weight { W_SELF, W_TOTAL, W_CALLS };

struct folded_state {
	struct calltree *ct;
	enum folded_weight weight;
};

static int folded_begin(struct export_ctx *ctx)
{
	struct folded_state *st = calloc(1, sizeof(*st));
	const char *w = ctx->opts->weight;

	if (!st)
		return -ENOMEM;
	ctx->priv = st;
	if (!w || !strcmp(w, "self"))
		st->weight = W_SELF;
	else if (!strcmp(w, "total"))
		st->weight = W_TOTAL;
	else if (!strcmp(w, "calls"))
		st->weight = W_CALLS;
	else {
		export_error(ctx, "--weight %s: expected self, total or calls", w);
		return -EINVAL;
	}
	st->ct = calltree__new(ctx->nprocesses > 1 ? CALLTREE_PROCESS_NODES : 0);
	return st->ct ? 0 : -ENOMEM;
}

static int folded_process_begin(struct export_ctx *ctx)
{
	struct folded_state *st = ctx->priv;

	return calltree__process_begin(st->ct, ctx);
}

static int folded_event(struct export_ctx *ctx, const struct export_event *e)
{
	struct folded_state *st = ctx->priv;

	return calltree__event(st->ct, e);
}

static uint64_t weight_of(const struct folded_state *st, const struct calltree_node *n)
{
	return st->weight == W_SELF ? n->self_ns : st->weight == W_TOTAL ? n->total_ns : n->calls;
}

/* Appends ";name" (no ';' for the first frame) to @path at @len; returns the new length. */
static size_t path_push(char **path, size_t *cap, size_t len, const char *name)
{
	size_t n = strlen(name);

	if (len + n + 2 > *cap) {
		size_t c = (len + n + 2) * 2;
		char *p = realloc(*path, c);

		if (!p)
			return SIZE_MAX;
		*path = p;
		*cap = c;
	}
	if (len)
		(*path)[len++] = ';';
	for (size_t i = 0; i < n; i++)
		(*path)[len++] = name[i] == ';' || name[i] == '\n' || name[i] == '\r' ? '_' : name[i];
	return len;
}

/* Depth-first over the tree with an explicit stack (recursion can be deep). */
static int folded_end(struct export_ctx *ctx)
{
	struct folded_state *st = ctx->priv;
	const struct calltree *ct = st->ct;
	struct { uint32_t node; size_t len; } *todo;
	size_t ntodo = 0, pcap = 256;
	char *path = malloc(pcap), tail[32];
	int err = 0;

	todo = calloc(calltree__nnodes(ct), sizeof(*todo));
	if (!todo || !path) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t c = calltree__node(ct, CALLTREE_ROOT)->first_child; c; c = calltree__node(ct, c)->next_sibling)
		todo[ntodo++] = (typeof(*todo)){ c, 0 };
	while (ntodo && !err) {
		uint32_t node = todo[--ntodo].node;
		const struct calltree_node *n = calltree__node(ct, node);
		size_t len = path_push(&path, &pcap, todo[ntodo].len, calltree__name(ct, n->name));
		uint64_t w = weight_of(st, n);

		if (len == SIZE_MAX) {
			err = -ENOMEM;
			break;
		}
		if (w && !n->process) {
			int k = snprintf(tail, sizeof(tail), " %" PRIu64 "\n", w);

			if (!(err = obuf__write(ctx->out, path, len)))
				err = obuf__write(ctx->out, tail, (size_t)k);
		}
		for (uint32_t c = n->first_child; c; c = calltree__node(ct, c)->next_sibling)
			todo[ntodo++] = (typeof(*todo)){ c, len };
	}
cleanup:
	free(todo);
	free(path);
	return err;
}

static void folded_cleanup(struct export_ctx *ctx)
{
	struct folded_state *st = ctx->priv;

	if (!st)
		return;
	calltree__free(st->ct);
	free(st);
	ctx->priv = NULL;
}

const struct export_ops folded_ops = {
	.name = "folded",
	.description = "folded stacks by self time (flamegraph.pl, inferno, speedscope); --weight self|total|calls",
	.per_thread = true,
	.processes = true,
	.begin = folded_begin,
	.process_begin = folded_process_begin,
	.event = folded_event,
	.end = folded_end,
	.cleanup = folded_cleanup,
};
