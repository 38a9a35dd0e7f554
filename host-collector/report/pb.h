/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A small protocol buffers encoder (pb.c): varints, zigzag-free signed
 * integers, length-delimited bytes and nested messages, into a growable
 * buffer bounded by PB_MAX_LEN. Only the wire format, no schema: the caller
 * knows its field numbers. The first failure sticks in @err and every later
 * call does nothing, so a writer checks once at the end.
 */
#ifndef REPORT_PB_H
#define REPORT_PB_H

#include <stddef.h>
#include <stdint.h>

/* A nested message's length is reserved as 4 varint bytes, so a message stays under 2^28. */
#define PB_MAX_LEN	((1u << 28) - 1)
#define PB_MAX_DEPTH	8

/**
 * struct pb - an encoding buffer
 * @buf: the bytes encoded so far
 * @len: their number
 * @cap: @buf's size
 * @open: where each open nested message's reserved length starts
 * @depth: open nested messages
 * @err: 0, or the first failure (-ENOMEM, -E2BIG, -EOVERFLOW, -EINVAL)
 */
struct pb {
	uint8_t *buf;
	size_t len, cap;
	size_t open[PB_MAX_DEPTH];
	unsigned int depth;
	int err;
};

void pb_init(struct pb *p);
void pb_free(struct pb *p);
void pb_reset(struct pb *p);
unsigned int pb_varint_size(uint64_t v);
size_t pb_put_varint(uint8_t *dst, uint64_t v);
void pb_uint(struct pb *p, uint32_t field, uint64_t v);
void pb_int(struct pb *p, uint32_t field, int64_t v);
void pb_bool(struct pb *p, uint32_t field, int v);
void pb_bytes(struct pb *p, uint32_t field, const void *data, size_t len);
void pb_str(struct pb *p, uint32_t field, const char *s);
void pb_begin(struct pb *p, uint32_t field);
void pb_end(struct pb *p);
void pb_raw(struct pb *p, const void *data, size_t len);

#endif
