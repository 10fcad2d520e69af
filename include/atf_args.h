/* SPDX-License-Identifier: MIT */
/*
 * Typed arguments and return values (user/atf/atf_args.c): the argument specs of uftrace's
 * -A/-R spelling, the session's args.txt that records them, the string extension of a detail
 * record, and the text a value prints as.
 *
 * A spec is a comma-separated list of items:
 *   argN[/FMT[BITS]]   the N-th integer-class argument (SysV order: rdi rsi rdx rcx r8 r9, then
 *                      the stack; N = 1..8, as the detail record holds them)
 *   fpargN[/BITS]      the N-th floating-point argument (xmm), N = 1..8
 *   retval[/FMT[BITS]] the return value (rax; /f: xmm0)
 * FMT, as uftrace spells them: d (the default: decimal, or hex beyond +-100000), i (signed
 * decimal), u (unsigned), x (hex), o (octal), p (pointer), s (string), c (char), f (float),
 * e:NAME (enum NAME, by its value names), t[SIZE]:NAME (a struct or union passed by value:
 * shows NAME). BITS: 8, 16, 32 or 64 (default 64, a long), for d i u x o.
 * uftrace's "S" (std::string) and "%REG" / "%stack+N" placements are refused with one line.
 *
 * args.txt (in the session directory, written by record) holds one line per function and one
 * per enum:
 *   fn 0xFUNCTION_ID SPEC
 *   enum NAME VALUE=LABEL,VALUE=LABEL,...
 *
 * String extension: a detail record whose total_length exceeds 24 + 100 + stack_size carries,
 * after the stack bytes, "ATAS", u16 count, u16 reserved, then count entries of u8 slot (the
 * gp[] index: argN-1 at a CALL, 0 for retval), u8 status (enum atf_arg_str_status), u16 len
 * and len bytes (no NUL). docs/detail-payload.md describes it.
 */
#ifndef ATFTRACE_ATF_ARGS_H
#define ATFTRACE_ATF_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ATF_ARGS_MAX_ITEMS      16      /* items of one spec */
#define ATF_ARGS_MAX_INT        8       /* arg1..arg8 */
#define ATF_ARGS_MAX_STR        4       /* string items of one event */
#define ATF_ARGS_STR_MAGIC      "ATAS"
#define ATF_ARGS_STR_HDR        8       /* magic, count, reserved */
#define ATF_ARGS_STR_ENTRY_HDR  4       /* slot, status, len */

enum atf_arg_where { ATF_ARG_INT, ATF_ARG_FP, ATF_ARG_RET };
enum atf_arg_fmt {
	ATF_FMT_AUTO,               /* d, or no format: decimal, hex beyond +-100000 (uftrace's) */
	ATF_FMT_D,                  /* i: signed decimal */
	ATF_FMT_U, ATF_FMT_X, ATF_FMT_O, ATF_FMT_P, ATF_FMT_S, ATF_FMT_C, ATF_FMT_F, ATF_FMT_ENUM,
	ATF_FMT_TYPE,
};
enum atf_arg_str_status {
	ATF_ARG_STR_OK = 0,
	ATF_ARG_STR_TRUNCATED = 1,  /* longer than the cap: the first cap bytes */
	ATF_ARG_STR_NULL = 2,       /* a NULL pointer */
	ATF_ARG_STR_FAULT = 3,      /* the pointer could not be read */
};

struct atf_arg {
	uint8_t where;              /* enum atf_arg_where */
	uint8_t index;              /* argN, fpargN: N - 1 */
	uint8_t fmt;                /* enum atf_arg_fmt */
	uint8_t bits;               /* 8, 16, 32, 64 */
	char *type;                 /* ATF_FMT_ENUM, ATF_FMT_TYPE: the type's name */
};

struct atf_arg_spec {
	struct atf_arg items[ATF_ARGS_MAX_ITEMS];
	size_t n;
};

