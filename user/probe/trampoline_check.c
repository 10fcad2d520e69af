// SPDX-License-Identifier: MIT
/*
 * Entry trampolines: which functions can have one, decided from the file (trampoline_plan.h),
 * and which must get no probe at all because another tool rewrote them in the process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "trampoline.h"
#include "trampoline_area.h"
#include "trampoline_plan.h"

const char *tramp_reason_str(enum tramp_reason r)
{
	switch (r) {
	case TRAMP_UNSET:         return "-";
	case TRAMP_OK:            return "trampoline";
	case TRAMP_NOT_NEEDED:    return "nop5";
	case TRAMP_SHORT:         return "short";
	case TRAMP_BRANCH_IN:     return "branch-in";
	case TRAMP_INSN:          return "insn";
	case TRAMP_DECODE:        return "decode";
	case TRAMP_RANGE:         return "range";
	case TRAMP_THREAD_INSIDE: return "thread-inside";
	case TRAMP_TEXT_DIFFERS:  return "text-differs";
	case TRAMP_NO_AREA:       return "no-area";
	case TRAMP_NOT_MAPPED:    return "not-mapped";
	case TRAMP_NO_PTRACE:     return "no-ptrace";
	case TRAMP_LINK_FAILED:   return "link-failed";
	case TRAMP_REWRITTEN:     return "rewritten";
	case TRAMP_SECCOMP:       return "seccomp";
	case TRAMP_EMULATED:      return "emulated";
	case TRAMP_GIVEN_BACK:    return "given-back";
	case TRAMP_NO_GUARD:      return "no-guard";
	case TRAMP_TEXTREL:       return "textrel";
	case TRAMP_NREASONS:      break;
	}
	return "?";
}

const char *tramp_module_file(const struct sym_module *m)
{
	return m->open_path ? m->open_path : m->path;
}

/* @size bytes of the file at @off (malloc'd), or NULL. */
static uint8_t *read_code(int fd, uint64_t off, uint64_t size)
{
	uint8_t *code = size && size <= (16u << 20) ? malloc(size) : NULL;

	if (code && pread(fd, code, size, (off_t)off) != (ssize_t)size) {
		free(code);
		code = NULL;
	}
	return code;
}

/*
 * Does another symbol of @m enter the replaced bytes of its function @i: one that starts
 * inside them (a second entry point), or a part of it the compiler split off ("f.cold",
 * "f.part.0") that branches into them?
 */
static bool entered_elsewhere(int fd, const struct sym_module *m, size_t i, uint64_t patch_addr,
			      uint64_t patch_end)
{
	const struct sym_func *f = &m->funcs[i];
	size_t len = strlen(f->name);

	for (size_t j = i + 1; j < m->nfuncs && m->funcs[j].addr < patch_end; j++)
		if (m->funcs[j].addr > patch_addr)
			return true;
	for (size_t j = 0; j < m->nfuncs; j++) {
		const struct sym_func *s = &m->funcs[j];
		uint8_t *code;
		bool in;

		if (j == i || !s->size || !s->probe_offset || strncmp(s->name, f->name, len) ||
		    s->name[len] != '.')
			continue;
		code = read_code(fd, s->probe_offset - (s->endbr64 ? 4 : 0), s->size);
		in = !code || tramp_refers_into(code, s->size, s->addr, patch_addr, patch_end);
		free(code);
		if (in)
			return true;
	}
	return false;
}

/*
 * Every address that some function of the module branches to or points at, sorted, for the
 * module last asked about: a function elsewhere may jump into another's first bytes (glibc's
 * __mempcpy_avx512_unaligned_erms jumps 3 bytes into __memcpy_avx512_unaligned_erms), and no
 * symbol says so. Built once per module (libc: about 2 MB of code decoded once).
 */
static struct {
	const struct sym_module *m;
	uint64_t *addrs;
	size_t n;
	bool complete;              /* every function's code was read */
} refs;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void module_refs(int fd, const struct sym_module *m)
{
	size_t cap = 0, n = 0;
	uint64_t *v = NULL;

	if (refs.m == m)
		return;
	free(refs.addrs);
	refs.m = m;
	refs.addrs = NULL;
	refs.n = 0;
	refs.complete = true;
	for (size_t j = 0; j < m->nfuncs; j++) {
		const struct sym_func *s = &m->funcs[j];
		uint8_t *code;

		if (!s->size || !s->probe_offset || (j && m->funcs[j - 1].addr == s->addr))
			continue;       /* no code of its own (or an alias of the one before) */
		code = read_code(fd, s->probe_offset - (s->endbr64 ? 4 : 0), s->size);
		if (!code) {
			refs.complete = false;
			continue;
		}
		if (cap - n < s->size) {        /* at most one address per code byte */
			size_t ncap = cap ? 2 * cap : 1 << 16;
			uint64_t *nv;

			while (ncap - n < s->size)
				ncap *= 2;
			nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				free(code);
				refs.complete = false;
				break;
			}
			v = nv;
			cap = ncap;
		}
		n += tramp_referenced_addrs(code, s->size, s->addr, v + n, cap - n);
		free(code);
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	refs.addrs = v;
	refs.n = n;
}

