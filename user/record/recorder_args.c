// SPDX-License-Identifier: MIT
/*
 * Typed-argument options of `atftrace record` (include/recorder_args.h), in uftrace's spelling:
 *
 *   -A, --argument FUNC@SPEC     record FUNC's arguments, e.g. 'open@arg1/s,arg2/x'
 *   -R, --retval FUNC@SPEC       record FUNC's return value, e.g. 'open@retval/d'
 *   -A FUNC, -R FUNC             the same, typed from DWARF (as --auto-args, for FUNC only)
 *   --auto-args                  every traced function with DWARF: its parameters and return
 *                                value, typed (user/sym/args_dwarf.c)
 *   --string-bytes N             bytes of each string read at the call (default 64, 1-255)
 *
 * FUNC is a [MODULE:]GLOB, as for -f; SPEC as in include/atf_args.h. A function with a spec has
 * detail with every CALL and RETURN (bpf/args.bpf.h adds the strings), and the session's
 * args.txt says how to print them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "args.h"
#include "args_dwarf.h"
#include "atf_file.h"
#include "recorder_args.h"

enum { OPT_AUTO_ARGS = 2100, OPT_STRING_BYTES };

static const struct argp_option args_options[] = {
	{ "argument", 'A', "FUNC[@SPEC]", 0,
	  "Record FUNC's arguments as SPEC says: argN[/FMT], fpargN, comma-separated; FMT: d i u x "
	  "o p s c f e:ENUM, with a size 8/16/32/64 (repeatable; uftrace's spelling). Without "
	  "SPEC: typed from DWARF", 0 },
	{ "retval", 'R', "FUNC[@SPEC]", 0,
	  "Record FUNC's return value: retval[/FMT] (repeatable). Without SPEC: typed from DWARF", 0 },
	{ "auto-args", OPT_AUTO_ARGS, NULL, 0,
	  "Record the arguments and return value of every traced function with DWARF, typed", 0 },
	{ "string-bytes", OPT_STRING_BYTES, "N", 0,
	  "Bytes of each string argument read at the call (1-255, default 64)", 0 },
	{ 0 }
};

static int push_rule(struct args_opts *o, char *arg, struct argp_state *state, bool retval)
{
	char *at = strrchr(arg, '@'), err[512];
	struct args_rule *n, *r;

	if (at == arg || (at && !at[1]) || !*arg) {
		argp_error(state, "%s '%s': give FUNC@%s", retval ? "--retval" : "--argument", arg,
			   retval ? "retval[/FMT]" : "argN[/FMT],...");
		return EINVAL;
	}
	n = realloc(o->rules, (o->nrules + 1) * sizeof(*n));
	if (!n) {
		argp_failure(state, 1, ENOMEM, "-A/-R");
		return ENOMEM;
	}
	o->rules = n;
	r = &n[o->nrules];
	memset(r, 0, sizeof(*r));
	if (!(r->glob = at ? strndup(arg, (size_t)(at - arg)) : strdup(arg))) {
		argp_failure(state, 1, ENOMEM, "-A/-R");
		return ENOMEM;
	}
	o->nrules++;
	if (!at) {
		r->dwarf = retval ? ARGS_DWARF_RET : ARGS_DWARF_ARGS;
		return 0;
	}
	if (atf_arg_spec_parse(at + 1, &r->spec, err, sizeof(err))) {
		argp_error(state, "%s %s: %s", retval ? "--retval" : "--argument", arg, err);
		return EINVAL;
	}
	return 0;
}

static error_t args_parse(int key, char *arg, struct argp_state *state)
{
	struct args_opts *o = state->input;
	char *end;
	unsigned long v;

	switch (key) {
	case ARGP_KEY_INIT:
		*o = (struct args_opts){ .string_bytes = ARGS_DEFAULT_STRING_BYTES };
		return 0;
	case 'A':
	case 'R':
		return push_rule(o, arg, state, key == 'R');
	case OPT_AUTO_ARGS:
		o->auto_args = true;
		return 0;
	case OPT_STRING_BYTES:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v < 1 || v > ARGS_MAX_STR_BYTES) {
			argp_error(state, "--string-bytes: '%s' is not a number from 1 to %u", arg,
				   ARGS_MAX_STR_BYTES);
			return EINVAL;
		}
		o->string_bytes = (uint32_t)v;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

const struct argp args_argp = { .options = args_options, .parser = args_parse };

/* The BPF side of @s: which integer slots are strings (at most ARGS_MAX_STR of them). */
static void bpf_spec(const struct atf_arg_spec *s, struct arg_fn_spec *b)
{
	unsigned n = 0;

	memset(b, 0, sizeof(*b));
	memset(b->call_slot, ARGS_SLOT_NONE, sizeof(b->call_slot));
	for (size_t i = 0; i < s->n; i++) {
		const struct atf_arg *a = &s->items[i];

		if (a->where == ATF_ARG_RET)
			b->at_return = 1;
		else
			b->at_call = 1;
		if (a->fmt != ATF_FMT_S)
			continue;
		if (a->where == ATF_ARG_RET)
			b->ret_str = 1;
		else if (a->where == ATF_ARG_INT && n < ARGS_MAX_STR)
			b->call_slot[n++] = a->index;   /* more strings print as pointers */
	}
}

