// SPDX-License-Identifier: MIT
/*
 * atf_file.h: files are created new and never through a link, replaced through random temporary
 * names, with exactly the mode asked for; directories are created one component at a time and
 * refused when others may write to them without the sticky bit. (Ownership by another user
 * needs a second uid: the e2e test test_record_symlink_plant.sh plays that as nobody.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "atf_file.h"

static char dir[64];

static const char *at(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void assert_content(const char *path, const char *want)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f) ?: buf);
	fclose(f);
	assert_string_equal(buf, want);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/atf-file-test.XXXXXX");
	atf_file_mode_set(ATF_FILE_MODE_DEFAULT);
	umask(0);
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_dir_mode(void **state)
{
	assert_int_equal(atf_dir_mode(0600), 0700);
	assert_int_equal(atf_dir_mode(0640), 0750);
	assert_int_equal(atf_dir_mode(0644), 0755);
	assert_int_equal(atf_dir_mode(0620), 0730);
	assert_int_equal(atf_dir_mode(04666), 0777);
}

static void test_create_never_follows(void **state)
{
	int fd;

	put(at("victim"), "secret\n");
	assert_int_equal(symlink(at("victim"), at("planted")), 0);
	assert_int_equal(atf_file_create(at("planted")), -EEXIST);
	assert_content(at("victim"), "secret\n");
	fd = atf_file_create(at("new"));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(at("new")), 0600);     /* umask 0, and still private */
	assert_int_equal(atf_file_create(at("new")), -EEXIST);
}

static void test_replace_through_random_temporary(void **state)
{
	const char *names[] = { "session.json.tmp", ".session.json.tmp", "manifest.json.tmp" };
	DIR *d;
	struct dirent *de;
	int n = 0;

	put(at("victim"), "secret\n");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(symlink(at("victim"), at(names[i])), 0);
	assert_int_equal(atf_file_replace(at("session.json"), "one\n", 4, 0), 0);
	assert_content(at("session.json"), "one\n");
	assert_int_equal(mode_of(at("session.json")), 0600);
	/* a link at the destination itself is replaced, never written through */
	assert_int_equal(symlink(at("victim"), at("manifest.json")), 0);
	assert_int_equal(atf_file_replace(at("manifest.json"), "two\n", 4, 0), 0);
	assert_content(at("manifest.json"), "two\n");
	assert_int_equal(mode_of(at("manifest.json")), 0600);
	assert_content(at("victim"), "secret\n");
	/* replacing keeps the mode of the file replaced */
	chmod(at("session.json"), 0640);
	assert_int_equal(atf_file_replace(at("session.json"), "three\n", 6, 0), 0);
	assert_int_equal(mode_of(at("session.json")), 0640);
	/* no temporary is left */
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	assert_int_equal(n, 2 + 3 + 1);     /* victim, 3 planted links, session.json, manifest.json */
}

static void test_mode_is_exact(void **state)
{
	int fd;

	umask(077);
	atf_file_mode_set(0644);
	fd = atf_dir_create(at("loose/a"), 0, NULL);
	assert_true(fd >= 0);
	close(fd);
	fd = atf_file_create(at("loose/a/f"));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(at("loose")), 0755);
	assert_int_equal(mode_of(at("loose/a")), 0755);
	assert_int_equal(mode_of(at("loose/a/f")), 0644);
	atf_file_mode_set(ATF_FILE_MODE_DEFAULT);
	umask(0);
}

