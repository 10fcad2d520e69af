// SPDX-License-Identifier: MIT
/*
 * --cgroup PATH for the BPF filter. Which hierarchy a directory belongs to is decided by its
 * filesystem (statfs: CGROUP2_SUPER_MAGIC or CGROUP_SUPER_MAGIC), never by its name, so hybrid
 * machines (v1 controllers under /sys/fs/cgroup/<ctrl>, v2 under /sys/fs/cgroup/unified) and
 * pure v2 machines are handled alike. The mount (from /proc/self/mountinfo) gives the v2 level
 * and the v1 controller; /proc/cgroups lists the controllers in subsystem id order, which is
 * the index of task->cgroups->subsys[] that the BPF side reads.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include "cgroup_filter.h"
#include "container.h"

int cgroup_mountinfo_parse_line(char *line, struct cgroup_mount *m)
{
	char *fields[6], *save = NULL, *tok, *fstype, *source, *super;
	int n = 0;

	/* id parent major:minor root mount_point options [optional...] - fstype source super */
	for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		if (n == 6)
			break;          /* fields[5] is the mount options; optional fields follow until "-" */
		fields[n++] = tok;
	}
	if (n < 6)
		return 0;
	while (tok && strcmp(tok, "-"))
		tok = strtok_r(NULL, " \n", &save);
	if (!tok)
		return 0;
	fstype = strtok_r(NULL, " \n", &save);
	source = strtok_r(NULL, " \n", &save);
	super = strtok_r(NULL, " \n", &save);
	if (!fstype || !source || (strcmp(fstype, "cgroup") && strcmp(fstype, "cgroup2")))
		return 0;
	m->root = fields[3];
	m->mount_point = fields[4];
	m->fstype = fstype;
	m->super_options = super ? super : "";
	return 1;
}

/* Path components in @p ("/" and "" have none). */
static int depth_of(const char *p)
{
	int d = 0;

	for (const char *c = p; *c; c++)
		if (*c != '/' && (c == p || c[-1] == '/'))
			d++;
	return d;
}

int cgroup_path_level(const char *root, const char *mount_point, const char *path)
{
	size_t ml = strlen(mount_point);

	while (ml > 1 && mount_point[ml - 1] == '/')
		ml--;
	if (ml == 1 && mount_point[0] == '/')
		ml = 0;             /* mounted at "/": every absolute path is under it */
	if (strncmp(path, mount_point, ml) || (path[ml] && path[ml] != '/'))
		return -1;
	return depth_of(root) + depth_of(path + ml);
}

int cgroup_v1_ssid_of(const char *proc_cgroups, const char *super_options, char *name,
		      size_t namelen)
{
	char opts[512], *save = NULL;

	if (strlen(super_options) >= sizeof(opts))
		return -1;
	strcpy(opts, super_options);
	for (char *opt = strtok_r(opts, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		int ssid = 0;

		for (const char *line = proc_cgroups; line && *line; ) {
			const char *nl = strchr(line, '\n');
			size_t len = strcspn(line, " \t\n");

			if (line[0] != '#' && len) {
				if (len == strlen(opt) && !strncmp(line, opt, len)) {
					if (len >= namelen)
						return -1;
					memcpy(name, line, len);
					name[len] = '\0';
					return ssid;
				}
				ssid++;
			}
			line = nl ? nl + 1 : NULL;
		}
	}
	return -1;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* The mount of @path's filesystem type (@fstype) with the longest mount point holding it. */
static int find_mount(const char *path, const char *fstype, char *root, char *mount_point,
		      char *super, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	size_t best = 0;
	int found = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct cgroup_mount m;
		size_t ml;

		if (!cgroup_mountinfo_parse_line(line, &m) || strcmp(m.fstype, fstype))
			continue;
		ml = strlen(m.mount_point);
		if (cgroup_path_level("/", m.mount_point, path) < 0 || (found == 0 && ml <= best))
			continue;
		if (strlen(m.root) >= len || ml >= len || strlen(m.super_options) >= len)
			continue;
		strcpy(root, m.root);
		strcpy(mount_point, m.mount_point);
		strcpy(super, m.super_options);
		best = ml;
		found = 0;
	}
	fclose(f);
	return found;
}

int cgroup_filter_resolve(const char *path, struct cgroup_filter *f, char *why, size_t whylen)
{
	char root[512], mnt[512], super[512], *cgroups = NULL;
	struct statfs sfs;
	bool v2;
	int err, level, ssid;

	memset(f, 0, sizeof(*f));
	if (!realpath(path, f->path)) {
		err = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return err;
	}
	if (statfs(f->path, &sfs)) {
		err = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return err;
	}
	if ((uint64_t)sfs.f_type != CGROUP2_SUPER_MAGIC && (uint64_t)sfs.f_type != CGROUP_SUPER_MAGIC) {
		snprintf(why, whylen, "not a directory of a cgroup filesystem (cgroup or cgroup2)");
		return -EINVAL;
	}
	v2 = (uint64_t)sfs.f_type == CGROUP2_SUPER_MAGIC;
	err = cgroup_id_of_path(f->path, &f->id);
	if (err < 0) {
		snprintf(why, whylen, "cannot read its cgroup id: %s", strerror(-err));
		return err;
	}
	err = find_mount(f->path, v2 ? "cgroup2" : "cgroup", root, mnt, super, sizeof(root));
	if (err < 0) {
		snprintf(why, whylen, "no %s mount holds it in /proc/self/mountinfo", v2 ? "cgroup2" : "cgroup");
		return err;
	}
	if (v2) {
		level = cgroup_path_level(root, mnt, f->path);
		if (level < 0) {
			snprintf(why, whylen, "not below its mount point %s", mnt);
			return -EINVAL;
		}
		f->level = (uint32_t)level;
		return 0;
	}
	cgroups = read_text("/proc/cgroups");
	if (!cgroups) {
		snprintf(why, whylen, "cannot read /proc/cgroups");
		return -ENOENT;
	}
	ssid = cgroup_v1_ssid_of(cgroups, super, f->controller, sizeof(f->controller));
	free(cgroups);
	if (ssid < 0 || ssid >= 16) {
		snprintf(why, whylen, "its v1 hierarchy (%s) has no controller to filter on; give a "
			 "controller's or the v2 hierarchy's directory", super);
		return -EINVAL;
	}
	f->v1_ssid = (uint32_t)ssid + 1;
	return 0;
}
