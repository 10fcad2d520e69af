// SPDX-License-Identifier: MIT
/*
 * user/sym/symbols.c against real ELF files: the test targets (built into $OUTPUT/targets, or
 * the directory given as argv[1]), /bin/true and libc, and malformed copies of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "atf.h"
#include "symbols.h"

static char targets[1024];

static void target_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", targets, name);
}

/* Open a built target, or skip the test when it is not built. */
static struct sym_module *open_target(const char *name)
{
	struct sym_module *m = NULL;
	char path[1200];

	target_path(path, sizeof(path), name);
	if (access(path, R_OK)) {
		fprintf(stderr, "%s not built (make targets)\n", path);
		skip();
	}
	assert_int_equal(sym_module__open(&m, path, -1), 0);
	assert_non_null(m);
	return m;
}

static const struct sym_func *find(const struct sym_module *m, const char *name)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].name, name))
			return &m->funcs[i];
	fail_msg("no symbol %s in %s", name, m->path);
	return NULL;
}

/* The whole file, for checking the bytes at probe offsets. */
static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void test_first_instruction(void **state)
{
	struct sym_module *m = open_target("probe_sites");
	const struct sym_func *nop5 = find(m, "site_nop5"), *push = find(m, "site_push");
	const struct sym_func *endbr = find(m, "site_endbr"), *lea = find(m, "site_lea");
	size_t len;
	uint8_t *file = slurp(m->path, &len);

	assert_int_equal(nop5->insn, SYM_INSN_NOP5);
	assert_int_equal(push->insn, SYM_INSN_EMULATED);
	assert_int_equal(lea->insn, SYM_INSN_OTHER);
	assert_false(push->endbr64);
	/* endbr64 is hopped: the probe sits on the push 4 bytes in */
	assert_true(endbr->endbr64);
	assert_int_equal(endbr->insn, SYM_INSN_EMULATED);
	assert_int_equal(endbr->probe_offset, push->probe_offset + push->size + 4);
	assert_true(endbr->probe_offset < len);
	assert_memory_equal(file + endbr->probe_offset - 4, "\xf3\x0f\x1e\xfa\x55", 5);
	assert_memory_equal(file + nop5->probe_offset, "\x0f\x1f\x44\x00\x00", 5);
	assert_int_equal(file[push->probe_offset], 0x55);
	/* PIE: file offsets equal addresses in .text for this layout, and nothing is skipped */
	for (const struct sym_func *f = nop5; f <= lea; f++)
		assert_int_equal(f->skip, SYM_OK);
	assert_true(m->pie);
	assert_non_null(m->build_id);
	assert_int_equal(strlen(m->build_id), 40);
	free(file);
	sym_module__free(m);
}

static void test_endbr_compiled(void **state)
{
	struct sym_module *m = open_target("probe_sites_cet");
	const struct sym_func *outer = find(m, "site_outer");
	size_t len;
	uint8_t *file = slurp(m->path, &len);

	/* gcc -fcf-protection: endbr64; push %rbp */
	assert_true(outer->endbr64);
	assert_int_equal(outer->insn, SYM_INSN_EMULATED);
	assert_memory_equal(file + outer->probe_offset - 4, "\xf3\x0f\x1e\xfa", 4);
	assert_int_equal(file[outer->probe_offset], 0x55);
	free(file);
	sym_module__free(m);
}

