// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the control-protocol codec (both ends of the control
 * port treat the other's bytes as hostile).
 * vt-fuzz-sources: lib/proto.c
 *
 * The first input byte picks how the rest is sliced before it is fed to the
 * stream parser (1..64 bytes at a time, or all at once). Every message that
 * comes out is validated; whatever validates must re-encode, through the typed
 * encoders, to exactly the bytes received (the encoding is canonical). The rest
 * of the input is also handed straight to every typed decoder as a payload.
 *
 * Built with -DVT_FUZZ_PROTO_SEEDS it is instead a program that writes the seed
 * corpus: fuzz-proto-seeds DIR (tests/fuzz/corpus/proto/).
 * vt-fuzz-args: -max_len=140000
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_proto.h"

static uint8_t frame[VT_PROTO_FRAME_MAX];
static struct vt_proto_event events[VT_PROTO_MAX_EVENTS];

static const uint16_t all_types[] = {
	VT_PROTO_HELLO, VT_PROTO_HELLO_REPLY, VT_PROTO_OK, VT_PROTO_ERROR, VT_PROTO_BYE,
	VT_PROTO_EVENTS, VT_PROTO_TRACER, VT_PROTO_BUFFER_SIZE, VT_PROTO_CLOCK,
	VT_PROTO_INSTANCE, VT_PROTO_START, VT_PROTO_STOP, VT_PROTO_STOPPED, VT_PROTO_MARKER,
	VT_PROTO_STATS_REQ, VT_PROTO_STATS, VT_PROTO_META_REQ, VT_PROTO_META,
	VT_PROTO_SYNC_BEGIN, VT_PROTO_SYNC_PROBE, VT_PROTO_SYNC_REPLY, VT_PROTO_SYNC_END,
	VT_PROTO_LASTBOOT_REQ, VT_PROTO_NOTICE, VT_PROTO_FLUSH, VT_PROTO_WATCH, VT_PROTO_TRIGGER,
	VT_PROTO_BUFFER_BUDGET,
};
#define NR_TYPES	(sizeof(all_types) / sizeof(all_types[0]))

/* Decode @m with its typed decoder and encode it again into frame[]. */
static int reencode(const struct vt_proto_msg *m)
{
	struct vt_proto_meta_chunk chunk;
	struct vt_proto_buffer_size bs;
	struct vt_proto_hello hello;
	struct vt_proto_stats st;
	struct vt_proto_error e;
	struct vt_proto_sync s;
	struct vt_proto_session ss;
	struct vt_proto_watch w;
	struct vt_proto_trigger t;
	const char *str;
	uint32_t u32;
	uint64_t u64, key;
	uint32_t flags;
	int ret;

	switch (m->type) {
	case VT_PROTO_HELLO:
	case VT_PROTO_HELLO_REPLY:
		ret = vt_proto_dec_hello(m, &hello);
		return ret ? ret : vt_proto_enc_hello(frame, sizeof(frame), m->type, m->seq, &hello);
	case VT_PROTO_OK:
	case VT_PROTO_STOPPED:
		ret = vt_proto_dec_ack(m, &u32);
		return ret ? ret : vt_proto_enc_ack(frame, sizeof(frame), m->type, m->seq, u32);
	case VT_PROTO_ERROR:
		ret = vt_proto_dec_error(m, &e);
		return ret ? ret : vt_proto_enc_error(frame, sizeof(frame), m->seq, &e);
	case VT_PROTO_START:
		ret = vt_proto_dec_start(m, &u32);
		return ret ? ret : vt_proto_enc_start(frame, sizeof(frame), m->seq, u32);
	case VT_PROTO_BYE:
	case VT_PROTO_STOP:
	case VT_PROTO_STATS_REQ:
	case VT_PROTO_RESUME:
		ret = vt_proto_dec_empty(m);
		return ret ? ret : vt_proto_enc_empty(frame, sizeof(frame), m->type, m->seq);
	case VT_PROTO_EVENTS:
		ret = vt_proto_dec_events(m, &u32, events, VT_PROTO_MAX_EVENTS);
		if (ret < 0)
			return ret;
		return vt_proto_enc_events(frame, sizeof(frame), m->seq, u32, events, (uint32_t)ret);
	case VT_PROTO_TRACER:
	case VT_PROTO_CLOCK:
	case VT_PROTO_LASTBOOT_REQ:
	case VT_PROTO_MARKER:
	case VT_PROTO_NOTICE:
		ret = vt_proto_dec_string(m, &str);
		return ret ? ret : vt_proto_enc_string(frame, sizeof(frame), m->type, m->seq, str);
	case VT_PROTO_BUFFER_SIZE:
		ret = vt_proto_dec_buffer_size(m, &bs);
		return ret ? ret : vt_proto_enc_buffer_size(frame, sizeof(frame), m->seq, &bs);
	case VT_PROTO_INSTANCE:
		ret = vt_proto_dec_instance(m, &str);
		return ret ? ret : vt_proto_enc_instance(frame, sizeof(frame), m->seq, str);
	case VT_PROTO_STATS:
		ret = vt_proto_dec_stats(m, &st);
		return ret ? ret : vt_proto_enc_stats(frame, sizeof(frame), m->seq, &st);
	case VT_PROTO_META_REQ:
		ret = vt_proto_dec_meta_req_key(m, &u64, &flags, &key);
		return ret ? ret : vt_proto_enc_meta_req_key(frame, sizeof(frame), m->seq, u64, flags, key);
	case VT_PROTO_META:
		ret = vt_proto_dec_meta(m, &chunk);
		return ret ? ret : vt_proto_enc_meta(frame, sizeof(frame), m->seq, &chunk);
	case VT_PROTO_FLUSH:
		ret = vt_proto_dec_flush(m, &u32);
		return ret ? ret : vt_proto_enc_flush(frame, sizeof(frame), m->seq, u32);
	case VT_PROTO_BUFFER_BUDGET:
		ret = vt_proto_dec_budget(m, &u32);
		return ret ? ret : vt_proto_enc_budget(frame, sizeof(frame), m->seq, u32);
	case VT_PROTO_SESSION:
		ret = vt_proto_dec_session(m, &ss);
		return ret ? ret : vt_proto_enc_session(frame, sizeof(frame), m->seq, &ss);
	case VT_PROTO_WATCH:
		ret = vt_proto_dec_watch(m, &w);
		return ret ? ret : vt_proto_enc_watch(frame, sizeof(frame), m->seq, &w);
	case VT_PROTO_TRIGGER:
		ret = vt_proto_dec_trigger(m, &t);
		return ret ? ret : vt_proto_enc_trigger(frame, sizeof(frame), m->seq, &t);
	default:
		ret = vt_proto_dec_sync(m, &s);
		return ret ? ret : vt_proto_enc_sync(frame, sizeof(frame), m->type, m->seq, &s);
	}
}

