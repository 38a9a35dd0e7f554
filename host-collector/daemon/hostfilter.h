/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host-event filter trigger (hostfilter.c): host events that the kernel
 * matches against the operator's filters, in one private tracefs instance,
 * seal snapshots of the guest whose QEMU the event came from.
 */
#ifndef DAEMON_HOSTFILTER_H
#define DAEMON_HOSTFILTER_H

#include <stddef.h>

#define HOSTFILTER_MAX		16	/* trigger-host-filter lines */
#define HOSTFILTER_COOLDOWN	60.0	/* default seconds between one guest's snapshots */

struct daemon;
struct daemon_conf;
struct dguest;

/**
 * struct daemon_conf_filter - one trigger-host-filter, as written
 * @spec: SYSTEM:EVENT[ if FILTER]
 * @where: where it was given ("FILE:LINE: trigger-host-filter" or "--trigger-host-filter"),
 *	for the kernel's refusal
 */
struct daemon_conf_filter {
	char spec[1024];
	char where[256];
};

int hostfilter_conf_add(struct daemon_conf *c, const char *what, const char *val);
int hostfilter_open(struct daemon *d);
void hostfilter_tick(struct daemon *d);
size_t hostfilter_status(const struct daemon *d, char *buf, size_t len);
size_t hostfilter_status_size(const struct daemon *d);
void hostfilter_unsealed(struct daemon *d, const struct dguest *g);
void hostfilter_close(struct daemon *d);

#endif
