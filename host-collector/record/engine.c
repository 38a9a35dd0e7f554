// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The event engine: one thread, one io_uring, and everything that waits.
 *
 * It holds two kinds of things, in the spirit of chrony's sched.c, and
 * knows nothing of their owners:
 *  - fd watches: a callback when an fd is readable (or, for a write watch,
 *    writable while the owner asks for it): control ports, QMP, the
 *    signalfd; a watch may have a gate its owner answers before each poll
 *    (poll now, not before a time, not now, never again): the streams
 *    (stream.c) rest that way between drains, and read into the engine's
 *    one read buffer (engine_read_buffer());
 *  - timers, one-shot or periodic, kept in a list sorted by deadline and
 *    embedded in their owners (no allocation, cancel is O(n) over a few).
 *
 * engine_loop() runs until engine_quit(); nothing else in the collector
 * loops or sleeps. Polling rather than queued reads keeps every kind of fd
 * (FIFO, socket, pipe) from ever blocking the thread; 16 guests x 4 vCPUs
 * cost one io_uring_enter() per turn.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "engine.h"
#include "vt_grow.h"

struct engine_fd {
	int fd;
	short events;
	bool enabled;
	bool (*cb)(void *arg, int revents);
	uint64_t (*gate)(void *arg);	/* engine_add_reader(): when to poll */
	void *arg;
	bool inflight;
	bool done;
};

/* The one buffer every reader reads into: 64 streams once held 256 KiB each. */
#define RBUF_SIZE	(256u << 10)
/* Timeout requests in flight that the engine keeps track of (the rest only end a wait early). */
#define TIMEOUTS_MAX	8
/*
 * engine_loop()'s longest wait: every timer and gate shortens it, nothing else
 * needs a turn, and an idle recording (a daemon's held or quiet guest) should
 * not wake for nothing.
 */
#define IDLE_WAIT_MS	60000

struct engine {
	struct io_uring ring;
	uint8_t *rbuf;
	struct engine_fd **ents;
	unsigned int nr, cap;
	struct engine_timer *timers;	/* sorted by deadline */
	uint64_t timeouts[TIMEOUTS_MAX];	/* when our timeout requests in flight end */
	unsigned int nr_timeouts;
	struct __kernel_timespec timer;
	bool quit;
	int sig_fd;
	struct engine_fd *sig_ent;
	void (*sig_cb)(void *arg, int signo);
	void *sig_arg;
};

/*
 * The user_data of the engine's own timeouts: (when they end << 2) | 3, never
 * a struct engine_fd (aligned) nor WRITEBACK_TAG.
 */
#define TIMER_BITS	3ull
/* The user_data of a writeback request (engine_writeback()): nothing waits for it. */
#define WRITEBACK_TAG	((void *)2)
/* The user_data of a timeout's removal (drop_early_timeouts()): nothing waits for it either. */
#define REMOVE_TAG	((void *)4)
/* A wait this long is an idle one: timeouts that would end it early are removed first. */
#define LONG_WAIT_MS		1000

/**
 * engine_now_ns() - the engine's clock (CLOCK_MONOTONIC)
 *
 * Return: nanoseconds.
 */
uint64_t engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/**
 * engine_new() - make the engine
 * @entries: submission queue size (at least the number of streams)
 *
 * Return: the engine, or NULL with errno set.
 */
struct engine *engine_new(unsigned int entries)
{
	struct engine *e = calloc(1, sizeof(*e));
	int ret;

	if (!e)
		return NULL;
	e->sig_fd = -1;
	e->rbuf = malloc(RBUF_SIZE);
	if (!e->rbuf) {
		free(e);
		return NULL;
	}
	ret = io_uring_queue_init(entries, &e->ring, 0);
	if (ret < 0) {
		free(e->rbuf);
		free(e);
		errno = -ret;
		return NULL;
	}
	return e;
}

/**
 * engine_free() - cancel outstanding polls and free the engine
 * @e: the engine, or NULL
 *
 * Timers still armed are forgotten (their owners may be freed next).
 */