static void test_skip_reasons(void **state)
{
	struct sym_module *m = open_target("probe_plt");
	const struct sym_func *a = find(m, "alias_a"), *b = find(m, "alias_b");

	assert_int_equal(find(m, "plt_stub")->skip, SYM_SKIP_PLT);
	assert_int_equal(find(m, "trap_first")->skip, SYM_SKIP_INSN);
	assert_int_equal(find(m, "data_func")->skip, SYM_SKIP_NOT_EXEC);
	assert_int_equal(find(m, "pick_ifunc")->skip, SYM_SKIP_IFUNC);
	assert_int_equal(find(m, "_init")->skip, SYM_SKIP_ZERO_SIZE);
	/* the ifunc's resolver is an ordinary function, not an alias of the ifunc */
	assert_int_equal(find(m, "resolve_pick")->skip, SYM_OK);
	/* aliases: the first name is probed, the second reported at the same place */
	assert_int_equal(a->skip, SYM_OK);
	assert_int_equal(b->skip, SYM_SKIP_ALIAS);
	assert_int_equal(a->addr, b->addr);
	assert_int_equal(a->probe_offset, b->probe_offset);
	assert_true(a->symbol_index < b->symbol_index);
	/* every symbol once: no name twice (.symtab and .dynsym merged) */
	for (size_t i = 0; i < m->nfuncs; i++)
		for (size_t j = i + 1; j < m->nfuncs; j++)
			assert_false(m->funcs[i].addr == m->funcs[j].addr &&
				     !strcmp(m->funcs[i].name, m->funcs[j].name));
	sym_module__free(m);
}

static void test_indexes_stable(void **state)
{
	struct sym_module *m1 = open_target("probe_plt"), *m2 = open_target("probe_plt");

	assert_int_equal(m1->nfuncs, m2->nfuncs);
	char canon[PATH_MAX];

	/* the id hashes the canonical path: the same file named two ways has one id */
	assert_non_null(realpath(m1->path, canon));
	assert_int_equal(m1->module_id, atf_module_id(canon));
	for (size_t i = 0; i < m1->nfuncs; i++) {
		assert_int_equal(m1->funcs[i].symbol_index, i + 1);
		assert_string_equal(m1->funcs[i].name, m2->funcs[i].name);
		assert_int_equal(m1->funcs[i].symbol_index, m2->funcs[i].symbol_index);
		if (i)
			assert_true(m1->funcs[i - 1].addr <= m1->funcs[i].addr);
	}
	sym_module__free(m1);
	sym_module__free(m2);
}

static void test_select(void **state)
{
	struct sym_module *m = open_target("probe_plt");
	const char *plain[] = { "plain_*" }, *two[] = { "plain_two" }, *all[] = { "*" };
	const char *mod_ok[] = { "probe_plt:plain_one" }, *mod_no[] = { "libc.so.6:plain_one" };
	const char *cxx[] = { "ns::plain_one" }, *aliases[] = { "alias_*" };

	assert_int_equal(sym_module__select(m, plain, 1, NULL, 0), 2);
	assert_true(find(m, "plain_one")->selected);
	assert_false(find(m, "main")->selected);
	assert_int_equal(sym_module__select(m, plain, 1, two, 1), 1);
	assert_int_equal(find(m, "plain_two")->skip, SYM_SKIP_EXCLUDED);
	assert_false(find(m, "plain_two")->selected);
	/* selecting again starts over */
	assert_int_equal(sym_module__select(m, plain, 1, NULL, 0), 2);
	assert_int_equal(find(m, "plain_two")->skip, SYM_OK);
	/* skipped functions are never selected, even by "*" */
	sym_module__select(m, all, 1, NULL, 0);
	assert_false(find(m, "plt_stub")->selected);
	assert_false(find(m, "alias_b")->selected);
	assert_true(find(m, "alias_a")->selected);
	assert_int_equal(sym_module__select(m, aliases, 1, NULL, 0), 1);
	/* naming only the alias selects the symbol that is probed for it */
	const char *alias_b[] = { "alias_b" };

	assert_int_equal(sym_module__select(m, alias_b, 1, NULL, 0), 1);
	assert_true(find(m, "alias_a")->selected);
	assert_false(find(m, "alias_b")->selected);
	assert_int_equal(sym_module__select(m, alias_b, 1, alias_b, 1), 0);
	/* MODULE: prefix, and C++ "::" is not a module separator */
	assert_int_equal(sym_module__select(m, mod_ok, 1, NULL, 0), 1);
	assert_int_equal(sym_module__select(m, mod_no, 1, NULL, 0), 0);
	assert_int_equal(sym_module__select(m, cxx, 1, NULL, 0), 0);
	/* no globs: everything probe-able */
	size_t n = sym_module__select(m, NULL, 0, NULL, 0), ok = 0;

	for (size_t i = 0; i < m->nfuncs; i++)
		ok += m->funcs[i].skip == SYM_OK;
	assert_int_equal(n, ok);
	sym_module__free(m);
}

