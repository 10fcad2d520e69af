/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * Typed arguments (bpf/args.bpf.h): the per-function spec the probes look up, and the string
 * block a detail record carries after its stack bytes. Plain __u8/__u16/__u32 records shared by
 * the BPF program and the recorder (user/record/recorder_args.c).
 */
#ifndef ATFTRACE_ARGS_H
#define ATFTRACE_ARGS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ARGS_MAX_STR            4       /* ATF_ARGS_MAX_STR: strings per event */
#define ARGS_MAX_STR_BYTES      255     /* --string-bytes at most */
#define ARGS_SLOT_NONE          0xff
#define ARGS_LIVE_FUNCTIONS     65536   /* arg_specs room for modules found while recording */

/* arg_specs map value, under the function id: which integer slots hold strings. */
struct arg_fn_spec {
	__u8 call_slot[ARGS_MAX_STR];   /* gp[] index (argN - 1) of each string at the CALL, filled
					 * from the first; NONE after the last */
	__u8 ret_str;                   /* 1: the return value (rax) is a string */
	__u8 at_call;                   /* 1: arguments are shown: the CALL has detail */
	__u8 at_return;                 /* 1: the return value is shown: the RETURN has detail */
	__u8 _pad;
};

/* One string's state (enum atf_arg_str_status). */
struct rec_args_str {
	__u8 slot;
	__u8 status;
	__u16 len;
};

/*
 * At rec_detail.args_off bytes from the ring record's start, after the stack snapshot:
 * ARGS_MAX_STR headers (slot ARGS_SLOT_NONE: unused), then ARGS_MAX_STR areas of string_bytes + 1 bytes, area i for
 * header i (the + 1 tells a string of exactly string_bytes bytes from a longer one).
 */
struct rec_args {
	__u32 count;
	__u32 area;                     /* bytes of each string area */
	struct rec_args_str s[ARGS_MAX_STR];
	__u8 bytes[];
};

#endif
