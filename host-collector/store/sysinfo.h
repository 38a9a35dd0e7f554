/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The guest's IOMMU groups and PCI devices, kept next to its trace (sysinfo.c). */
#ifndef STORE_SYSINFO_H
#define STORE_SYSINFO_H

#include <stddef.h>

#include "vt_meta.h"

int sysinfo_path(char *buf, size_t size, const char *dir, const char *trace_file);
int sysinfo_save(int out_fd, const char *trace_file, const struct vt_meta *m);
int sysinfo_load(const char *dir, const char *trace_file, const char *name, struct vt_blob *b);

#endif
