/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared by spool.c and spool-file.c only: the key=value machinery under
 * the tables, and the sizes of what is read back.
 */
#ifndef STORE_SPOOL_INT_H
#define STORE_SPOOL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "spool.h"

#define STATE_MAX	(64u << 10)
#define STATS_MAX	8192u
#define SYNC_MAX	(64u << 20)

const char *spool_kv(const char *text, const char *key, char *buf, size_t size);
void spool_key_value(struct spool_text *t, const struct spool_key *k, const void *obj);
void spool_key_store(const struct spool_key *k, void *obj, uint64_t v);

#endif