struct atf_enum {
	char *name;
	int64_t *values;
	char **labels;
	size_t n;
};

/* One string of an event, pointing into the record. */
struct atf_arg_str {
	uint8_t slot, status;
	uint16_t len;
	const uint8_t *bytes;
};

/* A session's specs (args.txt). */
struct atf_args {
	struct atf_args_fn { uint64_t function_id; struct atf_arg_spec spec; } *fn;
	size_t nfn;
	struct atf_enum *enums;
	size_t nenums;
};

/**
 * atf_arg_spec_parse - parse @text (a spec, as above) and append its items to @out.
 * Returns 0, or -EINVAL with one line in @err (e.g. "arg9: argN takes N from 1 to 8").
 */
int atf_arg_spec_parse(const char *text, struct atf_arg_spec *out, char *err, size_t errlen);

/** atf_arg_spec_format - @s as spec text (parseable by atf_arg_spec_parse); NULL on overflow. */
char *atf_arg_spec_format(const struct atf_arg_spec *s, char *buf, size_t len);

/** atf_arg_spec_add - add @a (deep-copying its type) unless an item for the same place is there. */
int atf_arg_spec_add(struct atf_arg_spec *s, const struct atf_arg *a);
void atf_arg_spec_free(struct atf_arg_spec *s);

/**
 * atf_args_strings - the string extension of a detail record (@p, @len: the bytes after the
 * stack snapshot). Returns the number of strings put in @out (at most ATF_ARGS_MAX_STR), 0 when
 * there is no extension, -EINVAL when one is malformed.
 */
int atf_args_strings(const uint8_t *p, size_t len, struct atf_arg_str *out);

/**
 * atf_args_format_call - "v1, v2, ..." for the argument items of @s at a CALL: @gp the
 * integer slots (gp[0..7]; @ngp of them valid), @strs the record's strings.
 * atf_args_format_ret - "v" for the retval item (@rax, the RETURN's strings); false if none.
 */
void atf_args_format_call(const struct atf_args *set, const struct atf_arg_spec *s, const uint64_t *gp,
			  unsigned ngp, const struct atf_arg_str *strs, int nstrs, char *buf, size_t len);
bool atf_args_format_ret(const struct atf_args *set, const struct atf_arg_spec *s, uint64_t rax,
			 const struct atf_arg_str *strs, int nstrs, char *buf, size_t len);

/** atf_args_has_ret / atf_args_has_args - whether @s has a retval item / an argument item. */
bool atf_args_has_ret(const struct atf_arg_spec *s);
bool atf_args_has_args(const struct atf_arg_spec *s);

/** atf_args_load - read @dir/args.txt, else @dir/../args.txt; *@out is NULL when neither exists. */
int atf_args_load(const char *dir, struct atf_args **out);
/** atf_args_parse_line - one line of args.txt into @set (tests use it directly). */
int atf_args_parse_line(struct atf_args *set, const char *line);
struct atf_detail_event;

/**
 * atf_args_detail_text - the typed text of detail record @d of an event of @kind (ATF_KIND_*):
 * a CALL's "v1, v2, ..." or a RETURN's value, into @buf. Returns 1 when written, 0 when its
 * function has no spec (or a RETURN has no retval item). (user/atf/atf_args_detail.c)
 */
int atf_args_detail_text(const struct atf_args *set, const struct atf_detail_event *d, uint32_t kind,
			 bool arm64, char *buf, size_t len);

const struct atf_arg_spec *atf_args_find(const struct atf_args *set, uint64_t function_id);
const struct atf_enum *atf_args_enum(const struct atf_args *set, const char *name);

/** atf_args_enum_add - a new enum @name with no values yet, at the end of @set; NULL on ENOMEM. */
struct atf_enum *atf_args_enum_add(struct atf_args *set, const char *name);
void atf_args_free(struct atf_args *set);

#endif
