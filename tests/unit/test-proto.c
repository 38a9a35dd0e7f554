// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control-protocol codec: every message round-trips, every malformed frame
 * or payload is rejected with the documented error, and the stream parser copes
 * with split, coalesced and garbage input and with the legacy "1\n"/"0\n" lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "vt_le.h"
#include "vt_proto.h"

static uint8_t t_buf[VT_PROTO_FRAME_MAX];
static uint8_t t_big[VT_PROTO_FRAME_MAX * 3];

/* Decode a frame we just encoded; the frame must be exactly @n bytes. */
static void t_decode(const uint8_t *frame, int n, uint16_t type, uint32_t seq,
		     struct vt_proto_msg *msg)
{
	assert_true(n >= (int)VT_PROTO_HDR_SIZE);
	assert_int_equal(vt_proto_msg_decode(frame, (size_t)n, msg), n);
	assert_int_equal(msg->type, type);
	assert_int_equal(msg->seq, seq);
	assert_int_equal(msg->len, (uint32_t)n - VT_PROTO_HDR_SIZE);
	assert_false(msg->legacy);
	assert_int_equal(vt_proto_msg_validate(msg), 0);
}

/* A frame whose payload is @payload, for hand-made malformed payloads. */
static void t_raw(uint16_t type, const void *payload, size_t len, struct vt_proto_msg *msg)
{
	int n = vt_proto_encode(t_buf, sizeof(t_buf), type, 7, payload, len);

	assert_int_equal(n, (int)(VT_PROTO_HDR_SIZE + len));
	assert_int_equal(vt_proto_msg_decode(t_buf, (size_t)n, msg), n);
}

/* Append a wire string (u16 length with NUL, bytes) to @p; returns bytes written. */
static size_t t_put_str(uint8_t *p, const char *s, size_t len_with_nul)
{
	vt_put_le16(p, (uint16_t)len_with_nul);
	memcpy(p + 2, s, len_with_nul);
	return 2 + len_with_nul;
}

/* ------------------------------------------------------------ round trips */

static void test_header_layout(void **state)
{
	int n = vt_proto_enc_empty(t_buf, sizeof(t_buf), VT_PROTO_START, 0x01020304);

	assert_int_equal(n, 16);
	assert_memory_equal(t_buf, "VTCP", 4);
	assert_int_equal(t_buf[4], VT_PROTO_FRAME_VERSION);
	assert_int_equal(t_buf[5], 0);
	assert_int_equal(vt_get_le16(t_buf + 6), VT_PROTO_START);
	assert_int_equal(vt_get_le32(t_buf + 8), 0x01020304);
	assert_int_equal(vt_get_le32(t_buf + 12), 0);
}

static void test_roundtrip_empty(void **state)
{
	static const uint16_t types[] = {
		VT_PROTO_BYE, VT_PROTO_START, VT_PROTO_STOP, VT_PROTO_STATS_REQ,
	};
	struct vt_proto_msg msg;
	size_t i;
	int n;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		n = vt_proto_enc_empty(t_buf, sizeof(t_buf), types[i], (uint32_t)i + 1);
		t_decode(t_buf, n, types[i], (uint32_t)i + 1, &msg);
		assert_int_equal(vt_proto_dec_empty(&msg), 0);
	}
	assert_int_equal(vt_proto_enc_empty(t_buf, sizeof(t_buf), VT_PROTO_OK, 1), -EINVAL);
}

/* START: empty (every agent) or u32 flags (HOLD); 0 and unknown flags are refused. */
static void test_roundtrip_start(void **state)
{
	static const uint8_t p0[4] = { 0 }, p2[4] = { 2, 0, 0, 0 }, p1[5] = { 1 };
	struct vt_proto_msg msg;
	uint32_t flags = 7;
	int n;

	n = vt_proto_enc_start(t_buf, sizeof(t_buf), 1, 0);
	assert_int_equal(n, 16);
	t_decode(t_buf, n, VT_PROTO_START, 1, &msg);
	assert_int_equal(vt_proto_dec_empty(&msg), 0);
	assert_int_equal(vt_proto_dec_start(&msg, &flags), 0);
	assert_int_equal(flags, 0);
	n = vt_proto_enc_start(t_buf, sizeof(t_buf), 2, VT_PROTO_START_HOLD);
	assert_int_equal(n, 20);
	t_decode(t_buf, n, VT_PROTO_START, 2, &msg);
	assert_int_equal(vt_proto_msg_validate(&msg), 0);
	assert_int_equal(vt_proto_dec_empty(&msg), -EBADMSG);	/* an older agent refuses it */
	assert_int_equal(vt_proto_dec_start(&msg, &flags), 0);
	assert_int_equal(flags, VT_PROTO_START_HOLD);
	assert_int_equal(vt_proto_enc_start(t_buf, sizeof(t_buf), 3, 2), -EINVAL);
	t_raw(VT_PROTO_START, p0, 4, &msg);
	assert_int_equal(vt_proto_dec_start(&msg, &flags), -EBADMSG);
	t_raw(VT_PROTO_START, p2, 4, &msg);
	assert_int_equal(vt_proto_dec_start(&msg, &flags), -EBADMSG);
	t_raw(VT_PROTO_START, p1, 5, &msg);
	assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
	t_raw(VT_PROTO_START, p1, 3, &msg);
	assert_int_equal(vt_proto_dec_start(&msg, &flags), -EBADMSG);
}

static void test_roundtrip_hello(void **state)
{
	struct vt_proto_hello h = {
		.rev_min = 1, .rev_max = 3, .nr_cpus = 0, .subbuf_size = 0,
		.caps = VT_PROTO_CAP_X86_TSC | VT_PROTO_CAP_SYNC_TSC | (1ull << 63),
		.clock = "x86-tsc", .software = "virtio-trace-collect 0.1.0",
	};
	struct vt_proto_hello d;
	struct vt_proto_msg msg;
	uint16_t rev;
	int n;

	n = vt_proto_enc_hello(t_buf, sizeof(t_buf), VT_PROTO_HELLO, 1, &h);
	t_decode(t_buf, n, VT_PROTO_HELLO, 1, &msg);
	assert_int_equal(vt_proto_dec_hello(&msg, &d), 0);
	assert_int_equal(d.rev_min, 1);
	assert_int_equal(d.rev_max, 3);
	assert_true(d.caps == h.caps);
	assert_string_equal(d.clock, "x86-tsc");
	assert_string_equal(d.software, h.software);
	assert_int_equal(vt_proto_hello_negotiate(&d, &rev), 0);
	assert_int_equal(rev, VT_PROTO_REV_MAX);

	h.rev_min = h.rev_max = 1;
	h.nr_cpus = 4;
	h.subbuf_size = 4096;
	h.clock = "";
	h.software = NULL;
	n = vt_proto_enc_hello(t_buf, sizeof(t_buf), VT_PROTO_HELLO_REPLY, 2, &h);
	t_decode(t_buf, n, VT_PROTO_HELLO_REPLY, 2, &msg);
	assert_int_equal(vt_proto_dec_hello(&msg, &d), 0);
	assert_int_equal(d.nr_cpus, 4);
	assert_int_equal(d.subbuf_size, 4096);
	assert_string_equal(d.clock, "");
	assert_string_equal(d.software, "");

	d.rev_min = d.rev_max = VT_PROTO_REV_MAX + 1;
	assert_int_equal(vt_proto_hello_negotiate(&d, &rev), -EPROTONOSUPPORT);
	/* a reply must name one revision and at least one CPU */
	h.rev_max = 2;
	assert_int_equal(vt_proto_enc_hello(t_buf, sizeof(t_buf), VT_PROTO_HELLO_REPLY, 2, &h),
			 -EINVAL);
	h.rev_max = 1;
	h.nr_cpus = 0;
	assert_int_equal(vt_proto_enc_hello(t_buf, sizeof(t_buf), VT_PROTO_HELLO_REPLY, 2, &h),
			 -EINVAL);
	h.nr_cpus = 1;
	h.clock = "x86 tsc";
	assert_int_equal(vt_proto_enc_hello(t_buf, sizeof(t_buf), VT_PROTO_HELLO_REPLY, 2, &h),
			 -EINVAL);
}

static void test_roundtrip_ack_error(void **state)
{
	struct vt_proto_error e = { .ref_seq = 41, .err = -ENOENT, .text = "no clock x86-tsc: %s%n" };
	struct vt_proto_error de;
	struct vt_proto_msg msg;
	uint32_t ref;
	int n;

	n = vt_proto_enc_ack(t_buf, sizeof(t_buf), VT_PROTO_OK, 5, 4);
	t_decode(t_buf, n, VT_PROTO_OK, 5, &msg);
	assert_int_equal(vt_proto_dec_ack(&msg, &ref), 0);
	assert_int_equal(ref, 4);

	n = vt_proto_enc_ack(t_buf, sizeof(t_buf), VT_PROTO_STOPPED, 6, 0);
	t_decode(t_buf, n, VT_PROTO_STOPPED, 6, &msg);
	assert_int_equal(vt_proto_dec_ack(&msg, &ref), 0);
	assert_int_equal(ref, 0);

	n = vt_proto_enc_error(t_buf, sizeof(t_buf), 7, &e);
	t_decode(t_buf, n, VT_PROTO_ERROR, 7, &msg);
	assert_int_equal(vt_proto_dec_error(&msg, &de), 0);
	assert_int_equal(de.ref_seq, 41);
	assert_int_equal(de.err, ENOENT);
	assert_string_equal(de.text, e.text);

	e.err = 0;
	assert_int_equal(vt_proto_enc_error(t_buf, sizeof(t_buf), 7, &e), -EINVAL);
	e.err = 4096;
	assert_int_equal(vt_proto_enc_error(t_buf, sizeof(t_buf), 7, &e), -EINVAL);
	e.err = -4096;
	assert_int_equal(vt_proto_enc_error(t_buf, sizeof(t_buf), 7, &e), -EINVAL);
	e.err = INT_MIN;
	assert_int_equal(vt_proto_enc_error(t_buf, sizeof(t_buf), 7, &e), -EINVAL);
}

