// SPDX-License-Identifier: MIT
/*
 * Container plumbing for --cgroup, --container and -p NSPID. Everything here reads /proc and
 * cgroupfs of the host; files inside a container are only ever opened through open_in_root().
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "container.h"
#include "proc.h"

int cgroup_id_of_path(const char *path, uint64_t *id)
{
	struct {
		struct file_handle fh;
		uint64_t cgid;
	} h = { .fh.handle_bytes = sizeof(uint64_t) };
	int mount_id;
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* cgroupfs (v1 and v2) exports the kernfs node id, which is the cgroup id, as the handle. */
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0))
		return -errno;
	if (h.fh.handle_bytes != sizeof(uint64_t))
		return -EINVAL;
	*id = h.cgid;
	return 0;
}

static bool valid_container_id(const char *id)
{
	size_t n = strlen(id);

	if (n < 12 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)id[i]))
			return false;
	return true;
}

/* Does path component @comp name container @id (with one of the runtimes' decorations)? */
static bool component_matches(const char *comp, size_t len, const char *id)
{
	static const char *const prefixes[] = { "", "docker-", "cri-containerd-", "crio-", "libpod-" };
	size_t idlen = strlen(id);

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);
		const char *p = comp + pl;
		size_t rest;

		if (len < pl + idlen || strncmp(comp, prefixes[i], pl))
			continue;
		if (strncmp(p, id, idlen))
			continue;
		/* the id must be followed by more hex digits (prefix match), ".scope", or the end */
		rest = len - pl - idlen;
		p += idlen;
		while (rest && isxdigit((unsigned char)*p)) {
			p++;
			rest--;
		}
		if (rest == 0 || (rest == 6 && !strncmp(p, ".scope", 6)))
			return true;
	}
	return false;
}

int cgroup_line_matches(const char *line, const char *id, char *path, size_t pathlen)
{
	const char *cg = strchr(line, ':');
	size_t n;

	if (!cg || !(cg = strchr(cg + 1, ':')) || !valid_container_id(id))
		return 0;
	cg++;
	n = strcspn(cg, "\n");
	for (const char *c = cg; c < cg + n;) {
		const char *slash = memchr(c, '/', (size_t)(cg + n - c));
		const char *end = slash ? slash : cg + n;

		if (end > c && component_matches(c, (size_t)(end - c), id)) {
			if (n >= pathlen)
				return 0;
			memcpy(path, cg, n);
			path[n] = '\0';
			return 1;
		}
		c = end + 1;
	}
	return 0;
}

/* Mount point of the v2 hierarchy (pure v2 or hybrid), or NULL. */
static const char *cgroup2_root(void)
{
	static const char *const roots[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
	char p[64];

	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/cgroup.procs", roots[i]);
		if (access(p, F_OK) == 0 && !(i == 1 && access("/sys/fs/cgroup/unified", F_OK) == 0))
			return roots[i];
	}
	return NULL;
}

int container_cgroup(const char *id, char *dir, size_t dirlen)
{
	const char *root = cgroup2_root();
	char file[300], line[4096], rel[4096];
	struct dirent *de;
	DIR *proc;
	int found = -ENOENT;

	if (!valid_container_id(id))
		return -EINVAL;
	if (!root)
		return -ENOENT;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (found == -ENOENT && (de = readdir(proc))) {
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(file, sizeof(file), "/proc/%s/cgroup", de->d_name);
		f = fopen(file, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			/* the v2 line is "0::/path" */
			if (strncmp(line, "0::", 3) || !cgroup_line_matches(line, id, rel, sizeof(rel)))
				continue;
			if ((size_t)snprintf(dir, dirlen, "%s%s", root, rel) < dirlen)
				found = 0;
			break;
		}
		fclose(f);
	}
	closedir(proc);
	return found;
}

int proc_nspid(pid_t pid, pid_t *nspid)
{
	char file[64], line[512];
	FILE *f;
	int err = -ENOENT;

	snprintf(file, sizeof(file), "/proc/%d/status", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *last, *tok, *save;

		if (strncmp(line, "NSpid:", 6))
			continue;
		last = NULL;
		for (tok = strtok_r(line + 6, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
			last = tok;
		if (last) {
			*nspid = (pid_t)strtol(last, NULL, 10);
			err = 0;
		}
		break;
	}
	fclose(f);
	return err;
}

int container_host_pid(const char *cgdir, pid_t nspid, pid_t *host_pid)
{
	char file[4200];
	FILE *f;
	int pid, err = -ESRCH;

	snprintf(file, sizeof(file), "%s/cgroup.procs", cgdir);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%d", &pid) == 1) {
		pid_t ns;

		if (proc_nspid(pid, &ns) == 0 && ns == nspid) {
			*host_pid = pid;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

int openat_in_root(int rootfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

int open_in_root(pid_t pid, const char *path, int flags)
{
	char rootpath[64];
	int root, fd;

	snprintf(rootpath, sizeof(rootpath), "/proc/%d/root", (int)pid);
	root = open(rootpath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	fd = openat_in_root(root, path, flags);
	close(root);
	return fd;
}

/*
 * A container's files are untrusted. Its paths mean something only inside its root, and a
 * symlink in it may point anywhere on the host: "/proc/PID/root/usr/lib/libfoo.so" walked by
 * the host follows an absolute symlink inside the container back to the HOST's root. So
 * nothing of a container is ever opened by a host path walk: the executable through the
 * /proc/PID/exe magic link, mapped libraries through /proc/PID/map_files, and paths the user
 * names with openat2(RESOLVE_IN_ROOT) inside /proc/PID/root. The symbols are then read from that
 * fd, and the uprobe links get "/proc/self/fd/<fd>": the kernel resolves that magic link to the
 * very inode we opened (uprobes are placed on inodes), while any other path given to the link
 * would be walked again by the kernel, on the host, symlinks and all.
  */
bool container_other_root(pid_t pid)
{
	char path[64];
	struct stat ours, theirs;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	if (stat("/proc/self/root", &ours) || stat(path, &theirs))
		return false;
	return ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino;
}
