/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control-port protocol shared by trace-agent and virtio-trace-collect.
 * virtio-trace-protocol(5) is the specification; this is its codec.
 *
 * A frame is a 16-byte little-endian header followed by at most
 * VT_PROTO_MAX_PAYLOAD bytes of payload. The codec is pure: encoders write a
 * frame into a caller buffer, decoders read a message that the stream parser
 * (or vt_proto_hdr_decode()) produced, and nothing here does I/O except
 * vt_proto_write_all().
 *
 * Every byte a peer sends is hostile: decoders check every length, count and
 * string and return -EBADMSG for a malformed payload, -EPROTO for a well-formed
 * frame this end does not understand. Strings handed back by decoders point into
 * the message; they are NUL-terminated, contain no other NUL and, for names,
 * only the characters the protocol allows (never a '/', never a leading '.').
 */
#ifndef VT_PROTO_H
#define VT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "VTCP" in the byte stream */
#define VT_PROTO_MAGIC		0x50435456u
/* Version of the framing (the header layout); fixed for the life of the protocol. */
#define VT_PROTO_FRAME_VERSION	1
/* Message-set revisions this codec speaks; HELLO negotiates one of them. */
#define VT_PROTO_REV_MIN	1
#define VT_PROTO_REV_MAX	1

#define VT_PROTO_HDR_SIZE	16u
#define VT_PROTO_MAX_PAYLOAD	(64u << 10)
#define VT_PROTO_FRAME_MAX	(VT_PROTO_HDR_SIZE + VT_PROTO_MAX_PAYLOAD)

/* String bounds, counting the terminating NUL that travels on the wire. */
#define VT_PROTO_MAX_NAME	256u	/* system, event, tracer, clock, instance */
#define VT_PROTO_MAX_FILTER	4096u	/* an event filter expression */
#define VT_PROTO_MAX_TEXT	4096u	/* marker, error text, stats text, software */
#define VT_PROTO_MAX_EVENTS	512u	/* entries in one EVENTS message */

/* META chunks: a 16-byte chunk header, then data. */
#define VT_PROTO_META_HDR_SIZE	16u
#define VT_PROTO_META_CHUNK_MAX	(VT_PROTO_MAX_PAYLOAD - VT_PROTO_META_HDR_SIZE)
#define VT_PROTO_META_MAX_TOTAL	(256ull << 20)
/* The total of a META chunk whose bundle's length is not known yet (META_REQ_OPEN). */
#define VT_PROTO_META_OPEN	UINT64_MAX

/* STATS for the agent as a whole rather than one CPU */
#define VT_PROTO_CPU_ALL	0xffffffffu

/**
 * struct vt_proto_wire_hdr - the frame header as it is on the wire
 * @magic: VT_PROTO_MAGIC
 * @version: VT_PROTO_FRAME_VERSION
 * @flags: none defined; must be 0
 * @type: enum vt_proto_type
 * @seq: sender's sequence number, 1, 2, ... (0 is never sent, it marks legacy lines)
 * @len: payload length, at most VT_PROTO_MAX_PAYLOAD
 *
 * All fields little-endian; the codec reads it with vt_get_le*() at the
 * offsets of this layout, never by casting a buffer.
 */
struct vt_proto_wire_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t flags;
	uint16_t type;
	uint32_t seq;
	uint32_t len;
};
_Static_assert(sizeof(struct vt_proto_wire_hdr) == VT_PROTO_HDR_SIZE, "wire header size");

/**
 * enum vt_proto_type - message types
 *
 * H->A: sent by the host collector; A->H: sent by the agent; both: either.
 */
