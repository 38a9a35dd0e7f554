// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Driving one guest's agent over its control port.
 *
 * Requests are sent one at a time; while waiting for a reply the engine keeps
 * every data stream of every guest flowing. Messages that arrive unasked
 * (STATS, META, STOPPED, errors) are recorded as they come. Whatever the
 * guest sends is checked by the codec; strings are sanitised before they are
 * logged or stored, and a guest that misbehaves is failed alone: its pages
 * received so far stay in the spool and the others carry on.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"

#define REQ_TIMEOUT_MS		15000
#define META_TIMEOUT_MS		120000
#define META_LIMIT		(128ull << 20)
#define MAX_PROTOCOL_ERRORS	64
#define WRITE_TIMEOUT_MS	5000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/**
 * collect_sanitize() - make guest text safe to log and store
 * @dst: destination
 * @size: its size
 * @src: the text
 * @keep_newlines: keep '\n' (multi-line stats text) or turn it into a space
 *
 * Anything but printable ASCII becomes '?'.
 */
void collect_sanitize(char *dst, size_t size, const char *src, bool keep_newlines)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < size; i++) {
		unsigned char c = src[i];

		if (c == '\n' && keep_newlines)
			dst[i] = c;
		else if (c == '\n' || c == '\t')
			dst[i] = ' ';
		else
			dst[i] = c >= 0x20 && c < 0x7f ? c : '?';
	}
	if (size)
		dst[i] = '\0';
}

/**
 * collect_name_ok() - whether a guest name is usable: it becomes part of file
 * and directory names (guest-NAME.dat, .spool/guest-NAME, setup's DIR)
 * @s: the name
 *
 * Return: true for 1 to COLLECT_NAME_MAX - 1 of [A-Za-z0-9_.-], not starting
 * with '.' or '-'.
 */
