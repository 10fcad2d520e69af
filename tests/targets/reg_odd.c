// SPDX-License-Identifier: MIT
/*
 * Registers a uprobe the odd ways that a registration guard watching syscalls could miss
 * (tests/e2e/test_call_sites_rows_control.sh):
 *
 *   reg_odd compat BIN OFFSET PID   perf_event_open through the 32-bit `int 0x80` entry (the
 *                                   compat syscall table: number 336), a uprobe perf event on
 *                                   BIN at file offset OFFSET for PID, counting
 *   reg_odd multi BIN OFFSET PID DIR  a BPF_LINK_CREATE uprobe_multi link (an empty program)
 *                                   whose bpf_attr lies in a file page (DIR/attr) this process
 *                                   mapped but never touched: a BPF program at the syscall
 *                                   cannot read it (no page faults there)
 *
 * Each prints "registered" once the uprobe is in place, then holds it until stdin ends, then
 * prints "count N" (compat: the hits the event counted; multi: 0) and exits 0. Exit 1 with one
 * line on stderr when a step fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define COMPAT_PERF_EVENT_OPEN 336      /* arch/x86/entry/syscalls/syscall_32.tbl */
#define ATTACH_UPROBE_MULTI    48       /* BPF_TRACE_UPROBE_MULTI (vmlinux BTF) */

static int die(const char *what)
{
	fprintf(stderr, "reg_odd: %s: %s\n", what, strerror(errno));
	return 1;
}

static void hold(void)
{
	char buf[256];

	printf("registered\n");
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
}

static long int80(long nr, long a, long b, long c, long d, long e)
{
	long ret;

	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
			 : "r8", "r9", "r10", "r11", "memory");
	return ret;
}

static int compat(const char *bin, uint64_t off, int pid)
{
	struct low { struct perf_event_attr attr; char path[4096]; } *low;
	uint64_t count = 0;
	unsigned type;
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	long fd;

	if (!f || fscanf(f, "%u", &type) != 1)
		return die("the uprobe PMU's type");
	fclose(f);
	/* a compat syscall takes 32-bit pointers: the attr and the path below 4 GiB */
	low = mmap(NULL, sizeof(*low), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		   -1, 0);
	if (low == MAP_FAILED)
		return die("mmap MAP_32BIT");
	snprintf(low->path, sizeof(low->path), "%s", bin);
	low->attr.size = sizeof(low->attr);
	low->attr.type = type;
	low->attr.config1 = (uint64_t)(uintptr_t)low->path;
	low->attr.config2 = off;
	fd = int80(COMPAT_PERF_EVENT_OPEN, (long)(uintptr_t)&low->attr, pid, -1, -1, 0);
	if (fd < 0) {
		errno = (int)-fd;
		return die("perf_event_open through int 0x80");
	}
	hold();
	if (read((int)fd, &count, sizeof(count)) != sizeof(count))
		return die("read the count");
	printf("count %llu\n", (unsigned long long)count);
	return 0;
}

static int multi(const char *bin, uint64_t off, int pid, const char *dir)
{
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	static uint64_t offsets[1];
	union bpf_attr load;
	uint8_t attr[64];
	char path[4096];
	uint64_t v;
	uint32_t u;
	void *page;
	int prog_fd, fd, link;

	memset(&load, 0, sizeof(load));
	load.prog_type = BPF_PROG_TYPE_KPROBE;
	load.insn_cnt = 2;
	load.insns = (uint64_t)(uintptr_t)prog;
	load.license = (uint64_t)(uintptr_t)"GPL";
	load.expected_attach_type = ATTACH_UPROBE_MULTI;
	prog_fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load));
	if (prog_fd < 0)
		return die("BPF_PROG_LOAD");
	offsets[0] = off;
	/* link_create: prog_fd, target_fd, attach_type, flags, then uprobe_multi's path, offsets,
	 * ref_ctr_offsets, cookies, cnt, flags, pid */
	memset(attr, 0, sizeof(attr));
	u = (uint32_t)prog_fd;
	memcpy(attr + 0, &u, 4);
	u = ATTACH_UPROBE_MULTI;
	memcpy(attr + 8, &u, 4);
	v = (uint64_t)(uintptr_t)bin;
	memcpy(attr + 16, &v, 8);
	v = (uint64_t)(uintptr_t)offsets;
	memcpy(attr + 24, &v, 8);
	u = 1;
	memcpy(attr + 48, &u, 4);
	u = (uint32_t)pid;
	memcpy(attr + 56, &u, 4);
	snprintf(path, sizeof(path), "%s/attr", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || pwrite(fd, attr, sizeof(attr), 0) != (ssize_t)sizeof(attr))
		return die("write the attr file");
	page = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);   /* not touched before bpf() */
	if (page == MAP_FAILED)
		return die("mmap the attr file");
	link = (int)syscall(SYS_bpf, BPF_LINK_CREATE, page, sizeof(attr));
	if (link < 0)
		return die("BPF_LINK_CREATE uprobe_multi");
	hold();
	printf("count 0\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "compat"))
		return compat(argv[2], strtoull(argv[3], NULL, 0), atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "multi"))
		return multi(argv[2], strtoull(argv[3], NULL, 0), atoi(argv[4]), argv[5]);
	fprintf(stderr, "usage: reg_odd compat BIN OFFSET PID | multi BIN OFFSET PID DIR\n");
	return 2;
}