enum vt_proto_type {
	VT_PROTO_HELLO = 1,		/* H->A  struct vt_proto_hello */
	VT_PROTO_HELLO_REPLY = 2,	/* A->H  struct vt_proto_hello */
	VT_PROTO_OK = 3,		/* both  u32 ref_seq */
	VT_PROTO_ERROR = 4,		/* both  struct vt_proto_error */
	VT_PROTO_BYE = 5,		/* both  empty */
	VT_PROTO_EVENTS = 16,		/* H->A  flags, count, {system, event, filter}... */
	VT_PROTO_TRACER = 17,		/* H->A  string name */
	VT_PROTO_BUFFER_SIZE = 18,	/* H->A  struct vt_proto_buffer_size */
	VT_PROTO_CLOCK = 19,		/* H->A  string name */
	VT_PROTO_INSTANCE = 20,		/* H->A  u32 kind, string name */
	VT_PROTO_START = 21,		/* H->A  empty, or u32 flags (VT_PROTO_START_*) */
	VT_PROTO_STOP = 22,		/* H->A  empty */
	VT_PROTO_STOPPED = 23,		/* A->H  u32 ref_seq: drain done */
	VT_PROTO_MARKER = 24,		/* H->A  string text */
	VT_PROTO_STATS_REQ = 25,	/* H->A  empty */
	VT_PROTO_STATS = 26,		/* A->H  struct vt_proto_stats */
	VT_PROTO_META_REQ = 27,		/* H->A  u64 max_total */
	VT_PROTO_META = 28,		/* A->H  struct vt_proto_meta_chunk */
	VT_PROTO_SYNC_BEGIN = 29,	/* H->A  u32 cpu, u32 nr_probes */
	VT_PROTO_SYNC_PROBE = 30,	/* H->A  u32 cpu, u32 probe */
	VT_PROTO_SYNC_REPLY = 31,	/* A->H  u32 cpu, u32 probe, u64 tsc, u32 ran_on, u32 0 */
	VT_PROTO_SYNC_END = 32,		/* H->A  u32 cpu */
	VT_PROTO_LASTBOOT_REQ = 33,	/* H->A  string instance: answered with META chunks of a
					 * vt_lastboot bundle, or ERROR */
	VT_PROTO_NOTICE = 34,		/* A->H  string text: a warning the agent logged (only to
					 * a host with VT_PROTO_CAP_NOTICE) */
	VT_PROTO_FLUSH = 35,		/* H->A  u32 interval_ms: send partial pages that old
					 * (only to an agent with VT_PROTO_CAP_FLUSH) */
	VT_PROTO_RESUME = 36,		/* H->A  empty: take over the running session (only to an
					 * agent with VT_PROTO_CAP_RESUME) */
	VT_PROTO_SESSION = 37,		/* A->H  struct vt_proto_session: RESUME's answer */
	VT_PROTO_WATCH = 38,		/* H->A  struct vt_proto_watch: send TRIGGER when an event
					 * matches (only to an agent with VT_PROTO_CAP_WATCH) */
	VT_PROTO_TRIGGER = 39,		/* A->H  struct vt_proto_trigger: a watched event matched */
	VT_PROTO_BUFFER_BUDGET = 40,	/* H->A  u32 budget_kb: what the ring buffers may grow to
					 * (only to an agent with VT_PROTO_CAP_BUFFER_BUDGET) */
};

/* Who sends a message type (vt_proto_type_sender()): the host, the agent, or both ORed. */
#define VT_PROTO_FROM_HOST	(1u << 0)
#define VT_PROTO_FROM_AGENT	(1u << 1)

/* FLUSH intervals an agent takes: 0 (never: whole pages only, the default) or this range. */
#define VT_PROTO_FLUSH_MIN_MS	10u
#define VT_PROTO_FLUSH_MAX_MS	60000u

/* HELLO capability bits; unknown bits are ignored by receivers. */
#define VT_PROTO_CAP_X86_TSC	(1ull << 0)	/* the x86-tsc trace clock exists */
#define VT_PROTO_CAP_MMIOTRACE	(1ull << 1)	/* the mmiotrace tracer exists */
#define VT_PROTO_CAP_INSTANCES	(1ull << 2)	/* private tracefs instances work */
#define VT_PROTO_CAP_SYNC_TSC	(1ull << 3)	/* SYNC_PROBE answered with rdtsc */
#define VT_PROTO_CAP_META	(1ull << 4)	/* META_REQ is served */
#define VT_PROTO_CAP_SUBBUF	(1ull << 5)	/* buffer_subbuf_size_kb can be set */
#define VT_PROTO_CAP_LASTBOOT	(1ull << 6)	/* LASTBOOT_REQ is served */
#define VT_PROTO_CAP_META_FLAGS	(1ull << 7)	/* META_REQ may carry flags */
#define VT_PROTO_CAP_META_OPEN	(1ull << 8)	/* META_REQ may carry OPEN */
#define VT_PROTO_CAP_KALLSYMS_KEY (1ull << 9)	/* bundles carry kallsyms' key; META_REQ
						 * may carry KALLSYMS_UNLESS_KEY */
#define VT_PROTO_CAP_NOTICE	(1ull << 10)	/* the host's HELLO: NOTICE is taken */
#define VT_PROTO_CAP_FLUSH	(1ull << 11)	/* FLUSH is served: partial pages while recording */
#define VT_PROTO_CAP_RESUME	(1ull << 12)	/* agent: RESUME is served, and marks
						 * where each data stream stands */