static void test_roundtrip_events(void **state)
{
	const struct vt_proto_event ev[] = {
		{ "sched", "sched_switch", "prev_pid != 0 && next_comm ~ \"kworker*\"" },
		{ "iommu", "*", "" },
		{ "xhci-hcd", "xhci_[a-c]*", NULL },
	};
	struct vt_proto_event out[VT_PROTO_MAX_EVENTS];
	struct vt_proto_msg msg;
	uint32_t flags;
	int n;

	n = vt_proto_enc_events(t_buf, sizeof(t_buf), 9, VT_PROTO_EVENTS_REPLACE, ev, 3);
	t_decode(t_buf, n, VT_PROTO_EVENTS, 9, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, &flags, out, VT_PROTO_MAX_EVENTS), 3);
	assert_int_equal(flags, VT_PROTO_EVENTS_REPLACE);
	assert_string_equal(out[0].system, "sched");
	assert_string_equal(out[0].filter, ev[0].filter);
	assert_string_equal(out[1].event, "*");
	assert_string_equal(out[2].system, "xhci-hcd");
	assert_string_equal(out[2].event, "xhci_[a-c]*");
	assert_string_equal(out[2].filter, "");
	assert_int_equal(vt_proto_dec_events(&msg, NULL, out, 2), -ENOSPC);

	/* zero entries with REPLACE: disable everything */
	n = vt_proto_enc_events(t_buf, sizeof(t_buf), 10, VT_PROTO_EVENTS_REPLACE, NULL, 0);
	t_decode(t_buf, n, VT_PROTO_EVENTS, 10, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, &flags, out, 0), 0);
}

static void test_roundtrip_strings(void **state)
{
	char text[VT_PROTO_MAX_TEXT];
	struct vt_proto_msg msg;
	const char *s;
	int n;

	n = vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_TRACER, 1, "mmiotrace");
	t_decode(t_buf, n, VT_PROTO_TRACER, 1, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &s), 0);
	assert_string_equal(s, "mmiotrace");

	n = vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_CLOCK, 2, "x86-tsc");
	t_decode(t_buf, n, VT_PROTO_CLOCK, 2, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &s), 0);
	assert_string_equal(s, "x86-tsc");

	/* the longest marker the protocol allows */
	memset(text, 'm', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	n = vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_MARKER, 3, text);
	t_decode(t_buf, n, VT_PROTO_MARKER, 3, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &s), 0);
	assert_string_equal(s, text);

	/* a NOTICE is text like a marker: the receiver makes it safe to print */
	n = vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_NOTICE, 4, "raised to 1408 KiB\t\x1b");
	t_decode(t_buf, n, VT_PROTO_NOTICE, 4, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &s), 0);
	assert_string_equal(s, "raised to 1408 KiB\t\x1b");
	assert_string_equal(vt_proto_type_name(VT_PROTO_NOTICE), "NOTICE");

	assert_int_equal(vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_TRACER, 1, ""), -EINVAL);
	assert_int_equal(vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_CLOCK, 1, "../x"), -EINVAL);
	assert_int_equal(vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_BYE, 1, "x"), -EINVAL);
}

static void test_roundtrip_config(void **state)
{
	struct vt_proto_buffer_size bs = { .size_kb = 8192, .subbuf_kb = 8 }, dbs;
	struct vt_proto_msg msg;
	const char *name;
	int n;

	n = vt_proto_enc_buffer_size(t_buf, sizeof(t_buf), 1, &bs);
	t_decode(t_buf, n, VT_PROTO_BUFFER_SIZE, 1, &msg);
	assert_int_equal(vt_proto_dec_buffer_size(&msg, &dbs), 0);
	assert_int_equal(dbs.size_kb, 8192);
	assert_int_equal(dbs.subbuf_kb, 8);
	/* --subbuf-size alone: the buffer size is left as it is. */
	bs.size_kb = 0;
	n = vt_proto_enc_buffer_size(t_buf, sizeof(t_buf), 1, &bs);
	t_decode(t_buf, n, VT_PROTO_BUFFER_SIZE, 1, &msg);
	assert_int_equal(vt_proto_dec_buffer_size(&msg, &dbs), 0);
	assert_int_equal(dbs.size_kb, 0);
	assert_int_equal(dbs.subbuf_kb, 8);
	bs.subbuf_kb = 0;
	assert_int_equal(vt_proto_enc_buffer_size(t_buf, sizeof(t_buf), 1, &bs), -EINVAL);

	/* FLUSH: 0 (never) or 10 ms to 60 s; anything else is refused both ways. */
	{
		static const uint8_t p9[4] = { 9, 0, 0, 0 }, p60001[4] = { 0x61, 0xea, 0, 0 };
		uint32_t ms = 1;

		n = vt_proto_enc_flush(t_buf, sizeof(t_buf), 3, 100);
		t_decode(t_buf, n, VT_PROTO_FLUSH, 3, &msg);
		assert_int_equal(vt_proto_msg_validate(&msg), 0);
		assert_int_equal(vt_proto_dec_flush(&msg, &ms), 0);
		assert_int_equal(ms, 100);
		n = vt_proto_enc_flush(t_buf, sizeof(t_buf), 4, 0);
		t_decode(t_buf, n, VT_PROTO_FLUSH, 4, &msg);
		assert_int_equal(vt_proto_dec_flush(&msg, &ms), 0);
		assert_int_equal(ms, 0);
		assert_int_equal(vt_proto_enc_flush(t_buf, sizeof(t_buf), 5, 9), -EINVAL);
		assert_int_equal(vt_proto_enc_flush(t_buf, sizeof(t_buf), 5, 60001), -EINVAL);
		t_raw(VT_PROTO_FLUSH, p9, 4, &msg);
		assert_int_equal(vt_proto_dec_flush(&msg, &ms), -EBADMSG);
		t_raw(VT_PROTO_FLUSH, p60001, 4, &msg);
		assert_int_equal(vt_proto_dec_flush(&msg, &ms), -EBADMSG);
		t_raw(VT_PROTO_FLUSH, p9, 2, &msg);
		assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
	}

	/* BUFFER_BUDGET: any u32 KiB, 0 (fixed) included; exactly 4 bytes. */
	{
		static const uint8_t p5[5] = { 0, 0, 1, 0, 0 };
		uint32_t kb = 1;

		n = vt_proto_enc_budget(t_buf, sizeof(t_buf), 6, 65536);
		t_decode(t_buf, n, VT_PROTO_BUFFER_BUDGET, 6, &msg);
		assert_int_equal(vt_proto_msg_validate(&msg), 0);
		assert_int_equal(vt_proto_dec_budget(&msg, &kb), 0);
		assert_int_equal(kb, 65536);
		assert_string_equal(vt_proto_type_name(VT_PROTO_BUFFER_BUDGET), "BUFFER_BUDGET");
		assert_int_equal(vt_proto_type_sender(VT_PROTO_BUFFER_BUDGET), VT_PROTO_FROM_HOST);
		n = vt_proto_enc_budget(t_buf, sizeof(t_buf), 7, 0);
		t_decode(t_buf, n, VT_PROTO_BUFFER_BUDGET, 7, &msg);
		assert_int_equal(vt_proto_dec_budget(&msg, &kb), 0);
		assert_int_equal(kb, 0);
		t_raw(VT_PROTO_BUFFER_BUDGET, p5, 5, &msg);
		assert_int_equal(vt_proto_dec_budget(&msg, &kb), -EBADMSG);
		assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
		t_raw(VT_PROTO_BUFFER_BUDGET, p5, 2, &msg);
		assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
	}

	n = vt_proto_enc_instance(t_buf, sizeof(t_buf), 2, NULL);
	t_decode(t_buf, n, VT_PROTO_INSTANCE, 2, &msg);
	name = "x";
	assert_int_equal(vt_proto_dec_instance(&msg, &name), 0);
	assert_null(name);

	n = vt_proto_enc_instance(t_buf, sizeof(t_buf), 3, "virtio-trace.1");
	t_decode(t_buf, n, VT_PROTO_INSTANCE, 3, &msg);
	assert_int_equal(vt_proto_dec_instance(&msg, &name), 0);
	assert_string_equal(name, "virtio-trace.1");

	assert_int_equal(vt_proto_enc_instance(t_buf, sizeof(t_buf), 3, ".."), -EINVAL);
	assert_int_equal(vt_proto_enc_instance(t_buf, sizeof(t_buf), 3, "a/b"), -EINVAL);
	assert_int_equal(vt_proto_enc_instance(t_buf, sizeof(t_buf), 3, ""), -EINVAL);
}

static void test_roundtrip_stats(void **state)
{
	struct vt_proto_stats st = {
		.cpu = 3, .flags = 0, .pages = 1ull << 40, .bytes = 1ull << 52,
		.splice_fallbacks = 2, .partial_reads = 1,
		.text = "entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\n",
	};
	struct vt_proto_stats d;
	struct vt_proto_msg msg;
	int n;

	n = vt_proto_enc_stats(t_buf, sizeof(t_buf), 11, &st);
	t_decode(t_buf, n, VT_PROTO_STATS, 11, &msg);
	assert_int_equal(vt_proto_dec_stats(&msg, &d), 0);
	assert_int_equal(d.cpu, 3);
	assert_true(d.pages == st.pages && d.bytes == st.bytes);
	assert_true(d.splice_fallbacks == 2 && d.partial_reads == 1);
	assert_string_equal(d.text, st.text);

	st.cpu = VT_PROTO_CPU_ALL;
	st.flags = VT_PROTO_STATS_LAST;
	st.text = NULL;
	n = vt_proto_enc_stats(t_buf, sizeof(t_buf), 12, &st);
	t_decode(t_buf, n, VT_PROTO_STATS, 12, &msg);
	assert_int_equal(vt_proto_dec_stats(&msg, &d), 0);
	assert_int_equal(d.cpu, VT_PROTO_CPU_ALL);
	assert_int_equal(d.flags, VT_PROTO_STATS_LAST);
	assert_string_equal(d.text, "");

	st.flags = 2;
	assert_int_equal(vt_proto_enc_stats(t_buf, sizeof(t_buf), 12, &st), -EINVAL);
}

