// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control-port codec: framing, typed payloads, the stream parser and META
 * reassembly. virtio-trace-protocol(5) is the specification.
 *
 * Payload layouts are written down once, as the wire_* structures below, and
 * each message's payload once more as a struct wlayout: where each fixed field
 * is on the wire and in the caller's structure, then its strings in order.
 * One walk of that table writes a message (w_layout()) and one reads it
 * (r_layout()), so the two directions cannot drift apart; the typed functions
 * only add each message's own rules. Strings follow the fixed part: u16
 * length counting a NUL that must be the last byte and the only one.
 *
 * The message types are one table, msg_types[] (name, sender, layout, check),
 * that the name lookup, the typed functions' choice of type and
 * vt_proto_msg_validate() all read; test-proto checks it against
 * virtio-trace-protocol(5)'s list.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_le.h"
#include "vt_proto.h"

#define VT_PROTO_MAX_CPUS	4096u
#define VT_PROTO_MAX_PROBES	65536u
#define VT_PROTO_MAX_SUBBUF	(1u << 27)	/* page data length is a 27-bit field */
#define VT_PROTO_MAX_ERRNO	4095

struct wire_hello {
	uint16_t rev_min;
	uint16_t rev_max;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	uint32_t reserved;
	uint64_t caps;
	/* string clock, string software */
};
_Static_assert(sizeof(struct wire_hello) == 24, "HELLO fixed part");

struct wire_ack {
	uint32_t ref_seq;
};
_Static_assert(sizeof(struct wire_ack) == 4, "OK/STOPPED payload");

struct wire_error {
	uint32_t ref_seq;
	uint32_t err;
	/* string text */
};
_Static_assert(sizeof(struct wire_error) == 8, "ERROR fixed part");

struct wire_events {
	uint32_t flags;
	uint32_t count;
	/* count x { string system, string event, string filter } */
};
_Static_assert(sizeof(struct wire_events) == 8, "EVENTS fixed part");

struct wire_session {
	uint32_t flags;
	uint32_t nr_streams;
	uint32_t subbuf_size;
	uint32_t nr_events;
	uint64_t resume;
	/* string instance, string clock */
};
_Static_assert(sizeof(struct wire_session) == 24, "SESSION fixed part");

/* A resume mark: the page header, then these in the page's data area. */
struct wire_mark {
	uint64_t timestamp;	/* 0 */
	uint64_t commit;	/* 0: an empty page */
	uint8_t magic[8];	/* VT_PROTO_MARK_MAGIC */
	uint32_t version;
	uint32_t cpu;
	uint64_t position;
	uint64_t resume;
};
_Static_assert(sizeof(struct wire_mark) == VT_PROTO_MARK_SIZE, "resume mark");

struct wire_buffer_size {
	uint32_t size_kb;
	uint32_t subbuf_kb;
};
_Static_assert(sizeof(struct wire_buffer_size) == 8, "BUFFER_SIZE payload");

struct wire_flush {
	uint32_t interval_ms;
};
_Static_assert(sizeof(struct wire_flush) == 4, "FLUSH payload");

struct wire_watch {
	uint32_t interval_ms;
	uint32_t reserved;
	/* string system, string event, string filter */
};
_Static_assert(sizeof(struct wire_watch) == 8, "WATCH fixed part");

struct wire_trigger {
	uint64_t timestamp;
	uint32_t suppressed;
	uint32_t reserved;
	/* string event */
};
_Static_assert(sizeof(struct wire_trigger) == 16, "TRIGGER fixed part");

struct wire_instance {
	uint32_t kind;
	/* string name */
};
_Static_assert(sizeof(struct wire_instance) == 4, "INSTANCE fixed part");

struct wire_stats {
	uint32_t cpu;
	uint32_t flags;
	uint64_t pages;
	uint64_t bytes;
	uint64_t splice_fallbacks;
	uint64_t partial_reads;
	/* string text */
};
_Static_assert(sizeof(struct wire_stats) == 40, "STATS fixed part");

struct wire_meta_req {
	uint64_t max_total;
};
_Static_assert(sizeof(struct wire_meta_req) == 8, "META_REQ payload");

struct wire_meta {
	uint64_t total;
	uint64_t offset;
	/* data up to the end of the payload */
};
_Static_assert(sizeof(struct wire_meta) == VT_PROTO_META_HDR_SIZE, "META chunk header");

struct wire_sync_begin {
	uint32_t cpu;
	uint32_t nr_probes;
};
_Static_assert(sizeof(struct wire_sync_begin) == 8, "SYNC_BEGIN payload");

struct wire_sync_probe {
	uint32_t cpu;
	uint32_t probe;
};
_Static_assert(sizeof(struct wire_sync_probe) == 8, "SYNC_PROBE payload");

struct wire_sync_reply {
	uint32_t cpu;
	uint32_t probe;
	uint64_t tsc;
	uint32_t ran_on;
	uint32_t reserved;
};
_Static_assert(sizeof(struct wire_sync_reply) == 24, "SYNC_REPLY payload");

struct wire_sync_end {
	uint32_t cpu;
};
_Static_assert(sizeof(struct wire_sync_end) == 4, "SYNC_END payload");

#define W_SIZE(type, field)	sizeof(((type *)0)->field)
#define W_GET(base, type, field) \
	wire_get((const uint8_t *)(base) + offsetof(type, field), W_SIZE(type, field))
#define W_PUT(base, type, field, v) \
	wire_put((uint8_t *)(base) + offsetof(type, field), W_SIZE(type, field), (v))

static uint64_t wire_get(const uint8_t *p, size_t n)
{
	switch (n) {
	case 1:
		return p[0];
	case 2:
		return vt_get_le16(p);
	case 4:
		return vt_get_le32(p);
	default:
		return vt_get_le64(p);
	}
}

static void wire_put(uint8_t *p, size_t n, uint64_t v)
{
	switch (n) {
	case 1:
		p[0] = (uint8_t)v;
		break;
	case 2:
		vt_put_le16(p, (uint16_t)v);
		break;
	case 4:
		vt_put_le32(p, (uint32_t)v);
		break;
	default:
		vt_put_le64(p, v);
		break;
	}
}

static const uint8_t magic_bytes[4] = { 'V', 'T', 'C', 'P' };
_Static_assert(VT_PROTO_MAGIC == ('V' | 'T' << 8 | 'C' << 16 | (uint32_t)'P' << 24),
	       "magic spells VTCP in byte order");

/* Who sends a message type; the table of them, msg_types[], follows the layouts. */
enum msg_dir {
	FROM_HOST = VT_PROTO_FROM_HOST,
	FROM_AGENT = VT_PROTO_FROM_AGENT,
	FROM_BOTH = VT_PROTO_FROM_HOST | VT_PROTO_FROM_AGENT,
};

struct wlayout;

/*
 * A message type, one row of msg_types[] (as trace-cmd's MSG_MAP): its name, who sends it,
 * its payload's layout (the fixed part and strings: EVENTS' entries and META's data follow
 * it; INSTANCE and META_REQ, whose strings or fields depend on a value, have none and are
 * read by hand) and its check, the typed decoder that vt_proto_msg_validate() runs.
 */
struct msg_type {
	const char *name;
	uint8_t dir;		/* enum msg_dir */
	const struct wlayout *layout;
	int (*check)(const struct vt_proto_msg *msg);
};

static const struct msg_type *msg_type(uint16_t type);

/* Is @type a message whose payload @l lays out? */
static bool has_layout(uint16_t type, const struct wlayout *l)
{
	const struct msg_type *t = msg_type(type);

	return t && t->layout == l;
}

/**
 * vt_proto_type_known() - is @type a message type of this protocol revision?
 * @type: the header's type field
 *
 * Return: true for every enum vt_proto_type value.
 */
bool vt_proto_type_known(uint16_t type)
{
	return msg_type(type) != NULL;
}

/**
 * vt_proto_type_name() - the name of a message type, as used in markers
 * @type: the header's type field
 *
 * Return: a static string such as "HELLO", or "UNKNOWN" for a type this codec
 * does not know.
 */
const char *vt_proto_type_name(uint16_t type)
{
	const struct msg_type *t = msg_type(type);

	return t ? t->name : "UNKNOWN";
}

/**
 * vt_proto_type_sender() - which end sends a message type
 * @type: the header's type field
 *
 * Return: VT_PROTO_FROM_HOST, VT_PROTO_FROM_AGENT or both ORed, as
 * virtio-trace-protocol(5) lists them; 0 for a type this codec does not know.
 */
unsigned int vt_proto_type_sender(uint16_t type)
{
	const struct msg_type *t = msg_type(type);

	return t ? t->dir : 0;
}

/**
 * vt_proto_marker() - format the trace marker for a message sent or received
 * @buf: where to write the NUL-terminated text
 * @size: size of @buf; 64 bytes always suffice
 * @tx: true for a message this end sent, false for one it received
 * @type: message type
 * @seq: its sequence number (0 for a legacy line)
 *
 * The text is "virtio-trace: rx|tx TYPE SEQ", TYPE being vt_proto_type_name()
 * or "UNKNOWN-<number>", with no newline.
 *
 * Return: the length of the text, or -ENOBUFS if @size is too small.
 */
int vt_proto_marker(char *buf, size_t size, bool tx, uint16_t type, uint32_t seq)
{
	const struct msg_type *t = msg_type(type);
	const char *dir = tx ? "tx" : "rx";
	int n;

	if (t)
		n = snprintf(buf, size, "virtio-trace: %s %s %u", dir, t->name, seq);
	else
		n = snprintf(buf, size, "virtio-trace: %s UNKNOWN-%u %u", dir, type, seq);
	if (n < 0 || (size_t)n >= size)
		return -ENOBUFS;
	return n;
}

/* ---------------------------------------------------------------- strings */

enum str_class {
	STR_TEXT,	/* any byte but NUL, may be empty */
	STR_PRINT,	/* printable ASCII, may be empty (filters) */
	STR_IDENT,	/* [A-Za-z0-9_-]+ (tracer, clock) */
	STR_IDENT_OPT,	/* STR_IDENT or empty */
	STR_INSTANCE,	/* [A-Za-z0-9_.-]+, no leading '.' */
	STR_INSTANCE_OPT, /* STR_INSTANCE or empty */
	STR_GLOB,	/* STR_INSTANCE plus * ? [ ] ! ^ (event system, event) */
};

