// SPDX-License-Identifier: MIT
/*
 * Sessions: a process directory (manifest.json + thread_<id>/{index,detail}.atf) opened as a
 * whole, and resolution of a user-given path to the process directories it holds.
 */
#include <dirent.h>
#include <fnmatch.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "atf.h"
#include "atf_args.h"

static void diag_set(struct atf_diag *diag, int err, const char *file, const char *msg)
{
	if (!diag)
		return;
	diag->err = err;
	snprintf(diag->file, sizeof(diag->file), "%s", file);
	diag->offset = 0;
	snprintf(diag->msg, sizeof(diag->msg), "%s", msg);
}

int atf_session__open(struct atf_session **out, const char *dir, unsigned flags, struct atf_diag *diag)
{
	struct atf_session *s = calloc(1, sizeof(*s));
	char path[4096];
	struct stat st;
	int err = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->dir = strdup(dir);
	if (!s->dir) {
		err = -ENOMEM;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	err = atf_manifest__load(&s->manifest, path, diag);
	if (err)
		goto cleanup;
	if (atf_args_load(dir, &s->args) < 0)
		s->args = NULL;         /* an unreadable args.txt: values print as raw registers */
	s->threads = calloc(s->manifest->nthreads ?: 1, sizeof(*s->threads));
	if (!s->threads) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < s->manifest->nthreads; i++) {
		const struct atf_thread_info *ti = &s->manifest->threads[i];
		struct atf_thread *t = &s->threads[i];

		t->id = ti->id;
		t->tid = ti->tid;
		t->name = ti->name;
		t->index.fd = -1;
		t->detail.fd = -1;
		snprintf(path, sizeof(path), "%s/thread_%u/index.atf", dir, ti->id);
		err = atf_index_open(&t->index, path, flags, diag);
		if (err) {
			t->index.fd = -1;
			goto cleanup;
		}
		s->nthreads = i + 1;
		snprintf(path, sizeof(path), "%s/thread_%u/detail.atf", dir, ti->id);
		if (lstat(path, &st) && errno == ENOENT)      /* threads without detail have no detail file */
			continue;
		err = atf_detail_open(&t->detail, path, flags, diag);
		if (err) {
			t->detail.fd = -1;
			goto cleanup;
		}
		t->has_detail = true;
	}
	*out = s;
	return 0;
cleanup:
	if (err == -ENOMEM)
		diag_set(diag, err, dir, "out of memory");
	atf_session__close(s);
	return err;
}

void atf_session__close(struct atf_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nthreads; i++) {
		atf_index_close(&s->threads[i].index);
		if (s->threads[i].has_detail)
			atf_detail_close(&s->threads[i].detail);
	}
	free(s->threads);
	atf_args_free(s->args);
	atf_manifest__free(s->manifest);
	free(s->dir);
	free(s);
}

static bool is_file(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !lstat(path, &st) && S_ISREG(st.st_mode);
}

/* "pid_<decimal>" -> the number, else -1. */
static int64_t pid_dir_number(const char *name)
{
	char *end;
	unsigned long long v;

	if (strncmp(name, "pid_", 4) || name[4] < '0' || name[4] > '9')
		return -1;
	errno = 0;
	v = strtoull(name + 4, &end, 10);
	return errno || *end || v > UINT32_MAX ? -1 : (int64_t)v;
}

struct pid_entry {
	int64_t pid;
	char *path;
};

static int pid_entry_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct pid_entry *)a)->pid, y = ((const struct pid_entry *)b)->pid;

	return x < y ? -1 : x > y;
}

