/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Guests' kallsyms kept between recordings of one boot, one entry per VM (kcache.c). */
#ifndef RECORD_KCACHE_H
#define RECORD_KCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "vt_meta.h"

struct guest_link;

int kcache_vm_id(const struct guest_link *l, const char *qmp_uuid, char *id, size_t size);
int kcache_open(const char *dir, bool create);
int kcache_key(int dfd, const char *name, uint64_t *key);
int kcache_load(int dfd, const char *name, uint64_t key, struct vt_blob *out);
int kcache_store(int dfd, const char *name, uint64_t key, const struct vt_blob *ks);

#endif