static void test_roundtrip_meta(void **state)
{
	static uint8_t data[VT_PROTO_META_CHUNK_MAX];
	struct vt_proto_meta_chunk c = { .total = 3 * sizeof(data), .offset = sizeof(data),
					 .data = data, .len = sizeof(data) };
	struct vt_proto_meta_chunk d;
	struct vt_proto_msg msg;
	uint64_t max;
	size_t i;
	int n;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	n = vt_proto_enc_meta_req(t_buf, sizeof(t_buf), 1, 1u << 30);
	t_decode(t_buf, n, VT_PROTO_META_REQ, 1, &msg);
	assert_int_equal(vt_proto_dec_meta_req(&msg, &max), 0);
	assert_true(max == 1u << 30);
	assert_int_equal(msg.len, 8);
	{
		uint32_t flags = 7;

		/* No flags: the 8-byte payload every agent reads, flags 0. */
		assert_int_equal(vt_proto_dec_meta_req_flags(&msg, &max, &flags), 0);
		assert_int_equal(flags, 0);
		n = vt_proto_enc_meta_req_flags(t_buf, sizeof(t_buf), 1, 4096,
						VT_PROTO_META_REQ_NO_KALLSYMS);
		t_decode(t_buf, n, VT_PROTO_META_REQ, 1, &msg);
		assert_int_equal(msg.len, 12);
		assert_int_equal(vt_proto_dec_meta_req_flags(&msg, &max, &flags), 0);
		assert_true(max == 4096 && flags == VT_PROTO_META_REQ_NO_KALLSYMS);
		/* An unknown flag, or a payload of another length, is malformed. */
		n = vt_proto_enc_meta_req_flags(t_buf, sizeof(t_buf), 1, 4096, 1u << 5);
		assert_int_equal(vt_proto_msg_decode(t_buf, (size_t)n, &msg), n);
		assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
		assert_int_equal(vt_proto_dec_meta_req_flags(&msg, &max, &flags), -EBADMSG);
		msg.len = 10;
		assert_int_equal(vt_proto_dec_meta_req_flags(&msg, &max, &flags), -EBADMSG);
		/* Flags of 0 are never sent: a second encoding of the same request is malformed. */
		{
			uint8_t p[12] = { 0 };

			p[1] = 0x10;
			t_raw(VT_PROTO_META_REQ, p, sizeof(p), &msg);
			assert_int_equal(vt_proto_dec_meta_req_flags(&msg, &max, &flags), -EBADMSG);
			assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
		}
	}
	{
		/* KALLSYMS_UNLESS_KEY: the key follows the flags, only with its flag, never 0. */
		const uint32_t unless = VT_PROTO_META_REQ_KALLSYMS_UNLESS_KEY | VT_PROTO_META_REQ_OPEN;
		uint8_t p[20] = { 0 };
		uint32_t flags = 0;
		uint64_t key = 0;

		n = vt_proto_enc_meta_req_key(t_buf, sizeof(t_buf), 3, 4096, unless,
					      0x0123456789abcdefull);
		t_decode(t_buf, n, VT_PROTO_META_REQ, 3, &msg);
		assert_int_equal(msg.len, 20);
		assert_int_equal(vt_proto_dec_meta_req_key(&msg, &max, &flags, &key), 0);
		assert_true(max == 4096 && flags == unless && key == 0x0123456789abcdefull);
		/* Read without the key, the flags are still all there. */
		assert_int_equal(vt_proto_dec_meta_req_flags(&msg, &max, &flags), 0);
		assert_true(flags == unless);
		/* No flag, no key: 0. */
		n = vt_proto_enc_meta_req_flags(t_buf, sizeof(t_buf), 4, 4096, VT_PROTO_META_REQ_OPEN);
		t_decode(t_buf, n, VT_PROTO_META_REQ, 4, &msg);
		key = 9;
		assert_int_equal(vt_proto_dec_meta_req_key(&msg, &max, &flags, &key), 0);
		assert_true(key == 0);
		/* The encoder takes the flag and a key together only. */
		assert_int_equal(vt_proto_enc_meta_req_key(t_buf, sizeof(t_buf), 5, 4096, unless, 0), -EINVAL);
		assert_int_equal(vt_proto_enc_meta_req_key(t_buf, sizeof(t_buf), 5, 4096,
							   VT_PROTO_META_REQ_OPEN, 7), -EINVAL);
		assert_int_equal(vt_proto_enc_meta_req_flags(t_buf, sizeof(t_buf), 5, 4096, unless),
				 -EINVAL);
		/* The decoder: the flag without a key, a key without the flag, a key of 0. */
		p[1] = 0x10;
		vt_put_le32(p + 8, unless);
		t_raw(VT_PROTO_META_REQ, p, 12, &msg);
		assert_int_equal(vt_proto_dec_meta_req_key(&msg, &max, &flags, &key), -EBADMSG);
		vt_put_le64(p + 12, 5);
		vt_put_le32(p + 8, VT_PROTO_META_REQ_OPEN);
		t_raw(VT_PROTO_META_REQ, p, 20, &msg);
		assert_int_equal(vt_proto_dec_meta_req_key(&msg, &max, &flags, &key), -EBADMSG);
		assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
		vt_put_le32(p + 8, unless);
		t_raw(VT_PROTO_META_REQ, p, 20, &msg);
		assert_int_equal(vt_proto_dec_meta_req_key(&msg, &max, &flags, &key), 0);
		vt_put_le64(p + 12, 0);
		t_raw(VT_PROTO_META_REQ, p, 20, &msg);
		assert_int_equal(vt_proto_dec_meta_req_key(&msg, &max, &flags, &key), -EBADMSG);
		t_raw(VT_PROTO_META_REQ, p, 16, &msg);
		assert_int_equal(vt_proto_dec_meta_req_key(&msg, &max, &flags, &key), -EBADMSG);
	}

	/* the largest chunk fills the largest payload exactly */
	n = vt_proto_enc_meta(t_buf, sizeof(t_buf), 2, &c);
	assert_int_equal(n, VT_PROTO_FRAME_MAX);
	t_decode(t_buf, n, VT_PROTO_META, 2, &msg);
	assert_int_equal(vt_proto_dec_meta(&msg, &d), 0);
	assert_true(d.total == c.total && d.offset == c.offset);
	assert_int_equal(d.len, sizeof(data));
	assert_memory_equal(d.data, data, sizeof(data));

	/* an empty bundle is one empty chunk */
	c.total = c.offset = 0;
	c.len = 0;
	n = vt_proto_enc_meta(t_buf, sizeof(t_buf), 3, &c);
	t_decode(t_buf, n, VT_PROTO_META, 3, &msg);
	assert_int_equal(vt_proto_dec_meta(&msg, &d), 0);
	assert_int_equal(d.len, 0);

	c.total = 10;
	c.offset = 5;
	c.len = 6;
	assert_int_equal(vt_proto_enc_meta(t_buf, sizeof(t_buf), 3, &c), -EINVAL);
	c.total = VT_PROTO_META_MAX_TOTAL + 1;
	c.offset = 0;
	assert_int_equal(vt_proto_enc_meta(t_buf, sizeof(t_buf), 3, &c), -EINVAL);
}

static void test_roundtrip_sync(void **state)
{
	struct vt_proto_sync s = { .cpu = 1, .probe = 300 }, d;
	struct vt_proto_msg msg;
	int n;

	n = vt_proto_enc_sync(t_buf, sizeof(t_buf), VT_PROTO_SYNC_BEGIN, 1, &s);
	t_decode(t_buf, n, VT_PROTO_SYNC_BEGIN, 1, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &d), 0);
	assert_int_equal(d.cpu, 1);
	assert_int_equal(d.probe, 300);

	s.probe = 17;
	n = vt_proto_enc_sync(t_buf, sizeof(t_buf), VT_PROTO_SYNC_PROBE, 2, &s);
	t_decode(t_buf, n, VT_PROTO_SYNC_PROBE, 2, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &d), 0);
	assert_int_equal(d.probe, 17);
	assert_true(d.tsc == 0);

	s.tsc = 0xfedcba9876543210ull;
	s.ran_on = 1;
	n = vt_proto_enc_sync(t_buf, sizeof(t_buf), VT_PROTO_SYNC_REPLY, 3, &s);
	t_decode(t_buf, n, VT_PROTO_SYNC_REPLY, 3, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &d), 0);
	assert_true(d.tsc == s.tsc);
	assert_int_equal(d.ran_on, 1);
	assert_int_equal(d.probe, 17);

	n = vt_proto_enc_sync(t_buf, sizeof(t_buf), VT_PROTO_SYNC_END, 4, &s);
	t_decode(t_buf, n, VT_PROTO_SYNC_END, 4, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &d), 0);
	assert_int_equal(d.cpu, 1);
	assert_int_equal(d.probe, 0);

	s.cpu = 4096;
	assert_int_equal(vt_proto_enc_sync(t_buf, sizeof(t_buf), VT_PROTO_SYNC_PROBE, 1, &s), -EINVAL);
	s.cpu = 0;
	s.probe = 0;
	assert_int_equal(vt_proto_enc_sync(t_buf, sizeof(t_buf), VT_PROTO_SYNC_BEGIN, 1, &s), -EINVAL);
	assert_int_equal(vt_proto_enc_sync(t_buf, sizeof(t_buf), VT_PROTO_OK, 1, &s), -EINVAL);
}

