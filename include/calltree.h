/* SPDX-License-Identifier: MIT */
/*
 * The call tree walker: the one streaming aggregation behind `atftrace report`, `graph` and the
 * folded-stacks export. It consumes the balanced event stream of export_sessions() and adds
 * each closed frame to the node of its call path (root -> ... -> function): calls, total (the
 * frames' durations), self (total less the time in traced callees), min and max. Memory is
 * O(distinct call paths) whatever the number of events; a flat tree (CALLTREE_FLAT, for
 * report) keeps one node per function instead: O(functions), plus O(depth) per thread.
 *
 * A frame closed by unwinding counts up to its EXCEPTION (unwound); a frame still open at the
 * end counts up to the end of its thread or of the range (unfinished).
 */
#ifndef ATFTRACE_CALLTREE_H
#define ATFTRACE_CALLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format.h"

#define CALLTREE_ROOT 0u        /* node 0: above every root function; no name */

struct calltree_node {
	uint32_t name;              /* calltree__name() index */
	uint32_t parent;            /* CALLTREE_ROOT for a root function (or a process node) */
	uint32_t first_child, next_sibling;     /* 0: none (node 0 is never a child) */
	bool process;               /* a process node ("comm [pid]"), not a function */
	uint64_t calls;
	uint64_t total_ns, self_ns, min_ns, max_ns;
	uint64_t unwound;           /* calls left by unwinding (closed at their EXCEPTION) */
	uint64_t unfinished;        /* calls still open at the end (closed at the range's end) */
	uint64_t outer_ns;          /* total of the frames with no frame of the same node open below
				       them: a recursive function's time, counted once (flat trees) */
	uint32_t active;            /* frames of this node open now */
};

struct calltree;

#define CALLTREE_PROCESS_NODES 0x1u  /* each process's paths below a "comm [pid]" node */
#define CALLTREE_FLAT          0x2u  /* one node per function (below the root), not per path */

/**
 * calltree__new - an empty tree, shaped by CALLTREE_* @flags. Without CALLTREE_PROCESS_NODES,
 * all processes share the roots.
 */
struct calltree *calltree__new(unsigned flags);
void calltree__free(struct calltree *ct);

/**
 * calltree__run - feed @ct the balanced events of @n processes selected by @opts (threads and
 * range; no output is written). Returns 0 or a negative error.
 */
int calltree__run(struct calltree *ct, struct atf_session *const *s, size_t n, const struct export_options *opts);

/* For exporters built on the walker (folded): call from their ops. */
int calltree__process_begin(struct calltree *ct, struct export_ctx *ctx);
int calltree__event(struct calltree *ct, const struct export_event *e);

size_t calltree__nnodes(const struct calltree *ct);
const struct calltree_node *calltree__node(const struct calltree *ct, uint32_t i);
const char *calltree__name(const struct calltree *ct, uint32_t name);
/** calltree__nnames - number of distinct names; name indexes are below it. */
size_t calltree__nnames(const struct calltree *ct);
/** calltree__traced_ns - summed duration of all root frames: the traced time of every thread. */
uint64_t calltree__traced_ns(const struct calltree *ct);

/**
 * calltree__child - the node @name below @parent, created (with zero counts) on first use.
 * Returns its index (> 0), or -ENOMEM. Used to build views (graph's merged subtrees, callers).
 */
int64_t calltree__child(struct calltree *ct, uint32_t parent, const char *name);
/** calltree__add - add @from's counts (calls, total, self, min, max, unwound, unfinished) to @node. */
void calltree__add(struct calltree *ct, uint32_t node, const struct calltree_node *from);

/**
 * calltree__function_view - build in @view (a new, empty tree) the graph of @function in @ct:
 * below one node named @function, its outermost calls' subtrees added together (callees), or
 * with @callers the chains of their callers, each with the calls and time of @function made
 * through it. Returns the number of @ct's nodes that were outermost calls of @function (0: never
 * called), or a negative error.
 */
int64_t calltree__function_view(struct calltree *view, const struct calltree *ct, const char *function,
				bool callers);

/**
 * calltree__children - the children of @node in *@kids (malloc'd; free it), by total time
 * (the most first), then by name: the order graph prints them in. Returns their number (0 with
 * *@kids NULL when none), or -ENOMEM.
 */
int64_t calltree__children(const struct calltree *ct, uint32_t node, uint32_t **kids);

#endif
