// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The spool: DIR/.spool/ holds, while recording, everything the output is
 * made from, so that `recover` can finish what a killed collector started.
 *
 *   .spool/options          key=value: file version, compression, command line
 *   .spool/guest-NAME/      one per guest:
 *       state               key=value: name, trace id, CPUs, sub-buffer, clock...
 *       meta.bin            the metadata bundle as the agent sent it (re-checked on use)
 *       data                whole pages that passed the header check, in order: CPU N's
 *                           at N * region onwards, up to the first hole (a sparse file, so
 *                           it takes only what was written; output.c may turn it into the
 *                           trace.dat in place, by moving extents, without copying)
 *       layout              region=BYTES, the region size of data
 *       cpuN.pages          whole pages of a CPU that filled its region, after those
 *       cpuN.bad            malformed pages kept aside, at most SPOOL_BAD_KEEP (the
 *                           state file's badN counts them all)
 *       cpuN.frag           a trailing fragment, when a stream ended mid-page
 *       cpuN.stats          the guest's final per_cpu stats text
 *       cpuN.sums           what ingest counted of the region (record/stream.c)
 *       cpuN.zst, .zsum     zstd chunks of the region's first pages, made while
 *                           streaming, and what they cover (record/compress.c; no .zsum: ignored)
 *       agent               key=value: the agent's final counters
 *       sync                the clock mapping (see record/sync.c)
 *       migration           key=value: a live migration, out or in
 *   (state, agent, sync and migration: their sections are in spool-file.c)
 *   .spool/host/            the host's pages and metadata, same layout
 *
 * Small files are written to a temporary name and renamed, so a kill leaves
 * either the old or the new version, never half of one.
 *
 * The keys of each key=value file are one table here (struct spool_key, next
 * to the file's save and load), which the writers write from and the loaders
 * read with: a key exists in one place. A trace's files (state, agent, sync,
 * migration) are each one table of sections in spool-file.c, which uses these
 * tables for its plain keys; record/session-save.c only fills the struct
 * spool_trace they are saved from. tests/unit/test-spool-keys and
 * test-spool-sections hold what earlier versions wrote, which must still load.
 *
 * Every name is opened relative to its directory's fd (the output directory's,
 * the spool's, a trace's), never through a symbolic link: a link planted as
 * .spool, a trace directory or a spool file is refused. spool_remove() deletes
 * only the names listed at the end of this file; anything else is left and
 * reported.
 *
 * What a recording writes holds the guest's and the host's kernel addresses
 * and whatever ran there: every file is made mode 0600 and every directory
 * 0700 (as perf makes perf.data), or what --mode asks, whatever the umask,
 * and under sudo given to SUDO_UID/SUDO_GID (spool_perm_set()). The modes
 * and the owner are kept in .spool/options, so that `recover` makes the same.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "spool.h"
#include "spool-int.h"
#include "text.h"
#include "vt_grow.h"

/*
 * Every file and directory here is made relative to a directory fd, with
 * O_NOFOLLOW (and O_EXCL or mkdirat for what is new): a symbolic link planted
 * in the output directory or the spool is refused, never followed.
 */
#define OPEN_DIR	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* The modes and owner of what the output gets (spool_perm_set()). */
static struct spool_perm perm = { .file = 0600, .dir = 0700, .uid = (uid_t)-1, .gid = (gid_t)-1 };

/* create_mode()'s mode for a file of the output: perm's, and its owner. */
#define MODE_OUTPUT	((mode_t)-1)

/**
 * spool_perm_dir_mode() - the directories' mode for a files' mode: x where r is
 * @file: the files' mode
 *
 * Return: the directories' mode.
 */
mode_t spool_perm_dir_mode(mode_t file)
{
	return file | (file & 0444) >> 2;
}

/* A numeric id from the environment, or -1. */
static long env_id(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long id;

	if (!v || !*v)
		return -1;
	errno = 0;
	id = strtol(v, &end, 10);
	return *end || errno || id < 0 || id >= (long)(uid_t)-1 ? -1 : id;
}

/**
 * spool_perm_default() - the private default: files 0600, directories 0700;
 * run by root under sudo, owned by SUDO_UID and SUDO_GID (the user who asked)
 * @p: filled
 */
void spool_perm_default(struct spool_perm *p)
{
	long uid = env_id("SUDO_UID"), gid = env_id("SUDO_GID");

	p->file = 0600;
	p->dir = 0700;
	p->uid = (uid_t)-1;
	p->gid = (gid_t)-1;
	if (geteuid() == 0 && uid >= 0) {
		p->uid = (uid_t)uid;
		p->gid = gid >= 0 ? (gid_t)gid : (gid_t)-1;
	}
}

/**
 * spool_perm_set() - the modes and owner everything made from now on gets
 * @p: them
 */
void spool_perm_set(const struct spool_perm *p)
{
	perm = *p;
}

/**
 * spool_perm_get() - the modes and owner in use
 * @p: filled
 */
void spool_perm_get(struct spool_perm *p)
{
	*p = perm;
}

/**
 * spool_perm_apply() - give a file or directory just made its mode and owner
 * @fd: it, open
 * @dir: a directory
 *
 * Exactly the mode asked for, whatever the umask was.
 *
 * Return: 0 or -errno.
 */
int spool_perm_apply(int fd, bool dir)
{
	if (fchmod(fd, dir ? perm.dir : perm.file) < 0)
		return -errno;
	if ((perm.uid != (uid_t)-1 || perm.gid != (gid_t)-1) && fchown(fd, perm.uid, perm.gid) < 0)
		return -errno;
	return 0;
}

/**
 * spool_mkdir() - make (or, with @exist_ok, take) a directory below @dfd
 * and open it, never through a link; a new one gets the output's mode and owner
 * @dfd: the directory it is in
 * @name: its name (one component)
 * @exist_ok: an existing directory is fine (it keeps its mode)
 *
 * Return: the fd, or -errno (-EEXIST, -ELOOP, -ENOTDIR).
 */
