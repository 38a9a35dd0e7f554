// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control connection (lib/conn.c) on socketpairs and pipes: frames
 * round-trip with the hook called in order, a full pipe queues and flush
 * drains it, the queue's bound refuses whole frames, garbage is skipped and
 * counted, 1-byte reads reassemble, EOF reads as 0, seq never is 0; at rest
 * the receive side gives its written-through buffers back.
 *
 * conn.c is compiled into this test (not taken from libvtrace.a) so that the
 * sequence-wrap test can start the counter near UINT32_MAX instead of
 * sending four billion frames.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "conn.c"

#define T_MAX_EVENTS	128

struct t_event {
	bool tx;
	uint16_t type;
	uint32_t seq;
	int peer_bytes;		/* bytes readable at the peer when the hook ran (tx) */
};

struct t_log {
	int peer_fd;		/* where to look for bytes that already left, or -1 */
	unsigned int n;
	struct t_event ev[T_MAX_EVENTS];
};

static void t_hook(void *arg, bool tx, uint16_t type, uint32_t seq)
{
	struct t_log *log = arg;
	struct t_event *e;
	int avail = -1;

	assert_true(log->n < T_MAX_EVENTS);
	e = &log->ev[log->n++];
	e->tx = tx;
	e->type = type;
	e->seq = seq;
	if (tx && log->peer_fd >= 0 && ioctl(log->peer_fd, FIONREAD, &avail) < 0)
		avail = -1;
	e->peer_bytes = avail;
}

static void t_socketpair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static int t_send_empty(struct vt_conn *c, uint16_t type)
{
	return vt_conn_send(c, vt_proto_enc_empty(vt_conn_frame(c), VT_PROTO_FRAME_MAX, type,
						   vt_conn_next_seq(c)));
}

/* A META frame of @payload bytes (chunk header included), sent with vt_conn_send(). */
static int t_send_meta(struct vt_conn *c, size_t payload, uint8_t fill)
{
	static uint8_t data[VT_PROTO_META_CHUNK_MAX];
	struct vt_proto_meta_chunk ch = { .data = data };

	memset(data, fill, sizeof(data));
	ch.len = (uint32_t)(payload - VT_PROTO_META_HDR_SIZE);
	ch.total = ch.len;
	return vt_conn_send(c, vt_proto_enc_meta(vt_conn_frame(c), VT_PROTO_FRAME_MAX,
						 vt_conn_next_seq(c), &ch));
}

/* Read everything @c's fd has until @want messages came; returns how many came. */
static unsigned int t_recv(struct vt_conn *c, unsigned int want, struct vt_proto_msg *last)
{
	struct vt_proto_msg msg;
	unsigned int got = 0;
	int r, idle = 0;

	while (got < want && idle < 200) {
		r = vt_conn_read(c);
		if (r == -EAGAIN) {
			idle++;
			usleep(1000);
		} else {
			assert_true(r > 0);
			idle = 0;
		}
		while ((r = vt_conn_next(c, &msg)) == 1) {
			got++;
			if (last)
				*last = msg;
		}
		assert_int_equal(r, 0);
	}
	return got;
}

