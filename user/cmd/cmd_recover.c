// SPDX-License-Identifier: MIT
/*
 * atftrace recover SESSION: repair the process directories of a session whose recorder was
 * cut short. For each directory: every thread_<id>/index.atf and detail.atf gets a header and
 * footer describing its whole records (atf_file_recover; a torn last record is the only thing
 * dropped); a missing manifest.json is rebuilt, and one that lacks thread directories is
 * extended, from the files (tid from the index header); thread counts and the time range are
 * brought up to date; the manifest is saved atomically. Every repair is printed.
 * A manifest that exists but cannot be parsed is reported and left alone: it holds the
 * symbols, which the files cannot give back. The index and detail of a thread are then made to
 * agree on their links (atf_thread_recover_links), so that verify accepts what recover leaves.
 * Nothing is followed through a link inside the session: a thread_<id> that is a link (or a
 * directory of another owner than its process directory's) is named and left alone (exit 1),
 * and every file written belongs to its directory's owner (ATF_TMP_IN_SESSION).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf.h"
#include "cmd_common.h"
#include "commands.h"

typedef unsigned long long ull;

static const char recover_doc[] =
	"Repair the headers and footers of a session cut short, and rebuild or extend its manifest.";

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Ids of the thread_<id> directories under @dir, sorted; returns the count or -errno. A link, or a
 * directory of another owner than @dir's, is not a thread directory of this session: with @report
 * it is named on stderr (and *@refused set), and it is never followed or written in.
 */
static int list_thread_dirs(const char *dir, uint32_t **ids, bool report, bool *refused)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat dst;
	size_t n = 0;

	*ids = NULL;
	if (!d)
		return -errno;
	if (fstat(dirfd(d), &dst) < 0) {
		int err = -errno;

		closedir(d);
		return err;
	}
	while ((de = readdir(d))) {
		unsigned id;
		char tail;
		struct stat st;
		uint32_t *p;

		if (sscanf(de->d_name, "thread_%u%c", &id, &tail) != 1 || de->d_name[7] < '0' || de->d_name[7] > '9')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !(S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)))
			continue;
		if (S_ISLNK(st.st_mode) || st.st_uid != dst.st_uid) {
			if (report && S_ISLNK(st.st_mode))
				fprintf(stderr, "atftrace recover: %s/%s: a symbolic link: not followed, left alone\n",
					dir, de->d_name);
			else if (report)
				fprintf(stderr, "atftrace recover: %s/%s: owned by uid %u, not by the session's owner "
					"(uid %u): left alone\n", dir, de->d_name, (unsigned)st.st_uid, (unsigned)dst.st_uid);
			*refused = true;
			continue;
		}
		p = realloc(*ids, (n + 1) * sizeof(*p));
		if (!p) {
			closedir(d);
			free(*ids);
			*ids = NULL;
			return -ENOMEM;
		}
		*ids = p;
		(*ids)[n++] = id;
	}
	closedir(d);
	if (n)
		qsort(*ids, n, sizeof(**ids), u32_cmp);
	return (int)n;
}

/* Recover one file if it exists; prints what was done. Returns 1 repaired, 0 fine/absent, <0 error. */
static int recover_file(const char *dir, uint32_t id, const char *name)
{
	char path[4096];
	struct atf_diag diag = { 0 };
	ull before = 0, torn = 0;
	struct stat st;
	int err;

	snprintf(path, sizeof(path), "%s/thread_%u/%s", dir, id, name);
	if (lstat(path, &st) && errno == ENOENT)
		return 0;
	if (!strcmp(name, "index.atf")) {   /* what a lenient reader sees now, for the report */
		struct atf_index_file f;

		if (!atf_index_open(&f, path, 0, NULL)) {
			before = f.count, torn = f.torn_bytes;
			atf_index_close(&f);
		}
	} else {
		struct atf_detail_file f;

		if (!atf_detail_open(&f, path, 0, NULL)) {
			before = f.count, torn = f.torn_bytes;
			atf_detail_close(&f);
		}
	}
	err = atf_file_recover(path, &diag);
	if (err < 0) {
		cmd_print_diag("recover", path, err, &diag, true);
		return err;
	}
	if (err == 1)
		printf("repaired %s: header and footer rewritten, %llu records kept, %llu torn bytes dropped\n", path,
		       before, torn);
	return err;
}

