/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The hand-back notice of record --call-sites (x86_64; part of bpf/atftrace.bpf.c).
 *
 * A call redirected to a call-site stub enters its function f past f's first bytes: another
 * tool's uprobe on f's entry (bpftrace, perf probe, a tracefs uprobe event, a raw bpf link) does
 * not see it. At the *exit* of each syscall that may have registered a uprobe, these programs
 * read what the kernel registered, from the kernel's own object behind the new file descriptor:
 *   - perf_event_open: the perf event's trace event, if it is a uprobe one (the uprobe PMU, as
 *     bpftrace and perf use, or a tracefs uprobe event opened by its id): each of its
 *     trace_uprobes' inode and file offset;
 *   - bpf(BPF_LINK_CREATE) of a uprobe-multi link (uprobe-multi and uprobe-session): each of its
 *     uprobes' inode and offset (more than CS_HB_MAX_OFFSETS: the inode, any offset).
 * (A tracefs uprobe defined by a write to uprobe_events is not seen here: a program on every
 * write of the machine cost about 1 us a write; the recorder watches that file with inotify.)
 * A uprobe on one of the session's files (cs_hb_inodes, filled by the recorder) is noted in
 * cs_hb_notes (a map, never dropped: one that does not fit counts in cs_hb_overflow), and
 * cs_hb_seq grows; the recorder polls it and hands f back (user/patch/callsite_handback.c).
 * Nothing is stopped here: the registration has happened when its syscall returns, and the
 * other tool misses only the calls between it and the hand-back.
 * The attributes are not read (user memory, which may be unreadable from BPF): the kernel's
 * objects are. A descriptor that is no longer the object the syscall made (another thread
 * closed it at once) is noted as a registration on any file (CS_HB_ANY_FILE).
 */
#ifndef ATFTRACE_CS_HANDBACK_BPF_H
#define ATFTRACE_CS_HANDBACK_BPF_H

#include "uprobe_reg.bpf.h"
#include "cs_handback.h"

#define ATF_BPF_LINK_CREATE 28

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CS_HB_MAX_INODES);
	__type(key, struct cs_hb_inode);
	__type(value, __u8);
} cs_hb_inodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CS_HB_MAX_NOTES);
	__type(key, struct cs_hb_note);
	__type(value, __u8);
} cs_hb_notes SEC(".maps");

__u64 cs_hb_seq;                /* notes made (the recorder polls it) */
__u64 cs_hb_overflow;           /* notes that cs_hb_notes had no room for */

/* Note a uprobe on file (@dev, @ino) at @off, if the file is one of ours. */
static __always_inline void hb_note(__u64 dev, __u64 ino, __u64 off)
{
	struct cs_hb_inode k = { .dev = dev, .ino = ino };
	struct cs_hb_note n = { .dev = dev, .ino = ino, .off = off };
	__u8 one = 1;

	if (ino != CS_HB_ANY_FILE && !bpf_map_lookup_elem(&cs_hb_inodes, &k))
		return;
	if (bpf_map_update_elem(&cs_hb_notes, &n, &one, BPF_ANY))
		__sync_fetch_and_add(&cs_hb_overflow, 1);
	__sync_fetch_and_add(&cs_hb_seq, 1);
}

static __always_inline void hb_note_inode(struct inode *inode, __u64 off)
{
	if (inode)
		hb_note(BPF_CORE_READ(inode, i_sb, s_dev), BPF_CORE_READ(inode, i_ino), off);
}

/* The current task's file behind descriptor @fd, or NULL. */
static __always_inline struct file *hb_fd_file(__s64 fd)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(cur, files, fdt);
	struct file **fds, *file = NULL;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), fds + fd))
		return NULL;
	return file;
}

/* The first bytes of @file's name (an anonymous inode's: "[perf_event]", "bpf_link"). */
static __always_inline void hb_file_name(struct file *file, char name[16])
{
	const unsigned char *s = BPF_CORE_READ(file, f_path.dentry, d_name.name);

	__builtin_memset(name, 0, 16);
	bpf_probe_read_kernel_str(name, 16, s);
}

static __always_inline bool hb_name_is(const char *name, const char *want, int len)
{
	for (int i = 0; i < len; i++)
		if (name[i] != want[i])
			return false;
	return true;
}

