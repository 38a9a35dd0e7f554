/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who holds a file open, from /proc (procfd.c): the processes with a FIFO
 * open (/proc/PID/fd) and the unix sockets bound to a path (/proc/net/unix).
 * `list` and `setup --hotplug` ask the kernel the same way.
 */
#ifndef SETUP_PROCFD_H
#define SETUP_PROCFD_H

#include <stdbool.h>
#include <sys/types.h>

/**
 * struct procfd_key - one FIFO whose holders are looked for
 * @dev: its device (fstat)
 * @ino: its inode
 * @skip: a process that does not count (0: none)
 * @holder: set to the first other process found with it open (0: none)
 */
struct procfd_key {
	dev_t dev;
	ino_t ino;
	pid_t skip;
	pid_t holder;
};

/**
 * struct procfd_unix - a unix socket from /proc/net/unix
 * @inode: the socket's inode (socket:[INODE] in /proc/PID/fd)
 * @path: the path it is bound to
 * @connected: a connected socket, not a listener
 */
struct procfd_unix {
	unsigned long inode;
	char path[200];
	bool connected;
};

void procfd_holders(struct procfd_key *k, unsigned int n, bool (*ignore)(pid_t pid));
struct procfd_unix *procfd_read_unix(unsigned int *n);

#endif