#define VT_PROTO_CAP_HOLD	(1ull << 13)	/* START may carry VT_PROTO_START_HOLD */
#define VT_PROTO_CAP_WATCH	(1ull << 14)	/* WATCH is served: TRIGGER when an event matches */
#define VT_PROTO_CAP_BUFFER_BUDGET (1ull << 15)	/* BUFFER_BUDGET is served: the agent grows
						 * its ring buffers with the drain it measures */

/* WATCH: the agent's least gap between two TRIGGERs, in this range. */
#define VT_PROTO_WATCH_MIN_MS	100u
#define VT_PROTO_WATCH_MAX_MS	3600000u

/* START flags (only to an agent with VT_PROTO_CAP_HOLD) */
/*
 * Flight recorder: the ring buffer overwrites, nothing goes out on the data
 * ports while recording, and STOP drains what the ring holds then.
 */
#define VT_PROTO_START_HOLD	(1u << 0)
#define VT_PROTO_START_FLAGS	VT_PROTO_START_HOLD

/* META_REQ flags (only to an agent with VT_PROTO_CAP_META_FLAGS) */
#define VT_PROTO_META_REQ_NO_KALLSYMS	(1u << 0)	/* leave /proc/kallsyms out */
/*
 * Leave kallsyms out when no module came or went (/proc/modules) since this
 * session's last bundle that had them: the host keeps that bundle's.
 */
#define VT_PROTO_META_REQ_KALLSYMS_IF_CHANGED	(1u << 1)
/*
 * The host takes chunks of open total (VT_PROTO_META_OPEN) before the last:
 * the agent sends kallsyms as it reads it, in pieces, and never holds it
 * whole (only to an agent with VT_PROTO_CAP_META_OPEN).
 */
#define VT_PROTO_META_REQ_OPEN	(1u << 2)
/*
 * Leave kallsyms out when its key is the u64 that follows the flags: the
 * host kept that kallsyms from an earlier session of this boot (only to an
 * agent with VT_PROTO_CAP_KALLSYMS_KEY).
 */
#define VT_PROTO_META_REQ_KALLSYMS_UNLESS_KEY	(1u << 3)
#define VT_PROTO_META_REQ_FLAGS		(VT_PROTO_META_REQ_NO_KALLSYMS | \
					 VT_PROTO_META_REQ_KALLSYMS_IF_CHANGED | \
					 VT_PROTO_META_REQ_OPEN | \
					 VT_PROTO_META_REQ_KALLSYMS_UNLESS_KEY)

/* EVENTS flags */
#define VT_PROTO_EVENTS_REPLACE	(1u << 0)	/* disable what earlier EVENTS enabled */
#define VT_PROTO_EVENTS_FLAGS	VT_PROTO_EVENTS_REPLACE

/* INSTANCE kinds */
#define VT_PROTO_INSTANCE_TOP		0u
#define VT_PROTO_INSTANCE_PRIVATE	1u

/* SESSION flags */
#define VT_PROTO_SESSION_STREAMING	(1u << 0)	/* a session records: the host takes it over */
#define VT_PROTO_SESSION_STOPPING	(1u << 1)	/* a STOP is being drained */
#define VT_PROTO_SESSION_FLAGS		(VT_PROTO_SESSION_STREAMING | VT_PROTO_SESSION_STOPPING)

/*
 * The resume mark: one whole sub-buffer the agent writes into each data port
 * after a RESUME, at a page boundary of the stream, telling where the stream
 * stands. Its page header has timestamp 0 and commit 0 (an empty page, which
 * the ring buffer never hands out); the data area starts with these fields.
 */
#define VT_PROTO_MARK_MAGIC	"VTRESUME"
#define VT_PROTO_MARK_VERSION	1u
#define VT_PROTO_MARK_SIZE	48u	/* page header and fields; the rest of the page is 0 */

/**
 * struct vt_proto_mark - a resume mark's fields
 * @cpu: the CPU (and data port) of the stream
 * @position: bytes this stream carried before the mark, marks included
 * @resume: the session's RESUME count, 1 for the first
 */
struct vt_proto_mark {
	uint32_t cpu;
	uint64_t position;
	uint64_t resume;
};

/* STATS flags */
#define VT_PROTO_STATS_LAST	(1u << 0)	/* last STATS of this series */
#define VT_PROTO_STATS_FLAGS	VT_PROTO_STATS_LAST