static void test_roundtrip_hook(void **state)
{
	struct t_log alog = { .peer_fd = -1 }, blog = { .peer_fd = -1 };
	struct vt_proto_sync s = { .cpu = 3, .probe = 7, .tsc = 0x1122334455667788ull, .ran_on = 3 };
	struct vt_proto_sync d;
	struct vt_proto_msg msg;
	struct vt_conn *a, *b;
	const char *text;
	int sv[2], fl, n1, n2;

	t_socketpair(sv);
	a = vt_conn_new(sv[0], sv[0]);
	b = vt_conn_new(sv[1], sv[1]);
	assert_non_null(a);
	assert_non_null(b);
	fl = fcntl(sv[0], F_GETFL);
	assert_true(fl & O_NONBLOCK);
	assert_int_equal(vt_conn_rfd(a), sv[0]);
	assert_int_equal(vt_conn_wfd(a), sv[0]);
	alog.peer_fd = sv[1];
	vt_conn_set_hook(a, t_hook, &alog);
	vt_conn_set_hook(b, t_hook, &blog);

	/* nothing there yet */
	assert_int_equal(vt_conn_read(b), -EAGAIN);
	assert_int_equal(vt_conn_next(b, &msg), 0);

	n1 = vt_proto_enc_sync(vt_conn_frame(a), VT_PROTO_FRAME_MAX, VT_PROTO_SYNC_REPLY,
			       vt_conn_next_seq(a), &s);
	assert_true(n1 > 16);
	assert_int_equal(vt_conn_send(a, n1), 0);
	n2 = vt_proto_enc_string(vt_conn_frame(a), VT_PROTO_FRAME_MAX, VT_PROTO_MARKER,
				 vt_conn_next_seq(a), "hello there");
	assert_true(n2 > 16);
	assert_int_equal(vt_conn_send(a, n2), 0);
	assert_int_equal(t_send_empty(a, VT_PROTO_BYE), 0);
	assert_int_equal(vt_conn_seq(a), 3);
	assert_false(vt_conn_want_write(a));
	assert_int_equal(vt_conn_queued(a), 0);

	/* tx hooks: in order, each before its bytes reached the peer */
	assert_int_equal(alog.n, 3);
	assert_true(alog.ev[0].tx && alog.ev[0].type == VT_PROTO_SYNC_REPLY && alog.ev[0].seq == 1);
	assert_true(alog.ev[1].tx && alog.ev[1].type == VT_PROTO_MARKER && alog.ev[1].seq == 2);
	assert_true(alog.ev[2].tx && alog.ev[2].type == VT_PROTO_BYE && alog.ev[2].seq == 3);
	assert_int_equal(alog.ev[0].peer_bytes, 0);
	assert_int_equal(alog.ev[1].peer_bytes, n1);
	assert_int_equal(alog.ev[2].peer_bytes, n1 + n2);

	/* rx hooks as vt_conn_next() hands the messages out */
	assert_true(vt_conn_read(b) > 0);
	assert_int_equal(blog.n, 0);
	assert_int_equal(vt_conn_next(b, &msg), 1);
	assert_int_equal(msg.type, VT_PROTO_SYNC_REPLY);
	assert_int_equal(vt_proto_dec_sync(&msg, &d), 0);
	assert_true(d.tsc == s.tsc && d.probe == 7 && d.ran_on == 3);
	assert_int_equal(blog.n, 1);
	assert_int_equal(vt_conn_next(b, &msg), 1);
	assert_int_equal(vt_proto_dec_string(&msg, &text), 0);
	assert_string_equal(text, "hello there");
	assert_int_equal(vt_conn_next(b, &msg), 1);
	assert_int_equal(msg.type, VT_PROTO_BYE);
	assert_int_equal(vt_conn_next(b, &msg), 0);
	assert_int_equal(blog.n, 3);
	assert_true(!blog.ev[0].tx && blog.ev[0].type == VT_PROTO_SYNC_REPLY && blog.ev[0].seq == 1);
	assert_true(!blog.ev[1].tx && blog.ev[1].type == VT_PROTO_MARKER && blog.ev[1].seq == 2);
	assert_true(!blog.ev[2].tx && blog.ev[2].type == VT_PROTO_BYE && blog.ev[2].seq == 3);

	/* and back the other way, with the encoder's error passed through untouched */
	assert_int_equal(vt_conn_send(b, vt_proto_enc_ack(vt_conn_frame(b), VT_PROTO_FRAME_MAX,
							  VT_PROTO_OK, vt_conn_next_seq(b), 3)), 0);
	assert_int_equal(vt_conn_send(b, -EMSGSIZE), -EMSGSIZE);
	assert_int_equal(vt_conn_send(b, vt_proto_enc_empty(vt_conn_frame(b), VT_PROTO_FRAME_MAX,
							    VT_PROTO_OK, 9)), -EINVAL);
	assert_int_equal(blog.n, 4);
	assert_int_equal(t_recv(a, 1, &msg), 1);
	assert_int_equal(msg.type, VT_PROTO_OK);
	assert_int_equal(alog.n, 4);
	assert_true(!alog.ev[3].tx && alog.ev[3].type == VT_PROTO_OK && alog.ev[3].seq == 1);

	/* EOF after the peer closes; the fds stay open after vt_conn_free() */
	vt_conn_free(b);
	assert_int_equal(fcntl(sv[1], F_GETFD) >= 0, 1);
	close(sv[1]);
	assert_int_equal(vt_conn_read(a), 0);
	assert_int_equal(vt_conn_next(a, &msg), 0);
	assert_int_equal(t_send_empty(a, VT_PROTO_BYE), -EPIPE);
	vt_conn_free(a);
	close(sv[0]);
}