static int add_fn(struct args_opts *o, uint64_t id, struct atf_arg_spec *spec)
{
	size_t n = o->set.nfn + 1;
	struct atf_args_fn *f = realloc(o->set.fn, n * sizeof(*f));
	uint64_t *ids;
	struct arg_fn_spec *b;

	if (!f)
		return -ENOMEM;
	o->set.fn = f;
	if (!(ids = realloc(o->ids, n * sizeof(*ids))))
		return -ENOMEM;
	o->ids = ids;
	if (!(b = realloc(o->bpf, n * sizeof(*b))))
		return -ENOMEM;
	o->bpf = b;
	f[o->set.nfn] = (struct atf_args_fn){ .function_id = id, .spec = *spec };
	ids[o->set.nfn] = id;
	bpf_spec(spec, &b[o->set.nfn]);
	o->set.nfn = n;
	return 0;
}

/* @fn's DWARF items of the kinds in @mask (ARGS_DWARF_*) into @spec; whether DWARF knew it. */
static bool dwarf_items(struct args_opts *o, struct args_dwarf *dw, const struct sym_func *fn, unsigned mask,
			struct atf_arg_spec *spec, int *err)
{
	struct atf_arg_spec all = { .n = 0 };
	bool known = dw && args_dwarf_spec(dw, fn, &all, &o->set) == 0;

	for (size_t i = 0; !*err && i < all.n; i++) {
		bool ret = all.items[i].where == ATF_ARG_RET;

		if (mask & (ret ? ARGS_DWARF_RET : ARGS_DWARF_ARGS))
			*err = atf_arg_spec_add(spec, &all.items[i]);
		if (*err == -E2BIG)     /* 16 items shown at most: the rest are left out */
			*err = 0;
	}
	atf_arg_spec_free(&all);
	return known;
}

/* Float values cannot be read at a uprobe: say so once, where they are asked for. */
static void note_floats(struct args_opts *o)
{
	if (o->floats_noted)
		return;
	for (size_t i = 0; i < o->set.nfn; i++) {
		for (size_t k = 0; k < o->set.fn[i].spec.n; k++) {
			const struct atf_arg *a = &o->set.fn[i].spec.items[k];

			if (a->where == ATF_ARG_FP || a->fmt == ATF_FMT_F) {
				o->floats_noted = true;
				fprintf(stderr, "atftrace record: float arguments and return values show as '?': "
					"they are in xmm registers, which a uprobe's BPF program cannot read "
					"(pt_regs has none, and no helper reads the FPU)\n");
				return;
			}
		}
	}
}

/* The specs of @m's traced functions: -A/-R rules, then DWARF. Counts the rules' matches. */
static int resolve_module(struct args_opts *o, const struct sym_module *m)
{
	struct args_dwarf *dw = NULL;
	size_t typed = 0;
	int err = 0;

	if (o->want_dwarf && args_dwarf_open(&dw, m) < 0 && o->verbose)
		fprintf(stderr, "atftrace record: %s has no DWARF: no types for its arguments\n", m->path);
	for (size_t k = 0; !err && k < m->nfuncs; k++) {
		const struct sym_func *f = &m->funcs[k];
		struct atf_arg_spec spec = { .n = 0 };
		unsigned mask = o->auto_args ? ARGS_DWARF_ARGS | ARGS_DWARF_RET : 0;

		if (!f->selected || f->skip != SYM_OK)
			continue;
		/* -A/-R specs first: they win over DWARF's items for the same place */
		for (size_t r = 0; !err && r < o->nrules; r++) {
			if (!sym_glob_matches(o->rules[r].glob, m->path, f))
				continue;
			o->hits[r]++;
			mask |= o->rules[r].dwarf;
			for (size_t j = 0; !err && j < o->rules[r].spec.n; j++)
				err = atf_arg_spec_add(&spec, &o->rules[r].spec.items[j]);
			if (err == -E2BIG)
				err = 0;
		}
		if (!err && mask && dwarf_items(o, dw, f, mask, &spec, &err)) {
			typed++;
			for (size_t r = 0; r < o->nrules; r++)
				if (o->rules[r].dwarf && sym_glob_matches(o->rules[r].glob, m->path, f))
					o->typed_hits[r]++;
		}
		if (!err && spec.n)
			err = add_fn(o, (uint64_t)m->module_id << 32 | f->symbol_index, &spec);
		if (err || !spec.n)
			atf_arg_spec_free(&spec);
	}
	if (dw && o->verbose)
		fprintf(stderr, "atftrace record: --auto-args: %zu functions of %s typed from DWARF\n",
			typed, m->path);
	args_dwarf_close(dw);
	return err;
}

