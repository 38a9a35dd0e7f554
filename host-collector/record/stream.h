/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A data stream (stream.c): one guest vCPU port, or one host CPU, checked
 * page by page into the spool.
 */
#ifndef RECORD_STREAM_H
#define RECORD_STREAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/spool.h"
#include "vt_pages.h"

struct engine;

enum stream_ev { STREAM_EV_ERROR, STREAM_EV_EOF, STREAM_EV_LIMIT };

/**
 * struct compress_stream - a stream's compression ahead (stream-compress.c)
 * @fd: cpuN.zst, -1 when not compressed ahead
 * @avail: region bytes written (the engine stores, the thread loads)
 * @need: @avail at which the thread has a whole chunk of this stream to do
 *	(the thread stores, the engine loads: it wakes a sleeping thread then)
 * @sum: what cpuN.zst holds so far (@pages and @subbuf filled at the detach)
 * @on: attached; @busy: the thread is on it; @closing: being detached;
 *	@failed: stopped at @sum.raw (the finish does the rest)
 *
 * The thread alone writes @sum while @busy; the detach reads it after @busy
 * is clear, under the lock.
 */
struct compress_stream {
	int fd;
	atomic_uint_fast64_t avail;
	atomic_uint_fast64_t need;
	struct spool_zsum sum;
	bool on, busy, closing, failed;
};

/**
 * struct stream_pace - a stream's rest between drains (stream.c's rest())
 * @rest_until: no poll before then (engine_now_ns())
 * @win_ns: the rate window's start (0: never drained)
 * @win_bytes: the stream's bytes then
 * @win_rate: bytes/s over the last whole window
 * @last_ns: the previous drain's time
 */
struct stream_pace {
	uint64_t rest_until;
	uint64_t win_ns;
	uint64_t win_bytes;
	double win_rate;
	uint64_t last_ns;
};

/**
 * struct stream - one source of whole pages
 * @fd: what the engine reads (a FIFO, a socket, or a host pipe)
 * @label: "guest demo cpu1" or "host cpu0", for messages
 * @cpu: the CPU number in its trace
 * @notify: tells @owner of errors, the end, and a used-up @budget
 * @page: a partial page carried between reads
 * @have: bytes in @page
 * @spool_fd: cpuN.pages in the spool; @bad_fd cpuN.bad, opened on first need
 * @data_fd: the trace's spool "data" file; this CPU's pages go to
 *	@cpu * @region + @data_len (see spool_data_open()), -1 until opened
 */
struct stream {
	int fd;
	char label[96];
	unsigned int cpu;
	void (*notify)(void *owner, struct stream *s, enum stream_ev ev, int err);
	void *owner;
	struct spool_budget *budget;
	uint32_t subbuf;
	struct vt_page_fmt fmt;
	uint8_t *page;
	size_t have;
	int spool_fd;
	int bad_fd;
	int data_fd;
	uint64_t region;
	uint64_t data_len;
	uint64_t written_back;	/* region bytes whose writeback has been started */
	struct engine *engine;	/* the engine serving it (engine_add()), for writeback requests */
	int dir;		/* the trace's spool directory (its owner's fd) */
	bool eof;
	bool closed;
	bool paused;
	bool eager;		/* read as soon as it is readable (being stopped): see stream.c's rest() */
	struct stream_pace pace;
	struct compress_stream compress;	/* compression ahead of the finish (stream-compress.c) */
	struct live *live;	/* --live: its good pages are shown too (live.c) */
	unsigned int live_trace;	/* and as which trace */
	/* figures */
	uint64_t bytes;		/* received from the guest */
	uint64_t bytes_session;	/* received since the last START */
	uint64_t pages;		/* good pages spooled */
	uint64_t first_ns;	/* engine_now_ns() when the first came, 0: none yet */
	uint64_t events;	/* events in them */
	uint64_t bad_pages;	/* malformed: the first SPOOL_BAD_KEEP kept in cpuN.bad */
	uint64_t bad_kept;	/* of them, in cpuN.bad */
	uint64_t dropped_pages;	/* beyond --max-size */
	uint64_t missed_pages;	/* pages flagged "events lost before this one" */
	uint64_t lost_events;	/* lost counts stored in page headers */
	bool bad_logged;
	bool size_logged;	/* pages of another size than announced: said once */
	/* where the stream stands (a live migration: record's --incoming, session.c) */
	uint64_t framed;	/* bytes cut into pages so far, resume marks included */
	uint64_t last_ts;	/* the timestamp of the last good page (guest clock) */
	uint64_t marks;		/* resume marks seen (stripped, never spooled) */
	bool marked;		/* the first one came: */
	uint64_t mark_pos;	/* the agent's count of bytes before it */
	uint64_t mark_pre;	/* bytes this stream carried before it */
	uint64_t resume_base;	/* where this stream's first byte stands in the agent's count */
	struct {
		bool span;			/* --hold: the kept events' span is wanted */
		struct spool_window window;	/* and what it is so far */
	} hold;
};

int stream_serve(struct stream *s, struct engine *e);
/* stream-compress.c: zstd chunks compressed on an idle core while the pages stream in */
int compress_start(int level);
void compress_stop(void);
void compress_attach(struct stream *s);
void compress_publish(struct stream *s);
void compress_detach(struct stream *s);
int stream_init(struct stream *s, int fd, const char *label, unsigned int cpu,
		uint32_t subbuf, int spool_dir);
void stream_close(struct stream *s);
int stream_ingest(struct stream *s, const uint8_t *data, size_t len);
int stream_finish(struct stream *s);
int stream_write_all(int fd, const void *buf, size_t len);
bool stream_budget_take(struct spool_budget *b, uint64_t len, uint64_t *what);
void stream_notify(struct stream *s, enum stream_ev ev, int err);

#endif