/* A pipe of one page: sending queues, flush says 1 until the reader took everything. */
static void test_pipe_queue_flush(void **state)
{
	struct t_log log = { .peer_fd = -1 };
	struct vt_conn *w, *r;
	struct vt_proto_msg msg;
	unsigned int got = 0, i;
	int p[2], ret;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 4096);
	w = vt_conn_new(p[0], p[1]);	/* a writer with a different read fd */
	r = vt_conn_new(p[0], p[0]);
	assert_non_null(w);
	assert_non_null(r);
	assert_true(fcntl(p[1], F_GETFL) & O_NONBLOCK);
	vt_conn_set_hook(w, t_hook, &log);

	/* three 40 KiB frames: the first fills the pipe, the rest wait in order */
	for (i = 0; i < 3; i++)
		assert_int_equal(t_send_meta(w, 40000, (uint8_t)('a' + i)), 0);
	assert_int_equal(log.n, 3);
	assert_true(vt_conn_want_write(w));
	assert_true(vt_conn_queued(w) > 3 * (40000 + 16) - 65536);
	assert_int_equal(vt_conn_flush(w), 1);
	assert_int_equal(vt_conn_flush(w), 1);

	for (i = 0; i < 10000 && (got < 3 || vt_conn_want_write(w)); i++) {
		size_t before = vt_conn_queued(w);

		ret = vt_conn_read(r);
		assert_true(ret > 0 || ret == -EAGAIN);
		while ((ret = vt_conn_next(r, &msg)) == 1) {
			struct vt_proto_meta_chunk ch;

			assert_int_equal(msg.type, VT_PROTO_META);
			assert_int_equal(msg.seq, got + 1);
			assert_int_equal(vt_proto_dec_meta(&msg, &ch), 0);
			assert_int_equal(ch.len, 40000 - VT_PROTO_META_HDR_SIZE);
			assert_int_equal(ch.data[0], 'a' + got);
			assert_int_equal(ch.data[ch.len - 1], 'a' + got);
			got++;
		}
		assert_int_equal(ret, 0);
		ret = vt_conn_flush(w);
		assert_int_equal(ret, vt_conn_queued(w) ? 1 : 0);
		assert_true(vt_conn_queued(w) <= before);
	}
	assert_int_equal(got, 3);
	assert_false(vt_conn_want_write(w));
	assert_int_equal(vt_conn_flush(w), 0);
	assert_int_equal(vt_conn_skipped(r), 0);
	vt_conn_free(w);
	vt_conn_free(r);
	close(p[0]);
	close(p[1]);
}

