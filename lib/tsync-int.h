/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private to lib/tsync-*.c: the 128-bit integer types the clock arithmetic
 * is done in, and the mapping's exact inverse that tsync-map.c and
 * tsync-timeshift.c share. Not for use outside lib/.
 */
#ifndef VT_TSYNC_INT_H
#define VT_TSYNC_INT_H

#include <stdint.h>

#include "vt_tsync.h"

typedef unsigned __int128 vt_u128;
typedef __int128 vt_s128;

#define U64_LIMIT	((vt_s128)UINT64_MAX)

int vt_tsc_inverse(const struct vt_tsc_map *m, vt_s128 guest, vt_u128 *host);

#endif