int spool_mkdir(int dfd, const char *name, bool exist_ok)
{
	bool made = mkdirat(dfd, name, 0700) == 0;
	int fd, ret;

	if (!made && (errno != EEXIST || !exist_ok))
		return -errno;
	fd = spool_open_dir(dfd, name);
	if (fd < 0 || !made)
		return fd;
	ret = spool_perm_apply(fd, true);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/**
 * spool_open_dir() - open a directory below @dfd, never through a link
 * @dfd: the directory it is in
 * @name: its name (one component)
 *
 * Return: the fd, -ELOOP (also for a link to a directory), -ENOTDIR, or -errno.
 */
int spool_open_dir(int dfd, const char *name)
{
	struct stat st;
	int fd = openat(dfd, name, OPEN_DIR);

	if (fd >= 0)
		return fd;
	/* O_DIRECTORY wins over O_NOFOLLOW: a link to a directory says ENOTDIR. */
	if (errno == ENOTDIR && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return -ELOOP;
	return -errno;
}

/**
 * spool_prepare() - create the spool directory in the output directory
 * @out_fd: the output directory
 * @spool_fd: set to the spool's fd
 *
 * Return: 0, -EEXIST when a spool is already there (an unfinished run: use
 * recover; also a link named .spool), or -errno.
 */
int spool_prepare(int out_fd, int *spool_fd)
{
	int fd;

	fd = spool_mkdir(out_fd, ".spool", false);
	if (fd < 0)
		return fd;
	*spool_fd = fd;
	return 0;
}

/**
 * spool_guest_dir() - create a trace's directory in the spool
 * @spool_fd: the spool
 * @name: "guest-NAME" or "host"
 * @dir_fd: set to its fd
 *
 * Return: 0 or -errno (-ELOOP for a link in its place).
 */
int spool_guest_dir(int spool_fd, const char *name, int *dir_fd)
{
	int fd;

	fd = spool_mkdir(spool_fd, name, true);
	if (fd < 0)
		return fd;
	*dir_fd = fd;
	return 0;
}

/* @mode MODE_OUTPUT: the output's mode and owner (spool_perm_apply()). */
static int create_mode(int dfd, const char *name, int flags, bool stale, mode_t mode)
{
	int fl = flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	mode_t m = mode == MODE_OUTPUT ? 0600 : mode;
	struct stat st;
	int fd = openat(dfd, name, fl, m), ret;

	if (fd < 0 && errno == EEXIST && stale && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && unlinkat(dfd, name, 0) == 0)
		fd = openat(dfd, name, fl, m);
	if (fd < 0)
		return -errno;
	if (mode == MODE_OUTPUT && (ret = spool_perm_apply(fd, false)) < 0) {
		close(fd);
		unlinkat(dfd, name, 0);
		return ret;
	}
	return fd;
}

/**
 * spool_create() - create a new file in @dfd, exclusively, never through a link
 * @dfd: the directory
 * @name: the file's name
 * @flags: O_WRONLY or O_RDWR (O_CREAT, O_EXCL, O_NOFOLLOW, O_CLOEXEC are added)
 * @stale: a regular file of that name is a leftover of ours: remove it first
 *
 * It gets the output's mode and owner (spool_perm_set()).
 *
 * Return: the fd; -EEXIST when something else (a link, a directory) has the
 * name, or a file when @stale is false; or -errno.
 */
int spool_create(int dfd, const char *name, int flags, bool stale)
{
	return create_mode(dfd, name, flags, stale, MODE_OUTPUT);
}

/* A file to read: regular only (a FIFO would block, a device is not ours), no link. */
/**
 * spool_write_file() - replace a small file atomically
 * @dfd: the directory
 * @name: file name
 * @data: contents
 * @len: length
 *
 * Written to NAME.tmp (made exclusively, with the output's mode and owner)
 * and renamed over NAME.
 *
 * Return: 0 or -errno.
 */
int spool_write_file(int dfd, const char *name, const void *data, size_t len)
{
	return spool_write_file_mode(dfd, name, data, len, MODE_OUTPUT);
}

/**
 * spool_write_file_mode() - spool_write_file(), the file made with @mode
 * @dfd: the directory
 * @name: file name
 * @data: contents
 * @len: length
 * @mode: the new file's mode (before the umask); (mode_t)-1 for the
 *	output's mode and owner
 *
 * Return: 0 or -errno.
 */
int spool_write_file_mode(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
	char tmp[256];

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	return spool_replace_file(dfd, name, tmp, data, len, mode);
}

/**
 * spool_replace_file() - write @tmp (made exclusively; a regular file of that
 * name is a leftover and goes first) and rename it over @name
 * @dfd: the directory
 * @name: file name
 * @tmp: the temporary file's name; one that no other writer of @name uses
 * when several processes may replace @name at once
 * @data: contents
 * @len: length
 * @mode: the new file's mode (before the umask); (mode_t)-1 for the
 *	output's mode and owner
 *
 * Return: 0 or -errno.
 */
int spool_replace_file(int dfd, const char *name, const char *tmp, const void *data, size_t len,
		       mode_t mode)
{
	const char *p = data;
	int fd, ret = 0;

	fd = create_mode(dfd, tmp, O_WRONLY, true, mode);
	if (fd < 0)
		return fd;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		len -= n;
	}
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && renameat(dfd, tmp, dfd, name) < 0)
		ret = -errno;
	if (ret)
		unlinkat(dfd, tmp, 0);
	return ret;
}

/**
 * spool_tprintf() - append to a growing key=value text
 * @t: the text (zeroed to begin)
 * @fmt: printf format
 *
 * A failed allocation is remembered: spool_text_save() then fails.
 */
void spool_tprintf(struct spool_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = t->oom ? 0 : vsnprintf(t->buf ? t->buf + t->len : NULL,
					   t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (t->oom || n < 0)
			return;
		if (t->buf && t->len + n < t->cap) {
			t->len += n;
			return;
		}
		if (vt_grow((void **)&t->buf, &t->cap, t->len + n + 1, 1) < 0) {
			t->oom = true;
			return;
		}
	}
}

/**
 * spool_text_save() - write a text as a spool file and release it
 * @t: the text
 * @dir: the directory
 * @name: the file's name
 *
 * Return: 0 or -errno.
 */
int spool_text_save(struct spool_text *t, int dir, const char *name)
{
	int ret = t->oom ? -ENOMEM : spool_write_file(dir, name, t->buf ? t->buf : "", t->len);

	free(t->buf);
	t->buf = NULL;
	return ret;
}

/**
 * spool_data_region() - the region size of a trace's data file
 * @dir: the trace's spool directory
 * @region: set from its layout file, SPOOL_REGION when there is none
 *
 * Return: 0, or -EINVAL for a layout that makes no sense.
 */
int spool_data_region(int dir, uint64_t *region)
{
	char *text, *p;
	size_t len;

	*region = SPOOL_REGION;
	if (collect_read_file(dir, "layout", (void **)&text, &len, 4096) < 0)
		return 0;
	p = strstr(text, "region=");
	if (p)
		*region = strtoull(p + 7, NULL, 10);
	free(text);
	if (!*region || *region % 65536 || *region > SPOOL_REGION * 256)
		return -EINVAL;
	return 0;
}

/**
 * spool_data_open() - open (create) a trace's data file
 * @dir: the trace's spool directory
 * @region: set to its region size; the layout file is written with the file
 *
 * Return: the fd, or -errno.
 */