/* Nobody reads: the queue takes whole frames up to its bound, then refuses whole frames. */
static void test_queue_bound(void **state)
{
	struct t_log log = { .peer_fd = -1 };
	const size_t flen = VT_PROTO_FRAME_MAX;
	unsigned int sent = 0, got, hooks;
	struct vt_conn *w, *r;
	size_t queued;
	int p[2], ret;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	w = vt_conn_new(p[1], p[1]);
	r = vt_conn_new(p[0], p[0]);
	assert_non_null(w);
	assert_non_null(r);
	vt_conn_set_hook(w, t_hook, &log);
	while ((ret = t_send_meta(w, VT_PROTO_MAX_PAYLOAD, 'x')) == 0)
		sent++;
	assert_int_equal(ret, -ENOBUFS);
	queued = vt_conn_queued(w);
	assert_true(queued <= VT_CONN_TXQ_MAX);
	assert_true(queued + flen > VT_CONN_TXQ_MAX);
	hooks = log.n;
	assert_int_equal(hooks, sent);	/* the refused frame was not marked */
	/* a small frame still fits; another big one does not, and changes nothing */
	assert_int_equal(t_send_empty(w, VT_PROTO_BYE), 0);
	assert_int_equal(vt_conn_queued(w), queued + 16);
	assert_int_equal(t_send_meta(w, VT_PROTO_MAX_PAYLOAD, 'y'), -ENOBUFS);
	assert_int_equal(vt_conn_queued(w), queued + 16);
	assert_int_equal(log.n, hooks + 1);
	assert_int_equal(vt_conn_flush(w), 1);

	/* the reader finds every accepted frame whole, then BYE, and nothing else */
	got = 0;
	for (int i = 0; i < 100000 && vt_conn_want_write(w); i++) {
		struct vt_proto_msg msg;

		ret = vt_conn_read(r);
		assert_true(ret > 0 || ret == -EAGAIN);
		while ((ret = vt_conn_next(r, &msg)) == 1) {
			got++;
			assert_int_equal(msg.type, got <= sent ? VT_PROTO_META : VT_PROTO_BYE);
		}
		assert_int_equal(ret, 0);
		assert_true(vt_conn_flush(w) >= 0);
	}
	assert_false(vt_conn_want_write(w));
	got += t_recv(r, sent + 1 - got, NULL);
	assert_int_equal(got, sent + 1);
	assert_int_equal(vt_conn_skipped(r), 0);
	vt_conn_free(w);
	vt_conn_free(r);
	close(p[0]);
	close(p[1]);
}

/* Garbage between frames is skipped, reported once per run and counted. */
static void test_garbage(void **state)
{
	static const char junk[] = "junk\xff\xfe\n";
	uint8_t f1[64], f2[64];
	struct vt_proto_msg msg;
	struct vt_conn *c;
	int sv[2], n1, n2;

	t_socketpair(sv);
	c = vt_conn_new(sv[0], sv[0]);
	assert_non_null(c);
	n1 = vt_proto_enc_ack(f1, sizeof(f1), VT_PROTO_OK, 5, 4);
	n2 = vt_proto_enc_empty(f2, sizeof(f2), VT_PROTO_STOP, 6);
	assert_int_equal(write(sv[1], f1, n1), n1);
	assert_int_equal(write(sv[1], junk, sizeof(junk) - 1), (ssize_t)sizeof(junk) - 1);
	assert_int_equal(write(sv[1], f2, n2), n2);
	assert_int_equal(write(sv[1], "VTC", 3), 3);	/* a false start of a frame */
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(write(sv[1], f1, n1), n1);
	assert_int_equal(vt_conn_read(c), n1 + (int)sizeof(junk) - 1 + n2 + 4 + n1);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.seq, 5);
	assert_int_equal(vt_conn_next(c, &msg), -EBADMSG);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.type, VT_PROTO_STOP);
	assert_int_equal(msg.seq, 6);
	assert_int_equal(vt_conn_next(c, &msg), -EBADMSG);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.type, VT_PROTO_OK);
	assert_int_equal(vt_conn_next(c, &msg), 0);
	assert_int_equal(vt_conn_skipped(c), sizeof(junk) - 1 + 4);

	/* an unknown type is described and skipped */
	n1 = vt_proto_encode(f1, sizeof(f1), 999, 7, "ab", 2);
	assert_int_equal(vt_conn_feed(c, f1, n1), 0);
	assert_int_equal(vt_conn_next(c, &msg), -EPROTO);
	assert_int_equal(msg.type, 999);
	assert_int_equal(msg.seq, 7);
	assert_int_equal(vt_conn_next(c, &msg), 0);

	/* a new peer: partial bytes are dropped, the count carries on */
	assert_int_equal(vt_conn_feed(c, f2, 10), 0);
	vt_conn_reset_rx(c);
	assert_int_equal(vt_conn_feed(c, f2, n2), 0);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.seq, 6);
	assert_int_equal(vt_conn_skipped(c), sizeof(junk) - 1 + 4);
	vt_conn_free(c);
	close(sv[0]);
	close(sv[1]);
}

