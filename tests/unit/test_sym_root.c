// SPDX-License-Identifier: MIT
/*
 * user/sym/sym_root.c outside any container: only regular files within the size cap are
 * opened, a FIFO nobody writes never blocks the open, a device is refused, and "/proc/self/fd/N"
 * is a descriptor of ours.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "symbols.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/atftrace-symroot.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void test_regular_within_cap(void **state)
{
	char p[128];
	int fd;

	(void)state;
	path_of(p, sizeof(p), "file");
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	close(fd);
	fd = sym_root_open(p, 10);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sym_root_open(p, 9), -EFBIG);
	assert_int_equal(sym_host_open(p, 9), -EFBIG);
	assert_true(sym_root_readable(p));
}

static void test_fifo_does_not_block(void **state)
{
	char p[128], link[140];

	(void)state;
	path_of(p, sizeof(p), "fifo");
	assert_int_equal(mkfifo(p, 0600), 0);
	/* a blocking open would wait for a writer forever */
	assert_int_equal(sym_root_open(p, SYM_MAX_FILE_SIZE), -EINVAL);
	assert_int_equal(sym_host_open(p, SYM_MAX_FILE_SIZE), -EINVAL);
	/* and so through a symlink */
	path_of(link, sizeof(link), "fifo.debug");
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(sym_root_open(link, SYM_MAX_FILE_SIZE), -EINVAL);
	assert_false(sym_root_readable(link));
}

static void test_device_refused(void **state)
{
	char link[140];

	(void)state;
	assert_int_equal(sym_root_open("/dev/zero", SYM_MAX_FILE_SIZE), -EINVAL);
	path_of(link, sizeof(link), "zero.debug");
	assert_int_equal(symlink("/dev/zero", link), 0);
	assert_int_equal(sym_host_open(link, SYM_MAX_FILE_SIZE), -EINVAL);
	assert_int_equal(sym_root_open("/nonexistent/x", SYM_MAX_FILE_SIZE), -ENOENT);
}

static void test_own_descriptor_and_host(void **state)
{
	char p[128], self[64], canon[PATH_MAX];
	int fd, again;

	(void)state;
	path_of(p, sizeof(p), "file");
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	again = sym_root_open(self, SYM_MAX_FILE_SIZE);
	assert_true(again >= 0);
	close(again);
	close(fd);
	/* no lookup root entered: our own root, for a process in it too */
	assert_int_equal(sym_root_enter(getpid()), 0);
	assert_false(sym_root_entered());
	assert_string_equal(sym_root_inner(p), p);
	assert_int_equal(sym_root_canonical("/proc/self/../self/fd", canon, sizeof(canon)), 0);
	assert_true(canon[0] == '/' && strstr(canon, "/fd"));
	sym_root_leave();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular_within_cap),
		cmocka_unit_test(test_fifo_does_not_block),
		cmocka_unit_test(test_device_refused),
		cmocka_unit_test(test_own_descriptor_and_host),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