int spool_data_open(int dir, uint64_t *region)
{
	char text[64];
	struct stat st;
	int fd, ret;

	if (fstatat(dir, "layout", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		ret = snprintf(text, sizeof(text), "region=%llu\n", (unsigned long long)SPOOL_REGION);
		ret = spool_write_file(dir, "layout", text, ret);
		if (ret < 0)
			return ret;
	}
	ret = spool_data_region(dir, region);
	if (ret < 0)
		return ret;
	fd = create_mode(dir, "data", O_RDWR, false, MODE_OUTPUT);
	if (fd != -EEXIST)
		return fd;
	fd = openat(dir, "data", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/**
 * spool_data_len() - how much of a CPU's region holds pages
 * @fd: the data file
 * @region: its region size
 * @cpu: the CPU
 * @len: set to the bytes from the region's start to the first hole (or EOF)
 *
 * Nothing else marks the length: what a killed collector wrote is all there.
 *
 * Return: 0 or -errno.
 */
int spool_data_len(int fd, uint64_t region, unsigned int cpu, uint64_t *len)
{
	off_t start = (off_t)cpu * region, end;

	*len = 0;
	end = lseek(fd, start, SEEK_HOLE);
	if (end < 0)
		return errno == ENXIO ? 0 : -errno;
	*len = (uint64_t)(end - start) < region ? (uint64_t)(end - start) : region;
	return 0;
}

/* --- everything else the spool holds, written and read back here only --- */

/**
 * spool_kv() - the value of @key in key=value text
 * @text: the text, NUL-terminated
 * @key: the key
 * @buf: the value, cut to @size
 * @size: its size
 *
 * Return: the line's start when found, else NULL.
 */
const char *spool_kv(const char *text, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
			const char *v = p + klen + 1;
			size_t len = strcspn(v, "\n");

			snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), v);
			return p;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return NULL;
}

#define kv(text, key, buf, size)	(spool_kv((text), (key), (buf), (size)) != NULL)

static uint64_t kv_u64(const char *text, const char *key)
{
	char buf[32];

	return kv(text, key, buf, sizeof(buf)) ? strtoull(buf, NULL, 0) : 0;
}

/**
 * spool_ikey_write() - append an indexed key's line, NAMEi=value
 * @t: the text
 * @name: SPOOL_IKEY_*
 * @i: the index
 * @v: the value
 */
void spool_ikey_write(struct spool_text *t, const char *name, unsigned int i, uint64_t v)
{
	spool_tprintf(t, "%s%u=%llu\n", name, i, (unsigned long long)v);
}

/**
 * spool_ikey_read() - an indexed key's value
 * @text: the file's text
 * @name: SPOOL_IKEY_*
 * @i: the index
 *
 * Return: the value, 0 when the key is missing.
 */
uint64_t spool_ikey_read(const char *text, const char *name, unsigned int i)
{
	char key[48];

	snprintf(key, sizeof(key), "%s%u", name, i);
	return kv_u64(text, key);
}

static void cpu_name(char *buf, size_t size, unsigned int cpu, const char *suffix)
{
	snprintf(buf, size, "cpu%u.%s", cpu, suffix);
}

/**
 * spool_key_value() - append a key's value as the file spells it (no name, no separator)
 * @t: the text
 * @k: the key
 * @obj: the struct it is a field of
 */
void spool_key_value(struct spool_text *t, const struct spool_key *k, const void *obj)
{
	const char *p = (const char *)obj + k->off;
	uint32_t u32;
	uint64_t u64;
	bool b;
	int i;

	switch (k->type) {
	case SPOOL_KU64:
		memcpy(&u64, p, sizeof(u64));
		spool_tprintf(t, "%" PRIu64, u64);
		break;
	case SPOOL_KU32:
	case SPOOL_KU32_SAT:
		memcpy(&u32, p, sizeof(u32));
		spool_tprintf(t, "%u", u32);
		break;
	case SPOOL_KBOOL:
		memcpy(&b, p, sizeof(b));
		spool_tprintf(t, "%d", b);
		break;
	case SPOOL_KINT:
		memcpy(&i, p, sizeof(i));
		spool_tprintf(t, "%d", i);
		break;
	case SPOOL_KS64:
		memcpy(&u64, p, sizeof(u64));
		spool_tprintf(t, "%" PRId64, (int64_t)u64);
		break;
	case SPOOL_KSTR:
	case SPOOL_KTEXT:
		spool_tprintf(t, "%.*s", (int)strnlen(p, k->size), p);
		break;
	}
}

static void key_write(struct spool_text *t, const struct spool_key *k, const void *obj)
{
	spool_tprintf(t, "%s=", k->name);
	spool_key_value(t, k, obj);
}

/**
 * spool_key_store() - store a number read for @k as its type says
 * @k: the key
 * @obj: the struct it is a field of
 * @v: the number (a negative one as strtoull() wraps it)
 */
void spool_key_store(const struct spool_key *k, void *obj, uint64_t v)
{
	char *p = (char *)obj + k->off;
	uint32_t u32 = (uint32_t)v;
	bool b = v != 0;
	int i = (int)v;

	switch (k->type) {
	case SPOOL_KU64:
	case SPOOL_KS64:
		memcpy(p, &v, sizeof(v));
		break;
	case SPOOL_KU32_SAT:
		u32 = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		/* fall through */
	case SPOOL_KU32:
		memcpy(p, &u32, sizeof(u32));
		break;
	case SPOOL_KBOOL:
		memcpy(p, &b, sizeof(b));
		break;
	case SPOOL_KINT:
		memcpy(p, &i, sizeof(i));
		break;
	case SPOOL_KSTR:
	case SPOOL_KTEXT:
		break;
	}
}

/**
 * spool_keys_write() - append a table's keys, one "key=value" line each
 * @t: the text
 * @keys: the file's table
 * @n: its keys
 * @obj: the struct the table describes
 */
void spool_keys_write(struct spool_text *t, const struct spool_key *keys, size_t n, const void *obj)
{
	size_t i;

	for (i = 0; i < n; i++) {
		key_write(t, &keys[i], obj);
		spool_tprintf(t, "\n");
	}
}

/**
 * spool_keys_write_line() - append a table's keys on one line, "k=v k=v\n"
 * (cpuN.sums and cpuN.zsum)
 * @t: the text
 * @keys: the file's table
 * @n: its keys
 * @obj: the struct the table describes
 */
void spool_keys_write_line(struct spool_text *t, const struct spool_key *keys, size_t n,
			   const void *obj)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i)
			spool_tprintf(t, " ");
		key_write(t, &keys[i], obj);
	}
	spool_tprintf(t, "\n");
}

/**
 * spool_keys_read() - fill a struct from "key=value" lines, as its table says
 * @text: the file, NUL-terminated
 * @keys: the file's table
 * @n: its keys
 * @obj: filled
 *
 * The file is hostile: a number missing or not one reads as 0, a string
 * missing leaves the field as it was, a string is cut to its field and a
 * guest's text (SPOOL_KTEXT) sanitised.
 */
void spool_keys_read(const char *text, const struct spool_key *keys, size_t n, void *obj)
{
	char buf[1024];
	size_t i;

	for (i = 0; i < n; i++) {
		const struct spool_key *k = &keys[i];
		char *p = (char *)obj + k->off;

		if (k->type == SPOOL_KSTR)
			spool_kv(text, k->name, p, k->size);
		else if (k->type == SPOOL_KTEXT && kv(text, k->name, buf, sizeof(buf)))
			collect_sanitize(p, k->size, buf, false);
		else if (k->type != SPOOL_KTEXT)
			spool_key_store(k, obj, kv_u64(text, k->name));
	}
}

