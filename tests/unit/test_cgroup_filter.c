// SPDX-License-Identifier: MIT
/* --cgroup PATH -> BPF filter: mountinfo lines, v2 levels, v1 subsystem ids (user/proc/cgroup_filter.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "cgroup_filter.h"

static void test_mountinfo_lines(void **state)
{
	char v1[] = "35 25 0:30 / /sys/fs/cgroup/cpu rw,relatime shared:11 - cgroup cgroup rw,cpu\n";
	char v1_two[] = "36 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
	char v2[] = "44 25 0:39 / /sys/fs/cgroup/unified rw,nosuid shared:19 master:3 - cgroup2 cgroup2 rw,nsdelegate\n";
	char ns_root[] = "50 49 0:27 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
	char ext4[] = "22 1 254:0 / / rw,relatime - ext4 /dev/vda1 rw,errors=remount-ro\n";
	char no_super[] = "44 25 0:39 / /x rw - cgroup2 cgroup2\n";
	char short_line[] = "44 25 0:39 / /x\n";
	char no_dash[] = "44 25 0:39 / /x rw shared:1 cgroup2 cgroup2 rw\n";
	struct cgroup_mount m;

	assert_int_equal(cgroup_mountinfo_parse_line(v1, &m), 1);
	assert_string_equal(m.root, "/");
	assert_string_equal(m.mount_point, "/sys/fs/cgroup/cpu");
	assert_string_equal(m.fstype, "cgroup");
	assert_string_equal(m.super_options, "rw,cpu");
	assert_int_equal(cgroup_mountinfo_parse_line(v1_two, &m), 1);
	assert_string_equal(m.super_options, "rw,cpu,cpuacct");
	/* two optional fields before the separator */
	assert_int_equal(cgroup_mountinfo_parse_line(v2, &m), 1);
	assert_string_equal(m.mount_point, "/sys/fs/cgroup/unified");
	assert_string_equal(m.fstype, "cgroup2");
	/* no optional field at all: the separator is the 7th token */
	assert_int_equal(cgroup_mountinfo_parse_line(ns_root, &m), 1);
	assert_string_equal(m.root, "/kubepods/pod1");
	assert_int_equal(cgroup_mountinfo_parse_line(no_super, &m), 1);
	assert_string_equal(m.super_options, "");
	assert_int_equal(cgroup_mountinfo_parse_line(ext4, &m), 0);
	assert_int_equal(cgroup_mountinfo_parse_line(short_line, &m), 0);
	assert_int_equal(cgroup_mountinfo_parse_line(no_dash, &m), 0);
}

static void test_levels(void **state)
{
	assert_int_equal(cgroup_path_level("/", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified"), 0);
	assert_int_equal(cgroup_path_level("/", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified/a"), 1);
	assert_int_equal(cgroup_path_level("/", "/sys/fs/cgroup/unified/", "/sys/fs/cgroup/unified/a/b.scope"), 2);
	assert_int_equal(cgroup_path_level("/", "/sys/fs/cgroup", "/sys/fs/cgroup/system.slice/x.service"), 2);
	/* a mount of a subtree (cgroup namespace): its root's depth counts */
	assert_int_equal(cgroup_path_level("/kubepods/pod1", "/sys/fs/cgroup", "/sys/fs/cgroup/c1"), 3);
	/* "/sys/fs/cgroup/unifiedX" is not below "/sys/fs/cgroup/unified" */
	assert_int_equal(cgroup_path_level("/", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unifiedX/a"), -1);
	assert_int_equal(cgroup_path_level("/", "/sys/fs/cgroup/cpu", "/tmp"), -1);
	assert_int_equal(cgroup_path_level("/", "/", "/a/b"), 2);
}

static const char proc_cgroups[] =
	"#subsys_name\thierarchy\tnum_cgroups\tenabled\n"
	"cpuset\t3\t1\t1\n"
	"cpu\t1\t1\t1\n"
	"cpuacct\t2\t1\t1\n"
	"blkio\t7\t1\t1\n"
	"memory\t4\t23\t1\n"
	"devices\t5\t1\t1\n"
	"freezer\t6\t1\t1\n"
	"net_cls\t0\t1\t1\n"
	"perf_event\t0\t1\t1\n"
	"net_prio\t0\t1\t1\n"
	"hugetlb\t0\t1\t1\n"
	"pids\t8\t1\t1\n";

static void test_v1_subsystem_ids(void **state)
{
	char name[32];

	assert_int_equal(cgroup_v1_ssid_of(proc_cgroups, "rw,pids", name, sizeof(name)), 11);
	assert_string_equal(name, "pids");
	assert_int_equal(cgroup_v1_ssid_of(proc_cgroups, "rw,cpu,cpuacct", name, sizeof(name)), 1);
	assert_string_equal(name, "cpu");
	assert_int_equal(cgroup_v1_ssid_of(proc_cgroups, "rw,cpuset", name, sizeof(name)), 0);
	/* "cpu" must not match "cpuset" or "cpuacct" by prefix */
	assert_int_equal(cgroup_v1_ssid_of(proc_cgroups, "rw,cpuacct", name, sizeof(name)), 2);
	assert_int_equal(cgroup_v1_ssid_of(proc_cgroups, "rw,name=systemd", name, sizeof(name)), -1);
	assert_int_equal(cgroup_v1_ssid_of(proc_cgroups, "", name, sizeof(name)), -1);
	assert_int_equal(cgroup_v1_ssid_of("", "rw,pids", name, sizeof(name)), -1);
	/* a name that does not fit is not half-copied */
	assert_int_equal(cgroup_v1_ssid_of(proc_cgroups, "rw,perf_event", name, 4), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mountinfo_lines),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_v1_subsystem_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
