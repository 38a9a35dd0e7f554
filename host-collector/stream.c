// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Streams and the engine that reads them.
 *
 * A stream delivers bytes in whatever pieces the transport chooses; it is cut
 * into whole sub-buffers here. Each page is validated whole (its header and
 * every event, about 0.4 us a page, against 0.26 us to copy it) and goes to
 * the spool, or, when malformed, to cpuN.bad, counted and logged once. What
 * the pages hold (pages, events, lost events) is counted on the way and left
 * in cpuN.sums when the stream closes, so that trace.dat can be made without
 * reading the pages again; a spool without it (a killed collector) is walked.
 *
 * A trace's pages go to its spool file "data": CPU N's at N * region onwards
 * (a sparse file; see spool.c), written once, where output.c can turn the
 * file into the trace.dat without copying them. A CPU that fills its region
 * continues in cpuN.pages.
 *
 * The pages are written where they belong with pwrite() and their writeback
 * is started every 8 MiB (sync_file_range() through the engine's io_uring,
 * not waited for): at the end little is left dirty, so laying the file out (collapse/insert range, which
 * first writes back what is dirty) and --fsync cost little. splice() into the
 * region was tried instead of read() + pwrite(): one copy fewer, but slower
 * here (0.65 s against 0.48 s for 546 MiB) and more CPU.
 *
 * The engine is one thread and one io_uring: a poll request is always armed
 * on every live stream and control port, so 16 guests x 4 vCPUs cost one
 * thread. When a stream is readable the engine drains it with non-blocking
 * read()s; a control port's owner reads it itself, so that a clock sync
 * burst can read replies the moment they arrive. Polling rather than queued
 * reads keeps every kind of fd (FIFO, socket, pipe) from ever blocking the
 * loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"

#define RBUF_SIZE	(256u << 10)
#define WRITEBACK_STEP	(8u << 20)

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= n;
	}
	return 0;
}

/**
 * stream_init() - set up a stream and its spool files
 * @s: zeroed on entry
 * @fd: what to read
 * @label: for messages ("guest demo cpu1")
 * @cpu: the CPU number in its trace
 * @subbuf: sub-buffer size of the trace
 * @spool_dir: the spool directory of the trace (guest or host)
 *
 * Return: 0 or -errno.
 */
int stream_init(struct stream *s, int fd, const char *label, unsigned int cpu,
		uint32_t subbuf, const char *spool_dir)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->cpu = cpu;
	s->subbuf = subbuf;
	s->bad_fd = -1;
	snprintf(s->label, sizeof(s->label), "%s", label);
	snprintf(s->dir, sizeof(s->dir), "%s", spool_dir);
	vt_page_fmt_default(&s->fmt);
	s->fmt.subbuf_size = subbuf;
	s->rcap = RBUF_SIZE;
	s->rbuf = malloc(s->rcap);
	s->page = malloc(subbuf);
	if (!s->rbuf || !s->page)
		return -ENOMEM;
	s->spool_fd = -1;
	s->data_fd = -1;
	return 0;
}

/*
 * Open the spool files on the first page. Appending: a second START in one
 * session continues the same CPU's data, after what its region (or
 * cpuN.pages, once it overflowed) already holds.
 */
static int open_spool(struct stream *s)
{
	char path[4200];
	struct stat st;
	int ret;

	snprintf(path, sizeof(path), "%s/cpu%u.pages", s->dir, s->cpu);
	if (!(stat(path, &st) == 0 && st.st_size > 0)) {
		ret = spool_data_open(s->dir, &s->region);
		if (ret < 0)
			return ret;
		s->data_fd = ret;
		ret = spool_data_len(s->data_fd, s->region, s->cpu, &s->data_len);
		if (ret < 0)
			return ret;
		return 0;
	}
	s->spool_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (s->spool_fd < 0)
		return -errno;
	return 0;
}

/* The region is full (or the filesystem allows no larger file): go on in cpuN.pages. */
static int overflow(struct stream *s)
{
	char path[4200];

	log_info("%s: %llu bytes fill the spool region of cpu%u: the rest goes to cpu%u.pages "
		 "and is copied at the end", s->label, (unsigned long long)s->data_len, s->cpu,
		 s->cpu);
	snprintf(path, sizeof(path), "%s/cpu%u.pages", s->dir, s->cpu);
	s->spool_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	return s->spool_fd < 0 ? -errno : 0;
}

