// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The protocol buffers wire format, as far as report --perfetto needs it
 * (https://protobuf.dev/programming-guides/encoding/): a key is the varint
 * (field << 3 | wire type); type 0 is a varint, type 2 a varint length and
 * that many bytes. A nested message is written in place: its length is
 * reserved as four bytes, and when it ends the real length is written in as
 * few bytes as it needs and the body moved down over the spare ones (a few
 * bytes of memmove for the small messages an event is made of), so the
 * output carries no padded lengths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"
#include "vt_grow.h"

#define WT_VARINT	0u
#define WT_LEN		2u
#define LEN_RESERVED	4u

/**
 * pb_init() - an empty buffer
 * @p: the buffer
 */
void pb_init(struct pb *p)
{
	memset(p, 0, sizeof(*p));
}

/**
 * pb_free() - free a buffer's memory (it is empty and usable afterwards)
 * @p: the buffer
 */
void pb_free(struct pb *p)
{
	free(p->buf);
	pb_init(p);
}

/**
 * pb_reset() - empty a buffer, keeping its memory; clears a failure
 * @p: the buffer
 */
void pb_reset(struct pb *p)
{
	p->len = 0;
	p->depth = 0;
	p->err = 0;
}

static int reserve(struct pb *p, size_t n)
{
	if (p->err)
		return p->err;
	if (n > PB_MAX_LEN || p->len > PB_MAX_LEN - n)
		return p->err = -E2BIG;
	if (vt_grow((void **)&p->buf, &p->cap, p->len + n, 1) < 0)
		return p->err = -ENOMEM;
	return 0;
}

/**
 * pb_varint_size() - the bytes a value takes as a varint
 * @v: the value
 *
 * Return: 1 to 10.
 */
unsigned int pb_varint_size(uint64_t v)
{
	unsigned int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/**
 * pb_put_varint() - write a varint
 * @dst: at least pb_varint_size(@v) bytes
 * @v: the value
 *
 * Return: the bytes written.
 */
size_t pb_put_varint(uint8_t *dst, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		dst[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	dst[n++] = (uint8_t)v;
	return n;
}

static void key(struct pb *p, uint32_t field, unsigned int wt)
{
	p->len += pb_put_varint(p->buf + p->len, (uint64_t)field << 3 | wt);
}

/**
 * pb_uint() - a varint field (uint32, uint64, enum)
 * @p: the buffer
 * @field: its number
 * @v: its value
 */
void pb_uint(struct pb *p, uint32_t field, uint64_t v)
{
	if (reserve(p, 5 + 10) < 0)
		return;
	key(p, field, WT_VARINT);
	p->len += pb_put_varint(p->buf + p->len, v);
}

/**
 * pb_int() - an int32 or int64 field: a negative value is its 64-bit two's
 *	complement, ten bytes, as the format wants for both
 * @p: the buffer
 * @field: its number
 * @v: its value
 */
void pb_int(struct pb *p, uint32_t field, int64_t v)
{
	pb_uint(p, field, (uint64_t)v);
}

/**
 * pb_bool() - a bool field
 * @p: the buffer
 * @field: its number
 * @v: its value (non-zero is true)
 */
void pb_bool(struct pb *p, uint32_t field, int v)
{
	pb_uint(p, field, v ? 1 : 0);
}

/**
 * pb_bytes() - a length-delimited field (bytes, string, or an encoded message)
 * @p: the buffer
 * @field: its number
 * @data: its bytes
 * @len: their number
 */
void pb_bytes(struct pb *p, uint32_t field, const void *data, size_t len)
{
	if (len > PB_MAX_LEN) {
		if (!p->err)
			p->err = -E2BIG;
		return;
	}
	if (reserve(p, 5 + 5 + len) < 0)
		return;
	key(p, field, WT_LEN);
	p->len += pb_put_varint(p->buf + p->len, len);
	if (len)
		memcpy(p->buf + p->len, data, len);
	p->len += len;
}

/**
 * pb_str() - a string field
 * @p: the buffer
 * @field: its number
 * @s: a NUL-terminated string (the caller makes it valid UTF-8)
 */
void pb_str(struct pb *p, uint32_t field, const char *s)
{
	pb_bytes(p, field, s, strlen(s));
}

/**
 * pb_raw() - bytes already encoded (fields of the message that is open)
 * @p: the buffer
 * @data: the bytes
 * @len: their number
 */
void pb_raw(struct pb *p, const void *data, size_t len)
{
	if (reserve(p, len) < 0)
		return;
	if (len)
		memcpy(p->buf + p->len, data, len);
	p->len += len;
}

/**
 * pb_begin() - open a nested message field; pb_end() closes it
 * @p: the buffer
 * @field: its number
 */
void pb_begin(struct pb *p, uint32_t field)
{
	if (p->depth >= PB_MAX_DEPTH) {
		if (!p->err)
			p->err = -EOVERFLOW;
		return;
	}
	if (reserve(p, 5 + LEN_RESERVED) < 0)
		return;
	key(p, field, WT_LEN);
	p->open[p->depth++] = p->len;
	p->len += LEN_RESERVED;
}

/**
 * pb_end() - close the innermost open message
 * @p: the buffer
 */
void pb_end(struct pb *p)
{
	size_t at, body, n;

	if (p->err)
		return;
	if (!p->depth) {
		p->err = -EINVAL;
		return;
	}
	at = p->open[--p->depth];
	body = p->len - at - LEN_RESERVED;
	if (body >= 1u << (7 * LEN_RESERVED)) {
		p->err = -E2BIG;
		return;
	}
	n = pb_put_varint(p->buf + at, body);
	if (n < LEN_RESERVED) {
		memmove(p->buf + at + n, p->buf + at + LEN_RESERVED, body);
		p->len -= LEN_RESERVED - n;
	}
}
