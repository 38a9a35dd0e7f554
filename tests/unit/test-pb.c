// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --perfetto's protobuf encoder (report/pb.c): varints at their
 * boundaries, negative int32/int64 as ten bytes, nested messages whose
 * lengths are written minimal (the body moved down over the reserved bytes)
 * at every size class, and the bounds: a failure sticks, nesting deeper than
 * PB_MAX_DEPTH and an unbalanced end are refused, and the buffer is usable
 * again after pb_reset().
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pb.h"

static void test_varint(void **state)
{
	static const struct { uint64_t v; unsigned int n; uint8_t b[10]; } c[] = {
		{ 0, 1, { 0 } }, { 127, 1, { 0x7f } }, { 128, 2, { 0x80, 0x01 } },
		{ 300, 2, { 0xac, 0x02 } }, { 16383, 2, { 0xff, 0x7f } }, { 16384, 3, { 0x80, 0x80, 0x01 } },
		{ UINT64_MAX, 10, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 } },
	};
	uint8_t b[10];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		assert_int_equal(pb_varint_size(c[i].v), c[i].n);
		assert_int_equal(pb_put_varint(b, c[i].v), c[i].n);
		assert_memory_equal(b, c[i].b, c[i].n);
	}
}

static void test_fields(void **state)
{
	/* field 1 = 150, field 2 = -1 (int64), field 3 = "ab", field 98 = 1 (two-byte key) */
	static const uint8_t want[] = { 0x08, 0x96, 0x01,
					0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
					0x1a, 0x02, 'a', 'b', 0x90, 0x06, 0x01 };
	struct pb p;

	(void)state;
	pb_init(&p);
	pb_uint(&p, 1, 150);
	pb_int(&p, 2, -1);
	pb_str(&p, 3, "ab");
	pb_bool(&p, 98, 1);
	assert_int_equal(p.err, 0);
	assert_int_equal(p.len, sizeof(want));
	assert_memory_equal(p.buf, want, sizeof(want));
	pb_free(&p);
}

/* A nested message of @body bytes: its key, a minimal length, the body right after. */
static void nested(size_t body)
{
	uint8_t *data = malloc(body ? body : 1), hdr[8];
	size_t n, i;
	struct pb p;

	for (i = 0; i < body; i++)
		data[i] = (uint8_t)(i * 7);
	pb_init(&p);
	pb_begin(&p, 1);
	pb_raw(&p, data, body);
	pb_end(&p);
	assert_int_equal(p.err, 0);
	hdr[0] = 0x0a;
	n = 1 + pb_put_varint(hdr + 1, body);
	assert_int_equal(p.len, n + body);
	assert_memory_equal(p.buf, hdr, n);
	if (body)
		assert_memory_equal(p.buf + n, data, body);
	pb_free(&p);
	free(data);
}

static void test_nested_sizes(void **state)
{
	(void)state;
	nested(0);
	nested(1);
	nested(127);
	nested(128);
	nested(16383);
	nested(16384);
	nested(2097151);
	nested(2097152);
}

static void test_nested_deep(void **state)
{
	/* { 1: { 2: { 3: 5 } }, 4: 6 }: inner lengths fixed before the outer ones */
	static const uint8_t want[] = { 0x0a, 0x04, 0x12, 0x02, 0x18, 0x05, 0x20, 0x06 };
	struct pb p;

	(void)state;
	pb_init(&p);
	pb_begin(&p, 1);
	pb_begin(&p, 2);
	pb_uint(&p, 3, 5);
	pb_end(&p);
	pb_end(&p);
	pb_uint(&p, 4, 6);
	assert_int_equal(p.err, 0);
	assert_int_equal(p.len, sizeof(want));
	assert_memory_equal(p.buf, want, sizeof(want));
	pb_free(&p);
}

static void test_bounds(void **state)
{
	struct pb p;
	int i;

	(void)state;
	pb_init(&p);
	for (i = 0; i < PB_MAX_DEPTH; i++)
		pb_begin(&p, 1);
	assert_int_equal(p.err, 0);
	pb_begin(&p, 1);
	assert_int_equal(p.err, -EOVERFLOW);
	/* sticky: nothing more is written */
	i = (int)p.len;
	pb_uint(&p, 1, 1);
	assert_int_equal((int)p.len, i);
	pb_reset(&p);
	assert_int_equal(p.err, 0);
	assert_int_equal(p.len, 0);
	pb_end(&p);
	assert_int_equal(p.err, -EINVAL);
	pb_reset(&p);
	pb_bytes(&p, 1, "", (size_t)PB_MAX_LEN + 1);
	assert_int_equal(p.err, -E2BIG);
	pb_reset(&p);
	pb_uint(&p, 1, 1);
	assert_int_equal(p.err, 0);
	assert_int_equal(p.len, 2);
	pb_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_nested_sizes),
		cmocka_unit_test(test_nested_deep),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
