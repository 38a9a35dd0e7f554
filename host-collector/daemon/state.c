// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The state directory, as root sees it: every name is taken relative to a
 * descriptor of the directory (opened once, O_NOFOLLOW, checked to be ours
 * and private), never through a link; directories 0700, files 0600.
 *
 *   STATE/daemon.lock              flock()ed while a daemon runs
 *   STATE/control.sock             the control socket (ctl.c)
 *   STATE/guests/NAME/current/     the running child's recording
 *   STATE/guests/NAME/previous/    the segment before it (stream mode)
 *   STATE/snapshots/NAME-YYYYmmdd-HHMMSS-REASON/
 *                                  a sealed snapshot: the recording, earlier/
 *                                  (the previous segment), snapshot.json
 *
 * The disk budget: the whole tree's blocks stay under total-budget and the
 * file system keeps min-free; over either, the oldest previous segment goes
 * first, then the oldest snapshot, each drop logged.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon-int.h"
#include "json.h"

#define TREE_DEPTH	16
#define OPEN_DIR	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static int open_subdir(int at, const char *name, bool create)
{
	struct stat st;
	int fd;

	if (create && mkdirat(at, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(at, name, OPEN_DIR);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !collect_dir_private(&st)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The state directory itself: made 0700 if missing, refused if others can change it. */
static int open_state(const char *path)
{
	struct stat st;
	int fd;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, OPEN_DIR);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !collect_dir_private(&st)) {
		close(fd);
		return -EPERM;
	}
	if ((st.st_mode & 07777) != 0700)
		fchmod(fd, 0700);
	return fd;
}

/**
 * state_opendir() - read a directory we hold open, from its start
 * @fd: its descriptor (kept: the stream has a copy)
 *
 * Return: the stream, or NULL.
 */
DIR *state_opendir(int fd)
{
	int copy = dup(fd);
	DIR *dir = copy >= 0 ? fdopendir(copy) : NULL;

	if (!dir) {
		if (copy >= 0)
			close(copy);
		return NULL;
	}
	rewinddir(dir);
	return dir;
}

/* A segment a killed daemon left running: kept as the guest's previous one. */
static void adopt_leftovers(struct daemon *d)
{
	struct dirent *e;
	DIR *dir = state_opendir(d->guests_fd);

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		int gfd;

		if (e->d_name[0] == '.' || !collect_name_ok(e->d_name))
			continue;
		gfd = open_subdir(d->guests_fd, e->d_name, false);
		if (gfd < 0)
			continue;
		if (!faccessat(gfd, "current", F_OK, AT_SYMLINK_NOFOLLOW)) {
			state_remove_tree(gfd, "previous");
			if (!renameat(gfd, "current", gfd, "previous"))
				log_warn("%s: the segment a stopped daemon left is now guests/%s/previous "
					 "(`virtio-trace-collect recover` writes its files)", e->d_name,
					 e->d_name);
		}
		close(gfd);
	}
	closedir(dir);
}

/**
 * state_open() - open (or make) the state directory and take its lock
 * @d: the daemon
 *
 * Return: 0, or -errno after saying why.
 */
int state_open(struct daemon *d)
{
	const char *s = d->conf.state_dir;
	int ret;

	d->state_fd = open_state(s);
	if (d->state_fd < 0) {
		ret = d->state_fd;
		log_err("%s: %s", s, ret == -EPERM ? "not a directory only this user or root can change" :
			strerror(-ret));
		return ret;
	}
	d->lock_fd = openat(d->state_fd, "daemon.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d->lock_fd < 0 || flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		ret = -errno;
		log_err("%s/daemon.lock: %s", s, ret == -EWOULDBLOCK ? "another daemon runs on this state "
			"directory" : strerror(-ret));
		return ret;
	}
	d->guests_fd = open_subdir(d->state_fd, "guests", true);
	d->snaps_fd = open_subdir(d->state_fd, "snapshots", true);
	if (d->guests_fd < 0 || d->snaps_fd < 0) {
		ret = d->guests_fd < 0 ? d->guests_fd : d->snaps_fd;
		log_err("%s/guests, snapshots: %s", s, ret == -EPERM ? "not private directories" :
			strerror(-ret));
		return ret;
	}
	adopt_leftovers(d);
	return 0;
}

/**
 * state_close() - close what state_open() opened (the lock goes with it)
 * @d: the daemon
 */