static void test_system_files(void **state)
{
	struct sym_module *m = NULL;
	char *libc = sym_resolve_library(0, "libc.so.6");
	char *libc_self = sym_resolve_library(getpid(), "libc");
	const char *mem[] = { "memcpy", "malloc" };

	assert_non_null(libc);
	assert_non_null(libc_self);
	assert_non_null(strstr(libc_self, "libc.so.6"));
	assert_null(sym_resolve_library(0, "libdoesnotexist.so.9"));
	assert_int_equal(sym_module__open(&m, libc, -1), 0);
	assert_true(m->nfuncs > 1000);
	assert_true(sym_module__select(m, mem, 2, NULL, 0) >= 1);
	for (size_t i = 0; i < m->nfuncs; i++)
		if (m->funcs[i].skip == SYM_OK)
			assert_true(m->funcs[i].probe_offset > 0);
	sym_module__free(m);
	assert_int_equal(sym_module__open(&m, "/bin/true", -1), 0);
	sym_module__free(m);
	assert_int_equal(sym_module__open(&m, "/nonexistent/file", -1), -ENOENT);
	assert_null(m);
	free(libc);
	free(libc_self);
}

/* Write @len bytes to a temp file and open it: must be 0 or -EINVAL, never a crash. */
/* Libraries found as ld.so finds them: $ORIGIN RUNPATH, LD_LIBRARY_PATH first, the cache. */
static void test_loader_search(void **state)
{
	char exe[1200], lib[1200], dir[] = "/tmp/atftrace-ldso.XXXXXX", copy[1300];
	char canon_a[PATH_MAX], canon_b[PATH_MAX], *got;
	uint8_t *bytes;
	size_t len;
	FILE *f;

	target_path(exe, sizeof(exe), "shlib_user");
	target_path(lib, sizeof(lib), "libatftest.so");
	got = sym_resolve_needed(exe, "libatftest.so", NULL);      /* RUNPATH $ORIGIN */
	assert_non_null(got);
	assert_non_null(realpath(got, canon_a));
	assert_non_null(realpath(lib, canon_b));
	assert_string_equal(canon_a, canon_b);
	free(got);
	got = sym_resolve_needed(exe, "libc.so.6", NULL);          /* ld.so.cache or defaults */
	assert_non_null(got);
	assert_string_equal(strrchr(got, '/'), "/libc.so.6");
	free(got);
	got = sym_resolve_needed(exe, "libc", NULL);               /* a short name, as for -f */
	assert_non_null(got);
	free(got);
	assert_null(sym_resolve_needed(exe, "libnosuch.so.9", NULL));
	/* LD_LIBRARY_PATH comes before DT_RUNPATH */
	assert_non_null(mkdtemp(dir));
	snprintf(copy, sizeof(copy), "%s/libatftest.so", dir);
	bytes = slurp(lib, &len);
	assert_non_null(bytes);
	f = fopen(copy, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	fclose(f);
	free(bytes);
	got = sym_resolve_needed(exe, "libatftest.so", dir);
	assert_non_null(got);
	assert_string_equal(got, copy);
	free(got);
	/* a file of another class or machine is passed over, as ld.so does */
	f = fopen(copy, "w");
	assert_non_null(f);
	fputs("not an ELF file", f);
	fclose(f);
	got = sym_resolve_needed(exe, "libatftest.so", dir);
	assert_non_null(got);
	assert_string_not_equal(got, copy);
	free(got);
	unlink(copy);
	rmdir(dir);
}

static int open_bytes(const uint8_t *buf, size_t len)
{
	char path[] = "/tmp/atftrace-symtest.XXXXXX";
	struct sym_module *m = NULL;
	int fd = mkstemp(path), err;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	err = sym_module__open(&m, path, fd);
	if (!err) {
		sym_module__select(m, NULL, 0, NULL, 0);
		sym_module__free(m);
	}
	close(fd);
	unlink(path);
	assert_true(err == 0 || err == -EINVAL);
	return err;
}

static void test_malformed(void **state)
{
	char path[1200];
	size_t len, rejected = 0;
	uint8_t *file, *copy;
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);

	target_path(path, sizeof(path), "probe_plt");
	if (access(path, R_OK))
		skip();
	file = slurp(path, &len);
	copy = malloc(len);
	assert_non_null(copy);
	/* One message per bad file is expected: keep the log short (SYMTEST_NOISY=1 shows them). */
	if (!getenv("SYMTEST_NOISY"))
		dup2(devnull, 2);
	/* truncated copies */
	for (size_t cut = 0; cut < len; cut += cut < 256 ? 7 : 331)
		rejected += open_bytes(file, cut) != 0;
	/* random bytes, and random corruption of a valid file (fixed seed: reproducible) */
	srand(12345);
	for (int round = 0; round < 300; round++) {
		memcpy(copy, file, len);
		if (round < 50) {
			for (size_t i = 0; i < len; i++)
				copy[i] = (uint8_t)rand();
		} else {
			for (int k = 0; k < 1 + round % 16; k++)
				copy[(size_t)rand() % (round % 2 ? 64 : len)] = (uint8_t)rand();
		}
		open_bytes(copy, len);
	}
	/* header fields pointing outside the file */
	memcpy(copy, file, len);
	memset(copy + 0x28, 0xff, 8);   /* e_shoff */
	open_bytes(copy, len);
	dup2(saved, 2);
	close(saved);
	close(devnull);
	assert_true(rejected > 10);
	assert_int_equal(open_bytes(file, len), 0);
	free(copy);
	free(file);
}

