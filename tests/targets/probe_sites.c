// SPDX-License-Identifier: MIT
/*
 * Probe-site target for tests and bench/bench_probe_cost.sh: one hot function per first
 * instruction the kernel treats differently (kernel-facts.md), written in assembly so the
 * bytes do not depend on compiler flags:
 *   site_nop5   nopl 0(%rax,%rax,1)   optimised into a call to the uprobe trampoline
 *   site_push   push %rbp             emulated
 *   site_endbr  endbr64; push %rbp    atftrace probes at +4 (the push), bpftrace at +0
 *   site_lea    lea 1(%rdi),%eax      single-stepped
 * plus C functions for nesting (site_outer -> site_push, site_endbr) and for unwinding
 * without returns (site_jmp_outer -> site_jmp_mid -> site_jmp_leaf, which longjmps back).
 *
 *   probe_sites KIND N    call KIND N times, then print "KIND N ns_per_call"
 *   KIND: nop5 push endbr lea outer longjmp
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int site_nop5(int x);
int site_push(int x);
int site_endbr(int x);
int site_lea(int x);

__asm__(
	".text\n"
	".globl site_nop5\n.type site_nop5,@function\n"
	"site_nop5:\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"	lea 1(%rdi), %eax\n"
	"	ret\n"
	".size site_nop5, .-site_nop5\n"
	".globl site_push\n.type site_push,@function\n"
	"site_push:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi), %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size site_push, .-site_push\n"
	".globl site_endbr\n.type site_endbr,@function\n"
	"site_endbr:\n"
	"	.byte 0xf3, 0x0f, 0x1e, 0xfa\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi), %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size site_endbr, .-site_endbr\n"
	".globl site_lea\n.type site_lea,@function\n"
	"site_lea:\n"
	"	lea 1(%rdi), %eax\n"
	"	ret\n"
	".size site_lea, .-site_lea\n");

__attribute__((noinline, noipa)) int site_outer(int x)
{
	return site_push(x) + site_endbr(x);
}

static jmp_buf jump_back;

__attribute__((noinline, noipa)) int site_jmp_leaf(int x)
{
	if (x >= 0)
		longjmp(jump_back, 1);
	return x;
}

__attribute__((noinline, noipa)) int site_jmp_mid(int x)
{
	return site_jmp_leaf(x) + 1;
}

/* Calls mid -> leaf, which longjmps back here: mid and leaf never return. */
__attribute__((noinline, noipa)) int site_jmp_outer(int x)
{
	volatile int r = 0;

	if (setjmp(jump_back) == 0)
		r = site_jmp_mid(x);
	return r + site_push(x);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(int); } kinds[] = {
		{ "nop5", site_nop5 }, { "push", site_push }, { "endbr", site_endbr },
		{ "lea", site_lea }, { "outer", site_outer }, { "longjmp", site_jmp_outer },
	};
	int (*fn)(int) = NULL;
	struct timespec t0, t1;
	volatile int sink = 0;
	long n;

	if (argc != 3 || (n = strtol(argv[2], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: probe_sites nop5|push|endbr|lea|outer|longjmp N\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(argv[1], kinds[i].name))
			fn = kinds[i].fn;
	if (!fn) {
		fprintf(stderr, "probe_sites: unknown kind '%s'\n", argv[1]);
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		sink += fn((int)i);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s %ld %.1f\n", argv[1], n,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n);
	return 0;
}