/**
 * spool_keys_read_line() - fill a struct from one "k=v k=v" line, every key
 * in the table's order (numbers only)
 * @text: the file, NUL-terminated
 * @keys: the file's table
 * @n: its keys
 * @obj: filled as far as the line goes
 *
 * Return: true when every key was there, in order, with a number.
 */
bool spool_keys_read_line(const char *text, const struct spool_key *keys, size_t n, void *obj)
{
	const char *p = text;
	size_t i, klen;
	uint64_t v;
	char *end;

	for (i = 0; i < n; i++) {
		/* As sscanf() read it: blanks between the pairs, a number after each '='. */
		while (i && (*p == ' ' || (*p >= '\t' && *p <= '\r')))
			p++;
		klen = strlen(keys[i].name);
		if (strncmp(p, keys[i].name, klen) || p[klen] != '=')
			return false;
		p += klen + 1;
		v = strtoull(p, &end, 10);
		if (end == p)
			return false;
		spool_key_store(&keys[i], obj, v);
		p = end;
	}
	return true;
}

/* .spool/options: struct spool_options, then the modes and owner (hand-written). */
const struct spool_key spool_options_keys[] = {
	SPOOL_KEY("file_version", SPOOL_KU32, struct spool_options, version),
	SPOOL_KEY("compress", SPOOL_KBOOL, struct spool_options, compress),
	SPOOL_KEY("host_trace_id", SPOOL_KU64, struct spool_options, host_trace_id),
	SPOOL_KEY("tsc_khz", SPOOL_KU64, struct spool_options, tsc_khz),
	SPOOL_KEY("tsc_mult", SPOOL_KU32, struct spool_options, tsc_mult),
	SPOOL_KEY("tsc_shift", SPOOL_KU32, struct spool_options, tsc_shift),
	SPOOL_KEY("tsc_method", SPOOL_KSTR, struct spool_options, tsc_method),
	SPOOL_KEY("cmdline", SPOOL_KSTR, struct spool_options, cmdline),
	SPOOL_KEY("hold", SPOOL_KBOOL, struct spool_options, hold),
};
const size_t spool_options_nkeys = SPOOL_NKEYS(spool_options_keys);

/**
 * spool_save_options() - write the run's options
 * @spool: the spool directory
 * @o: the options
 *
 * Return: 0 or -errno.
 */
int spool_save_options(int spool, const struct spool_options *o)
{
	struct spool_text t = { 0 };

	spool_keys_write(&t, spool_options_keys, spool_options_nkeys, o);
	/* Optional, octal and -1 for "leave it": more than a table's plain numbers. */
	if (o->have_perm)
		spool_tprintf(&t, "file_mode=0%o\nowner_uid=%ld\nowner_gid=%ld\n",
			(unsigned int)o->perm.file, o->perm.uid == (uid_t)-1 ? -1L : (long)o->perm.uid,
			o->perm.gid == (gid_t)-1 ? -1L : (long)o->perm.gid);
	return spool_text_save(&t, spool, "options");
}

/**
 * spool_load_options() - read the run's options back
 * @spool: the spool directory
 * @o: filled
 *
 * Return: 0, or -errno when there is no options file (no spool).
 */
int spool_load_options(int spool, struct spool_options *o)
{
	char *text, buf[32];
	size_t len;
	int ret;

	memset(o, 0, sizeof(*o));
	ret = collect_read_file(spool, "options", (void **)&text, &len, STATE_MAX);
	if (ret < 0)
		return ret;
	spool_keys_read(text, spool_options_keys, spool_options_nkeys, o);
	if (o->version != 6 && o->version != 7)
		o->version = 7;
	if (kv(text, "file_mode", buf, sizeof(buf))) {
		long uid, gid;

		/* Read and write bits only, the owner's always (the spool is read as hostile). */
		o->have_perm = true;
		o->perm.file = (strtoul(buf, NULL, 8) & 0666) | 0600;
		o->perm.dir = spool_perm_dir_mode(o->perm.file);
		uid = kv(text, "owner_uid", buf, sizeof(buf)) ? strtol(buf, NULL, 10) : -1;
		gid = kv(text, "owner_gid", buf, sizeof(buf)) ? strtol(buf, NULL, 10) : -1;
		o->perm.uid = uid >= 0 && uid < (long)(uid_t)-1 ? (uid_t)uid : (uid_t)-1;
		o->perm.gid = gid >= 0 && gid < (long)(gid_t)-1 ? (gid_t)gid : (gid_t)-1;
	}
	free(text);
	return 0;
}

/**
 * spool_save_stats() - a CPU's per_cpu stats text (guest or host)
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @text: the text
 *
 * Return: 0 or -errno.
 */
int spool_save_stats(int dir, unsigned int cpu, const char *text)
{
	char name[32];

	cpu_name(name, sizeof(name), cpu, "stats");
	return spool_write_file(dir, name, text, strlen(text));
}

/* One struct on one line, in cpuN.SUFFIX. */
static int save_line(int dir, unsigned int cpu, const char *suffix, const struct spool_key *keys,
		     size_t nkeys, const void *obj)
{
	struct spool_text t = { 0 };
	char name[32];

	cpu_name(name, sizeof(name), cpu, suffix);
	spool_keys_write_line(&t, keys, nkeys, obj);
	return spool_text_save(&t, dir, name);
}

/* cpuN.sums: struct spool_sums on one line, every key needed (load_sums()). */
const struct spool_key spool_sums_keys[] = {
	SPOOL_KEY("len", SPOOL_KU64, struct spool_sums, len),
	SPOOL_KEY("pages", SPOOL_KU64, struct spool_sums, pages),
	SPOOL_KEY("events", SPOOL_KU64, struct spool_sums, events),
	SPOOL_KEY("missed_pages", SPOOL_KU64, struct spool_sums, missed_pages),
	SPOOL_KEY("lost", SPOOL_KU64, struct spool_sums, lost),
};
const size_t spool_sums_nkeys = SPOOL_NKEYS(spool_sums_keys);

/**
 * spool_save_sums() - what ingest counted of a CPU's region
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @sums: the figures
 *
 * Return: 0 or -errno.
 */
int spool_save_sums(int dir, unsigned int cpu, const struct spool_sums *sums)
{
	return save_line(dir, cpu, "sums", spool_sums_keys, spool_sums_nkeys, sums);
}

/* cpuN.window: struct spool_window on one line (record --hold). */
static const struct spool_key spool_window_keys[] = {
	SPOOL_KEY("first_ts", SPOOL_KU64, struct spool_window, first_ts),
	SPOOL_KEY("end_ts", SPOOL_KU64, struct spool_window, end_ts),
};

/**
 * spool_save_window() - the span of a CPU's kept events (record --hold)
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @w: the span
 *
 * Return: 0 or -errno.
 */
int spool_save_window(int dir, unsigned int cpu, const struct spool_window *w)
{
	return save_line(dir, cpu, "window", spool_window_keys, SPOOL_NKEYS(spool_window_keys), w);
}