/* A message that validates must re-encode to the very bytes it came from. */
static void check_msg(const struct vt_proto_msg *m, struct vt_proto_meta_rx *rx)
{
	struct vt_proto_meta_chunk chunk;
	struct vt_proto_msg again;
	char marker[64];
	int ret, n;

	if (vt_proto_marker(marker, sizeof(marker), false, m->type, m->seq) <= 0)
		abort();
	ret = vt_proto_msg_validate(m);
	if (ret == -EBADMSG) {
		if (reencode(m) != -EBADMSG)
			abort();
		return;
	}
	if (ret != 0)
		abort();
	n = reencode(m);
	if (n < (int)VT_PROTO_HDR_SIZE || (uint32_t)n != VT_PROTO_HDR_SIZE + m->len ||
	    (m->len && memcmp(frame + VT_PROTO_HDR_SIZE, m->payload, m->len)))
		abort();
	if (vt_proto_msg_decode(frame, (size_t)n, &again) != n || again.type != m->type ||
	    again.seq != m->seq || again.len != m->len)
		abort();
	if (m->type == VT_PROTO_META && vt_proto_dec_meta(m, &chunk) == 0) {
		ret = vt_proto_meta_rx_add(rx, &chunk);
		/* Open or not, nothing held past the receiver's limit. */
		if (rx->len > rx->limit || rx->cap > rx->limit)
			abort();
		if (ret < 0 || ret == 1) {
			if (ret == 1 && rx->len != rx->total)
				abort();
			vt_proto_meta_rx_release(rx);
		}
	}
}

static void feed_parser(const uint8_t *data, size_t size, size_t step)
{
	struct vt_proto_parser *p = vt_proto_parser_new();
	struct vt_proto_meta_rx rx;
	struct vt_proto_msg m;
	size_t off = 0;
	int ret;

	if (!p)
		return;
	vt_proto_meta_rx_init(&rx, 1u << 20);
	while (off < size) {
		size_t len = size - off < step ? size - off : step;
		size_t taken = vt_proto_parser_feed(p, data + off, len);

		if (!taken || vt_proto_parser_buffered(p) > VT_PROTO_FRAME_MAX)
			abort();
		off += taken;
		while ((ret = vt_proto_parser_next(p, &m)) != 0) {
			if (ret == 1) {
				if (m.legacy && (m.len || m.seq ||
						 (m.type != VT_PROTO_START && m.type != VT_PROTO_STOP)))
					abort();
				check_msg(&m, &rx);
			} else if (ret == -EPROTO && m.payload) {
				/* a whole frame of unknown type or flags, skipped */
				if (vt_proto_type_known(m.type) && !m.flags)
					abort();
			} else if (ret != -EBADMSG && ret != -EPROTO && ret != -EMSGSIZE) {
				abort();
			}
		}
	}
	vt_proto_meta_rx_release(&rx);
	vt_proto_parser_free(p);
}