static void test_encoder_bounds(void **state)
{
	struct vt_proto_event ev[VT_PROTO_MAX_EVENTS + 1];
	char filter[VT_PROTO_MAX_FILTER];
	size_t i;

	/* too small a buffer */
	assert_int_equal(vt_proto_enc_empty(t_buf, 15, VT_PROTO_BYE, 1), -ENOBUFS);
	assert_int_equal(vt_proto_enc_string(t_buf, 20, VT_PROTO_MARKER, 1, "hello"), -ENOBUFS);
	assert_int_equal(vt_proto_enc_empty(NULL, 0, VT_PROTO_BYE, 1), -ENOBUFS);
	/* payload above the bound */
	assert_int_equal(vt_proto_encode(t_big, sizeof(t_big), VT_PROTO_MARKER, 1, t_big,
					 VT_PROTO_MAX_PAYLOAD + 1), -EMSGSIZE);
	/* entries that do not fit one payload, and too many entries */
	memset(filter, 'x', sizeof(filter) - 1);
	filter[sizeof(filter) - 1] = '\0';
	for (i = 0; i < VT_PROTO_MAX_EVENTS + 1; i++) {
		ev[i].system = "sched";
		ev[i].event = "*";
		ev[i].filter = filter;
	}
	assert_int_equal(vt_proto_enc_events(t_big, sizeof(t_big), 1, 0, ev, 20), -EMSGSIZE);
	assert_int_equal(vt_proto_enc_events(t_big, sizeof(t_big), 1, 0, ev,
					     VT_PROTO_MAX_EVENTS + 1), -EINVAL);
	assert_int_equal(vt_proto_enc_events(t_big, sizeof(t_big), 1, 4, ev, 1), -EINVAL);
	/* a filter one byte too long */
	filter[sizeof(filter) - 1] = 'x';
	assert_int_equal(vt_proto_enc_events(t_big, sizeof(t_big), 1, 0, ev, 1), -EINVAL);
	filter[sizeof(filter) - 1] = '\0';
	filter[0] = '\t';
	assert_int_equal(vt_proto_enc_events(t_big, sizeof(t_big), 1, 0, ev, 1), -EINVAL);
}

/* ------------------------------------------------------------ malformed frames */

static void test_bad_header(void **state)
{
	struct vt_proto_msg msg;
	int n = vt_proto_enc_empty(t_buf, sizeof(t_buf), VT_PROTO_STOP, 9);

	assert_int_equal(vt_proto_hdr_decode(t_buf, 15, &msg), -EBADMSG);

	t_buf[3] = 'Q';
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), -EBADMSG);
	t_buf[3] = 'P';

	t_buf[4] = 2;
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), -EPROTO);
	t_buf[4] = VT_PROTO_FRAME_VERSION;

	vt_put_le32(t_buf + 12, VT_PROTO_MAX_PAYLOAD + 1);
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), -EMSGSIZE);
	vt_put_le32(t_buf + 12, 0xffffffffu);
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), -EMSGSIZE);

	/* truncated payload */
	vt_put_le32(t_buf + 12, 4);
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), 0);
	assert_int_equal(vt_proto_msg_decode(t_buf, (size_t)n + 3, &msg), -EBADMSG);
	vt_put_le32(t_buf + 12, 0);

	/* unknown type and unknown flags: rejected, but described for an ERROR reply */
	vt_put_le16(t_buf + 6, 999);
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), -EPROTO);
	assert_int_equal(msg.type, 999);
	assert_int_equal(msg.seq, 9);
	vt_put_le16(t_buf + 6, 0);
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), -EPROTO);
	vt_put_le16(t_buf + 6, VT_PROTO_STOP);
	t_buf[5] = 0x80;
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), -EPROTO);
	t_buf[5] = 0;
	assert_int_equal(vt_proto_hdr_decode(t_buf, (size_t)n, &msg), 0);

	/* a message of an unknown type never validates */
	msg.type = 999;
	assert_int_equal(vt_proto_msg_validate(&msg), -EPROTO);
}

static void test_bad_payload_lengths(void **state)
{
	uint8_t p[64] = { 0 };
	struct vt_proto_msg msg;
	struct vt_proto_sync s;

	/* empty-payload types with a payload */
	t_raw(VT_PROTO_START, p, 1, &msg);
	assert_int_equal(vt_proto_dec_empty(&msg), -EBADMSG);
	/* fixed payloads one byte short and one byte long */
	t_raw(VT_PROTO_OK, p, 3, &msg);
	assert_int_equal(vt_proto_dec_ack(&msg, NULL), -EBADMSG);
	t_raw(VT_PROTO_OK, p, 5, &msg);
	assert_int_equal(vt_proto_dec_ack(&msg, NULL), -EBADMSG);
	vt_put_le32(p, 1);
	t_raw(VT_PROTO_SYNC_REPLY, p, 23, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &s), -EBADMSG);
	t_raw(VT_PROTO_SYNC_REPLY, p, 25, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &s), -EBADMSG);
	t_raw(VT_PROTO_SYNC_REPLY, p, 24, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &s), 0);
	/* reserved field set */
	p[20] = 1;
	t_raw(VT_PROTO_SYNC_REPLY, p, 24, &msg);
	assert_int_equal(vt_proto_dec_sync(&msg, &s), -EBADMSG);
	memset(p, 0, sizeof(p));
	t_raw(VT_PROTO_HELLO, p, 23, &msg);
	assert_int_equal(vt_proto_dec_hello(&msg, NULL), -EBADMSG);
	t_raw(VT_PROTO_STATS, p, 39, &msg);
	assert_int_equal(vt_proto_dec_stats(&msg, NULL), -EBADMSG);
	t_raw(VT_PROTO_BUFFER_SIZE, p, 8, &msg);	/* size 0 */
	assert_int_equal(vt_proto_dec_buffer_size(&msg, NULL), -EBADMSG);
	t_raw(VT_PROTO_META, p, 15, &msg);
	assert_int_equal(vt_proto_dec_meta(&msg, NULL), -EBADMSG);
	/* decoders refuse messages of another type */
	assert_int_equal(vt_proto_dec_stats(&msg, NULL), -EINVAL);
	assert_int_equal(vt_proto_dec_string(&msg, NULL), -EINVAL);
	assert_int_equal(vt_proto_dec_empty(&msg), -EINVAL);
}

