/* SPDX-License-Identifier: GPL-2.0-or-later */
/* record --last-boot: the previous boot's trace, written to its own file (lastboot-file.c). */
#ifndef RECORD_LASTBOOT_FILE_H
#define RECORD_LASTBOOT_FILE_H

#include <stddef.h>

struct record_opts;
struct vt_proto_meta_rx;

int lastboot_save(const char *guest, int out_fd, struct vt_proto_meta_rx *rx,
		  const struct record_opts *o, char *why, size_t size);

#endif