/* cpuN.zsum: struct spool_zsum on one line, every key needed (load_zsum()). */
const struct spool_key spool_zsum_keys[] = {
	SPOOL_KEY("raw", SPOOL_KU64, struct spool_zsum, raw),
	SPOOL_KEY("file", SPOOL_KU64, struct spool_zsum, file),
	SPOOL_KEY("pages", SPOOL_KU64, struct spool_zsum, pages),
	SPOOL_KEY("events", SPOOL_KU64, struct spool_zsum, events),
	SPOOL_KEY("missed_pages", SPOOL_KU64, struct spool_zsum, missed_pages),
	SPOOL_KEY("lost", SPOOL_KU64, struct spool_zsum, lost),
	SPOOL_KEY("subbuf", SPOOL_KU32, struct spool_zsum, subbuf),
};
const size_t spool_zsum_nkeys = SPOOL_NKEYS(spool_zsum_keys);

/**
 * spool_save_zsum() - what cpuN.zst holds (record/compress.c)
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @z: the figures
 *
 * Return: 0 or -errno.
 */
int spool_save_zsum(int dir, unsigned int cpu, const struct spool_zsum *z)
{
	return save_line(dir, cpu, "zsum", spool_zsum_keys, spool_zsum_nkeys, z);
}

/**
 * spool_remove_zst() - remove cpuN.zst and cpuN.zsum, as far as they exist
 * @dir: the trace's spool directory
 * @cpu: the CPU
 */
void spool_remove_zst(int dir, unsigned int cpu)
{
	char name[32];

	cpu_name(name, sizeof(name), cpu, "zsum");
	unlinkat(dir, name, 0);
	cpu_name(name, sizeof(name), cpu, "zst");
	unlinkat(dir, name, 0);
}

/**
 * spool_save_frag() - a trailing fragment of a stream that ended mid-page
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @data: the bytes
 * @len: how many
 *
 * Return: 0 or -errno.
 */
int spool_save_frag(int dir, unsigned int cpu, const void *data, size_t len)
{
	char name[32];

	cpu_name(name, sizeof(name), cpu, "frag");
	return spool_write_file(dir, name, data, len);
}

/**
 * spool_save_meta() - the metadata bundle as the agent (or the host) made it
 * @dir: the trace's spool directory
 * @data: the bundle
 * @len: its length
 *
 * Return: 0 or -errno.
 */
int spool_save_meta(int dir, const void *data, size_t len)
{
	return spool_write_file(dir, "meta.bin", data, len);
}

/**
 * spool_encode_meta() - a metadata bundle the host made or changed, encoded and spooled
 * @dir: the trace's spool directory
 * @m: the bundle
 *
 * Return: 0 or -errno.
 */
int spool_encode_meta(int dir, const struct vt_meta *m)
{
	size_t len;
	void *blob;
	int ret;

	ret = vt_meta_encode(m, &blob, &len);
	if (ret < 0)
		return ret;
	ret = spool_save_meta(dir, blob, len);
	free(blob);
	return ret;
}

/**
 * spool_load_meta() - read the metadata bundle back (checked by its decoder)
 * @dir: the trace's spool directory
 * @data: set to a malloc()ed copy
 * @len: its length
 *
 * Return: 0 or -errno.
 */
int spool_load_meta(int dir, void **data, size_t *len)
{
	return collect_read_file(dir, "meta.bin", data, len, VT_META_MAX_TOTAL);
}

/* inplace: struct spool_inplace's plain keys, then lenN per CPU (hand-written). */
const struct spool_key spool_inplace_keys[] = {
	SPOOL_KEY("region", SPOOL_KU64, struct spool_inplace, region),
	SPOOL_KEY("head", SPOOL_KU64, struct spool_inplace, head),
	SPOOL_KEY("size0", SPOOL_KU64, struct spool_inplace, size0),
	SPOOL_KEY("nr_cpus", SPOOL_KU32, struct spool_inplace, nr_cpus),
};
const size_t spool_inplace_nkeys = SPOOL_NKEYS(spool_inplace_keys);

/**
 * spool_save_inplace() - record an in-place finish before the data file changes
 * @dir: the trace's spool directory
 * @m: the layout
 *
 * Return: 0 or -errno.
 */
int spool_save_inplace(int dir, const struct spool_inplace *m)
{
	struct spool_text t = { 0 };
	unsigned int i;

	spool_keys_write(&t, spool_inplace_keys, spool_inplace_nkeys, m);
	/* One key per CPU: more than a table of fixed fields. */
	for (i = 0; i < m->nr_cpus && i < COLLECT_MAX_CPUS; i++)
		spool_tprintf(&t, "len%u=%" PRIu64 "\n", i, m->len[i]);
	return spool_text_save(&t, dir, "inplace");
}

/**
 * spool_load_inplace() - read the in-place marker back
 * @dir: the trace's spool directory
 * @m: filled
 *
 * Return: 0, -ENOENT when there is none, -EINVAL when it makes no sense.
 */
int spool_load_inplace(int dir, struct spool_inplace *m)
{
	char *text, key[32];
	unsigned int i;
	size_t len;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = collect_read_file(dir, "inplace", (void **)&text, &len, STATE_MAX);
	if (ret < 0)
		return ret;
	spool_keys_read(text, spool_inplace_keys, spool_inplace_nkeys, m);
	if (!m->region || m->nr_cpus > COLLECT_MAX_CPUS) {
		free(text);
		return -EINVAL;
	}
	for (i = 0; i < m->nr_cpus; i++) {
		snprintf(key, sizeof(key), "len%u", i);
		m->len[i] = kv_u64(text, key);
	}
	free(text);
	return 0;
}

/**
 * spool_has_inplace() - whether an in-place finish was begun in @dir
 * @dir: the trace's spool directory
 *
 * Return: true when the marker exists.
 */
bool spool_has_inplace(int dir)
{
	struct stat st;

	return fstatat(dir, "inplace", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/**
 * spool_open_cpu() - open a CPU's overflow pages (cpuN.pages) or kept-aside
 * pages (cpuN.bad)
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @kind: which
 * @flags: open() flags (O_CLOEXEC and O_NOFOLLOW are added; O_CREAT makes it
 *	with the output's mode and owner); a file opened to read must be a
 *	regular file
 *
 * Return: the fd or -errno (-ELOOP for a link).
 */
int spool_open_cpu(int dir, unsigned int cpu, enum spool_cpu_file kind, int flags)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), "cpu%u.%s", cpu,
		 kind == SPOOL_CPU_BAD ? "bad" : kind == SPOOL_CPU_ZST ? "zst" : "pages");
	if ((flags & O_ACCMODE) == O_RDONLY)
		return collect_open_regular(dir, name, flags);
	if (flags & O_CREAT) {
		/* Made here (with its mode and owner), or opened as it is. */
		fd = create_mode(dir, name, flags & ~O_CREAT, false, MODE_OUTPUT);
		if (fd != -EEXIST || (flags & O_EXCL))
			return fd;
		flags &= ~(O_CREAT | O_EXCL);
	}
	fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/**
 * spool_data_fd() - open an existing data file for the finish
 * @dir: the trace's spool directory
 *
 * Return: the fd, -ENOENT when there is none, or -errno.
 */