/**
 * struct vt_proto_msg - one message out of the stream parser
 * @type: enum vt_proto_type
 * @flags: header flags (always 0 in this revision)
 * @legacy: true for a legacy "1\n" (START) or "0\n" (STOP) line; @seq is then 0
 * @seq: sender's sequence number
 * @len: payload length
 * @payload: @len bytes; valid until the next call on the parser that produced it
 */
struct vt_proto_msg {
	uint16_t type;
	uint8_t flags;
	bool legacy;
	uint32_t seq;
	uint32_t len;
	const uint8_t *payload;
};

/**
 * struct vt_proto_hello - HELLO (host) and HELLO_REPLY (agent)
 * @rev_min: lowest message-set revision the sender speaks
 * @rev_max: highest; in HELLO_REPLY both are the revision chosen
 * @nr_cpus: CPUs the agent serves (0 in HELLO)
 * @subbuf_size: agent's ring-buffer sub-buffer size in bytes (0 in HELLO)
 * @caps: VT_PROTO_CAP_* the sender supports (host: wants)
 * @clock: HELLO: clock the host prefers ("" for the default);
 *         HELLO_REPLY: the trace clock in use
 * @software: free text, e.g. "trace-agent 0.1.0"
 */
struct vt_proto_hello {
	uint16_t rev_min;
	uint16_t rev_max;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	uint64_t caps;
	const char *clock;
	const char *software;
};

/**
 * struct vt_proto_error - ERROR
 * @ref_seq: seq of the message this answers, 0 if none
 * @err: positive Linux errno value, 1..4095
 * @text: human-readable detail, not a format string
 */
struct vt_proto_error {
	uint32_t ref_seq;
	int err;
	const char *text;
};

/**
 * struct vt_proto_event - one EVENTS entry
 * @system: event system or glob ("sched", "*"), not empty
 * @event: event name or glob ("sched_switch", "*"), not empty
 * @filter: filter expression, "" for none; printable ASCII
 */
struct vt_proto_event {
	const char *system;
	const char *event;
	const char *filter;
};

/**
 * struct vt_proto_buffer_size - BUFFER_SIZE
 * @size_kb: per-CPU ring buffer size (buffer_size_kb), 0 to leave it alone
 * @subbuf_kb: sub-buffer size (buffer_subbuf_size_kb), 0 to leave it alone;
 *	not both 0
 */
struct vt_proto_buffer_size {
	uint32_t size_kb;
	uint32_t subbuf_kb;
};

/**
 * struct vt_proto_stats - STATS: one CPU's final figures, or the agent's totals
 * @cpu: CPU number, or VT_PROTO_CPU_ALL for the agent as a whole
 * @flags: VT_PROTO_STATS_*
 * @pages: sub-buffers sent
 * @bytes: bytes sent on the data port(s)
 * @splice_fallbacks: times splice failed and read() + write() was used
 * @partial_reads: partial pages taken with read() (the final drain)
 * @text: per_cpu/cpuN/stats verbatim ("" for VT_PROTO_CPU_ALL)
 */
struct vt_proto_stats {
	uint32_t cpu;
	uint32_t flags;
	uint64_t pages;
	uint64_t bytes;
	uint64_t splice_fallbacks;
	uint64_t partial_reads;
	const char *text;
};

/**
 * struct vt_proto_meta_chunk - META: a piece of the vt_meta_encode() blob
 * @total: length of the whole blob, the same in every chunk; or, answering a
 *	META_REQ_OPEN, VT_PROTO_META_OPEN in every chunk but the last, whose
 *	total is its @offset + @len
 * @offset: where @data goes; chunks arrive in order, without gaps
 * @data: @len bytes
 * @len: at most VT_PROTO_META_CHUNK_MAX; 0 only when @total is 0
 */
struct vt_proto_meta_chunk {
	uint64_t total;
	uint64_t offset;
	const uint8_t *data;
	uint32_t len;
};

/**
 * struct vt_proto_sync - SYNC_BEGIN, SYNC_PROBE, SYNC_REPLY and SYNC_END
 * @cpu: the vCPU probed
 * @probe: SYNC_BEGIN: number of probes to come; SYNC_PROBE and SYNC_REPLY:
 *         probe index k; SYNC_END: unused (0)
 * @tsc: SYNC_REPLY: the guest TSC read on @ran_on
 * @ran_on: SYNC_REPLY: the CPU the TSC was read on (from rdtscp); a reply
 *          with @ran_on != @cpu must not be used
 */