static void engine_writeback(struct engine *e, int fd, uint64_t off, uint64_t len);

/*
 * Start writing the region's new pages back now, in WRITEBACK_STEP pieces,
 * without waiting for it: trace.dat is made of the same blocks at the end,
 * and whatever is still dirty then must be written before the file can be
 * laid out (collapse/insert range) or fsynced. The request goes through the
 * engine's io_uring, whose workers may block in the filesystem (block
 * allocation, a full device queue) where the engine thread must not.
 */
static void start_writeback(struct stream *s)
{
	uint64_t base = (uint64_t)s->cpu * s->region;

	if (s->data_fd < 0 || !s->engine || s->data_len < s->written_back + WRITEBACK_STEP)
		return;
	engine_writeback(s->engine, s->data_fd, base + s->written_back,
			 s->data_len - s->written_back);
	s->written_back = s->data_len;
}

/* Spool @len bytes of good whole pages: into the CPU's region while it has room. */
static int spool_out(struct stream *s, const uint8_t *p, size_t len)
{
	int ret;

	if (s->spool_fd < 0 && s->data_fd < 0) {
		ret = open_spool(s);
		if (ret < 0)
			return ret;
	}
	if (s->spool_fd < 0 && s->data_len + len > s->region) {
		ret = overflow(s);
		if (ret < 0)
			return ret;
	}
	while (len && s->spool_fd < 0) {
		ssize_t n = pwrite(s->data_fd, p, len, (uint64_t)s->cpu * s->region + s->data_len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EFBIG) {
			ret = overflow(s);
			if (ret < 0)
				return ret;
			break;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= n;
		s->data_len += n;
	}
	start_writeback(s);
	return len ? write_all(s->spool_fd, p, len) : 0;
}

/**
 * stream_close() - close a stream's files (not its fd, which its owner closes)
 * @s: the stream
 */
void stream_close(struct stream *s)
{
	/*
	 * What the region holds, for output.c: valid only while every good
	 * page is in it, nothing in cpuN.pages and no partial page after it.
	 */
	if (s->data_fd >= 0 && s->spool_fd < 0 && !s->have) {
		char name[32], text[256];
		int n;

		snprintf(name, sizeof(name), "cpu%u.sums", s->cpu);
		n = snprintf(text, sizeof(text),
			     "len=%llu pages=%llu events=%llu missed_pages=%llu lost=%llu\n",
			     (unsigned long long)s->data_len, (unsigned long long)s->pages,
			     (unsigned long long)s->events, (unsigned long long)s->missed_pages,
			     (unsigned long long)s->lost_events);
		if (s->data_len == s->pages * s->subbuf)
			spool_write_file(s->dir, name, text, n);
	}
	if (s->spool_fd >= 0)
		close(s->spool_fd);
	if (s->data_fd >= 0)
		close(s->data_fd);
	if (s->bad_fd >= 0)
		close(s->bad_fd);
	s->spool_fd = s->bad_fd = s->data_fd = -1;
	free(s->rbuf);
	free(s->page);
	s->rbuf = s->page = NULL;
}

static int keep_aside(struct stream *s, const uint8_t *page, const char *why)
{
	char path[4200];

	if (s->bad_fd < 0) {
		snprintf(path, sizeof(path), "%s/cpu%u.bad", s->dir, s->cpu);
		s->bad_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (s->bad_fd < 0)
			return -errno;
	}
	if (!s->bad_logged) {
		log_warn("%s: malformed page at stream offset %llu (%s): kept aside in cpu%u.bad, "
			 "not in the trace", s->label,
			 (unsigned long long)((s->pages + s->bad_pages) * s->subbuf), why, s->cpu);
		s->bad_logged = true;
	}
	s->bad_pages++;
	return write_all(s->bad_fd, page, s->subbuf);
}

static bool over_limit(struct stream *s)
{
	struct guest *g = s->g;
	uint64_t total = 0;
	unsigned int i;

	if (!g || !g->max_bytes)
		return false;
	for (i = 0; i < g->nr_streams; i++)
		total += g->streams[i].pages * g->streams[i].subbuf;
	if (total + s->subbuf <= g->max_bytes)
		return false;
	if (!g->max_reached) {
		g->max_reached = true;
		log_warn("guest %s: reached --max-size (%llu bytes spooled): stopping it", g->name,
			 (unsigned long long)total);
	}
	return true;
}

/* The whole check of one page: header and every event. */
static bool page_ok(struct stream *s, const uint8_t *p, struct vt_page_info *info,
		    uint32_t *events, const char **why)
{
	*why = NULL;
	*events = 0;
	if (vt_page_size_check(&s->fmt, p, s->subbuf, why) == -EMSGSIZE) {
		if (!s->size_logged)
			log_err("%s: the pages are not the announced %u-byte sub-buffers (%s): "
				"they are kept aside, not reframed", s->label, s->subbuf, *why);
		s->size_logged = s->bad_logged = true;	/* said once: not again as "malformed" */
		return false;
	}
	if (vt_page_validate(&s->fmt, p, s->subbuf, info, events, NULL, why) < 0) {
		if (!*why)
			*why = "malformed";
		return false;
	}
	return true;
}

/*
 * Check and spool @n whole pages at @p: runs of good pages go out in one
 * write, bad ones aside.
 */
static int take_pages(struct stream *s, const uint8_t *p, size_t n)
{
	const uint8_t *run = p;
	size_t run_len = 0, i;
	int ret;

	for (i = 0; i < n; i++, p += s->subbuf) {
		struct vt_page_info info;
		const char *why;
		uint32_t events;

		if (!page_ok(s, p, &info, &events, &why) || over_limit(s)) {
			if (run_len && (ret = spool_out(s, run, run_len)) < 0)
				return ret;
			run = p + s->subbuf;
			run_len = 0;
			if (s->g && s->g->max_reached) {
				s->dropped_pages++;
				continue;
			}
			ret = keep_aside(s, p, why);
			if (ret < 0)
				return ret;
			continue;
		}
		s->pages++;
		s->events += events;
		s->missed_pages += info.missed;
		s->lost_events += info.missed_events;
		run_len += s->subbuf;
	}
	if (run_len)
		return spool_out(s, run, run_len);
	return 0;
}

/**
 * stream_ingest() - take bytes from the transport
 * @s: the stream
 * @data: the bytes
 * @len: how many
 *
 * Return: 0 or -errno from the spool.
 */
int stream_ingest(struct stream *s, const uint8_t *data, size_t len)
{
	int ret;

	s->bytes += len;
	s->bytes_session += len;
	while (len) {
		size_t whole, take;

		if (s->have) {
			take = s->subbuf - s->have < len ? s->subbuf - s->have : len;
			memcpy(s->page + s->have, data, take);
			s->have += take;
			data += take;
			len -= take;
			if (s->have == s->subbuf) {
				s->have = 0;
				ret = take_pages(s, s->page, 1);
				if (ret < 0)
					return ret;
			}
			continue;
		}
		whole = len / s->subbuf;
		if (whole) {
			ret = take_pages(s, data, whole);
			if (ret < 0)
				return ret;
			data += whole * s->subbuf;
			len -= whole * s->subbuf;
			continue;
		}
		memcpy(s->page, data, len);
		s->have = len;
		len = 0;
	}
	return 0;
}

/**
 * stream_finish() - the stream ended: keep a trailing fragment aside
 * @s: the stream
 *
 * A stream that ends mid-page keeps its whole pages; the fragment goes to
 * cpuN.frag and is reported, never passed off as a page.
 *
 * Return: 0 or -errno.
 */
int stream_finish(struct stream *s)
{
	if (!s->have)
		return 0;
	log_warn("%s: stream ended %zu bytes into a page: whole pages kept, the fragment is in "
		 "cpu%u.frag", s->label, s->have, s->cpu);
	{
		char name[32];

		snprintf(name, sizeof(name), "cpu%u.frag", s->cpu);
		spool_write_file(s->dir, name, s->page, s->have);
	}
	s->have = 0;
	return 0;
}

/* --- the engine --- */

enum ent_kind { ENT_STREAM, ENT_CTL };

struct ent {
	enum ent_kind kind;
	struct stream *s;
	int fd;
	uint8_t *buf;
	size_t cap;
	bool (*cb)(void *arg, int revents);
	void *arg;
	bool inflight;
	bool done;
};

struct engine {
	struct io_uring ring;
	struct ent **ents;
	unsigned int nr, cap;
	bool timer_armed;
	struct __kernel_timespec timer;
};

/* The user_data of the engine's own timeout; never a struct ent. */
#define TIMER_TAG	((void *)1)
/* The user_data of a writeback request (start_writeback()): nothing waits for it. */
#define WRITEBACK_TAG	((void *)2)

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
	ret = io_uring_queue_init(entries, &e->ring, 0);
	if (ret < 0) {
		free(e);
		errno = -ret;
		return NULL;
	}
	return e;
}

