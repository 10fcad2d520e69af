// SPDX-License-Identifier: MIT
/*
 * Process manifests for the recorder. The first one is written as soon as the process
 * directory exists (identity, host, modules, symbols), so even a session killed before its
 * first event is listed; later writes refresh thread counts, times, lost events and the end
 * reason. atf_manifest__save() is atomic, so a reader never sees half a manifest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "container.h"
#include "proc.h"
#include "recorder_int.h"
#include "session_index.h"

static int set_str(char **dst, const char *src)
{
	char *c = src ? strdup(src) : NULL;

	if (src && !c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

/*
 * The other names of @f's code, so that a reader finds it by the name the user knows: symbols at
 * the same address (malloc for __libc_malloc), the ifunc it implements (memcpy for
 * __memmove_avx_unaligned_erms), and their demangled forms.
 */
static int add_aliases(struct atf_symbol *s, const struct sym_module *m, const struct sym_func *f)
{
	uint64_t at = f->ifunc_impl ? f->ifunc_impl : f->addr;

	for (size_t i = 0; i < m->nfuncs; i++) {
		const struct sym_func *g = &m->funcs[i];

		if (g == f || !(g->addr == at || g->ifunc_impl == at))
			continue;
		if (atf_symbol__add_alias(s, g->name) || atf_symbol__add_alias(s, g->demangled))
			return -ENOMEM;
	}
	return 0;
}

int rec_manifest_add_module(struct atf_manifest *man, const struct sym_module *m)
{
	struct atf_module *am = atf_manifest__add_module(man, m->path);

	if (!am)
		return -ENOMEM;
	/* module ids come from the symbol side (the canonical path of the file probed) */
	am->module_id = m->module_id;
	am->base_address = m->base;
	am->size = m->size;
	if (set_str(&am->build_id, m->build_id))
		return -ENOMEM;
	for (size_t j = 0; j < m->nfuncs; j++) {
		const struct sym_func *f = &m->funcs[j];
		struct atf_symbol *s;

		if (!f->selected)
			continue;
		s = atf_manifest__add_symbol(man, m->module_id, f->symbol_index, f->name);
		if (!s)
			return -ENOMEM;
		s->address = f->ifunc_impl ? f->ifunc_impl : f->addr;
		s->size = f->size;
		if (set_str(&s->demangled, f->demangled))
			return -ENOMEM;
		if (add_aliases(s, m, f))
			return -ENOMEM;
	}
	return 0;
}

static int add_modules(struct recorder *r, struct atf_manifest *man)
{
	for (size_t i = 0; i < r->nmodules; i++) {
		int err = rec_manifest_add_module(man, r->modules[i]);

		if (err)
			return err;
	}
	return 0;
}

