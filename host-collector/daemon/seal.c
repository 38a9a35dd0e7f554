// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Sealing a snapshot, and the disk budget (state.c's layout). A snapshot is
 * the stopped child's recording directory moved whole (rename, no copy) to
 * STATE/snapshots/NAME-YYYYmmdd-HHMMSS-REASON/ (UTC), with the previous
 * segment as its earlier/ when the window asked for reaches before the last
 * segment's start, and snapshot.json written last: a snapshot directory
 * without it was not sealed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon-int.h"
#include "json.h"

#define OPEN_DIR	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Monotonic daemon time as wall-clock seconds. */
static double wall_of(double mono)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9 - (daemon_now() - mono);
}

static void iso(char *buf, size_t len, double wall)
{
	time_t t = (time_t)wall;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void jw_segment(struct jw *w, const char *dir, double start, double end)
{
	char t[32];

	jw_obj(w, NULL);
	jw_str(w, "dir", dir);
	iso(t, sizeof(t), wall_of(start));
	jw_str(w, "start", t);
	iso(t, sizeof(t), wall_of(end));
	jw_str(w, "end", t);
	jw_end(w, '}');
}

static int write_json(struct daemon *d, struct dguest *g, int sfd, bool earlier)
{
	const struct snap_req *s = &g->snap;
	char t[32];
	struct jw w;
	FILE *f;
	int fd;

	fd = openat(sfd, "snapshot.json.tmp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	jw_begin_pretty(&w, f);
	jw_obj(&w, NULL);
	jw_str(&w, "guest", g->name);
	jw_str(&w, "reason", s->reason);
	iso(t, sizeof(t), (double)s->wall);
	jw_str(&w, "trigger", t);
	jw_u64(&w, "trigger_unix", (uint64_t)s->wall);
	jw_fixed(&w, "before", s->before, 3);
	jw_fixed(&w, "after", s->after, 3);
	jw_str(&w, "mode", d->conf.mode == MODE_HOLD ? "hold" : "stream");
	jw_arr(&w, "segments");
	if (earlier)
		jw_segment(&w, "earlier", g->prev_start, g->prev_end);
	jw_segment(&w, ".", g->started, daemon_now());
	jw_end(&w, ']');
	jw_end(&w, '}');
	fputc('\n', f);
	if (fflush(f) == EOF || ferror(f) || fsync(fd) < 0) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	return renameat(sfd, "snapshot.json.tmp", sfd, "snapshot.json") < 0 ? -errno : 0;
}

/* NAME-YYYYmmdd-HHMMSS-REASON, with -2, -3... if taken. */
static int snap_name(struct daemon *d, const struct dguest *g, char *name, size_t len)
{
	struct tm tm;
	char stamp[32];
	unsigned int i;

	gmtime_r(&g->snap.wall, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (i = 1; i < 100; i++) {
		if (i == 1)
			snprintf(name, len, "%s-%s-%s", g->name, stamp, g->snap.reason);
		else
			snprintf(name, len, "%s-%s-%s-%u", g->name, stamp, g->snap.reason, i);
		if (faccessat(d->snaps_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			return 0;
	}
	return -EEXIST;
}

/**
 * state_seal() - move a stopped child's recording into a snapshot
 * @d: the daemon
 * @g: the guest: its child has ended, g->snap says what was asked
 * @path: set to the snapshot's path
 * @len: its size
 *
 * Return: 0, or -errno (the recording is then left where it was).
 */
int state_seal(struct daemon *d, struct dguest *g, char *path, size_t len)
{
	char name[COLLECT_NAME_MAX + DAEMON_REASON_MAX + 40];
	bool earlier;
	int gfd, sfd, ret;

	gfd = state_guest_dir(d, g->name);
	if (gfd < 0)
		return gfd;
	ret = snap_name(d, g, name, sizeof(name));
	if (ret < 0)
		goto out_gfd;
	if (renameat(gfd, "current", d->snaps_fd, name) < 0) {
		ret = -errno;
		goto out_gfd;
	}
	sfd = openat(d->snaps_fd, name, OPEN_DIR);
	if (sfd < 0) {
		ret = -errno;
		goto out_gfd;
	}
	/* The previous segment when the window reaches before this one began. */
	earlier = d->conf.mode == MODE_STREAM && g->prev_end > 0 &&
		  g->snap.trigger - g->snap.before < g->started &&
		  !faccessat(gfd, "previous", F_OK, AT_SYMLINK_NOFOLLOW) &&
		  !renameat(gfd, "previous", sfd, "earlier");
	if (earlier)
		g->prev_start = g->prev_end = 0;
	ret = write_json(d, g, sfd, earlier);
	close(sfd);
	if (!ret)
		snprintf(path, len, "%s/snapshots/%s", d->conf.state_dir, name);
out_gfd:
	close(gfd);
	return ret;
}

/**
 * struct victim - what the budget may drop next
 * @at: its directory's descriptor (guests/NAME or snapshots)
 * @name: its name there
 * @what: "segment guests/NAME/previous" or "snapshot NAME", for the log
 * @mtime: when it was last changed
 */
struct victim {
	int at;
	char name[256];
	char what[300];
	struct timespec mtime;
};

static bool older(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* The oldest previous segment of any guest (@v->at is a new descriptor), else false. */
static bool oldest_segment(struct daemon *d, struct victim *v)
{
	struct dirent *e;
	struct stat st;
	bool found = false;
	DIR *dir = state_opendir(d->guests_fd);

	if (!dir)
		return false;
	while ((e = readdir(dir))) {
		int gfd;

		if (e->d_name[0] == '.' || !collect_name_ok(e->d_name))
			continue;
		gfd = openat(d->guests_fd, e->d_name, OPEN_DIR);
		if (gfd < 0)
			continue;
		if (fstatat(gfd, "previous", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (found && !older(&st.st_mtim, &v->mtime))) {
			close(gfd);
			continue;
		}
		if (found)
			close(v->at);
		found = true;
		v->at = gfd;
		v->mtime = st.st_mtim;
		snprintf(v->name, sizeof(v->name), "previous");
		snprintf(v->what, sizeof(v->what), "segment guests/%s/previous", e->d_name);
	}
	closedir(dir);
	return found;
}

/* The oldest snapshot (@v->at is a new descriptor), else false. */
static bool oldest_snapshot(struct daemon *d, struct victim *v)
{
	struct dirent *e;
	struct stat st;
	bool found = false;
	DIR *dir = state_opendir(d->snaps_fd);

	if (!dir)
		return false;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.' || fstatat(d->snaps_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (found && !older(&st.st_mtim, &v->mtime))
			continue;
		found = true;
		v->mtime = st.st_mtim;
		snprintf(v->name, sizeof(v->name), "%s", e->d_name);
		snprintf(v->what, sizeof(v->what), "snapshot %s", e->d_name);
	}
	closedir(dir);
	if (found)
		v->at = dup(d->snaps_fd);
	return found && v->at >= 0;
}

/* Why the state is over budget ("" if it is not). */
static void over(struct daemon *d, char *why, size_t len)
{
	uint64_t used = state_tree_bytes(d->state_fd, ".");
	struct statvfs vfs;

	why[0] = '\0';
	if (used > d->conf.total_budget)
		snprintf(why, len, "the state directory holds %llu bytes, over total-budget %llu",
			 (unsigned long long)used, (unsigned long long)d->conf.total_budget);
	else if (d->conf.min_free && !fstatvfs(d->state_fd, &vfs) &&
		 (uint64_t)vfs.f_bavail * vfs.f_frsize < d->conf.min_free)
		snprintf(why, len, "%llu bytes free on its file system, under min-free %llu",
			 (unsigned long long)vfs.f_bavail * vfs.f_frsize,
			 (unsigned long long)d->conf.min_free);
}

/**
 * state_budget() - drop the oldest segments, then the oldest snapshots, while
 * the state directory is over its budget or the disk short of space
 * @d: the daemon
 */
void state_budget(struct daemon *d)
{
	static double last_said;
	struct victim v;
	char why[200];
	uint64_t bytes;

	for (over(d, why, sizeof(why)); why[0]; over(d, why, sizeof(why))) {
		if (!oldest_segment(d, &v) && !oldest_snapshot(d, &v)) {
			if (daemon_now() - last_said > 60) {
				log_warn("%s, and nothing is left to drop but the running segments "
					 "(lower budget or window)", why);
				last_said = daemon_now();
			}
			return;
		}
		bytes = state_tree_bytes(v.at, v.name);
		if (state_remove_tree(v.at, v.name) < 0) {
			log_err("cannot drop %s: %s", v.what, strerror(errno));
			close(v.at);
			return;
		}
		log_warn("dropped %s (%llu bytes): %s", v.what, (unsigned long long)bytes, why);
		close(v.at);
	}
}