/**
 * engine_free() - cancel outstanding reads and free the engine
 * @e: the engine, or NULL
 */
void engine_free(struct engine *e)
{
	unsigned int i;

	if (!e)
		return;
	io_uring_queue_exit(&e->ring);
	for (i = 0; i < e->nr; i++)
		free(e->ents[i]);
	free(e->ents);
	free(e);
}

static int add_ent(struct engine *e, struct ent *x)
{
	if (e->nr == e->cap) {
		unsigned int cap = e->cap ? e->cap * 2 : 16;
		struct ent **n = realloc(e->ents, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->ents = n;
		e->cap = cap;
	}
	e->ents[e->nr++] = x;
	return 0;
}

/* Queue sync_file_range(SYNC_FILE_RANGE_WRITE); engine_run() submits it. */
static void engine_writeback(struct engine *e, int fd, uint64_t off, uint64_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);

	if (!sqe) {
		io_uring_submit(&e->ring);
		sqe = io_uring_get_sqe(&e->ring);
		if (!sqe)
			return;	/* the kernel's own writeback will do */
	}
	io_uring_prep_sync_file_range(sqe, fd, (unsigned int)(len < UINT32_MAX ? len : UINT32_MAX),
				      off, SYNC_FILE_RANGE_WRITE);
	io_uring_sqe_set_data(sqe, WRITEBACK_TAG);
}

