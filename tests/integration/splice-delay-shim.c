// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for test-agent's test_stop_race: a blocking splice()
 * (without SPLICE_F_NONBLOCK) sleeps VT_TEST_SPLICE_DELAY_MS first. A data
 * thread that has just found no stop asked then calls the kernel only after
 * the stop's wake-up came, which is the window the agent must survive: the
 * wake-up may come before the splice waits, and be lost. Tests only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

typedef ssize_t (*splice_fn)(int, loff_t *, int, loff_t *, size_t, unsigned int);

ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
	       unsigned int flags)
{
	static splice_fn real;
	const char *ms = getenv("VT_TEST_SPLICE_DELAY_MS");

	if (!real)
		real = (splice_fn)dlsym(RTLD_NEXT, "splice");
	if (ms && !(flags & SPLICE_F_NONBLOCK)) {
		long v = strtol(ms, NULL, 10);
		struct timespec ts = { .tv_sec = v / 1000, .tv_nsec = (v % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	return real(fd_in, off_in, fd_out, off_out, len, flags);
}
