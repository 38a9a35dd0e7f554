// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ring_size_kb(), trace-agent's sizing of a CPU's ring buffer: it stays while
 * the backlog a burst would leave in RING_HORIZON_MS fits in 3/4 of it; past
 * that, or after an overrun, it grows to 3/2 of that backlog (at least twice
 * its size) in whole kernel pages, never past what the budget leaves it once
 * the kernel rounds it up, and not at all for a port that takes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "agent.h"

#define MB	1000000ull

static unsigned int size(unsigned int cur, unsigned int room, uint64_t unread, uint64_t fill,
			 uint64_t drain, bool lost, enum ring_why *why)
{
	struct ring_in in = { .cur_kb = cur, .room_kb = room, .unread = unread,
			      .fill_bps = fill, .drain_bps = drain, .lost = lost };

	return ring_size_kb(&in, why);
}

static void test_keep(void **state)
{
	enum ring_why why;

	(void)state;
	printf("ring_size_kb: a drain that keeps up keeps the size\n");
	assert_int_equal(size(1408, 65536, 200 << 10, 50 * MB, 50 * MB, false, &why), 1408);
	assert_int_equal(why, RING_KEEP);
	/* The drain faster than the fill: nothing to hold. */
	assert_int_equal(size(1408, 65536, 0, 1 * MB, 9 * MB, false, &why), 1408);
	assert_int_equal(why, RING_KEEP);
	/* need = 3/4 of 1408 KiB exactly: 1081344 bytes, 24576 unread + 1056768 in a second. */
	assert_int_equal(size(1408, 65536, 24576, 1056768 + 4096, 4096, false, &why), 1408);
	assert_int_equal(why, RING_KEEP);
	/* One byte more: it grows, and 3/2 of need (1584 KiB) is under twice 1408. */
	assert_int_equal(size(1408, 65536, 24577, 1056768 + 4096, 4096, false, &why), 2816);
	assert_int_equal(why, RING_BURST);
}

static void test_burst(void **state)
{
	enum ring_why why;

	(void)state;
	printf("ring_size_kb: a burst grows it to 3/2 of the backlog of a second more, in pages\n");
	/* 512 KiB unread, 16 MB/s more than the port takes: 3/2 * (524288 + 16e6) B = 6052 pages. */
	assert_int_equal(size(1408, 65536, 512 << 10, 20 * MB, 4 * MB, false, &why), 24208);
	assert_int_equal(why, RING_BURST);
	/* An overrun with little backlog: twice the size. */
	assert_int_equal(size(1408, 65536, 100 << 10, 5 * MB, 5 * MB, true, &why), 2816);
	assert_int_equal(why, RING_OVERRUN);
	/* An overrun during a burst is a burst. */
	assert_int_equal(size(1408, 65536, 512 << 10, 20 * MB, 4 * MB, true, &why), 24208);
	assert_int_equal(why, RING_BURST);
}

static void test_budget(void **state)
{
	enum ring_why why;

	(void)state;
	printf("ring_size_kb: the budget's room caps it, in whole pages; a port that takes nothing stops it\n");
	assert_int_equal(size(1408, 8190, 512 << 10, 20 * MB, 4 * MB, false, &why), 8188);
	assert_int_equal(why, RING_CAPPED);
	assert_int_equal(size(1408, 1408, 512 << 10, 20 * MB, 4 * MB, false, &why), 1408);
	assert_int_equal(why, RING_CAPPED);
	/* Room for less than a page more: it stays. */
	assert_int_equal(size(1408, 1411, 0, 0, 0, true, &why), 1408);
	assert_int_equal(why, RING_CAPPED);
	/* A fill of 4 TB/s does not overflow: the room caps it. */
	assert_int_equal(size(4096, UINT32_MAX, 0, 1ull << 42, 0, false, &why), UINT32_MAX / 4 * 4);
	assert_int_equal(why, RING_CAPPED);
	{
		struct ring_in in = { .cur_kb = 1408, .room_kb = 65536, .unread = 1 << 20,
				      .fill_bps = 20 * MB, .lost = true, .port_idle = true };

		assert_int_equal(ring_size_kb(&in, &why), 1408);
		assert_int_equal(why, RING_PORT_IDLE);
	}
	{
		/*
		 * 4096-byte sub-buffers hold 4080 bytes: the kernel says 67 KiB for 64 (17
		 * pages). Twice that is 34 pages, 135 KiB; a room of 445 KiB holds 111 pages,
		 * 442 KiB, which the kernel rounds up to 111 pages again, not past 445.
		 */
		struct ring_in in = { .cur_kb = 67, .room_kb = 445, .unread = 1 << 10,
				      .fill_bps = 0, .lost = true, .page_bytes = 4080 };

		assert_int_equal(ring_size_kb(&in, &why), 135);
		assert_int_equal(why, RING_OVERRUN);
		in.fill_bps = 20 * MB;
		assert_int_equal(ring_size_kb(&in, &why), 442);
		assert_int_equal(why, RING_CAPPED);
		assert_true((442 * 1024 + 4079) / 4080 * 4080 / 1024 <= 445);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
