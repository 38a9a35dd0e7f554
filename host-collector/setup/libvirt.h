/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvirt domains (libvirt.c, a module loaded only when a domain is named:
 * libvirt-module.c), and the port directories setup makes (dirs.c).
 */
#ifndef SETUP_LIBVIRT_H
#define SETUP_LIBVIRT_H

#include <stdbool.h>
#include <stddef.h>

#include "link.h"

struct _virConnect;
/**
 * struct libvirt_setup - what `setup --domain` does to a persistent definition
 * @domain: the domain's name
 * @uri: the libvirt URI, NULL or "" for libvirt's default
 * @remove: take away what an earlier apply added, instead of adding
 * @live: the running domain too: hot-plug (unplug) the channels, no reboot
 * @unix_backend: unix channels (QEMU listens) instead of pipe FIFOs
 * @dir: where the chardevs live; "" with @unix_backend: paths libvirt chooses
 * @vcpus: set to the definition's vCPU count
 * @changed: set when the definition was redefined
 */
struct libvirt_setup {
	const char *domain;
	const char *uri;
	bool remove;
	bool live;
	bool unix_backend;
	char dir[4096];
	unsigned int vcpus;
	bool changed;
};
int libvirt_guest_resolve(struct guest_link *l, const char *name, const char *uri);
int libvirt_guest_from_conn(struct _virConnect *conn, struct guest_link *l, const char *name,
			    const char *uri);
int libvirt_setup_run(struct libvirt_setup *s);
int libvirt_setup_conn(struct _virConnect *conn, struct libvirt_setup *s);
int libvirt_default_dir(char *buf, size_t len, const char *domain);
/* libvirt-events.c, through the module: the daemon's lifecycle events (daemon/panic.c). */
int libvirt_events_start(const char *uri, int fd);
int collect_mkdirs(const char *dir);

#endif