int spool_data_fd(int dir)
{
	return collect_open_regular(dir, "data", O_RDWR);
}

/**
 * spool_data_rename() - move the data file, laid out as a trace.dat, into place
 * @dir: the trace's spool directory
 * @out_fd: the output directory
 * @file: the trace file's name in it (the caller checked it is no link)
 *
 * Return: 0 or -errno.
 */
int spool_data_rename(int dir, int out_fd, const char *file)
{
	return renameat(dir, "data", out_fd, file) < 0 ? -errno : 0;
}

/**
 * spool_scratch_open() - an unnamed scratch file in a trace's spool directory
 * @dir: the directory
 *
 * For trying what its filesystem can do; gone when closed.
 *
 * Return: the fd or -errno.
 */
int spool_scratch_open(int dir)
{
	int fd = openat(dir, ".", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd < 0 ? -errno : fd;
	fd = spool_create(dir, "probe", O_RDWR, true);
	if (fd >= 0)
		unlinkat(dir, "probe", 0);
	return fd;
}

/* sync's plain keys: three tables (its sections: spool-file.c's sync_secs). */
const struct spool_key spool_sync_keys[] = {
	SPOOL_KEY("method", SPOOL_KSTR, struct spool_sync_head, method),
	SPOOL_KEY("why", SPOOL_KSTR, struct spool_sync_head, why),
	SPOOL_KEY("host_end", SPOOL_KU64, struct spool_sync_head, host_end),
	SPOOL_KEY("rejected", SPOOL_KU32_SAT, struct spool_sync_head, rejected),
	SPOOL_KEY("failed", SPOOL_KBOOL, struct spool_sync_head, failed),
	SPOOL_KEY("final_cut", SPOOL_KSTR, struct spool_sync_head, final_cut),
	SPOOL_KEY("reset_tsc", SPOOL_KU64, struct spool_sync_head, reset_tsc),
};
const size_t spool_sync_nkeys = SPOOL_NKEYS(spool_sync_keys);

const struct spool_key spool_kvm_keys[] = {
	SPOOL_KEY("kvm_changes_from", SPOOL_KTEXT, struct spool_kvm, changes_from),
	SPOOL_KEY("kvm_why", SPOOL_KTEXT, struct spool_kvm, why),
	SPOOL_KEY("kvm_instance", SPOOL_KTEXT, struct spool_kvm, instance),
	SPOOL_KEY("kvm_changes", SPOOL_KU64, struct spool_kvm, changes),
	SPOOL_KEY("kvm_lost", SPOOL_KU64, struct spool_kvm, lost),
	SPOOL_KEY("kvm_breaks", SPOOL_KU64, struct spool_kvm, breaks),
	SPOOL_KEY("kvm_merged", SPOOL_KU64, struct spool_kvm, merged),
	SPOOL_KEY("kvm_mismatch", SPOOL_KU64, struct spool_kvm, mismatch),
	SPOOL_KEY("kvm_reordered", SPOOL_KU64, struct spool_kvm, reordered),
	SPOOL_KEY("kvm_note", SPOOL_KTEXT, struct spool_kvm, note),
	SPOOL_KEY("kvm_host_flags", SPOOL_KTEXT, struct spool_kvm, host_flags),
	SPOOL_KEY("kvm_clocksource", SPOOL_KTEXT, struct spool_kvm, clocksource),
};
const size_t spool_kvm_nkeys = SPOOL_NKEYS(spool_kvm_keys);

const struct spool_key spool_check_keys[] = {
	SPOOL_KEY("check_on", SPOOL_KBOOL, struct spool_check, on),
	SPOOL_KEY("check_bursts", SPOOL_KU64, struct spool_check, bursts),
	SPOOL_KEY("check_replies", SPOOL_KU64, struct spool_check, replies),
	SPOOL_KEY("check_outside", SPOOL_KU64, struct spool_check, outside),
	SPOOL_KEY("check_straddling", SPOOL_KU64, struct spool_check, straddling),
	SPOOL_KEY("check_no_epoch", SPOOL_KU64, struct spool_check, no_epoch),
	SPOOL_KEY("check_unlisted", SPOOL_KU64, struct spool_check, unlisted),
};
const size_t spool_check_nkeys = SPOOL_NKEYS(spool_check_keys);

/* A one-line figures file (cpuN.zsum, cpuN.sums): all its keys, or none of it. */
static bool load_line(int dir, unsigned int cpu, const char *suffix, const struct spool_key *keys,
		      size_t n, void *obj)
{
	char name[32], *text;
	size_t len;
	bool ok;

	cpu_name(name, sizeof(name), cpu, suffix);
	if (collect_read_file(dir, name, (void **)&text, &len, 4096) < 0)
		return false;
	ok = spool_keys_read_line(text, keys, n, obj);
	free(text);
	return ok;
}

static bool load_zsum(int dir, unsigned int cpu, struct spool_zsum *z)
{
	struct spool_zsum read = { 0 };

	if (!load_line(dir, cpu, "zsum", spool_zsum_keys, spool_zsum_nkeys, &read))
		return false;
	*z = read;
	return true;
}

static bool load_sums(int dir, unsigned int cpu, struct spool_sums *s)
{
	struct spool_sums read = { 0 };

	if (!load_line(dir, cpu, "sums", spool_sums_keys, spool_sums_nkeys, &read))
		return false;
	*s = read;
	return true;
}

/*
 * Whether @name is cpuN.SUFFIX exactly as cpu_name() writes it (no leading
 * zeros, N below COLLECT_MAX_CPUS): the CPU in @cpu, the suffix in @suffix.
 */
static bool cpu_file_name(const char *name, unsigned int *cpu, const char **suffix)
{
	char canon[64];
	unsigned long n;
	char *end;

	if (strncmp(name, "cpu", 3) || name[3] < '0' || name[3] > '9')
		return false;
	n = strtoul(name + 3, &end, 10);
	if (n >= COLLECT_MAX_CPUS || *end != '.')
		return false;
	cpu_name(canon, sizeof(canon), n, end + 1);
	if (strcmp(canon, name))
		return false;
	*cpu = n;
	*suffix = end + 1;
	return true;
}

static void load_cpu_file(struct spool_trace *t, int dir, unsigned int cpu, const char *suffix,
			  const char *name)
{
	struct spool_cpu *c = &t->cpus[cpu];
	struct stat st;
	size_t len;
	char *text;

	if (!strcmp(suffix, "stats")) {
		if (c->stats || collect_read_file(dir, name, (void **)&text, &len, STATS_MAX) < 0)
			return;
		c->stats = malloc(len + 1);
		if (c->stats)
			collect_sanitize(c->stats, len + 1, text, true);
		free(text);
	} else if (!strcmp(suffix, "sums")) {
		c->have_sums = load_sums(dir, cpu, &c->sums);
	} else if (!strcmp(suffix, "zsum")) {
		c->have_zsum = load_zsum(dir, cpu, &c->zsum);
	} else if (!strcmp(suffix, "window")) {
		c->have_window = load_line(dir, cpu, "window", spool_window_keys,
					   SPOOL_NKEYS(spool_window_keys), &c->window);
	} else if (!strcmp(suffix, "frag")) {
		if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			c->frag_bytes = st.st_size;
	}
}

/*
 * The per-CPU files of CPUs below @nr. One pass over the directory: a spool
 * holds the files of the CPUs that sent something, and probing every name
 * of 256 CPUs costs hundreds of failed lookups per trace.
 */
static void load_cpu_files(struct spool_trace *t, int dir, unsigned int nr)
{
	struct dirent *de;
	DIR *d;
	int fd;

	fd = openat(dir, ".", OPEN_DIR);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		const char *suffix;
		unsigned int cpu;

		if (cpu_file_name(de->d_name, &cpu, &suffix) && cpu < nr)
			load_cpu_file(t, dir, cpu, suffix, de->d_name);
	}
	closedir(d);
}

