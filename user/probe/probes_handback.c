// SPDX-License-Identifier: MIT
/*
 * The hand-back notice's programs and maps (bpf/cs_handback.bpf.h), for record --call-sites:
 * loaded with the call-site stub programs, armed with the session's module files, polled by
 * the recorder (user/cmd/record_call_sites.c, after each drain).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atftrace.h"
#include "atftrace.skel.h"
#include "cs_handback.h"
#include "probes_int.h"

#if defined(__x86_64__)
void probes_handback_autoload(struct probes *p)
{
	struct atftrace_bpf *s = p->skel;

	p->handback = p->call_sites;
	/* as the guard: the two syscalls' own tracepoints when tracefs names them, else the raw
	 * sys_exit, which runs for every syscall */
	p->handback_tp = p->handback && probes_syscall_tracepoints();
	bpf_program__set_autoload(s->progs.atf_hb_exit_bpf, p->handback_tp);
	bpf_program__set_autoload(s->progs.atf_hb_exit_perf, p->handback_tp);
	bpf_program__set_autoload(s->progs.atf_hb_exit, p->handback && !p->handback_tp);
}

int probes__handback_arm(struct probes *p, const struct cs_hb_inode *files, size_t n)
{
	struct atftrace_bpf *s = p->skel;
	struct bpf_program *progs[] = { s->progs.atf_hb_exit_bpf, s->progs.atf_hb_exit_perf,
					s->progs.atf_hb_exit };
	struct bpf_link **links[] = { &s->links.atf_hb_exit_bpf, &s->links.atf_hb_exit_perf,
				      &s->links.atf_hb_exit };
	__u8 one = 1;

	if (!p->handback)
		return -EOPNOTSUPP;
	for (size_t i = 0; i < n; i++)
		if (bpf_map__update_elem(s->maps.cs_hb_inodes, &files[i], sizeof(files[i]), &one,
					 sizeof(one), BPF_ANY))
			return errno == E2BIG ? -ENOSPC : -errno;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		if (bpf_program__fd(progs[i]) < 0 || *links[i])
			continue;       /* the other way in: not loaded; or attached already */
		*links[i] = bpf_program__attach(progs[i]);
		if (!*links[i])
			return -errno;
	}
	if (p->verbose)
		fprintf(stderr, "atftrace record: hand-back notice on the %s, for %zu %s\n",
			p->handback_tp ? "bpf and perf_event_open exit tracepoints" :
			"raw sys_exit tracepoint", n, n == 1 ? "file" : "files");
	return 0;
}

int probes__handback_take(struct probes *p, struct cs_hb_note *out, size_t cap, bool *overflowed)
{
	struct atftrace_bpf *s = p->skel;
	struct cs_hb_note key, next, *prev = NULL;
	uint64_t seq, over;
	size_t n = 0;

	*overflowed = false;
	if (!p->handback)
		return 0;
	seq = __atomic_load_n(&s->bss->cs_hb_seq, __ATOMIC_ACQUIRE);
	if (seq == p->hb_seq)
		return 0;
	p->hb_seq = seq;
	over = __atomic_load_n(&s->bss->cs_hb_overflow, __ATOMIC_ACQUIRE);
	if (over != p->hb_overflow) {
		p->hb_overflow = over;
		*overflowed = true;     /* a note had no room: which file is not known */
	}
	/* each taken note leaves the map: the next one of the same file and offset counts again */
	while (n < cap && !bpf_map__get_next_key(s->maps.cs_hb_notes, prev, &next, sizeof(next))) {
		out[n++] = next;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map__delete_elem(s->maps.cs_hb_notes, &out[i], sizeof(out[i]), 0);
	if (n == cap)
		p->hb_seq--;            /* more may be left: look again at the next poll */
	return (int)n;
}
#else
void probes_handback_autoload(struct probes *p)
{
	p->handback = false;
}

int probes__handback_arm(struct probes *p, const struct cs_hb_inode *files, size_t n)
{
	(void)p, (void)files, (void)n;
	return -EOPNOTSUPP;
}

int probes__handback_take(struct probes *p, struct cs_hb_note *out, size_t cap, bool *overflowed)
{
	(void)p, (void)out, (void)cap;
	*overflowed = false;
	return 0;
}
#endif
