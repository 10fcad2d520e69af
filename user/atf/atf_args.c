// SPDX-License-Identifier: MIT
/*
 * Typed arguments (include/atf_args.h): spec parsing in uftrace's -A/-R spelling, the session's
 * args.txt, the string extension of detail records, and value formatting for dump and exports.
 * Pure code: no BPF, no DWARF.
 */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atf_args.h"
#include "byteorder.h"

/* ---- specs ---------------------------------------------------------------------------------- */

static int spec_err(char *err, size_t errlen, const char *item, int ilen, const char *why)
{
	snprintf(err, errlen, "'%.*s': %s", ilen, item, why);
	return -EINVAL;
}

static bool same_place(const struct atf_arg *a, const struct atf_arg *b)
{
	return a->where == b->where && (a->where == ATF_ARG_RET || a->index == b->index);
}

int atf_arg_spec_add(struct atf_arg_spec *s, const struct atf_arg *a)
{
	for (size_t i = 0; i < s->n; i++)
		if (same_place(&s->items[i], a))
			return 0;
	if (s->n >= ATF_ARGS_MAX_ITEMS)
		return -E2BIG;
	s->items[s->n] = *a;
	if (a->type && !(s->items[s->n].type = strdup(a->type)))
		return -ENOMEM;
	s->n++;
	return 0;
}

void atf_arg_spec_free(struct atf_arg_spec *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->items[i].type);
	s->n = 0;
}

/* One item "argN/FMT" of @ilen bytes at @it. */
static int parse_item(const char *it, int ilen, struct atf_arg *a, char *err, size_t errlen)
{
	char item[256], *fmt, *end;
	unsigned long n = 0;

	if (ilen <= 0 || ilen >= (int)sizeof(item))
		return spec_err(err, errlen, it, ilen, "not argN, fpargN or retval");
	memcpy(item, it, (size_t)ilen);
	item[ilen] = '\0';
	*a = (struct atf_arg){ .fmt = ATF_FMT_AUTO, .bits = 64 };
	if (strchr(item, '%'))
		return spec_err(err, errlen, it, ilen, "register or stack placement (%...) is not supported");
	fmt = strchr(item, '/');
	if (fmt)
		*fmt++ = '\0';
	if (!strcmp(item, "retval")) {
		a->where = ATF_ARG_RET;
	} else if (!strncmp(item, "arg", 3) || !strncmp(item, "fparg", 5)) {
		const char *num = item + (item[0] == 'f' ? 5 : 3);

		a->where = item[0] == 'f' ? ATF_ARG_FP : ATF_ARG_INT;
		if (!isdigit((unsigned char)*num))
			return spec_err(err, errlen, it, ilen, "not argN, fpargN or retval");
		n = strtoul(num, &end, 10);
		if (*end)
			return spec_err(err, errlen, it, ilen, "not argN, fpargN or retval");
		if (n < 1 || n > ATF_ARGS_MAX_INT)
			return spec_err(err, errlen, it, ilen, a->where == ATF_ARG_FP ?
					"fpargN takes N from 1 to 8" : "argN takes N from 1 to 8");
		a->index = (uint8_t)(n - 1);
		if (a->where == ATF_ARG_FP)
			a->fmt = ATF_FMT_F;
	} else {
		return spec_err(err, errlen, it, ilen, "not argN, fpargN or retval");
	}
	if (!fmt)
		return 0;
	if (!*fmt)
		return spec_err(err, errlen, it, ilen, "no format after '/'");
	if (a->where == ATF_ARG_FP) {
		/* fpargN/BITS only: the value is a float whatever the letter */
		if (strcmp(fmt, "32") && strcmp(fmt, "64") && strcmp(fmt, "80"))
			return spec_err(err, errlen, it, ilen, "fpargN takes /32, /64 or /80");
		a->bits = (uint8_t)atoi(fmt);
		return 0;
	}
	switch (*fmt) {
	case 'd': a->fmt = ATF_FMT_AUTO; break;
	case 'i': a->fmt = ATF_FMT_D; break;
	case 'u': a->fmt = ATF_FMT_U; break;
	case 'x': a->fmt = ATF_FMT_X; break;
	case 'o': a->fmt = ATF_FMT_O; break;
	case 'S':
		return spec_err(err, errlen, it, ilen, "std::string (S) is not supported");
	case 'p': a->fmt = ATF_FMT_P; break;
	case 's': a->fmt = ATF_FMT_S; break;
	case 'c': a->fmt = ATF_FMT_C; a->bits = 8; break;
	case 'f': a->fmt = ATF_FMT_F; break;
	case 'e': case 't': {
		/* e:NAME; t[SIZE]:NAME (uftrace writes the struct's size, which is not needed here) */
		const char *name = fmt + 1 + (*fmt == 't' ? strspn(fmt + 1, "0123456789") : 0);

		if (*name != ':' || !name[1])
			return spec_err(err, errlen, it, ilen, fmt[0] == 'e' ? "/e needs a name: /e:NAME" :
					"/t needs a name: /t:NAME");
		a->fmt = *fmt == 'e' ? ATF_FMT_ENUM : ATF_FMT_TYPE;
		if (!(a->type = strdup(name + 1)))
			return -ENOMEM;
		return 0;
	}
	default:
		return spec_err(err, errlen, it, ilen, "unknown format (d i u x o p s c f e:NAME t:NAME)");
	}
	if (fmt[1] && a->fmt == ATF_FMT_F) {
		if (strcmp(fmt + 1, "32") && strcmp(fmt + 1, "64") && strcmp(fmt + 1, "80"))
			return spec_err(err, errlen, it, ilen, "a float's size must be 32, 64 or 80");
		a->bits = (uint8_t)atoi(fmt + 1);
	} else if (fmt[1]) {
		if (a->fmt == ATF_FMT_S || a->fmt == ATF_FMT_P ||
		    (strcmp(fmt + 1, "8") && strcmp(fmt + 1, "16") && strcmp(fmt + 1, "32") &&
		     strcmp(fmt + 1, "64")))
			return spec_err(err, errlen, it, ilen, "size must be 8, 16, 32 or 64");
		a->bits = (uint8_t)atoi(fmt + 1);
	}
	if (a->fmt == ATF_FMT_F && a->where == ATF_ARG_INT) {
		/* a float argument travels in an xmm register, as fparg: uftrace reads argN/f so */
		a->where = ATF_ARG_FP;
	}
	return 0;
}