/* migration's plain keys (its sections: spool-file.c's migration_secs). */
const struct spool_key spool_migration_keys[] = {
	SPOOL_KEY("direction", SPOOL_KTEXT, struct spool_migration, direction),
};
const size_t spool_migration_nkeys = SPOOL_NKEYS(spool_migration_keys);

const struct spool_key spool_mig_seen_keys[] = {
	SPOOL_KEY("status", SPOOL_KTEXT, struct spool_mig_seen, status),
	SPOOL_KEY("resumed", SPOOL_KBOOL, struct spool_mig_seen, resumed),
	SPOOL_KEY("active_tsc", SPOOL_KU64, struct spool_mig_seen, active_tsc),
	SPOOL_KEY("stop_tsc", SPOOL_KU64, struct spool_mig_seen, stop_tsc),
	SPOOL_KEY("completed_tsc", SPOOL_KU64, struct spool_mig_seen, completed_tsc),
	SPOOL_KEY("resume_tsc", SPOOL_KU64, struct spool_mig_seen, resume_tsc),
	SPOOL_KEY("taken_tsc", SPOOL_KU64, struct spool_mig_seen, taken_tsc),
	SPOOL_KEY("out_tsc", SPOOL_KU64, struct spool_mig_seen, out_tsc),
	SPOOL_KEY("downtime_ms", SPOOL_KU64, struct spool_mig_seen, downtime_ms),
	SPOOL_KEY("total_ms", SPOOL_KU64, struct spool_mig_seen, total_ms),
	SPOOL_KEY("failures", SPOOL_KU32, struct spool_mig_seen, failures),
	SPOOL_KEY("resume_no", SPOOL_KU64, struct spool_mig_seen, resume_no),
	SPOOL_KEY("instance", SPOOL_KTEXT, struct spool_mig_seen, instance),
	SPOOL_KEY("nr_events", SPOOL_KU32, struct spool_mig_seen, nr_events),
	SPOOL_KEY("ignored", SPOOL_KU64, struct spool_mig_seen, ignored),
	SPOOL_KEY("host_boot_id", SPOOL_KTEXT, struct spool_mig_seen, boot_id),
	SPOOL_KEY("host_rt_ns", SPOOL_KU64, struct spool_mig_seen, rt_ns),
	SPOOL_KEY("host_rt_tsc", SPOOL_KU64, struct spool_mig_seen, rt_tsc),
};
const size_t spool_mig_seen_nkeys = SPOOL_NKEYS(spool_mig_seen_keys);

/* state's plain keys, five tables (its sections: spool-file.c's state_secs). */
const struct spool_key spool_state_keys[] = {
	SPOOL_KEY("name", SPOOL_KTEXT, struct spool_state, name),
	SPOOL_KEY("trace_id", SPOOL_KU64, struct spool_state, trace_id),
};
const size_t spool_state_nkeys = SPOOL_NKEYS(spool_state_keys);

const struct spool_key spool_agent_keys[] = {
	SPOOL_KEY("nr_cpus", SPOOL_KU32, struct spool_agent, nr_cpus),
	SPOOL_KEY("subbuf", SPOOL_KU32, struct spool_agent, subbuf),
	SPOOL_KEY("clock", SPOOL_KTEXT, struct spool_agent, clock),
	SPOOL_KEY("agent", SPOOL_KTEXT, struct spool_agent, software),
	SPOOL_KEY("caps", SPOOL_KU64, struct spool_agent, caps),
};
const size_t spool_agent_nkeys = SPOOL_NKEYS(spool_agent_keys);

const struct spool_key spool_state_tail_keys[] = {
	SPOOL_KEY("streams", SPOOL_KU32, struct spool_state, streams),
	SPOOL_KEY("qemu_pid", SPOOL_KINT, struct spool_state, qemu_pid),
	SPOOL_KEY("max_reached", SPOOL_KBOOL, struct spool_state, max_reached),
};
const size_t spool_state_tail_nkeys = SPOOL_NKEYS(spool_state_tail_keys);

const struct spool_key spool_figures_keys[] = {
	SPOOL_KEY("protocol_errors", SPOOL_KU64, struct spool_figures, protocol_errors),
	SPOOL_KEY("error", SPOOL_KTEXT, struct spool_figures, error),
	SPOOL_KEY("agent_error", SPOOL_KTEXT, struct spool_figures, agent_error),
	SPOOL_KEY("agent_notice", SPOOL_KTEXT, struct spool_figures, agent_notice),
	SPOOL_KEY("meta_fetches", SPOOL_KU64, struct spool_figures, meta_fetches),
	SPOOL_KEY("meta_us", SPOOL_KU64, struct spool_figures, meta_us),
	SPOOL_KEY("meta_guest_cpu_us", SPOOL_KU64, struct spool_figures, meta_guest_cpu_us),
	SPOOL_KEY("first_page_us", SPOOL_KU64, struct spool_figures, first_page_us),
};
const size_t spool_figures_nkeys = SPOOL_NKEYS(spool_figures_keys);

const struct spool_key spool_kcache_keys[] = {
	SPOOL_KEY("kcache_hit", SPOOL_KBOOL, struct spool_kcache, hit),
	SPOOL_KEY("kcache_vm", SPOOL_KSTR, struct spool_kcache, vm),
	SPOOL_KEY("kcache_why", SPOOL_KSTR, struct spool_kcache, why),
};
const size_t spool_kcache_nkeys = SPOOL_NKEYS(spool_kcache_keys);

const struct spool_key spool_budget_keys[] = {
	SPOOL_KEY("budget_max", SPOOL_KU64, struct spool_budget, max),
	SPOOL_KEY("budget_used", SPOOL_KU64, struct spool_budget, used),
	SPOOL_KEY("budget_pages", SPOOL_KU64, struct spool_budget, pages),
	SPOOL_KEY("budget_bad", SPOOL_KU64, struct spool_budget, bad),
	SPOOL_KEY("budget_frag", SPOOL_KU64, struct spool_budget, frag),
	SPOOL_KEY("budget_meta", SPOOL_KU64, struct spool_budget, meta),
};
const size_t spool_budget_nkeys = SPOOL_NKEYS(spool_budget_keys);