int atf_session_resolve(const char *path, char ***dirs)
{
	struct pid_entry *ents = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d = NULL;
	int err = 0;

	*dirs = NULL;
	if (is_file(path, "manifest.json")) {
		*dirs = calloc(1, sizeof(char *));
		if (!*dirs || !((*dirs)[0] = strdup(path))) {
			free(*dirs);
			*dirs = NULL;
			return -ENOMEM;
		}
		return 1;
	}
	d = opendir(path);
	if (!d) {
		return -errno;
	}
	while ((de = readdir(d))) {
		int64_t pid = pid_dir_number(de->d_name);
		char sub[4096];
		struct stat st;
		struct pid_entry *p;

		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		/* a link is no process directory of this session: never followed out of it */
		if (pid < 0 || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		p = realloc(ents, (n + 1) * sizeof(*ents));
		if (!p) {
			err = -ENOMEM;
			goto cleanup;
		}
		ents = p;
		ents[n].pid = pid;
		if (!(ents[n].path = strdup(sub))) {
			err = -ENOMEM;
			goto cleanup;
		}
		n++;
	}
	if (!n) {
		err = -ATF_E_NOT_SESSION;
		goto cleanup;
	}
	qsort(ents, n, sizeof(*ents), pid_entry_cmp);
	*dirs = calloc(n, sizeof(char *));
	if (!*dirs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		(*dirs)[i] = ents[i].path;
	free(ents);
	closedir(d);
	return (int)n;
cleanup:
	for (size_t i = 0; i < n; i++)
		free(ents[i].path);
	free(ents);
	closedir(d);
	return err;
}

void atf_session_resolve_free(char **dirs, int n)
{
	if (!dirs)
		return;
	for (int i = 0; i < n; i++)
		free(dirs[i]);
	free(dirs);
}

static enum atf_name_style name_style;

void atf_set_name_style(enum atf_name_style style)
{
	name_style = style;
}

const char *atf_session__name(struct atf_session *s, uint64_t function_id, char *buf, size_t buflen)
{
	struct atf_symbol *sym = s ? (struct atf_symbol *)atf_manifest__symbol(s->manifest, function_id) : NULL;

	if (sym && sym->demangled && *sym->demangled && name_style == ATF_NAMES_SIMPLE) {
		if (!sym->simple)
			sym->simple = atf_name_simple(sym->demangled);     /* the manifest is ours */
		if (sym->simple)
			return sym->simple;
	}
	if (sym && sym->demangled && *sym->demangled && name_style != ATF_NAMES_RAW)
		return sym->demangled;
	if (sym && sym->name && *sym->name)
		return sym->name;
	snprintf(buf, buflen, "0x%016llx", (unsigned long long)function_id);
	return buf;
}

/* Whether the name copied so far (@out, @n bytes) ends in "operator" plus any operator chars. */
static bool in_operator(const char *out, size_t n)
{
	size_t k = n;

	while (k && strchr("<>()=!+-*/%^&|~[],", out[k - 1]))
		k--;
	return k >= 8 && !memcmp(out + k - 8, "operator", 8);
}

char *atf_name_simple(const char *demangled)
{
	size_t len = strlen(demangled), n = 0;
	char *out = malloc(len + 1);
	int depth = 0;

	if (!out)
		return NULL;
	for (const char *p = demangled; *p; p++) {
		char c = *p;

		if (depth == 0 && (c == '<' || c == '(') && in_operator(out, n)) {
			if (c == '(' && p[1] == ')' && n >= 8 && !memcmp(out + n - 8, "operator", 8)) {
				memcpy(out + n, "()", 2);       /* operator() keeps its name */
				n += 2;
				p++;
				continue;
			}
			if (c == '<') {                 /* operator<, operator<< , operator<= */
				out[n++] = c;
				continue;
			}
		}
		if (c == '<' || c == '(') {
			depth++;
			continue;
		}
		if ((c == '>' || c == ')') && depth) {
			depth--;
			continue;
		}
		if (!depth)
			out[n++] = c;
	}
	/* what follows the last parameter list: " const", " &&", " [clone .cold]" */
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
	{
		char *tail = strstr(out, " const");

		if (tail && !tail[6])
			*tail = '\0';
	}
	return out;
}

/* @form names @pattern: equal (or matching the glob), or equal once a version suffix
 * ("@GLIBC_2.2.5", "@@...") is dropped from the side that has one when the other has none. */
static bool form_matches(const char *form, const char *pattern, bool glob)
{
	const char *fv = strchr(form, '@'), *pv = strchr(pattern, '@');
	char *cut;
	bool ok;

	if (glob ? !fnmatch(pattern, form, 0) : !strcmp(pattern, form))
		return true;
	if ((fv && pv) || (!fv && !pv))
		return false;
	if (fv) {
		if (!(cut = strndup(form, (size_t)(fv - form))))
			return false;
		ok = glob ? !fnmatch(pattern, cut, 0) : !strcmp(pattern, cut);
	} else {
		if (!(cut = strndup(pattern, (size_t)(pv - pattern))))
			return false;
		ok = glob ? !fnmatch(cut, form, 0) : !strcmp(cut, form);
	}
	free(cut);
	return ok;
}

bool atf_symbol__matches(struct atf_symbol *s, const char *pattern, bool glob)
{
	if (s->name && form_matches(s->name, pattern, glob))
		return true;
	if (s->demangled && *s->demangled) {
		if (form_matches(s->demangled, pattern, glob))
			return true;
		if (!s->simple)
			s->simple = atf_name_simple(s->demangled);
		if (s->simple && form_matches(s->simple, pattern, glob))
			return true;
	}
	for (size_t i = 0; i < s->naliases; i++)
		if (form_matches(s->aliases[i], pattern, glob))
			return true;
	return false;
}
