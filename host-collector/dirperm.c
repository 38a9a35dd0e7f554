// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Directories whose entries others cannot change. Whoever can write a
 * directory can rename, unlink and replace what it holds (the sticky bit
 * stops neither a new name nor a name made before ours), so a file of ours in
 * it is only ours while nobody else can write it. The kallsyms cache keeps
 * its entries in such a directory, and record --listen binds its sockets in
 * one (else another user renames the socket away and binds their own, and
 * QEMU connects to them).
 */
#include <stdbool.h>
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
