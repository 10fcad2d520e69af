/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Typed arguments: strings read at the call (and a string return value) for the functions of
 * -A/-R/--auto-args. Included by bpf/detail.bpf.h; the registers themselves come from the detail
 * record every such function's CALL and RETURN get.
 *
 * arg_specs (filled before the probes attach) holds, under a function id, which integer slots
 * are strings, and whether its CALL (arguments) and RETURN (return value) are shown: those
 * events always have detail. Each string is read with one
 * bpf_probe_read_user_str of string_bytes + 1 into its fixed area of the ring record: a NULL
 * pointer and a failed read are marked, not read further; nothing the target owns is written.
 *
 * Cost when no function has a spec: none (args_on is rodata, and the code is removed).
 */
#ifndef ATFTRACE_ARGS_BPF_H
#define ATFTRACE_ARGS_BPF_H

#include "args.h"

const volatile bool args_on = false;
const volatile __u32 string_bytes = 64;         /* the string cap, 1..ARGS_MAX_STR_BYTES */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);         /* resized before load: the functions + ARGS_LIVE_FUNCTIONS */
	__type(key, __u64);             /* function_id */
	__type(value, struct arg_fn_spec);
} arg_specs SEC(".maps");

/* The string block starts 8-byte aligned after the stack snapshot. */
#define ARGS_OFF ((stack_bytes + 7) & ~7u)
#define ARGS_AREA (string_bytes + 1)
#define ARGS_BYTES (sizeof(struct rec_args) + ARGS_MAX_STR * ARGS_AREA)

static __always_inline const struct arg_fn_spec *args_lookup(__u64 function_id)
{
	if (!args_on)
		return NULL;
	return bpf_map_lookup_elem(&arg_specs, &function_id);
}

/* Does the event of @kind read strings for @spec (else it needs no string areas)? */
static __always_inline bool args_has_strings(const struct arg_fn_spec *spec, __u32 kind)
{
	if (kind != KIND_CALL)
		return spec->ret_str;
	return spec->call_slot[0] != ARGS_SLOT_NONE;    /* the slots fill from the first */
}

/* One string from user address @ptr into area @i of @a. */
static __always_inline void args_read_str(struct rec_args *a, __u32 i, __u8 slot, __u64 ptr)
{
	__u8 *dst = a->bytes + i * ARGS_AREA;
	long n;

	a->s[i].slot = slot;
	a->s[i].len = 0;
	if (!ptr) {
		a->s[i].status = 2;     /* ATF_ARG_STR_NULL */
		return;
	}
	n = bpf_probe_read_user_str(dst, ARGS_AREA, (const void *)ptr);
	if (n <= 0) {
		a->s[i].status = 3;     /* ATF_ARG_STR_FAULT */
		return;
	}
	if (n == ARGS_AREA) {           /* longer than the cap: keep string_bytes of it */
		a->s[i].status = 1;     /* ATF_ARG_STR_TRUNCATED */
		a->s[i].len = string_bytes;
		return;
	}
	a->s[i].status = 0;
	a->s[i].len = (__u16)(n - 1);
}

/*
 * args_fill - the strings of @spec into the block after @stack (the detail record's snapshot),
 * from the registers detail_fill() put in @d. Returns the block's offset from the ring record's
 * start, for rec_detail.args_off (never 0: the event and the registers come first).
 */
static __always_inline __u32 args_fill(const struct arg_fn_spec *spec, __u32 kind, struct rec_detail *d,
				       __u8 *stack)
{
	struct rec_args *a = (struct rec_args *)(stack + ARGS_OFF);

	a->area = ARGS_AREA;
	a->count = ARGS_MAX_STR;
	for (__u32 i = 0; i < ARGS_MAX_STR; i++) {
		__u8 slot = kind == KIND_CALL ? spec->call_slot[i] : (i == 0 && spec->ret_str ? 0 : ARGS_SLOT_NONE);

		a->s[i].slot = ARGS_SLOT_NONE;  /* area i unused */
		if (slot != ARGS_SLOT_NONE)
			args_read_str(a, i, slot, d->gp[slot & 7]);
	}
	return sizeof(struct rec_event) + sizeof(struct rec_detail) + ARGS_OFF;
}

#endif