static void test_dir_rules(void **state)
{
	struct atf_diag diag = { 0 };
	int fd;

	/* created one component at a time: 0700 each */
	fd = atf_dir_create(at("s/pid_1/thread_0"), 0, &diag);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(at("s")), 0700);
	assert_int_equal(mode_of(at("s/pid_1/thread_0")), 0700);
	/* ATF_DIR_NEW: the last component must be new */
	assert_int_equal(atf_dir_create(at("s/pid_1"), ATF_DIR_NEW, &diag), -EEXIST);
	/* writable by others, not sticky: neither used nor created in */
	mkdir(at("open"), 0777);
	assert_int_equal(atf_dir_create(at("open"), 0, &diag), -EPERM);
	assert_non_null(strstr(diag.msg, "is writable by others (mode 0777) and not sticky"));
	assert_int_equal(atf_dir_create(at("open/s"), 0, &diag), -EPERM);
	assert_int_equal(access(at("open/s"), F_OK), -1);
	mkdir(at("grp"), 0770);
	assert_int_equal(atf_dir_create(at("grp/s"), 0, &diag), -EPERM);
	assert_non_null(strstr(diag.msg, "writable by its group"));
	/* sticky, like /tmp: fine */
	mkdir(at("sticky"), 01777);
	fd = atf_dir_create(at("sticky/s"), 0, &diag);
	assert_true(fd >= 0);
	close(fd);
	/* a link of ours (or of the sticky directory's owner) is followed */
	assert_int_equal(symlink(at("s"), at("sticky/mine")), 0);
	fd = atf_dir_create(at("sticky/mine/pid_2"), 0, &diag);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(at("s/pid_2")), 0700);
	/* a file in the way */
	put(at("file"), "x\n");
	assert_int_equal(atf_dir_create(at("file/s"), 0, &diag), -ENOTDIR);
}

static size_t entries(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* ATF_TMP_NOREPLACE, ATF_TMP_FRESH_MODE, ATF_TMP_IN_SESSION and atf_open_in_dir(). */
static void test_tmpfile_flags(void **state)
{
	struct atf_tmpfile t;
	int fd;

	/* NOREPLACE: a name that appeared while the temporary was written is left alone */
	assert_int_equal(atf_tmpfile_open(&t, at("out"), ATF_TMP_NOREPLACE), 0);
	assert_int_equal(write(t.fd, "new\n", 4), 4);
	put(at("out"), "theirs\n");
	assert_int_equal(atf_tmpfile_commit(&t), -EEXIST);
	assert_content(at("out"), "theirs\n");
	assert_int_equal(entries(dir), 1);
	/* FRESH_MODE: the new file has atf_file_mode(), not the 0666 of the file it replaces */
	chmod(at("out"), 0666);
	assert_int_equal(atf_file_replace(at("out"), "mine\n", 5, ATF_TMP_FRESH_MODE), 0);
	assert_content(at("out"), "mine\n");
	assert_int_equal(mode_of(at("out")), 0600);
	/* IN_SESSION: a thread directory that is a link is neither written in nor read through */
	mkdir(at("real"), 0700);
	mkdir(at("s"), 0700);
	mkdir(at("s/thread_0"), 0700);
	put(at("real/index.atf"), "root's\n");
	assert_int_equal(symlink(at("real"), at("s/thread_1")), 0);
	assert_int_equal(atf_file_replace(at("s/thread_1/index.atf"), "x\n", 2, ATF_TMP_IN_SESSION), -ELOOP);
	assert_content(at("real/index.atf"), "root's\n");
	assert_int_equal(entries(at("real")), 1);
	assert_int_equal(atf_file_replace(at("s/thread_0/index.atf"), "ok\n", 3, ATF_TMP_IN_SESSION), 0);
	assert_int_equal(atf_open_in_dir(at("s/thread_1/index.atf")), -ELOOP);
	assert_int_equal(symlink(at("real/index.atf"), at("s/thread_0/detail.atf")), 0);
	assert_int_equal(atf_open_in_dir(at("s/thread_0/detail.atf")), -ELOOP);
	fd = atf_open_in_dir(at("s/thread_0/index.atf"));
	assert_true(fd >= 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dir_mode),
		cmocka_unit_test_setup_teardown(test_create_never_follows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace_through_random_temporary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_is_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tmpfile_flags, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
