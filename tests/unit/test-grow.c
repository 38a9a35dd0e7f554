// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt_grow(): an empty array starts at VT_GROW_FIRST elements and doubles as
 * often as a need takes; a size in bytes that would overflow, a need past
 * the limit or a zero element size is refused, leaving the array as it was.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vt_grow.h"

static void test_growth(void **state)
{
	uint32_t *a = NULL;
	size_t cap = 0, i;

	(void)state;
	printf("vt_grow: from %u elements, doubling, the contents kept\n", VT_GROW_FIRST);
	assert_int_equal(vt_grow((void **)&a, &cap, 0, sizeof(*a)), 0);
	assert_null(a);
	assert_int_equal(cap, 0);
	assert_int_equal(vt_grow((void **)&a, &cap, 1, sizeof(*a)), 0);
	assert_non_null(a);
	assert_int_equal(cap, VT_GROW_FIRST);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(vt_grow((void **)&a, &cap, i + 1, sizeof(*a)), 0);
		a[i] = (uint32_t)i * 7;
	}
	assert_int_equal(cap, 1024);
	for (i = 0; i < 1000; i++)
		assert_int_equal(a[i], i * 7);
	/* A need already held changes nothing; a larger one doubles past it at once. */
	assert_int_equal(vt_grow((void **)&a, &cap, 1024, sizeof(*a)), 0);
	assert_int_equal(cap, 1024);
	assert_int_equal(vt_grow((void **)&a, &cap, 5000, sizeof(*a)), 0);
	assert_int_equal(cap, 8192);
	assert_int_equal(a[999], 999 * 7);
	free(a);
}

static void test_overflow(void **state)
{
	char *a = NULL;
	size_t cap = 0;

	(void)state;
	printf("vt_grow: sizes that overflow, a zero element, a need past the limit are refused\n");
	assert_int_equal(vt_grow((void **)&a, &cap, SIZE_MAX / 8 + 1, 8), -ENOMEM);
	assert_int_equal(vt_grow((void **)&a, &cap, SIZE_MAX, 2), -ENOMEM);
	assert_int_equal(vt_grow((void **)&a, &cap, SIZE_MAX / 2 + 2, 1), -ENOMEM);
	assert_int_equal(vt_grow((void **)&a, &cap, 4, 0), -EINVAL);
	assert_null(a);
	assert_int_equal(cap, 0);
	/* Doubling stops at the limit; past it is -E2BIG, the array kept. */
	assert_int_equal(vt_grow_max((void **)&a, &cap, 20, 1, 100), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(vt_grow_max((void **)&a, &cap, 70, 1, 100), 0);
	assert_int_equal(cap, 100);
	memset(a, 'x', cap);
	assert_int_equal(vt_grow_max((void **)&a, &cap, 101, 1, 100), -E2BIG);
	assert_int_equal(cap, 100);
	assert_int_equal(a[99], 'x');
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
