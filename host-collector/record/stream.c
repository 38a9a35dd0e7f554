// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Streams: one source of whole pages each (engine.c reads them).
 *
 * A stream delivers bytes in whatever pieces the transport chooses; it is cut
 * into whole sub-buffers here. Each page is validated whole (its header and
 * every event, about 0.4 us a page, against 0.26 us to copy it) and goes to
 * the spool, or, when malformed, is counted and logged once, the first
 * SPOOL_BAD_KEEP of a CPU kept in cpuN.bad as evidence. Every page, good or
 * not, and a trailing fragment count against the guest's --max-size budget
 * (struct spool_budget, which its metadata shares); past it pages are only
 * counted as dropped, and the owner is told to stop the guest. What
 * the pages hold (pages, events, lost events) is counted on the way and left
 * in cpuN.sums when the stream closes, so that trace.dat can be made without
 * reading the pages again; a spool without it (a killed collector) is walked.
 *
 * A trace's pages go to its spool file "data": CPU N's at N * region onwards
 * (a sparse file; see store/spool.c), written once, where store/output.c can turn the
 * file into the trace.dat without copying them. A CPU that fills its region
 * continues in cpuN.pages.
 *
 * The pages are written where they belong with pwrite() and their writeback
 * is started every 8 MiB (sync_file_range() through the engine's io_uring,
 * not waited for): at the end little is left dirty, so laying the file out (collapse/insert range, which
 * first writes back what is dirty) and --fsync cost little. splice() into the
 * region was tried instead of read() + pwrite(): one copy fewer, but slower
 * here (0.65 s against 0.48 s for 546 MiB) and more CPU.
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
#include "engine.h"
#include "live.h"
#include "stream.h"
#include "store/spool.h"
#include "vt_proto.h"

#define WRITEBACK_STEP	(8u << 20)

/**
 * stream_write_all() - write all of @buf to @fd (retrying short writes and EINTR)
 * @fd: the file
 * @buf: the bytes
 * @len: how many
 *
 * Return: 0 or -errno (-EIO when the file takes nothing).
 */
int stream_write_all(int fd, const void *buf, size_t len)
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
 * @spool_dir: the spool directory of the trace (guest or host): its fd, which
 *	the trace's owner keeps open while the stream lives
 *
 * Return: 0 or -errno.
 */
int stream_init(struct stream *s, int fd, const char *label, unsigned int cpu,
		uint32_t subbuf, int spool_dir)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->cpu = cpu;
	s->subbuf = subbuf;
	s->bad_fd = -1;
	snprintf(s->label, sizeof(s->label), "%s", label);
	s->dir = spool_dir;
	vt_page_fmt_default(&s->fmt);
	s->fmt.subbuf_size = subbuf;
	s->page = malloc(subbuf);
	if (!s->page)
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
	struct stat st;
	int fd, ret;

	fd = spool_open_cpu(s->dir, s->cpu, SPOOL_CPU_PAGES, O_WRONLY | O_APPEND);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
		s->spool_fd = fd;
		return 0;
	}
	if (fd >= 0)
		close(fd);
	{
		ret = spool_data_open(s->dir, &s->region);
		if (ret < 0)
			return ret;
		s->data_fd = ret;
		ret = spool_data_len(s->data_fd, s->region, s->cpu, &s->data_len);
		if (ret < 0)
			return ret;
		compress_attach(s);
		return 0;
	}
}

/* The region is full (or the filesystem allows no larger file): go on in cpuN.pages. */
static int overflow(struct stream *s)
{
	log_info("%s: %llu bytes fill the spool region of cpu%u: the rest goes to cpu%u.pages "
		 "and is copied at the end", s->label, (unsigned long long)s->data_len, s->cpu,
		 s->cpu);
	s->spool_fd = spool_open_cpu(s->dir, s->cpu, SPOOL_CPU_PAGES, O_WRONLY | O_CREAT | O_APPEND);
	return s->spool_fd < 0 ? s->spool_fd : 0;
}

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
	compress_publish(s);
	start_writeback(s);
	return len ? stream_write_all(s->spool_fd, p, len) : 0;
}

