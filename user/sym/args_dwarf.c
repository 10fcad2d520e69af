// SPDX-License-Identifier: MIT
/*
 * --auto-args: a traced function's parameters and return type from DWARF (elfutils' libdw), as
 * an argument spec (include/atf_args.h), read from the module itself when it has .debug_info,
 * else from its separate debug file (user/sym/debuginfo.c finds it).
 *
 * Each parameter takes its place in the x86_64 SysV order: integers, pointers and enums take the
 * next integer register (arg1..arg6, then the stack: arg7, arg8); float and double take the next
 * xmm register (fpargN); a struct or union by value of up to 16 bytes takes one or two integer
 * registers (assumed INTEGER class; it is shown by its type name), a larger one goes on the stack
 * and takes none; a return value larger than 16 bytes is returned through a hidden pointer in
 * rdi, which shifts every argument by one. Parameters past arg8, long double and varargs end the
 * list. char pointers (char, signed or unsigned, const or not) are strings. On arm64 (AAPCS64)
 * the registers are x0..x7 and v0..v7, a larger struct is passed as a pointer to a copy (one
 * register) and a large return value's address travels in x8, which shifts nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include "args_dwarf.h"

struct args_dwarf {
	int fd;
	Dwarf *dbg;
};

static int try_open(struct args_dwarf *d, const char *path)
{
	Dwarf_Off off;
	size_t hsize;

	if (!path)
		return -ENOENT;
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0)
		return -errno;
	d->dbg = dwarf_begin(d->fd, DWARF_C_READ);
	/* a file with no compilation unit (only .eh_frame, say) has no types either */
	if (d->dbg && dwarf_nextcu(d->dbg, 0, &off, &hsize, NULL, NULL, NULL) == 0)
		return 0;
	if (d->dbg)
		dwarf_end(d->dbg);
	d->dbg = NULL;
	close(d->fd);
	d->fd = -1;
	return -ENOENT;
}