/*
 * One of a trace's files (spool-file.c): @have says it was read; one
 * refused (-EBADMSG, t->bad says why) counts as missing, the rest goes on.
 */
static int load_file(struct spool_trace *t, int dir, const struct spool_file *f, bool *have)
{
	int ret = spool_file_load(dir, f, t);

	*have = ret == 0;
	return ret == -ENOENT ? 0 : ret;
}

/**
 * spool_trace_load() - read everything the spool holds about one trace
 * @dir: the trace's spool directory
 * @host: it is the host's (no state, agent or sync files)
 * @t: filled; spool_trace_free() releases it
 *
 * The spool was made from guest data: every number is bounded here, every
 * string sanitised. Missing files leave their have_ flag false, and so do
 * files refused as corrupt, whose first is named in @t->bad; the others
 * are read all the same.
 *
 * Return: 0, -EBADMSG (a file refused; @t is usable), or -errno (-ENOMEM).
 */
int spool_trace_load(int dir, bool host, struct spool_trace *t)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->host = host;
	if (host) {
		snprintf(t->name, sizeof(t->name), "host");
		snprintf(t->agent.clock, sizeof(t->agent.clock), "x86-tsc");
		load_cpu_files(t, dir, COLLECT_MAX_CPUS);
		return 0;
	}
	ret = load_file(t, dir, &spool_state_file, &t->have_state);
	if (t->have_state) {
		snprintf(t->name, sizeof(t->name), "%s", t->state.name);
		t->trace_id = t->state.trace_id;
		t->max_reached = t->state.max_reached;
		t->figures.budget.reached = t->max_reached;
	}
	if (t->agent.nr_cpus > COLLECT_MAX_CPUS)
		t->agent.nr_cpus = COLLECT_MAX_CPUS;
	ret = load_file(t, dir, &spool_agent_file, &t->have_agent) ?: ret;
	load_cpu_files(t, dir, t->agent.nr_cpus);
	snprintf(t->sync_head.method, sizeof(t->sync_head.method), "none");
	ret = load_file(t, dir, &spool_sync_file, &t->have_sync) ?: ret;
	if (!t->have_sync)
		snprintf(t->sync_head.why, sizeof(t->sync_head.why), "%s",
			 ret == -EBADMSG ? "the clock mapping was refused" : "no clock mapping was recorded");
	return load_file(t, dir, &spool_migration_file, &t->mig.have) ?: ret;
}

/**
 * spool_trace_free() - release what spool_trace_load() allocated
 * @t: the trace
 */
void spool_trace_free(struct spool_trace *t)
{
	unsigned int i;

	for (i = 0; i < COLLECT_MAX_CPUS; i++) {
		free(t->cpus[i].stats);
		t->cpus[i].stats = NULL;
		vt_tsync_cpu_free(&t->sync[i]);
	}
	free(t->check.ivs);
	t->check.ivs = NULL;
	t->check.nr_ivs = 0;
}

/*
 * The names this file creates, and so the only ones spool_remove() deletes:
 * a spool file added above must be added here too.
 */
static const char *const trace_files[] = {
	"state", "agent", "sync", "meta.bin", "data", "layout", "inplace", "probe", "migration",
};
static const char *const cpu_suffixes[] = { "pages", "bad", "frag", "stats", "sums", "zst", "zsum",
					     "window" };

static bool strip_tmp(const char *name, char *base, size_t size)
{
	size_t len = strlen(name);

	if (len >= size)
		return false;
	memcpy(base, name, len + 1);
	if (len > 4 && !strcmp(name + len - 4, ".tmp"))
		base[len - 4] = '\0';
	return true;
}

static bool known_trace_file(const char *name)
{
	unsigned int cpu, i;
	const char *suffix;
	char base[64];

	if (!strip_tmp(name, base, sizeof(base)))
		return false;
	for (i = 0; i < sizeof(trace_files) / sizeof(trace_files[0]); i++)
		if (!strcmp(base, trace_files[i]))
			return true;
	if (!cpu_file_name(base, &cpu, &suffix))
		return false;
	for (i = 0; i < sizeof(cpu_suffixes) / sizeof(cpu_suffixes[0]); i++)
		if (!strcmp(suffix, cpu_suffixes[i]))
			return true;
	return false;
}

static bool known_spool_file(const char *name)
{
	return !strcmp(name, "options") || !strcmp(name, "options.tmp");
}

/**
 * spool_trace_dir_name() - whether @name is a trace's directory in the spool
 * @name: a name in .spool/
 *
 * Return: true for "host" and "guest-NAME" with a usable NAME other than host.
 */
bool spool_trace_dir_name(const char *name)
{
	if (!strcmp(name, "host"))
		return true;
	return !strncmp(name, "guest-", 6) && collect_name_ok(name + 6) &&
	       !collect_name_reserved(name + 6);
}

/* Delete the regular files of @dfd that match @known; report the rest. */
static int remove_known(int dfd, const char *where, bool (*known)(const char *))
{
	struct dirent *de;
	int fd, ret = 0;
	DIR *d;

	fd = openat(dfd, ".", OPEN_DIR);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (known(de->d_name) && fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			if (unlinkat(dfd, de->d_name, 0) < 0)
				ret = -errno;
			continue;
		}
		log_warn("%s/%s was not made by the collector: left in place", where, de->d_name);
		ret = -ENOTEMPTY;
	}
	closedir(d);
	return ret;
}

/**
 * spool_remove() - delete the spool: the files and directories it makes, only
 * @out_fd: the output directory
 * @out_dir: its path, for messages
 *
 * Follows no link and deletes only names the spool uses (see spool_trace_dir_name()
 * and the tables above). Anything else is left where it is and reported, and
 * the directories holding it stay.
 *
 * Return: 0, -ENOTEMPTY when something was left, or -errno.
 */
int spool_remove(int out_fd, const char *out_dir)
{
	char where[4400];
	struct dirent *de;
	int sfd, fd, ret = 0, r;
	DIR *d;

	sfd = spool_open_dir(out_fd, ".spool");
	if (sfd < 0)
		return sfd;
	fd = dup(sfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		close(sfd);
		return ret;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int tfd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(where, sizeof(where), "%s/.spool/%s", out_dir, de->d_name);
		if (known_spool_file(de->d_name) && fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			if (unlinkat(sfd, de->d_name, 0) < 0)
				ret = -errno;
			continue;
		}
		if (!spool_trace_dir_name(de->d_name) ||
		    fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
			log_warn("%s was not made by the collector: left in place", where);
			ret = -ENOTEMPTY;
			continue;
		}
		tfd = spool_open_dir(sfd, de->d_name);
		if (tfd < 0) {
			ret = tfd;
			continue;
		}
		r = remove_known(tfd, where, known_trace_file);
		close(tfd);
		if (r == 0 && unlinkat(sfd, de->d_name, AT_REMOVEDIR) < 0)
			r = -errno;
		ret = r ?: ret;
	}
	closedir(d);
	close(sfd);
	if (ret == 0 && unlinkat(out_fd, ".spool", AT_REMOVEDIR) < 0)
		ret = -errno;
	return ret;
}