void engine_free(struct engine *e)
{
	unsigned int i;

	if (!e)
		return;
	io_uring_queue_exit(&e->ring);
	for (i = 0; i < e->nr; i++)
		free(e->ents[i]);
	for (struct engine_timer *t = e->timers; t; t = t->next)
		t->armed = false;
	if (e->sig_fd >= 0)
		close(e->sig_fd);
	free(e->ents);
	free(e->rbuf);
	free(e);
}

static struct engine_fd *add_ent(struct engine *e, int fd)
{
	size_t cap = e->cap;
	struct engine_fd *x;

	if (vt_grow((void **)&e->ents, &cap, e->nr + 1, sizeof(*e->ents)) < 0)
		return NULL;
	e->cap = cap;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->fd = fd;
	x->events = POLLIN;
	x->enabled = true;
	e->ents[e->nr++] = x;
	return x;
}

/* A free submission entry, the queued ones submitted first when there is none; NULL if still none. */
static struct io_uring_sqe *get_sqe(struct engine *e)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);

	if (!sqe) {
		io_uring_submit(&e->ring);
		sqe = io_uring_get_sqe(&e->ring);
	}
	return sqe;
}

/**
 * engine_writeback() - start writing a file range back, without waiting
 * @e: the engine
 * @fd: the file
 * @off: from
 * @len: bytes
 *
 * Queues sync_file_range(SYNC_FILE_RANGE_WRITE); the next turn submits it.
 * io_uring's workers may block in the filesystem where the engine thread
 * must not.
 */
void engine_writeback(struct engine *e, int fd, uint64_t off, uint64_t len)
{
	struct io_uring_sqe *sqe = get_sqe(e);

	if (!sqe)
		return;	/* the kernel's own writeback will do */
	io_uring_prep_sync_file_range(sqe, fd, (unsigned int)(len < UINT32_MAX ? len : UINT32_MAX),
				      off, SYNC_FILE_RANGE_WRITE);
	io_uring_sqe_set_data(sqe, WRITEBACK_TAG);
}

/**
 * engine_add_fd() - watch an fd
 * @e: the engine
 * @fd: the fd, non-blocking
 * @events: POLLIN (read watch) or POLLOUT (write watch, off until
 *	engine_fd_enable())
 * @cb: called with the poll revents; it does the I/O itself and returns
 *	false to stop watching
 * @arg: passed to @cb
 *
 * Return: the watch, or NULL (-ENOMEM) with errno set.
 */
struct engine_fd *engine_add_fd(struct engine *e, int fd, short events,
				bool (*cb)(void *arg, int revents), void *arg)
{
	struct engine_fd *x = add_ent(e, fd);

	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->events = events;
	x->enabled = !(events & POLLOUT);
	x->cb = cb;
	x->arg = arg;
	return x;
}

/**
 * engine_add_reader() - watch an fd that its owner paces
 * @e: the engine
 * @fd: the fd, non-blocking
 * @cb: called with the poll revents when it is readable; it reads itself
 *	(into engine_read_buffer(), say) and returns false to stop watching
 * @gate: asked before each poll: ENGINE_POLL_NOW, a time (engine_now_ns())
 *	before which no poll (the engine wakes for it), ENGINE_POLL_NOT (not
 *	this turn), or ENGINE_POLL_DONE (the watch is dropped)
 * @arg: passed to @cb and @gate; it must outlive the engine or answer
 *	ENGINE_POLL_DONE first
 *
 * Return: the watch, or NULL (-ENOMEM) with errno set.
 */
struct engine_fd *engine_add_reader(struct engine *e, int fd, bool (*cb)(void *arg, int revents),
				    uint64_t (*gate)(void *arg), void *arg)
{
	struct engine_fd *x = engine_add_fd(e, fd, POLLIN, cb, arg);

	if (x)
		x->gate = gate;
	return x;
}