int args_dwarf_open(struct args_dwarf **out, const struct sym_module *m)
{
	struct args_dwarf *d = calloc(1, sizeof(*d));
	const char *path = m->open_path ? m->open_path : m->path;
	int err;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->fd = -1;
	err = try_open(d, m->debug_path);
	if (err)
		err = try_open(d, path);
	if (err) {
		/* a module with .symtab but its DWARF split off: its debug file was not looked for */
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
		char *found = NULL;
		enum sym_origin origin;
		int dfd = elf ? sym_debug_find(elf, path, &found, &origin) : -ENOENT;

		if (dfd >= 0)
			close(dfd);
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			close(fd);
		if (found)
			err = try_open(d, found);
		free(found);
	}
	if (err) {
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

void args_dwarf_close(struct args_dwarf *d)
{
	if (!d)
		return;
	dwarf_end(d->dbg);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

/* A type's name for display and for args.txt: no ',' (the spec separator) nor newline. */
static void type_name(Dwarf_Die *t, const char *prefix, char *buf, size_t len)
{
	const char *name = dwarf_diename(t);

	snprintf(buf, len, "%s%s", prefix, name ? name : "(anonymous)");
	for (char *p = buf; *p; p++)
		if (*p == ',' || *p == '\n')
			*p = ';';
}

static Dwarf_Word byte_size(Dwarf_Die *t)
{
	Dwarf_Attribute a;
	Dwarf_Word v = 0;

	if (dwarf_attr_integrate(t, DW_AT_byte_size, &a))
		dwarf_formudata(&a, &v);
	return v;
}

/* The enum @t's values into @set, once per name. */
static int add_enum(struct atf_args *set, Dwarf_Die *t, const char *name)
{
	struct atf_enum *e;
	Dwarf_Die c;

	if (atf_args_enum(set, name))
		return 0;
	if (!(e = atf_args_enum_add(set, name)))
		return -ENOMEM;
	if (dwarf_child(t, &c))
		return 0;
	do {
		Dwarf_Attribute a;
		Dwarf_Sword sv;
		int64_t *v;
		char **l;

		if (dwarf_tag(&c) != DW_TAG_enumerator || !dwarf_diename(&c) ||
		    !dwarf_attr(&c, DW_AT_const_value, &a) || dwarf_formsdata(&a, &sv))
			continue;
		if (!(v = realloc(e->values, (e->n + 1) * sizeof(*v))))
			return -ENOMEM;
		e->values = v;
		if (!(l = realloc(e->labels, (e->n + 1) * sizeof(*l))))
			return -ENOMEM;
		e->labels = l;
		if (!(l[e->n] = strdup(dwarf_diename(&c))))
			return -ENOMEM;
		v[e->n++] = sv;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

enum cls { CLS_INT, CLS_FP, CLS_MEM, CLS_STOP };

/*
 * Classify the type of @die (a parameter or a subprogram: its DW_AT_type) into @a; *@regs is how
 * many integer registers it takes. No DW_AT_type: void (a return type only).
 */
static enum cls classify(Dwarf_Die *die, struct atf_arg *a, unsigned *regs, struct atf_args *set, bool *is_void)
{
	Dwarf_Attribute at;
	Dwarf_Die t, p;
	char name[256];
	Dwarf_Word size;
	int enc = 0;

	*regs = 1;
	*is_void = false;
	if (!dwarf_attr_integrate(die, DW_AT_type, &at) || !dwarf_formref_die(&at, &t)) {
		*is_void = true;
		return CLS_STOP;
	}
	if (dwarf_peel_type(&t, &t))
		return CLS_STOP;
	size = byte_size(&t);
	a->bits = size >= 1 && size <= 8 ? (uint8_t)(size * 8) : 64;
	if (a->bits != 8 && a->bits != 16 && a->bits != 32)
		a->bits = 64;
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
		if (dwarf_attr(&t, DW_AT_encoding, &at)) {
			Dwarf_Word w;

			if (!dwarf_formudata(&at, &w))
				enc = (int)w;
		}
		if (enc == DW_ATE_float) {
			if (size > 8)
				return CLS_STOP;        /* long double: on the stack, x87 */
			a->fmt = ATF_FMT_F;
			return CLS_FP;
		}
		if (size > 8) {         /* __int128: two registers */
			*regs = 2;
			a->fmt = ATF_FMT_TYPE;
			type_name(&t, "", name, sizeof(name));
			return (a->type = strdup(name)) ? CLS_INT : CLS_STOP;
		}
		if (size == 1 && (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char))
			a->fmt = ATF_FMT_C;
		else if (enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char || enc == DW_ATE_boolean)
			a->fmt = ATF_FMT_U;
		else
			a->fmt = ATF_FMT_D;
		return CLS_INT;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		a->bits = 64;
		a->fmt = ATF_FMT_P;
		if (dwarf_tag(&t) == DW_TAG_pointer_type && dwarf_attr_integrate(&t, DW_AT_type, &at) &&
		    dwarf_formref_die(&at, &p) && !dwarf_peel_type(&p, &p) &&
		    dwarf_tag(&p) == DW_TAG_base_type && byte_size(&p) == 1 &&
		    dwarf_attr(&p, DW_AT_encoding, &at)) {
			Dwarf_Word w = 0;

			dwarf_formudata(&at, &w);
			if (w == DW_ATE_signed_char || w == DW_ATE_unsigned_char)
				a->fmt = ATF_FMT_S;
		}
		return CLS_INT;
	case DW_TAG_enumeration_type:
		a->fmt = ATF_FMT_ENUM;
		type_name(&t, "", name, sizeof(name));
		for (char *c = name; *c; c++)
			if (*c == ' ')
				*c = '_';
		if (add_enum(set, &t, name) < 0 || !(a->type = strdup(name)))
			return CLS_STOP;
		return CLS_INT;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		a->fmt = ATF_FMT_TYPE;
		type_name(&t, dwarf_tag(&t) == DW_TAG_union_type ? "union " :
			  dwarf_tag(&t) == DW_TAG_class_type ? "class " : "struct ", name, sizeof(name));
		if (!(a->type = strdup(name)))
			return CLS_STOP;
		if (size > 16) {
#if defined(__aarch64__)
			return CLS_INT;         /* AAPCS64: a copy, passed by reference */
#else
			*regs = 0;
			return CLS_MEM;
#endif
		}
		*regs = size > 8 ? 2 : 1;
		return CLS_INT;
	default:
		return CLS_STOP;
	}
}

struct find { Dwarf_Addr addr; Dwarf_Die die; bool found; };

static int find_cb(Dwarf_Die *fn, void *arg)
{
	struct find *f = arg;
	Dwarf_Addr lo;

	if (dwarf_lowpc(fn, &lo) == 0 && lo == f->addr) {
		f->die = *fn;
		f->found = true;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

int args_dwarf_spec(struct args_dwarf *d, const struct sym_func *fn, struct atf_arg_spec *spec,
		    struct atf_args *set)
{
	/* an ifunc runs its implementation, not the resolver the symbol names */
	struct find f = { .addr = fn->ifunc_impl ? fn->ifunc_impl : fn->addr };
	Dwarf_Die cu, c, origin, *params = NULL;
	Dwarf_Attribute at;
	struct atf_arg a = { 0 };
	unsigned gp = 0, fp = 0, regs;
	bool is_void;
	enum cls k;
	int err = 0;

	if (!dwarf_addrdie(d->dbg, f.addr, &cu))
		return -ENOENT;
	dwarf_getfuncs(&cu, find_cb, &f, 0);
	if (!f.found)
		return -ENOENT;
	/* the parameters: the concrete DIE's, or its abstract origin's when it lists none */
	if (!dwarf_child(&f.die, &c))
		params = &c;
	else if (dwarf_attr(&f.die, DW_AT_abstract_origin, &at) && dwarf_formref_die(&at, &origin) &&
		 !dwarf_child(&origin, &c))
		params = &c;
	/* the return value */
	a = (struct atf_arg){ .where = ATF_ARG_RET };
	k = classify(&f.die, &a, &regs, set, &is_void);
	if (k == CLS_MEM)
		gp = 1;         /* returned through memory: rdi holds where (arm64: x8, never here) */
	if (!is_void && k != CLS_STOP)
		err = atf_arg_spec_add(spec, &a);
	free(a.type);
	while (!err && params) {
		if (dwarf_tag(params) == DW_TAG_unspecified_parameters)
			break;
		if (dwarf_tag(params) == DW_TAG_formal_parameter) {
			a = (struct atf_arg){ .where = ATF_ARG_INT };
			k = classify(params, &a, &regs, set, &is_void);
			if (k == CLS_STOP) {
				free(a.type);
				break;
			}
			if (k == CLS_FP) {
				a.where = ATF_ARG_FP;
				a.index = (uint8_t)fp++;
			} else if (k == CLS_INT) {
				a.index = (uint8_t)gp;
				gp += regs;
			}
			if ((k == CLS_FP && fp > ATF_ARGS_MAX_INT) || (k == CLS_INT && gp > ATF_ARGS_MAX_INT)) {
				free(a.type);
				break;
			}
			if (k != CLS_MEM)
				err = atf_arg_spec_add(spec, &a);
			free(a.type);
		}
		if (dwarf_siblingof(params, params))
			break;
	}
	return err == -E2BIG ? 0 : err;
}
