/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which processes are QEMUs and whose, by what the kernel says, and opening a
 * QEMU's ports so that no name a local user chose can send us elsewhere
 * (qemuproc.c). `list`, `record --all` and record's own opens use it.
 */
#ifndef SETUP_QEMUPROC_H
#define SETUP_QEMUPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/**
 * struct qemuproc_owner - whose a port must be
 * @known: the QEMU is known: the port must be its user's or root's, a FIFO
 *	one that @pid holds open and a socket's listener @pid (else any owner:
 *	an operator's path)
 * @uid: the QEMU's user (qemuproc_identify())
 * @pid: the QEMU process (0: any process of @uid or root)
 */
struct qemuproc_owner {
	bool known;
	uid_t uid;
	pid_t pid;
};

int qemuproc_identify(pid_t pid, uid_t *uid, char *why, size_t len);
bool qemuproc_user_allowed(uid_t uid);
int qemuproc_open_fifo(const char *path, const struct qemuproc_owner *want, int *fd, char *why,
		       size_t len);
int qemuproc_connect(const char *path, const struct qemuproc_owner *want, bool nonblock, int *fd,
		     char *why, size_t len);

int qemuproc_start_time(pid_t pid, unsigned long long *start);
bool qemuproc_alive(pid_t pid);

#endif
