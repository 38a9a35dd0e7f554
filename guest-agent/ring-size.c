// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * How big a CPU's ring buffer should be, from what the last look measured:
 * the arithmetic of ring.c's policy, kept apart so that a unit test
 * (test-ring-size) can check it without tracefs.
 *
 * The ring holds what the kernel wrote and the port has not taken yet. While
 * the kernel fills it faster than the port drains it, the backlog grows by
 * the difference; a burst that lasts RING_HORIZON_MS more would leave
 *	need = unread + (fill - drain) * RING_HORIZON_MS / 1000
 * bytes in it. Once need passes 3/4 of the ring (or the kernel overwrote
 * events since the last look), the ring grows to 3/2 of need, and at least
 * twice what it was, as far as the budget leaves room: few growths, as the
 * kernel stops the whole buffer for each (ring.c). Sizes are whole kernel
 * pages (a sub-buffer less its 16-byte header), as the kernel counts them:
 * it rounds a size up to whole pages, and a size rounded up would pass the
 * budget.
 * It never shrinks. A port that took nothing for RING_IDLE_PORT_MS gets no
 * growth: the host is not reading, and memory would only put the loss off.
 */
#include <stdint.h>

#include "agent.h"

/**
 * ring_size_kb() - the size a CPU's ring buffer should have now
 * @in: what was measured (see struct ring_in)
 * @why: set to why the size is what it is
 *
 * Return: the new buffer_size_kb, @in->cur_kb when it stays.
 */
unsigned int ring_size_kb(const struct ring_in *in, enum ring_why *why)
{
	uint64_t excess = in->fill_bps > in->drain_bps ? in->fill_bps - in->drain_bps : 0;
	uint64_t need = in->unread + excess * RING_HORIZON_MS / 1000;
	uint64_t page = in->page_bytes ? in->page_bytes : 4096;
	uint64_t cur = in->cur_kb, pages, room;

	*why = RING_KEEP;
	if (!in->lost && need <= cur * 1024 * 3 / 4)
		return in->cur_kb;
	if (in->port_idle) {
		*why = RING_PORT_IDLE;
		return in->cur_kb;
	}
	*why = in->lost && need <= cur * 1024 * 3 / 4 ? RING_OVERRUN : RING_BURST;
	if (need * 3 / 2 > cur * RING_MIN_GROWTH * 1024)
		pages = (need * 3 / 2 + page - 1) / page;
	else
		pages = (cur * RING_MIN_GROWTH * 1024 + page - 1) / page;
	room = (uint64_t)in->room_kb * 1024 / page;
	if (pages > room) {
		pages = room;
		*why = RING_CAPPED;
	}
	/* The kernel's own figure for that many pages, which it turns back into as many. */
	if (pages * page / 1024 <= cur)
		return in->cur_kb;
	return (unsigned int)(pages * page / 1024);
}