struct vt_proto_sync {
	uint32_t cpu;
	uint32_t probe;
	uint64_t tsc;
	uint32_t ran_on;
};

/**
 * struct vt_proto_session - SESSION: the agent's session, as RESUME found it
 * @flags: VT_PROTO_SESSION_*
 * @nr_streams: data streams running (one per CPU with a port); STATS for each
 *	follow, then the agent's STATS with LAST
 * @subbuf_size: the recorded buffer's sub-buffer size in bytes
 * @nr_events: events enabled in the recorded buffer
 * @resume: this RESUME's number in the session (1, 2, ...): the marks carry it
 * @instance: the recorded buffer's instance, "" for the top level
 * @clock: its trace clock
 */
struct vt_proto_session {
	uint32_t flags;
	uint32_t nr_streams;
	uint32_t subbuf_size;
	uint32_t nr_events;
	uint64_t resume;
	const char *instance;
	const char *clock;
};

/**
 * struct vt_proto_watch - WATCH: the guest event whose matches trigger
 * @interval_ms: the least gap between two TRIGGERs (VT_PROTO_WATCH_MIN_MS to
 *	VT_PROTO_WATCH_MAX_MS); matches in between are counted, not sent
 * @system: the event's system, one name (no glob)
 * @event: the event, one name (no glob)
 * @filter: the kernel's filter expression, "" for every event; printable ASCII
 */
struct vt_proto_watch {
	uint32_t interval_ms;
	const char *system;
	const char *event;
	const char *filter;
};

/**
 * struct vt_proto_trigger - TRIGGER: a watched event matched
 * @timestamp: the event's time in the agent's trace clock (ns, or the clock's counts)
 * @suppressed: matches not sent since the last TRIGGER (the agent's rate limit)
 * @event: "system:event", printable ASCII
 */
struct vt_proto_trigger {
	uint64_t timestamp;
	uint32_t suppressed;
	const char *event;
};

/**
 * struct vt_proto_meta_rx - reassembles META chunks on the receiving side
 * @data: the blob so far (malloc'd, owned until vt_proto_meta_rx_release())
 * @len: bytes received
 * @total: announced total, valid once @started; VT_PROTO_META_OPEN until
 *	the last chunk of an open blob
 * @limit: largest total this receiver accepts
 * @cap: allocated size of @data
 * @started: the first chunk arrived
 */
struct vt_proto_meta_rx {
	uint8_t *data;
	uint64_t len;
	uint64_t total;
	uint64_t limit;
	uint64_t cap;
	bool started;
};

struct vt_proto_parser;

const char *vt_proto_type_name(uint16_t type);
bool vt_proto_type_known(uint16_t type);
unsigned int vt_proto_type_sender(uint16_t type);
int vt_proto_marker(char *buf, size_t size, bool tx, uint16_t type, uint32_t seq);

int vt_proto_hdr_decode(const void *buf, size_t len, struct vt_proto_msg *msg);
int vt_proto_msg_decode(const void *buf, size_t len, struct vt_proto_msg *msg);
int vt_proto_msg_validate(const struct vt_proto_msg *msg);

int vt_proto_encode(void *buf, size_t size, uint16_t type, uint32_t seq,
		    const void *payload, size_t len);
int vt_proto_enc_empty(void *buf, size_t size, uint16_t type, uint32_t seq);
int vt_proto_enc_hello(void *buf, size_t size, uint16_t type, uint32_t seq,
		       const struct vt_proto_hello *hello);
int vt_proto_enc_ack(void *buf, size_t size, uint16_t type, uint32_t seq, uint32_t ref_seq);
int vt_proto_enc_error(void *buf, size_t size, uint32_t seq, const struct vt_proto_error *e);
int vt_proto_enc_events(void *buf, size_t size, uint32_t seq, uint32_t flags,
			const struct vt_proto_event *ev, uint32_t nr);
int vt_proto_enc_string(void *buf, size_t size, uint16_t type, uint32_t seq, const char *s);
int vt_proto_enc_buffer_size(void *buf, size_t size, uint32_t seq,
			     const struct vt_proto_buffer_size *bs);
int vt_proto_enc_instance(void *buf, size_t size, uint32_t seq, const char *name);
int vt_proto_enc_flush(void *buf, size_t size, uint32_t seq, uint32_t interval_ms);
int vt_proto_enc_budget(void *buf, size_t size, uint32_t seq, uint32_t budget_kb);
int vt_proto_enc_start(void *buf, size_t size, uint32_t seq, uint32_t flags);
int vt_proto_enc_stats(void *buf, size_t size, uint32_t seq, const struct vt_proto_stats *st);
int vt_proto_enc_meta_req_key(void *buf, size_t size, uint32_t seq, uint64_t max_total,
			      uint32_t flags, uint64_t key);
