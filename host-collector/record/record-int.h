/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of `record` share (record.c, record-opts.c and
 * record-guests.c): its command line, its guests' start, their open files.
 * Not an interface: nothing outside record/ may call them (record/'s CPPFLAGS
 * define VT_RECORD_INTERNAL, no other folder's do).
 */
#ifndef RECORD_RECORD_INT_H
#define RECORD_RECORD_INT_H

#ifndef VT_RECORD_INTERNAL
#error "record-int.h is record/'s own: include record/record.h"
#endif

#include "record.h"

/* record-opts.c */
int record_parse(int argc, char **argv, struct record_opts *o, struct guest **gs,
		 unsigned int *nr);
struct guest *record_new_guest(struct guest **gs, unsigned int *nr);

/* record-guests.c */
int record_add_all(const struct record_opts *o, struct guest **gs, unsigned int *nr);
void record_start_guest(struct guest *g);
void record_wait_tick(void *arg);
unsigned int record_fd_limit(struct guest **gs, unsigned int nr, const struct record_opts *o);
void record_fd_limit_restore(void);

#endif