/* --hold: a good page: where the kept events start and end. */
static void hold_page(struct stream *s, const uint8_t *page, const struct vt_page_info *info)
{
	struct vt_page_iter it;
	struct vt_event ev;

	if (!s->hold.span || !info->len)
		return;
	if (!s->hold.window.first_ts || info->timestamp < s->hold.window.first_ts)
		s->hold.window.first_ts = info->timestamp;
	if (vt_page_iter_init(&it, &s->fmt, page, s->subbuf) < 0)
		return;
	while (vt_page_iter_next(&it, &ev) == 1)
		if (ev.ts > s->hold.window.end_ts)
			s->hold.window.end_ts = ev.ts;
}

/* --hold: spool a stream's span (cpuN.window), for the manifest. */
static void hold_save(struct stream *s)
{
	if (s->hold.span && s->hold.window.first_ts && s->dir >= 0 &&
	    spool_save_window(s->dir, s->cpu, &s->hold.window) < 0)
		log_warn("%s: cannot spool the span of its held events", s->label);
}

/**
 * stream_close() - close a stream's files (not its fd, which its owner closes)
 * @s: the stream
 */
void stream_close(struct stream *s)
{
	/*
	 * What the region holds, for store/output.c: valid only while every good
	 * page is in it, nothing in cpuN.pages and no partial page after it.
	 */
	if (s->data_fd >= 0 && s->spool_fd < 0 && !s->have && s->data_len == s->pages * s->subbuf) {
		struct spool_sums sums = {
			.len = s->data_len, .pages = s->pages, .events = s->events,
			.missed_pages = s->missed_pages, .lost = s->lost_events,
		};

		spool_save_sums(s->dir, s->cpu, &sums);
	}
	hold_save(s);
	compress_detach(s);
	if (s->spool_fd >= 0)
		close(s->spool_fd);
	if (s->data_fd >= 0)
		close(s->data_fd);
	if (s->bad_fd >= 0)
		close(s->bad_fd);
	s->spool_fd = s->bad_fd = s->data_fd = -1;
	free(s->page);
	s->page = NULL;
}

/*
 * A malformed page: counted always, kept in cpuN.bad only while the CPU has
 * kept fewer than SPOOL_BAD_KEEP (evidence, not a second copy of a flood).
 */
static int keep_aside(struct stream *s, const uint8_t *page, const char *why)
{
	s->bad_pages++;
	if (!s->bad_logged) {
		log_warn("%s: malformed page at stream offset %llu (%s): kept aside in cpu%u.bad, "
			 "not in the trace (the first %u malformed pages of a CPU are kept, the rest "
			 "counted)", s->label,
			 (unsigned long long)((s->pages + s->bad_pages - 1) * s->subbuf), why, s->cpu,
			 SPOOL_BAD_KEEP);
		s->bad_logged = true;
	}
	if (s->bad_kept >= SPOOL_BAD_KEEP)
		return 0;
	if (s->bad_fd < 0) {
		s->bad_fd = spool_open_cpu(s->dir, s->cpu, SPOOL_CPU_BAD, O_WRONLY | O_CREAT | O_APPEND);
		if (s->bad_fd < 0)
			return s->bad_fd;
	}
	s->bad_kept++;
	return stream_write_all(s->bad_fd, page, s->subbuf);
}

/**
 * stream_budget_take() - count @len bytes against a budget
 * @b: the budget, NULL for none
 * @len: bytes the guest sent
 * @what: the part of @b they are (&b->pages, &b->bad, ...), or NULL
 *
 * Once something did not fit, nothing more does: the guest is being stopped.
 *
 * Return: true when they fit (and are counted), false when the budget is used up.
 */
bool stream_budget_take(struct spool_budget *b, uint64_t len, uint64_t *what)
{
	if (!b)
		return true;
	if (b->max && (b->reached || len > b->max - b->used)) {
		b->reached = true;
		return false;
	}
	b->used += len;
	if (what)
		*what += len;
	return true;
}

