// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vt_grow(): make an array hold at least so many elements, doubling its
 * capacity, never overflowing a size.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "vt_grow.h"

/**
 * vt_grow_max() - make the array at @p hold at least @need elements, its
 * capacity doubled (from VT_GROW_FIRST) as often as that takes, never past @max
 * @p: the array, realloc()ed (NULL to begin)
 * @cap: its capacity in elements, updated
 * @need: the elements it must hold
 * @elem: an element's size in bytes (not 0)
 * @max: the largest capacity, in elements
 *
 * Nothing changes when the array holds @need already, or on an error.
 *
 * Return: 0, -E2BIG when @need is above @max, -ENOMEM when the memory
 * cannot be had or its size in bytes would pass PTRDIFF_MAX.
 */
int vt_grow_max(void **p, size_t *cap, size_t need, size_t elem, size_t max)
{
	size_t ncap = *cap ? *cap : VT_GROW_FIRST;
	void *np;

	if (!elem)
		return -EINVAL;
	if (need <= *cap)
		return 0;
	if (need > max)
		return -E2BIG;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? SIZE_MAX : ncap * 2;
	if (ncap > max)
		ncap = max;
	/* No object is larger than PTRDIFF_MAX: such a size is refused, never asked of realloc(). */
	if (ncap > PTRDIFF_MAX / elem)
		return -ENOMEM;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/**
 * vt_grow() - make the array at @p hold at least @need elements, its
 * capacity doubled (from VT_GROW_FIRST) as often as that takes
 * @p: the array, realloc()ed (NULL to begin)
 * @cap: its capacity in elements, updated
 * @need: the elements it must hold
 * @elem: an element's size in bytes (not 0)
 *
 * Return: 0, or -ENOMEM (also when the size in bytes would overflow); on
 * an error nothing changes.
 */
int vt_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	return vt_grow_max(p, cap, need, elem, SIZE_MAX);
}
