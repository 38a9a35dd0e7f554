// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kallsyms cache (host-collector/kcache.c with the real spool.c): an
 * entry stored is loaded back whole; and two collectors storing the same
 * guest's entry at once, while a third reads it, never leave or show a
 * broken entry. With one shared NAME.kallsyms.tmp, one collector's rename
 * took the other's half-written file: a short entry, refused and rebuilt.
 * A temporary file that a killed collector left is removed once it is a
 * minute old; one of a live process, or a young one, stays.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect.h"
#include "record/kcache.h"

#define WRITER_LEN(i)	((size_t)(1u << 20) + (i) * 300000)
#define ROUNDS		150

static char dir[] = "/tmp/vt-test-kcache.XXXXXX";
static pid_t pid[2];	/* the writers, for cleanup() after a failure */

void collect_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

static struct vt_blob blob_of(char c, size_t len)
{
	struct vt_blob b = { .data = malloc(len), .len = len };

	assert_non_null(b.data);
	memset(b.data, c, len);
	return b;
}

static void test_store_load(void **state)
{
	struct vt_blob ks = blob_of('k', 5000), got = { 0 };
	uint64_t key = 0;
	int dfd = kcache_open(dir, true);

	(void)state;
	assert_true(dfd >= 0);
	assert_int_equal(kcache_key(dfd, "g1", &key), -ENOENT);
	assert_int_equal(kcache_store(dfd, "g1", 77, &ks), 0);
	assert_int_equal(kcache_key(dfd, "g1", &key), 0);
	assert_int_equal(key, 77);
	assert_int_equal(kcache_load(dfd, "g1", 78, &got), -ESTALE);
	assert_int_equal(kcache_load(dfd, "g1", 77, &got), 0);
	assert_int_equal(got.len, ks.len);
	assert_memory_equal(got.data, ks.data, ks.len);
	free(got.data);
	free(ks.data);
	close(dfd);
}

/* Writer @i stores its own entry (key i + 1, bytes 'a' + i) ROUNDS times. */
static void writer(int i)
{
	struct vt_blob ks = blob_of('a' + i, WRITER_LEN(i));
	int dfd = kcache_open(dir, false), r, ret = 0;

	for (r = 0; r < ROUNDS && dfd >= 0 && !ret; r++)
		ret = kcache_store(dfd, "race", i + 1, &ks);
	_exit(dfd < 0 || ret ? 1 : 0);
}

/* An entry is whole: one writer's key, length and bytes. */
static void check_whole(const struct vt_blob *got, uint64_t key)
{
	size_t j;
	int i;

	assert_true(key == 1 || key == 2);
	i = (int)key - 1;
	assert_int_equal(got->len, WRITER_LEN(i));
	for (j = 0; j < got->len; j++)
		if (((char *)got->data)[j] != 'a' + i)
			fail_msg("byte %zu of writer %d's entry is '%c'", j, i, ((char *)got->data)[j]);
}

static void test_concurrent_stores(void **state)
{
	int dfd = kcache_open(dir, true), status, i, reads = 0, whole = 0;
	bool alive[2] = { true, true };
	struct dirent *de;
	DIR *d;

	(void)state;
	assert_true(dfd >= 0);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0)
			writer(i);
	}
	/* Read while they write: an entry is absent or whole, never broken. */
	while (alive[0] || alive[1]) {
		struct vt_blob got = { 0 };
		uint64_t key = 0;
		int ret = kcache_key(dfd, "race", &key);

		for (i = 0; i < 2; i++)
			if (alive[i] && waitpid(pid[i], &status, WNOHANG) == pid[i]) {
				alive[i] = false;
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					fail_msg("writer %d could not store its entry", i);
			}
		reads++;
		if (ret == -ENOENT)
			continue;
		if (ret < 0)
			fail_msg("read %d: the entry is broken (%s)", reads, strerror(-ret));
		ret = kcache_load(dfd, "race", key, &got);
		if (ret == -ESTALE || ret == -ENOENT)
			continue;	/* replaced between the two reads */
		if (ret < 0)
			fail_msg("read %d: the entry is broken (%s)", reads, strerror(-ret));
		check_whole(&got, key);
		whole++;
		free(got.data);
	}
	{
		struct vt_blob got = { 0 };
		uint64_t key = 0;

		assert_int_equal(kcache_key(dfd, "race", &key), 0);
		assert_int_equal(kcache_load(dfd, "race", key, &got), 0);
		check_whole(&got, key);
		free(got.data);
	}
	pid[0] = pid[1] = 0;
	/* No temporary file is left. */
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, "tmp"))
			fail_msg("%s/%s was left", dir, de->d_name);
	closedir(d);
	printf("test-kcache: %d reads while 2 writers stored %d entries each, %d of them whole\n",
	       reads, ROUNDS, whole);
	close(dfd);
}

static int cleanup(void **state)
{
	char cmd[128];

	int i;

	(void)state;
	for (i = 0; i < 2; i++)
		if (pid[i] > 0 && kill(pid[i], SIGKILL) == 0)
			waitpid(pid[i], NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Make DIR/NAME, @age seconds old. */
static void make_old(const char *name, time_t age)
{
	struct timespec ts[2] = { { .tv_sec = time(NULL) - age }, { .tv_sec = time(NULL) - age } };
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "half", 4), 4);
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
}

static bool present(const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static void test_stale_tmp(void **state)
{
	char dead_old[64], dead_young[64], live_old[64], link_name[64], target[256], path[256];
	struct timespec ts[2] = { { .tv_sec = time(NULL) - 120 }, { .tv_sec = time(NULL) - 120 } };
	pid_t dead = fork();
	int dfd;

	(void)state;
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	dfd = kcache_open(dir, true);
	assert_true(dfd >= 0);
	close(dfd);
	snprintf(dead_old, sizeof(dead_old), "g1.kallsyms.%d.tmp", (int)dead);
	snprintf(dead_young, sizeof(dead_young), "g2.kallsyms.%d.tmp", (int)dead);
	snprintf(live_old, sizeof(live_old), "g3.kallsyms.%d.tmp", (int)getpid());
	make_old(dead_old, 120);
	make_old(dead_young, 5);
	make_old(live_old, 120);
	make_old("g4.kallsyms.tmp", 120);
	make_old("notes.tmp", 120);
	/* A link of a dead pid's name goes, and what it points to stays. */
	snprintf(target, sizeof(target), "%s/notes.tmp", dir);
	snprintf(link_name, sizeof(link_name), "g5.kallsyms.%d.tmp", (int)dead);
	snprintf(path, sizeof(path), "%s/%s", dir, link_name);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);

	dfd = kcache_open(dir, false);
	assert_true(dfd >= 0);
	close(dfd);
	assert_false(present(dead_old));
	assert_false(present(link_name));
	assert_true(present(dead_young));
	assert_true(present(live_old));
	assert_true(present("g4.kallsyms.tmp"));
	assert_true(present("notes.tmp"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_load),
		cmocka_unit_test(test_concurrent_stores),
		cmocka_unit_test(test_stale_tmp),
	};

	if (!mkdtemp(dir))
		return 1;
	rmdir(dir);	/* kcache_open(create) makes it, mode 0700 */
	return cmocka_run_group_tests(tests, NULL, cleanup);
}
