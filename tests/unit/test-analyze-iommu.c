// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --iommu on synthetic events: DMA mappings are credited to a domain
 * (and its device) only while it is the one domain that could have made them,
 * sizes land in the right histogram bins, a far unmap:map ratio and
 * single-page unmaps inside larger mappings are flagged, and the topology at
 * the start is worked out from the end snapshot and the group events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analyze.h"

#define SZ_4K	4096ull
#define SZ_2M	(2ull << 20)
#define SZ_1G	(1ull << 30)

static const char snap[] =
	"0 identity 0000:00:00.0\n"
	"1 DMA-FQ 0000:00:02.0\n"
	"2 DMA 0000:00:05.0\n"
	"garbage line\n"
	"3\n";

static void maps(struct iommu_an *a, unsigned int n, uint64_t iova, uint64_t size)
{
	while (n--) {
		iommu_an_map(a, iova, 0x1000, size);
		iova += size;
	}
}

static void test_attribution(void **state)
{
	struct iommu_an *a = iommu_an_new();
	const struct iommu_counts *c;

	assert_non_null(a);
	assert_int_equal(iommu_an_snapshot(a, snap, strlen(snap)), 0);
	/* 00:05.0 was added during the recording: before it, 00:02.0 was the only DMA domain. */
	maps(a, 3, 0x100000, SZ_4K);
	assert_int_equal(iommu_an_group(a, 100, true, 2, "0000:00:05.0"), 0);
	assert_int_equal(iommu_an_attach(a, 101, true, "0000:00:05.0"), 0);
	maps(a, 5, 0x200000, SZ_4K);		/* two DMA domains: ambiguous */
	iommu_an_unmap(a, 0x200000, SZ_4K, SZ_4K);
	assert_int_equal(iommu_an_group(a, 200, false, 1, "0000:00:02.0"), 0);
	assert_int_equal(iommu_an_group(a, 201, true, 1, "0000:00:02.0"), 0);
	assert_int_equal(iommu_an_group(a, 202, false, 1, "0000:00:02.0"), 0);
	maps(a, 7, 0x300000, SZ_2M);		/* only 00:05.0 is left */
	assert_int_equal(iommu_an_finish(a), 0);

	c = iommu_an_domain(a, 1);
	assert_non_null(c);
	assert_int_equal(c->maps, 3);
	assert_int_equal(c->map_bytes, 3 * SZ_4K);
	c = iommu_an_device(a, "0000:00:02.0");
	assert_non_null(c);
	assert_int_equal(c->maps, 3);
	c = iommu_an_domain(a, 2);
	assert_non_null(c);
	assert_int_equal(c->maps, 7);
	assert_int_equal(c->map_hist[IOMMU_HIST_2M], 7);
	assert_int_equal(iommu_an_device(a, "0000:00:05.0")->maps, 7);
	c = iommu_an_unattributed(a);
	assert_int_equal(c->maps, 5);
	assert_int_equal(c->unmaps, 1);
	assert_int_equal(c->unmap_bytes, SZ_4K);
	/* The identity domain's device is never credited. */
	assert_null(iommu_an_device(a, "0000:00:00.0"));
	assert_null(iommu_an_domain(a, 0));
	iommu_an_free(a);
}

static void test_histogram_and_still_mapped(void **state)
{
	struct iommu_an *a = iommu_an_new();
	const struct iommu_counts *c;

	assert_non_null(a);
	/* No snapshot, no group events: nothing can be attributed. */
	iommu_an_map(a, 0x10000, 0, SZ_4K);
	iommu_an_map(a, 0x200000, 0, SZ_2M);
	iommu_an_map(a, 0x40000000, 0, SZ_1G);
	iommu_an_map(a, 0x80000000, 0, 3 * SZ_4K);
	iommu_an_map(a, 0x90000000, 0, 0);
	iommu_an_unmap(a, 0x10000, SZ_4K, SZ_4K);
	iommu_an_unmap(a, 0x200000, SZ_2M, SZ_2M);
	assert_int_equal(iommu_an_finish(a), 0);
	c = iommu_an_unattributed(a);
	assert_int_equal(c->maps, 5);
	assert_int_equal(c->map_hist[IOMMU_HIST_4K], 1);
	assert_int_equal(c->map_hist[IOMMU_HIST_2M], 1);
	assert_int_equal(c->map_hist[IOMMU_HIST_1G], 1);
	assert_int_equal(c->map_hist[IOMMU_HIST_OTHER], 2);
	assert_int_equal(c->unmap_hist[IOMMU_HIST_4K], 1);
	assert_int_equal(c->unmap_hist[IOMMU_HIST_2M], 1);
	assert_int_equal(c->map_bytes - c->unmap_bytes, SZ_1G + 3 * SZ_4K);
	assert_int_equal(c->split_unmaps, 0);
	assert_int_equal(iommu_an_nr_flags(a, "ratio"), 0);
	iommu_an_free(a);
}