/* sym_elf_defines: the unwinder's entry points, in a library, a program with its own copy
 * (.symtab), and neither; an undefined (imported) symbol does not count. */
static void test_defines(void **state)
{
	static const char *const names[] = { "_Unwind_RaiseException", "__cxa_begin_catch",
					     "no_such_function" };
	char path[1200];
	char *libgcc = sym_resolve_library(0, "libgcc_s.so.1");
	(void)state;

	target_path(path, sizeof(path), "cxx_throw_static");
	if (access(path, R_OK)) {
		free(libgcc);
		skip();
	}
	assert_int_equal(sym_elf_defines(path, names, 3), 3);
	/* cxx_throw calls __cxa_begin_catch from libstdc++: imported, not defined */
	target_path(path, sizeof(path), "cxx_throw");
	assert_int_equal(sym_elf_defines(path, names, 3), 0);
	if (libgcc)
		assert_int_equal(sym_elf_defines(libgcc, names, 3), 1);
	free(libgcc);
	assert_int_equal(sym_elf_defines("/nonexistent", names, 3), 0);
	assert_int_equal(sym_elf_defines("/proc/self/status", names, 3), 0);   /* no ELF */
}

static void test_names(void **state)
{
	assert_string_equal(sym_skip_str(SYM_SKIP_PLT), "plt");
	assert_string_equal(sym_skip_str(SYM_SKIP_ALIAS), "alias");
	assert_string_equal(sym_insn_str(SYM_INSN_NOP5), "nop5");
	assert_string_equal(sym_insn_str(SYM_INSN_OTHER), "single-step");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_defines),
		cmocka_unit_test(test_first_instruction),
		cmocka_unit_test(test_endbr_compiled),
		cmocka_unit_test(test_skip_reasons),
		cmocka_unit_test(test_indexes_stable),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_loader_search),
		cmocka_unit_test(test_system_files),
		cmocka_unit_test(test_malformed),
	};
	const char *out = getenv("OUTPUT");

	if (argc > 1)
		snprintf(targets, sizeof(targets), "%s", argv[1]);
	else
		snprintf(targets, sizeof(targets), "%s/targets", out && *out ? out : ".output");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