/* Does anything in the module branch into, or point at, (@lo, @hi)? Unknown counts as yes. */
static bool module_refers_into(int fd, const struct sym_module *m, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b;

	module_refs(fd, m);
	if (!refs.complete)
		return true;
	b = refs.n;
	while (a < b) {                 /* the first address above @lo */
		size_t mid = a + (b - a) / 2;

		if (refs.addrs[mid] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < refs.n && refs.addrs[a] < hi;
}

/*
 * plan - tramp_plan() for function @i of @m from its bytes @code (read from @fd), with the
 * checks on the rest of the module; @emulated_ok: also a function whose first instruction the
 * kernel emulates.
 */
static enum tramp_reason plan(int fd, const struct sym_module *m, size_t i, const uint8_t *code,
			      bool emulated_ok, struct tramp_plan *plan, uint8_t *moved, size_t cap)
{
	const struct sym_func *f = &m->funcs[i];
	uint64_t hop = f->endbr64 ? 4 : 0;
	enum tramp_reason r;
	bool endbr;

	/*
	 * A site the kernel emulates (push, nop, jmp) costs what the trampoline's own emulated nop
	 * costs: moving it gains nothing. Patching only single-stepped sites also means that
	 * another tool's later probe on the patch site always passes through the single-step
	 * path, where the trampoline guard sees it.
	 */
	if (!emulated_ok &&
	    sym_probe_site(code + hop, f->size - hop, f->size - hop, &endbr) == SYM_INSN_EMULATED)
		return TRAMP_EMULATED;
	r = tramp_plan(code, f->size, f->addr, f->addr + hop, plan);
	if (r == TRAMP_OK && plan->patch_len > cap)
		r = TRAMP_INSN;
	if (r == TRAMP_OK && (entered_elsewhere(fd, m, i, f->addr + hop, f->addr + hop +
						plan->patch_len) ||
			      module_refers_into(fd, m, f->addr + hop, f->addr + hop + plan->patch_len)))
		r = TRAMP_BRANCH_IN;
	if (r == TRAMP_OK)
		memcpy(moved, code + hop, plan->patch_len);
	return r;
}

static enum tramp_reason plan_read(int fd, const struct sym_module *m, size_t i, bool emulated_ok,
				   struct tramp_plan *p, uint8_t *moved, size_t cap)
{
	const struct sym_func *f = &m->funcs[i];
	uint8_t *code = read_code(fd, f->probe_offset - (f->endbr64 ? 4 : 0), f->size);
	enum tramp_reason r;

	if (!code)
		return TRAMP_DECODE;
	r = plan(fd, m, i, code, emulated_ok, p, moved, cap);
	free(code);
	return r;
}

enum tramp_reason tramp_plan_function(int fd, const struct sym_module *m, size_t i,
				      struct tramp_plan *plan, uint8_t *moved, size_t cap)
{
	return plan_read(fd, m, i, false, plan, moved, cap);
}

enum tramp_reason tramp_plan_relocation(int fd, const struct sym_module *m, size_t i,
					struct tramp_plan *plan, uint8_t *moved, size_t cap)
{
	const struct sym_func *f = &m->funcs[i];
	uint64_t hop = f->endbr64 ? 4 : 0;
	uint8_t *code;
	enum tramp_reason r = plan_read(fd, m, i, true, plan, moved, cap);

	/*
	 * The bytes an entry trampoline would replace, when it could: another session on the
	 * same process (or one that runs after this one was killed) may write its jmp there, and
	 * the body's jmp back must land after it, never inside it. Else the function never gets
	 * an entry jmp, and its first instruction alone is enough.
	 */
	if (r == TRAMP_OK)
		return r;
	code = read_code(fd, f->probe_offset - hop, f->size);
	r = code ? tramp_plan_first(code, f->size, f->addr, f->addr + hop, plan) : TRAMP_DECODE;
	if (r == TRAMP_OK && plan->patch_len > cap)
		r = TRAMP_INSN;
	if (r == TRAMP_OK)
		memcpy(moved, code + hop, plan->patch_len);
	free(code);
	return r;
}

/*
 * A module with text relocations (DT_TEXTREL, or DF_TEXTREL in DT_FLAGS) has its code written
 * by ld.so when it relocates it, which for a library just loaded with dlopen comes after its
 * debug-state call: a jmp written before would be overwritten, or a relocation meant for the
 * moved bytes would miss them. Unreadable counts as yes.
 */
bool tramp_module_textrel(const struct sym_module *m)
{
	int fd = open(tramp_module_file(m), O_RDONLY | O_CLOEXEC);
	bool textrel = fd < 0, seen = false;
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;

	if (fd >= 0) {
		elf_version(EV_CURRENT);
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		textrel = !elf;
	}
	while (elf && !textrel && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		seen = true;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < data->d_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_TEXTREL ||
			    (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_TEXTREL)))
				textrel = true;
		}
	}
	/* no section headers: a file we cannot vouch for */
	if (elf && !seen && elf_kind(elf) == ELF_K_ELF) {
		size_t n = 0;

		textrel = elf_getshdrnum(elf, &n) || !n;
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return textrel;
}