/**
 * engine_add() - serve a stream
 * @e: the engine
 * @s: the stream; it must outlive its entry (until it reads EOF or is closed)
 *
 * Return: 0 or -ENOMEM.
 */
int engine_add(struct engine *e, struct stream *s)
{
	struct ent *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->kind = ENT_STREAM;
	x->s = s;
	x->fd = s->fd;
	fcntl(x->fd, F_SETFL, fcntl(x->fd, F_GETFL) | O_NONBLOCK);
	x->buf = s->rbuf;
	x->cap = s->rcap;
	s->engine = e;
	return add_ent(e, x) < 0 ? (free(x), -ENOMEM) : 0;
}

/**
 * engine_add_ctl() - watch a control port
 * @e: the engine
 * @fd: the port's read side, non-blocking
 * @cb: called with the poll revents when it is readable (or hung up); it
 *	reads the port itself and returns false to stop watching
 * @arg: passed to @cb
 *
 * Return: 0 or -ENOMEM.
 */
int engine_add_ctl(struct engine *e, int fd, bool (*cb)(void *arg, int revents), void *arg)
{
	struct ent *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->kind = ENT_CTL;
	x->fd = fd;
	x->cb = cb;
	x->arg = arg;
	if (add_ent(e, x) < 0) {
		free(x);
		return -ENOMEM;
	}
	return 0;
}

static bool ent_wants_read(const struct ent *x)
{
	if (x->inflight || x->done)
		return false;
	if (x->kind == ENT_STREAM)
		return !x->s->eof && !x->s->closed && !x->s->paused;
	return true;
}

