/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Deadlines for the pthread calls that take an absolute CLOCK_REALTIME time
 * (pthread_cond_timedwait(), pthread_timedjoin_np()), and a monotonic clock
 * for intervals.
 */
#ifndef VT_TIME_H
#define VT_TIME_H

#include <time.h>

/* @ts: now (CLOCK_REALTIME) plus @ms milliseconds, @ms below 1000. */
static inline void vt_deadline_ms(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_nsec += ms * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* CLOCK_MONOTONIC in milliseconds: intervals only. */
static inline long long vt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
