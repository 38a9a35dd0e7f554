// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kallsyms cache: a guest's /proc/kallsyms kept on the host between
 * recordings of the same boot, so that the agent need not read it again
 * (several megabytes, a fifth of a second of an emulated guest's CPU).
 *
 * One file per guest name, NAME.kallsyms, in a directory that only its owner
 * (the collector's user) can write: a 24-byte header ("VTKSYMS\0", the u64
 * key the agent gave, the u64 length), then kallsyms. The key is the agent's
 * hash of the guest's boot_id and /proc/modules: another boot, or a module
 * that came or went, gives another key, and the agent sends kallsyms again.
 * A guest could claim any key, but it could as well send any kallsyms; and
 * the key of another guest's entry is a hash of that guest's boot_id, which
 * it cannot know. The entries are only ever read for the guest's own trace.
 *
 * Files are read and replaced without following links (spool_replace_file(),
 * through NAME.kallsyms.PID.tmp, so that collectors storing at once do not
 * take each other's temporary file), made with mode 0600 (they show where the
 * guest's kernel is); nothing outside the directory is touched. A temporary
 * file whose collector is gone (killed in the middle of a store) is removed
 * the next time the directory is opened, once it is a minute old.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "kcache.h"
#include "text.h"
#include "store/spool.h"
#include "vt_le.h"
#include "vt_meta.h"

#define KCACHE_MAGIC	"VTKSYMS"	/* and its NUL */
#define KCACHE_HDR	24
/* NAME.kallsyms, stored through NAME.kallsyms.PID.tmp (kcache_store(), sweep_tmp()) */
#define KCACHE_EXT	".kallsyms"
#define KCACHE_TMP_EXT	".tmp"

static int file_name(char *buf, size_t size, const char *name)
{
	if (!collect_name_ok(name) || (size_t)snprintf(buf, size, "%s" KCACHE_EXT, name) >= size)
		return -EINVAL;
	return 0;
}

/* A store's temporary file left this long by a collector that is gone is removed. */
#define KCACHE_TMP_STALE_S	60

/*
 * NAME.kallsyms.PID.tmp of a PID that no longer runs, a minute old or more:
 * left by a collector killed while it stored. unlinkat() follows no link.
 */
static void sweep_tmp(int dfd)
{
	time_t now = time(NULL);
	struct dirent *de;
	struct stat st;
	int fd = dup(dfd);
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		const char *k = strstr(de->d_name, KCACHE_EXT "."), *p;
		char *end;
		long pid;

		if (!k)
			continue;
		p = k + strlen(KCACHE_EXT ".");
		pid = strtol(p, &end, 10);
		if (end == p || pid <= 0 || strcmp(end, KCACHE_TMP_EXT) != 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - st.st_mtime < KCACHE_TMP_STALE_S)
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			log_debug("kallsyms cache: removed %s, left by collector %ld", de->d_name, pid);
	}
	closedir(d);
}

/**
 * kcache_open() - the cache directory, checked
 * @dir: its path
 * @create: make it (mode 0700) when it does not exist
 *
 * A store's temporary file that a collector killed meanwhile left is
 * removed (sweep_tmp()).
 *
 * Return: the directory's fd; -ENOENT when missing (and not made);
 * -EPERM when it is not the caller's or others may write it; -ELOOP for a
 * link; -ENOTDIR; or -errno.
 */
int kcache_open(const char *dir, bool create)
{
	struct stat st;
	int fd;

	if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		/* O_DIRECTORY answers ENOTDIR for a link: say what it is. */
		if (err == ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
			err = ELOOP;
		return -err;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	sweep_tmp(fd);
	return fd;
}

/* Open NAME.kallsyms and check its header: -ENOENT, -EBADMSG, ... */
static int open_entry(int dfd, const char *name, uint64_t *key, uint64_t *len)
{
	uint8_t hdr[KCACHE_HDR];
	char fname[COLLECT_NAME_MAX + 16];
	struct stat st;
	int fd, ret;

	ret = file_name(fname, sizeof(fname), name);
	if (ret < 0)
		return ret;
	fd = openat(dfd, fname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		ret = -EPERM;
	} else if (pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
		   memcmp(hdr, KCACHE_MAGIC, 8) != 0) {
		ret = -EBADMSG;
	} else {
		*key = vt_get_le64(hdr + 8);
		*len = vt_get_le64(hdr + 16);
		if (!*key || *len > VT_META_MAX_BLOB || (uint64_t)st.st_size != KCACHE_HDR + *len)
			ret = -EBADMSG;
	}
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/**
 * kcache_key() - the key of a guest's cached kallsyms
 * @dfd: from kcache_open()
 * @name: the guest's name
 * @key: set to the key (not 0)
 *
 * Return: 0, -ENOENT (nothing cached), -EBADMSG (a file that is not an
 * entry, or a broken one), -EPERM (not the caller's), -ELOOP (a link), or
 * -errno.
 */
int kcache_key(int dfd, const char *name, uint64_t *key)
{
	uint64_t len;
	int fd = open_entry(dfd, name, key, &len);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/**
 * kcache_load() - a guest's cached kallsyms, if cached under @key
 * @dfd: from kcache_open()
 * @name: the guest's name
 * @key: the key it must have
 * @out: set to a malloc()ed, NUL-terminated copy
 *
 * Return: 0; -ESTALE when the entry now has another key; as kcache_key().
 */
int kcache_load(int dfd, const char *name, uint64_t key, struct vt_blob *out)
{
	uint64_t have, len, off = 0;
	char *buf;
	int fd;

	fd = open_entry(dfd, name, &have, &len);
	if (fd < 0)
		return fd;
	if (have != key) {
		close(fd);
		return -ESTALE;
	}
	buf = malloc(len + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (off < len) {
		ssize_t n = pread(fd, buf + off, len - off, KCACHE_HDR + off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			free(buf);
			return n < 0 ? -errno : -EBADMSG;
		}
		off += n;
	}
	close(fd);
	buf[len] = '\0';
	out->data = buf;
	out->len = len;
	return 0;
}

/**
 * kcache_store() - keep a guest's kallsyms under @key, replacing what was
 * @dfd: from kcache_open()
 * @name: the guest's name
 * @key: the key the agent gave (not 0)
 * @ks: kallsyms
 *
 * Return: 0 or -errno (-EEXIST when a link or a directory has the name).
 */
int kcache_store(int dfd, const char *name, uint64_t key, const struct vt_blob *ks)
{
	char fname[COLLECT_NAME_MAX + 16], tmp[COLLECT_NAME_MAX + 48];
	uint8_t *buf;
	int ret;

	if (!key || ks->len > VT_META_MAX_BLOB)
		return -EINVAL;
	ret = file_name(fname, sizeof(fname), name);
	if (ret < 0)
		return ret;
	/*
	 * A temporary file of this process's own: two collectors that stored
	 * the same entry through one NAME.kallsyms.tmp took each other's file
	 * (a rename that failed, or a short entry).
	 */
	snprintf(tmp, sizeof(tmp), "%s.%ld" KCACHE_TMP_EXT, fname, (long)getpid());
	buf = malloc(KCACHE_HDR + ks->len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, KCACHE_MAGIC, 8);
	vt_put_le64(buf + 8, key);
	vt_put_le64(buf + 16, ks->len);
	if (ks->len)
		memcpy(buf + KCACHE_HDR, ks->data, ks->len);
	/* The guest's kernel addresses: for the cache's owner only. */
	ret = spool_replace_file(dfd, fname, tmp, buf, KCACHE_HDR + ks->len, 0600);
	free(buf);
	return ret;
}
