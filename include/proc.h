/* SPDX-License-Identifier: MIT */
/*
 * Processes from the recorder's side (user/proc/proc.c): launching a command gated so the probes
 * are in place before its first instruction, and small /proc readers.
 */
#ifndef ATFTRACE_PROC_H
#define ATFTRACE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A forked child held before exec until proc_child__release(). */
struct proc_child {
	pid_t pid;
	int gate_fd;                /* write end: one byte lets the child exec */
	int exec_err_fd;            /* read end: errno from a failed exec, EOF on success */
};

/**
 * proc_child__spawn_gated - fork a child that blocks until released, then execs @path
 * with @argv (argv[0] as given) and default signal dispositions and an empty signal mask.
 * If the parent closes the gate without releasing, the child exits with status 127.
 */
int proc_child__spawn_gated(struct proc_child *c, const char *path, char *const argv[]);

/**
 * proc_child__release - let the child exec and wait until exec has happened or failed.
 * Returns 0 once the child runs the new program, or the negative errno of a failed exec.
 */
int proc_child__release(struct proc_child *c);

/** proc_child__abort - close the gate without releasing (the child exits 127) and reap it. */
void proc_child__abort(struct proc_child *c);

/**
 * proc_find_in_path - resolve @cmd as execvp would: unchanged when it holds a '/', otherwise the
 * first executable regular file named @cmd in $PATH. Returns a malloc'd path, or NULL.
 */
char *proc_find_in_path(const char *cmd);

/** proc_read_full - read @len bytes, retrying short reads and EINTR; fewer only at EOF. -errno on error. */
ssize_t proc_read_full(int fd, void *buf, size_t len);

/** proc_comm - /proc/PID/task/TID/comm (@tid 0: /proc/PID/comm) into @buf without newline. */
int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/** proc_cmdline - /proc/PID/cmdline split into a NULL-terminated malloc'd argv (free with proc_argv_free). */
int proc_cmdline(pid_t pid, char ***argv, size_t *argc);
void proc_argv_free(char **argv, size_t argc);

/** proc_environ_get - the value of @name in /proc/PID/environ (malloc'd), or NULL when unset. */
char *proc_environ_get(pid_t pid, const char *name);

/** proc_exe_path - readlink /proc/PID/exe (malloc'd, without a " (deleted)" suffix), or NULL. */
char *proc_exe_path(pid_t pid);

/** proc_threads - tids of process @pid from /proc/PID/task (malloc'd array). */
int proc_threads(pid_t pid, pid_t **tids, size_t *n);

/** proc_start_time - field 22 of /proc/PID/stat: start time in clock ticks after boot. */
int proc_start_time(pid_t pid, uint64_t *ticks);

/**
 * proc_mm_shared - does another process (not a thread of @pid) share @pid's address space: a
 * vfork or CLONE_VM child, or their parent? Such a process runs on while @pid is stopped.
 */
bool proc_mm_shared(pid_t pid);

/** proc_alive - does process @pid exist and is it not a zombie? */
bool proc_alive(pid_t pid);

/* One file-backed mapping from /proc/PID/maps. */
struct proc_mapping {
	char *path;
	uint64_t start, end;        /* lowest and highest address of the file's mappings */
	uint64_t file_offset_at_start;
	bool exec;                  /* some mapping of the file is executable */
};

/**
 * proc_maps - every distinct file mapped by @pid, in order of first appearance (malloc'd).
 * Pseudo-files ("[vdso]", anonymous) are left out.
 */
int proc_maps(pid_t pid, struct proc_mapping **maps, size_t *n);
void proc_maps_free(struct proc_mapping *maps, size_t n);

/**
 * proc_maps_parse_line - parse one /proc/PID/maps line. Pure: unit-tested.
 * Returns 1 with the fields filled (@path points into @line, or NULL when the mapping has no
 * path), 0 for a line that is not a mapping, never touching memory outside @line.
 */
int proc_maps_parse_line(char *line, uint64_t *start, uint64_t *end, bool *exec,
			 uint64_t *offset, char **path);

#endif
