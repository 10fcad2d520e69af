// SPDX-License-Identifier: MIT
/*
 * Raw BPF_LINK_CREATE for uprobe_multi / uprobe-session links.
 *
 * Debian 12's libbpf (1.1) and UAPI headers (6.1) predate uprobe_multi (kernel 6.6) and
 * sessions (6.12), so this file defines the link_create part of union bpf_attr itself, as laid
 * out by the running kernel (see /work/shared/kernel-facts.md), and checks every offset at
 * compile time. The rest of the union is zero, as the kernel requires.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "atf_file.h"
#include "proc.h"
#include "uprobe_multi.h"

/* union bpf_attr as BPF_LINK_CREATE reads it for uprobe_multi links. */
struct uprobe_multi_link_attr {
	uint32_t prog_fd;
	uint32_t target_fd;             /* unused: 0 */
	uint32_t attach_type;
	uint32_t flags;                 /* link flags: 0 */
	uint64_t path;                  /* const char * */
	uint64_t offsets;               /* const uint64_t *[cnt] */
	uint64_t ref_ctr_offsets;       /* 0: no USDT semaphores */
	uint64_t cookies;               /* const uint64_t *[cnt] or 0 */
	uint32_t cnt;
	uint32_t uprobe_flags;          /* ATF_BPF_F_UPROBE_MULTI_RETURN */
	uint32_t pid;
	uint8_t rest[148];              /* zero up to the size of the kernel's union bpf_attr */
};

_Static_assert(offsetof(struct uprobe_multi_link_attr, prog_fd) == 0, "prog_fd");
_Static_assert(offsetof(struct uprobe_multi_link_attr, target_fd) == 4, "target_fd");
_Static_assert(offsetof(struct uprobe_multi_link_attr, attach_type) == 8, "attach_type");
_Static_assert(offsetof(struct uprobe_multi_link_attr, flags) == 12, "flags");
_Static_assert(offsetof(struct uprobe_multi_link_attr, path) == 16, "path");
_Static_assert(offsetof(struct uprobe_multi_link_attr, offsets) == 24, "offsets");
_Static_assert(offsetof(struct uprobe_multi_link_attr, ref_ctr_offsets) == 32, "ref_ctr_offsets");
_Static_assert(offsetof(struct uprobe_multi_link_attr, cookies) == 40, "cookies");
_Static_assert(offsetof(struct uprobe_multi_link_attr, cnt) == 48, "cnt");
_Static_assert(offsetof(struct uprobe_multi_link_attr, uprobe_flags) == 52, "uprobe_multi.flags");
_Static_assert(offsetof(struct uprobe_multi_link_attr, pid) == 56, "pid");
_Static_assert(sizeof(struct uprobe_multi_link_attr) >= sizeof(union bpf_attr), "covers bpf_attr");

int uprobe_multi_link_create(int prog_fd, uint32_t attach_type, const char *path,
			     const uint64_t *offsets, const uint64_t *cookies, uint32_t cnt,
			     uint32_t flags, pid_t pid)
{
	struct uprobe_multi_link_attr attr;
	int fd;

	if (prog_fd < 0 || !path || !offsets || cnt == 0)
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = attach_type;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = cnt;
	attr.uprobe_flags = flags;
	attr.pid = (uint32_t)pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/* Load "r0 = 0; exit" as a kprobe-type program expecting @attach_type. */
static int load_trivial_prog(uint32_t attach_type)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach_type);
	int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "atf_feature", "GPL", insns, 2, &opts);

	return fd < 0 ? -errno : fd;
}

static int probe_attach_type(uint32_t attach_type)
{
	uint64_t offset = 0;
	int prog_fd, link_fd, ok;

	prog_fd = load_trivial_prog(attach_type);
	if (prog_fd < 0)
		return 0;
	/* "/" is a directory: a kernel that knows the attach type fails with EBADF. For this
	 * process only: another session's registration guard then knows it reaches none of its
	 * processes (bpf/reg_guard.bpf.h) and stops nothing. */
	link_fd = uprobe_multi_link_create(prog_fd, attach_type, "/", &offset, NULL, 1, 0, getpid());
	ok = link_fd == -EBADF || link_fd >= 0;
	if (link_fd >= 0)
		close(link_fd);
	close(prog_fd);
	return ok;
}