static bool is_ident(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static bool char_ok(enum str_class cls, unsigned char c)
{
	switch (cls) {
	case STR_TEXT:
		return true;
	case STR_PRINT:
		return c >= 0x20 && c <= 0x7e;
	case STR_IDENT:
	case STR_IDENT_OPT:
		return is_ident(c);
	case STR_INSTANCE:
	case STR_INSTANCE_OPT:
		return is_ident(c) || c == '.';
	case STR_GLOB:
		return is_ident(c) || c == '.' || c == '*' || c == '?' ||
		       c == '[' || c == ']' || c == '!' || c == '^';
	}
	return false;
}

/* @s has @len bytes before its NUL, no NUL among them. */
static bool str_ok(const char *s, size_t len, enum str_class cls)
{
	size_t i;

	if (len == 0)
		return cls == STR_TEXT || cls == STR_PRINT || cls == STR_IDENT_OPT ||
		       cls == STR_INSTANCE_OPT;
	if ((cls == STR_INSTANCE || cls == STR_INSTANCE_OPT || cls == STR_GLOB) && s[0] == '.')
		return false;
	for (i = 0; i < len; i++)
		if (!char_ok(cls, (unsigned char)s[i]))
			return false;
	return true;
}

/* ---------------------------------------------------------------- writing */

struct wbuf {
	uint8_t *p;
	size_t size;
	size_t off;
	int err;
};

static void *w_reserve(struct wbuf *w, size_t n)
{
	void *at;

	if (w->err)
		return NULL;
	if (n > VT_PROTO_FRAME_MAX - w->off) {
		w->err = -EMSGSIZE;
		return NULL;
	}
	if (n > w->size - w->off) {
		w->err = -ENOBUFS;
		return NULL;
	}
	at = w->p + w->off;
	memset(at, 0, n);
	w->off += n;
	return at;
}

static void w_init(struct wbuf *w, void *buf, size_t size, uint16_t type, uint32_t seq)
{
	uint8_t *h;

	w->p = buf;
	w->size = buf ? size : 0;
	w->off = 0;
	w->err = 0;
	h = w_reserve(w, VT_PROTO_HDR_SIZE);
	if (!h)
		return;
	W_PUT(h, struct vt_proto_wire_hdr, magic, VT_PROTO_MAGIC);
	W_PUT(h, struct vt_proto_wire_hdr, version, VT_PROTO_FRAME_VERSION);
	W_PUT(h, struct vt_proto_wire_hdr, flags, 0);
	W_PUT(h, struct vt_proto_wire_hdr, type, type);
	W_PUT(h, struct vt_proto_wire_hdr, seq, seq);
}

static void w_fail(struct wbuf *w, int err)
{
	if (!w->err)
		w->err = err;
}

static void w_bytes(struct wbuf *w, const void *data, size_t n)
{
	void *at = w_reserve(w, n);

	if (at && n)
		memcpy(at, data, n);
}

static void w_str(struct wbuf *w, const char *s, enum str_class cls, size_t max)
{
	size_t len;
	uint8_t *l;

	if (!s)
		s = "";
	len = strnlen(s, max);
	if (len >= max || !str_ok(s, len, cls)) {
		w_fail(w, -EINVAL);
		return;
	}
	l = w_reserve(w, 2);
	if (!l)
		return;
	vt_put_le16(l, (uint16_t)(len + 1));
	w_bytes(w, s, len + 1);
}

static int w_finish(struct wbuf *w)
{
	if (w->err)
		return w->err;
	W_PUT(w->p, struct vt_proto_wire_hdr, len, w->off - VT_PROTO_HDR_SIZE);
	return (int)w->off;
}

/* ---------------------------------------------------------------- reading */

struct rbuf {
	const uint8_t *p;
	size_t left;
};

static int r_init(struct rbuf *r, const struct vt_proto_msg *msg, uint16_t type)
{
	if (!msg || msg->type != type || (msg->len && !msg->payload))
		return -EINVAL;
	r->p = msg->payload;
	r->left = msg->len;
	return 0;
}

static const uint8_t *r_take(struct rbuf *r, size_t n)
{
	const uint8_t *at = r->p;

	if (n > r->left)
		return NULL;
	r->p += n;
	r->left -= n;
	return at;
}

static int r_str(struct rbuf *r, enum str_class cls, size_t max, const char **out)
{
	const uint8_t *l, *s;
	size_t len;

	l = r_take(r, 2);
	if (!l)
		return -EBADMSG;
	len = vt_get_le16(l);
	if (len == 0 || len > max)
		return -EBADMSG;
	s = r_take(r, len);
	if (!s || s[len - 1] != '\0' || memchr(s, '\0', len - 1))
		return -EBADMSG;
	if (!str_ok((const char *)s, len - 1, cls))
		return -EBADMSG;
	*out = (const char *)s;
	return 0;
}

static int r_end(const struct rbuf *r)
{
	return r->left ? -EBADMSG : 0;
}

/* ---------------------------------------------------------------- layouts */

/*
 * One fixed field: its offset and size in the wire structure and in the
 * caller's. A field with no place in the caller's (hsize 0) is reserved:
 * written as 0, and a message where it is not 0 is malformed.
 */
struct wfield {
	uint8_t wire, wsize;
	uint8_t host, hsize;
};

/* One string after the fixed part: the caller's const char * at @host. */
struct wstring {
	uint8_t host;
	uint8_t cls;		/* enum str_class */
	uint16_t max;		/* bytes with the NUL */
};

struct wlayout {
	uint8_t size;		/* of the wire structure */
	uint8_t nr, nr_str;
	struct wfield f[6];
	struct wstring s[3];
};

/* A wire field must fit the caller's: the sizes are checked when the table is compiled. */
#define W_FITS(wt, wf, ht, hf)	(sizeof(char[W_SIZE(wt, wf) <= W_SIZE(ht, hf) ? 1 : -1]) - 1)
#define WF(wt, wf, ht, hf) \
	{ offsetof(wt, wf), W_SIZE(wt, wf) + W_FITS(wt, wf, ht, hf), offsetof(ht, hf), W_SIZE(ht, hf) }
#define WF_RESERVED(wt, wf)	{ offsetof(wt, wf), W_SIZE(wt, wf), 0, 0 }
#define WS(ht, hf, cls, max)	{ offsetof(ht, hf), cls, max }

/* The caller's fields are plain unsigned integers (ERROR's err: positive). */
static uint64_t host_get(const uint8_t *p, size_t n)
{
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;

	switch (n) {
	case 1:
		return p[0];
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	default:
		memcpy(&v64, p, 8);
		return v64;
	}
}

static void host_put(uint8_t *p, size_t n, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;
	uint16_t v16 = (uint16_t)v;

	switch (n) {
	case 1:
		p[0] = (uint8_t)v;
		break;
	case 2:
		memcpy(p, &v16, 2);
		break;
	case 4:
		memcpy(p, &v32, 4);
		break;
	default:
		memcpy(p, &v, 8);
		break;
	}
}

/* Write @src's fixed fields and strings as @l lays them out. */
static void w_layout(struct wbuf *w, const struct wlayout *l, const void *src)
{
	const uint8_t *h = src;
	uint8_t *f = w_reserve(w, l->size);
	unsigned int i;

	for (i = 0; f && i < l->nr; i++)
		if (l->f[i].hsize)
			wire_put(f + l->f[i].wire, l->f[i].wsize, host_get(h + l->f[i].host, l->f[i].hsize));
	for (i = 0; i < l->nr_str; i++) {
		const char *str;

		memcpy(&str, h + l->s[i].host, sizeof(str));
		w_str(w, str, (enum str_class)l->s[i].cls, l->s[i].max);
	}
}

/* Read a payload's fixed fields and strings into @dst as @l lays them out. */
static int r_layout(struct rbuf *r, const struct wlayout *l, void *dst)
{
	const uint8_t *f = r_take(r, l->size);
	uint8_t *h = dst;
	unsigned int i;
	int ret;

	if (!f)
		return -EBADMSG;
	for (i = 0; i < l->nr; i++) {
		uint64_t v = wire_get(f + l->f[i].wire, l->f[i].wsize);

		if (!l->f[i].hsize) {
			if (v)
				return -EBADMSG;
			continue;
		}
		host_put(h + l->f[i].host, l->f[i].hsize, v);
	}
	for (i = 0; i < l->nr_str; i++) {
		const char *str;

		ret = r_str(r, (enum str_class)l->s[i].cls, l->s[i].max, &str);
		if (ret < 0)
			return ret;
		memcpy(h + l->s[i].host, &str, sizeof(str));
	}
	return 0;
}

/* A whole frame whose payload is @l's layout of @src. */
static int w_message(void *buf, size_t size, uint16_t type, uint32_t seq, const struct wlayout *l,
		     const void *src)
{
	struct wbuf w;

	w_init(&w, buf, size, type, seq);
	w_layout(&w, l, src);
	return w_finish(&w);
}

/* A payload that is exactly @l's layout, read into @dst. */
static int r_message(const struct vt_proto_msg *msg, uint16_t type, const struct wlayout *l, void *dst)
{
	struct rbuf r;

	return r_init(&r, msg, type) ?: r_layout(&r, l, dst) ?: r_end(&r);
}

/* ---------------------------------------------------------------- frames */

/* Fills @msg from a header; *@framed tells whether its length can be trusted. */
static int hdr_parse(const uint8_t *b, struct vt_proto_msg *msg, bool *framed)
{
	*framed = false;
	memset(msg, 0, sizeof(*msg));
	if (W_GET(b, struct vt_proto_wire_hdr, magic) != VT_PROTO_MAGIC)
		return -EBADMSG;
	if (W_GET(b, struct vt_proto_wire_hdr, version) != VT_PROTO_FRAME_VERSION)
		return -EPROTO;
	msg->len = (uint32_t)W_GET(b, struct vt_proto_wire_hdr, len);
	if (msg->len > VT_PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	*framed = true;
	msg->type = (uint16_t)W_GET(b, struct vt_proto_wire_hdr, type);
	msg->flags = (uint8_t)W_GET(b, struct vt_proto_wire_hdr, flags);
	msg->seq = (uint32_t)W_GET(b, struct vt_proto_wire_hdr, seq);
	if (msg->flags || !vt_proto_type_known(msg->type))
		return -EPROTO;
	return 0;
}

/**
 * vt_proto_hdr_decode() - check a frame header and read its fields
 * @buf: the frame's first bytes
 * @len: bytes available at @buf
 * @msg: filled with type, flags, seq and len; payload is left NULL
 *
 * Return: 0; -EBADMSG if @len < VT_PROTO_HDR_SIZE or the magic is wrong;
 * -EPROTO for another framing version; -EMSGSIZE if the payload length exceeds
 * VT_PROTO_MAX_PAYLOAD; -EPROTO for non-zero flags or an unknown type, in which
 * case @msg is filled (the frame is well delimited and can be skipped and
 * answered with ERROR).
 */
int vt_proto_hdr_decode(const void *buf, size_t len, struct vt_proto_msg *msg)
{
	bool framed;

	if (!buf || !msg)
		return -EINVAL;
	if (len < VT_PROTO_HDR_SIZE) {
		memset(msg, 0, sizeof(*msg));
		return -EBADMSG;
	}
	return hdr_parse(buf, msg, &framed);
}

/**
 * vt_proto_msg_decode() - check one whole frame held in a buffer
 * @buf: the frame
 * @len: bytes at @buf; bytes after the frame are ignored
 * @msg: the message; its payload points into @buf
 *
 * Only the framing is checked; vt_proto_msg_validate() or the typed decoder
 * checks the payload.
 *
 * Return: the frame length, or the errors of vt_proto_hdr_decode(), or
 * -EBADMSG if the payload is truncated.
 */
int vt_proto_msg_decode(const void *buf, size_t len, struct vt_proto_msg *msg)
{
	int ret = vt_proto_hdr_decode(buf, len, msg);

	if (ret < 0)
		return ret;
	if (len - VT_PROTO_HDR_SIZE < msg->len)
		return -EBADMSG;
	msg->payload = (const uint8_t *)buf + VT_PROTO_HDR_SIZE;
	return (int)(VT_PROTO_HDR_SIZE + msg->len);
}

/**
 * vt_proto_encode() - write a frame with a raw payload
 * @buf: destination
 * @size: size of @buf
 * @type: message type (not checked: tests use this to build bad frames)
 * @seq: sequence number
 * @payload: @len bytes, may be NULL when @len is 0
 * @len: payload length
 *
 * Return: the frame length; -EMSGSIZE if @len > VT_PROTO_MAX_PAYLOAD;
 * -ENOBUFS if @size is too small.
 */
int vt_proto_encode(void *buf, size_t size, uint16_t type, uint32_t seq,
		    const void *payload, size_t len)
{
	struct wbuf w;

	if (len && !payload)
		return -EINVAL;
	w_init(&w, buf, size, type, seq);
	w_bytes(&w, payload, len);
	return w_finish(&w);
}

/* ---------------------------------------------------------------- empty */

/* BYE, START, STOP, STATS_REQ, RESUME: no payload. */
static const struct wlayout empty_layout = { 0 };

static bool type_is_empty(uint16_t type)
{
	return has_layout(type, &empty_layout);
}

/**
 * vt_proto_enc_empty() - write BYE, START, STOP, STATS_REQ or RESUME
 * @buf: destination
 * @size: size of @buf
 * @type: one of the types with an empty payload
 * @seq: sequence number
 *
 * Return: the frame length, -EINVAL for another type, -ENOBUFS.
 */
int vt_proto_enc_empty(void *buf, size_t size, uint16_t type, uint32_t seq)
{
	if (!type_is_empty(type))
		return -EINVAL;
	return vt_proto_encode(buf, size, type, seq, NULL, 0);
}

/**
 * vt_proto_dec_empty() - check a BYE, START, STOP, STATS_REQ or RESUME
 * @msg: the message
 *
 * Return: 0, -EINVAL for another type, -EBADMSG if the payload is not empty.
 */
int vt_proto_dec_empty(const struct vt_proto_msg *msg)
{
	if (!msg || !type_is_empty(msg->type))
		return -EINVAL;
	return msg->len ? -EBADMSG : 0;
}

/* ---------------------------------------------------------------- HELLO */

static const struct wlayout hello_layout = {
	sizeof(struct wire_hello), 6, 2, {
		WF(struct wire_hello, rev_min, struct vt_proto_hello, rev_min),
		WF(struct wire_hello, rev_max, struct vt_proto_hello, rev_max),
		WF(struct wire_hello, nr_cpus, struct vt_proto_hello, nr_cpus),
		WF(struct wire_hello, subbuf_size, struct vt_proto_hello, subbuf_size),
		WF_RESERVED(struct wire_hello, reserved),
		WF(struct wire_hello, caps, struct vt_proto_hello, caps),
	}, {
		WS(struct vt_proto_hello, clock, STR_IDENT_OPT, VT_PROTO_MAX_NAME),
		WS(struct vt_proto_hello, software, STR_TEXT, VT_PROTO_MAX_TEXT),
	},
};

static bool hello_ok(uint16_t type, uint16_t rev_min, uint16_t rev_max, uint32_t nr_cpus,
		     uint32_t subbuf_size)
{
	if (rev_min == 0 || rev_min > rev_max)
		return false;
	if (nr_cpus > VT_PROTO_MAX_CPUS || subbuf_size > VT_PROTO_MAX_SUBBUF)
		return false;
	if (type == VT_PROTO_HELLO_REPLY && (rev_min != rev_max || nr_cpus == 0))
		return false;
	return true;
}

/**
 * vt_proto_enc_hello() - write HELLO or HELLO_REPLY
 * @buf: destination
 * @size: size of @buf
 * @type: VT_PROTO_HELLO or VT_PROTO_HELLO_REPLY
 * @seq: sequence number
 * @hello: contents; NULL strings are sent as ""
 *
 * Return: the frame length, -EINVAL for contents the peer would reject,
 * -ENOBUFS.
 */
int vt_proto_enc_hello(void *buf, size_t size, uint16_t type, uint32_t seq,
		       const struct vt_proto_hello *hello)
{
	if (!hello || !has_layout(type, &hello_layout))
		return -EINVAL;
	if (!hello_ok(type, hello->rev_min, hello->rev_max, hello->nr_cpus, hello->subbuf_size))
		return -EINVAL;
	return w_message(buf, size, type, seq, &hello_layout, hello);
}

/**
 * vt_proto_dec_hello() - read HELLO or HELLO_REPLY
 * @msg: the message
 * @hello: filled; its strings point into @msg
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload
 * (revisions out of order, too many CPUs, a bad clock name, ...).
 */
int vt_proto_dec_hello(const struct vt_proto_msg *msg, struct vt_proto_hello *hello)
{
	struct vt_proto_hello h;
	int ret;

	if (!msg || !has_layout(msg->type, &hello_layout))
		return -EINVAL;
	ret = r_message(msg, msg->type, &hello_layout, &h);
	if (ret < 0)
		return ret;
	if (!hello_ok(msg->type, h.rev_min, h.rev_max, h.nr_cpus, h.subbuf_size))
		return -EBADMSG;
	if (hello)
		*hello = h;
	return 0;
}

/**
 * vt_proto_hello_negotiate() - pick the revision to speak with a HELLO's sender
 * @hello: the peer's HELLO
 * @rev: the highest revision both ends speak
 *
 * Return: 0, or -EPROTONOSUPPORT if the ranges do not overlap.
 */
int vt_proto_hello_negotiate(const struct vt_proto_hello *hello, uint16_t *rev)
{
	uint16_t lo, hi;

	if (!hello || !rev)
		return -EINVAL;
	lo = hello->rev_min > VT_PROTO_REV_MIN ? hello->rev_min : VT_PROTO_REV_MIN;
	hi = hello->rev_max < VT_PROTO_REV_MAX ? hello->rev_max : VT_PROTO_REV_MAX;
	if (lo > hi)
		return -EPROTONOSUPPORT;
	*rev = hi;
	return 0;
}

/* ---------------------------------------------------------------- OK, STOPPED */

struct ack {
	uint32_t ref_seq;
};

static const struct wlayout ack_layout = {
	sizeof(struct wire_ack), 1, 0, { WF(struct wire_ack, ref_seq, struct ack, ref_seq) },
};

/**
 * vt_proto_enc_ack() - write OK or STOPPED
 * @buf: destination
 * @size: size of @buf
 * @type: VT_PROTO_OK or VT_PROTO_STOPPED
 * @seq: sequence number
 * @ref_seq: seq of the message acknowledged (STOPPED: of the STOP, 0 for a
 *           legacy "0\n")
 *
 * Return: the frame length, -EINVAL for another type, -ENOBUFS.
 */
int vt_proto_enc_ack(void *buf, size_t size, uint16_t type, uint32_t seq, uint32_t ref_seq)
{
	struct ack a = { ref_seq };

	if (!has_layout(type, &ack_layout))
		return -EINVAL;
	return w_message(buf, size, type, seq, &ack_layout, &a);
}

/**
 * vt_proto_dec_ack() - read OK or STOPPED
 * @msg: the message
 * @ref_seq: the seq acknowledged
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload.
 */
int vt_proto_dec_ack(const struct vt_proto_msg *msg, uint32_t *ref_seq)
{
	struct ack a;
	int ret;

	if (!msg || !has_layout(msg->type, &ack_layout))
		return -EINVAL;
	ret = r_message(msg, msg->type, &ack_layout, &a);
	if (ret < 0)
		return ret;
	if (ref_seq)
		*ref_seq = a.ref_seq;
	return 0;
}

/* ---------------------------------------------------------------- ERROR */

static const struct wlayout error_layout = {
	sizeof(struct wire_error), 2, 1, {
		WF(struct wire_error, ref_seq, struct vt_proto_error, ref_seq),
		WF(struct wire_error, err, struct vt_proto_error, err),
	}, { WS(struct vt_proto_error, text, STR_TEXT, VT_PROTO_MAX_TEXT) },
};

/**
 * vt_proto_enc_error() - write ERROR
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @e: contents; @e->err positive (a negative value is negated for the caller's
 *     convenience, so a -errno return can be passed straight in)
 *
 * Return: the frame length, -EINVAL for an errno outside 1..4095 or a text
 * too long, -ENOBUFS.
 */
int vt_proto_enc_error(void *buf, size_t size, uint32_t seq, const struct vt_proto_error *e)
{
	struct vt_proto_error d;

	if (!e || e->err < -VT_PROTO_MAX_ERRNO || e->err > VT_PROTO_MAX_ERRNO || !e->err)
		return -EINVAL;
	d = *e;
	d.err = e->err < 0 ? -e->err : e->err;
	return w_message(buf, size, VT_PROTO_ERROR, seq, &error_layout, &d);
}

/**
 * vt_proto_dec_error() - read ERROR
 * @msg: the message
 * @e: filled; @e->err is positive, @e->text points into @msg
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload.
 */
int vt_proto_dec_error(const struct vt_proto_msg *msg, struct vt_proto_error *e)
{
	struct vt_proto_error d;
	int ret;

	ret = r_message(msg, VT_PROTO_ERROR, &error_layout, &d);
	if (ret < 0)
		return ret;
	/* Read as unsigned: 1..4095 only. */
	if ((uint32_t)d.err < 1 || (uint32_t)d.err > VT_PROTO_MAX_ERRNO)
		return -EBADMSG;
	if (e)
		*e = d;
	return 0;
}

/* ---------------------------------------------------------------- EVENTS */

/* The fixed part (flags, count; no caller's structure: see below), then count entries. */
struct events_hdr {
	uint32_t flags;
	uint32_t count;
};

static const struct wlayout events_layout = {
	sizeof(struct wire_events), 2, 0, {
		WF(struct wire_events, flags, struct events_hdr, flags),
		WF(struct wire_events, count, struct events_hdr, count),
	},
};

static const struct wlayout event_layout = {
	0, 0, 3, { { 0 } }, {
		WS(struct vt_proto_event, system, STR_GLOB, VT_PROTO_MAX_NAME),
		WS(struct vt_proto_event, event, STR_GLOB, VT_PROTO_MAX_NAME),
		WS(struct vt_proto_event, filter, STR_PRINT, VT_PROTO_MAX_FILTER),
	},
};

/**
 * vt_proto_enc_events() - write EVENTS
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @flags: VT_PROTO_EVENTS_*
 * @ev: @nr entries; a NULL filter is sent as ""
 * @nr: at most VT_PROTO_MAX_EVENTS (0 with VT_PROTO_EVENTS_REPLACE disables all)
 *
 * Return: the frame length; -EINVAL for unknown flags, too many entries or a
 * name or filter the peer would reject; -EMSGSIZE if the entries do not fit in
 * one payload (send several EVENTS); -ENOBUFS.
 */
int vt_proto_enc_events(void *buf, size_t size, uint32_t seq, uint32_t flags,
			const struct vt_proto_event *ev, uint32_t nr)
{
	struct events_hdr h = { flags, nr };
	struct wbuf w;
	uint32_t i;

	if ((flags & ~VT_PROTO_EVENTS_FLAGS) || nr > VT_PROTO_MAX_EVENTS || (nr && !ev))
		return -EINVAL;
	w_init(&w, buf, size, VT_PROTO_EVENTS, seq);
	w_layout(&w, &events_layout, &h);
	for (i = 0; i < nr; i++) {
		if (!ev[i].system || !ev[i].event)
			w_fail(&w, -EINVAL);
		w_layout(&w, &event_layout, &ev[i]);
	}
	return w_finish(&w);
}

/**
 * vt_proto_dec_events() - read EVENTS
 * @msg: the message
 * @flags: VT_PROTO_EVENTS_* (may be NULL)
 * @ev: array for the entries, or NULL to check the message only
 * @max: entries @ev can hold; VT_PROTO_MAX_EVENTS always suffices
 *
 * Every entry is checked before anything is returned. The strings point into
 * @msg.
 *
 * Return: the number of entries; -EINVAL for another type; -ENOSPC if @ev is
 * too small; -EBADMSG for a malformed payload (unknown flags, a count above
 * VT_PROTO_MAX_EVENTS or beyond the payload, a bad name or filter, trailing
 * bytes).
 */
int vt_proto_dec_events(const struct vt_proto_msg *msg, uint32_t *flags,
			struct vt_proto_event *ev, size_t max)
{
	struct vt_proto_event e;
	struct events_hdr h;
	struct rbuf r;
	uint32_t i;
	int ret;

	ret = r_init(&r, msg, VT_PROTO_EVENTS) ?: r_layout(&r, &events_layout, &h);
	if (ret < 0)
		return ret;
	/* each entry is at least three empty strings' worth of bytes */
	if ((h.flags & ~VT_PROTO_EVENTS_FLAGS) || h.count > VT_PROTO_MAX_EVENTS || h.count > r.left / 9)
		return -EBADMSG;
	if (ev && h.count > max)
		return -ENOSPC;
	for (i = 0; i < h.count; i++) {
		ret = r_layout(&r, &event_layout, &e);
		if (ret < 0)
			return ret;
		if (ev)
			ev[i] = e;
	}
	ret = r_end(&r);
	if (ret < 0)
		return ret;
	if (flags)
		*flags = h.flags;
	return (int)h.count;
}

/* ---------------------------------------------------------------- strings */

/* TRACER, CLOCK, LASTBOOT_REQ (a name) and MARKER, NOTICE (text): one string. */
struct str_msg {
	const char *s;
};

static const struct wlayout name_layout = {
	0, 0, 1, { { 0 } }, { WS(struct str_msg, s, STR_IDENT, VT_PROTO_MAX_NAME) },
};

static const struct wlayout text_layout = {
	0, 0, 1, { { 0 } }, { WS(struct str_msg, s, STR_TEXT, VT_PROTO_MAX_TEXT) },
};

/* @type's layout when it is a message of one string, else NULL. */
static const struct wlayout *string_layout(uint16_t type)
{
	if (has_layout(type, &name_layout))
		return &name_layout;
	return has_layout(type, &text_layout) ? &text_layout : NULL;
}

/**
 * vt_proto_enc_string() - write TRACER, CLOCK, LASTBOOT_REQ, MARKER or NOTICE
 * @buf: destination
 * @size: size of @buf
 * @type: VT_PROTO_TRACER, VT_PROTO_CLOCK, VT_PROTO_LASTBOOT_REQ, VT_PROTO_MARKER or
 *	VT_PROTO_NOTICE
 * @seq: sequence number
 * @s: tracer, clock or instance name ([A-Za-z0-9_-]+), or marker or notice text (no NUL)
 *
 * Return: the frame length, -EINVAL for another type or a string the peer
 * would reject, -ENOBUFS.
 */
int vt_proto_enc_string(void *buf, size_t size, uint16_t type, uint32_t seq, const char *s)
{
	const struct wlayout *l = string_layout(type);
	struct str_msg m = { s };

	if (!s || !l)
		return -EINVAL;
	return w_message(buf, size, type, seq, l, &m);
}

/**
 * vt_proto_dec_string() - read TRACER, CLOCK, LASTBOOT_REQ, MARKER or NOTICE
 * @msg: the message
 * @s: the string, pointing into @msg; never to be used as a format or a path
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload.
 */
int vt_proto_dec_string(const struct vt_proto_msg *msg, const char **s)
{
	const struct wlayout *l;
	struct str_msg m;
	int ret;

	if (!msg || !(l = string_layout(msg->type)))
		return -EINVAL;
	ret = r_message(msg, msg->type, l, &m);
	if (ret < 0)
		return ret;
	if (s)
		*s = m.s;
	return 0;
}

/* ---------------------------------------------------------------- BUFFER_SIZE */

static const struct wlayout buffer_size_layout = {
	sizeof(struct wire_buffer_size), 2, 0, {
		WF(struct wire_buffer_size, size_kb, struct vt_proto_buffer_size, size_kb),
		WF(struct wire_buffer_size, subbuf_kb, struct vt_proto_buffer_size, subbuf_kb),
	},
};

/**
 * vt_proto_enc_buffer_size() - write BUFFER_SIZE
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @bs: contents; @bs->size_kb and @bs->subbuf_kb must not both be 0
 *
 * Return: the frame length, -EINVAL, -ENOBUFS.
 */
int vt_proto_enc_buffer_size(void *buf, size_t size, uint32_t seq,
			     const struct vt_proto_buffer_size *bs)
{
	if (!bs || (!bs->size_kb && !bs->subbuf_kb))
		return -EINVAL;
	return w_message(buf, size, VT_PROTO_BUFFER_SIZE, seq, &buffer_size_layout, bs);
}

/**
 * vt_proto_dec_buffer_size() - read BUFFER_SIZE
 * @msg: the message
 * @bs: filled
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload or
 * both sizes 0.
 */
int vt_proto_dec_buffer_size(const struct vt_proto_msg *msg, struct vt_proto_buffer_size *bs)
{
	struct vt_proto_buffer_size d;
	int ret;

	ret = r_message(msg, VT_PROTO_BUFFER_SIZE, &buffer_size_layout, &d);
	if (ret < 0)
		return ret;
	if (!d.size_kb && !d.subbuf_kb)
		return -EBADMSG;
	if (bs)
		*bs = d;
	return 0;
}

/* ---------------------------------------------------------------- START */

struct wire_start {
	uint32_t flags;
};
_Static_assert(sizeof(struct wire_start) == 4, "START payload");

/**
 * vt_proto_enc_start() - write START, empty or with flags
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @flags: VT_PROTO_START_*; 0 writes the empty START every agent takes
 *
 * Return: the frame length, -EINVAL for an unknown flag, -ENOBUFS.
 */
int vt_proto_enc_start(void *buf, size_t size, uint32_t seq, uint32_t flags)
{
	struct wbuf w;
	uint8_t *f;

	if (flags & ~VT_PROTO_START_FLAGS)
		return -EINVAL;
	if (!flags)
		return vt_proto_enc_empty(buf, size, VT_PROTO_START, seq);
	w_init(&w, buf, size, VT_PROTO_START, seq);
	f = w_reserve(&w, sizeof(struct wire_start));
	if (f)
		W_PUT(f, struct wire_start, flags, flags);
	return w_finish(&w);
}

/**
 * vt_proto_dec_start() - read START: empty (no flags) or u32 flags
 * @msg: the message
 * @flags: filled, or NULL
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for another length, or flags
 * this codec does not know (they change what the agent records: not ignored).
 */
int vt_proto_dec_start(const struct vt_proto_msg *msg, uint32_t *flags)
{
	const uint8_t *f;
	struct rbuf r;
	uint32_t v = 0;
	int ret;

	ret = r_init(&r, msg, VT_PROTO_START);
	if (ret < 0)
		return ret;
	if (msg->len) {
		f = r_take(&r, sizeof(struct wire_start));
		if (!f || r_end(&r))
			return -EBADMSG;
		v = (uint32_t)W_GET(f, struct wire_start, flags);
		if (!v || v & ~VT_PROTO_START_FLAGS)
			return -EBADMSG;
	}
	if (flags)
		*flags = v;
	return 0;
}

/* ---------------------------------------------------------------- FLUSH */

struct flush {
	uint32_t interval_ms;
};

static const struct wlayout flush_layout = {
	sizeof(struct wire_flush), 1, 0, { WF(struct wire_flush, interval_ms, struct flush, interval_ms) },
};

static bool flush_ok(uint32_t ms)
{
	return !ms || (ms >= VT_PROTO_FLUSH_MIN_MS && ms <= VT_PROTO_FLUSH_MAX_MS);
}

/**
 * vt_proto_enc_flush() - write FLUSH
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @interval_ms: send a partial page once it is this old, 0 for never
 *	(VT_PROTO_FLUSH_MIN_MS to VT_PROTO_FLUSH_MAX_MS otherwise)
 *
 * Return: the frame length, -EINVAL for an interval out of range, -ENOBUFS.
 */
int vt_proto_enc_flush(void *buf, size_t size, uint32_t seq, uint32_t interval_ms)
{
	struct flush fl = { interval_ms };

	if (!flush_ok(interval_ms))
		return -EINVAL;
	return w_message(buf, size, VT_PROTO_FLUSH, seq, &flush_layout, &fl);
}

/**
 * vt_proto_dec_flush() - read FLUSH
 * @msg: the message
 * @interval_ms: filled
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload or an
 * interval out of range.
 */
int vt_proto_dec_flush(const struct vt_proto_msg *msg, uint32_t *interval_ms)
{
	struct flush fl;
	int ret;

	ret = r_message(msg, VT_PROTO_FLUSH, &flush_layout, &fl);
	if (ret < 0)
		return ret;
	if (!flush_ok(fl.interval_ms))
		return -EBADMSG;
	if (interval_ms)
		*interval_ms = fl.interval_ms;
	return 0;
}

/* ---------------------------------------------------------------- BUFFER_BUDGET */

struct budget {
	uint32_t budget_kb;
};

/* The same wire as FLUSH: one u32. */
static const struct wlayout budget_layout = {
	sizeof(struct wire_flush), 1, 0, { WF(struct wire_flush, interval_ms, struct budget, budget_kb) },
};

/**
 * vt_proto_enc_budget() - write BUFFER_BUDGET
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @budget_kb: KiB the recorded buffer may hold, every CPU together; 0 keeps
 *	each CPU's buffer at the size it starts with
 *
 * Return: the frame length, -ENOBUFS.
 */
int vt_proto_enc_budget(void *buf, size_t size, uint32_t seq, uint32_t budget_kb)
{
	struct budget b = { budget_kb };

	return w_message(buf, size, VT_PROTO_BUFFER_BUDGET, seq, &budget_layout, &b);
}

/**
 * vt_proto_dec_budget() - read BUFFER_BUDGET
 * @msg: the message
 * @budget_kb: filled, or NULL
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload.
 */
int vt_proto_dec_budget(const struct vt_proto_msg *msg, uint32_t *budget_kb)
{
	struct budget b;
	int ret;

	ret = r_message(msg, VT_PROTO_BUFFER_BUDGET, &budget_layout, &b);
	if (ret < 0)
		return ret;
	if (budget_kb)
		*budget_kb = b.budget_kb;
	return 0;
}

/* ---------------------------------------------------------------- INSTANCE */

/**
 * vt_proto_enc_instance() - write INSTANCE
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @name: private instance name ([A-Za-z0-9_.-]+, no leading '.'), or NULL for
 *        the top-level buffer
 *
 * Return: the frame length, -EINVAL for a bad name, -ENOBUFS.
 */
int vt_proto_enc_instance(void *buf, size_t size, uint32_t seq, const char *name)
{
	struct wbuf w;
	uint8_t *f;

	w_init(&w, buf, size, VT_PROTO_INSTANCE, seq);
	f = w_reserve(&w, sizeof(struct wire_instance));
	if (f)
		W_PUT(f, struct wire_instance, kind,
		      name ? VT_PROTO_INSTANCE_PRIVATE : VT_PROTO_INSTANCE_TOP);
	if (name)
		w_str(&w, name, STR_INSTANCE, VT_PROTO_MAX_NAME);
	else
		w_str(&w, "", STR_TEXT, VT_PROTO_MAX_NAME);
	return w_finish(&w);
}

/**
 * vt_proto_dec_instance() - read INSTANCE
 * @msg: the message
 * @name: the private instance name (pointing into @msg), or NULL for the
 *        top-level buffer
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for an unknown kind, a name
 * with the top-level kind, or a name that is not a safe directory name.
 */
int vt_proto_dec_instance(const struct vt_proto_msg *msg, const char **name)
{
	const uint8_t *f;
	const char *s;
	struct rbuf r;
	uint32_t kind;
	int ret;

	ret = r_init(&r, msg, VT_PROTO_INSTANCE);
	if (ret < 0)
		return ret;
	f = r_take(&r, sizeof(struct wire_instance));
	if (!f)
		return -EBADMSG;
	kind = (uint32_t)W_GET(f, struct wire_instance, kind);
	if (kind == VT_PROTO_INSTANCE_TOP)
		ret = r_str(&r, STR_IDENT_OPT, 1, &s);	/* "" only */
	else if (kind == VT_PROTO_INSTANCE_PRIVATE)
		ret = r_str(&r, STR_INSTANCE, VT_PROTO_MAX_NAME, &s);
	else
		ret = -EBADMSG;
	if (ret < 0)
		return ret;
	ret = r_end(&r);
	if (ret < 0)
		return ret;
	if (name)
		*name = kind == VT_PROTO_INSTANCE_TOP ? NULL : s;
	return 0;
}

/* ---------------------------------------------------------------- STATS */

static const struct wlayout stats_layout = {
	sizeof(struct wire_stats), 6, 1, {
		WF(struct wire_stats, cpu, struct vt_proto_stats, cpu),
		WF(struct wire_stats, flags, struct vt_proto_stats, flags),
		WF(struct wire_stats, pages, struct vt_proto_stats, pages),
		WF(struct wire_stats, bytes, struct vt_proto_stats, bytes),
		WF(struct wire_stats, splice_fallbacks, struct vt_proto_stats, splice_fallbacks),
		WF(struct wire_stats, partial_reads, struct vt_proto_stats, partial_reads),
	}, { WS(struct vt_proto_stats, text, STR_TEXT, VT_PROTO_MAX_TEXT) },
};

static bool stats_ok(uint32_t cpu, uint32_t flags)
{
	return (cpu < VT_PROTO_MAX_CPUS || cpu == VT_PROTO_CPU_ALL) &&
	       !(flags & ~VT_PROTO_STATS_FLAGS);
}

/**
 * vt_proto_enc_stats() - write STATS
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @st: contents; a NULL text is sent as ""
 *
 * Return: the frame length, -EINVAL, -ENOBUFS.
 */
int vt_proto_enc_stats(void *buf, size_t size, uint32_t seq, const struct vt_proto_stats *st)
{
	if (!st || !stats_ok(st->cpu, st->flags))
		return -EINVAL;
	return w_message(buf, size, VT_PROTO_STATS, seq, &stats_layout, st);
}

/**
 * vt_proto_dec_stats() - read STATS
 * @msg: the message
 * @st: filled; @st->text points into @msg
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload.
 */
int vt_proto_dec_stats(const struct vt_proto_msg *msg, struct vt_proto_stats *st)
{
	struct vt_proto_stats d;
	int ret;

	ret = r_message(msg, VT_PROTO_STATS, &stats_layout, &d);
	if (ret < 0)
		return ret;
	if (!stats_ok(d.cpu, d.flags))
		return -EBADMSG;
	if (st)
		*st = d;
	return 0;
}

/* ---------------------------------------------------------------- WATCH, TRIGGER */

static const struct wlayout watch_layout = {
	sizeof(struct wire_watch), 2, 3, {
		WF(struct wire_watch, interval_ms, struct vt_proto_watch, interval_ms),
		WF_RESERVED(struct wire_watch, reserved),
	}, {
		WS(struct vt_proto_watch, system, STR_INSTANCE, VT_PROTO_MAX_NAME),
		WS(struct vt_proto_watch, event, STR_INSTANCE, VT_PROTO_MAX_NAME),
		WS(struct vt_proto_watch, filter, STR_PRINT, VT_PROTO_MAX_FILTER),
	},
};

static bool watch_ok(uint32_t ms)
{
	return ms >= VT_PROTO_WATCH_MIN_MS && ms <= VT_PROTO_WATCH_MAX_MS;
}

/**
 * vt_proto_enc_watch() - write WATCH
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @w: contents; a NULL filter is sent as ""
 *
 * Return: the frame length, -EINVAL for an interval out of range or a name or
 * filter the peer would reject, -ENOBUFS.
 */
int vt_proto_enc_watch(void *buf, size_t size, uint32_t seq, const struct vt_proto_watch *w)
{
	if (!w || !w->system || !w->event || !watch_ok(w->interval_ms))
		return -EINVAL;
	return w_message(buf, size, VT_PROTO_WATCH, seq, &watch_layout, w);
}

/**
 * vt_proto_dec_watch() - read WATCH
 * @msg: the message
 * @w: filled (the strings point into @msg), or NULL
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload or an
 * interval out of range.
 */
int vt_proto_dec_watch(const struct vt_proto_msg *msg, struct vt_proto_watch *w)
{
	struct vt_proto_watch d;
	int ret;

	ret = r_message(msg, VT_PROTO_WATCH, &watch_layout, &d);
	if (ret < 0)
		return ret;
	if (!watch_ok(d.interval_ms))
		return -EBADMSG;
	if (w)
		*w = d;
	return 0;
}

static const struct wlayout trigger_layout = {
	sizeof(struct wire_trigger), 3, 1, {
		WF(struct wire_trigger, timestamp, struct vt_proto_trigger, timestamp),
		WF(struct wire_trigger, suppressed, struct vt_proto_trigger, suppressed),
		WF_RESERVED(struct wire_trigger, reserved),
	}, { WS(struct vt_proto_trigger, event, STR_PRINT, VT_PROTO_MAX_NAME) },
};

/**
 * vt_proto_enc_trigger() - write TRIGGER
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @t: contents
 *
 * Return: the frame length, -EINVAL for a missing or unprintable event name,
 * -ENOBUFS.
 */
int vt_proto_enc_trigger(void *buf, size_t size, uint32_t seq, const struct vt_proto_trigger *t)
{
	if (!t || !t->event || !t->event[0])
		return -EINVAL;
	return w_message(buf, size, VT_PROTO_TRIGGER, seq, &trigger_layout, t);
}

/**
 * vt_proto_dec_trigger() - read TRIGGER
 * @msg: the message
 * @t: filled (@t->event points into @msg), or NULL
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload or an
 * empty event name.
 */
int vt_proto_dec_trigger(const struct vt_proto_msg *msg, struct vt_proto_trigger *t)
{
	struct vt_proto_trigger d;
	int ret;

	ret = r_message(msg, VT_PROTO_TRIGGER, &trigger_layout, &d);
	if (ret < 0)
		return ret;
	if (!d.event[0])
		return -EBADMSG;
	if (t)
		*t = d;
	return 0;
}

/* ---------------------------------------------------------------- SESSION */

static const struct wlayout session_layout = {
	sizeof(struct wire_session), 5, 2, {
		WF(struct wire_session, flags, struct vt_proto_session, flags),
		WF(struct wire_session, nr_streams, struct vt_proto_session, nr_streams),
		WF(struct wire_session, subbuf_size, struct vt_proto_session, subbuf_size),
		WF(struct wire_session, nr_events, struct vt_proto_session, nr_events),
		WF(struct wire_session, resume, struct vt_proto_session, resume),
	}, {
		WS(struct vt_proto_session, instance, STR_INSTANCE_OPT, VT_PROTO_MAX_NAME),
		WS(struct vt_proto_session, clock, STR_IDENT_OPT, VT_PROTO_MAX_NAME),
	},
};

static bool session_ok(const struct vt_proto_session *ss)
{
	return !(ss->flags & ~VT_PROTO_SESSION_FLAGS) && ss->nr_streams <= VT_PROTO_MAX_CPUS &&
	       ss->subbuf_size <= VT_PROTO_MAX_SUBBUF &&
	       (ss->flags & VT_PROTO_SESSION_STREAMING ? ss->resume != 0 : ss->nr_streams == 0);
}

/**
 * vt_proto_enc_session() - write SESSION
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @ss: contents; NULL strings are sent as ""
 *
 * Return: the frame length, -EINVAL for contents the peer would reject
 * (unknown flags, streams without STREAMING, a streaming session with
 * resume 0), -ENOBUFS.
 */
int vt_proto_enc_session(void *buf, size_t size, uint32_t seq, const struct vt_proto_session *ss)
{
	if (!ss || !session_ok(ss))
		return -EINVAL;
	return w_message(buf, size, VT_PROTO_SESSION, seq, &session_layout, ss);
}

/**
 * vt_proto_dec_session() - read SESSION
 * @msg: the message
 * @ss: filled; its strings point into @msg
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload.
 */
int vt_proto_dec_session(const struct vt_proto_msg *msg, struct vt_proto_session *ss)
{
	struct vt_proto_session d;
	int ret;

	ret = r_message(msg, VT_PROTO_SESSION, &session_layout, &d);
	if (ret < 0)
		return ret;
	if (!session_ok(&d))
		return -EBADMSG;
	if (ss)
		*ss = d;
	return 0;
}

/**
 * vt_proto_mark_encode() - write a resume mark page
 * @page: @subbuf bytes, overwritten
 * @subbuf: the stream's sub-buffer size
 * @mk: the mark's fields
 *
 * Return: 0, or -EINVAL when @subbuf cannot hold a mark.
 */
int vt_proto_mark_encode(void *page, size_t subbuf, const struct vt_proto_mark *mk)
{
	uint8_t *p = page;

	if (!page || !mk || subbuf < VT_PROTO_MARK_SIZE || subbuf > VT_PROTO_MAX_SUBBUF)
		return -EINVAL;
	memset(p, 0, subbuf);
	memcpy(p + offsetof(struct wire_mark, magic), VT_PROTO_MARK_MAGIC, 8);
	W_PUT(p, struct wire_mark, version, VT_PROTO_MARK_VERSION);
	W_PUT(p, struct wire_mark, cpu, mk->cpu);
	W_PUT(p, struct wire_mark, position, mk->position);
	W_PUT(p, struct wire_mark, resume, mk->resume);
	return 0;
}

/**
 * vt_proto_mark_decode() - tell a resume mark from a ring-buffer page
 * @page: one whole sub-buffer from a data stream
 * @subbuf: its size
 * @mk: filled when it is a mark (may be NULL)
 *
 * A mark is an empty page (timestamp 0, commit 0) whose data area starts with
 * the magic and a known version, every other byte 0; a ring buffer never
 * hands out such a page.
 *
 * Return: 1 for a mark, 0 for anything else (a page to check as usual).
 */
int vt_proto_mark_decode(const void *page, size_t subbuf, struct vt_proto_mark *mk)
{
	const uint8_t *p = page;
	size_t i;

	if (!page || subbuf < VT_PROTO_MARK_SIZE || W_GET(p, struct wire_mark, timestamp) ||
	    W_GET(p, struct wire_mark, commit) ||
	    memcmp(p + offsetof(struct wire_mark, magic), VT_PROTO_MARK_MAGIC, 8) ||
	    W_GET(p, struct wire_mark, version) != VT_PROTO_MARK_VERSION)
		return 0;
	for (i = VT_PROTO_MARK_SIZE; i < subbuf; i++)
		if (p[i])
			return 0;
	if (mk) {
		mk->cpu = (uint32_t)W_GET(p, struct wire_mark, cpu);
		mk->position = W_GET(p, struct wire_mark, position);
		mk->resume = W_GET(p, struct wire_mark, resume);
	}
	return 1;
}

/* ---------------------------------------------------------------- META */

/**
 * vt_proto_enc_meta_req_key() - write META_REQ, with flags and a kallsyms key
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @max_total: the largest bundle the sender will accept
 * @flags: VT_PROTO_META_REQ_*; only for an agent with VT_PROTO_CAP_META_FLAGS
 *	(0 writes the 8-byte payload every agent reads)
 * @key: with VT_PROTO_META_REQ_KALLSYMS_UNLESS_KEY (only then), not 0: the
 *	key of the kallsyms the host has
 *
 * Return: the frame length, -EINVAL for a key without its flag or the flag
 * without a key, -ENOBUFS.
 */
int vt_proto_enc_meta_req_key(void *buf, size_t size, uint32_t seq, uint64_t max_total,
			      uint32_t flags, uint64_t key)
{
	bool unless = flags & VT_PROTO_META_REQ_KALLSYMS_UNLESS_KEY;
	struct wbuf w;
	uint8_t *f;

	if (unless != (key != 0))
		return -EINVAL;
	w_init(&w, buf, size, VT_PROTO_META_REQ, seq);
	f = w_reserve(&w, sizeof(struct wire_meta_req));
	if (f)
		W_PUT(f, struct wire_meta_req, max_total, max_total);
	if (flags) {
		f = w_reserve(&w, 4);
		if (f)
			vt_put_le32(f, flags);
	}
	if (unless) {
		f = w_reserve(&w, 8);
		if (f)
			vt_put_le64(f, key);
	}
	return w_finish(&w);
}

/**
 * vt_proto_enc_meta_req_flags() - write META_REQ, with flags when not 0
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @max_total: the largest bundle the sender will accept
 * @flags: VT_PROTO_META_REQ_* but KALLSYMS_UNLESS_KEY; only for an agent with
 *	VT_PROTO_CAP_META_FLAGS (0 writes the 8-byte payload every agent reads)
 *
 * Return: the frame length, -EINVAL, -ENOBUFS.
 */
int vt_proto_enc_meta_req_flags(void *buf, size_t size, uint32_t seq, uint64_t max_total,
				uint32_t flags)
{
	return vt_proto_enc_meta_req_key(buf, size, seq, max_total, flags, 0);
}

/**
 * vt_proto_enc_meta_req() - write META_REQ
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @max_total: the largest bundle the sender will accept
 *
 * Return: the frame length, -ENOBUFS.
 */
int vt_proto_enc_meta_req(void *buf, size_t size, uint32_t seq, uint64_t max_total)
{
	return vt_proto_enc_meta_req_flags(buf, size, seq, max_total, 0);
}

/**
 * vt_proto_dec_meta_req_key() - read META_REQ
 * @msg: the message
 * @max_total: the largest bundle the requester accepts
 * @flags: VT_PROTO_META_REQ_* (0 when the payload has none)
 * @key: the key that follows VT_PROTO_META_REQ_KALLSYMS_UNLESS_KEY; 0 without
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload, an
 * unknown flag, a flags field of 0, or a key that is 0, missing or there
 * without its flag.
 */
int vt_proto_dec_meta_req_key(const struct vt_proto_msg *msg, uint64_t *max_total, uint32_t *flags,
			      uint64_t *key)
{
	const uint8_t *f, *fl = NULL, *k = NULL;
	uint32_t v = 0;
	struct rbuf r;
	int ret;

	ret = r_init(&r, msg, VT_PROTO_META_REQ);
	if (ret < 0)
		return ret;
	f = r_take(&r, sizeof(struct wire_meta_req));
	if (f && (r.left == 4 || r.left == 12))
		fl = r_take(&r, 4);
	if (fl && r.left == 8)
		k = r_take(&r, 8);
	if (!f || r_end(&r))
		return -EBADMSG;
	if (fl)
		v = vt_get_le32(fl);
	/* Flags are sent only when not 0, a key only with its flag: one encoding per request. */
	if (fl && (!v || (v & ~VT_PROTO_META_REQ_FLAGS)))
		return -EBADMSG;
	if (!(v & VT_PROTO_META_REQ_KALLSYMS_UNLESS_KEY) != !k || (k && !vt_get_le64(k)))
		return -EBADMSG;
	if (max_total)
		*max_total = W_GET(f, struct wire_meta_req, max_total);
	if (flags)
		*flags = v;
	if (key)
		*key = k ? vt_get_le64(k) : 0;
	return 0;
}

/**
 * vt_proto_dec_meta_req_flags() - read META_REQ, ignoring a kallsyms key
 * @msg: the message
 * @max_total: the largest bundle the requester accepts
 * @flags: VT_PROTO_META_REQ_* (0 when the payload has none)
 *
 * Return: as vt_proto_dec_meta_req_key().
 */
int vt_proto_dec_meta_req_flags(const struct vt_proto_msg *msg, uint64_t *max_total, uint32_t *flags)
{
	return vt_proto_dec_meta_req_key(msg, max_total, flags, NULL);
}

/**
 * vt_proto_dec_meta_req() - read META_REQ, ignoring its flags
 * @msg: the message
 * @max_total: the largest bundle the requester accepts
 *
 * Return: as vt_proto_dec_meta_req_flags().
 */
int vt_proto_dec_meta_req(const struct vt_proto_msg *msg, uint64_t *max_total)
{
	return vt_proto_dec_meta_req_flags(msg, max_total, NULL);
}

/* A chunk's fixed part; its data is the rest of the payload. */
static const struct wlayout meta_layout = {
	sizeof(struct wire_meta), 2, 0, {
		WF(struct wire_meta, total, struct vt_proto_meta_chunk, total),
		WF(struct wire_meta, offset, struct vt_proto_meta_chunk, offset),
	},
};

static bool meta_ok(uint64_t total, uint64_t offset, uint64_t len)
{
	/* An open chunk: not empty, and inside the largest total there is. */
	if (total == VT_PROTO_META_OPEN)
		return len && offset <= VT_PROTO_META_MAX_TOTAL && len <= VT_PROTO_META_MAX_TOTAL - offset;
	if (total > VT_PROTO_META_MAX_TOTAL || offset > total || len > total - offset)
		return false;
	return len || total == 0;
}

/**
 * vt_proto_enc_meta() - write one META chunk
 * @buf: destination
 * @size: size of @buf
 * @seq: sequence number
 * @chunk: @chunk->len at most VT_PROTO_META_CHUNK_MAX, inside @chunk->total
 *
 * Return: the frame length; -EINVAL for a chunk outside the total, an empty
 * chunk of a non-empty blob, or a total above VT_PROTO_META_MAX_TOTAL;
 * -EMSGSIZE for a chunk too long; -ENOBUFS.
 */
int vt_proto_enc_meta(void *buf, size_t size, uint32_t seq,
		      const struct vt_proto_meta_chunk *chunk)
{
	struct wbuf w;

	if (!chunk || (chunk->len && !chunk->data) ||
	    !meta_ok(chunk->total, chunk->offset, chunk->len))
		return -EINVAL;
	w_init(&w, buf, size, VT_PROTO_META, seq);
	w_layout(&w, &meta_layout, chunk);
	w_bytes(&w, chunk->data, chunk->len);
	return w_finish(&w);
}

/**
 * vt_proto_dec_meta() - read one META chunk
 * @msg: the message
 * @chunk: filled; @chunk->data points into @msg
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a total above
 * VT_PROTO_META_MAX_TOTAL, a chunk outside it or an empty chunk of a
 * non-empty blob.
 */
int vt_proto_dec_meta(const struct vt_proto_msg *msg, struct vt_proto_meta_chunk *chunk)
{
	struct vt_proto_meta_chunk d;
	struct rbuf r;
	int ret;

	ret = r_init(&r, msg, VT_PROTO_META) ?: r_layout(&r, &meta_layout, &d);
	if (ret < 0)
		return ret;
	d.len = (uint32_t)r.left;
	d.data = d.len ? r.p : NULL;
	if (!meta_ok(d.total, d.offset, d.len))
		return -EBADMSG;
	if (chunk)
		*chunk = d;
	return 0;
}

/**
 * vt_proto_meta_rx_init() - prepare to receive a META blob
 * @rx: the receiver state
 * @limit: the largest total accepted; clamped to VT_PROTO_META_MAX_TOTAL
 */
void vt_proto_meta_rx_init(struct vt_proto_meta_rx *rx, uint64_t limit)
{
	memset(rx, 0, sizeof(*rx));
	rx->limit = limit < VT_PROTO_META_MAX_TOTAL ? limit : VT_PROTO_META_MAX_TOTAL;
}

/**
 * vt_proto_meta_rx_add() - append a decoded META chunk
 * @rx: the receiver state
 * @chunk: from vt_proto_dec_meta()
 *
 * Memory grows with the data received, never with the total a peer announces.
 * An open blob (chunks of total VT_PROTO_META_OPEN, then one whose total is
 * its offset + length) is held to the same limit as it grows.
 * After an error the transfer is broken: release @rx (and tell the peer).
 *
 * Return: 1 when the blob is complete (@rx->data, @rx->len), 0 when more
 * chunks are due; -EFBIG if the announced total, or an open blob's data so
 * far, exceeds the limit; -EPROTO for a chunk out of order, a changed total,
 * a last chunk that does not end where its total says, or a chunk after the
 * end; -ENOMEM.
 */
int vt_proto_meta_rx_add(struct vt_proto_meta_rx *rx, const struct vt_proto_meta_chunk *chunk)
{
	uint64_t need, cap;
	uint8_t *data;

	if (!rx || !chunk || !meta_ok(chunk->total, chunk->offset, chunk->len) ||
	    (chunk->len && !chunk->data))
		return -EINVAL;
	if (!rx->started) {
		if (chunk->offset != 0)
			return -EPROTO;
		rx->total = chunk->total;
		rx->started = true;
	} else if (rx->len == rx->total || chunk->offset != rx->len ||
		   (rx->total != VT_PROTO_META_OPEN && chunk->total != rx->total)) {
		return -EPROTO;
	}
	need = rx->len + chunk->len;
	if (rx->total == VT_PROTO_META_OPEN && chunk->total != VT_PROTO_META_OPEN) {
		/* The last chunk of an open blob. */
		if (chunk->total != need)
			return -EPROTO;
		rx->total = chunk->total;
	}
	if ((rx->total == VT_PROTO_META_OPEN ? need : rx->total) > rx->limit)
		return -EFBIG;
	if (need > rx->cap) {
		cap = rx->cap ? rx->cap * 2 : (1u << 20);
		if (cap < need)
			cap = need;
		if (cap > rx->total)
			cap = rx->total;
		if (cap > rx->limit)
			cap = rx->limit;
		data = realloc(rx->data, cap);
		if (!data)
			return -ENOMEM;
		rx->data = data;
		rx->cap = cap;
	}
	if (chunk->len)
		memcpy(rx->data + rx->len, chunk->data, chunk->len);
	rx->len = need;
	return rx->len == rx->total ? 1 : 0;
}

/**
 * vt_proto_meta_rx_release() - free a receiver's data and make it ready again
 * @rx: the receiver state; its limit is kept
 *
 * A caller that wants to keep the blob takes @rx->data and sets it to NULL first.
 */
void vt_proto_meta_rx_release(struct vt_proto_meta_rx *rx)
{
	uint64_t limit = rx->limit;

	free(rx->data);
	vt_proto_meta_rx_init(rx, limit);
}

/* ---------------------------------------------------------------- SYNC */

/* Indexed by type - VT_PROTO_SYNC_BEGIN. */
static const struct wlayout sync_layouts[4] = {
	{ sizeof(struct wire_sync_begin), 2, 0, {
		WF(struct wire_sync_begin, cpu, struct vt_proto_sync, cpu),
		WF(struct wire_sync_begin, nr_probes, struct vt_proto_sync, probe),
	} },
	{ sizeof(struct wire_sync_probe), 2, 0, {
		WF(struct wire_sync_probe, cpu, struct vt_proto_sync, cpu),
		WF(struct wire_sync_probe, probe, struct vt_proto_sync, probe),
	} },
	{ sizeof(struct wire_sync_reply), 5, 0, {
		WF(struct wire_sync_reply, cpu, struct vt_proto_sync, cpu),
		WF(struct wire_sync_reply, probe, struct vt_proto_sync, probe),
		WF(struct wire_sync_reply, tsc, struct vt_proto_sync, tsc),
		WF(struct wire_sync_reply, ran_on, struct vt_proto_sync, ran_on),
		WF_RESERVED(struct wire_sync_reply, reserved),
	} },
	{ sizeof(struct wire_sync_end), 1, 0, {
		WF(struct wire_sync_end, cpu, struct vt_proto_sync, cpu),
	} },
};
_Static_assert(VT_PROTO_SYNC_END - VT_PROTO_SYNC_BEGIN == 3 &&
	       VT_PROTO_SYNC_PROBE == VT_PROTO_SYNC_BEGIN + 1 &&
	       VT_PROTO_SYNC_REPLY == VT_PROTO_SYNC_BEGIN + 2, "SYNC types in order");

static bool sync_ok(uint16_t type, const struct vt_proto_sync *s)
{
	if (s->cpu >= VT_PROTO_MAX_CPUS)
		return false;
	switch (type) {
	case VT_PROTO_SYNC_BEGIN:
		return s->probe >= 1 && s->probe <= VT_PROTO_MAX_PROBES;
	case VT_PROTO_SYNC_PROBE:
	case VT_PROTO_SYNC_END:
		return true;
	case VT_PROTO_SYNC_REPLY:
		return s->ran_on < VT_PROTO_MAX_CPUS;
	}
	return false;
}

/**
 * vt_proto_enc_sync() - write SYNC_BEGIN, SYNC_PROBE, SYNC_REPLY or SYNC_END
 * @buf: destination
 * @size: size of @buf
 * @type: one of the four SYNC types
 * @seq: sequence number
 * @sync: contents; the fields a type does not carry are ignored
 *
 * Return: the frame length; -EINVAL for another type, a CPU number of 4096 or
 * more, or a SYNC_BEGIN announcing 0 or more than 65536 probes; -ENOBUFS.
 */
int vt_proto_enc_sync(void *buf, size_t size, uint16_t type, uint32_t seq,
		      const struct vt_proto_sync *sync)
{
	if (!sync || !sync_ok(type, sync))
		return -EINVAL;
	return w_message(buf, size, type, seq, &sync_layouts[type - VT_PROTO_SYNC_BEGIN], sync);
}

/**
 * vt_proto_dec_sync() - read SYNC_BEGIN, SYNC_PROBE, SYNC_REPLY or SYNC_END
 * @msg: the message
 * @sync: filled; fields the type does not carry are 0
 *
 * Return: 0, -EINVAL for another type, -EBADMSG for a malformed payload.
 */
int vt_proto_dec_sync(const struct vt_proto_msg *msg, struct vt_proto_sync *sync)
{
	struct vt_proto_sync d = { 0 };
	int ret;

	if (!msg || msg->type < VT_PROTO_SYNC_BEGIN || msg->type > VT_PROTO_SYNC_END)
		return -EINVAL;
	ret = r_message(msg, msg->type, &sync_layouts[msg->type - VT_PROTO_SYNC_BEGIN], &d);
	if (ret < 0)
		return ret;
	if (!sync_ok(msg->type, &d))
		return -EBADMSG;
	if (sync)
		*sync = d;
	return 0;
}

/* ---------------------------------------------------------------- message types */

/* The typed decoders as vt_proto_msg_validate() runs them: the message only. */
#define CHECK(dec) \
	static int check_##dec(const struct vt_proto_msg *msg) { return vt_proto_dec_##dec(msg, NULL); }
CHECK(hello)
CHECK(ack)
CHECK(error)
CHECK(string)
CHECK(buffer_size)
CHECK(instance)
CHECK(flush)
CHECK(budget)
CHECK(stats)
CHECK(session)
CHECK(meta_req)
CHECK(meta)
CHECK(sync)
CHECK(watch)
CHECK(trigger)
#undef CHECK

static int check_events(const struct vt_proto_msg *msg)
{
	int ret = vt_proto_dec_events(msg, NULL, NULL, 0);

	return ret < 0 ? ret : 0;
}

/* START: empty, or its flags (record --hold). */
static int check_start(const struct vt_proto_msg *msg)
{
	return vt_proto_dec_start(msg, NULL);
}

#define MSG(type, dir, layout, check)	[VT_PROTO_##type] = { #type, dir, layout, check }

/* Every message type of this revision, by number: virtio-trace-protocol(5)'s list. */
static const struct msg_type msg_types[] = {
	MSG(HELLO, FROM_HOST, &hello_layout, check_hello),
	MSG(HELLO_REPLY, FROM_AGENT, &hello_layout, check_hello),
	MSG(OK, FROM_BOTH, &ack_layout, check_ack),
	MSG(ERROR, FROM_BOTH, &error_layout, check_error),
	MSG(BYE, FROM_BOTH, &empty_layout, vt_proto_dec_empty),
	MSG(EVENTS, FROM_HOST, &events_layout, check_events),
	MSG(TRACER, FROM_HOST, &name_layout, check_string),
	MSG(BUFFER_SIZE, FROM_HOST, &buffer_size_layout, check_buffer_size),
	MSG(CLOCK, FROM_HOST, &name_layout, check_string),
	MSG(INSTANCE, FROM_HOST, NULL, check_instance),
	MSG(START, FROM_HOST, &empty_layout, check_start),
	MSG(STOP, FROM_HOST, &empty_layout, vt_proto_dec_empty),
	MSG(STOPPED, FROM_AGENT, &ack_layout, check_ack),
	MSG(MARKER, FROM_HOST, &text_layout, check_string),
	MSG(STATS_REQ, FROM_HOST, &empty_layout, vt_proto_dec_empty),
	MSG(STATS, FROM_AGENT, &stats_layout, check_stats),
	MSG(META_REQ, FROM_HOST, NULL, check_meta_req),
	MSG(META, FROM_AGENT, &meta_layout, check_meta),
	MSG(SYNC_BEGIN, FROM_HOST, &sync_layouts[0], check_sync),
	MSG(SYNC_PROBE, FROM_HOST, &sync_layouts[1], check_sync),
	MSG(SYNC_REPLY, FROM_AGENT, &sync_layouts[2], check_sync),
	MSG(SYNC_END, FROM_HOST, &sync_layouts[3], check_sync),
	MSG(LASTBOOT_REQ, FROM_HOST, &name_layout, check_string),
	MSG(NOTICE, FROM_AGENT, &text_layout, check_string),
	MSG(FLUSH, FROM_HOST, &flush_layout, check_flush),
	MSG(RESUME, FROM_HOST, &empty_layout, vt_proto_dec_empty),
	MSG(SESSION, FROM_AGENT, &session_layout, check_session),
	MSG(WATCH, FROM_HOST, &watch_layout, check_watch),
	MSG(TRIGGER, FROM_AGENT, &trigger_layout, check_trigger),
	MSG(BUFFER_BUDGET, FROM_HOST, &budget_layout, check_budget),
};
#undef MSG

/* @type's row, or NULL for a type this revision does not have. */
static const struct msg_type *msg_type(uint16_t type)
{
	if (type >= sizeof(msg_types) / sizeof(msg_types[0]) || !msg_types[type].name)
		return NULL;
	return &msg_types[type];
}

/**
 * vt_proto_msg_validate() - check a message's payload with its typed decoder
 * @msg: a message from the parser or vt_proto_msg_decode()
 *
 * For a dispatcher that wants to answer a malformed message with ERROR before
 * looking at its type.
 *
 * Return: 0, -EBADMSG for a malformed payload, -EPROTO for an unknown type.
 */
int vt_proto_msg_validate(const struct vt_proto_msg *msg)
{
	const struct msg_type *t;

	if (!msg)
		return -EINVAL;
	t = msg_type(msg->type);
	return t ? t->check(msg) : -EPROTO;
}

/* ---------------------------------------------------------------- parser */

/*
 * Bytes live in buf[start, end). The message last returned occupies the first
 * `pending` bytes and is dropped on the next call, so its payload stays valid
 * until then. The buffer holds exactly one largest frame: when it is full,
 * vt_proto_parser_next() always makes progress.
 */
struct vt_proto_parser {
	size_t start;
	size_t end;
	size_t pending;
	uint64_t skipped;
	bool resync;		/* inside a run of garbage, already reported */
	bool after_nl;		/* the last garbage byte dropped was '\n' */
	uint8_t buf[VT_PROTO_FRAME_MAX];
};

/**
 * vt_proto_parser_new() - allocate a stream parser for one control connection
 *
 * Return: the parser, or NULL with errno set.
 */
struct vt_proto_parser *vt_proto_parser_new(void)
{
	struct vt_proto_parser *p = malloc(sizeof(*p));

	if (!p)
		return NULL;
	p->start = 0;
	p->end = 0;
	p->pending = 0;
	p->skipped = 0;
	p->resync = false;
	p->after_nl = false;
	return p;
}

/**
 * vt_proto_parser_free() - free a parser
 * @p: the parser, or NULL
 */
void vt_proto_parser_free(struct vt_proto_parser *p)
{
	free(p);
}

static void parser_release(struct vt_proto_parser *p)
{
	p->start += p->pending;
	p->pending = 0;
	if (p->start == p->end)
		p->start = p->end = 0;
}

/**
 * vt_proto_parser_feed() - give the parser bytes read from the control port
 * @p: the parser
 * @data: bytes, split or coalesced in any way
 * @len: how many
 *
 * The parser buffers at most VT_PROTO_FRAME_MAX bytes. Invalidates the message
 * last returned by vt_proto_parser_next().
 *
 * Return: the number of bytes taken, possibly fewer than @len (0 when the
 * buffer is full): call vt_proto_parser_next() until it returns 0, then feed
 * the rest.
 */
size_t vt_proto_parser_feed(struct vt_proto_parser *p, const void *data, size_t len)
{
	size_t room;

	if (!p || !data)
		return 0;
	parser_release(p);
	room = sizeof(p->buf) - p->end;
	if (room < len && p->start) {
		memmove(p->buf, p->buf + p->start, p->end - p->start);
		p->end -= p->start;
		p->start = 0;
		room = sizeof(p->buf) - p->end;
	}
	if (len > room)
		len = room;
	memcpy(p->buf + p->end, data, len);
	p->end += len;
	return len;
}

/**
 * vt_proto_parser_next() - take the next whole message out of the parser
 * @p: the parser
 * @msg: the message; its payload points into the parser and stays valid until
 *       the next call on @p
 *
 * At a message boundary a lone "1\n" or "0\n" (the kernel tool's protocol) comes
 * out as START or STOP with @msg->legacy set and seq 0. Bytes that are neither a
 * frame nor a legacy line are skipped up to the next possible frame start (the
 * magic) or line start; each such run is reported once. The parser is always
 * left in a usable state: after an error, keep calling.
 *
 * Return: 1 with a message in @msg; 0 when more bytes are needed; -EBADMSG
 * for garbage (bad magic); -EPROTO for another framing version (skipped as
 * garbage); -EMSGSIZE for a header announcing more than VT_PROTO_MAX_PAYLOAD
 * (skipped as garbage); -EPROTO for a whole frame with an unknown type or
 * flags, which is skipped and described in @msg so it can be answered.
 */
int vt_proto_parser_next(struct vt_proto_parser *p, struct vt_proto_msg *msg)
{
	bool framed;
	int err;

	if (!p || !msg)
		return -EINVAL;
	parser_release(p);
	memset(msg, 0, sizeof(*msg));
	for (;;) {
		size_t avail = p->end - p->start;
		const uint8_t *b = p->buf + p->start;
		uint8_t c;

		if (!avail)
			return 0;
		if ((b[0] == '1' || b[0] == '0') && (!p->resync || p->after_nl)) {
			if (avail < 2)
				return 0;
			if (b[1] == '\n') {
				msg->type = b[0] == '1' ? VT_PROTO_START : VT_PROTO_STOP;
				msg->legacy = true;
				p->pending = 2;
				p->resync = false;
				return 1;
			}
			err = -EBADMSG;
		} else if (b[0] == magic_bytes[0]) {
			size_t n = avail < sizeof(magic_bytes) ? avail : sizeof(magic_bytes);

			if (memcmp(b, magic_bytes, n) == 0) {
				if (avail < VT_PROTO_HDR_SIZE)
					return 0;
				err = hdr_parse(b, msg, &framed);
				if (framed) {
					if (avail - VT_PROTO_HDR_SIZE < msg->len)
						return 0;
					msg->payload = b + VT_PROTO_HDR_SIZE;
					p->pending = VT_PROTO_HDR_SIZE + msg->len;
					p->resync = false;
					return err ? err : 1;
				}
				memset(msg, 0, sizeof(*msg));
			} else {
				err = -EBADMSG;
			}
		} else {
			err = -EBADMSG;
		}
		/* garbage: drop one byte and look again from the next */
		c = b[0];
		p->start++;
		p->skipped++;
		p->after_nl = c == '\n';
		if (!p->resync) {
			p->resync = true;
			return err;
		}
	}
}

/**
 * vt_proto_parser_buffered() - bytes held by the parser
 * @p: the parser
 *
 * Return: bytes fed and not yet consumed (including the message last returned).
 */
size_t vt_proto_parser_buffered(const struct vt_proto_parser *p)
{
	return p->end - p->start;
}

/**
 * vt_proto_parser_skipped() - bytes dropped as garbage since the parser was made
 * @p: the parser
 *
 * Return: the count.
 */
uint64_t vt_proto_parser_skipped(const struct vt_proto_parser *p)
{
	return p->skipped;
}

/* ---------------------------------------------------------------- I/O */

/**
 * vt_proto_write_all() - write a whole frame to a file descriptor
 * @fd: the control port (blocking or not)
 * @buf: the frame
 * @len: its length
 * @timeout_ms: on a non-blocking @fd, how long to wait for each chance to
 *              write (-1: no limit)
 *
 * Short writes and EINTR are retried. A frame cut short by an error leaves the
 * stream unusable: the caller must close it.
 *
 * Return: 0, -ETIMEDOUT, -EIO if write() returned 0, or -errno of write()/poll().
 */
int vt_proto_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	const uint8_t *p = buf;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	ssize_t n;
	int r;

	while (len) {
		n = write(fd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -EIO;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = poll(&pfd, 1, timeout_ms);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}
