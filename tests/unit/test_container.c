// SPDX-License-Identifier: MIT
/* Container id matching in /proc/PID/cgroup lines, and opening files that cannot escape a root. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "container.h"

#define ID "3f4a5b6c7d8e9f00112233445566778899aabbccddeeff001122334455667788"

static void test_runtime_forms(void **state)
{
	static const char *const lines[] = {
		"0::/system.slice/docker-" ID ".scope\n",
		"0::/docker/" ID "\n",
		"0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-" ID ".scope\n",
		"0::/kubepods/burstable/pod1234/crio-" ID ".scope\n",
		"0::/machine.slice/libpod-" ID ".scope/container\n",
		"12:memory:/docker/" ID "\n",
	};
	char path[512];

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		assert_int_equal(cgroup_line_matches(lines[i], ID, path, sizeof(path)), 1);
		assert_non_null(strstr(path, ID));
		assert_null(strchr(path, '\n'));
		/* a 12-digit prefix names the same container */
		assert_int_equal(cgroup_line_matches(lines[i], "3f4a5b6c7d8e", path, sizeof(path)), 1);
	}
	assert_string_equal((cgroup_line_matches(lines[1], ID, path, sizeof(path)), path), "/docker/" ID);
}

static void test_non_matches(void **state)
{
	char path[512];

	/* another container, a too-short id, non-hex ids, an id in the middle of a name */
	assert_int_equal(cgroup_line_matches("0::/docker/aaaaaaaaaaaaaaaa\n", "3f4a5b6c7d8e", path, sizeof(path)), 0);
	assert_int_equal(cgroup_line_matches("0::/docker/" ID "\n", "3f4a5b", path, sizeof(path)), 0);
	assert_int_equal(cgroup_line_matches("0::/docker/" ID "\n", "../../etc/xx", path, sizeof(path)), 0);
	assert_int_equal(cgroup_line_matches("0::/x-3f4a5b6c7d8e9f00\n", "3f4a5b6c7d8e", path, sizeof(path)), 0);
	assert_int_equal(cgroup_line_matches("garbage", ID, path, sizeof(path)), 0);
	assert_int_equal(cgroup_line_matches("0::/docker/" ID "\n", ID, path, 8), 0);
}

static void test_open_in_root_cannot_escape(void **state)
{
	char root[] = "/tmp/atf-root.XXXXXX", p[256];
	int rootfd, fd;

	assert_non_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/lib", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/real", root);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	/* absolute and relative symlinks that point at the host's /etc/passwd */
	snprintf(p, sizeof(p), "%s/lib/abs", root);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	snprintf(p, sizeof(p), "%s/lib/rel", root);
	assert_int_equal(symlink("../../../../../../etc/passwd", p), 0);

	rootfd = open(root, O_PATH | O_DIRECTORY);
	assert_true(rootfd >= 0);
	fd = openat_in_root(rootfd, "/lib/real", O_RDONLY);
	assert_true(fd >= 0);
	close(fd);
	/* resolved inside the root, where there is no etc/passwd: never the host's file */
	assert_int_equal(openat_in_root(rootfd, "/lib/abs", O_RDONLY), -ENOENT);
	assert_int_equal(openat_in_root(rootfd, "lib/rel", O_RDONLY), -ENOENT);
	assert_int_equal(openat_in_root(rootfd, "/../../../etc/passwd", O_RDONLY), -ENOENT);
	close(rootfd);

	snprintf(p, sizeof(p), "rm -rf %s", root);
	assert_int_equal(system(p), 0);
}

static void test_nspid_of_self(void **state)
{
	pid_t ns = 0;

	assert_int_equal(proc_nspid(getpid(), &ns), 0);
	assert_true(ns > 0);
	assert_true(proc_nspid(-5, &ns) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runtime_forms),
		cmocka_unit_test(test_non_matches),
		cmocka_unit_test(test_open_in_root_cannot_escape),
		cmocka_unit_test(test_nspid_of_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
