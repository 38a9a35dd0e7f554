// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The per-CPU data path: trace_pipe_raw --splice--> 1 MiB pipe --splice--> port.
 *
 * Rules learnt the hard way (FACTS.md section 2):
 * - splice from trace_pipe_raw hands out whole pages only; the trailing
 *   partial page is taken with read() at stop, after tracing_on=0;
 * - the first splice blocks (buffer_percent >= 1, never 0 on Debian 6.1) on a
 *   blocking pipe; ioctl(fd, 0) wakes it for a prompt stop;
 * - the port is non-blocking and waited for in poll() together with an
 *   eventfd, so a host that does not read never blocks a stop or an abort;
 *   the ring buffer overruns instead, and the kernel counts it;
 * - an unconnected virtio-serial port polls as POLLHUP: back off instead of
 *   spinning;
 * - with FLUSH (a live view on the host) the file is non-blocking, splices
 *   never wait, and the partial page is read() once no whole page came for
 *   the interval: the host sees events within about that long, for a wake-up
 *   per interval and a padded page per flush.
 * - with hold (START's HOLD flag: a flight recorder), nothing is read while
 *   recording: the ring buffer, in overwrite mode, keeps the newest events,
 *   and the stop drains what it holds, as lastboot-read.c reads a buffer's
 *   contents at one point in time; the port carries nothing until then.
 * - after a RESUME (the guest moved to another host, whose collector takes
 *   the session over), a resume mark goes into the port between two pushes,
 *   so at a page boundary of the stream: it says how many bytes the stream
 *   carried before it, which tells the new host where its first bytes stand.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "agent.h"
#include "vt_proto.h"
#include "vt_time.h"

#define HUP_BACKOFF_MS	250	/* unconnected port: a few wakeups a second */
#define IDLE_BACKOFF_MS	200	/* a splice that returned nothing, unasked */

static bool pin(unsigned int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

/*
 * Sleep up to @ms on the wake eventfd, consuming a wake-up so that the next
 * poll sleeps again (the flags, not the eventfd, hold the state).
 */
static void nap(struct cpu_stream *s, int ms)
{
	struct pollfd pfd = { .fd = s->wake_fd, .events = POLLIN };
	uint64_t v;

	if (poll(&pfd, 1, ms) > 0 && read(s->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("cpu%u: wake read: %m", s->cpu);
}

/*
 * Wait until the port takes data. Returns 0 to retry, -ECANCELED on abort.
 */
static int wait_port(struct cpu_stream *s)
{
	struct pollfd pfd[2] = {
		{ .fd = s->port_fd, .events = POLLOUT },
		{ .fd = s->wake_fd, .events = POLLIN },
	};

	for (;;) {
		if (atomic_load(&s->aborting))
			return -ECANCELED;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents & POLLOUT)
			return 0;
		if (pfd[0].revents & (POLLHUP | POLLERR)) {
			/* The host end is not connected: a virtio port says so at once. */
			nap(s, HUP_BACKOFF_MS);
			return 0;
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t v;

			/* A stop keeps draining; only an abort gives up on the port. */
			if (read(s->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return -errno;
		}
	}
}

/*
 * Count what the port took: the bytes, and the sub-buffers they complete.
 * Every send is whole sub-buffers (splice hands out whole pages; the last
 * partial one is padded), so a page is counted once its last byte is out,
 * and a port that fails mid-send leaves the count at what really left.
 */
static void sent(struct cpu_stream *s, size_t n)
{
	uint64_t before = atomic_fetch_add(&s->bytes, n);

	atomic_fetch_add(&s->pages, (before + n) / s->subbuf_size - before / s->subbuf_size);
}

static int write_all(struct cpu_stream *s, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(s->port_fd, buf, len);

		if (n > 0) {
			sent(s, n);
			buf += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int ret = wait_port(s);

			if (ret < 0)
				return ret;
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* Move @len bytes that sit in the pipe to the port. */
static int push(struct cpu_stream *s, size_t len)
{
	int ret;

	while (len) {
		ssize_t n;

		if (s->use_read) {
			size_t want = len < s->subbuf_size ? len : s->subbuf_size;

			n = read(s->pipe[0], s->buf, want);
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			ret = write_all(s, s->buf, n);
			if (ret < 0)
				return ret;
			len -= n;
			continue;
		}
		n = splice(s->pipe[0], NULL, s->port_fd, NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			sent(s, n);
			len -= n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			ret = wait_port(s);
			if (ret < 0)
				return ret;
			continue;
		}
		if (n < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			log_warn("cpu%u: splice into the port failed (%m): using read() + write()",
				 s->cpu);
			s->use_read = true;
			atomic_fetch_add(&s->fallbacks, 1);
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* A RESUME asked for a mark: one whole sub-buffer, at the stream's current page boundary. */
static int put_mark(struct cpu_stream *s)
{
	struct vt_proto_mark mk = { .cpu = s->cpu };
	int ret;

	mk.resume = atomic_exchange(&s->mark_req, 0);
	if (!mk.resume)
		return 0;
	mk.position = atomic_load(&s->bytes);
	ret = vt_proto_mark_encode(s->buf, s->subbuf_size, &mk);
	if (ret < 0)
		return 0;	/* sub-buffers too small for a mark: the host is told nothing */
	ret = write_all(s, s->buf, s->subbuf_size);
	if (ret == 0)
		s->marks++;
	return ret;
}

static size_t chunk(const struct cpu_stream *s)
{
	size_t c = 64 * (size_t)s->subbuf_size;

	return c < AGENT_PIPE_SIZE ? c : AGENT_PIPE_SIZE;
}

/*
 * After tracing_on=0: take every whole page without blocking, then the
 * trailing partial pages with read(), each sent as a whole zero-padded page.
 */
static int drain(struct cpu_stream *s)
{
	int ret;

	for (;;) {
		ssize_t n = splice(s->raw_fd, NULL, s->pipe[1], NULL, chunk(s),
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n > 0) {
			ret = push(s, n);
			if (ret < 0)
				return ret;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	fcntl(s->raw_fd, F_SETFL, fcntl(s->raw_fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		ssize_t n = read(s->raw_fd, s->buf, s->subbuf_size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if ((size_t)n < s->subbuf_size)
			memset(s->buf + n, 0, s->subbuf_size - n);
		ret = write_all(s, s->buf, s->subbuf_size);
		if (ret < 0)
			return ret;
		atomic_fetch_add(&s->partial_reads, 1);
	}
	return 0;
}

/*
 * FLUSH: the partial page the writer is on, taken with read() (the kernel
 * copies its events out; later ones continue on the same page) and sent as
 * a whole zero-padded page, as the final drain does. Nothing when the
 * buffer is empty (EAGAIN: the file is non-blocking in this mode).
 */
static int flush_partial(struct cpu_stream *s)
{
	ssize_t n = read(s->raw_fd, s->buf, s->subbuf_size);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return 0;
	if ((size_t)n < s->subbuf_size)
		memset(s->buf + n, 0, s->subbuf_size - n);
	atomic_fetch_add(&s->partial_reads, 1);
	return write_all(s, s->buf, s->subbuf_size);
}

static void *cpu_thread(void *arg)
{
	struct cpu_stream *s = arg;
	bool pinned = pin(s->cpu), nonblock = false;
	long long last_out = vt_now_ms();
	int ret = 0;

	while (!atomic_load(&s->aborting)) {
		unsigned int flush = atomic_load(&s->flush_ms);
		ssize_t n;

		ret = put_mark(s);
		if (ret < 0)
			break;
		if (atomic_load(&s->stopping)) {
			ret = drain(s);
			break;
		}
		if (s->hold) {
			nap(s, -1);	/* until a stop, an abort or a mark */
			continue;
		}
		/* mmiotrace takes CPUs offline; pin again once this one is back. */
		if (!pinned)
			pinned = pin(s->cpu);
		/*
		 * With FLUSH nothing blocks in the kernel: whole pages when there
		 * are, else the partial one once it waited that long (never a
		 * blocking splice with a partial page: FACTS.md section 2).
		 */
		if (flush && !nonblock) {
			fcntl(s->raw_fd, F_SETFL, fcntl(s->raw_fd, F_GETFL) | O_NONBLOCK);
			nonblock = true;
		}
		n = splice(s->raw_fd, NULL, s->pipe[1], NULL, chunk(s),
			   SPLICE_F_MOVE | (flush ? SPLICE_F_NONBLOCK : 0));
		if (n > 0) {
			ret = push(s, n);
			if (ret < 0)
				break;
			last_out = vt_now_ms();
			continue;
		}
		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			ret = -errno;
			break;
		}
		if (flush) {
			long long now = vt_now_ms();

			if (now - last_out >= flush) {
				ret = flush_partial(s);
				if (ret < 0)
					break;
				last_out = now;
			}
			if (!atomic_load(&s->stopping))
				nap(s, (int)(last_out + flush - now));
			continue;
		}
		/* Woken with nothing whole to give: wait for a stop, not a spin. */
		if (!atomic_load(&s->stopping))
			nap(s, IDLE_BACKOFF_MS);
	}
	if (ret < 0 && ret != -ECANCELED) {
		s->error = ret;
		log_err_local("cpu%u: data path failed: %s", s->cpu, strerror(-ret));
	}
	atomic_store(&s->done, true);
	if (s->done_fd >= 0 && write(s->done_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		log_debug("cpu%u: done notification: %m", s->cpu);
	return NULL;
}

/**
 * cpu_start() - open a CPU's data path and start its thread
 * @s: zeroed on entry
 * @t: the tracing buffer to read
 * @p: where the ports are
 * @cpu: the CPU
 * @done_fd: an eventfd the thread writes to when it exits, or -1
 * @hold: read nothing until cpu_stop(), then drain what the ring holds
 *
 * Return: 0 or -errno (nothing is left open on failure).
 */
int cpu_start(struct cpu_stream *s, const struct tracing *t, const struct ports *p,
	      unsigned int cpu, int done_fd, bool hold)
{
	char path[PATH_MAX], name[PATH_MAX];
	int ret;

	memset(s, 0, sizeof(*s));
	s->cpu = cpu;
	s->done_fd = done_fd;
	s->hold = hold;
	s->subbuf_size = t->subbuf_size;
	s->raw_fd = s->port_fd = s->wake_fd = s->pipe[0] = s->pipe[1] = -1;
	s->buf = malloc(s->subbuf_size);
	if (!s->buf)
		return -ENOMEM;

	snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", t->dir, cpu);
	s->raw_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->raw_fd < 0) {
		ret = -errno;
		goto err;
	}
	snprintf(name, sizeof(name), "%s%u", p->prefix, cpu);
	s->port_fd = ports_open(p, name, false, NULL);
	if (s->port_fd < 0) {
		ret = s->port_fd;
		goto err;
	}
	/* A blocking pipe: a non-blocking one makes the first splice EAGAIN (>= 5.1). */
	if (pipe2(s->pipe, O_CLOEXEC) < 0) {
		ret = -errno;
		goto err;
	}
	if (fcntl(s->pipe[1], F_SETPIPE_SZ, AGENT_PIPE_SIZE) < 0)
		log_debug("cpu%u: cannot grow the pipe to %d bytes: %m", cpu, AGENT_PIPE_SIZE);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		ret = -errno;
		goto err;
	}
	ret = -pthread_create(&s->thread, NULL, cpu_thread, s);
	if (ret < 0)
		goto err;
	s->running = true;
	return 0;
err:
	cpu_join(s);
	return ret;
}

/**
 * cpu_set_flush() - send partial pages after @ms without a whole one (FLUSH)
 * @s: the stream (running or not)
 * @ms: the interval, 0 for whole pages only
 */
void cpu_set_flush(struct cpu_stream *s, unsigned int ms)
{
	atomic_store(&s->flush_ms, ms);
	if (s->running && s->wake_fd >= 0) {
		uint64_t one = 1;

		if (write(s->wake_fd, &one, sizeof(one)) < 0)
			log_debug("cpu%u: wake: %m", s->cpu);
		ioctl(s->raw_fd, 0);	/* out of a splice waiting for buffer_percent */
	}
}

static void wake(struct cpu_stream *s)
{
	uint64_t one = 1;

	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		log_debug("cpu%u: wake: %m", s->cpu);
	/* Wake a splice that waits for buffer_percent. */
	ioctl(s->raw_fd, 0);
}

/**
 * cpu_stop() - ask a CPU's thread to drain and exit; tracing must be off
 * @s: the stream
 */
void cpu_stop(struct cpu_stream *s)
{
	if (!s->running)
		return;
	atomic_store(&s->stopping, true);
	wake(s);
}

/**
 * cpu_rewake() - wake a stopping or aborting thread, or one with a mark to
 * write, again, if not done
 * @s: the stream
 *
 * The kernel loses a wake-up (the ioctl) that comes before the thread's
 * blocking splice starts to wait: the thread found no stop asked, then
 * called splice, which waits for data that never comes once tracing is
 * off. So a stop wakes again every CPU_REWAKE_MS until the thread is done.
 */
void cpu_rewake(struct cpu_stream *s)
{
	if (s->running && !atomic_load(&s->done) &&
	    (atomic_load(&s->stopping) || atomic_load(&s->aborting) || atomic_load(&s->mark_req)))
		wake(s);
}

/**
 * cpu_mark() - ask a CPU's thread to put a resume mark into its port
 * @s: the stream
 * @resume: the session's RESUME number (not 0), carried by the mark
 *
 * The thread writes it between two pushes, at a page boundary of the stream;
 * the caller wakes it again (cpu_rewake()) until it did, as for a stop.
 */
void cpu_mark(struct cpu_stream *s, uint64_t resume)
{
	if (!s->running || !resume)
		return;
	atomic_store(&s->mark_req, resume);
	wake(s);
}

/**
 * cpu_abort() - ask a CPU's thread to exit without waiting for the host
 * @s: the stream
 */
void cpu_abort(struct cpu_stream *s)
{
	if (!s->running)
		return;
	atomic_store(&s->aborting, true);
	wake(s);
}

/**
 * cpu_join() - wait for a CPU's thread and close its files
 * @s: the stream
 *
 * Return: the thread's error, or 0.
 */
int cpu_join(struct cpu_stream *s)
{
	if (s->running) {
#ifdef __GLIBC__
		struct timespec ts;

		/* A wake-up that came before the thread's splice waited is lost: wake it again. */
		for (;;) {
			vt_deadline_ms(&ts, CPU_REWAKE_MS);
			if (pthread_timedjoin_np(s->thread, NULL, &ts) != ETIMEDOUT)
				break;
			wake(s);
		}
#else
		pthread_join(s->thread, NULL);
#endif
		s->running = false;
	}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->pipe[0] >= 0)
		close(s->pipe[0]);
	if (s->pipe[1] >= 0)
		close(s->pipe[1]);
	if (s->port_fd >= 0)
		close(s->port_fd);
	if (s->raw_fd >= 0)
		close(s->raw_fd);
	s->wake_fd = s->pipe[0] = s->pipe[1] = s->port_fd = s->raw_fd = -1;
	free(s->buf);
	s->buf = NULL;
	return s->error;
}
