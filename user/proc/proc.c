// SPDX-License-Identifier: MIT
/*
 * Launching a traced command gated, and small /proc readers for the recorder.
 *
 * The gate: the child blocks on a pipe read between fork and exec, so the parent can add the
 * child's pid to the BPF filter and attach uprobes restricted to it before the target runs a
 * single instruction of its own. A second, close-on-exec pipe carries errno back when exec
 * fails, and shows EOF when it succeeds, so the parent knows which happened.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "proc.h"

ssize_t proc_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Read a whole small /proc file into a malloc'd NUL-terminated buffer. */
static int read_proc_file(const char *path, char **out, size_t *outlen)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	int fd, err = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	for (;;) {
		ssize_t n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	if (outlen)
		*outlen = len;
	buf = NULL;
cleanup:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

int proc_child__spawn_gated(struct proc_child *c, const char *path, char *const argv[])
{
	int gate[2] = { -1, -1 }, errp[2] = { -1, -1 };
	pid_t pid;

	c->pid = -1;
	c->gate_fd = c->exec_err_fd = -1;
	if (pipe2(gate, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		int err = -errno;
		for (int i = 0; i < 2; i++) {
			if (gate[i] >= 0)
				close(gate[i]);
			if (errp[i] >= 0)
				close(errp[i]);
		}
		return err;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;
		close(gate[0]); close(gate[1]); close(errp[0]); close(errp[1]);
		return err;
	}
	if (pid == 0) {
		/* Child: async-signal-safe calls only. */
		sigset_t none;
		char go;
		int e;

		close(gate[1]);
		close(errp[0]);
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (proc_read_full(gate[0], &go, 1) != 1)
			_exit(127);     /* the parent gave up before releasing us */
		close(gate[0]);
		execv(path, argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(gate[0]);
	close(errp[1]);
	c->pid = pid;
	c->gate_fd = gate[1];
	c->exec_err_fd = errp[0];
	return 0;
}

int proc_child__release(struct proc_child *c)
{
	char go = 'g';
	int e = 0;
	ssize_t n;

	if (c->gate_fd < 0)
		return -EINVAL;
	while ((n = write(c->gate_fd, &go, 1)) < 0 && errno == EINTR)
		;
	close(c->gate_fd);
	c->gate_fd = -1;
	if (n != 1)
		return -EPIPE;
	n = proc_read_full(c->exec_err_fd, &e, sizeof(e));
	close(c->exec_err_fd);
	c->exec_err_fd = -1;
	if (n == (ssize_t)sizeof(e))
		return -(e ? e : ENOEXEC);
	return n < 0 ? (int)n : 0;
}

void proc_child__abort(struct proc_child *c)
{
	if (c->gate_fd >= 0)
		close(c->gate_fd);
	if (c->exec_err_fd >= 0)
		close(c->exec_err_fd);
	c->gate_fd = c->exec_err_fd = -1;
	if (c->pid > 0)
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
	c->pid = -1;
}

static bool is_exec_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

char *proc_find_in_path(const char *cmd)
{
	const char *env = getenv("PATH");
	char *dirs, *save = NULL, *found = NULL;

	if (!cmd || !*cmd)
		return NULL;
	if (strchr(cmd, '/'))
		return is_exec_file(cmd) ? strdup(cmd) : NULL;
	dirs = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
	if (!dirs)
		return NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *p;
		if (asprintf(&p, "%s/%s", *d ? d : ".", cmd) < 0)
			break;
		if (is_exec_file(p)) {
			found = p;
			break;
		}
		free(p);
	}
	free(dirs);
	return found;
}

int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = proc_read_full(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

void proc_argv_free(char **argv, size_t argc)
{
	if (!argv)
		return;
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

int proc_cmdline(pid_t pid, char ***argv_out, size_t *argc_out)
{
	char path[64], *buf = NULL, **argv = NULL;
	size_t len = 0, argc = 0;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	err = read_proc_file(path, &buf, &len);
	if (err)
		return err;
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			argc++;
	if (len && buf[len - 1] != '\0')
		argc++;         /* a last argument without its NUL (rewritten cmdline) */
	argv = calloc(argc + 1, sizeof(*argv));
	if (!argv) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0, off = 0; i < argc; i++) {
		argv[i] = strdup(buf + off);    /* buf[len] is a NUL, so the last one ends */
		if (!argv[i]) {
			proc_argv_free(argv, i);
			argv = NULL;
			err = -ENOMEM;
			goto cleanup;
		}
		off += strlen(buf + off) + 1;
	}
	*argv_out = argv;
	*argc_out = argc;
cleanup:
	free(buf);
	return err;
}

char *proc_exe_path(pid_t pid)
{
	char link[64], buf[4096];
	ssize_t n;
	size_t len;
	static const char deleted[] = " (deleted)";

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	len = (size_t)n;
	if (len > sizeof(deleted) - 1 && !strcmp(buf + len - (sizeof(deleted) - 1), deleted))
		buf[len - (sizeof(deleted) - 1)] = '\0';
	return strdup(buf);
}

int proc_threads(pid_t pid, pid_t **tids_out, size_t *n_out)
{
	char path[64];
	struct dirent *de;
	pid_t *tids = NULL;
	size_t n = 0, cap = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);
		if (*end || v <= 0)
			continue;
		if (n == cap) {
			pid_t *nt = realloc(tids, (cap ? cap * 2 : 16) * sizeof(*tids));
			if (!nt) {
				free(tids);
				closedir(d);
				return -ENOMEM;
			}
			tids = nt;
			cap = cap ? cap * 2 : 16;
		}
		tids[n++] = (pid_t)v;
	}
	closedir(d);
	*tids_out = tids;
	*n_out = n;
	return 0;
}

/* The fields after "(comm)" in /proc/PID/stat; comm may hold spaces and parentheses. */
static int read_stat_tail(pid_t pid, char **buf, const char **tail)
{
	char path[64];
	char *rp;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	err = read_proc_file(path, buf, NULL);
	if (err)
		return err;
	rp = strrchr(*buf, ')');
	if (!rp || rp[1] != ' ') {
		free(*buf);
		*buf = NULL;
		return -EINVAL;
	}
	*tail = rp + 2;         /* field 3 (state) onwards */
	return 0;
}

int proc_start_time(pid_t pid, uint64_t *ticks)
{
	const char *p;
	char *buf = NULL;
	int err = read_stat_tail(pid, &buf, &p);

	if (err)
		return err;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	err = p ? 0 : -EINVAL;
	if (p)
		*ticks = strtoull(p, NULL, 10);
	free(buf);
	return err;
}

bool proc_mm_shared(pid_t pid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool shared = false;

	while (d && !shared && (de = readdir(d))) {
		char *end;
		long q = strtol(de->d_name, &end, 10);

		/* kcmp's KCMP_VM (1): 0 when both use the same address space */
		shared = q > 0 && !*end && q != pid && syscall(SYS_kcmp, pid, (pid_t)q, 1, 0, 0) == 0;
	}
	if (d)
		closedir(d);
	return shared;
}

bool proc_alive(pid_t pid)
{
	const char *p;
	char *buf = NULL;
	bool alive;

	if (read_stat_tail(pid, &buf, &p))
		return false;
	alive = *p != 'Z' && *p != 'X';
	free(buf);
	return alive;
}

int proc_maps_parse_line(char *line, uint64_t *start, uint64_t *end, bool *exec,
			 uint64_t *offset, char **path)
{
	char *p = line, *q;
	unsigned long long v;

	v = strtoull(p, &q, 16);
	if (q == p || *q != '-')
		return 0;
	*start = v;
	p = q + 1;
	v = strtoull(p, &q, 16);
	if (q == p || *q != ' ')
		return 0;
	*end = v;
	p = q + 1;
	if (strlen(p) < 5 || p[4] != ' ')           /* perms "r-xp" */
		return 0;
	*exec = p[2] == 'x';
	p += 5;
	v = strtoull(p, &q, 16);                    /* offset */
	if (q == p || *q != ' ')
		return 0;
	*offset = v;
	p = q + 1;
	for (int skip = 0; skip < 2; skip++) {      /* dev, inode */
		q = strchr(p, ' ');
		if (!q)
			return 0;
		p = q + 1;
	}
	while (*p == ' ')
		p++;
	p[strcspn(p, "\n")] = '\0';
	*path = *p ? p : NULL;
	return 1;
}

void proc_maps_free(struct proc_mapping *maps, size_t n)
{
	if (!maps)
		return;
	for (size_t i = 0; i < n; i++)
		free(maps[i].path);
	free(maps);
}

int proc_maps(pid_t pid, struct proc_mapping **maps_out, size_t *n_out)
{
	char path[64], *buf = NULL, *save = NULL;
	struct proc_mapping *maps = NULL;
	size_t n = 0, cap = 0;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	err = read_proc_file(path, &buf, NULL);
	if (err)
		return err;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t start, end, off;
		bool exec;
		char *file;
		size_t i;

		if (proc_maps_parse_line(line, &start, &end, &exec, &off, &file) != 1 || !file ||
		    file[0] != '/')
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(maps[i].path, file))
				break;
		if (i == n) {
			if (n == cap) {
				struct proc_mapping *nm = realloc(maps, (cap ? cap * 2 : 32) * sizeof(*maps));
				if (!nm) {
					err = -ENOMEM;
					goto cleanup;
				}
				maps = nm;
				cap = cap ? cap * 2 : 32;
			}
			maps[n] = (struct proc_mapping){ .path = strdup(file), .start = start, .end = end,
							 .file_offset_at_start = off, .exec = exec };
			if (!maps[n].path) {
				err = -ENOMEM;
				goto cleanup;
			}
			n++;
			continue;
		}
		if (start < maps[i].start) {
			maps[i].start = start;
			maps[i].file_offset_at_start = off;
		}
		if (end > maps[i].end)
			maps[i].end = end;
		maps[i].exec |= exec;
	}
	*maps_out = maps;
	*n_out = n;
	maps = NULL;
	n = 0;
cleanup:
	proc_maps_free(maps, n);
	free(buf);
	return err;
}

char *proc_environ_get(pid_t pid, const char *name)
{
	size_t nlen = strlen(name), len = 0;
	char path[64], *buf = NULL, *found = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (!found && getdelim(&buf, &len, '\0', f) > 0)
		if (!strncmp(buf, name, nlen) && buf[nlen] == '=')
			found = strdup(buf + nlen + 1);
	free(buf);
	fclose(f);
	return found;
}