int vt_proto_dec_meta_req_key(const struct vt_proto_msg *msg, uint64_t *max_total, uint32_t *flags,
			      uint64_t *key);
int vt_proto_enc_meta_req(void *buf, size_t size, uint32_t seq, uint64_t max_total);
int vt_proto_enc_meta_req_flags(void *buf, size_t size, uint32_t seq, uint64_t max_total,
				uint32_t flags);
int vt_proto_enc_meta(void *buf, size_t size, uint32_t seq,
		      const struct vt_proto_meta_chunk *chunk);
int vt_proto_enc_sync(void *buf, size_t size, uint16_t type, uint32_t seq,
		      const struct vt_proto_sync *sync);

int vt_proto_dec_empty(const struct vt_proto_msg *msg);
int vt_proto_dec_hello(const struct vt_proto_msg *msg, struct vt_proto_hello *hello);
int vt_proto_dec_ack(const struct vt_proto_msg *msg, uint32_t *ref_seq);
int vt_proto_dec_error(const struct vt_proto_msg *msg, struct vt_proto_error *e);
int vt_proto_dec_events(const struct vt_proto_msg *msg, uint32_t *flags,
			struct vt_proto_event *ev, size_t max);
int vt_proto_dec_string(const struct vt_proto_msg *msg, const char **s);
int vt_proto_dec_buffer_size(const struct vt_proto_msg *msg, struct vt_proto_buffer_size *bs);
int vt_proto_dec_instance(const struct vt_proto_msg *msg, const char **name);
int vt_proto_dec_flush(const struct vt_proto_msg *msg, uint32_t *interval_ms);
int vt_proto_dec_budget(const struct vt_proto_msg *msg, uint32_t *budget_kb);
int vt_proto_dec_start(const struct vt_proto_msg *msg, uint32_t *flags);
int vt_proto_dec_stats(const struct vt_proto_msg *msg, struct vt_proto_stats *st);
int vt_proto_dec_meta_req(const struct vt_proto_msg *msg, uint64_t *max_total);
int vt_proto_dec_meta_req_flags(const struct vt_proto_msg *msg, uint64_t *max_total, uint32_t *flags);
int vt_proto_dec_meta(const struct vt_proto_msg *msg, struct vt_proto_meta_chunk *chunk);
int vt_proto_dec_sync(const struct vt_proto_msg *msg, struct vt_proto_sync *sync);

int vt_proto_enc_session(void *buf, size_t size, uint32_t seq, const struct vt_proto_session *ss);
int vt_proto_dec_session(const struct vt_proto_msg *msg, struct vt_proto_session *ss);
int vt_proto_enc_watch(void *buf, size_t size, uint32_t seq, const struct vt_proto_watch *w);
int vt_proto_dec_watch(const struct vt_proto_msg *msg, struct vt_proto_watch *w);
int vt_proto_enc_trigger(void *buf, size_t size, uint32_t seq, const struct vt_proto_trigger *t);
int vt_proto_dec_trigger(const struct vt_proto_msg *msg, struct vt_proto_trigger *t);
int vt_proto_mark_encode(void *page, size_t subbuf, const struct vt_proto_mark *mk);
int vt_proto_mark_decode(const void *page, size_t subbuf, struct vt_proto_mark *mk);

int vt_proto_hello_negotiate(const struct vt_proto_hello *hello, uint16_t *rev);

struct vt_proto_parser *vt_proto_parser_new(void);
void vt_proto_parser_free(struct vt_proto_parser *p);
size_t vt_proto_parser_feed(struct vt_proto_parser *p, const void *data, size_t len);
int vt_proto_parser_next(struct vt_proto_parser *p, struct vt_proto_msg *msg);
size_t vt_proto_parser_buffered(const struct vt_proto_parser *p);
uint64_t vt_proto_parser_skipped(const struct vt_proto_parser *p);

void vt_proto_meta_rx_init(struct vt_proto_meta_rx *rx, uint64_t limit);
int vt_proto_meta_rx_add(struct vt_proto_meta_rx *rx, const struct vt_proto_meta_chunk *chunk);
void vt_proto_meta_rx_release(struct vt_proto_meta_rx *rx);

int vt_proto_write_all(int fd, const void *buf, size_t len, int timeout_ms);

#endif