/* Make a thread's two files agree on their links (atf_thread_recover_links); 1 if rewritten. */
static int recover_links(const char *dir, uint32_t id)
{
	char ipath[4096], dpath[4096];
	struct atf_diag diag = { 0 };
	struct stat st;
	int err;

	snprintf(ipath, sizeof(ipath), "%s/thread_%u/index.atf", dir, id);
	snprintf(dpath, sizeof(dpath), "%s/thread_%u/detail.atf", dir, id);
	if (lstat(ipath, &st) || lstat(dpath, &st))
		return 0;
	err = atf_thread_recover_links(ipath, dpath, &diag);
	if (err < 0)
		cmd_print_diag("recover", dpath, err, &diag, true);
	else if (err)
		printf("repaired thread_%u: index and detail links made whole (detail records of events cut "
		       "off the index dropped, links to cut detail records cleared)\n", id);
	return err;
}

/* Bring the manifest's entry for thread @id up to date with its files; true if anything changed. */
static bool refresh_thread(const char *dir, struct atf_thread_info *ti, uint64_t *tmin, uint64_t *tmax)
{
	struct atf_index_file f;
	struct atf_detail_file d;
	struct atf_index_event ev;
	char path[4096];
	uint64_t ndet = 0;
	bool changed = false, has_detail = false;

	snprintf(path, sizeof(path), "%s/thread_%u/index.atf", dir, ti->id);
	if (atf_index_open(&f, path, 0, NULL))
		return false;
	if (f.count) {
		atf_index_get(&f, 0, &ev);
		*tmin = ev.timestamp_ns < *tmin ? ev.timestamp_ns : *tmin;
		atf_index_get(&f, f.count - 1, &ev);
		*tmax = ev.timestamp_ns > *tmax ? ev.timestamp_ns : *tmax;
	}
	if (!ti->tid && f.hdr.thread_id) {
		ti->tid = f.hdr.thread_id;
		changed = true;
	}
	snprintf(path, sizeof(path), "%s/thread_%u/detail.atf", dir, ti->id);
	if (!access(path, F_OK) && !atf_detail_open(&d, path, 0, NULL)) {
		ndet = d.count;
		has_detail = true;
		atf_detail_close(&d);
	}
	if (ti->index_events != f.count || ti->detail_events != ndet || (has_detail && !ti->has_detail)) {
		printf("manifest: thread_%u counts %llu/%llu -> %llu/%llu (index/detail)\n", ti->id,
		       (ull)ti->index_events, (ull)ti->detail_events, (ull)f.count, (ull)ndet);
		ti->index_events = f.count;
		ti->detail_events = ndet;
		ti->has_detail = ti->has_detail || has_detail;
		changed = true;
	}
	atf_index_close(&f);
	return changed;
}

