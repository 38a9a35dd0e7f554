/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report --perfetto FILE (perfetto.c) and report --perf-kvm DIR (perfkvm.c). */
#ifndef REPORT_PERFETTO_H
#define REPORT_PERFETTO_H

#include <sys/types.h>

#include "json.h"
#include "vt_meta.h"

struct vcpus_an;

int pf_write(const char *dir, const struct json_value *root, const char *guest, const char *path,
	     mode_t mode, const struct vcpus_an *va);
int pk_kallsyms(const char *path, struct vt_blob *out);
int pk_write(const char *dir, const struct json_value *root, const char *guest, const char *out);

#endif
