/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One end of a control-protocol connection: the fds, the sequence numbers,
 * the frame being built, the receive parser and an output queue, with a
 * hook that sees every message sent and received (the ends mark them in
 * their traces). The agent's ctl.c and the collector's session and sync
 * code use it; neither looks into frame headers by offset.
 *
 * The connection never blocks and never spins: reads and writes are
 * non-blocking, what the peer does not take yet waits in the output queue
 * (bounded), and the caller's event loop calls vt_conn_flush() when the
 * write side polls writable (vt_conn_want_write()). vt_conn_send_wait()
 * is for a caller that may wait (the agent), with a timeout and poll().
 *
 * Functions return 0 (or a count) or -errno and never touch errno on
 * success; nothing here prints, exits or aborts.
 */
#ifndef VT_CONN_H
#define VT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_proto.h"

/* The output queue's bound; a peer that lets more pile up is not reading. */
#define VT_CONN_TXQ_MAX		(4u << 20)

struct vt_conn;

/**
 * typedef vt_conn_hook - called for every frame sent (before it is queued)
 * and every message received (when vt_conn_next() returns it)
 * @arg: the hook's argument
 * @tx: sent (true) or received
 * @type: the message type
 * @seq: its sequence number
 */
typedef void (*vt_conn_hook)(void *arg, bool tx, uint16_t type, uint32_t seq);

struct vt_conn *vt_conn_new(int rfd, int wfd);
void vt_conn_free(struct vt_conn *c);
int vt_conn_rfd(const struct vt_conn *c);
int vt_conn_wfd(const struct vt_conn *c);
void vt_conn_set_hook(struct vt_conn *c, vt_conn_hook hook, void *arg);

/* Sequence numbers: never 0 (0 means "no request" in ERROR's ref_seq). */
uint32_t vt_conn_next_seq(struct vt_conn *c);
uint32_t vt_conn_seq(const struct vt_conn *c);

/*
 * Sending: an encoder writes into the connection's frame buffer
 * (vt_conn_frame(), VT_PROTO_FRAME_MAX bytes) with the seq from
 * vt_conn_next_seq(), and vt_conn_send() queues what it returned (a
 * negative length is the encoder's error and is passed back). The type
 * and seq for the hook come from decoding the frame's own header.
 */
uint8_t *vt_conn_frame(struct vt_conn *c);
int vt_conn_send(struct vt_conn *c, int len);
int vt_conn_send_wait(struct vt_conn *c, int len, int timeout_ms);
int vt_conn_flush(struct vt_conn *c);
bool vt_conn_want_write(const struct vt_conn *c);
size_t vt_conn_queued(const struct vt_conn *c);

/*
 * Receiving: vt_conn_read() takes what the read side has (non-blocking)
 * into the parser; vt_conn_next() hands out the complete messages.
 */
int vt_conn_read(struct vt_conn *c);
int vt_conn_feed(struct vt_conn *c, const void *data, size_t len);
int vt_conn_next(struct vt_conn *c, struct vt_proto_msg *msg);
uint64_t vt_conn_skipped(const struct vt_conn *c);
void vt_conn_reset_rx(struct vt_conn *c);
int vt_conn_rest(struct vt_conn *c);

#endif