/* Whether one more page (@good or malformed) fits the budget; the first that does not is told. */
static bool budget_page(struct stream *s, bool good)
{
	struct spool_budget *b = s->budget;
	bool was;

	if (!b)
		return true;
	was = b->reached;
	if (stream_budget_take(b, s->subbuf, good ? &b->pages : &b->bad))
		return true;
	if (!was)
		stream_notify(s, STREAM_EV_LIMIT, 0);
	return false;
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
 * A resume mark (vt_proto_mark_decode()): the agent says how many bytes this
 * CPU's stream carried before it, so the bytes before it here started at
 * that count minus what came before it. Marks are stripped, never spooled.
 */
static void take_mark(struct stream *s, const struct vt_proto_mark *mk, uint64_t at)
{
	s->marks++;
	if (mk->cpu != s->cpu)
		log_warn("%s: a resume mark for cpu%u: the ports are swapped?", s->label, mk->cpu);
	if (s->marked)
		return;		/* a later RESUME's: the first one placed the stream */
	s->marked = true;
	s->mark_pos = mk->position;
	s->mark_pre = at;
	if (mk->position < at)
		log_warn("%s: %llu bytes came before the resume mark, the agent sent %llu: the "
			 "stream cannot be placed", s->label, (unsigned long long)at,
			 (unsigned long long)mk->position);
	else
		s->resume_base = mk->position - at;
	log_debug("%s: resume mark %llu at %llu bytes, %llu before it here", s->label,
		  (unsigned long long)mk->resume, (unsigned long long)mk->position,
		  (unsigned long long)at);
}

/*
 * Check and spool @n whole pages at @p: runs of good pages go out in one
 * write, bad ones aside, resume marks nowhere.
 */
static int take_pages(struct stream *s, const uint8_t *p, size_t n)
{
	const uint8_t *run = p;
	size_t run_len = 0, i;
	int ret;

	for (i = 0; i < n; i++, p += s->subbuf) {
		struct vt_page_info info;
		struct vt_proto_mark mk;
		const char *why;
		uint32_t events;
		bool good;

		s->framed += s->subbuf;
		if (vt_proto_mark_decode(p, s->subbuf, &mk) == 1) {
			if (run_len && (ret = spool_out(s, run, run_len)) < 0)
				return ret;
			run = p + s->subbuf;
			run_len = 0;
			take_mark(s, &mk, s->framed - s->subbuf);
			continue;
		}
		good = page_ok(s, p, &info, &events, &why);

		if (!good || !budget_page(s, good)) {
			if (run_len && (ret = spool_out(s, run, run_len)) < 0)
				return ret;
			run = p + s->subbuf;
			run_len = 0;
			if (s->budget && s->budget->reached) {
				s->dropped_pages++;
				continue;
			}
			if (!budget_page(s, false)) {
				s->dropped_pages++;
				continue;
			}
			ret = keep_aside(s, p, why);
			if (ret < 0)
				return ret;
			continue;
		}
		if (!s->pages++)
			s->first_ns = engine_now_ns();
		s->events += events;
		if (info.len)
			s->last_ts = info.timestamp;
		hold_page(s, p, &info);
		if (s->live)
			live_page(s->live, s->live_trace, s->cpu, p, s->subbuf, events);
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
	if (!stream_budget_take(s->budget, s->have, s->budget ? &s->budget->frag : NULL)) {
		log_warn("%s: stream ended %zu bytes into a page: whole pages kept, the fragment is "
			 "over --max-size and not kept", s->label, s->have);
		s->have = 0;
		return 0;
	}
	log_warn("%s: stream ended %zu bytes into a page: whole pages kept, the fragment is in "
		 "cpu%u.frag", s->label, s->have, s->cpu);
	spool_save_frag(s->dir, s->cpu, s->page, s->have);
	s->have = 0;
	return 0;
}

/**
 * stream_notify() - tell the stream's owner what happened
 * @s: the stream
 * @ev: STREAM_EV_ERROR (cannot spool: @err), STREAM_EV_EOF, STREAM_EV_LIMIT
 *	(the owner's budget is used up)
 * @err: -errno for STREAM_EV_ERROR
 */
void stream_notify(struct stream *s, enum stream_ev ev, int err)
{
	if (s->notify)
		s->notify(s->owner, s, ev, err);
}

/*
 * After a stream is drained, let it rest until about STREAM_BATCH bytes
 * would come at its rate, at most STREAM_REST_MAX_NS: a slow stream is then
 * read in batches instead of at every write its source makes (each read is
 * a read() and a pwrite() of its own). The rate is the higher of the last
 * whole STREAM_RATE_WINDOW_NS window's and the current window's so far, so
 * a source that sends in bursts (an agent woken at buffer_percent) counts
 * at its real rate, not by the gap before one small read. A fast stream
 * does not rest, and a rest is short enough that the port's buffer (a FIFO
 * of 1 MiB, a socket of 208 KiB) takes STREAM_BATCH many times over. A
 * stream that is being stopped (stream->eager) never rests, nor one drained
 * STREAM_QUIET_NS after the drain before (a quiet guest's page every few
 * seconds): a rest would batch nothing and only wake the loop once more
 * (the next drains of a burst that ends such a gap rest as before).
 */
#define STREAM_BATCH		(64 * 1024)
#define STREAM_REST_MAX_NS	(20 * NSEC_PER_MSEC)
#define STREAM_REST_MIN_NS	(1 * NSEC_PER_MSEC)
#define STREAM_RATE_WINDOW_NS	(250 * NSEC_PER_MSEC)
#define STREAM_QUIET_NS		(100 * NSEC_PER_MSEC)

static void rest(struct stream *s)
{
	struct stream_pace *p = &s->pace;
	uint64_t now = engine_now_ns(), dt, db, gap = now - p->last_ns;
	double rate, r;

	p->rest_until = 0;
	p->last_ns = now;
	if (!p->win_ns) {
		p->win_ns = now;
		p->win_bytes = s->bytes;
		return;
	}
	dt = now - p->win_ns;
	db = s->bytes - p->win_bytes;
	rate = dt ? (double)db * NSEC_PER_SEC / dt : 0;
	if (dt >= STREAM_RATE_WINDOW_NS) {
		p->win_rate = rate;
		p->win_ns = now;
		p->win_bytes = s->bytes;
	}
	if (rate < p->win_rate)
		rate = p->win_rate;
	if (s->eager || s->eof || s->closed || rate <= 0 || gap > STREAM_QUIET_NS)
		return;
	r = STREAM_BATCH * (double)NSEC_PER_SEC / rate;
	if (r > STREAM_REST_MAX_NS)
		r = STREAM_REST_MAX_NS;
	if (r >= STREAM_REST_MIN_NS)
		p->rest_until = now + (uint64_t)r;
}

/* Drain a readable stream: a few reads per turn, so one busy stream cannot starve the rest. */
static void drain(struct stream *s)
{
	size_t size;
	uint8_t *buf = engine_read_buffer(s->engine, &size);
	int turns;

	for (turns = 0; turns < 8 && !s->closed; turns++) {
		ssize_t n = read(s->fd, buf, size);
		int ret;

		if (n > 0) {
			ret = stream_ingest(s, buf, n);
			if (ret < 0) {
				log_err("%s: cannot spool: %s", s->label, strerror(-ret));
				s->closed = true;
				stream_notify(s, STREAM_EV_ERROR, ret);
			}
			if ((size_t)n < size)
				return;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0)
			log_warn("%s: read failed: %s", s->label, strerror(errno));
		s->eof = true;
		stream_finish(s);
		stream_notify(s, STREAM_EV_EOF, 0);
		return;
	}
}

/* The engine's callback: the stream is readable. */
static bool readable(void *arg, int revents)
{
	struct stream *s = arg;

	(void)revents;
	if (s->closed)
		return false;
	drain(s);
	rest(s);
	return true;
}

/* The engine's gate: a closed stream is dropped; one at its end or paused waits; one resting rests. */
static uint64_t stream_gate(void *arg)
{
	const struct stream *s = arg;

	if (s->closed)
		return ENGINE_POLL_DONE;
	if (s->eof || s->paused)
		return ENGINE_POLL_NOT;
	if (!s->eager && s->pace.rest_until > engine_now_ns())
		return s->pace.rest_until;
	return ENGINE_POLL_NOW;
}

/**
 * stream_serve() - have the engine read a stream, as any other fd it watches
 * @s: the stream; it must outlive the engine or be closed first
 * @e: the engine
 *
 * Return: 0 or -ENOMEM.
 */
int stream_serve(struct stream *s, struct engine *e)
{
	int fl;

	/*
	 * O_NOATIME: every read of a FIFO would otherwise stamp its inode, and
	 * on a disk filesystem that dirties the inode on each read (7% of the
	 * collector's CPU with 64 slow streams). Only the owner or root may set
	 * it; without it the stream works the same.
	 */
	fl = fcntl(s->fd, F_GETFL);
	if (fcntl(s->fd, F_SETFL, fl | O_NONBLOCK | O_NOATIME) < 0)
		fcntl(s->fd, F_SETFL, fl | O_NONBLOCK);
	s->engine = e;
	if (!engine_add_reader(e, s->fd, readable, stream_gate, s))
		return -ENOMEM;
	return 0;
}
