// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kallsyms cache: a guest's /proc/kallsyms kept on the host between
 * recordings of the same boot, so that the agent need not read it again
 * (several megabytes, a fifth of a second of an emulated guest's CPU).
 *
 * One file per VM, VM.kallsyms, in a directory that only its owner (the
 * collector's user) can write (collect_dir_private()): a 24-byte header
 * ("VTKSYMS\0", the u64 key the agent gave, the u64 length), then kallsyms.
 *
 * VM is what the host knows of the guest's virtual machine, never what the
 * guest says (kcache_vm_id()): its libvirt domain's UUID, else its QEMU
 * process (pid, start time, and the host's boot), else the UUID QEMU's QMP
 * reports. Guests that share a name (a default name, a reused domain name)
 * are different VMs: they never share an entry, and a guest can only ever
 * read or replace its own. With nothing known, nothing is cached.
 *
 * The key tells one boot (and set of modules) of that VM from another: the
 * agent's hash of the guest's boot_id and /proc/modules, as the guest
 * reports it in every bundle. The host compares it with the entry's itself
 * and never sends a stored key to a guest: a guest learns nothing from the
 * cache, and whatever key or kallsyms it claims only ever land in its own
 * VM's entry, which only its own recordings read.
 *
 * Files are read and replaced without following links (spool_replace_file(),
 * through VM.kallsyms.PID.tmp, so that collectors storing at once do not
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
#include "setup/link.h"
#include "setup/qemuproc.h"
#include "text.h"
#include "store/spool.h"
#include "vt_le.h"
#include "vt_meta.h"

#define KCACHE_MAGIC	"VTKSYMS"	/* and its NUL */
#define KCACHE_HDR	24
/* VM.kallsyms, stored through VM.kallsyms.PID.tmp (kcache_store(), sweep_tmp()) */
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
 * VM.kallsyms.PID.tmp of a PID that no longer runs, a minute old or more:
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
 * -EPERM when it is not the caller's or others may write it
 * (collect_dir_private()); -ELOOP for a link; -ENOTDIR; or -errno.
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
	/* Private, and this user's: root's cache is not another user's to read. */
	if (fstat(fd, &st) < 0 || !collect_dir_private(&st) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	sweep_tmp(fd);
	return fd;
}

/* Open VM.kallsyms and check its header: -ENOENT, -EBADMSG, ... */
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
 * @name: the VM's entry name (kcache_vm_id())
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
 * @name: the VM's entry name (kcache_vm_id())
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
 * @name: the VM's entry name (kcache_vm_id())
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


/* The first 8 hex digits of the host's boot id: a pid and start time repeat across boots. */
static int host_boot(char *buf, size_t size)
{
	char id[64] = "";
	size_t i, n = 0;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = read(fd, id, sizeof(id) - 1);
	close(fd);
	for (i = 0; len > 0 && i < (size_t)len && n + 1 < size && n < 8; i++)
		if ((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))
			buf[n++] = id[i];
	buf[n] = '\0';
	return n == 8 ? 0 : -EBADMSG;
}

static bool uuid_ok(const char *u)
{
	size_t i;

	if (strlen(u) != 36)
		return false;
	for (i = 0; i < 36; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? u[i] != '-' :
		    !((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f')))
			return false;
	return strcmp(u, "00000000-0000-0000-0000-000000000000") != 0;
}

/**
 * kcache_vm_id() - the name of a VM's cache entry: what the host knows of
 * it, never anything its guest says
 * @l: the guest's link: its libvirt domain's UUID, its QEMU pid
 * @qmp_uuid: the UUID QEMU's QMP reported ("" if none)
 * @id: filled: "libvirt-UUID", "qemu-PID-START-BOOT" (the process's start
 *	time and the host's boot id: a pid is reused) or "qmp-UUID"
 * @size: size of @id (COLLECT_NAME_MAX)
 *
 * Return: 0, or -ENOENT when the host knows nothing that tells this VM from
 * another (then nothing is cached for it).
 */
int kcache_vm_id(const struct guest_link *l, const char *qmp_uuid, char *id, size_t size)
{
	unsigned long long start;
	char boot[16];
	char u[40];
	size_t i;

	snprintf(u, sizeof(u), "%s", l->uuid);
	for (i = 0; u[i]; i++)
		if (u[i] >= 'A' && u[i] <= 'F')
			u[i] += 'a' - 'A';
	if (uuid_ok(u) && (size_t)snprintf(id, size, "libvirt-%s", u) < size)
		return 0;
	if (l->qemu_pid > 0 && qemuproc_start_time(l->qemu_pid, &start) == 0 &&
	    host_boot(boot, sizeof(boot)) == 0 &&
	    (size_t)snprintf(id, size, "qemu-%d-%llu-%s", (int)l->qemu_pid, start, boot) < size)
		return 0;
	if (qmp_uuid && uuid_ok(qmp_uuid) && (size_t)snprintf(id, size, "qmp-%s", qmp_uuid) < size)
		return 0;
	id[0] = '\0';
	return -ENOENT;
}