static void test_bad_strings(void **state)
{
	uint8_t p[VT_PROTO_MAX_TEXT + 64];
	char s[VT_PROTO_MAX_TEXT + 2];
	struct vt_proto_msg msg;
	const char *out;
	size_t n;

	/* no terminator */
	n = t_put_str(p, "mmiotrace", 9);
	t_raw(VT_PROTO_TRACER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	/* NUL inside */
	n = t_put_str(p, "mmio\0trace", 11);
	t_raw(VT_PROTO_TRACER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	/* zero length (not even the NUL) */
	vt_put_le16(p, 0);
	t_raw(VT_PROTO_MARKER, p, 2, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	/* length running past the payload */
	n = t_put_str(p, "nop", 4);
	vt_put_le16(p, 5);
	t_raw(VT_PROTO_TRACER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	/* trailing byte after the string */
	n = t_put_str(p, "nop", 4);
	p[n++] = 0;
	t_raw(VT_PROTO_TRACER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	/* names that are paths or format strings */
	n = t_put_str(p, "../../etc", 10);
	t_raw(VT_PROTO_CLOCK, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	n = t_put_str(p, "%s%n", 5);
	t_raw(VT_PROTO_TRACER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	/* too long: a name of 256 characters, a marker of 4096 */
	memset(s, 'a', sizeof(s));
	s[VT_PROTO_MAX_NAME] = '\0';
	n = t_put_str(p, s, VT_PROTO_MAX_NAME + 1);
	t_raw(VT_PROTO_TRACER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	s[VT_PROTO_MAX_NAME - 1] = '\0';
	n = t_put_str(p, s, VT_PROTO_MAX_NAME);
	t_raw(VT_PROTO_TRACER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), 0);
	memset(s, 'a', sizeof(s));
	s[VT_PROTO_MAX_TEXT] = '\0';
	n = t_put_str(p, s, VT_PROTO_MAX_TEXT + 1);
	t_raw(VT_PROTO_MARKER, p, n, &msg);
	assert_int_equal(vt_proto_dec_string(&msg, &out), -EBADMSG);
	/* instance: a path component, a top-level instance with a name, an unknown kind */
	vt_put_le32(p, VT_PROTO_INSTANCE_PRIVATE);
	n = 4 + t_put_str(p + 4, "..", 3);
	t_raw(VT_PROTO_INSTANCE, p, n, &msg);
	assert_int_equal(vt_proto_dec_instance(&msg, &out), -EBADMSG);
	n = 4 + t_put_str(p + 4, "a/b", 4);
	t_raw(VT_PROTO_INSTANCE, p, n, &msg);
	assert_int_equal(vt_proto_dec_instance(&msg, &out), -EBADMSG);
	vt_put_le32(p, VT_PROTO_INSTANCE_TOP);
	n = 4 + t_put_str(p + 4, "x", 2);
	t_raw(VT_PROTO_INSTANCE, p, n, &msg);
	assert_int_equal(vt_proto_dec_instance(&msg, &out), -EBADMSG);
	vt_put_le32(p, 2);
	n = 4 + t_put_str(p + 4, "", 1);
	t_raw(VT_PROTO_INSTANCE, p, n, &msg);
	assert_int_equal(vt_proto_dec_instance(&msg, &out), -EBADMSG);
	/* ERROR with errno 0 */
	memset(p, 0, 8);
	n = 8 + t_put_str(p + 8, "x", 2);
	t_raw(VT_PROTO_ERROR, p, n, &msg);
	assert_int_equal(vt_proto_dec_error(&msg, NULL), -EBADMSG);
	vt_put_le32(p + 4, EIO);
	t_raw(VT_PROTO_ERROR, p, n, &msg);
	assert_int_equal(vt_proto_dec_error(&msg, NULL), 0);
}

static void test_bad_counts(void **state)
{
	uint8_t p[256];
	struct vt_proto_event ev[4];
	struct vt_proto_msg msg;
	size_t n;

	/* count claims more entries than the payload holds */
	vt_put_le32(p, 0);
	vt_put_le32(p + 4, 2);
	n = 8;
	n += t_put_str(p + n, "sched", 6);
	n += t_put_str(p + n, "*", 2);
	n += t_put_str(p + n, "", 1);
	t_raw(VT_PROTO_EVENTS, p, n, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, NULL, ev, 4), -EBADMSG);
	/* count of 0xffffffff, and above the bound */
	vt_put_le32(p + 4, 0xffffffffu);
	t_raw(VT_PROTO_EVENTS, p, n, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, NULL, ev, 4), -EBADMSG);
	vt_put_le32(p + 4, VT_PROTO_MAX_EVENTS + 1);
	t_raw(VT_PROTO_EVENTS, p, n, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, NULL, NULL, 0), -EBADMSG);
	/* the correct count works; an extra byte does not */
	vt_put_le32(p + 4, 1);
	t_raw(VT_PROTO_EVENTS, p, n, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, NULL, ev, 4), 1);
	p[n] = 0;
	t_raw(VT_PROTO_EVENTS, p, n + 1, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, NULL, ev, 4), -EBADMSG);
	/* unknown flags */
	vt_put_le32(p, 2);
	t_raw(VT_PROTO_EVENTS, p, n, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, NULL, ev, 4), -EBADMSG);
	/* an empty system name */
	vt_put_le32(p, 0);
	n = 8;
	n += t_put_str(p + n, "", 1);
	n += t_put_str(p + n, "*", 2);
	n += t_put_str(p + n, "", 1);
	t_raw(VT_PROTO_EVENTS, p, n, &msg);
	assert_int_equal(vt_proto_dec_events(&msg, NULL, ev, 4), -EBADMSG);

	/* META chunks that overrun their total, and totals above the bound */
	vt_put_le64(p, 10);
	vt_put_le64(p + 8, 8);
	memset(p + 16, 'm', 3);
	t_raw(VT_PROTO_META, p, 19, &msg);
	assert_int_equal(vt_proto_dec_meta(&msg, NULL), -EBADMSG);
	t_raw(VT_PROTO_META, p, 18, &msg);
	assert_int_equal(vt_proto_dec_meta(&msg, NULL), 0);
	vt_put_le64(p + 8, 0xfffffffffffffffeull);
	t_raw(VT_PROTO_META, p, 18, &msg);
	assert_int_equal(vt_proto_dec_meta(&msg, NULL), -EBADMSG);
	vt_put_le64(p, VT_PROTO_META_MAX_TOTAL + 1);
	vt_put_le64(p + 8, 0);
	t_raw(VT_PROTO_META, p, 18, &msg);
	assert_int_equal(vt_proto_dec_meta(&msg, NULL), -EBADMSG);
	vt_put_le64(p, 10);
	t_raw(VT_PROTO_META, p, 16, &msg);	/* empty chunk of a non-empty blob */
	assert_int_equal(vt_proto_dec_meta(&msg, NULL), -EBADMSG);

	/* HELLO with too many CPUs or revisions out of order */
	memset(p, 0, 24);
	vt_put_le16(p, 2);
	vt_put_le16(p + 2, 1);
	n = 24 + t_put_str(p + 24, "", 1);
	n += t_put_str(p + n, "", 1);
	t_raw(VT_PROTO_HELLO, p, n, &msg);
	assert_int_equal(vt_proto_dec_hello(&msg, NULL), -EBADMSG);
	vt_put_le16(p, 1);
	vt_put_le32(p + 4, 4097);
	t_raw(VT_PROTO_HELLO, p, n, &msg);
	assert_int_equal(vt_proto_dec_hello(&msg, NULL), -EBADMSG);
	vt_put_le32(p + 4, 4096);
	t_raw(VT_PROTO_HELLO, p, n, &msg);
	assert_int_equal(vt_proto_dec_hello(&msg, NULL), 0);
}

/* ------------------------------------------------------------ stream parser */

struct t_stream {
	uint8_t *data;
	size_t len;
};

/* HELLO, EVENTS, a 64 KiB META chunk, MARKER, SYNC_PROBE, BYE, back to back */
static void t_make_stream(struct t_stream *st)
{
	static uint8_t data[VT_PROTO_META_CHUNK_MAX];
	const struct vt_proto_event ev[] = { { "iommu", "map", "size > 4096" } };
	const struct vt_proto_hello h = { .rev_min = 1, .rev_max = 1, .software = "t" };
	const struct vt_proto_meta_chunk c = { .total = sizeof(data), .data = data,
					       .len = sizeof(data) };
	const struct vt_proto_sync s = { .cpu = 2, .probe = 5 };
	size_t off = 0;
	int n;

	memset(data, 0x56, sizeof(data));	/* 'V': a resync trap inside a payload */
	st->data = t_big;
	n = vt_proto_enc_hello(t_big + off, sizeof(t_big) - off, VT_PROTO_HELLO, 1, &h);
	assert_true(n > 0);
	off += (size_t)n;
	n = vt_proto_enc_events(t_big + off, sizeof(t_big) - off, 2, 0, ev, 1);
	assert_true(n > 0);
	off += (size_t)n;
	n = vt_proto_enc_meta(t_big + off, sizeof(t_big) - off, 3, &c);
	assert_true(n > 0);
	off += (size_t)n;
	n = vt_proto_enc_string(t_big + off, sizeof(t_big) - off, VT_PROTO_MARKER, 4, "hi");
	assert_true(n > 0);
	off += (size_t)n;
	n = vt_proto_enc_sync(t_big + off, sizeof(t_big) - off, VT_PROTO_SYNC_PROBE, 5, &s);
	assert_true(n > 0);
	off += (size_t)n;
	n = vt_proto_enc_empty(t_big + off, sizeof(t_big) - off, VT_PROTO_BYE, 6);
	assert_true(n > 0);
	off += (size_t)n;
	st->len = off;
}

static const uint16_t t_stream_types[] = {
	VT_PROTO_HELLO, VT_PROTO_EVENTS, VT_PROTO_META, VT_PROTO_MARKER,
	VT_PROTO_SYNC_PROBE, VT_PROTO_BYE,
};

/* Feed @st in slices of @step bytes; check every message comes out intact. */
static void t_feed_stream(const struct t_stream *st, size_t step)
{
	struct vt_proto_parser *p = vt_proto_parser_new();
	struct vt_proto_msg msg;
	size_t off = 0, got = 0;
	int ret;

	assert_non_null(p);
	while (off < st->len) {
		size_t len = st->len - off < step ? st->len - off : step;
		size_t taken = vt_proto_parser_feed(p, st->data + off, len);

		/* a full buffer always holds a message, so feed() must take something */
		assert_true(taken > 0);
		off += taken;
		while ((ret = vt_proto_parser_next(p, &msg)) == 1) {
			assert_true(got < 6);
			assert_int_equal(msg.type, t_stream_types[got]);
			assert_int_equal(msg.seq, got + 1);
			assert_int_equal(vt_proto_msg_validate(&msg), 0);
			got++;
		}
		assert_int_equal(ret, 0);
	}
	assert_int_equal(got, 6);
	assert_int_equal(vt_proto_parser_skipped(p), 0);
	vt_proto_parser_free(p);
}

static void test_parser_slicing(void **state)
{
	struct t_stream st;

	t_make_stream(&st);
	t_feed_stream(&st, 1);			/* byte at a time */
	t_feed_stream(&st, 7);
	t_feed_stream(&st, 4096);
	t_feed_stream(&st, st.len);		/* all coalesced: feed() takes what fits */
}

static void test_parser_garbage(void **state)
{
	static const char junk[] = "VTCx\x01garbage VTC\nVV";
	struct vt_proto_parser *p = vt_proto_parser_new();
	struct vt_proto_msg msg;
	uint8_t in[128];
	size_t len, i;
	int n, ret, errors = 0, msgs = 0;

	assert_non_null(p);
	memcpy(in, junk, sizeof(junk) - 1);
	len = sizeof(junk) - 1;
	n = vt_proto_enc_empty(in + len, sizeof(in) - len, VT_PROTO_START, 42);
	len += (size_t)n;

	/* all at once: one error for the whole run of garbage, then the frame */
	assert_int_equal(vt_proto_parser_feed(p, in, len), len);
	assert_int_equal(vt_proto_parser_next(p, &msg), -EBADMSG);
	assert_int_equal(vt_proto_parser_next(p, &msg), 1);
	assert_int_equal(msg.type, VT_PROTO_START);
	assert_int_equal(msg.seq, 42);
	assert_int_equal(vt_proto_parser_next(p, &msg), 0);
	assert_int_equal(vt_proto_parser_skipped(p), sizeof(junk) - 1);

	/* byte at a time: the same result */
	vt_proto_parser_free(p);
	p = vt_proto_parser_new();
	for (i = 0; i < len; i++) {
		assert_int_equal(vt_proto_parser_feed(p, in + i, 1), 1);
		while ((ret = vt_proto_parser_next(p, &msg)) != 0) {
			if (ret == 1) {
				assert_int_equal(msg.seq, 42);
				msgs++;
			} else {
				assert_int_equal(ret, -EBADMSG);
				errors++;
			}
		}
	}
	assert_int_equal(errors, 1);
	assert_int_equal(msgs, 1);
	vt_proto_parser_free(p);
}

static void test_parser_bad_frames(void **state)
{
	struct vt_proto_parser *p = vt_proto_parser_new();
	struct vt_proto_msg msg;
	uint8_t in[256];
	size_t len = 0;
	int n;

	assert_non_null(p);
	/* an oversized length: resync past it */
	n = vt_proto_enc_empty(in, sizeof(in), VT_PROTO_STOP, 1);
	vt_put_le32(in + 12, VT_PROTO_MAX_PAYLOAD + 1);
	len += (size_t)n;
	/* a frame of an unknown type with a payload: skipped whole */
	n = vt_proto_encode(in + len, sizeof(in) - len, 77, 2, "VTCPVTCP", 8);
	len += (size_t)n;
	/* another framing version */
	n = vt_proto_enc_empty(in + len, sizeof(in) - len, VT_PROTO_STOP, 3);
	in[len + 4] = 9;
	len += (size_t)n;
	n = vt_proto_enc_ack(in + len, sizeof(in) - len, VT_PROTO_OK, 4, 3);
	len += (size_t)n;

	assert_int_equal(vt_proto_parser_feed(p, in, len), len);
	assert_int_equal(vt_proto_parser_next(p, &msg), -EMSGSIZE);
	assert_int_equal(vt_proto_parser_next(p, &msg), -EPROTO);
	assert_int_equal(msg.type, 77);
	assert_int_equal(msg.seq, 2);
	assert_int_equal(vt_proto_parser_next(p, &msg), -EPROTO);
	assert_int_equal(vt_proto_parser_next(p, &msg), 1);
	assert_int_equal(msg.type, VT_PROTO_OK);
	assert_int_equal(msg.seq, 4);
	assert_int_equal(vt_proto_parser_next(p, &msg), 0);
	assert_int_equal(vt_proto_parser_buffered(p), 0);
	vt_proto_parser_free(p);
}

static void test_parser_legacy(void **state)
{
	static const char in[] = "1\n0\n1\nhello\n0\n1x\n1\n";
	static const struct { int ret; uint16_t type; } want[] = {
		{ 1, VT_PROTO_START }, { 1, VT_PROTO_STOP }, { 1, VT_PROTO_START },
		{ -EBADMSG, 0 }, { 1, VT_PROTO_STOP }, { -EBADMSG, 0 }, { 1, VT_PROTO_START },
	};
	struct vt_proto_parser *p = vt_proto_parser_new();
	struct vt_proto_msg msg;
	size_t i, w = 0;
	int ret;

	assert_non_null(p);
	for (i = 0; i < sizeof(in) - 1; i++) {
		assert_int_equal(vt_proto_parser_feed(p, in + i, 1), 1);
		while ((ret = vt_proto_parser_next(p, &msg)) != 0) {
			assert_true(w < sizeof(want) / sizeof(want[0]));
			assert_int_equal(ret, want[w].ret);
			if (ret == 1) {
				assert_true(msg.legacy);
				assert_int_equal(msg.seq, 0);
				assert_int_equal(msg.len, 0);
				assert_int_equal(msg.type, want[w].type);
				assert_int_equal(vt_proto_msg_validate(&msg), 0);
			}
			w++;
		}
	}
	assert_int_equal(w, sizeof(want) / sizeof(want[0]));
	/* a lone "1" waits for its newline */
	assert_int_equal(vt_proto_parser_feed(p, "1", 1), 1);
	assert_int_equal(vt_proto_parser_next(p, &msg), 0);
	assert_int_equal(vt_proto_parser_feed(p, "\n", 1), 1);
	assert_int_equal(vt_proto_parser_next(p, &msg), 1);
	assert_true(msg.legacy && msg.type == VT_PROTO_START);

	/* a legacy line right after a frame, and a frame right after a legacy line */
	{
		uint8_t b[64];
		size_t len;

		len = (size_t)vt_proto_enc_empty(b, sizeof(b), VT_PROTO_STATS_REQ, 5);
		memcpy(b + len, "0\n", 2);
		len += 2;
		len += (size_t)vt_proto_enc_empty(b + len, sizeof(b) - len, VT_PROTO_BYE, 6);
		assert_int_equal(vt_proto_parser_feed(p, b, len), len);
		assert_int_equal(vt_proto_parser_next(p, &msg), 1);
		assert_int_equal(msg.type, VT_PROTO_STATS_REQ);
		assert_int_equal(vt_proto_parser_next(p, &msg), 1);
		assert_true(msg.legacy && msg.type == VT_PROTO_STOP);
		assert_int_equal(vt_proto_parser_next(p, &msg), 1);
		assert_int_equal(msg.type, VT_PROTO_BYE);
		assert_int_equal(vt_proto_parser_next(p, &msg), 0);
	}
	vt_proto_parser_free(p);
}

static void test_parser_bound(void **state)
{
	struct vt_proto_parser *p = vt_proto_parser_new();
	struct vt_proto_msg msg;
	size_t taken, total = 0;
	int ret, errors = 0;

	assert_non_null(p);
	/* a flood of garbage never buffers more than one largest frame */
	memset(t_big, 'x', sizeof(t_big));
	while (total < sizeof(t_big)) {
		taken = vt_proto_parser_feed(p, t_big + total, sizeof(t_big) - total);
		assert_true(vt_proto_parser_buffered(p) <= VT_PROTO_FRAME_MAX);
		total += taken;
		while ((ret = vt_proto_parser_next(p, &msg)) != 0) {
			assert_int_equal(ret, -EBADMSG);
			errors++;
		}
	}
	assert_int_equal(errors, 1);
	assert_int_equal(vt_proto_parser_buffered(p), 0);
	assert_int_equal(vt_proto_parser_skipped(p), sizeof(t_big));
	/* a header that promises a full payload then stalls holds exactly one frame */
	vt_proto_encode(t_big, sizeof(t_big), VT_PROTO_MARKER, 1, t_big + VT_PROTO_FRAME_MAX,
			VT_PROTO_MAX_PAYLOAD);
	assert_int_equal(vt_proto_parser_feed(p, t_big, VT_PROTO_FRAME_MAX - 1),
			 VT_PROTO_FRAME_MAX - 1);
	assert_int_equal(vt_proto_parser_next(p, &msg), 0);
	assert_int_equal(vt_proto_parser_feed(p, t_big + VT_PROTO_FRAME_MAX - 1, 2), 1);
	assert_int_equal(vt_proto_parser_next(p, &msg), 1);
	assert_int_equal(msg.len, VT_PROTO_MAX_PAYLOAD);
	/* the payload is 'x's without a NUL: a marker that fails validation */
	assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
	vt_proto_parser_free(p);
}

/* ------------------------------------------------------------ META reassembly */

static void test_meta_rx(void **state)
{
	static uint8_t blob[3 * VT_PROTO_META_CHUNK_MAX + 100];
	struct vt_proto_meta_chunk c = { .total = sizeof(blob) };
	struct vt_proto_meta_rx rx;
	struct vt_proto_msg msg;
	uint64_t off = 0;
	size_t i;
	int n, ret = 0;

	for (i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i ^ (i >> 8));
	vt_proto_meta_rx_init(&rx, VT_PROTO_META_MAX_TOTAL);
	while (off < sizeof(blob)) {
		c.offset = off;
		c.len = sizeof(blob) - off < VT_PROTO_META_CHUNK_MAX ?
			(uint32_t)(sizeof(blob) - off) : VT_PROTO_META_CHUNK_MAX;
		c.data = blob + off;
		n = vt_proto_enc_meta(t_buf, sizeof(t_buf), 1, &c);
		assert_true(n > 0);
		assert_int_equal(vt_proto_msg_decode(t_buf, (size_t)n, &msg), n);
		{
			struct vt_proto_meta_chunk d;

			assert_int_equal(vt_proto_dec_meta(&msg, &d), 0);
			ret = vt_proto_meta_rx_add(&rx, &d);
		}
		off += c.len;
		assert_int_equal(ret, off == sizeof(blob) ? 1 : 0);
	}
	assert_true(rx.len == sizeof(blob));
	assert_memory_equal(rx.data, blob, sizeof(blob));
	/* nothing after the end */
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	vt_proto_meta_rx_release(&rx);

	/* too large a total is refused on the first chunk, before any allocation */
	vt_proto_meta_rx_init(&rx, 1000);
	c.offset = 0;
	c.len = 10;
	c.data = blob;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EFBIG);
	assert_null(rx.data);
	vt_proto_meta_rx_release(&rx);

	/* out of order, and a changed total */
	vt_proto_meta_rx_init(&rx, VT_PROTO_META_MAX_TOTAL);
	c.offset = 10;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	c.offset = 0;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), 0);
	c.offset = 30;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	c.offset = 10;
	c.total++;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	vt_proto_meta_rx_release(&rx);

	/* an empty blob completes at once */
	c.total = c.offset = 0;
	c.len = 0;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), 1);
	assert_true(rx.len == 0);
	vt_proto_meta_rx_release(&rx);
}