int atf_arg_spec_parse(const char *text, struct atf_arg_spec *out, char *err, size_t errlen)
{
	const char *p = text;

	if (!*text)
		return spec_err(err, errlen, text, 0, "empty");
	while (*p) {
		const char *comma = strchr(p, ',');
		int ilen = comma ? (int)(comma - p) : (int)strlen(p);
		struct atf_arg a;
		int rc = parse_item(p, ilen, &a, err, errlen);

		if (rc)
			return rc;
		rc = atf_arg_spec_add(out, &a);
		free(a.type);
		if (rc == -E2BIG)
			return spec_err(err, errlen, text, (int)strlen(text), "more than 16 items");
		if (rc)
			return rc;
		if (!comma)
			break;
		p = comma + 1;
		if (!*p)
			return spec_err(err, errlen, text, (int)strlen(text), "ends with ','");
	}
	return 0;
}

char *atf_arg_spec_format(const struct atf_arg_spec *s, char *buf, size_t len)
{
	static const char letters[] = { [ATF_FMT_AUTO] = 'd', [ATF_FMT_D] = 'i', [ATF_FMT_U] = 'u',
					[ATF_FMT_X] = 'x', [ATF_FMT_O] = 'o',
					[ATF_FMT_P] = 'p', [ATF_FMT_S] = 's', [ATF_FMT_C] = 'c',
					[ATF_FMT_F] = 'f', [ATF_FMT_ENUM] = 'e', [ATF_FMT_TYPE] = 't' };
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		const struct atf_arg *a = &s->items[i];
		int w;

		if (a->where == ATF_ARG_FP)
			w = snprintf(buf + off, len - off, "%sfparg%u/%u", i ? "," : "", a->index + 1, a->bits);
		else if (a->fmt == ATF_FMT_ENUM || a->fmt == ATF_FMT_TYPE)
			w = snprintf(buf + off, len - off, "%s%s%.0u/%c:%s", i ? "," : "",
				     a->where == ATF_ARG_RET ? "retval" : "arg",
				     a->where == ATF_ARG_RET ? 0 : a->index + 1, letters[a->fmt], a->type);
		else if (a->fmt == ATF_FMT_S || a->fmt == ATF_FMT_P)
			w = snprintf(buf + off, len - off, "%s%s%.0u/%c", i ? "," : "",
				     a->where == ATF_ARG_RET ? "retval" : "arg",
				     a->where == ATF_ARG_RET ? 0 : a->index + 1, letters[a->fmt]);
		else
			w = snprintf(buf + off, len - off, "%s%s%.0u/%c%u", i ? "," : "",
				     a->where == ATF_ARG_RET ? "retval" : "arg",
				     a->where == ATF_ARG_RET ? 0 : a->index + 1, letters[a->fmt], a->bits);
		if (w < 0 || (size_t)w >= len - off)
			return NULL;
		off += (size_t)w;
	}
	return buf;
}