static void test_ratio_flag(void **state)
{
	struct iommu_an *a = iommu_an_new();
	struct iommu_an *b = iommu_an_new();
	unsigned int i;

	assert_non_null(a);
	assert_non_null(b);
	/* 100 maps, 300 unmaps: ratio 3, flagged. */
	for (i = 0; i < 100; i++) {
		iommu_an_map(a, 0x100000 + i * SZ_4K, 0, SZ_4K);
		iommu_an_unmap(a, 0x100000 + i * SZ_4K, SZ_4K, SZ_4K);
		iommu_an_unmap(a, 0x900000, SZ_4K, 0);
		iommu_an_unmap(a, 0x900000, SZ_4K, 0);
	}
	/* 100 maps, 100 unmaps: not flagged. */
	for (i = 0; i < 100; i++) {
		iommu_an_map(b, 0x100000, 0, SZ_4K);
		iommu_an_unmap(b, 0x100000, SZ_4K, SZ_4K);
	}
	iommu_an_finish(a);
	iommu_an_finish(b);
	assert_int_equal(iommu_an_nr_flags(a, "ratio"), 1);
	assert_int_equal(iommu_an_nr_flags(b, "ratio"), 0);
	assert_int_equal(iommu_an_unattributed(b)->map_bytes, iommu_an_unattributed(b)->unmap_bytes);
	iommu_an_free(a);
	iommu_an_free(b);
}

static void test_split_unmaps_and_faults(void **state)
{
	struct iommu_an *a = iommu_an_new();
	unsigned int i;

	assert_non_null(a);
	iommu_an_map(a, 0x40000000, 0, SZ_2M);
	for (i = 0; i < 512; i++)
		iommu_an_unmap(a, 0x40000000 + i * SZ_4K, SZ_4K, SZ_4K);
	/* The mapping is gone: an unmap of it now is no split. */
	iommu_an_unmap(a, 0x40000000, SZ_4K, SZ_4K);
	assert_int_equal(iommu_an_fault(a, 7, "0000:00:05.0", "e1000", 0xdead000, 2), 0);
	iommu_an_finish(a);
	assert_int_equal(iommu_an_unattributed(a)->split_unmaps, 511);
	assert_int_equal(iommu_an_nr_flags(a, "split"), 1);
	assert_int_equal(iommu_an_nr_flags(a, "fault"), 1);
	iommu_an_free(a);
}

static void test_topology_without_snapshot(void **state)
{
	struct iommu_an *a = iommu_an_new();

	assert_non_null(a);
	/* Removed first: it was there at the start, the only DMA domain then. */
	maps(a, 2, 0x1000, SZ_4K);
	assert_int_equal(iommu_an_group(a, 10, false, 4, "0000:00:07.0"), 0);
	maps(a, 3, 0x1000, SZ_4K);
	iommu_an_finish(a);
	assert_int_equal(iommu_an_device(a, "0000:00:07.0")->maps, 2);
	assert_int_equal(iommu_an_unattributed(a)->maps, 3);
	/* Hostile values are bounded, not trusted. */
	assert_int_equal(iommu_an_group(a, 11, true, -5, "x"), 0);
	assert_int_equal(iommu_an_group(a, 11, true, 1ll << 40, "x"), 0);
	iommu_an_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_histogram_and_still_mapped),
		cmocka_unit_test(test_ratio_flag),
		cmocka_unit_test(test_split_unmaps_and_faults),
		cmocka_unit_test(test_topology_without_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