void state_close(struct daemon *d)
{
	int *fds[] = { &d->snaps_fd, &d->guests_fd, &d->lock_fd, &d->state_fd };
	unsigned int i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/**
 * state_guest_dir() - STATE/guests/NAME, made if missing
 * @d: the daemon
 * @name: the guest
 *
 * Return: a descriptor, or -errno.
 */
int state_guest_dir(struct daemon *d, const char *name)
{
	return open_subdir(d->guests_fd, name, true);
}

static uint64_t tree_bytes_at(int at, const char *name, unsigned int depth)
{
	struct stat st;
	struct dirent *e;
	uint64_t sum;
	DIR *dir;
	int fd;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	sum = (uint64_t)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode) || depth >= TREE_DEPTH)
		return sum;
	fd = openat(at, name, OPEN_DIR);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return sum;
	}
	while ((e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			sum += tree_bytes_at(dirfd(dir), e->d_name, depth + 1);
	closedir(dir);
	return sum;
}

/**
 * state_tree_bytes() - the disk blocks under a name, never through a link
 * @at: the directory it is in
 * @name: the file or directory ("." the directory itself)
 *
 * Return: bytes.
 */
uint64_t state_tree_bytes(int at, const char *name)
{
	return tree_bytes_at(at, name, 0);
}

static int remove_at(int at, const char *name, unsigned int depth)
{
	struct dirent *e;
	DIR *dir;
	int fd;

	if (!unlinkat(at, name, 0) || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= TREE_DEPTH)
		return -ELOOP;
	fd = openat(at, name, OPEN_DIR);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			remove_at(dirfd(dir), e->d_name, depth + 1);
	closedir(dir);
	return unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

/**
 * state_remove_tree() - remove a file or a directory and all it holds, links
 * as links
 * @at: the directory it is in
 * @name: its name
 *
 * Return: 0 (also when it was not there), or -errno.
 */
int state_remove_tree(int at, const char *name)
{
	return remove_at(at, name, 0);
}

/**
 * state_rotate() - the guest's current segment becomes its previous one (the
 * one before that is dropped)
 * @d: the daemon
 * @g: the guest, its child ended
 *
 * Return: 0, or -errno.
 */
int state_rotate(struct daemon *d, struct dguest *g)
{
	int gfd, ret = 0;

	gfd = state_guest_dir(d, g->name);
	if (gfd < 0)
		return gfd;
	if (!faccessat(gfd, "current", F_OK, AT_SYMLINK_NOFOLLOW)) {
		state_remove_tree(gfd, "previous");
		if (renameat(gfd, "current", gfd, "previous") < 0)
			ret = -errno;
		g->prev_start = g->started;
		g->prev_end = daemon_now();
	}
	close(gfd);
	return ret;
}

/**
 * state_guest_bytes() - what a guest's segments take on disk
 * @d: the daemon
 * @name: the guest
 * @segments: set to how many it has (current, previous)
 *
 * Return: bytes.
 */
uint64_t state_guest_bytes(struct daemon *d, const char *name, unsigned int *segments)
{
	uint64_t sum = 0;
	int gfd;

	*segments = 0;
	gfd = open_subdir(d->guests_fd, name, false);
	if (gfd < 0)
		return 0;
	if (!faccessat(gfd, "current", F_OK, AT_SYMLINK_NOFOLLOW))
		(*segments)++, sum += state_tree_bytes(gfd, "current");
	if (!faccessat(gfd, "previous", F_OK, AT_SYMLINK_NOFOLLOW))
		(*segments)++, sum += state_tree_bytes(gfd, "previous");
	close(gfd);
	return sum;
}

/**
 * state_migrated_out() - whether the guest's current segment ended with the
 * guest migrated out: its manifest says so (record --qmp saw QEMU's MIGRATION
 * completed), read as record wrote it
 * @d: the daemon
 * @name: the guest, its child ended
 *
 * Return: true if it did.
 */
bool state_migrated_out(struct daemon *d, const char *name)
{
	const struct json_value *g;
	struct json_doc *doc = NULL;
	const char *dir;
	bool out = false;
	void *buf = NULL;
	int gfd, cfd;
	size_t len;

	gfd = open_subdir(d->guests_fd, name, false);
	if (gfd < 0)
		return false;
	cfd = openat(gfd, "current", OPEN_DIR);
	if (cfd >= 0 && collect_read_file(cfd, "manifest.json", &buf, &len, 64 << 20) == 0)
		doc = json_parse(buf, len, NULL, NULL);
	if (doc) {
		g = json_at(json_get(json_root(doc), "guests"), 0);
		dir = json_string(json_get(json_get(g, "migration"), "direction"));
		out = dir && !strcmp(dir, "out");
		json_free(doc);
	}
	free(buf);
	if (cfd >= 0)
		close(cfd);
	close(gfd);
	return out;
}