bool atf_args_has_ret(const struct atf_arg_spec *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->items[i].where == ATF_ARG_RET)
			return true;
	return false;
}

bool atf_args_has_args(const struct atf_arg_spec *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->items[i].where != ATF_ARG_RET)
			return true;
	return false;
}

/* ---- the string extension --------------------------------------------------------------------- */

int atf_args_strings(const uint8_t *p, size_t len, struct atf_arg_str *out)
{
	size_t off = ATF_ARGS_STR_HDR;
	unsigned count;

	if (len < ATF_ARGS_STR_HDR || memcmp(p, ATF_ARGS_STR_MAGIC, 4))
		return 0;
	count = get_le16(p + 4);
	if (count > ATF_ARGS_MAX_STR)
		return -EINVAL;
	for (unsigned i = 0; i < count; i++) {
		if (len - off < ATF_ARGS_STR_ENTRY_HDR)
			return -EINVAL;
		out[i] = (struct atf_arg_str){ .slot = p[off], .status = p[off + 1],
					       .len = get_le16(p + off + 2), .bytes = p + off + 4 };
		off += ATF_ARGS_STR_ENTRY_HDR;
		if (len - off < out[i].len)
			return -EINVAL;
		off += out[i].len;
	}
	return (int)count;
}

/* ---- formatting ------------------------------------------------------------------------------- */

struct out { char *buf; size_t len, off; };

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (o->off >= o->len)
		return;
	va_start(ap, fmt);
	w = vsnprintf(o->buf + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (w > 0)
		o->off = o->off + (size_t)w < o->len ? o->off + (size_t)w : o->len - 1;
}

/* A byte as C writes it inside quotes @q. */
static void put_char(struct out *o, uint8_t c, char q)
{
	switch (c) {
	case '\n': put(o, "\\n"); return;
	case '\t': put(o, "\\t"); return;
	case '\r': put(o, "\\r"); return;
	case '\\': put(o, "\\\\"); return;
	}
	if (c == (uint8_t)q)
		put(o, "\\%c", q);
	else if (c < 0x20 || c >= 0x7f)
		put(o, "\\x%02x", c);
	else
		put(o, "%c", c);
}

static uint64_t mask_bits(uint64_t v, unsigned bits)
{
	return bits >= 64 ? v : v & ((1ull << bits) - 1);
}

static int64_t sign_bits(uint64_t v, unsigned bits)
{
	if (bits >= 64)
		return (int64_t)v;
	v = mask_bits(v, bits);
	return (int64_t)(v ^ (1ull << (bits - 1))) - (int64_t)(1ull << (bits - 1));
}

const struct atf_enum *atf_args_enum(const struct atf_args *set, const char *name)
{
	for (size_t i = 0; set && i < set->nenums; i++)
		if (!strcmp(set->enums[i].name, name))
			return &set->enums[i];
	return NULL;
}