int args_resolve(struct args_opts *o, const struct rm_modules *mods, bool verbose)
{
	int err = 0;

	o->verbose = verbose;
	o->want_dwarf = o->auto_args;
	for (size_t r = 0; r < o->nrules; r++)
		o->want_dwarf |= o->rules[r].dwarf != 0;
	o->hits = calloc(o->nrules ?: 1, sizeof(*o->hits));
	o->typed_hits = calloc(o->nrules ?: 1, sizeof(*o->typed_hits));
	if (!o->hits || !o->typed_hits)
		return -ENOMEM;
	for (size_t i = 0; !err && i < mods->n; i++)
		err = resolve_module(o, mods->m[i]);
	/* a rule may name functions of a library still to be loaded: checked only without one */
	for (size_t r = 0; !err && !mods->npending && r < o->nrules; r++) {
		if (!o->hits[r]) {
			fprintf(stderr, "atftrace record: -A/-R %s: matches no traced function (trace it "
				"with -f)\n", o->rules[r].glob);
			err = -ENOENT;
		} else if (o->rules[r].dwarf && !o->typed_hits[r]) {
			fprintf(stderr, "atftrace record: -%c %s: no DWARF types for it (no debug info): "
				"give %s@%s\n", o->rules[r].dwarf == ARGS_DWARF_RET ? 'R' : 'A',
				o->rules[r].glob, o->rules[r].glob,
				o->rules[r].dwarf == ARGS_DWARF_RET ? "retval/FMT" : "argN/FMT,...");
			err = -ENOENT;
		}
	}
	if (!err)
		note_floats(o);
	return err;
}

/* A module found while recording (rm_modules.on_module): its specs into the map and args.txt. */
static void on_module(void *ctx, const struct sym_module *m)
{
	struct args_opts *o = ctx;
	size_t first = o->set.nfn;
	int err = resolve_module(o, m);

	for (size_t i = first; !err && i < o->set.nfn; i++)
		err = probes__arg_spec_set(o->probes, o->ids[i], &o->bpf[i]);
	if (!err && o->set.nfn > first) {
		note_floats(o);
		err = args_save(o, o->session_dir);
	}
	if (err)
		fprintf(stderr, "atftrace record: %s: its functions' typed arguments are left out: %s\n",
			m->path, strerror(-err));
}

int args_live(struct args_opts *o, struct rm_modules *mods, struct probes *p, const char *session_dir)
{
	if (!o->nrules && !o->auto_args)
		return 0;
	o->probes = p;
	if (!(o->session_dir = strdup(session_dir)))
		return -ENOMEM;
	mods->on_module = on_module;
	mods->on_module_ctx = o;
	return 0;
}

void args_probe_opts(const struct args_opts *o, struct probe_opts *po)
{
	po->args_wanted = o->nrules || o->auto_args;
	po->arg_fn_ids = o->ids;
	po->arg_fn_specs = o->bpf;
	po->narg_fns = o->set.nfn;
	po->string_bytes = o->string_bytes;
}

int args_save(const struct args_opts *o, const char *session_dir)
{
	char path[4096], spec[4096], *text = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (!o->set.nfn)
		return 0;
	f = open_memstream(&text, &len);
	if (!f)
		return -errno;
	fprintf(f, "# atftrace argument specs: fn FUNCTION_ID SPEC, enum NAME VALUE=LABEL,...\n");
	for (size_t i = 0; i < o->set.nenums; i++) {
		const struct atf_enum *e = &o->set.enums[i];

		if (!e->n)
			continue;       /* an enum without values prints its numbers anyway */
		fprintf(f, "enum %s ", e->name);
		for (size_t k = 0; k < e->n; k++)
			fprintf(f, "%s%lld=%s", k ? "," : "", (long long)e->values[k], e->labels[k]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < o->set.nfn; i++) {
		if (atf_arg_spec_format(&o->set.fn[i].spec, spec, sizeof(spec)))
			fprintf(f, "fn %#llx %s\n", (unsigned long long)o->set.fn[i].function_id, spec);
	}
	if (fclose(f)) {
		free(text);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/args.txt", session_dir);
	err = atf_file_replace(path, text, len, 0);     /* with the session's --mode */
	free(text);
	return err;
}

void args_opts_free(struct args_opts *o)
{
	for (size_t i = 0; i < o->nrules; i++) {
		free(o->rules[i].glob);
		atf_arg_spec_free(&o->rules[i].spec);
	}
	free(o->rules);
	for (size_t i = 0; i < o->set.nfn; i++)
		atf_arg_spec_free(&o->set.fn[i].spec);
	free(o->set.fn);
	for (size_t i = 0; i < o->set.nenums; i++) {
		for (size_t k = 0; k < o->set.enums[i].n; k++)
			free(o->set.enums[i].labels[k]);
		free(o->set.enums[i].labels);
		free(o->set.enums[i].values);
		free(o->set.enums[i].name);
	}
	free(o->set.enums);
	free(o->ids);
	free(o->bpf);
	free(o->hits);
	free(o->typed_hits);
	free(o->session_dir);
	memset(o, 0, sizeof(*o));
}