/* Every typed decoder on the raw bytes, from an exact-size copy for ASan. */
static void feed_decoders(const uint8_t *data, size_t size)
{
	struct vt_proto_meta_rx rx;
	struct vt_proto_msg m;
	uint8_t *copy;
	size_t i;

	if (size > VT_PROTO_MAX_PAYLOAD)
		size = VT_PROTO_MAX_PAYLOAD;
	copy = malloc(size ? size : 1);
	if (!copy)
		return;
	if (size)
		memcpy(copy, data, size);
	vt_proto_meta_rx_init(&rx, 1u << 20);
	for (i = 0; i < NR_TYPES; i++) {
		memset(&m, 0, sizeof(m));
		m.type = all_types[i];
		m.seq = 1;
		m.len = (uint32_t)size;
		m.payload = copy;
		check_msg(&m, &rx);
	}
	vt_proto_meta_rx_release(&rx);
	if (vt_proto_msg_decode(copy, size, &m) > 0)
		check_msg(&m, &rx);
	vt_proto_meta_rx_release(&rx);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t step;

	if (size < 1)
		return 0;
	step = data[0] & 0x80 ? size : 1u + (data[0] & 0x3f);
	feed_parser(data + 1, size - 1, step);
	feed_decoders(data + 1, size - 1);
	return 0;
}

#ifdef VT_FUZZ_PROTO_SEEDS
/* ------------------------------------------------------------ seed writer */

static uint8_t seed[4 * VT_PROTO_FRAME_MAX];

static int write_seed(const char *dir, const char *name, uint8_t mode, const void *p, size_t len)
{
	char path[4096];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	ok = fwrite(&mode, 1, 1, f) == 1 && fwrite(p, 1, len, f) == len;
	if (fclose(f) != 0 || !ok)
		return -EIO;
	return 0;
}

/* One valid frame of every type; returns the frame length. */
static int make_frame(uint16_t type, uint32_t seq, uint8_t *buf, size_t size)
{
	static const uint8_t blob[100] = "metadata blob";
	const struct vt_proto_hello hello = {
		.rev_min = 1, .rev_max = 1, .nr_cpus = 2, .subbuf_size = 4096,
		.caps = VT_PROTO_CAP_X86_TSC | VT_PROTO_CAP_META, .clock = "x86-tsc",
		.software = "trace-agent 0.1.0",
	};
	const struct vt_proto_event ev[] = {
		{ "sched", "sched_switch", "prev_pid != 0" },
		{ "iommu", "*", "" },
	};
	const struct vt_proto_error err = { .ref_seq = 3, .err = ENOENT, .text = "no such clock" };
	const struct vt_proto_buffer_size bs = { .size_kb = 4096, .subbuf_kb = 0 };
	const struct vt_proto_stats st = {
		.cpu = 1, .flags = VT_PROTO_STATS_LAST, .pages = 10, .bytes = 40960,
		.splice_fallbacks = 1, .partial_reads = 1, .text = "entries: 5\noverrun: 0\n",
	};
	const struct vt_proto_meta_chunk chunk = { .total = 200, .offset = 100, .data = blob,
						   .len = sizeof(blob) };
	const struct vt_proto_sync sync = { .cpu = 1, .probe = 300, .tsc = 123456789, .ran_on = 1 };
	const struct vt_proto_watch watch = { 1000, "sched", "sched_process_exec",
					      "filename ~ \"*/crashme\"" };
	const struct vt_proto_trigger trig = { 987654321, 4, "sched:sched_process_exec" };

	switch (type) {
	case VT_PROTO_HELLO:
	case VT_PROTO_HELLO_REPLY:
		return vt_proto_enc_hello(buf, size, type, seq, &hello);
	case VT_PROTO_OK:
	case VT_PROTO_STOPPED:
		return vt_proto_enc_ack(buf, size, type, seq, seq - 1);
	case VT_PROTO_ERROR:
		return vt_proto_enc_error(buf, size, seq, &err);
	case VT_PROTO_BYE:
	case VT_PROTO_START:
	case VT_PROTO_STOP:
	case VT_PROTO_STATS_REQ:
		return vt_proto_enc_empty(buf, size, type, seq);
	case VT_PROTO_EVENTS:
		return vt_proto_enc_events(buf, size, seq, VT_PROTO_EVENTS_REPLACE, ev, 2);
	case VT_PROTO_TRACER:
		return vt_proto_enc_string(buf, size, type, seq, "mmiotrace");
	case VT_PROTO_CLOCK:
		return vt_proto_enc_string(buf, size, type, seq, "x86-tsc");
	case VT_PROTO_LASTBOOT_REQ:
		return vt_proto_enc_string(buf, size, type, seq, "vtlast");
	case VT_PROTO_MARKER:
		return vt_proto_enc_string(buf, size, type, seq, "hello from the host");
	case VT_PROTO_NOTICE:
		return vt_proto_enc_string(buf, size, type, seq, "a warning from the agent");
	case VT_PROTO_BUFFER_SIZE:
		return vt_proto_enc_buffer_size(buf, size, seq, &bs);
	case VT_PROTO_INSTANCE:
		return vt_proto_enc_instance(buf, size, seq, seq & 1 ? "virtio-trace" : NULL);
	case VT_PROTO_STATS:
		return vt_proto_enc_stats(buf, size, seq, &st);
	case VT_PROTO_META_REQ:
		return vt_proto_enc_meta_req(buf, size, seq, 1u << 28);
	case VT_PROTO_META:
		return vt_proto_enc_meta(buf, size, seq, &chunk);
	case VT_PROTO_FLUSH:
		return vt_proto_enc_flush(buf, size, seq, 100);
	case VT_PROTO_WATCH:
		return vt_proto_enc_watch(buf, size, seq, &watch);
	case VT_PROTO_TRIGGER:
		return vt_proto_enc_trigger(buf, size, seq, &trig);
	case VT_PROTO_BUFFER_BUDGET:
		return vt_proto_enc_budget(buf, size, seq, 65536);
	default:
		return vt_proto_enc_sync(buf, size, type, seq, &sync);
	}
}

