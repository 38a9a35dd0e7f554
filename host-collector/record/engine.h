/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one event engine of `record` (engine.c): one thread and one io_uring
 * serve every port, stream, timer and signal; nothing else waits.
 */
#ifndef RECORD_ENGINE_H
#define RECORD_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engine;

/**
 * struct engine_timer - a timer, embedded in its owner
 * @when: deadline, engine_now_ns() clock
 * @period: 0 for one shot
 * @cb: called when it fires
 * @arg: for @cb
 * @armed: in the engine's list
 */
struct engine_timer {
	uint64_t when;
	uint64_t period;
	void (*cb)(void *arg);
	void *arg;
	bool armed;
	struct engine_timer *next;
};
struct engine_fd;

#define NSEC_PER_MSEC	1000000ull
#define NSEC_PER_SEC	1000000000ull

/* A reader's gate (engine_add_reader()): poll now; not this turn; never again. Else a time. */
#define ENGINE_POLL_NOW		0
#define ENGINE_POLL_NOT		UINT64_MAX
#define ENGINE_POLL_DONE	(UINT64_MAX - 1)

uint64_t engine_now_ns(void);
struct engine *engine_new(unsigned int entries);
void engine_free(struct engine *e);
struct engine_fd *engine_add_fd(struct engine *e, int fd, short events,
				bool (*cb)(void *arg, int revents), void *arg);
struct engine_fd *engine_add_reader(struct engine *e, int fd, bool (*cb)(void *arg, int revents),
				    uint64_t (*gate)(void *arg), void *arg);
uint8_t *engine_read_buffer(struct engine *e, size_t *size);
void engine_fd_enable(struct engine_fd *x, bool on);
void engine_fd_remove(struct engine_fd *x);
void engine_timer_init(struct engine_timer *t, void (*cb)(void *arg), void *arg);
void engine_timer_arm(struct engine *e, struct engine_timer *t, uint64_t delay_ns,
		      uint64_t period_ns);
void engine_timer_cancel(struct engine *e, struct engine_timer *t);
int engine_add_signals(struct engine *e, const sigset_t *mask, void (*cb)(void *arg, int signo),
		       void *arg);
void engine_writeback(struct engine *e, int fd, uint64_t off, uint64_t len);
int engine_run(struct engine *e, int timeout_ms);
int engine_loop(struct engine *e);
void engine_quit(struct engine *e);

#endif