/**
 * engine_read_buffer() - the one buffer readers read into, between two turns
 * @e: the engine
 * @size: set to its size
 *
 * Return: the buffer; what it holds is gone once the callback returns.
 */
uint8_t *engine_read_buffer(struct engine *e, size_t *size)
{
	*size = RBUF_SIZE;
	return e->rbuf;
}

/**
 * engine_fd_enable() - turn a watch on or off (a write watch: while there is
 * something to write)
 * @x: the watch, or NULL
 * @on: whether it is wanted
 */
void engine_fd_enable(struct engine_fd *x, bool on)
{
	if (x)
		x->enabled = on;
}

/**
 * engine_fd_remove() - stop watching (a poll in flight completes unseen)
 * @x: the watch, or NULL
 */
void engine_fd_remove(struct engine_fd *x)
{
	if (x)
		x->done = true;
}

/* --- timers --- */

/**
 * engine_timer_init() - prepare a timer embedded in its owner
 * @t: the timer
 * @cb: called when it fires (a periodic timer is re-armed before)
 * @arg: passed to @cb
 */
void engine_timer_init(struct engine_timer *t, void (*cb)(void *arg), void *arg)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->arg = arg;
}

static void timer_unlink(struct engine *e, struct engine_timer *t)
{
	struct engine_timer **p;

	for (p = &e->timers; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	t->next = NULL;
	t->armed = false;
}

static void timer_insert(struct engine *e, struct engine_timer *t)
{
	struct engine_timer **p = &e->timers;

	while (*p && (*p)->when <= t->when)
		p = &(*p)->next;
	t->next = *p;
	*p = t;
	t->armed = true;
}

/**
 * engine_timer_arm() - (re)arm a timer
 * @e: the engine
 * @t: the timer
 * @delay_ns: from now
 * @period_ns: 0 for one shot, else fire every @period_ns after the first
 */
void engine_timer_arm(struct engine *e, struct engine_timer *t, uint64_t delay_ns,
		      uint64_t period_ns)
{
	if (t->armed)
		timer_unlink(e, t);
	t->when = engine_now_ns() + delay_ns;
	t->period = period_ns;
	timer_insert(e, t);
}

/**
 * engine_timer_cancel() - disarm a timer; harmless when it is not armed
 * @e: the engine
 * @t: the timer
 */
void engine_timer_cancel(struct engine *e, struct engine_timer *t)
{
	if (t->armed)
		timer_unlink(e, t);
}

/* Fire what is due; a callback may arm or cancel any timer, itself included. */
static void run_timers(struct engine *e)
{
	uint64_t now = engine_now_ns();
	unsigned int n = 0;

	while (e->timers && e->timers->when <= now && n++ < 1024) {
		struct engine_timer *t = e->timers;

		timer_unlink(e, t);
		if (t->period) {
			t->when += t->period;
			if (t->when <= now)
				t->when = now + t->period;	/* late: no burst of catch-ups */
			timer_insert(e, t);
		}
		t->cb(t->arg);
	}
}

/* --- signals --- */

static bool signal_readable(void *arg, int revents)
{
	struct engine *e = arg;
	struct signalfd_siginfo si;

	(void)revents;
	while (read(e->sig_fd, &si, sizeof(si)) == sizeof(si))
		e->sig_cb(e->sig_arg, (int)si.ssi_signo);
	return true;
}

/**
 * engine_add_signals() - take @mask's signals through the engine
 * @e: the engine
 * @mask: the signals; they are blocked for the process
 * @cb: called once per signal received, from the loop
 * @arg: passed to @cb
 *
 * Return: 0 or -errno.
 */
int engine_add_signals(struct engine *e, const sigset_t *mask, void (*cb)(void *arg, int signo),
		       void *arg)
{
	int sig;

	/*
	 * An ignored signal is discarded before it could be blocked: a shell
	 * starts background jobs with SIGINT ignored, and `kill -INT` would
	 * never reach the signalfd.
	 */
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(mask, sig) == 1)
			signal(sig, SIG_DFL);
	if (sigprocmask(SIG_BLOCK, mask, NULL) < 0)
		return -errno;
	e->sig_fd = signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (e->sig_fd < 0)
		return -errno;
	e->sig_cb = cb;
	e->sig_arg = arg;
	e->sig_ent = engine_add_fd(e, e->sig_fd, POLLIN, signal_readable, e);
	return e->sig_ent ? 0 : -ENOMEM;
}

