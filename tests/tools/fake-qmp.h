/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vt-fake-agent --qmp: a QMP socket served as QEMU serves one (fake-qmp.c),
 * with the events a test writes into a FIFO relayed to its client.
 */
#ifndef TESTS_TOOLS_FAKE_QMP_H
#define TESTS_TOOLS_FAKE_QMP_H

#include <poll.h>
#include <stdbool.h>

/* The most descriptors fake_qmp_fds() adds. */
#define FAKE_QMP_FDS	2

struct fake_qmp;

struct fake_qmp *fake_qmp_open(const char *name, const char *sock, const char *events,
			       unsigned int cpus);
unsigned int fake_qmp_fds(const struct fake_qmp *q, struct pollfd *pfd);
void fake_qmp_ready(struct fake_qmp *q, const struct pollfd *p);
bool fake_qmp_quit(const struct fake_qmp *q);
void fake_qmp_close(struct fake_qmp *q);

#endif