/* A perf event: the trace_uprobes of its trace event, if it is a uprobe one. */
static __always_inline void hb_perf_event(struct perf_event *ev)
{
	struct trace_event_call *call = BPF_CORE_READ(ev, tp_event);
	struct trace_probe_event *tpe;
	struct list_head *head, *pos;

	if (!call || !(BPF_CORE_READ(call, flags) & TRACE_EVENT_FL_UPROBE))
		return;
	tpe = (void *)call - bpf_core_field_offset(struct trace_probe_event, call);
	head = (void *)tpe + bpf_core_field_offset(struct trace_probe_event, probes);
	pos = BPF_CORE_READ(tpe, probes.next);
	for (int i = 0; i < 8 && pos && pos != head; i++) {
		struct trace_probe *tp = (void *)pos - bpf_core_field_offset(struct trace_probe, list);
		struct trace_uprobe *tu = (void *)tp - bpf_core_field_offset(struct trace_uprobe, tp);
		struct uprobe *u = BPF_CORE_READ(tu, uprobe);

		/* the uprobe's inode is the real one (overlayfs); before it is registered, the path's */
		if (u)
			hb_note_inode(BPF_CORE_READ(u, inode), BPF_CORE_READ(u, offset));
		else
			hb_note_inode(BPF_CORE_READ(tu, path.dentry, d_inode), BPF_CORE_READ(tu, offset));
		pos = BPF_CORE_READ(pos, next);
	}
}

/* A bpf link: each uprobe of a uprobe-multi link (uprobe-multi and uprobe-session). */
static __always_inline void hb_bpf_link(struct bpf_link *link)
{
	struct bpf_uprobe_multi_link *ml;
	struct bpf_uprobe *ups;
	__u32 cnt;

	if (BPF_CORE_READ(link, type) != BPF_LINK_TYPE_UPROBE_MULTI)
		return;
	ml = (void *)link - bpf_core_field_offset(struct bpf_uprobe_multi_link, link);
	cnt = BPF_CORE_READ(ml, cnt);
	ups = BPF_CORE_READ(ml, uprobes);
	if (!cnt || !ups)
		return;
	if (cnt > CS_HB_MAX_OFFSETS) {
		hb_note_inode(BPF_CORE_READ(ups, uprobe, inode), CS_HB_ANY_OFF);
		return;
	}
	for (__u32 i = 0; i < CS_HB_MAX_OFFSETS && i < cnt; i++) {
		struct bpf_uprobe *u = (void *)ups + i * bpf_core_type_size(struct bpf_uprobe);

		hb_note_inode(BPF_CORE_READ(u, uprobe, inode), BPF_CORE_READ(u, offset));
	}
}

/*
 * The exit of syscall @id (@arg0: its first argument) by the current thread, @ret its result.
 */
static __always_inline void hb_on_exit(long id, __s64 ret, __u64 arg0)
{
	struct file *file;
	char name[16];

	if (ret < 0 || bpf_get_current_pid_tgid() >> 32 == recorder_tgid)
		return;
	if (id == NR_BPF && arg0 != ATF_BPF_LINK_CREATE)
		return;
	if (id != NR_BPF && id != NR_PERF_EVENT_OPEN)
		return;
	file = hb_fd_file(ret);
	if (!file) {
		hb_note(CS_HB_ANY_FILE, CS_HB_ANY_FILE, CS_HB_ANY_OFF);
		return;
	}
	hb_file_name(file, name);
	if (id == NR_PERF_EVENT_OPEN && hb_name_is(name, "[perf_event]", 13))
		hb_perf_event(BPF_CORE_READ(file, private_data));
	else if (id == NR_BPF && hb_name_is(name, "bpf_link", 9))
		hb_bpf_link(BPF_CORE_READ(file, private_data));
	else    /* the descriptor is something else already: what it was is not known */
		hb_note(CS_HB_ANY_FILE, CS_HB_ANY_FILE, CS_HB_ANY_OFF);
}

/* The first argument of the current syscall, from the saved user registers. */
static __always_inline __u64 hb_arg0(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	return BPF_CORE_READ(regs, di);
}

SEC("?tracepoint/syscalls/sys_exit_bpf")
int atf_hb_exit_bpf(struct syscall_exit_args *ctx)
{
	hb_on_exit(NR_BPF, ctx->ret, hb_arg0());
	return 0;
}

SEC("?tracepoint/syscalls/sys_exit_perf_event_open")
int atf_hb_exit_perf(struct syscall_exit_args *ctx)
{
	hb_on_exit(NR_PERF_EVENT_OPEN, ctx->ret, 0);
	return 0;
}

SEC("?tp_btf/sys_exit")
int BPF_PROG(atf_hb_exit, struct pt_regs *regs, long ret)
{
	long id = BPF_CORE_READ(regs, orig_ax);

	if (id == NR_BPF || id == NR_PERF_EVENT_OPEN)
		hb_on_exit(id, ret, BPF_CORE_READ(regs, di));
	return 0;
}

#endif