/* --- the loop --- */

/* Shorten a wait of *@timeout_ms to end by @when (rounded up to the next ms). */
static void wait_until(int *timeout_ms, uint64_t when, uint64_t now)
{
	uint64_t due = when > now ? (when - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC : 0;

	if (due < (uint64_t)*timeout_ms)
		*timeout_ms = (int)due;
}

/*
 * Whether @x is polled this turn; a gate that says "not before" shortens
 * the wait to then, one that says "never again" drops the watch.
 */
static bool ent_wants_poll(struct engine_fd *x, uint64_t now, int *timeout_ms)
{
	uint64_t when;

	if (x->inflight || x->done || !x->enabled)
		return false;
	if (!x->gate)
		return true;
	when = x->gate(x->arg);
	if (when == ENGINE_POLL_DONE) {
		x->done = true;
		return false;
	}
	if (when == ENGINE_POLL_NOT)
		return false;
	if (when > now) {
		wait_until(timeout_ms, when, now);
		return false;
	}
	return true;
}

static void complete(struct engine *e, struct engine_fd *x, int res)
{
	x->inflight = false;
	if (x->done)
		return;
	if (res == -EINTR || res == -EAGAIN || res == -ECANCELED)
		return;
	if (!x->enabled)
		return;
	if (!x->cb(x->arg, res < 0 ? POLLERR : res))
		x->done = true;
}

/* Drop the entries that are done and have no poll in flight. */
static void reap(struct engine *e)
{
	unsigned int i, j;

	for (i = j = 0; i < e->nr; i++) {
		struct engine_fd *x = e->ents[i];

		if (x->done && !x->inflight && x != e->sig_ent) {
			free(x);
			continue;
		}
		e->ents[j++] = x;
	}
	e->nr = j;
}

/* The earliest of the timeout requests in flight that are kept track of; 0 for none. */
static uint64_t timeout_first(const struct engine *e)
{
	uint64_t first = 0;
	unsigned int i;

	for (i = 0; i < e->nr_timeouts; i++)
		if (!first || e->timeouts[i] < first)
			first = e->timeouts[i];
	return first;
}

/*
 * An idle wait (@timeout_ms of LONG_WAIT_MS or more) is not ended in its first
 * half by a timeout request armed for a timer since cancelled (a request's,
 * a probe burst's): those are removed, not left to wake the loop for
 * nothing. One that ends later is left be (the next wait's own request,
 * armed a moment before, must not be removed and armed again each turn), as
 * are all in a busy loop's short waits (a removal costs a turn).
 */
static void drop_early_timeouts(struct engine *e, int timeout_ms, uint64_t now)
{
	uint64_t half = now + timeout_ms * NSEC_PER_MSEC / 2;
	struct io_uring_sqe *sqe;
	unsigned int i = 0;

	if (timeout_ms < LONG_WAIT_MS)
		return;
	while (i < e->nr_timeouts) {
		if (e->timeouts[i] >= half) {
			i++;
			continue;
		}
		sqe = get_sqe(e);
		if (!sqe)
			return;
		/* it completes with -ECANCELED, no longer kept track of: ignored */
		io_uring_prep_timeout_remove(sqe, e->timeouts[i] << 2 | TIMER_BITS, 0);
		io_uring_sqe_set_data(sqe, REMOVE_TAG);
		e->timeouts[i] = e->timeouts[--e->nr_timeouts];
	}
}

/*
 * Our own timeout request bounds the wait: it completes on its own, so the
 * wait ends in time whatever the kernel's or liburing's support for wait
 * timeouts. One in flight that ends by then does; one that ends later than
 * this turn needs (armed in an earlier turn, before a shorter timer or a
 * gate's time) gets a shorter one beside it, and still ends a later wait
 * early: the loop goes round again. Each carries its end in its user_data,
 * so that a long one still in flight is not armed again when a short one
 * ends (an idle loop would wake once per short one).
 */
static void arm_timeout(struct engine *e, int timeout_ms, uint64_t now)
{
	uint64_t first = timeout_first(e), when = now + timeout_ms * NSEC_PER_MSEC;
	struct io_uring_sqe *sqe;

	if (timeout_ms <= 0 || (first && first <= when))
		return;
	sqe = get_sqe(e);
	if (!sqe)
		return;
	/* the kernel copies the timespec when it takes the request */
	e->timer.tv_sec = timeout_ms / 1000;
	e->timer.tv_nsec = (timeout_ms % 1000) * 1000000LL;
	io_uring_prep_timeout(sqe, &e->timer, 0, 0);
	io_uring_sqe_set_data64(sqe, when << 2 | TIMER_BITS);
	if (e->nr_timeouts < TIMEOUTS_MAX)
		e->timeouts[e->nr_timeouts++] = when;
}

/* The timeout request of @data completed: it is no longer in flight. */
static void timeout_ended(struct engine *e, uint64_t data)
{
	uint64_t when = data >> 2;
	unsigned int i;

	for (i = 0; i < e->nr_timeouts; i++) {
		if (e->timeouts[i] == when) {
			e->timeouts[i] = e->timeouts[--e->nr_timeouts];
			return;
		}
	}
}

/**
 * engine_run() - submit polls and handle what completes, waiting up to
 * @timeout_ms, then fire the timers that are due
 * @e: the engine
 * @timeout_ms: the longest wait (0: do not wait); the next timer shortens it
 *
 * Return: completions handled, or -errno.
 */
int engine_run(struct engine *e, int timeout_ms)
{
	struct io_uring_cqe *cqe;
	unsigned int i, head, handled = 0;
	uint64_t now = engine_now_ns();
	int ret;

	if (e->timers)
		wait_until(&timeout_ms, e->timers->when, now);
	for (i = 0; i < e->nr; i++) {
		struct engine_fd *x = e->ents[i];
		struct io_uring_sqe *sqe;

		if (!ent_wants_poll(x, now, &timeout_ms))
			continue;
		sqe = get_sqe(e);
		if (!sqe)
			break;
		io_uring_prep_poll_add(sqe, x->fd, x->events);
		io_uring_sqe_set_data(sqe, x);
		x->inflight = true;
	}
	drop_early_timeouts(e, timeout_ms, now);
	arm_timeout(e, timeout_ms, now);
	ret = io_uring_submit_and_wait(&e->ring, timeout_ms ? 1 : 0);
	if (ret < 0 && ret != -EINTR && ret != -ETIME)
		return ret;
	io_uring_for_each_cqe(&e->ring, head, cqe) {
		void *data = io_uring_cqe_get_data(cqe);

		if ((io_uring_cqe_get_data64(cqe) & TIMER_BITS) == TIMER_BITS) {
			timeout_ended(e, io_uring_cqe_get_data64(cqe));
		} else if (data != WRITEBACK_TAG && data != REMOVE_TAG) {
			complete(e, data, cqe->res);
		}
		handled++;
	}
	io_uring_cq_advance(&e->ring, handled);
	run_timers(e);
	reap(e);
	return handled;
}

/**
 * engine_loop() - run until engine_quit()
 * @e: the engine
 *
 * Return: 0, or -errno when io_uring fails.
 */
int engine_loop(struct engine *e)
{
	e->quit = false;
	while (!e->quit) {
		int ret = engine_run(e, IDLE_WAIT_MS);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/**
 * engine_quit() - make engine_loop() return after the current turn
 * @e: the engine
 */
void engine_quit(struct engine *e)
{
	e->quit = true;
}