/* One byte per read() and per feed: nothing comes out until the last byte. */
static void test_split(void **state)
{
	struct vt_proto_msg msg;
	struct vt_conn *c;
	uint8_t f[128];
	const char *text;
	int sv[2], n, i;

	t_socketpair(sv);
	c = vt_conn_new(sv[0], sv[0]);
	assert_non_null(c);
	n = vt_proto_enc_string(f, sizeof(f), VT_PROTO_MARKER, 42, "split in pieces");
	assert_true(n > 16);
	for (i = 0; i < n; i++) {
		assert_int_equal(write(sv[1], f + i, 1), 1);
		assert_int_equal(vt_conn_read(c), 1);
		assert_int_equal(vt_conn_next(c, &msg), i == n - 1 ? 1 : 0);
	}
	assert_int_equal(msg.seq, 42);
	assert_int_equal(vt_proto_dec_string(&msg, &text), 0);
	assert_string_equal(text, "split in pieces");
	assert_int_equal(vt_conn_read(c), -EAGAIN);
	for (i = 0; i < n; i++) {
		assert_int_equal(vt_conn_feed(c, f + i, 1), 0);
		assert_int_equal(vt_conn_next(c, &msg), i == n - 1 ? 1 : 0);
	}
	assert_int_equal(msg.seq, 42);
	assert_int_equal(vt_conn_skipped(c), 0);
	close(sv[1]);
	assert_int_equal(vt_conn_read(c), 0);
	vt_conn_free(c);
	close(sv[0]);
}

/* More bytes than the parser holds: the rest waits, no byte is lost, memory stays bounded. */
static void test_pending(void **state)
{
	static uint8_t big[3 * VT_PROTO_FRAME_MAX], data[VT_PROTO_META_CHUNK_MAX];
	struct vt_proto_meta_chunk ch = { .data = data };
	struct vt_proto_msg msg;
	struct vt_conn *c;
	size_t off = 0;
	unsigned int got = 0;
	int sv[2], n, r;

	t_socketpair(sv);
	c = vt_conn_new(sv[0], sv[0]);
	assert_non_null(c);
	/* three largest frames fed at once: more than parser + pending holds */
	ch.len = VT_PROTO_META_CHUNK_MAX;
	ch.total = ch.len;
	for (int i = 0; i < 3; i++) {
		n = vt_proto_enc_meta(big + off, sizeof(big) - off, (uint32_t)i + 1, &ch);
		assert_int_equal(n, (int)VT_PROTO_FRAME_MAX);
		off += (size_t)n;
	}
	assert_int_equal(vt_conn_feed(c, big, off), -ENOBUFS);
	assert_int_equal(vt_conn_next(c, &msg), 0);	/* nothing was taken */
	assert_int_equal(vt_conn_feed(c, big, 2 * VT_PROTO_FRAME_MAX - 100), 0);
	/* the parser is full and pending holds the rest: more does not fit */
	assert_int_equal(vt_conn_feed(c, big, CONN_RX_CHUNK), -ENOBUFS);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.seq, 1);
	assert_int_equal(vt_conn_next(c, &msg), 0);	/* frame 2 is 100 bytes short */
	assert_int_equal(vt_conn_feed(c, big + 2 * VT_PROTO_FRAME_MAX - 100, 100), 0);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.seq, 2);
	assert_int_equal(vt_conn_feed(c, big + 2 * VT_PROTO_FRAME_MAX, VT_PROTO_FRAME_MAX), 0);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.seq, 3);
	assert_int_equal(vt_conn_next(c, &msg), 0);

	/*
	 * The same through read(), by a reader that does not call next() in
	 * between: it stops reading while bytes wait for the parser.
	 */
	assert_int_equal(write(sv[1], big, 2 * VT_PROTO_FRAME_MAX), 2 * (ssize_t)VT_PROTO_FRAME_MAX);
	r = vt_conn_read(c);
	assert_true(r > 0 && (size_t)r <= VT_PROTO_FRAME_MAX + CONN_RX_CHUNK);
	assert_true((size_t)r < 2 * VT_PROTO_FRAME_MAX);
	assert_int_equal(vt_conn_read(c), -EAGAIN);
	while ((r = vt_conn_next(c, &msg)) == 1)
		assert_int_equal(msg.seq, ++got);
	assert_int_equal(r, 0);
	assert_int_equal(got, 1);
	assert_true(vt_conn_read(c) > 0);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.seq, 2);
	assert_int_equal(vt_conn_next(c, &msg), 0);
	assert_int_equal(vt_conn_read(c), -EAGAIN);
	assert_int_equal(vt_conn_skipped(c), 0);
	vt_conn_free(c);
	close(sv[0]);
	close(sv[1]);
}