static int set_host_fields(struct atf_manifest *man)
{
	struct utsname u;
	char kernel[3 * sizeof(u.release)], iso[32];
	time_t now = time(NULL);
	struct tm tm;

	if (uname(&u) == 0) {
		snprintf(kernel, sizeof(kernel), "%s %s %s", u.sysname, u.release, u.machine);
		if (set_str(&man->kernel, kernel) || set_str(&man->host, u.nodename))
			return -ENOMEM;
	}
	gmtime_r(&now, &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (set_str(&man->start_time, iso) || set_str(&man->atftrace_version, ATFTRACE_VERSION))
		return -ENOMEM;
	return 0;
}

int rec_manifest_build(struct recorder *r, struct rec_process *p, char *const *argv, size_t argc)
{
	struct atf_manifest *man = atf_manifest__new();
	char **own_argv = NULL, comm[64];
	size_t own_argc = 0;
	pid_t nspid = 0;
	int err = -ENOMEM;

	if (!man)
		return -ENOMEM;
	man->clock_type = ATF_CLOCK_BOOTTIME;
	man->pid = (uint32_t)p->pid;
	if (!proc_nspid(p->pid, &nspid) && nspid != p->pid)
		man->ns_pid = (uint32_t)nspid;
	if (!argv && !proc_cmdline(p->pid, &own_argv, &own_argc)) {
		argv = own_argv;
		argc = own_argc;
	}
	if (argc) {
		man->argv = calloc(argc, sizeof(*man->argv));
		if (!man->argv)
			goto cleanup;
		for (size_t i = 0; i < argc; i++) {
			if (!(man->argv[i] = strdup(argv[i] ? argv[i] : "")))
				goto cleanup;
			man->argc = i + 1;
		}
	}
	/* A gated child still runs our own image: name it after the command it is about to exec. */
	if (p->expect_exec && argc) {
		const char *base = strrchr(argv[0], '/');
		snprintf(comm, sizeof(comm), "%s", base ? base + 1 : argv[0]);
	} else if (proc_comm(p->pid, 0, comm, sizeof(comm)) < 0) {
		comm[0] = '\0';
	}
	if (r->opts.record_filter && set_str(&man->record_filter, r->opts.record_filter))
		goto cleanup;
	man->filter_min_ns = r->opts.filter_min_ns;
	if ((comm[0] && set_str(&man->process_name, comm)) || set_host_fields(man))
		goto cleanup;
	err = add_modules(r, man);
	if (err < 0)
		goto cleanup;
	p->man = man;
	man = NULL;
cleanup:
	proc_argv_free(own_argv, own_argc);
	atf_manifest__free(man);
	return err;
}

int rec_manifest_save(struct recorder *r, struct rec_process *p)
{
	struct atf_manifest *man = p->man;
	struct probe_losses lost;
	uint64_t t0 = 0, t1 = 0;
	char path[4096];
	int err;

	for (size_t i = 0; i < p->nthreads && i < man->nthreads; i++) {
		struct rec_thread *t = p->threads[i];
		struct atf_thread_info *ti = &man->threads[i];

		ti->index_events = t->events;
		ti->detail_events = t->detail_events;
		ti->has_detail = t->detail_events > 0;
		struct rec_loss l;

		rec_thread_losses(r, t, false, &l);
		ti->lost_calls = l.calls;
		ti->lost_returns = l.returns;
		ti->lost_first_ns = l.first_ns;
		ti->lost_last_ns = l.last_ns;
		if (!t->events)
			continue;
		if (!t0 || t->first_ts < t0)
			t0 = t->first_ts;
		if (t->last_ts > t1)
			t1 = t->last_ts;
	}
	man->time_start_ns = t0;
	man->time_end_ns = t1;
	rec_losses(r, &lost);
	man->lost_events = lost.events;
	man->lost_detail = lost.detail;
	man->lost_records = lost.records;
	rec_filtered_manifest(r, p);
	if (p->end_reason && set_str(&man->end_reason, p->end_reason))
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/manifest.json", p->dir);
	err = atf_manifest__save(man, path);
	if (err < 0)
		return err;
	p->manifest_dirty = false;
	p->last_save_ns = clock_mono_ns();
	return 0;
}

/* ---- a process's start time (system-wide sessions) --------------------------------------- */

/* Boot time in seconds since the epoch (btime in /proc/stat), or 0. */
uint64_t rec_boot_time_s(void)
{
	static uint64_t btime;
	char line[256];
	FILE *f;

	if (btime)
		return btime;
	f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", (unsigned long long *)&btime) == 1)
			break;
	fclose(f);
	return btime;
}

void rec_manifest_set_start_time(struct rec_process *p, uint64_t boot_s, uint64_t after_boot_s)
{
	char iso[32], *s;

	session_index_iso_utc((time_t)(boot_s + after_boot_s), iso, sizeof(iso));
	s = strdup(iso);
	if (s) {
		free(p->man->start_time);
		p->man->start_time = s;
	}
}

void rec_session_process_added(struct recorder *r, struct rec_process *p)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t boot = rec_boot_time_s();

	r->index_dirty = true;
	if (proc_start_time(p->pid, &p->start_ticks) < 0 || hz <= 0 || !boot) {
		p->start_ticks = 0;     /* already gone: REC_PROC_INFO may still tell */
		return;
	}
	/* In a system-wide session the process, not the session, starts its manifest's story. */
	rec_manifest_set_start_time(p, boot, p->start_ticks / (uint64_t)hz);
}
