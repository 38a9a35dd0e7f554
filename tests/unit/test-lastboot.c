// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The last-boot bundle codec: a round trip, and every truncation and a few
 * lies (CPU count, a CPU twice, bytes left over) refused as -EBADMSG.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vt_lastboot.h"
#include "vt_le.h"

static struct vt_lastboot lb, out;

static void make(void **blob, size_t *len)
{
	static uint8_t pages0[8192], pages1[4096];
	static const uint8_t meta[] = "not really a meta bundle";

	memset(&lb, 0, sizeof(lb));
	memset(pages0, 0xa5, sizeof(pages0));
	memset(pages1, 0x5a, sizeof(pages1));
	lb.name = "vtlast";
	lb.name_len = 6;
	lb.info = "text delta:\t0\ndata delta:\t0\n";
	lb.info_len = strlen(lb.info);
	lb.meta = meta;
	lb.meta_len = sizeof(meta);
	lb.nr_cpus = 2;
	lb.cpus[0] = (struct vt_lastboot_cpu){ .cpu = 0, .data = pages0, .len = sizeof(pages0) };
	lb.cpus[1] = (struct vt_lastboot_cpu){ .cpu = 1, .data = pages1, .len = sizeof(pages1) };
	assert_int_equal(vt_lastboot_encode(&lb, blob, len), 0);
}

static void test_roundtrip(void **state)
{
	size_t len;
	void *blob;

	make(&blob, &len);
	assert_int_equal(vt_lastboot_decode(&out, blob, len), 0);
	assert_int_equal(out.name_len, 6);
	assert_memory_equal(out.name, "vtlast", 6);
	assert_int_equal(out.info_len, lb.info_len);
	assert_int_equal(out.meta_len, lb.meta_len);
	assert_memory_equal(out.meta, lb.meta, lb.meta_len);
	assert_int_equal(out.nr_cpus, 2);
	assert_int_equal(out.cpus[1].cpu, 1);
	assert_int_equal(out.cpus[0].len, 8192);
	assert_memory_equal(out.cpus[1].data, lb.cpus[1].data, 4096);
	free(blob);
}

static void test_hostile(void **state)
{
	uint8_t *b;
	size_t len, n;
	void *blob;

	make(&blob, &len);
	b = blob;
	for (n = 0; n < len; n += n < 64 ? 1 : 509)
		assert_int_equal(vt_lastboot_decode(&out, b, n), -EBADMSG);
	/* One byte too many. */
	b = realloc(b, len + 1);
	assert_non_null(b);
	assert_int_equal(vt_lastboot_decode(&out, b, len + 1), -EBADMSG);
	/* A CPU count past the limit, and one more than there are. */
	vt_put_le32(b + 8, VT_LASTBOOT_MAX_CPUS + 1);
	assert_int_equal(vt_lastboot_decode(&out, b, len), -EBADMSG);
	vt_put_le32(b + 8, 3);
	assert_int_equal(vt_lastboot_decode(&out, b, len), -EBADMSG);
	vt_put_le32(b + 8, 2);
	/* The second CPU claims to be the first. */
	vt_put_le32(b + len - 4096 - 12, 0);
	assert_int_equal(vt_lastboot_decode(&out, b, len), -EBADMSG);
	vt_put_le32(b + len - 4096 - 12, 1);
	/* A page length reaching past the end. */
	vt_put_le64(b + len - 4096 - 8, 1ull << 40);
	assert_int_equal(vt_lastboot_decode(&out, b, len), -EBADMSG);
	vt_put_le64(b + len - 4096 - 8, 4096);
	assert_int_equal(vt_lastboot_decode(&out, b, len), 0);
	memcpy(b, "VTLX", 4);
	assert_int_equal(vt_lastboot_decode(&out, b, len), -EBADMSG);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests_name("last-boot bundle codec", tests, NULL, NULL);
}