/* The process's Private_Dirty, KiB (smaps_rollup). */
static long t_private_dirty_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Private_Dirty: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Writes @n largest META frames, seq from @seq, and takes them through read() and next(). */
static void t_carry_meta(struct vt_conn *c, int fd, unsigned int n, uint32_t seq)
{
	static uint8_t frame[VT_PROTO_FRAME_MAX], data[VT_PROTO_META_CHUNK_MAX];
	struct vt_proto_meta_chunk ch = { .data = data, .len = VT_PROTO_META_CHUNK_MAX,
					  .total = VT_PROTO_META_CHUNK_MAX };
	struct vt_proto_msg msg;
	unsigned int i;
	int r;

	memset(data, 0x5a, sizeof(data));
	for (i = 0; i < n; i++) {
		assert_int_equal(vt_proto_enc_meta(frame, sizeof(frame), seq + i, &ch), (int)VT_PROTO_FRAME_MAX);
		assert_int_equal(write(fd, frame, sizeof(frame)), (ssize_t)sizeof(frame));
		while ((r = vt_conn_next(c, &msg)) == 0)
			assert_true(vt_conn_read(c) > 0);
		assert_int_equal(r, 1);
		assert_int_equal(msg.seq, seq + i);
		assert_int_equal(msg.type, VT_PROTO_META);
	}
}

/*
 * vt_conn_rest(): with nothing pending, the staging buffer is freed and the
 * parser made anew (malloc_trim() then gives back the 128 KiB a bundle wrote
 * through, measured); with bytes pending, -EBUSY and nothing lost; frames go
 * on after it, and the garbage count stays.
 */
static void test_rest(void **state)
{
	static const char junk[] = "noise\n";
	struct vt_proto_msg msg;
	struct vt_conn *c;
	long before, after;
	int sv[2];

	t_socketpair(sv);
	c = vt_conn_new(sv[0], sv[0]);
	assert_non_null(c);
	assert_int_equal(write(sv[1], junk, sizeof(junk) - 1), (ssize_t)sizeof(junk) - 1);
	assert_int_equal(vt_conn_read(c), (int)sizeof(junk) - 1);
	assert_int_equal(vt_conn_next(c, &msg), -EBADMSG);
	assert_int_equal(vt_conn_next(c, &msg), 0);
	t_carry_meta(c, sv[1], 16, 1);		/* 1 MiB: a metadata bundle */
	assert_int_equal(vt_conn_skipped(c), sizeof(junk) - 1);
	malloc_trim(0);
	before = t_private_dirty_kb();
	assert_int_equal(vt_conn_rest(c), 0);
	assert_null(c->rx);
	malloc_trim(0);
	after = t_private_dirty_kb();
	print_message("Private_Dirty %ld KiB before rest, %ld after\n", before, after);
#ifndef __SANITIZE_ADDRESS__	/* ASan's allocator keeps what is freed */
	assert_true(before - after >= 96);
#endif
	assert_int_equal(vt_conn_skipped(c), sizeof(junk) - 1);
	t_carry_meta(c, sv[1], 2, 17);		/* the receive side works on */
	/* Half a frame pending: nothing is given up. */
	assert_int_equal(t_send_empty(c, VT_PROTO_BYE), 0);
	{
		uint8_t half[VT_PROTO_HDR_SIZE];
		int n = vt_proto_enc_empty(half, sizeof(half), VT_PROTO_BYE, 99);

		assert_int_equal(n, (int)VT_PROTO_HDR_SIZE);
		assert_int_equal(write(sv[1], half, 3), 3);
		assert_int_equal(vt_conn_read(c), 3);
		assert_int_equal(vt_conn_next(c, &msg), 0);
		assert_int_equal(vt_conn_rest(c), -EBUSY);
		assert_int_equal(write(sv[1], half + 3, n - 3), n - 3);
	}
	assert_true(vt_conn_read(c) > 0);
	assert_int_equal(vt_conn_next(c, &msg), 1);
	assert_int_equal(msg.seq, 99);
	assert_int_equal(vt_conn_rest(c), 0);
	vt_conn_free(c);
	close(sv[0]);
	close(sv[1]);
	(void)state;
}