static const struct atf_arg_str *find_str(const struct atf_arg_str *strs, int n, unsigned slot)
{
	for (int i = 0; i < n; i++)
		if (strs[i].slot == slot)
			return &strs[i];
	return NULL;
}

/* One value: @v is the register (or stack slot) holding it, @have whether it was captured. */
static void put_value(struct out *o, const struct atf_args *set, const struct atf_arg *a, uint64_t v, bool have,
		      const struct atf_arg_str *str)
{
	const struct atf_enum *e;

	if (a->fmt == ATF_FMT_TYPE) {
		put(o, "%s", a->type);
		return;
	}
	if (a->fmt == ATF_FMT_F || a->where == ATF_ARG_FP) {
		put(o, "?");    /* xmm registers are not readable at a uprobe (docs/detail-payload.md) */
		return;
	}
	if (!have) {
		put(o, "?");
		return;
	}
	switch (a->fmt) {
	case ATF_FMT_U:
		put(o, "%" PRIu64, mask_bits(v, a->bits));
		return;
	case ATF_FMT_X:
		put(o, "%#" PRIx64, mask_bits(v, a->bits));
		return;
	case ATF_FMT_O:
		put(o, "%#" PRIo64, mask_bits(v, a->bits));
		return;
	case ATF_FMT_AUTO:
		if (sign_bits(v, a->bits) > 100000 || sign_bits(v, a->bits) < -100000)
			put(o, "%#" PRIx64, mask_bits(v, a->bits));
		else
			put(o, "%" PRId64, sign_bits(v, a->bits));
		return;
	case ATF_FMT_P:
		put(o, "0x%" PRIx64, v);
		return;
	case ATF_FMT_C:
		put(o, "'");
		put_char(o, (uint8_t)v, '\'');
		put(o, "'");
		return;
	case ATF_FMT_ENUM:
		e = atf_args_enum(set, a->type);
		for (size_t i = 0; e && i < e->n; i++) {
			if (e->values[i] == sign_bits(v, 32)) {
				put(o, "%s", e->labels[i]);
				return;
			}
		}
		put(o, "%" PRId64, sign_bits(v, 32));
		return;
	case ATF_FMT_S:
		if (!str) {
			put(o, v ? "0x%" PRIx64 : "(null)", v);
			return;
		}
		if (str->status == ATF_ARG_STR_NULL) {
			put(o, "(null)");
			return;
		}
		if (str->status == ATF_ARG_STR_FAULT) {
			put(o, "<bad string 0x%" PRIx64 ">", v);
			return;
		}
		put(o, "\"");
		for (size_t i = 0; i < str->len; i++)
			put_char(o, str->bytes[i], '"');
		put(o, str->status == ATF_ARG_STR_TRUNCATED ? "\"..." : "\"");
		return;
	default:
		put(o, "%" PRId64, sign_bits(v, a->bits));
		return;
	}
}

void atf_args_format_call(const struct atf_args *set, const struct atf_arg_spec *s, const uint64_t *gp,
			  unsigned ngp, const struct atf_arg_str *strs, int nstrs, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	bool first = true;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		const struct atf_arg *a = &s->items[i];

		if (a->where == ATF_ARG_RET)
			continue;
		put(&o, first ? "" : ", ");
		first = false;
		put_value(&o, set, a, a->where == ATF_ARG_INT && a->index < ngp ? gp[a->index] : 0,
			  a->where == ATF_ARG_INT && a->index < ngp,
			  a->where == ATF_ARG_INT ? find_str(strs, nstrs, a->index) : NULL);
	}
}

bool atf_args_format_ret(const struct atf_args *set, const struct atf_arg_spec *s, uint64_t rax,
			 const struct atf_arg_str *strs, int nstrs, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };

	buf[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		if (s->items[i].where == ATF_ARG_RET) {
			put_value(&o, set, &s->items[i], rax, true, find_str(strs, nstrs, 0));
			return true;
		}
	}
	return false;
}

/* ---- args.txt -------------------------------------------------------------------------------- */

