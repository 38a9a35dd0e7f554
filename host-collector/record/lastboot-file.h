/* SPDX-License-Identifier: GPL-2.0-or-later */
/* record --last-boot: the previous boot's trace, written to its own file (lastboot-file.c). */
#ifndef RECORD_LASTBOOT_FILE_H
#define RECORD_LASTBOOT_FILE_H

struct guest;
struct record_opts;

int lastboot_save(struct guest *g, const struct record_opts *o);

#endif