static int recover_dir(const char *dir)
{
	struct atf_manifest *m = NULL;
	struct atf_diag diag = { 0 };
	uint32_t *ids = NULL;
	char mpath[4096];
	uint64_t tmin = UINT64_MAX, tmax = 0;
	bool changed = false, fresh = false, refused = false;
	int n, err = 0, repaired = 0;

	n = list_thread_dirs(dir, &ids, true, &refused);
	if (n < 0) {
		fprintf(stderr, "atftrace recover: %s: %s\n", dir, strerror(-n));
		return n;
	}
	for (int i = 0; i < n; i++) {
		int r1 = recover_file(dir, ids[i], "index.atf");
		int r2 = r1 < 0 ? 0 : recover_file(dir, ids[i], "detail.atf");
		int r3 = r1 < 0 || r2 < 0 ? 0 : recover_links(dir, ids[i]);

		if (r1 < 0 || r2 < 0 || r3 < 0) {
			err = r1 < 0 ? r1 : r2 < 0 ? r2 : r3;
			goto cleanup;
		}
		repaired += r1 + r2 + r3;
	}
	snprintf(mpath, sizeof(mpath), "%s/manifest.json", dir);
	if (access(mpath, F_OK)) {
		m = atf_manifest__new();
		if (!m || !(m->end_reason = strdup("recovered"))) {
			err = -ENOMEM;
			goto cleanup;
		}
		printf("manifest: %s missing, rebuilding it from %d thread directories (no symbols)\n", mpath, n);
		fresh = changed = true;
	} else if ((err = atf_manifest__load(&m, mpath, &diag))) {
		fprintf(stderr, "atftrace recover: %s: %s (left as it is)\n", mpath, diag.msg);
		goto cleanup;
	}
	for (int i = 0; i < n; i++) {
		bool listed = false;

		for (size_t j = 0; j < m->nthreads && !listed; j++)
			listed = m->threads[j].id == ids[i];
		if (listed)
			continue;
		if (!atf_manifest__add_thread(m, ids[i], 0, NULL)) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (!fresh)
			printf("manifest: thread_%u was not listed, added\n", ids[i]);
		changed = true;
	}
	for (size_t j = 0; j < m->nthreads; j++)
		changed |= refresh_thread(dir, &m->threads[j], &tmin, &tmax);
	if (tmin != UINT64_MAX) {
		/* files cut short: the session ends at their last whole event; else the range only widens */
		bool cut = repaired || fresh;
		uint64_t start = cut || !m->time_start_ns || m->time_start_ns > tmin ? tmin : m->time_start_ns;
		uint64_t end = cut || m->time_end_ns < tmax ? tmax : m->time_end_ns;

		if (start != m->time_start_ns || end != m->time_end_ns) {
			printf("manifest: time range %llu..%llu -> %llu..%llu\n", (ull)m->time_start_ns,
			       (ull)m->time_end_ns, (ull)start, (ull)end);
			m->time_start_ns = start, m->time_end_ns = end;
			changed = true;
		}
	}
	if (changed) {
		err = atf_manifest__save(m, mpath);
		if (err) {
			fprintf(stderr, "atftrace recover: %s: cannot save: %s\n", mpath, atf_strerror(err));
			goto cleanup;
		}
		printf("saved %s\n", mpath);
	}
	if (!changed && !repaired)
		printf("%s: nothing to repair\n", dir);
cleanup:
	atf_manifest__free(m);
	free(ids);
	return err ?: refused ? -EPERM : 0;
}

/* A process directory: has a manifest or thread directories (a killed recorder may leave no manifest). */
static bool is_process_dir(const char *path)
{
	uint32_t *ids;
	char mpath[4096];
	bool refused = false;
	int n;

	snprintf(mpath, sizeof(mpath), "%s/manifest.json", path);
	if (!access(mpath, F_OK))
		return true;
	n = list_thread_dirs(path, &ids, false, &refused);
	free(ids);
	return n > 0;
}

int cmd_recover(int argc, char **argv)
{
	const char *session;
	char **dirs = NULL, *real;
	int n, rc = 0;

	if (cmd_parse_session("recover", recover_doc, argc, argv, &session))
		return 2;
	/* the path given is resolved once; inside it, nothing is followed through a link */
	real = realpath(session, NULL);
	if (!real) {
		fprintf(stderr, "atftrace recover: %s: %s\n", session, strerror(errno));
		return 1;
	}
	session = real;
	if (is_process_dir(session)) {
		dirs = calloc(1, sizeof(*dirs));
		if (!dirs || !(dirs[0] = strdup(session))) {
			free(dirs);
			fprintf(stderr, "atftrace recover: %s\n", strerror(ENOMEM));
			free(real);
			return 1;
		}
		n = 1;
	} else if ((n = cmd_resolve("recover", session, &dirs)) < 0) {
		free(real);
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (recover_dir(dirs[i]))
			rc = 1;
	atf_session_resolve_free(dirs, n);
	free(real);
	return rc;
}