const struct atf_arg_spec *atf_args_find(const struct atf_args *set, uint64_t function_id)
{
	size_t lo = 0, hi = set ? set->nfn : 0;

	/* sorted by function id when loaded (atf_args_load) */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (set->fn[mid].function_id == function_id)
			return &set->fn[mid].spec;
		if (set->fn[mid].function_id < function_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct atf_enum *atf_args_enum_add(struct atf_args *set, const char *name)
{
	struct atf_enum *n = realloc(set->enums, (set->nenums + 1) * sizeof(*n));
	struct atf_enum *e;

	if (!n)
		return NULL;
	set->enums = n;
	e = &set->enums[set->nenums];
	*e = (struct atf_enum){ .name = strdup(name) };
	if (!e->name)
		return NULL;
	set->nenums++;
	return e;
}

static int parse_enum(struct atf_args *set, char *name, char *list)
{
	struct atf_enum *e = atf_args_enum_add(set, name);
	char *save = NULL;

	if (!e)
		return -ENOMEM;
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		int64_t *v;
		char **l;
		long long val;

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		errno = 0;
		val = strtoll(tok, &end, 0);
		if (errno || *end || end == tok)
			return -EINVAL;
		v = realloc(e->values, (e->n + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->values = v;
		l = realloc(e->labels, (e->n + 1) * sizeof(*l));
		if (!l)
			return -ENOMEM;
		e->labels = l;
		if (!(l[e->n] = strdup(eq + 1)))
			return -ENOMEM;
		v[e->n++] = val;
	}
	return 0;
}

int atf_args_parse_line(struct atf_args *set, const char *line)
{
	char buf[4096], *kind, *a, *b, *save = NULL, err[256];
	int rc = 0;

	if (strlen(line) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, line);
	buf[strcspn(buf, "\n")] = '\0';
	kind = strtok_r(buf, " ", &save);
	if (!kind || kind[0] == '#')
		return 0;
	a = strtok_r(NULL, " ", &save);
	b = strtok_r(NULL, "", &save);
	if (!a || !b)
		return -EINVAL;
	if (!strcmp(kind, "enum"))
		return parse_enum(set, a, b);
	if (!strcmp(kind, "fn")) {
		struct atf_args_fn *n = realloc(set->fn, (set->nfn + 1) * sizeof(*n));
		char *end;

		if (!n)
			return -ENOMEM;
		set->fn = n;
		n += set->nfn;
		memset(n, 0, sizeof(*n));
		errno = 0;
		n->function_id = strtoull(a, &end, 0);
		if (errno || *end)
			return -EINVAL;
		rc = atf_arg_spec_parse(b, &n->spec, err, sizeof(err));
		set->nfn++;     /* freed with the set, parsed or not */
		return rc;
	}
	return 0;       /* a later version's line kind: skipped */
}

static int cmp_fn(const void *a, const void *b)
{
	uint64_t x = ((const struct atf_args_fn *)a)->function_id, y = ((const struct atf_args_fn *)b)->function_id;

	return x < y ? -1 : x > y;
}

int atf_args_load(const char *dir, struct atf_args **out)
{
	char path[4096], line[4096];
	FILE *f;
	struct atf_args *set;
	int rc = 0;

	*out = NULL;
	snprintf(path, sizeof(path), "%s/args.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(path, sizeof(path), "%s/../args.txt", dir);
		f = fopen(path, "r");
	}
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	set = calloc(1, sizeof(*set));
	if (!set) {
		fclose(f);
		return -ENOMEM;
	}
	while (!rc && fgets(line, sizeof(line), f))
		rc = atf_args_parse_line(set, line);
	fclose(f);
	if (rc) {
		atf_args_free(set);
		return rc;
	}
	if (set->nfn)
		qsort(set->fn, set->nfn, sizeof(*set->fn), cmp_fn);
	*out = set;
	return 0;
}

void atf_args_free(struct atf_args *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->nfn; i++)
		atf_arg_spec_free(&set->fn[i].spec);
	for (size_t i = 0; i < set->nenums; i++) {
		for (size_t k = 0; k < set->enums[i].n; k++)
			free(set->enums[i].labels[k]);
		free(set->enums[i].labels);
		free(set->enums[i].values);
		free(set->enums[i].name);
	}
	free(set->fn);
	free(set->enums);
	free(set);
}