bool uprobe_multi_supported(uint32_t attach_type)
{
	/* 0: not probed yet; 1: no; 2: yes. Probing twice is harmless, so no locking. */
	static int multi_state, session_state;
	int *state = attach_type == ATF_BPF_TRACE_UPROBE_SESSION ? &session_state : &multi_state;

	if (attach_type != ATF_BPF_TRACE_UPROBE_MULTI && attach_type != ATF_BPF_TRACE_UPROBE_SESSION)
		return false;
	if (!*state)
		*state = probe_attach_type(attach_type) ? 2 : 1;
	return *state == 2;
}

bool uprobe_insn_refused(int err)
{
	return err == -ATF_ENOTSUPP || err == -ENOEXEC;
}

struct refusal_check {
	int prog_fd;
	const char *path;
	const uint64_t *offsets;
};

/* A do-nothing link on offsets [first, first + count) in this process, left open (see below). */
static int check_range(const struct refusal_check *c, uint32_t first, uint32_t count)
{
	int fd = uprobe_multi_link_create(c->prog_fd, ATF_BPF_TRACE_UPROBE_MULTI, c->path,
					  c->offsets + first, NULL, count, 0, getpid());

	return fd < 0 ? fd : 0;
}

static int bisect(const struct refusal_check *c, uint32_t first, uint32_t count, uint32_t *refused,
		  uint32_t *nrefused)
{
	int err = check_range(c, first, count);

	if (!uprobe_insn_refused(err))
		return err;
	if (count == 1) {
		refused[(*nrefused)++] = first;
		return 0;
	}
	err = bisect(c, first, count / 2, refused, nrefused);
	return err ?: bisect(c, first + count / 2, count - count / 2, refused, nrefused);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void close_all_but(int a, int b, int c)
{
	int keep[3] = { a, b, c };
	unsigned lo = 3;

	qsort(keep, 3, sizeof(keep[0]), cmp_int);
	for (int i = 0; i < 3; i++) {
		if ((unsigned)keep[i] > lo)
			close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	close_range(lo, ~0u, 0);
}

/*
 * The check, in a grandchild of the recorder: it maps the file, bisects, writes the refused indexes
 * to @wfd and exits. Its successful check links are closed by its exit: each costs an RCU grace
 * period (100-200 ms here) that nobody waits for. It holds none of the recorder's other files
 * (a launched target's gate pipe must close when the recorder closes it).
 */
static void __attribute__((noreturn)) check_in_grandchild(int wfd, int prog_fd, int file_fd, size_t size,
							  const uint64_t *offsets, uint32_t n, uint32_t *refused)
{
	char path[32];
	struct refusal_check c = { .prog_fd = prog_fd, .path = path, .offsets = offsets };
	uint32_t nrefused = 0;

	close_all_but(wfd, prog_fd, file_fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", file_fd);
	if (mmap(NULL, size, PROT_READ | PROT_EXEC, MAP_PRIVATE, file_fd, 0) == MAP_FAILED ||
	    bisect(&c, 0, n, refused, &nrefused))
		nrefused = 0;   /* no check (a noexec mount), or another error: the real attach says it */
	atf_write_all(wfd, &nrefused, sizeof(nrefused), NULL);
	atf_write_all(wfd, refused, nrefused * sizeof(*refused), NULL);
	_exit(0);
}

void uprobe_refused_offsets(const char *path, const uint64_t *offsets, uint32_t n, uint32_t *refused,
			    uint32_t *nrefused)
{
	int pfd[2] = { -1, -1 }, prog_fd = -1, fd;
	struct stat st;
	uint32_t got = 0;
	pid_t pid = -1;

	*nrefused = 0;
	if (!n || !uprobe_multi_supported(ATF_BPF_TRACE_UPROBE_MULTI))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st) && st.st_size > 0 && !pipe2(pfd, O_CLOEXEC) &&
	    (prog_fd = load_trivial_prog(ATF_BPF_TRACE_UPROBE_MULTI)) >= 0)
		pid = fork();
	if (pid == 0) {
		if (fork() != 0)
			_exit(0);       /* the grandchild is nobody's to reap */
		check_in_grandchild(pfd[1], prog_fd, fd, (size_t)st.st_size, offsets, n, refused);
	}
	if (pfd[1] >= 0)
		close(pfd[1]);
	if (pid > 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (proc_read_full(pfd[0], &got, sizeof(got)) == (ssize_t)sizeof(got) && got <= n &&
		    proc_read_full(pfd[0], refused, got * sizeof(*refused)) == (ssize_t)(got * sizeof(*refused)))
			*nrefused = got;
	}
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (prog_fd >= 0)
		close(prog_fd);
	if (fd >= 0)
		close(fd);
}
