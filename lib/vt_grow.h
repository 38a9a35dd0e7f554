/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Growing arrays: one capacity-doubling realloc(), checked for overflow,
 * instead of a loop written again wherever an array grows.
 */
#ifndef VT_GROW_H
#define VT_GROW_H

#include <stddef.h>

/* The capacity an empty array starts with, in elements (more if asked). */
#define VT_GROW_FIRST	16u

int vt_grow(void **p, size_t *cap, size_t need, size_t elem);
int vt_grow_max(void **p, size_t *cap, size_t need, size_t elem, size_t max);

#endif
