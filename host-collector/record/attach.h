/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A guest's ports, opened or listened on (attach.c). */
#ifndef RECORD_ATTACH_H
#define RECORD_ATTACH_H

#include <stddef.h>

struct guest_link;
struct record_opts;

/* A guest's part here is its ports (setup/link.h) and its control port's descriptors; its name says whose. */
unsigned int attach_count_ports(const struct guest_link *link);
int attach_guest(const char *name, struct guest_link *link, const struct record_opts *o,
		 int *rfd, int *wfd, int *lfd);
void detach_guest(struct guest_link *link, int *rfd, int *wfd, int *lfd);
int attach_open_data(const char *name, struct guest_link *link, unsigned int cpu, int *fd);
int attach_listen(const char *base, const struct record_opts *o);
int attach_accept(int lfd, const struct record_opts *o, int *fd, char *who, size_t size);
int attach_refuse(int lfd, int *fd, char *who, size_t size);
int attach_data_path(const struct guest_link *link, unsigned int cpu, char *base, size_t size);
size_t attach_discard_stale(int fd);

#endif