bool collect_name_ok(const char *s)
{
	size_t i, len = strlen(s);

	if (!len || len >= COLLECT_NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

/**
 * session_fail() - drop a guest: log, remember why, stop reading it
 * @g: the guest
 * @fmt: printf format for the reason
 *
 * What was spooled so far is kept and written out.
 */
void session_fail(struct guest *g, const char *fmt, ...)
{
	unsigned int i;
	va_list ap;

	if (g->state == G_FAILED)
		return;
	va_start(ap, fmt);
	vsnprintf(g->error, sizeof(g->error), fmt, ap);
	va_end(ap);
	log_err("guest %s: %s; dropping this guest, the others continue", g->name, g->error);
	g->state = G_FAILED;
	for (i = 0; i < g->nr_streams; i++)
		g->streams[i].closed = true;
	if (g->spool[0])
		spool_save_state(g);
}

/**
 * session_host_marker() - mark a control message in the host trace
 * @tx: sent (true) or received
 * @type: message type
 * @seq: its sequence number
 */
void session_host_marker(bool tx, uint16_t type, uint32_t seq)
{
	char text[128];

	if (!collect_hostrec || type == VT_PROTO_SYNC_PROBE || type == VT_PROTO_SYNC_REPLY)
		return;
	if (vt_proto_marker(text, sizeof(text), tx, type, seq) > 0)
		hostrec_marker(collect_hostrec, text);
}

/**
 * session_send() - write a frame to the guest's control port and mark it
 * @g: the guest
 * @len: the frame in @g->frame (negative: the encoder's error)
 * @type: its type, for the host marker
 *
 * Return: 0 or -errno (the guest is failed).
 */
int session_send(struct guest *g, int len, uint16_t type)
{
	int ret;

	if (len < 0)
		return len;
	/* Marked before it leaves: the guest's rx marker must come after this one. */
	session_host_marker(true, type, g->seq);
	ret = vt_proto_write_all(g->ctl_wfd, g->frame, len, WRITE_TIMEOUT_MS);
	if (ret < 0) {
		session_fail(g, "cannot write to the control port: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/**
 * session_next_seq() - the sequence number for the next frame to the guest
 * @g: the guest
 *
 * Return: the number, never 0.
 */
uint32_t session_next_seq(struct guest *g)
{
	if (++g->seq == 0)
		g->seq = 1;
	return g->seq;
}

static void protocol_error(struct guest *g, const char *what)
{
	g->protocol_errors++;
	if (g->protocol_errors == 1)
		log_warn("guest %s: %s (further protocol errors are only counted)", g->name, what);
	if (g->protocol_errors > MAX_PROTOCOL_ERRORS)
		session_fail(g, "more than %d protocol errors on the control port", MAX_PROTOCOL_ERRORS);
}

static void got_stats(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_stats st;

	if (vt_proto_dec_stats(m, &st) < 0) {
		protocol_error(g, "malformed STATS");
		return;
	}
	if (st.cpu == VT_PROTO_CPU_ALL) {
		g->agent_fallbacks = st.splice_fallbacks;
		g->agent_partial_reads = st.partial_reads;
		if (st.flags & VT_PROTO_STATS_LAST)
			g->stats_last = true;
		return;
	}
	if (st.cpu >= g->nr_cpus || st.cpu >= COLLECT_MAX_CPUS) {
		protocol_error(g, "STATS for a CPU the guest does not have");
		return;
	}
	collect_sanitize(g->stats_text[st.cpu], sizeof(g->stats_text[0]), st.text, true);
	g->agent_bytes[st.cpu] = st.bytes;
	g->agent_pages[st.cpu] = st.pages;
}

static void got_meta(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_meta_chunk c;
	int r;

	if (vt_proto_dec_meta(m, &c) < 0) {
		session_fail(g, "malformed metadata chunk");
		return;
	}
	r = vt_proto_meta_rx_add(&g->meta_rx, &c);
	if (r == -EFBIG)
		session_fail(g, "metadata of %llu bytes is over the %llu-byte limit",
			     (unsigned long long)c.total, (unsigned long long)META_LIMIT);
	else if (r < 0)
		session_fail(g, "metadata chunks out of order or inconsistent (%s)", strerror(-r));
	else if (r == 1)
		g->meta_done = true;
}

static void handle(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_error e;
	uint32_t ref;
	char text[512];

	if (m->legacy) {
		protocol_error(g, "a legacy start/stop line from the guest");
		return;
	}
	session_host_marker(false, m->type, m->seq);
	switch (m->type) {
	case VT_PROTO_HELLO_REPLY:
		if (g->want_type == VT_PROTO_HELLO_REPLY) {
			if (vt_proto_dec_hello(m, &g->hello) < 0) {
				session_fail(g, "malformed HELLO_REPLY");
				return;
			}
			collect_sanitize(g->agent_software, sizeof(g->agent_software),
					 g->hello.software, false);
			collect_sanitize(g->clock, sizeof(g->clock), g->hello.clock, false);
			g->hello.software = g->hello.clock = NULL;
			g->got_reply = true;
			g->reply_err = 0;
		}
		break;
	case VT_PROTO_OK:
		if (vt_proto_dec_ack(m, &ref) < 0) {
			protocol_error(g, "malformed OK");
		} else if (ref == g->want_seq && g->want_type == VT_PROTO_OK) {
			g->got_reply = true;
			g->reply_err = 0;
		}
		break;
	case VT_PROTO_ERROR:
		if (vt_proto_dec_error(m, &e) < 0) {
			protocol_error(g, "malformed ERROR");
			break;
		}
		collect_sanitize(text, sizeof(text), e.text, false);
		if (e.ref_seq && e.ref_seq == g->want_seq) {
			g->got_reply = true;
			g->reply_err = e.err;
			snprintf(g->reply_text, sizeof(g->reply_text), "%s", text);
		} else {
			log_warn("guest %s: agent reports: %s (%s)", g->name, text, strerror(e.err));
		}
		break;
	case VT_PROTO_STATS:
		got_stats(g, m);
		break;
	case VT_PROTO_STOPPED:
		if (vt_proto_dec_ack(m, &ref) == 0 && ref == g->stop_seq)
			g->stopped_seen = true;
		break;
	case VT_PROTO_META:
		got_meta(g, m);
		break;
	case VT_PROTO_SYNC_REPLY:
		/* A late reply to an abandoned probe: harmless. */
		break;
	default:
		snprintf(text, sizeof(text), "unexpected %s from the agent", vt_proto_type_name(m->type));
		protocol_error(g, text);
		break;
	}
}

/**
 * session_feed() - hand bytes read from the control port to the parser and
 * handle every complete message
 * @g: the guest
 * @buf: bytes
 * @n: how many
 * @sync_cb: when not NULL, called for SYNC_REPLY messages before handle()
 * @arg: passed to @sync_cb
 */
void session_feed(struct guest *g, const uint8_t *buf, size_t n,
		  void (*sync_cb)(void *arg, const struct vt_proto_msg *m), void *arg)
{
	while (n && g->state != G_FAILED) {
		size_t fed = vt_proto_parser_feed(g->parser, buf, n);
		struct vt_proto_msg m;
		int r;

		buf += fed;
		n -= fed;
		while ((r = vt_proto_parser_next(g->parser, &m)) != 0 && g->state != G_FAILED) {
			if (r < 0) {
				protocol_error(g, r == -EMSGSIZE ? "an oversized frame on the control port" :
							"garbage on the control port");
				continue;
			}
			if (sync_cb && m.type == VT_PROTO_SYNC_REPLY)
				sync_cb(arg, &m);
			else
				handle(g, &m);
		}
		if (!fed && n) {
			session_fail(g, "control port parser refused input");
			return;
		}
	}
}

static bool ctl_readable(void *arg, int revents)
{
	struct guest *g = arg;
	uint8_t buf[65536];

	for (;;) {
		ssize_t n = read(g->ctl_rfd, buf, sizeof(buf));

		if (n > 0) {
			session_feed(g, buf, n, NULL, NULL);
			if (g->state == G_FAILED)
				return false;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		if (g->state != G_DONE)
			session_fail(g, n == 0 ? "the agent closed the control port" :
					    "cannot read the control port");
		return false;
	}
}

/* Send a request and pump the engine until its reply (or failure, or timeout). */
static int request(struct guest *g, struct engine *e, int len, uint16_t want, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;
	uint16_t type = len >= 8 ? (uint16_t)(g->frame[6] | g->frame[7] << 8) : 0;
	int ret;

	if (g->state == G_FAILED)
		return -ECONNRESET;
	g->want_seq = g->seq;
	g->want_type = want;
	g->got_reply = false;
	g->reply_err = 0;
	g->reply_text[0] = '\0';
	int signals = collect_signals;

	ret = session_send(g, len, type);
	if (ret < 0)
		return ret;
	while (!g->got_reply && g->state != G_FAILED) {
		if (collect_signals != signals) {
			session_fail(g, "interrupted while waiting for the answer to %s",
				     vt_proto_type_name(type));
			return -EINTR;
		}
		if (now_ms() >= end) {
			session_fail(g, "no answer to %s within %d s", vt_proto_type_name(type),
				     timeout_ms / 1000);
			return -ETIMEDOUT;
		}
		ret = engine_run(e, 50);
		if (ret < 0)
			return ret;
	}
	g->want_type = 0;
	if (g->state == G_FAILED)
		return -ECONNRESET;
	return g->reply_err ? -g->reply_err : 0;
}

/**
 * session_req_ok() - send a request whose answer is OK; fail the guest otherwise
 * @g: the guest
 * @e: the engine, pumped while waiting
 * @len: the frame in @g->frame, as an encoder returned it (negative: its error)
 * @what: for the message when it fails ("starting")
 *
 * Return: 0 or -errno.
 */
int session_req_ok(struct guest *g, struct engine *e, int len, const char *what)
{
	int ret = request(g, e, len, VT_PROTO_OK, REQ_TIMEOUT_MS);

	if (ret < 0 && g->state != G_FAILED)
		session_fail(g, "%s: %s (%s)", what, g->reply_text[0] ? g->reply_text : "refused",
			     strerror(-ret));
	return ret;
}

/* "sched", "sched:sched_switch", "sched/sched_switch", "sched:*". */
static void split_event(const char *spec, char *sys, char *ev, size_t size)
{
	const char *sep = strpbrk(spec, ":/");

	if (!sep) {
		snprintf(sys, size, "%s", spec);
		snprintf(ev, size, "*");
		return;
	}
	snprintf(sys, size, "%.*s", (int)(sep - spec), spec);
	snprintf(ev, size, "%s", sep[1] ? sep + 1 : "*");
}

static int send_events(struct guest *g, struct engine *e, const struct collect_opts *o)
{
	static char sys[COLLECT_MAX_EVENTS][VT_PROTO_MAX_NAME], ev[COLLECT_MAX_EVENTS][VT_PROTO_MAX_NAME];
	struct vt_proto_event list[COLLECT_MAX_EVENTS];
	unsigned int i;

	for (i = 0; i < o->nr_events; i++) {
		split_event(o->events[i], sys[i], ev[i], VT_PROTO_MAX_NAME);
		list[i].system = sys[i];
		list[i].event = ev[i];
		list[i].filter = o->filters[i] ? o->filters[i] : "";
	}
	return session_req_ok(g, e, vt_proto_enc_events(g->frame, sizeof(g->frame), session_next_seq(g),
						VT_PROTO_EVENTS_REPLACE, list, o->nr_events),
		      "enabling events");
}

/**
 * session_fetch_meta() - ask for the metadata bundle, check it and spool it
 * @g: the guest
 * @e: the engine
 *
 * Return: 0 or -errno (the guest is failed).
 */
int session_fetch_meta(struct guest *g, struct engine *e)
{
	long long end = now_ms() + META_TIMEOUT_MS;
	struct vt_meta m;
	int ret;

	vt_proto_meta_rx_release(&g->meta_rx);
	vt_proto_meta_rx_init(&g->meta_rx, META_LIMIT);
	g->meta_done = false;
	ret = session_send(g, vt_proto_enc_meta_req(g->frame, sizeof(g->frame), session_next_seq(g), META_LIMIT),
			 VT_PROTO_META_REQ);
	if (ret < 0)
		return ret;
	g->want_seq = g->seq;
	g->want_type = VT_PROTO_OK;	/* an ERROR naming this request ends the wait */
	g->got_reply = false;
	while (!g->meta_done && !g->got_reply && g->state != G_FAILED) {
		if (now_ms() >= end) {
			session_fail(g, "metadata did not arrive within %d s", META_TIMEOUT_MS / 1000);
			return -ETIMEDOUT;
		}
		engine_run(e, 50);
	}
	g->want_type = 0;
	if (g->state == G_FAILED)
		return -ECONNRESET;
	if (!g->meta_done) {
		session_fail(g, "the agent cannot send its metadata: %s", g->reply_text);
		return -EPROTO;
	}
	ret = vt_meta_decode(&m, g->meta_rx.data, g->meta_rx.len);
	if (ret < 0) {
		session_fail(g, "the metadata bundle is malformed (%s)", strerror(-ret));
		return ret;
	}
	/*
	 * HELLO gives the top level's sub-buffer size; the metadata gives the
	 * size of the buffer actually recorded (an instance's own, or what
	 * --subbuf-size made it), which is what the data ports will carry.
	 * Once the streams are open it must not change.
	 */
	if (!g->nr_streams && m.subbuf_size != g->subbuf && m.subbuf_size >= VT_SUBBUF_MIN &&
	    m.subbuf_size <= VT_SUBBUF_MAX && !(m.subbuf_size & (m.subbuf_size - 1))) {
		log_info("guest %s: the recorded buffer has %u-byte sub-buffers", g->name, m.subbuf_size);
		g->subbuf = m.subbuf_size;
	}
	if (m.subbuf_size != g->subbuf || m.nr_cpus != g->nr_cpus) {
		session_fail(g, "the metadata says %u CPUs and %u-byte pages, the recording has %u and %u",
			     m.nr_cpus, m.subbuf_size, g->nr_cpus, g->subbuf);
		vt_meta_free(&m);
		return -EPROTO;
	}
	vt_meta_free(&m);
	ret = spool_write_file(g->spool, "meta.bin", g->meta_rx.data, g->meta_rx.len);
	vt_proto_meta_rx_release(&g->meta_rx);
	vt_proto_meta_rx_init(&g->meta_rx, META_LIMIT);
	if (ret < 0)
		session_fail(g, "cannot spool the metadata: %s", strerror(-ret));
	return ret;
}

static int open_streams(struct guest *g, struct engine *e)
{
	unsigned int cpu;
	int ret;

	g->streams = calloc(g->nr_cpus, sizeof(*g->streams));
	if (!g->streams)
		return -ENOMEM;
	for (cpu = 0; cpu < g->nr_cpus; cpu++) {
		struct stream *s = &g->streams[g->nr_streams];
		char label[96];
		size_t stale;
		int fd;

		ret = attach_open_data(g, cpu, &fd);
		if (ret == -ENOENT) {
			log_warn("guest %s: vCPU %u has no data port: its events are not recorded",
				 g->name, cpu);
			continue;
		}
		if (ret < 0) {
			session_fail(g, "cannot open the data port of vCPU %u: %s", cpu, strerror(-ret));
			return ret;
		}
		stale = attach_discard_stale(fd);
		if (stale)
			log_info("guest %s cpu%u: discarded %zu stale bytes left in the port", g->name,
				 cpu, stale);
		snprintf(label, sizeof(label), "guest %s cpu%u", g->name, cpu);
		ret = stream_init(s, fd, label, cpu, g->subbuf, g->spool);
		if (ret < 0) {
			close(fd);
			return ret;
		}
		s->g = g;
		g->nr_streams++;
		ret = engine_add(e, s);
		if (ret < 0)
			return ret;
	}
	return g->nr_streams ? 0 : -ENOENT;
}

/**
 * session_setup() - handshake, configure the guest's tracing, fetch metadata
 * and open the data streams
 * @g: an attached guest
 * @e: the engine
 * @o: options
 *
 * Return: 0, or -errno with the guest failed and the reason logged.
 */
int session_setup(struct guest *g, struct engine *e, const struct collect_opts *o)
{
	struct vt_proto_hello hello = {
		.rev_min = VT_PROTO_REV_MIN, .rev_max = VT_PROTO_REV_MAX,
		.caps = VT_PROTO_CAP_X86_TSC | VT_PROTO_CAP_META | VT_PROTO_CAP_SYNC_TSC,
		.clock = o->clock ? o->clock : "", .software = "virtio-trace-collect " PACKAGE_VERSION,
	};
	bool top = o->top_level || (o->tracer && strcmp(o->tracer, "mmiotrace") == 0);
	int ret;

	g->parser = vt_proto_parser_new();
	if (!g->parser)
		return -ENOMEM;
	vt_proto_meta_rx_init(&g->meta_rx, META_LIMIT);
	if (attach_discard_stale(g->ctl_rfd))
		log_info("guest %s: discarded stale bytes on the control port", g->name);
	ret = engine_add_ctl(e, g->ctl_rfd, ctl_readable, g);
	if (ret < 0)
		return ret;

	ret = request(g, e, vt_proto_enc_hello(g->frame, sizeof(g->frame), VT_PROTO_HELLO,
					       session_next_seq(g), &hello), VT_PROTO_HELLO_REPLY, REQ_TIMEOUT_MS);
	if (ret < 0) {
		if (g->state != G_FAILED)
			session_fail(g, "handshake refused: %s", g->reply_text);
		return ret;
	}
	g->caps = g->hello.caps;
	g->nr_cpus = g->hello.nr_cpus;
	g->subbuf = g->hello.subbuf_size;
	if (!g->nr_cpus || g->nr_cpus > COLLECT_MAX_CPUS) {
		session_fail(g, "the agent reports %u CPUs (1 to %d supported)", g->nr_cpus,
			     COLLECT_MAX_CPUS);
		return -EPROTO;
	}
	if (g->subbuf < VT_SUBBUF_MIN || g->subbuf > VT_SUBBUF_MAX || (g->subbuf & (g->subbuf - 1))) {
		session_fail(g, "the agent reports %u-byte sub-buffers", g->subbuf);
		return -EPROTO;
	}
	log_info("guest %s: %s, %u CPUs, %u-byte pages, clock %s", g->name, g->agent_software,
		 g->nr_cpus, g->subbuf, g->clock);
	if (!(g->caps & VT_PROTO_CAP_X86_TSC) && !o->clock)
		log_warn("guest %s has no x86-tsc trace clock: its timestamps cannot be mapped "
			 "exactly onto the host's", g->name);

	/* The previous boot's trace first, before anything in the guest changes. */
	if (o->last_boot) {
		ret = lastboot_fetch(g, e, o);
		if (ret < 0)
			return ret;
	}
	/* The agent's own default is a private instance; the top level only when asked. */
	if (top) {
		ret = session_req_ok(g, e, vt_proto_enc_instance(g->frame, sizeof(g->frame),
								 session_next_seq(g), NULL),
				     "choosing the top-level buffer");
		if (ret < 0)
			return ret;
	}
	/* x86-tsc where the guest has it: the one clock that maps exactly onto the host's. */
	if (o->clock || (g->caps & VT_PROTO_CAP_X86_TSC)) {
		const char *clock = o->clock ? o->clock : "x86-tsc";

		ret = session_req_ok(g, e, vt_proto_enc_string(g->frame, sizeof(g->frame), VT_PROTO_CLOCK,
							       session_next_seq(g), clock),
				     "choosing the clock");
		if (ret < 0)
			return ret;
		snprintf(g->clock, sizeof(g->clock), "%s", clock);
	}
	if (o->subbuf_kb && !(g->caps & VT_PROTO_CAP_SUBBUF)) {
		session_fail(g, "--subbuf-size: the guest kernel cannot change its sub-buffer size "
			     "(no buffer_subbuf_size_kb: Linux 6.8 or later needed)");
		return -EOPNOTSUPP;
	}
	if (o->buffer_kb || o->subbuf_kb) {
		struct vt_proto_buffer_size bs = { .size_kb = o->buffer_kb, .subbuf_kb = o->subbuf_kb };

		ret = session_req_ok(g, e, vt_proto_enc_buffer_size(g->frame, sizeof(g->frame), session_next_seq(g),
							    &bs), "setting the buffer size");
		if (ret < 0)
			return ret;
	}
	if (o->tracer) {
		ret = session_req_ok(g, e, vt_proto_enc_string(g->frame, sizeof(g->frame), VT_PROTO_TRACER,
						       session_next_seq(g), o->tracer), "choosing the tracer");
		if (ret < 0)
			return ret;
	}
	if (o->nr_events) {
		ret = send_events(g, e, o);
		if (ret < 0)
			return ret;
	}
	ret = spool_save_state(g);
	if (ret < 0)
		return ret;
	ret = session_fetch_meta(g, e);
	if (ret < 0)
		return ret;
	ret = open_streams(g, e);
	if (ret < 0) {
		if (g->state != G_FAILED)
			session_fail(g, "no data port could be opened");
		return ret;
	}
	g->state = G_READY;
	return spool_save_state(g);
}

/**
 * session_start() - start streaming
 * @g: a ready guest
 * @e: the engine
 *
 * Return: 0 or -errno (the guest is failed).
 */
int session_start(struct guest *g, struct engine *e)
{
	unsigned int i;
	int ret;

	for (i = 0; i < g->nr_streams; i++)
		g->streams[i].bytes_session = 0;
	g->stopped_seen = g->stats_last = false;
	ret = session_req_ok(g, e, vt_proto_enc_empty(g->frame, sizeof(g->frame), VT_PROTO_START, session_next_seq(g)),
		     "starting");
	if (ret == 0)
		g->state = G_RUNNING;
	return ret;
}

/**
 * session_stop_send() - ask the agent to stop and drain (no waiting)
 * @g: a running guest
 *
 * Return: 0 or -errno.
 */
int session_stop_send(struct guest *g)
{
	int ret;

	if (g->state != G_RUNNING)
		return 0;
	ret = session_send(g, vt_proto_enc_empty(g->frame, sizeof(g->frame), VT_PROTO_STOP, session_next_seq(g)),
			 VT_PROTO_STOP);
	g->stop_seq = g->seq;
	g->state = G_STOPPING;
	return ret;
}

static bool drained(const struct guest *g)
{
	unsigned int i;

	for (i = 0; i < g->nr_streams; i++) {
		const struct stream *s = &g->streams[i];

		if (s->bytes_session < g->agent_bytes[s->cpu] && !s->eof && !s->closed)
			return false;
	}
	return true;
}

/**
 * session_stop_wait() - wait for STOPPED, the final statistics, and every byte
 * the agent says it sent
 * @g: a stopping guest
 * @e: the engine
 * @timeout_ms: how long
 *
 * Return: 0, or -ETIMEDOUT with the guest failed (its spool is kept).
 */
int session_stop_wait(struct guest *g, struct engine *e, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;
	int signals = collect_signals;
	unsigned int i;

	while (g->state == G_STOPPING && !(g->stopped_seen && g->stats_last && drained(g))) {
		if (collect_signals != signals) {
			session_fail(g, "interrupted while draining: keeping what is on disk");
			return -EINTR;
		}
		if (now_ms() >= end) {
			if (!g->stopped_seen)
				session_fail(g, "the agent did not confirm the stop within %d s",
					     timeout_ms / 1000);
			else
				session_fail(g, "data ports delivered less than the agent reported sent");
			return -ETIMEDOUT;
		}
		engine_run(e, 50);
	}
	if (g->state != G_STOPPING)
		return -ECONNRESET;
	for (i = 0; i < g->nr_streams; i++) {
		struct stream *s = &g->streams[i];

		if (s->bytes_session > g->agent_bytes[s->cpu])
			log_warn("%s: received %llu bytes, the agent reports %llu", s->label,
				 (unsigned long long)s->bytes_session,
				 (unsigned long long)g->agent_bytes[s->cpu]);
	}
	g->state = G_STOPPED;
	return 0;
}

/**
 * session_finish() - after a stop: final metadata and statistics, then bye
 * @g: a stopped guest
 * @e: the engine
 * @o: options
 *
 * Return: 0 or -errno.
 */
int session_finish(struct guest *g, struct engine *e, const struct collect_opts *o)
{
	char name[32], buf[1024];
	unsigned int i;
	int ret, n;

	/* Saved first: whatever happens next, the figures are in the spool. */
	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;

		snprintf(name, sizeof(name), "cpu%u.stats", cpu);
		spool_write_file(g->spool, name, g->stats_text[cpu], strlen(g->stats_text[cpu]));
	}
	n = snprintf(buf, sizeof(buf), "splice_fallbacks=%llu\npartial_reads=%llu\n",
		     (unsigned long long)g->agent_fallbacks,
		     (unsigned long long)g->agent_partial_reads);
	for (i = 0; i < g->nr_streams && n < (int)sizeof(buf) - 64; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "bytes%u=%llu\npages%u=%llu\n",
			      g->streams[i].cpu, (unsigned long long)g->agent_bytes[g->streams[i].cpu],
			      g->streams[i].cpu, (unsigned long long)g->agent_pages[g->streams[i].cpu]);
	spool_write_file(g->spool, "agent", buf, n);
	if (g->state == G_FAILED)
		return -ECONNRESET;
	/* saved_cmdlines grew while tracing: the metadata is fetched again. */
	ret = session_fetch_meta(g, e);
	if (ret < 0)
		return ret;
	ret = request(g, e, vt_proto_enc_empty(g->frame, sizeof(g->frame), VT_PROTO_BYE, session_next_seq(g)),
		      VT_PROTO_OK, REQ_TIMEOUT_MS);
	if (ret < 0 && g->state != G_FAILED)
		log_warn("guest %s: no answer to BYE (%s)", g->name, strerror(-ret));
	g->state = G_DONE;
	engine_remove_ctl(e, g->ctl_rfd);
	return spool_save_state(g);
}

/**
 * session_marker() - ask the agent to write a marker into the guest trace
 * @g: a running guest
 * @e: the engine
 * @text: the marker
 *
 * Return: 0 or -errno.
 */
int session_marker(struct guest *g, struct engine *e, const char *text)
{
	return session_req_ok(g, e, vt_proto_enc_string(g->frame, sizeof(g->frame), VT_PROTO_MARKER,
						session_next_seq(g), text), "writing a marker");
}