bool tramp_wanted(const struct sym_func *f)
{
	return f->selected && f->skip == SYM_OK;
}

int tramp_check_module(struct sym_module *m)
{
	int fd = open(tramp_module_file(m), O_RDONLY | O_CLOEXEC), n = 0;

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < m->nfuncs; i++) {
		struct sym_func *f = &m->funcs[i];
		struct tramp_plan plan;
		uint8_t moved[32];

		if (!tramp_wanted(f))
			continue;
		f->tramp = (uint8_t)tramp_plan_function(fd, m, i, &plan, moved, sizeof(moved));
		n += f->tramp == TRAMP_OK;
	}
	close(fd);
	return n;
}

/*
 * Do @now and the file's @file differ only by a uprobe: an int3 on the first byte, or a 5-byte
 * nop the kernel turned into a call to its uprobe trampoline?
 */
bool tramp_only_breakpoint(const uint8_t *now, const uint8_t *file, size_t len)
{
	static const uint8_t nop5[4] = { 0x0f, 0x1f, 0x44, 0x00 };

	if (len >= 5 && now[0] == 0xe8 && !memcmp(file, nop5, sizeof(nop5)))
		return !memcmp(now + 5, file + 5, len - 5);
	return len && now[0] == 0xcc && !memcmp(now + 1, file + 1, len - 1);
}

int tramp_skip_rewritten(pid_t pid, struct sym_module **mods, size_t nmods, bool verbose)
{
	struct ta_maps maps;
	char path[64];
	int mem, total = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (mem < 0 || ta_maps_read(pid, &maps) < 0) {
		if (mem >= 0)
			close(mem);
		return 0;
	}
	for (size_t k = 0; k < nmods; k++) {
		struct sym_module *m = mods[k];
		int fd = open(tramp_module_file(m), O_RDONLY | O_CLOEXEC), n = 0;
		struct stat st;

		for (size_t i = 0; fd >= 0 && !fstat(fd, &st) && i < m->nfuncs; i++) {
			struct sym_func *f = &m->funcs[i];
			uint64_t addr = tramp_wanted(f) ? ta_file_addr(&maps, st.st_dev, st.st_ino,
								 f->probe_offset) : 0;
			uint64_t len = f->size - (f->endbr64 ? 4 : 0);
			uint8_t file[8], now[8];

			if (!addr)
				continue;
			if (len > sizeof(file))
				len = sizeof(file);
			if (pread(fd, file, len, (off_t)f->probe_offset) != (ssize_t)len ||
			    pread(mem, now, len, (off_t)addr) != (ssize_t)len || !memcmp(now, file, len))
				continue;
			if (tramp_only_breakpoint(now, file, len)) {
				/* another tool's uprobe, there before ours: call sites leave its calls
				 * to its entry, where that tool counts them (trampolines check again) */
				f->tramp = TRAMP_TEXT_DIFFERS;
				if (verbose)
					fprintf(stderr, "atftrace record: %s: %s: another tool's breakpoint at "
						"its entry: its calls are not redirected\n", m->path,
						f->name);
				continue;
			}
			f->selected = false;
			f->tramp = TRAMP_REWRITTEN;
			n++;
			if (verbose)
				fprintf(stderr, "atftrace record: %s: %s: its code in the process is not "
					"the file's: not traced\n", m->path, f->name);
		}
		if (fd >= 0)
			close(fd);
		if (n)
			fprintf(stderr, "atftrace record: %s: %d functions rewritten in process %d by "
				"another tool (another atftrace session's trampolines?) are not traced\n",
				m->path, n, (int)pid);
		total += n;
	}
	ta_maps_free(&maps);
	close(mem);
	return total;
}

/* Does process @pid have a trampoline mapping (an atftrace session patched it)? */
static bool has_trampolines(const char *pid)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, TA_MEMFD_NAME) != NULL;
	fclose(f);
	return found;
}

int tramp_skip_rewritten_everywhere(struct sym_module **mods, size_t nmods, bool verbose)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int total = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid > 0 && !*end && has_trampolines(de->d_name))
			total += tramp_skip_rewritten((pid_t)pid, mods, nmods, verbose);
	}
	closedir(d);
	return total;
}
