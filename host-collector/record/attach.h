/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A guest's ports, opened or listened on (attach.c). */
#ifndef RECORD_ATTACH_H
#define RECORD_ATTACH_H

#include <stddef.h>

struct guest;
struct record_opts;

unsigned int attach_count_ports(const struct guest *g);
int attach_guest(struct guest *g, const struct record_opts *o);
void detach_guest(struct guest *g);
int attach_open_data(struct guest *g, unsigned int cpu, int *fd);
int attach_listen(const char *base, const struct record_opts *o);
int attach_accept(int lfd, const struct record_opts *o, int *fd, char *who, size_t size);
int attach_refuse(int lfd, int *fd, char *who, size_t size);
int attach_data_path(const struct guest *g, unsigned int cpu, char *base, size_t size);
size_t attach_discard_stale(int fd);

#endif