int main(int argc, char **argv)
{
	static const char garbage[] = "hello\n\x00\xffVTC\nVTCPxx";
	char name[64];
	size_t i, len = 0;
	int n, ret = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (i = 0; i < NR_TYPES; i++) {
		n = make_frame(all_types[i], (uint32_t)i + 1, seed, sizeof(seed));
		if (n < 0)
			return 1;
		snprintf(name, sizeof(name), "%02u-%s", all_types[i],
			 vt_proto_type_name(all_types[i]));
		ret |= write_seed(argv[1], name, 0x80, seed, (size_t)n);
		/* the payload alone, for the typed decoders */
		snprintf(name, sizeof(name), "p%02u-%s", all_types[i],
			 vt_proto_type_name(all_types[i]));
		ret |= write_seed(argv[1], name, 0x80, seed + VT_PROTO_HDR_SIZE,
				  (size_t)n - VT_PROTO_HDR_SIZE);
	}
	/* every frame back to back, fed 1 and 13 bytes at a time */
	for (i = 0; i < NR_TYPES; i++) {
		n = make_frame(all_types[i], (uint32_t)i + 1, seed + len, sizeof(seed) - len);
		if (n < 0)
			return 1;
		len += (size_t)n;
	}
	ret |= write_seed(argv[1], "stream-bytewise", 0x00, seed, len);
	ret |= write_seed(argv[1], "stream-13", 12, seed, len);
	/* legacy lines, garbage, and a frame after garbage */
	ret |= write_seed(argv[1], "legacy", 0x80, "1\n0\nhello\n1\n0\n", 14);
	memcpy(seed, garbage, sizeof(garbage) - 1);
	n = make_frame(VT_PROTO_STOP, 9, seed + sizeof(garbage) - 1, sizeof(seed));
	ret |= write_seed(argv[1], "garbage-then-frame", 0x80, seed, sizeof(garbage) - 1 + (size_t)n);
	/* an open META bundle: two open chunks, then the last with the real total */
	len = 0;
	for (i = 0; i < 3; i++) {
		static const uint8_t part[] = "kallsyms piece ";
		struct vt_proto_meta_chunk c = { .total = i < 2 ? VT_PROTO_META_OPEN : 3 * 15,
						 .offset = i * 15, .data = part, .len = 15 };

		n = vt_proto_enc_meta(seed + len, sizeof(seed) - len, (uint32_t)i + 1, &c);
		if (n < 0)
			return 1;
		len += (size_t)n;
	}
	ret |= write_seed(argv[1], "meta-open", 0x80, seed, len);
	/* a frame of unknown type, then a valid one */
	n = vt_proto_encode(seed, sizeof(seed), 99, 1, "abcd", 4);
	len = (size_t)n;
	n = make_frame(VT_PROTO_OK, 2, seed + len, sizeof(seed) - len);
	ret |= write_seed(argv[1], "unknown-type", 0x80, seed, len + (size_t)n);
	return ret ? 1 : 0;
}
#endif
