// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One end of a control-protocol connection (vt_conn.h): sequence numbers,
 * the frame buffer, the receive parser with a staging buffer in front of it,
 * a bounded output queue and the marker hook.
 *
 * Receive path: read() lands in the staging buffer, which is fed to the
 * parser; what the parser cannot take yet (its buffer holds one largest
 * frame) stays there as "pending" and goes in first the next time.
 * Nothing more is read while pending bytes wait, so memory is bounded by
 * the parser plus one staging buffer whatever the peer sends.
 *
 * Send path: a frame goes straight to the fd when nothing is queued; the
 * part the fd does not take, and every frame sent while something is
 * queued, goes to the output queue in order, so frames never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt_conn.h"
#include "vt_grow.h"

/* Staging buffer for read() and for bytes the parser did not take yet. */
/* vt_conn_send_wait() polls in slices this long (see there). */
#define SEND_WAIT_SLICE_MS	20
#define CONN_RX_CHUNK		(64u << 10)
/* Bytes one vt_conn_read() call takes at most, so one peer cannot starve a loop. */
#define CONN_READ_MAX		(256u << 10)
/* An emptied output queue larger than this is given back. */
#define CONN_TXQ_KEEP		(256u << 10)

struct vt_conn {
	int rfd;
	int wfd;
	uint32_t seq;
	vt_conn_hook hook;
	void *hook_arg;
	uint8_t *frame;			/* VT_PROTO_FRAME_MAX bytes */
	/* receive */
	struct vt_proto_parser *parser;	/* NULL after a failed vt_conn_reset_rx() */
	uint64_t skipped_before;	/* garbage counted by parsers replaced since */
	uint8_t *rx;			/* CONN_RX_CHUNK staging bytes, NULL at rest */
	size_t rx_off;			/* pending bytes are rx[rx_off, rx_off + rx_len) */
	size_t rx_len;
	/* send: queued bytes are txq[tx_off, tx_off + tx_len) */
	uint8_t *txq;
	size_t tx_off;
	size_t tx_len;
	size_t tx_cap;
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/**
 * vt_conn_new() - make a connection on a control port
 * @rfd: the fd to read from
 * @wfd: the fd to write to; may be @rfd
 *
 * Both fds are made non-blocking. They stay the caller's: vt_conn_free()
 * does not close them.
 *
 * Return: the connection, or NULL with errno set (EINVAL, ENOMEM, or the
 * error of fcntl()).
 */
struct vt_conn *vt_conn_new(int rfd, int wfd)
{
	struct vt_conn *c;
	int ret;