/*
 * An open blob (META_REQ_OPEN): chunks of total VT_PROTO_META_OPEN, then one
 * that announces where it ends. Held to the receiver's limit as it grows.
 */
static void test_meta_rx_open(void **state)
{
	static uint8_t blob[3 * VT_PROTO_META_CHUNK_MAX + 100];
	struct vt_proto_meta_chunk c = { .total = VT_PROTO_META_OPEN, .data = blob };
	struct vt_proto_meta_chunk d;
	struct vt_proto_meta_rx rx;
	struct vt_proto_msg msg;
	uint64_t off = 0;
	size_t i;
	int n, ret;

	for (i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 7 + (i >> 9));
	/* The wire: an open chunk must carry data; only META_OPEN is open. */
	c.len = 0;
	assert_int_equal(vt_proto_enc_meta(t_buf, sizeof(t_buf), 1, &c), -EINVAL);
	c.total = VT_PROTO_META_OPEN - 1;
	c.len = 10;
	assert_int_equal(vt_proto_enc_meta(t_buf, sizeof(t_buf), 1, &c), -EINVAL);

	vt_proto_meta_rx_init(&rx, VT_PROTO_META_MAX_TOTAL);
	while (off < sizeof(blob)) {
		bool last = sizeof(blob) - off <= VT_PROTO_META_CHUNK_MAX;

		c.offset = off;
		c.len = last ? (uint32_t)(sizeof(blob) - off) : VT_PROTO_META_CHUNK_MAX;
		c.total = last ? sizeof(blob) : VT_PROTO_META_OPEN;
		c.data = blob + off;
		n = vt_proto_enc_meta(t_buf, sizeof(t_buf), 1, &c);
		assert_true(n > 0);
		assert_int_equal(vt_proto_msg_decode(t_buf, (size_t)n, &msg), n);
		assert_int_equal(vt_proto_dec_meta(&msg, &d), 0);
		assert_true(d.total == c.total);
		ret = vt_proto_meta_rx_add(&rx, &d);
		off += c.len;
		assert_int_equal(ret, last ? 1 : 0);
	}
	assert_true(rx.len == sizeof(blob) && rx.total == sizeof(blob));
	assert_memory_equal(rx.data, blob, sizeof(blob));
	/* Nothing after the end, open or not. */
	c.total = VT_PROTO_META_OPEN;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	vt_proto_meta_rx_release(&rx);

	/* Over the limit as it grows: refused at the chunk that passes it. */
	vt_proto_meta_rx_init(&rx, 100000);
	c = (struct vt_proto_meta_chunk){ .total = VT_PROTO_META_OPEN, .data = blob,
					  .len = VT_PROTO_META_CHUNK_MAX };
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), 0);
	c.offset = VT_PROTO_META_CHUNK_MAX;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EFBIG);
	assert_true(rx.cap <= 100000);
	vt_proto_meta_rx_release(&rx);
	/* ... and a last chunk whose total passes it. */
	c.offset = 0;
	c.len = 10;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), 0);
	c.offset = 10;
	c.len = 100000;
	c.total = 100010;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EFBIG);
	vt_proto_meta_rx_release(&rx);

	/* A last chunk that does not end where its total says; open after a known total. */
	vt_proto_meta_rx_init(&rx, VT_PROTO_META_MAX_TOTAL);
	c = (struct vt_proto_meta_chunk){ .total = VT_PROTO_META_OPEN, .data = blob, .len = 10 };
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), 0);
	c.offset = 10;
	c.total = 21;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	vt_proto_meta_rx_release(&rx);
	c = (struct vt_proto_meta_chunk){ .total = 30, .data = blob, .len = 10 };
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), 0);
	c.offset = 10;
	c.total = VT_PROTO_META_OPEN;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	/* Out of order while open. */
	vt_proto_meta_rx_release(&rx);
	c.offset = 0;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), 0);
	c.offset = 20;
	assert_int_equal(vt_proto_meta_rx_add(&rx, &c), -EPROTO);
	vt_proto_meta_rx_release(&rx);
}

