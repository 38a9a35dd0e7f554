/* SPDX-License-Identifier: GPL-2.0-or-later */
/* QMP replies the collector reads (qmp-reply.c): for record's --qmp and for libvirt. */
#ifndef SETUP_QMP_REPLY_H
#define SETUP_QMP_REPLY_H

#include <stddef.h>
#include <stdint.h>

int qmp_parse_cpus_fast(const char *json, size_t len, uint32_t *tids, unsigned int max,
			unsigned int *nr);
int qmp_parse_uuid(const char *json, size_t len, char *uuid, size_t size);

#endif