/* Drain a readable stream: a few reads per turn, so one busy stream cannot starve the rest. */
static void drain_stream(struct ent *x)
{
	struct stream *s = x->s;
	int turns;

	for (turns = 0; turns < 8 && !s->closed; turns++) {
		ssize_t n = read(x->fd, x->buf, x->cap);
		int ret;

		if (n > 0) {
			ret = stream_ingest(s, x->buf, n);
			if (ret < 0) {
				log_err("%s: cannot spool: %s", s->label, strerror(-ret));
				s->closed = true;
				if (s->g)
					session_fail(s->g, "cannot write the spool: %s", strerror(-ret));
			}
			if ((size_t)n < x->cap)
				return;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0)
			log_warn("%s: read failed: %s", s->label, strerror(errno));
		s->eof = true;
		stream_finish(s);
		return;
	}
}

static void complete(struct ent *x, int res)
{
	x->inflight = false;
	if (x->done)
		return;
	if (res == -EINTR || res == -EAGAIN || res == -ECANCELED)
		return;
	if (x->kind == ENT_CTL) {
		if (!x->cb(x->arg, res < 0 ? POLLERR : res))
			x->done = true;
		return;
	}
	if (x->s->closed) {
		x->done = true;
		return;
	}
	drain_stream(x);
}

/**
 * engine_run() - submit reads and handle what completes, for up to @timeout_ms
 * @e: the engine
 * @timeout_ms: how long to wait at most for something to complete (0: do not wait)
 *
 * Return: completions handled, or -errno.
 */
int engine_run(struct engine *e, int timeout_ms)
{
	struct io_uring_cqe *cqe;
	unsigned int i, head, handled = 0;
	int ret;

	for (i = 0; i < e->nr; i++) {
		struct ent *x = e->ents[i];
		struct io_uring_sqe *sqe;

		if (!ent_wants_read(x))
			continue;
		sqe = io_uring_get_sqe(&e->ring);
		if (!sqe) {
			io_uring_submit(&e->ring);
			sqe = io_uring_get_sqe(&e->ring);
			if (!sqe)
				break;
		}
		io_uring_prep_poll_add(sqe, x->fd, POLLIN);
		io_uring_sqe_set_data(sqe, x);
		x->inflight = true;
	}
	/*
	 * Our own timeout request bounds the wait: it completes on its own, so
	 * the wait ends in time whatever the kernel's or liburing's support for
	 * wait timeouts.
	 */
	if (timeout_ms > 0 && !e->timer_armed) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);

		if (sqe) {
			e->timer.tv_sec = timeout_ms / 1000;
			e->timer.tv_nsec = (timeout_ms % 1000) * 1000000LL;
			io_uring_prep_timeout(sqe, &e->timer, 0, 0);
			io_uring_sqe_set_data(sqe, TIMER_TAG);
			e->timer_armed = true;
		}
	}
	ret = io_uring_submit_and_wait(&e->ring, timeout_ms ? 1 : 0);
	if (ret < 0 && ret != -EINTR && ret != -ETIME)
		return ret;
	io_uring_for_each_cqe(&e->ring, head, cqe) {
		void *data = io_uring_cqe_get_data(cqe);

		if (data == TIMER_TAG)
			e->timer_armed = false;
		else if (data == WRITEBACK_TAG)
			;
		else
			complete(data, cqe->res);
		handled++;
	}
	io_uring_cq_advance(&e->ring, handled);
	return handled;
}

/**
 * engine_active() - streams still open
 * @e: the engine
 *
 * Return: how many stream entries have not ended.
 */
unsigned int engine_active(const struct engine *e)
{
	unsigned int i, n = 0;

	for (i = 0; i < e->nr; i++)
		n += e->ents[i]->kind == ENT_STREAM && !e->ents[i]->s->eof && !e->ents[i]->s->closed;
	return n;
}

/**
 * engine_remove_ctl() - stop watching a control port (its poll may still complete)
 * @e: the engine
 * @fd: the fd given to engine_add_ctl()
 */
void engine_remove_ctl(struct engine *e, int fd)
{
	unsigned int i;

	for (i = 0; i < e->nr; i++)
		if (e->ents[i]->kind == ENT_CTL && e->ents[i]->fd == fd)
			e->ents[i]->done = true;
}