/* ------------------------------------------------------------ the message table */

/*
 * The codec's message types are virtio-trace-protocol(5)'s: each ".BR "NAME " "(N, H|A|both)""
 * tag of the page is a type the codec knows by that name and sender, and the codec knows no
 * other. And FLUSH, a layout row now, is the very bytes the page gives.
 */
/* WATCH and TRIGGER: round trips, and what a hostile peer's frames cannot pass. */
static void test_watch_trigger(void **state)
{
	struct vt_proto_watch w = { 500, "sched", "sched_process_exec", "filename ~ \"*vt-trig*\"" }, gw;
	struct vt_proto_trigger t = { 123456789012345ull, 7, "sched:sched_process_exec" }, gt;
	struct vt_proto_msg msg;
	uint8_t raw[64];
	size_t n;
	int len;

	(void)state;
	len = vt_proto_enc_watch(t_buf, sizeof(t_buf), 3, &w);
	t_decode(t_buf, len, VT_PROTO_WATCH, 3, &msg);
	assert_int_equal(vt_proto_dec_watch(&msg, &gw), 0);
	assert_int_equal(gw.interval_ms, 500);
	assert_string_equal(gw.system, "sched");
	assert_string_equal(gw.event, "sched_process_exec");
	assert_string_equal(gw.filter, w.filter);
	assert_int_equal(vt_proto_type_sender(VT_PROTO_WATCH), VT_PROTO_FROM_HOST);

	len = vt_proto_enc_trigger(t_buf, sizeof(t_buf), 4, &t);
	t_decode(t_buf, len, VT_PROTO_TRIGGER, 4, &msg);
	assert_int_equal(vt_proto_dec_trigger(&msg, &gt), 0);
	assert_true(gt.timestamp == 123456789012345ull);
	assert_int_equal(gt.suppressed, 7);
	assert_string_equal(gt.event, "sched:sched_process_exec");
	assert_int_equal(vt_proto_type_sender(VT_PROTO_TRIGGER), VT_PROTO_FROM_AGENT);

	/* The encoder refuses what the decoder would. */
	w.interval_ms = VT_PROTO_WATCH_MIN_MS - 1;
	assert_int_equal(vt_proto_enc_watch(t_buf, sizeof(t_buf), 3, &w), -EINVAL);
	w.interval_ms = 500, w.event = "sched_*";
	assert_int_equal(vt_proto_enc_watch(t_buf, sizeof(t_buf), 3, &w), -EINVAL);
	t.event = "";
	assert_int_equal(vt_proto_enc_trigger(t_buf, sizeof(t_buf), 4, &t), -EINVAL);

	/* Hand-made TRIGGERs: reserved not 0, an empty name, a control byte, trailing bytes. */
	memset(raw, 0, sizeof(raw));
	raw[12] = 1;
	n = 16 + t_put_str(raw + 16, "a:b", 4);
	t_raw(VT_PROTO_TRIGGER, raw, n, &msg);
	assert_int_equal(vt_proto_dec_trigger(&msg, NULL), -EBADMSG);
	raw[12] = 0;
	t_raw(VT_PROTO_TRIGGER, raw, n, &msg);
	assert_int_equal(vt_proto_msg_validate(&msg), 0);
	t_raw(VT_PROTO_TRIGGER, raw, n + 1, &msg);
	assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
	n = 16 + t_put_str(raw + 16, "", 1);
	t_raw(VT_PROTO_TRIGGER, raw, n, &msg);
	assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
	n = 16 + t_put_str(raw + 16, "a\nb", 4);
	t_raw(VT_PROTO_TRIGGER, raw, n, &msg);
	assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
	t_raw(VT_PROTO_TRIGGER, raw, 8, &msg);
	assert_int_equal(vt_proto_msg_validate(&msg), -EBADMSG);
}

static void test_types_doc(void **state)
{
	static const uint8_t flush100[] = { 'V', 'T', 'C', 'P', 1, 0, 35, 0, 9, 0, 0, 0, 4, 0, 0, 0,
					    100, 0, 0, 0 };
	const char *src = getenv("VT_SRCDIR");
	unsigned int nr_doc = 0, nr_known = 0, t, n, want;
	char path[4096], line[512], name[64], dir[8];
	FILE *f;
	int len;

	(void)state;
	snprintf(path, sizeof(path), "%s/doc/virtio-trace-protocol.5", src ? src : "..");
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, ".BR \"%63[A-Z_] \" \"(%u, %7[a-zA-Z])\"", name, &n, dir) != 3)
			continue;
		want = !strcmp(dir, "H") ? VT_PROTO_FROM_HOST : !strcmp(dir, "A") ? VT_PROTO_FROM_AGENT :
		       !strcmp(dir, "both") ? VT_PROTO_FROM_HOST | VT_PROTO_FROM_AGENT : 0;
		assert_true(n < 65536 && want);
		assert_true(vt_proto_type_known((uint16_t)n));
		assert_string_equal(vt_proto_type_name((uint16_t)n), name);
		assert_int_equal(vt_proto_type_sender((uint16_t)n), want);
		nr_doc++;
	}
	fclose(f);
	for (t = 0; t < 65536; t++)
		if (vt_proto_type_known((uint16_t)t)) {
			nr_known++;
			assert_true(vt_proto_type_sender((uint16_t)t) != 0);
		} else {
			assert_int_equal(vt_proto_type_sender((uint16_t)t), 0);
		}
	assert_int_equal(nr_doc, 30);
	assert_int_equal(nr_known, nr_doc);

	len = vt_proto_enc_flush(t_buf, sizeof(t_buf), 9, 100);
	assert_int_equal(len, sizeof(flush100));
	assert_memory_equal(t_buf, flush100, sizeof(flush100));
}

/* ------------------------------------------------------------ names, markers, I/O */

static void test_names_markers(void **state)
{
	char m[64];

	assert_string_equal(vt_proto_type_name(VT_PROTO_SYNC_REPLY), "SYNC_REPLY");
	assert_string_equal(vt_proto_type_name(0), "UNKNOWN");
	assert_string_equal(vt_proto_type_name(6), "UNKNOWN");
	assert_string_equal(vt_proto_type_name(65535), "UNKNOWN");
	assert_true(vt_proto_type_known(VT_PROTO_HELLO));
	assert_true(vt_proto_type_known(VT_PROTO_LASTBOOT_REQ));
	{
		struct vt_proto_msg msg;
		const char *s = NULL;
		int n = vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_LASTBOOT_REQ, 7, "vtlast");

		t_decode(t_buf, n, VT_PROTO_LASTBOOT_REQ, 7, &msg);
		assert_int_equal(vt_proto_msg_validate(&msg), 0);
		assert_int_equal(vt_proto_dec_string(&msg, &s), 0);
		assert_string_equal(s, "vtlast");
		assert_int_equal(vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_LASTBOOT_REQ, 8,
						     "../x"), -EINVAL);
	}
	assert_string_equal(vt_proto_type_name(VT_PROTO_LASTBOOT_REQ), "LASTBOOT_REQ");
	assert_true(vt_proto_type_known(VT_PROTO_NOTICE));
	assert_true(vt_proto_type_known(VT_PROTO_FLUSH));
	assert_string_equal(vt_proto_type_name(VT_PROTO_FLUSH), "FLUSH");
	assert_true(vt_proto_type_known(VT_PROTO_SESSION));
	assert_true(vt_proto_type_known(VT_PROTO_TRIGGER));
	assert_true(vt_proto_type_known(VT_PROTO_BUFFER_BUDGET));
	assert_false(vt_proto_type_known(41));

	assert_int_equal(vt_proto_marker(m, sizeof(m), false, VT_PROTO_HELLO, 1),
			 (int)strlen("virtio-trace: rx HELLO 1"));
	assert_string_equal(m, "virtio-trace: rx HELLO 1");
	assert_int_equal(vt_proto_marker(m, sizeof(m), true, VT_PROTO_META, 4294967295u),
			 (int)strlen("virtio-trace: tx META 4294967295"));
	assert_string_equal(m, "virtio-trace: tx META 4294967295");
	vt_proto_marker(m, sizeof(m), false, VT_PROTO_START, 0);
	assert_string_equal(m, "virtio-trace: rx START 0");
	vt_proto_marker(m, sizeof(m), false, 999, 3);
	assert_string_equal(m, "virtio-trace: rx UNKNOWN-999 3");
	assert_int_equal(vt_proto_marker(m, 10, false, VT_PROTO_HELLO, 1), -ENOBUFS);
	/* the longest possible marker fits in 64 bytes */
	assert_true(vt_proto_marker(m, sizeof(m), true, VT_PROTO_SYNC_BEGIN, 4294967295u) > 0);
	assert_true(vt_proto_marker(m, sizeof(m), true, 65535, 4294967295u) > 0);
}

