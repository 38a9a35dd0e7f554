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
#include "setup/link.h"

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

/*
 * kcache_vm_id(): what the host knows names the entry, in this order: the
 * libvirt UUID (lower case), QEMU's process (pid, start time, host boot),
 * QMP's UUID; nothing known, or only zero UUIDs, names none.
 */
static void test_vm_id(void **state)
{
	static struct guest_link l;
	char id[COLLECT_NAME_MAX], want[COLLECT_NAME_MAX], stat[1024], boot[64], *p;
	unsigned long long start;
	FILE *f;
	int i, j;

	(void)state;
	memset(&l, 0, sizeof(l));
	assert_int_equal(kcache_vm_id(&l, "", id, sizeof(id)), -ENOENT);
	assert_string_equal(id, "");
	assert_int_equal(kcache_vm_id(&l, "00000000-0000-0000-0000-000000000000", id, sizeof(id)), -ENOENT);
	assert_int_equal(kcache_vm_id(&l, "../../etc/x-0000-0000-0000-000000000000", id, sizeof(id)), -ENOENT);
	assert_int_equal(kcache_vm_id(&l, "5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7b", id, sizeof(id)), 0);
	assert_string_equal(id, "qmp-5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7b");

	/* This process stands in for QEMU: its start time from /proc, the host's boot id's first 8. */
	l.qemu_pid = getpid();
	f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	assert_non_null(fgets(stat, sizeof(stat), f));
	fclose(f);
	p = strrchr(stat, ')');
	for (i = 2; i < 22; i++)
		p = strchr(p + 1, ' ');
	assert_int_equal(sscanf(p + 1, "%llu", &start), 1);
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	assert_non_null(f);
	assert_non_null(fgets(boot, sizeof(boot), f));
	fclose(f);
	for (i = j = 0; boot[i] && j < 8; i++)
		if (boot[i] != '-')
			boot[j++] = boot[i];
	boot[j] = '\0';
	snprintf(want, sizeof(want), "qemu-%d-%llu-%s", (int)getpid(), start, boot);
	assert_int_equal(kcache_vm_id(&l, "5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7b", id, sizeof(id)), 0);
	assert_string_equal(id, want);

	snprintf(l.uuid, sizeof(l.uuid), "5E3F1C2A-9B7D-4E6F-8A1B-2C3D4E5F6A7C");
	assert_int_equal(kcache_vm_id(&l, "", id, sizeof(id)), 0);
	assert_string_equal(id, "libvirt-5e3f1c2a-9b7d-4e6f-8a1b-2c3d4e5f6a7c");
	/* A pid that runs no more names nothing. */
	memset(&l, 0, sizeof(l));
	l.qemu_pid = 0x3ffffffe;
	assert_int_equal(kcache_vm_id(&l, "", id, sizeof(id)), -ENOENT);
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
		cmocka_unit_test(test_vm_id),
		cmocka_unit_test(test_concurrent_stores),
		cmocka_unit_test(test_stale_tmp),
	};

	if (!mkdtemp(dir))
		return 1;
	rmdir(dir);	/* kcache_open(create) makes it, mode 0700 */
	return cmocka_run_group_tests(tests, NULL, cleanup);
}