	if (rfd < 0 || wfd < 0) {
		errno = EINVAL;
		return NULL;
	}
	ret = set_nonblock(rfd);
	if (!ret && wfd != rfd)
		ret = set_nonblock(wfd);
	if (ret < 0) {
		errno = -ret;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->rfd = rfd;
	c->wfd = wfd;
	c->frame = malloc(VT_PROTO_FRAME_MAX);
	if (!c->frame)
		goto err_free_conn;
	c->parser = vt_proto_parser_new();
	if (!c->parser)
		goto err_free_frame;
	return c;

err_free_frame:
	free(c->frame);
err_free_conn:
	free(c);
	errno = ENOMEM;
	return NULL;
}

/**
 * vt_conn_free() - free a connection; its fds stay open
 * @c: the connection, or NULL
 *
 * Queued bytes that were not flushed are dropped.
 */
void vt_conn_free(struct vt_conn *c)
{
	if (!c)
		return;
	vt_proto_parser_free(c->parser);
	free(c->txq);
	free(c->rx);
	free(c->frame);
	free(c);
}

/**
 * vt_conn_rfd() - the fd the connection reads from
 * @c: the connection
 *
 * Return: the fd given to vt_conn_new().
 */
int vt_conn_rfd(const struct vt_conn *c)
{
	return c->rfd;
}

/**
 * vt_conn_wfd() - the fd the connection writes to
 * @c: the connection
 *
 * Return: the fd given to vt_conn_new().
 */
int vt_conn_wfd(const struct vt_conn *c)
{
	return c->wfd;
}

/**
 * vt_conn_set_hook() - see every frame sent and every message received
 * @c: the connection
 * @hook: called with (arg, tx, type, seq); NULL for none
 * @arg: its argument
 */
void vt_conn_set_hook(struct vt_conn *c, vt_conn_hook hook, void *arg)
{
	c->hook = hook;
	c->hook_arg = arg;
}

/**
 * vt_conn_next_seq() - the sequence number for the next frame sent
 * @c: the connection
 *
 * Return: the previous one plus 1, skipping 0 when it wraps.
 */
uint32_t vt_conn_next_seq(struct vt_conn *c)
{
	if (++c->seq == 0)
		c->seq = 1;
	return c->seq;
}

/**
 * vt_conn_seq() - the sequence number last handed out
 * @c: the connection
 *
 * Return: it, or 0 if vt_conn_next_seq() was never called.
 */
uint32_t vt_conn_seq(const struct vt_conn *c)
{
	return c->seq;
}

/**
 * vt_conn_frame() - the buffer an encoder writes the next frame into
 * @c: the connection
 *
 * Return: VT_PROTO_FRAME_MAX bytes owned by @c.
 */
uint8_t *vt_conn_frame(struct vt_conn *c)
{
	return c->frame;
}

/* ---------------------------------------------------------------- send */

/*
 * Write as much of @buf as the fd takes now. Return: bytes written (maybe
 * fewer than @len, maybe 0 when the fd is full), or -errno.
 */
static ssize_t write_some(int fd, const uint8_t *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(fd, buf + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return -EIO;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		return -errno;
	}
	return (ssize_t)done;
}

/* Append @len bytes behind the queue; the caller checked VT_CONN_TXQ_MAX. */
static int txq_append(struct vt_conn *c, const uint8_t *buf, size_t len)
{
	size_t need = c->tx_len + len;
	int ret;

	if (c->tx_off + need > c->tx_cap && c->tx_off) {
		memmove(c->txq, c->txq + c->tx_off, c->tx_len);
		c->tx_off = 0;
	}
	/* A frame's size at least: a queue seldom holds less. */
	ret = vt_grow_max((void **)&c->txq, &c->tx_cap, need > VT_PROTO_FRAME_MAX ? need :
			  VT_PROTO_FRAME_MAX, 1, VT_CONN_TXQ_MAX);
	if (ret < 0)
		return ret;
	memcpy(c->txq + c->tx_off + c->tx_len, buf, len);
	c->tx_len += len;
	return 0;
}

static int flush(struct vt_conn *c)
{
	ssize_t n;

	if (!c->tx_len)
		return 0;
	n = write_some(c->wfd, c->txq + c->tx_off, c->tx_len);
	if (n < 0)
		return (int)n;
	c->tx_off += (size_t)n;
	c->tx_len -= (size_t)n;
	if (c->tx_len)
		return 1;
	c->tx_off = 0;
	if (c->tx_cap > CONN_TXQ_KEEP) {
		free(c->txq);
		c->txq = NULL;
		c->tx_cap = 0;
	}
	return 0;
}

static int send_frame(struct vt_conn *c, int len)
{
	struct vt_proto_msg hdr;
	ssize_t n = 0;
	int ret;

	if (len < 0)
		return len;
	if ((size_t)len > VT_PROTO_FRAME_MAX)
		return -EINVAL;
	if (c->tx_len + (size_t)len > VT_CONN_TXQ_MAX)
		return -ENOBUFS;
	/*
	 * The hook sees the frame before any byte leaves, so a marker for it
	 * precedes the peer's. A frame of unknown type (tests send them) is
	 * still described; bytes that are no frame at all are sent unmarked.
	 */
	ret = vt_proto_hdr_decode(c->frame, (size_t)len, &hdr);
	if (c->hook && (ret == 0 || (ret == -EPROTO && hdr.type)))
		c->hook(c->hook_arg, true, hdr.type, hdr.seq);
	if (!c->tx_len) {
		n = write_some(c->wfd, c->frame, (size_t)len);
		if (n < 0)
			return (int)n;
		if (n == len)
			return 0;
	}
	ret = txq_append(c, c->frame + n, (size_t)len - (size_t)n);
	if (ret < 0)
		return ret;
	ret = flush(c);
	return ret < 0 ? ret : 0;
}

/**
 * vt_conn_send() - send the frame an encoder wrote into vt_conn_frame()
 * @c: the connection
 * @len: what the encoder returned; a negative value is returned as it is
 *
 * The hook is called before the frame is written. What the fd does not
 * take at once is queued behind anything queued before; the caller flushes
 * with vt_conn_flush() when the fd is writable (vt_conn_want_write()).
 *
 * Return: 0 (sent or queued); @len if negative; -ENOBUFS if the queue would
 * grow past VT_CONN_TXQ_MAX (nothing was queued, the hook was not called);
 * -EINVAL if @len exceeds VT_PROTO_FRAME_MAX; -ENOMEM; -EIO or -errno of
 * write() (-EPIPE, ...): the stream is then unusable.
 */
int vt_conn_send(struct vt_conn *c, int len)
{
	int saved = errno;
	int ret = send_frame(c, len);

	errno = saved;
	return ret;
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

/**
 * vt_conn_send_wait() - send a frame and wait until the queue is written
 * @c: the connection
 * @len: as for vt_conn_send()
 * @timeout_ms: how long to wait in all, -1 for no limit
 *
 * For a caller that may block (the agent): waits in poll(), never spins.
 *
 * Return: 0 when every queued byte is written; -ETIMEDOUT when time ran
 * out first (the rest stays queued); the errors of vt_conn_send() and of
 * poll().
 */
int vt_conn_send_wait(struct vt_conn *c, int len, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? 0 : mono_ms() + timeout_ms;
	int saved = errno;
	int ret;

	ret = send_frame(c, len);
	while (ret == 0 && c->tx_len) {
		struct pollfd pfd = { .fd = c->wfd, .events = POLLOUT };
		int wait = -1;

		if (timeout_ms >= 0) {
			long long left = deadline - mono_ms();

			if (left <= 0) {
				ret = -ETIMEDOUT;
				break;
			}
			wait = (int)left;
		}
		/*
		 * In slices: a writable port whose wake-up is missed (seen with
		 * virtio ports under a loaded host) costs a slice, not the
		 * whole timeout.
		 */
		if (wait < 0 || wait > SEND_WAIT_SLICE_MS)
			wait = SEND_WAIT_SLICE_MS;
		if (poll(&pfd, 1, wait) < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		ret = flush(c);
		if (ret > 0)
			ret = 0;
	}
	errno = saved;
	return ret;
}

/**
 * vt_conn_flush() - write queued bytes
 * @c: the connection
 *
 * Return: 0 when the queue is empty; 1 when bytes remain (wait for POLLOUT
 * on vt_conn_wfd()); -EIO or -errno of write().
 */
int vt_conn_flush(struct vt_conn *c)
{
	int saved = errno;
	int ret = flush(c);

	errno = saved;
	return ret;
}

/**
 * vt_conn_want_write() - whether bytes wait in the output queue
 * @c: the connection
 *
 * Return: true if the caller should poll vt_conn_wfd() for POLLOUT.
 */
bool vt_conn_want_write(const struct vt_conn *c)
{
	return c->tx_len != 0;
}

/**
 * vt_conn_queued() - bytes in the output queue
 * @c: the connection
 *
 * Return: the count.
 */
size_t vt_conn_queued(const struct vt_conn *c)
{
	return c->tx_len;
}

/* ---------------------------------------------------------------- receive */

/* Move pending bytes into the parser. Return: true if none remain. */
static bool feed_pending(struct vt_conn *c)
{
	size_t fed;

	if (!c->rx_len)
		return true;
	fed = vt_proto_parser_feed(c->parser, c->rx + c->rx_off, c->rx_len);
	c->rx_off += fed;
	c->rx_len -= fed;
	if (c->rx_len)
		return false;
	c->rx_off = 0;
	return true;
}

static int conn_read(struct vt_conn *c)
{
	size_t total = 0;
	ssize_t n;

	if (!c->parser)
		return -ENOMEM;
	if (!c->rx && !(c->rx = malloc(CONN_RX_CHUNK)))
		return -ENOMEM;
	while (total < CONN_READ_MAX) {
		if (!feed_pending(c))
			break;
		n = read(c->rfd, c->rx, CONN_RX_CHUNK);
		if (n > 0) {
			total += (size_t)n;
			c->rx_off = 0;
			c->rx_len = (size_t)n;
			feed_pending(c);
			if ((size_t)n < CONN_RX_CHUNK)
				break;	/* most likely drained: poll() says when there is more */
			continue;
		}
		if (n == 0)
			return total ? (int)total : 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		return total ? (int)total : -errno;
	}
	return total ? (int)total : -EAGAIN;
}

/**
 * vt_conn_read() - take what the read side has into the parser
 * @c: the connection
 *
 * Reads without blocking, at most about 256 KiB per call, and nothing while
 * bytes from an earlier read still wait for room in the parser (call
 * vt_conn_next() until it returns 0 after every read). Invalidates the
 * message last returned by vt_conn_next().
 *
 * Return: bytes read (> 0); 0 at end of file; -EAGAIN when nothing was read
 * (the fd had nothing, or earlier bytes still wait); -ENOMEM after a failed
 * vt_conn_reset_rx(); -errno of read(). An error after some bytes were read
 * is returned by the next call.
 */
int vt_conn_read(struct vt_conn *c)
{
	int saved = errno;
	int ret = conn_read(c);

	errno = saved;
	return ret;
}

/**
 * vt_conn_feed() - give the parser bytes the caller read itself
 * @c: the connection
 * @data: the bytes
 * @len: how many
 *
 * What the parser cannot take yet is kept and fed before anything else.
 * Invalidates the message last returned by vt_conn_next().
 *
 * Return: 0 when all @len bytes were taken; -ENOBUFS, with none of them
 * taken, when the parser and the pending buffer (64 KiB) have no room for
 * them all: call vt_conn_next() first; -ENOMEM after a failed
 * vt_conn_reset_rx().
 */
int vt_conn_feed(struct vt_conn *c, const void *data, size_t len)
{
	size_t room, fed = 0;

	if (!c->parser)
		return -ENOMEM;
	if (!len)
		return 0;
	if (!data)
		return -EINVAL;
	/* Feeding nothing releases the message last returned: the room is then exact. */
	vt_proto_parser_feed(c->parser, data, 0);
	room = CONN_RX_CHUNK - c->rx_len;
	if (feed_pending(c))
		room += VT_PROTO_FRAME_MAX - vt_proto_parser_buffered(c->parser);
	if (len > room)
		return -ENOBUFS;
	if (!c->rx_len)
		fed = vt_proto_parser_feed(c->parser, data, len);
	if (fed < len) {
		if (!c->rx && !(c->rx = malloc(CONN_RX_CHUNK)))
			return -ENOMEM;
		if (c->rx_off + c->rx_len + (len - fed) > CONN_RX_CHUNK) {
			memmove(c->rx, c->rx + c->rx_off, c->rx_len);
			c->rx_off = 0;
		}
		memcpy(c->rx + c->rx_off + c->rx_len, (const uint8_t *)data + fed, len - fed);
		c->rx_len += len - fed;
	}
	return 0;
}

/**
 * vt_conn_next() - take the next whole message
 * @c: the connection
 * @msg: the message; its payload stays valid until the next
 *       vt_conn_next(), vt_conn_read() or vt_conn_feed() on @c
 *
 * Pending bytes are fed as the parser makes room. The hook sees each
 * message returned.
 *
 * Return: 1 with a message; 0 when more bytes are needed; the errors of
 * vt_proto_parser_next() (-EBADMSG or -EMSGSIZE for skipped garbage,
 * -EPROTO with @msg->type set for a frame of unknown type), after which
 * the caller keeps calling; -ENOMEM after a failed vt_conn_reset_rx().
 */
int vt_conn_next(struct vt_conn *c, struct vt_proto_msg *msg)
{
	size_t before;
	int r;

	if (!c->parser)
		return -ENOMEM;
	for (;;) {
		r = vt_proto_parser_next(c->parser, msg);
		if (r == 1 && c->hook)
			c->hook(c->hook_arg, false, msg->type, msg->seq);
		if (r != 0 || !c->rx_len)
			return r;
		before = c->rx_len;
		feed_pending(c);
		if (c->rx_len == before)
			return 0;	/* cannot happen: a parser wanting bytes has room */
	}
}

/**
 * vt_conn_skipped() - garbage bytes skipped on this connection
 * @c: the connection
 *
 * Return: the count, across vt_conn_reset_rx() calls.
 */
uint64_t vt_conn_skipped(const struct vt_conn *c)
{
	return c->skipped_before + (c->parser ? vt_proto_parser_skipped(c->parser) : 0);
}

/**
 * vt_conn_rest() - give back the receive side's memory while it holds nothing
 * @c: the connection
 *
 * A connection that carried a metadata bundle has written through its
 * staging buffer and its parser's frame buffer, 64 KiB each, which a quiet
 * connection never needs again. When neither holds a byte, the staging
 * buffer is freed (made again at the next read) and the parser replaced by
 * a new one, its pages untouched: malloc_trim() can then give the old ones
 * back (call it before too: the new parser may take pages freed and not yet
 * given back). Invalidates the message last returned by vt_conn_next().
 *
 * Return: 0; -EBUSY, nothing done, when bytes are pending; -ENOMEM, nothing
 * done, when no new parser could be made.
 */
int vt_conn_rest(struct vt_conn *c)
{
	static const uint8_t none;
	struct vt_proto_parser *p;

	if (!c->parser)
		return 0;
	vt_proto_parser_feed(c->parser, &none, 0);	/* releases the message last returned */
	if (c->rx_len || vt_proto_parser_buffered(c->parser))
		return -EBUSY;
	/* First: the new parser does not take the staging buffer's pages. */
	p = vt_proto_parser_new();
	if (!p)
		return -ENOMEM;		/* the old one goes on */
	c->skipped_before += vt_proto_parser_skipped(c->parser);
	vt_proto_parser_free(c->parser);
	c->parser = p;
	free(c->rx);
	c->rx = NULL;
	c->rx_off = 0;
	return 0;
}

/**
 * vt_conn_reset_rx() - forget received bytes: a new peer on the same port
 * @c: the connection
 *
 * Drops pending bytes and any partial message and starts a fresh parser.
 * Should that allocation fail, vt_conn_read(), vt_conn_feed() and
 * vt_conn_next() return -ENOMEM until a later call succeeds.
 */
void vt_conn_reset_rx(struct vt_conn *c)
{
	struct vt_proto_parser *p = vt_proto_parser_new();

	if (c->parser) {
		c->skipped_before += vt_proto_parser_skipped(c->parser);
		vt_proto_parser_free(c->parser);
	}
	c->parser = p;
	c->rx_off = 0;
	c->rx_len = 0;
}