static void test_write_all(void **state)
{
	struct vt_proto_parser *p = vt_proto_parser_new();
	struct vt_proto_msg msg;
	uint8_t rd[VT_PROTO_FRAME_MAX];
	int fds[2], n, got = 0;
	ssize_t r;

	assert_non_null(p);
	assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
	memset(t_big, 'w', VT_PROTO_MAX_PAYLOAD);
	n = vt_proto_encode(t_buf, sizeof(t_buf), VT_PROTO_MARKER, 1, t_big, VT_PROTO_MAX_PAYLOAD);
	/* a full pipe with nobody reading times out */
	assert_int_equal(vt_proto_write_all(fds[1], t_buf, (size_t)n, 0), -ETIMEDOUT);
	/* drain what went through, then a whole frame passes in several writes */
	while ((r = read(fds[0], rd, sizeof(rd))) > 0)
		;
	n = vt_proto_enc_string(t_buf, sizeof(t_buf), VT_PROTO_MARKER, 2, "after");
	assert_int_equal(vt_proto_write_all(fds[1], t_buf, (size_t)n, 100), 0);
	r = read(fds[0], rd, sizeof(rd));
	assert_int_equal(r, n);
	vt_proto_parser_feed(p, rd, (size_t)r);
	while (vt_proto_parser_next(p, &msg) == 1)
		got++;
	assert_int_equal(got, 1);
	close(fds[0]);
	assert_int_equal(vt_proto_write_all(fds[1], t_buf, (size_t)n, 100), -EPIPE);
	close(fds[1]);
	vt_proto_parser_free(p);
}

/* RESUME, SESSION and the resume mark (a session taken over after a live migration). */
static void test_resume_session(void **state)
{
	struct vt_proto_session ss = {
		.flags = VT_PROTO_SESSION_STREAMING, .nr_streams = 2, .subbuf_size = 4096,
		.nr_events = 37, .resume = 1, .instance = "virtio-trace", .clock = "x86-tsc",
	}, got;
	struct vt_proto_mark mk = { .cpu = 3, .position = 123456789012ull, .resume = 2 }, m2;
	static uint8_t page[8192];
	struct vt_proto_msg msg;
	uint8_t raw[64];
	size_t len;
	int n;

	(void)state;
	n = vt_proto_enc_empty(t_buf, sizeof(t_buf), VT_PROTO_RESUME, 5);
	t_decode(t_buf, n, VT_PROTO_RESUME, 5, &msg);
	assert_int_equal(vt_proto_dec_empty(&msg), 0);
	assert_string_equal(vt_proto_type_name(VT_PROTO_RESUME), "RESUME");

	n = vt_proto_enc_session(t_buf, sizeof(t_buf), 6, &ss);
	t_decode(t_buf, n, VT_PROTO_SESSION, 6, &msg);
	assert_int_equal(vt_proto_dec_session(&msg, &got), 0);
	assert_int_equal(got.flags, VT_PROTO_SESSION_STREAMING);
	assert_int_equal(got.nr_streams, 2);
	assert_int_equal(got.subbuf_size, 4096);
	assert_int_equal(got.nr_events, 37);
	assert_int_equal(got.resume, 1);
	assert_string_equal(got.instance, "virtio-trace");
	assert_string_equal(got.clock, "x86-tsc");
	assert_string_equal(vt_proto_type_name(VT_PROTO_SESSION), "SESSION");

	/* Nothing recording: no streams, the top level's empty name, no clock. */
	ss = (struct vt_proto_session){ .instance = "", .clock = "" };
	n = vt_proto_enc_session(t_buf, sizeof(t_buf), 7, &ss);
	t_decode(t_buf, n, VT_PROTO_SESSION, 7, &msg);
	assert_int_equal(vt_proto_dec_session(&msg, &got), 0);
	assert_int_equal(got.flags, 0);
	assert_string_equal(got.instance, "");
	/* streams without STREAMING, STREAMING without a resume number, unknown flags: refused */
	ss.nr_streams = 1;
	assert_int_equal(vt_proto_enc_session(t_buf, sizeof(t_buf), 8, &ss), -EINVAL);
	ss = (struct vt_proto_session){ .flags = VT_PROTO_SESSION_STREAMING, .instance = "", .clock = "" };
	assert_int_equal(vt_proto_enc_session(t_buf, sizeof(t_buf), 8, &ss), -EINVAL);
	ss.flags = 1u << 5;
	assert_int_equal(vt_proto_enc_session(t_buf, sizeof(t_buf), 8, &ss), -EINVAL);
	/* a hand-made payload with a path for an instance, and one with a byte too many */
	memset(raw, 0, sizeof(raw));
	vt_put_le32(raw, VT_PROTO_SESSION_STREAMING);
	vt_put_le64(raw + 16, 1);
	len = 24 + t_put_str(raw + 24, "../x", 5);
	len += t_put_str(raw + len, "", 1);
	t_raw(VT_PROTO_SESSION, raw, len, &msg);
	assert_int_equal(vt_proto_dec_session(&msg, NULL), -EBADMSG);
	len = 24 + t_put_str(raw + 24, "vt", 3);
	len += t_put_str(raw + len, "", 1);
	t_raw(VT_PROTO_SESSION, raw, len, &msg);
	assert_int_equal(vt_proto_dec_session(&msg, NULL), 0);
	t_raw(VT_PROTO_SESSION, raw, len + 1, &msg);
	assert_int_equal(vt_proto_dec_session(&msg, NULL), -EBADMSG);

	/* The mark: a whole page, told apart from any ring-buffer page. */
	assert_int_equal(vt_proto_mark_encode(page, 4096, &mk), 0);
	assert_int_equal(vt_proto_mark_decode(page, 4096, &m2), 1);
	assert_int_equal(m2.cpu, 3);
	assert_true(m2.position == 123456789012ull);
	assert_int_equal(m2.resume, 2);
	assert_int_equal(vt_proto_mark_encode(page, 8192, &mk), 0);
	assert_int_equal(vt_proto_mark_decode(page, 8192, NULL), 1);
	page[8191] = 1;		/* a byte after the fields */
	assert_int_equal(vt_proto_mark_decode(page, 8192, NULL), 0);
	assert_int_equal(vt_proto_mark_encode(page, 4096, &mk), 0);
	page[0] = 1;		/* a timestamp: a page of events */
	assert_int_equal(vt_proto_mark_decode(page, 4096, NULL), 0);
	assert_int_equal(vt_proto_mark_encode(page, 4096, &mk), 0);
	page[8] = 16;		/* a commit length */
	assert_int_equal(vt_proto_mark_decode(page, 4096, NULL), 0);
	assert_int_equal(vt_proto_mark_encode(page, 4096, &mk), 0);
	page[16] = 'X';		/* the magic */
	assert_int_equal(vt_proto_mark_decode(page, 4096, NULL), 0);
	memset(page, 0, 4096);	/* an empty page is no mark */
	assert_int_equal(vt_proto_mark_decode(page, 4096, NULL), 0);
	assert_int_equal(vt_proto_mark_encode(page, 32, &mk), -EINVAL);
	assert_int_equal(vt_proto_mark_decode(page, 32, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_roundtrip_empty),
		cmocka_unit_test(test_roundtrip_start),
		cmocka_unit_test(test_roundtrip_hello),
		cmocka_unit_test(test_roundtrip_ack_error),
		cmocka_unit_test(test_roundtrip_events),
		cmocka_unit_test(test_roundtrip_strings),
		cmocka_unit_test(test_roundtrip_config),
		cmocka_unit_test(test_roundtrip_stats),
		cmocka_unit_test(test_roundtrip_meta),
		cmocka_unit_test(test_roundtrip_sync),
		cmocka_unit_test(test_encoder_bounds),
		cmocka_unit_test(test_bad_header),
		cmocka_unit_test(test_bad_payload_lengths),
		cmocka_unit_test(test_bad_strings),
		cmocka_unit_test(test_bad_counts),
		cmocka_unit_test(test_parser_slicing),
		cmocka_unit_test(test_parser_garbage),
		cmocka_unit_test(test_parser_bad_frames),
		cmocka_unit_test(test_parser_legacy),
		cmocka_unit_test(test_parser_bound),
		cmocka_unit_test(test_resume_session),
		cmocka_unit_test(test_meta_rx),
		cmocka_unit_test(test_meta_rx_open),
		cmocka_unit_test(test_names_markers),
		cmocka_unit_test(test_watch_trigger),
		cmocka_unit_test(test_types_doc),
		cmocka_unit_test(test_write_all),
	};

	signal(SIGPIPE, SIG_IGN);	/* test_write_all() wants EPIPE */
	printf("test-proto: control protocol frames round-trip, malformed input is rejected, "
	       "the stream parser resynchronises\n");
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
