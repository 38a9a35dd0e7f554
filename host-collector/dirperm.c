// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Files and directories others cannot swap under us.
 *
 * Directories whose entries others cannot change. Whoever can write a
 * directory can rename, unlink and replace what it holds (the sticky bit
 * stops neither a new name nor a name made before ours), so a file of ours in
 * it is only ours while nobody else can write it. The kallsyms cache keeps
 * its entries in such a directory, and record --listen binds its sockets in
 * one (else another user renames the socket away and binds their own, and
 * QEMU connects to them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"

/**
 * collect_dir_private() - whether only this user or root can change what a
 * directory holds
 * @st: the directory's status, from fstat() of the descriptor that is then
 *	used (not a path checked, then opened again)
 *
 * Return: true when it is owned by the effective user or root and neither its
 * group nor others may write it (sticky or not).
 */
bool collect_dir_private(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && (st->st_uid == geteuid() || st->st_uid == 0) &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/**
 * collect_open_regular() - open a regular file in a directory, never through a link
 * @dfd: the directory
 * @name: the file's name in it
 * @flags: open flags (O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC are added: a FIFO
 *	put in its place does not block the open, and is then refused)
 *
 * Return: the descriptor, -EINVAL when it is not a regular file, or -errno
 * (-ELOOP: a link).
 */
int collect_open_regular(int dfd, const char *name, int flags)
{
	struct stat st;
	int fd = openat(dfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/**
 * collect_read_file() - read a whole regular file, refusing one larger than @max
 * @dfd: the directory
 * @name: file name (opened with collect_open_regular())
 * @data: set to a malloc()ed, NUL-terminated copy
 * @len: set to its length
 * @max: the largest size accepted
 *
 * Return: 0, -EFBIG, -ELOOP (a link), -EINVAL (not a regular file), or -errno.
 */
int collect_read_file(int dfd, const char *name, void **data, size_t *len, size_t max)
{
	struct stat st;
	size_t have = 0;
	char *buf;
	int fd;

	fd = collect_open_regular(dfd, name, O_RDONLY);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + have, st.st_size - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += n;
	}
	close(fd);
	buf[have] = '\0';
	*data = buf;
	*len = have;
	return 0;
}
