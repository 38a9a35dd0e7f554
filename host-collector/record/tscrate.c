// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The host TSC rate for TSC2NSEC: the kernel's own (the perf mmap page's
 * time_mult/time_shift), else measured against CLOCK_MONOTONIC_RAW.
 * Host-only I/O, hence not in lib/; the arithmetic is lib/tsync-tsc.c's.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "hostclock.h"

/**
 * vt_tsc_rate_method_name() - a word for the manifest
 * @m: the method
 *
 * Return: "perf", "calibrated" or "none".
 */
const char *vt_tsc_rate_method_name(enum vt_tsc_rate_method m)
{
	switch (m) {
	case VT_TSC_RATE_PERF:
		return "perf";
	case VT_TSC_RATE_CALIBRATED:
		return "calibrated";
	default:
		return "none";
	}
}

/**
 * vt_tsc2nsec_from_perf() - the kernel's TSC rate, from a perf mmap page
 * @t: filled in, method VT_TSC_RATE_PERF
 *
 * Opens a software event on this thread, maps its first page and reads
 * time_mult and time_shift under the page's seqlock; reduces them to what
 * trace-cmd can use (mult < 2^31, shift <= 32).
 *
 * Return: 0, -EOPNOTSUPP when the page does not offer cap_user_time, or
 * -errno from perf_event_open() (a locked-down kernel says EACCES/EPERM).
 */
int vt_tsc2nsec_from_perf(struct vt_tsc2nsec *t)
{
	struct perf_event_attr attr;
	volatile struct perf_event_mmap_page *pc;
	uint32_t seq, mult = 0, shift = 0;
	bool cap = false;
	long psz = sysconf(_SC_PAGESIZE);
	void *map;
	int fd, ret, tries;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	map = mmap(NULL, psz, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_close_fd;
	}
	pc = map;
	for (tries = 0; tries < 1000; tries++) {
		seq = pc->lock;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		cap = pc->cap_user_time;
		mult = pc->time_mult;
		shift = pc->time_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (pc->lock == seq && !(seq & 1))
			break;
	}
	ret = tries == 1000 ? -EAGAIN : (cap && mult ? 0 : -EOPNOTSUPP);
	if (ret == 0)
		ret = vt_tsc2nsec_fit(t, mult, shift);
	if (ret == 0)
		t->method = VT_TSC_RATE_PERF;
	munmap(map, psz);
err_close_fd:
	close(fd);
	return ret;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* A CLOCK_MONOTONIC_RAW reading and the TSC at it (best of a few brackets). */
static int tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t a, b, best = UINT64_MAX;
	struct timespec now;
	int i;

	for (i = 0; i < 16; i++) {
		a = vt_tsc_read();
		if (clock_gettime(CLOCK_MONOTONIC_RAW, &now) < 0)
			return -errno;
		b = vt_tsc_read();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = ts_ns(&now);
		}
	}
	return best == UINT64_MAX || !*tsc ? -EOPNOTSUPP : 0;
}

/**
 * vt_tsc2nsec_calibrate() - measure the TSC rate against CLOCK_MONOTONIC_RAW
 * @t: filled in, method VT_TSC_RATE_CALIBRATED
 * @ms: how long to measure (100 gives about 1 ppm)
 *
 * Return: 0, -EINVAL for @ms 0, -EOPNOTSUPP without a TSC, -ERANGE for an
 * absurd rate, or -errno.
 */
int vt_tsc2nsec_calibrate(struct vt_tsc2nsec *t, unsigned int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
	uint64_t t0, n0, t1, n1;
	unsigned __int128 hz;
	int ret;

	if (!ms)
		return -EINVAL;
	ret = tsc_pair(&t0, &n0);
	if (ret < 0)
		return ret;
	while (nanosleep(&d, &d) < 0)
		if (errno != EINTR)
			return -errno;
	ret = tsc_pair(&t1, &n1);
	if (ret < 0)
		return ret;
	if (n1 <= n0 || t1 <= t0)
		return -ERANGE;
	hz = ((unsigned __int128)(t1 - t0) * 1000000000u + (n1 - n0) / 2) / (n1 - n0);
	if (hz > UINT64_MAX)
		return -ERANGE;
	ret = vt_tsc2nsec_from_hz(t, (uint64_t)hz);
	if (ret == 0)
		t->method = VT_TSC_RATE_CALIBRATED;
	return ret;
}

/**
 * vt_tsc2nsec_get() - the host TSC rate, perf first, else calibrated
 * @t: filled in; @t->method says which
 * @calibrate_ms: measuring time if perf is refused
 *
 * Return: 0, or as vt_tsc2nsec_calibrate().
 */
int vt_tsc2nsec_get(struct vt_tsc2nsec *t, unsigned int calibrate_ms)
{
	memset(t, 0, sizeof(*t));
	if (vt_tsc2nsec_from_perf(t) == 0)
		return 0;
	return vt_tsc2nsec_calibrate(t, calibrate_ms);
}