/* Sequence numbers wrap from UINT32_MAX to 1, never 0, also in the frames sent. */
static void test_seq_wrap(void **state)
{
	struct t_log log = { .peer_fd = -1 };
	struct vt_conn *a, *b;
	struct vt_proto_msg msg;
	int sv[2], i;

	t_socketpair(sv);
	a = vt_conn_new(sv[0], sv[0]);
	b = vt_conn_new(sv[1], sv[1]);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(vt_conn_seq(a), 0);
	assert_int_equal(vt_conn_next_seq(a), 1);
	a->seq = UINT32_MAX - 2;
	vt_conn_set_hook(b, t_hook, &log);
	for (i = 0; i < 5; i++)
		assert_int_equal(t_send_empty(a, VT_PROTO_BYE), 0);
	assert_int_equal(vt_conn_seq(a), 3);
	assert_int_equal(t_recv(b, 5, &msg), 5);
	assert_int_equal(log.n, 5);
	assert_int_equal(log.ev[0].seq, UINT32_MAX - 1);
	assert_int_equal(log.ev[1].seq, UINT32_MAX);
	assert_int_equal(log.ev[2].seq, 1);
	assert_int_equal(log.ev[3].seq, 2);
	assert_int_equal(log.ev[4].seq, 3);
	vt_conn_free(a);
	vt_conn_free(b);
	close(sv[0]);
	close(sv[1]);
}

/* send_wait waits in poll() for a slow reader and gives up with -ETIMEDOUT. */
static void test_send_wait(void **state)
{
	struct vt_conn *w;
	int p[2];
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 4096);
	w = vt_conn_new(p[1], p[1]);
	assert_non_null(w);
	assert_int_equal(vt_conn_send_wait(w, vt_proto_enc_empty(vt_conn_frame(w),
				VT_PROTO_FRAME_MAX, VT_PROTO_BYE, vt_conn_next_seq(w)), 100), 0);
	assert_int_equal(vt_conn_send_wait(w, -EBADMSG, 100), -EBADMSG);
	/* fill the pipe: nobody reads, the wait ends at its timeout */
	{
		static uint8_t data[VT_PROTO_META_CHUNK_MAX];
		struct vt_proto_meta_chunk ch = { .data = data, .len = 8000, .total = 8000 };
		struct timespec t0, t1;
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(vt_conn_send_wait(w, vt_proto_enc_meta(vt_conn_frame(w),
					VT_PROTO_FRAME_MAX, vt_conn_next_seq(w), &ch), 150), -ETIMEDOUT);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		assert_true(ms >= 140 && ms < 1000);
		assert_true(vt_conn_want_write(w));
	}
	/* a reader in another process: the next wait completes */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[4096];

		close(p[1]);
		usleep(50000);
		while (read(p[0], buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	close(p[0]);
	assert_int_equal(vt_conn_send_wait(w, vt_proto_enc_empty(vt_conn_frame(w),
				VT_PROTO_FRAME_MAX, VT_PROTO_BYE, vt_conn_next_seq(w)), 5000), 0);
	assert_false(vt_conn_want_write(w));
	vt_conn_free(w);
	close(p[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_hook),
		cmocka_unit_test(test_pipe_queue_flush),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_seq_wrap),
		cmocka_unit_test(test_send_wait),
		cmocka_unit_test(test_rest),
	};

	signal(SIGPIPE, SIG_IGN);	/* EPIPE from a closed peer */
	printf("test-conn: control connection frames round-trip with hooks, queue and flush on a "
	       "full pipe, bounded queue and receive, garbage skipped, 1-byte reads, EOF, seq wrap\n");
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
