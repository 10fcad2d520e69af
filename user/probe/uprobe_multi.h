/* SPDX-License-Identifier: MIT */
/*
 * uprobe_multi and uprobe-session links without a libbpf API (Debian's libbpf 1.1 has none):
 * a raw BPF_LINK_CREATE with the kernel's link_create.uprobe_multi layout (user/probe/uprobe_multi.c).
 */
#ifndef ATFTRACE_UPROBE_MULTI_H
#define ATFTRACE_UPROBE_MULTI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* enum bpf_attach_type values from the kernel's BTF (not in Debian's UAPI headers). */
#define ATF_BPF_TRACE_UPROBE_MULTI      48
#define ATF_BPF_TRACE_UPROBE_SESSION    57
/* uprobe_multi.flags: the link fires at function return instead of entry. */
#define ATF_BPF_F_UPROBE_MULTI_RETURN   1u

/**
 * uprobe_multi_link_create - attach @prog_fd to @cnt offsets of the ELF file @path in one link
 * @attach_type: ATF_BPF_TRACE_UPROBE_MULTI or ATF_BPF_TRACE_UPROBE_SESSION; it must equal the
 *               program's expected attach type given at load.
 * @offsets:     file offsets (st_value - sh_addr + sh_offset of the symbol's section).
 * @cookies:     per-offset values for bpf_get_attach_cookie(), or NULL.
 * @flags:       ATF_BPF_F_UPROBE_MULTI_RETURN for a return link (multi only), else 0.
 * @pid:         only this process (0 = every process that maps @path).
 * Returns the link fd (closing it detaches), or a negative errno.
 */
int uprobe_multi_link_create(int prog_fd, uint32_t attach_type, const char *path,
			     const uint64_t *offsets, const uint64_t *cookies, uint32_t cnt,
			     uint32_t flags, pid_t pid);

/**
 * uprobe_multi_supported - does this kernel create links of @attach_type (multi or session)?
 * Loads a two-instruction program with that expected attach type and asks for a link on "/",
 * which a kernel that knows the attach type refuses with EBADF (not a regular file). Cached.
 */
bool uprobe_multi_supported(uint32_t attach_type);

/* The kernel's ENOTSUPP, which is not in the UAPI errno range ("Unknown error 524"). */
#define ATF_ENOTSUPP 524

/**
 * uprobe_insn_refused - is @err the kernel refusing the instruction at a probed offset?
 * arch_uprobe_analyze_insn() returns -ENOEXEC for bytes it cannot decode and -ENOTSUPP for an
 * instruction it will neither emulate nor single-step (a LOCK or segment prefix, I/O, a trap).
 */
bool uprobe_insn_refused(int err);

/**
 * uprobe_refused_offsets - which of @n @offsets of ELF file @path would the kernel refuse?
 * The kernel looks at a probed instruction only when it places the breakpoint in a process that
 * maps the file: a link for a process that has not mapped it yet (a launched target before its
 * exec) succeeds, and the refused functions then never fire, silently. So a short-lived
 * grandchild maps the file (read, exec, private) and creates a do-nothing uprobe_multi link for
 * itself only; the kernel analyses every instruction then, and a refused range is halved until
 * each refused offset is alone (O(k log n) link creations for k refused offsets). Nothing ever
 * executes the mapping, and the grandchild's exit (which detaches its links, an RCU grace period
 * each) is waited for by nobody. Fills @refused with their indexes (room for @n), sets *@nrefused; when
 * the check cannot be made (no uprobe_multi, a noexec mount) nothing is known to be refused.
 */
void uprobe_refused_offsets(const char *path, const uint64_t *offsets, uint32_t n, uint32_t *refused,
			   uint32_t *nrefused);

#endif
