// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One guest's agent, driven over its control port as a state machine.
 *
 * Nothing here waits. A request is sent with a continuation and a timer
 * (struct guest_req); the engine calls back when the control port has a
 * message, when the port can take queued bytes, or when a timer fires.
 * Setup is a list of steps (hello, configure, meta, streams, clock sync,
 * start), each one request; a clock probe burst is a chain of probes, each
 * sent when the last reply came. So every guest moves at its own pace: a
 * slow, silent or hostile guest delays only itself, and its timeouts are
 * its own. The stop is the same: STOP, then STOPPED, the last STATS and
 * every byte the agent says it sent, then a final clock sync, the metadata
 * again and BYE, bounded by --stop-timeout.
 *
 * Whatever the guest sends is checked by the codec; strings are sanitised
 * before they are logged or stored, and a guest that misbehaves is failed
 * alone: its pages received so far stay in the spool and the others carry
 * on.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "collect.h"
#include "engine.h"
#include "hostrec.h"
#include "kcache.h"
#include "lastboot-file.h"
#include "live.h"
#include "qmp.h"
#include "record.h"
#include "session.h"
#include "stream.h"
#include "sync.h"
#include "text.h"
#include "store/spool.h"
#include "vt_conn.h"

#define REQ_TIMEOUT_NS		(15 * NSEC_PER_SEC)
#define META_TIMEOUT_NS		(120 * NSEC_PER_SEC)
#define PROBE_TIMEOUT_NS	(2 * NSEC_PER_SEC)
/*
 * A vCPU's burst ends early, after at least BURST_MIN_PROBES replies, once
 * BURST_PATIENCE replies in a row did not narrow the offsets the burst
 * allows (the bound is half their width), and every probe costs the guest a
 * busy poll. Replies that leave no offset (a drift to fit) never end it early.
 */
#define BURST_MIN_PROBES	16
#define BURST_PATIENCE		16
/*
 * A reply narrows them when it takes more than 1/BURST_NARROW_PART of their
 * width off: replies all held alike (a guest answering each probe 30 ms
 * late) shave a few ns off a 30 ms width at every new fastest return, which
 * moves the bound by nothing, and used to keep such a burst going to
 * --sync-probes.
 */
#define BURST_NARROW_PART	64
/*
 * The final sync (at the stop) has a few seconds of its own, apart from the
 * delivery of pages: past them the burst ends with the replies it has, so a
 * guest slow to answer probes never holds a stop whose pages are in.
 */
#define FINAL_SYNC_NS		(3 * NSEC_PER_SEC)
/*
 * A stop that came while the full metadata (asked for after START) was on
 * its way waits for it this long at most (or half of --stop-timeout, if
 * less), as the final sync does: the guest controls the answer, and one
 * Ctrl-C must not wait for META_TIMEOUT_NS. Past it the bundle is abandoned
 * (the setup's is written) and STOP is sent.
 */
#define DEFERRED_STOP_NS	FINAL_SYNC_NS

static uint64_t deferred_stop_ns(const struct guest *g)
{
	uint64_t half = (uint64_t)(g->rec->o->stop_timeout * NSEC_PER_SEC) / 2;

	return half < DEFERRED_STOP_NS ? half : DEFERRED_STOP_NS;
}
/*
 * A reply that took this many times the vCPU's best round trip so far (and
 * more than SLOW_RTT_FLOOR_NS) cannot narrow the bound that one gave: a
 * burst after the start's ends at once, the vCPUs left keep their epochs.
 * The floor is far above a busy host's scheduling delays (a 5 ms floor cut a
 * good guest's stop burst on a loaded host, and its vCPU kept the start's
 * epoch), and far below a guest that holds each reply for seconds.
 */
#define SLOW_RTT_FACTOR		100
#define SLOW_RTT_FLOOR_NS	(250 * NSEC_PER_MSEC)
/* After QMP RESET, until QEMU's TSC writes (a few ms) and the ports' last bytes are in. */
#define RESET_GRACE_NS		(500 * NSEC_PER_MSEC)
#define ACCEPT_TIMEOUT_NS	(120 * NSEC_PER_SEC)
#define DRAIN_CHECK_NS		(20 * NSEC_PER_MSEC)
#define META_LIMIT		(128ull << 20)
#define MAX_PROTOCOL_ERRORS	64
/* --incoming: how long the guest may take to arrive and its agent to answer. */
#define INCOMING_TIMEOUT_NS	(600 * NSEC_PER_SEC)
/*
 * A guest that migrated out: its ports are read until nothing came for this
 * long (the source QEMU is stopped; what it still delivers is in its
 * chardevs already).
 */
#define MIGRATED_QUIET_NS	(500 * NSEC_PER_MSEC)
/*
 * --incoming: a vCPU the takeover's probes left without a clock epoch (under
 * TCG the first answers after a migration can come seconds late) is probed
 * again this soon, a few times, so that the events around the takeover are
 * not mapped by an epoch measured much later.
 */
#define SYNC_RETRY_NS		NSEC_PER_SEC
#define SYNC_RETRIES		5

/* Setup, one step after the other (g->setup.step). */
enum {
	ST_HELLO, ST_LASTBOOT, ST_INSTANCE, ST_CLOCK, ST_BUFFER, ST_TRACER, ST_EVENTS, ST_FLUSH, ST_META,
	ST_STREAMS, ST_START, ST_SYNC, ST_RUNNING,
};

static const char *const step_what[] = {
	[ST_HELLO] = "handshake", [ST_LASTBOOT] = "fetching the last boot's trace",
	[ST_INSTANCE] = "choosing the top-level buffer",
	[ST_CLOCK] = "choosing the clock", [ST_BUFFER] = "setting the buffer size",
	[ST_TRACER] = "choosing the tracer", [ST_EVENTS] = "enabling events",
	[ST_FLUSH] = "asking for partial pages (--live)",
	[ST_META] = "fetching the metadata", [ST_STREAMS] = "opening the data ports",
	[ST_SYNC] = "syncing the clock", [ST_START] = "starting", [ST_RUNNING] = "recording",
};

static const char *const state_names[] = {
	[G_NEW] = "new", [G_HELLO] = "hello", [G_CONFIG] = "configure", [G_META] = "meta",
	[G_RUNNING] = "running", [G_STOPPING] = "stopping",
	[G_DRAINING] = "draining", [G_FINISHING] = "finishing", [G_DONE] = "done",
	[G_FAILED] = "failed",
};

static void setup_next(struct guest *g);
static void stop_timeout(void *arg);
static void reset_done(void *arg);
static void listen_streams(struct guest *g);
static void burst_run(struct guest *g, const char *when, void (*done)(struct guest *g, int err));
static void migrated_check(struct guest *g);
static void take_over(struct guest *g);
static void full_meta_done(struct guest *g, int err);
static void fetch_meta(struct guest *g, uint32_t flags, void (*done)(struct guest *g, int err));
static int open_streams(struct guest *g);
static void migrated_done(struct guest *g);
static void resume_stats_done(struct guest *g);

/**
 * session_state_name() - a guest state, for messages
 * @s: the state
 *
 * Return: its name.
 */
const char *session_state_name(enum guest_state s)
{
	return s <= G_FAILED ? state_names[s] : "?";
}

/**
 * session_doing() - what a guest is doing or waiting for, in words (the
 * status line says this, not the state's name)
 * @g: the guest
 *
 * Return: a static string.
 */
const char *session_doing(const struct guest *g)
{
	switch (g->state) {
	case G_NEW:
		if (g->ctl.lfd >= 0 || g->ctl.nr_waiting)
			return "waiting for QEMU to connect to its ports";
		return g->wait.until ? "waiting for its trace ports to appear" : "opening its ports";
	case G_HELLO:
		return "waiting for trace-agent in the guest to answer";
	case G_CONFIG:
	case G_META:
		return step_what[g->setup.step < ST_RUNNING ? g->setup.step : ST_RUNNING];
	case G_RUNNING:
		return g->setup.synced ? "recording" : "recording, syncing the clock";
	case G_STOPPING:
		return "stopping: waiting for the agent to confirm";
	case G_DRAINING:
		return "stopping: receiving its last pages";
	case G_FINISHING:
		return "stopping: final clock sync and metadata";
	case G_DONE:
		return "done";
	default:
		return "failed";
	}
}

static struct engine *eng(const struct guest *g)
{
	return g->rec->e;
}

static void changed(struct guest *g)
{
	if (g->rec->changed)
		g->rec->changed(g->rec);
}

static void cancel_timers(struct guest *g)
{
	struct engine *e = eng(g);

	engine_timer_cancel(e, &g->req.timer);
	engine_timer_cancel(e, &g->burst.timer);
	engine_timer_cancel(e, &g->burst.budget);
	engine_timer_cancel(e, &g->stop.timer);
	engine_timer_cancel(e, &g->stop.drain_timer);
	engine_timer_cancel(e, &g->sync.kvm_timer);
	engine_timer_cancel(e, &g->sync.timer);
	engine_timer_cancel(e, &g->ctl.accept_timer);
	engine_timer_cancel(e, &g->wait.timer);
	engine_timer_cancel(e, &g->sync.retry_timer);
	engine_timer_cancel(e, &g->qemu.reset_timer);
	g->req.active = false;
}

static void burst_abort(struct guest *g)
{
	engine_timer_cancel(eng(g), &g->burst.timer);
	engine_timer_cancel(eng(g), &g->burst.budget);
	free(g->burst.smp);
	g->burst.smp = NULL;
	g->burst.active = false;
}

/* The control port is not read or written any more. */
static void ctl_close(struct guest *g)
{
	engine_fd_remove(g->ctl.in);
	engine_fd_remove(g->ctl.out);
	g->ctl.in = g->ctl.out = NULL;
}

/* The one summary line of what guest_log() did not print, when the guest ends. */
static void msgs_summary(struct guest *g)
{
	unsigned int k;

	if (g->msgs_summed)
		return;
	g->msgs_summed = true;
	for (k = 0; k < GMSG_NR; k++)
		if (g->figures.msgs[k] > COLLECT_LOG_BURST)
			log_warn("guest %s: %llu %s in all, %llu not shown (only the first %d of a kind "
				 "are printed)", g->name, (unsigned long long)g->figures.msgs[k],
				 collect_msg_name(k),
				 (unsigned long long)(g->figures.msgs[k] - COLLECT_LOG_BURST),
				 COLLECT_LOG_BURST);
}

/*
 * HELLO unanswered: most often there is no agent behind the port. Say what
 * the likely causes are and the commands that check them, in the guest and
 * on the host.
 */
static void hello_hints(struct guest *g)
{
	const char *d = g->link.domain[0] ? g->link.domain : NULL;

	log_err("guest %s: likely causes: trace-agent is not installed or not running in the "
		"guest, or the guest does not see the ports (a guest still booting: record "
		"--wait[=SEC]). Check in the guest:", g->name);
	log_err("guest %s:   ls /dev/virtio-ports/      # agent-ctl-path and trace-path-cpu0.."
		"cpuN-1 must be there", g->name);
	log_err("guest %s:   systemctl status trace-agent   # started by udev "
		"(90-trace-agent.rules) when agent-ctl-path appears; `udevadm trigger "
		"--subsystem-match=virtio-ports --action=add` starts it after an install", g->name);
	log_err("guest %s:   journalctl -u trace-agent      # or, without systemd: trace-agent "
		"--verbose", g->name);
	if (d)
		log_err("guest %s: and on the host: virtio-trace-collect list   # the ports and "
			"whether an agent answers; `setup --domain %s --apply --live` hot-plugs "
			"missing ports", g->name, d);
	else
		log_err("guest %s: and on the host: virtio-trace-collect list   # the ports and "
			"whether an agent answers; `setup --qmp SOCKET --hotplug` hot-plugs "
			"missing ports", g->name);
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
	bool talked;
	va_list ap;

	if (g->state == G_FAILED || g->state == G_DONE)
		return;
	va_start(ap, fmt);
	vsnprintf(g->figures.error, sizeof(g->figures.error), fmt, ap);
	va_end(ap);
	/* A refusal ends the run when no guest takes the command line (record.c). */
	log_err("guest %s: %s; dropping this guest%s", g->name, g->figures.error,
		g->setup.refused ? "" : ", the others continue");
	if (g->setup.hello_timed_out)
		hello_hints(g);
	msgs_summary(g);
	/* A guest that migrated away is not there to hear a BYE: its agent serves the next host. */
	talked = g->ctl.conn && g->state > G_NEW && !g->mig.out;
	/* --incoming before the takeover: the session is another host's, a BYE would end it. */
	if (g->mig.incoming && !g->mig.seen.resumed)
		talked = false;
	g->state = G_FAILED;
	for (i = 0; i < g->nr_streams; i++)
		g->streams[i].closed = true;
	if (g->rec) {
		cancel_timers(g);
		burst_abort(g);
		ctl_close(g);
		/* Offset writes up to now (a reset's too) are kept. */
		sync_kvm_end(g);
	}
	/*
	 * Best effort, never waited for: BYE lets the agent put tracefs back
	 * and end its session (with --once, exit) instead of tracing on.
	 */
	if (talked)
		vt_conn_send(g->ctl.conn, vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
							 VT_PROTO_BYE, vt_conn_next_seq(g->ctl.conn)));
	if (g->spool[0])
		spool_save_state(g);
	if (g->rec && g->rec->live) {
		/* Its pages received so far are shown as its file will have them: hold the view no more. */
		live_clock(g->rec->live, g->live_idx, g->sync.cpus,
			   g->agent.nr_cpus < COLLECT_MAX_CPUS ? g->agent.nr_cpus : COLLECT_MAX_CPUS,
			   g->sync.head.host_end);
		live_meta(g->rec->live, g->live_idx);
	}
	if (g->rec)
		changed(g);
}

/* A control message, marked in the host trace (sent ones before they leave). */
static void conn_hook(void *arg, bool tx, uint16_t type, uint32_t seq)
{
	struct guest *g = arg;
	char text[128];

	if (!g->rec || !g->rec->host || type == VT_PROTO_SYNC_PROBE || type == VT_PROTO_SYNC_REPLY)
		return;
	if (vt_proto_marker(text, sizeof(text), tx, type, seq) > 0)
		hostrec_marker(g->rec->host, text);
}

/* Queue a frame the encoder left in the connection's buffer; the port takes it when it can. */
static int send_frame(struct guest *g, int len)
{
	int ret;

	if (g->state == G_FAILED)
		return -ECONNRESET;
	ret = vt_conn_send(g->ctl.conn, len);
	if (ret < 0) {
		session_fail(g, "cannot write to the control port: %s", strerror(-ret));
		return ret;
	}
	engine_fd_enable(g->ctl.out, vt_conn_want_write(g->ctl.conn));
	return 0;
}

static bool ctl_writable(void *arg, int revents)
{
	struct guest *g = arg;
	int ret;

	(void)revents;
	ret = vt_conn_flush(g->ctl.conn);
	if (ret < 0) {
		session_fail(g, "cannot write to the control port: %s", strerror(-ret));
		return false;
	}
	engine_fd_enable(g->ctl.out, ret > 0);
	return true;
}

static void req_timeout(void *arg)
{
	struct guest *g = arg;

	if (g->mig.incoming && !g->mig.seen.resumed && g->req.type == VT_PROTO_HELLO) {
		session_fail(g, "--incoming: no agent answered within %llu s: did the guest arrive "
			     "(QMP MIGRATION completed on this host)?",
			     (unsigned long long)(g->req.timeout_ns / NSEC_PER_SEC));
		return;
	}
	if (g->req.type == VT_PROTO_HELLO) {
		g->setup.hello_timed_out = true;	/* session_fail() adds hello_hints() */
		session_fail(g, "trace-agent did not answer (HELLO) within %.0f s",
			     g->req.timeout_ns / 1e9);
		return;
	}
	session_fail(g, "no answer to %s within %llu s", vt_proto_type_name(g->req.type),
		     (unsigned long long)(g->req.timeout_ns / NSEC_PER_SEC));
}

/*
 * How long a request may go unanswered. HELLO, with --incoming, as long as a
 * migration may take; with --wait, as long as the wait lasts (a guest still booting, or an agent that starts when its port
 * is hot-plugged): the collector's HELLO waits in the port until an agent
 * reads it. 0: for ever.
 */
static uint64_t req_timeout_ns(const struct guest *g, uint16_t want)
{
	uint64_t now = engine_now_ns();

	if (want == VT_PROTO_META)
		return META_TIMEOUT_NS;
	/* --incoming: the HELLO waits in the port until the guest arrives. */
	if (g->mig.incoming && !g->mig.seen.resumed && want == VT_PROTO_HELLO_REPLY)
		return INCOMING_TIMEOUT_NS;
	if (want != VT_PROTO_HELLO_REPLY || !g->wait.until)
		return REQ_TIMEOUT_NS;
	if (g->wait.until == UINT64_MAX)
		return 0;
	return g->wait.until > now + REQ_TIMEOUT_NS ? g->wait.until - now : REQ_TIMEOUT_NS;
}

/*
 * Send the request the encoder left in the frame buffer; @done gets 0 or
 * -errno when the answer (@want: OK, HELLO_REPLY, or the whole META bundle)
 * or a matching ERROR comes. No answer in time fails the guest.
 */
static int request(struct guest *g, int len, uint16_t want, void (*done)(struct guest *g, int err))
{
	struct vt_proto_msg m;

	if (len < 0 || vt_proto_hdr_decode(vt_conn_frame(g->ctl.conn), len, &m) < 0) {
		session_fail(g, "cannot encode a request (%s)", strerror(len < 0 ? -len : EINVAL));
		return len < 0 ? len : -EINVAL;
	}
	g->req.active = true;
	g->req.seq = m.seq;
	g->req.type = m.type;
	g->req.want = want;
	g->req.done = done;
	g->reply_text[0] = '\0';
	g->req.sent_ns = engine_now_ns();
	g->req.timeout_ns = req_timeout_ns(g, want);
	if (g->req.timeout_ns)
		engine_timer_arm(eng(g), &g->req.timer, g->req.timeout_ns, 0);
	if (want == VT_PROTO_HELLO_REPLY && g->wait.until && !g->mig.incoming)
		log_info("guest %s: waiting for trace-agent to answer%s", g->name,
			 g->req.timeout_ns ? "" : " (no time limit: Ctrl-C ends)");
	return send_frame(g, len);
}

static void req_complete(struct guest *g, int err)
{
	if (!g->req.active)
		return;
	g->req.active = false;
	engine_timer_cancel(eng(g), &g->req.timer);
	log_debug("guest %s: %s answered in %.1f ms%s", g->name, vt_proto_type_name(g->req.type),
		  (engine_now_ns() - g->req.sent_ns) / 1e6, err < 0 ? " (an error)" : "");
	g->req.done(g, err);
}

static void protocol_error(struct guest *g, const char *what)
{
	g->figures.protocol_errors++;
	if (g->figures.protocol_errors == 1)
		log_warn("guest %s: %s (further protocol errors are only counted)", g->name, what);
	if (g->figures.protocol_errors > MAX_PROTOCOL_ERRORS)
		session_fail(g, "more than %d protocol errors on the control port", MAX_PROTOCOL_ERRORS);
}

static bool drained(const struct guest *g)
{
	unsigned int i;

	for (i = 0; i < g->nr_streams; i++) {
		const struct stream *s = &g->streams[i];

		if (s->eof || s->closed)
			continue;
		/* A stream taken over (--incoming) stands where its resume mark says. */
		if (g->mig.seen.resumed && !s->marked)
			return false;
		if (s->bytes_session + s->resume_base < g->stats.bytes[s->cpu])
			return false;
	}
	return true;
}

static void finish(struct guest *g);

/* Stopping: STOPPED, the last STATS and every byte the agent reported sent. */
static void check_drained(struct guest *g)
{
	unsigned int i;

	if (g->state != G_STOPPING && g->state != G_DRAINING)
		return;
	if (g->stop.seen && g->state == G_STOPPING)
		g->state = G_DRAINING;
	if (!(g->stop.seen && g->stats.last && drained(g)))
		return;
	engine_timer_cancel(eng(g), &g->stop.drain_timer);
	log_debug("guest %s: every byte in %.1f ms after STOP", g->name,
		  (engine_now_ns() - g->stop.sent_ns) / 1e6);
	for (i = 0; i < g->nr_streams; i++) {
		struct stream *s = &g->streams[i];

		if (s->bytes_session + s->resume_base > g->stats.bytes[s->cpu])
			log_warn("%s: received %llu bytes, the agent reports %llu", s->label,
				 (unsigned long long)(s->bytes_session + s->resume_base),
				 (unsigned long long)g->stats.bytes[s->cpu]);
	}
	finish(g);
}

static void drain_tick(void *arg)
{
	struct guest *g = arg;

	if (g->mig.out)
		migrated_check(g);
	else
		check_drained(g);
}

static void got_stats(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_stats st;

	if (vt_proto_dec_stats(m, &st) < 0) {
		protocol_error(g, "malformed STATS");
		return;
	}
	if (st.cpu == VT_PROTO_CPU_ALL) {
		if (st.flags & VT_PROTO_STATS_LAST) {
			g->stats.last = true;
			resume_stats_done(g);
			check_drained(g);
		}
		return;
	}
	if (st.cpu >= g->agent.nr_cpus || st.cpu >= COLLECT_MAX_CPUS) {
		protocol_error(g, "STATS for a CPU the guest does not have");
		return;
	}
	if (!g->stats.text[st.cpu]) {
		g->stats.text[st.cpu] = malloc(VT_PROTO_MAX_TEXT);
		if (!g->stats.text[st.cpu]) {
			session_fail(g, "out of memory for its statistics");
			return;
		}
	}
	collect_sanitize(g->stats.text[st.cpu], VT_PROTO_MAX_TEXT, st.text, true);
	g->stats.bytes[st.cpu] = st.bytes;
	g->stats.pages[st.cpu] = st.pages;
}

static void got_meta(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_meta_chunk c;
	int r;

	if (!g->req.active || g->req.want != VT_PROTO_META) {
		/* Only what was asked for is buffered: a guest cannot park memory here. */
		protocol_error(g, "metadata nobody asked for");
		return;
	}
	if (vt_proto_dec_meta(m, &c) < 0) {
		session_fail(g, "malformed metadata chunk");
		return;
	}
	r = vt_proto_meta_rx_add(&g->meta.rx, &c);
	if (r == -EFBIG && c.total == VT_PROTO_META_OPEN)
		session_fail(g, "its open metadata bundle passed the %llu-byte limit at %llu bytes%s",
			     (unsigned long long)g->meta.rx.limit,
			     (unsigned long long)(c.offset + c.len),
			     g->meta.rx.limit < META_LIMIT ? " (what --max-size leaves)" : "");
	else if (r == -EFBIG)
		session_fail(g, "metadata of %llu bytes is over the %llu-byte limit%s",
			     (unsigned long long)c.total, (unsigned long long)g->meta.rx.limit,
			     g->meta.rx.limit < META_LIMIT ? " (what --max-size leaves)" : "");
	else if (r < 0)
		session_fail(g, "metadata chunks out of order or inconsistent (%s)", strerror(-r));
	else if (r == 1)
		req_complete(g, 0);
}

static void got_reply(struct guest *g, const struct vt_proto_msg *m);

/*
 * --incoming: the agent's answer to RESUME. Its STATS (what each stream
 * carried so far) follow when it records; the request is answered with the
 * last of them (resume_stats_done()).
 */
static void got_session(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_session ss;

	if (!g->req.active || g->req.want != VT_PROTO_SESSION) {
		protocol_error(g, "SESSION nobody asked for");
		return;
	}
	if (vt_proto_dec_session(m, &ss) < 0) {
		session_fail(g, "malformed SESSION");
		return;
	}
	g->mig.session_seen = true;
	g->mig.streaming = ss.flags & VT_PROTO_SESSION_STREAMING;
	if (!g->mig.streaming) {
		req_complete(g, 0);
		return;
	}
	if (ss.subbuf_size < VT_SUBBUF_MIN || ss.subbuf_size > VT_SUBBUF_MAX ||
	    (ss.subbuf_size & (ss.subbuf_size - 1)) || ss.nr_streams > g->agent.nr_cpus) {
		session_fail(g, "the agent's session has %u streams of %u-byte pages (%u CPUs)",
			     ss.nr_streams, ss.subbuf_size, g->agent.nr_cpus);
		return;
	}
	g->agent.subbuf = ss.subbuf_size;
	g->mig.seen.resume_no = ss.resume;
	g->mig.seen.nr_events = ss.nr_events;
	collect_sanitize(g->mig.seen.instance, sizeof(g->mig.seen.instance), ss.instance, false);
	if (ss.clock[0])
		collect_sanitize(g->agent.clock, sizeof(g->agent.clock), ss.clock, false);
	g->stats.last = false;
}

/* The STATS after a SESSION are in: the takeover's request is answered. */
static void resume_stats_done(struct guest *g)
{
	if (g->mig.incoming && g->mig.session_seen && g->req.active &&
	    g->req.want == VT_PROTO_SESSION)
		req_complete(g, 0);
}

static void handle(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_error e;
	const char *notice;
	uint32_t ref;
	char text[512];

	if (m->legacy) {
		protocol_error(g, "a legacy start/stop line from the guest");
		return;
	}
	/*
	 * --incoming: until the takeover, the port may bring what the agent
	 * sent the host it left (the rest of a metadata bundle, answers, the
	 * ERRORs our resync padding causes): only the takeover's own answers
	 * count, the rest is dropped unseen.
	 */
	if (g->mig.incoming && !g->mig.seen.resumed && m->type != VT_PROTO_HELLO_REPLY &&
	    m->type != VT_PROTO_SESSION && m->type != VT_PROTO_STATS && m->type != VT_PROTO_NOTICE &&
	    !(m->type == VT_PROTO_ERROR && g->req.active && vt_proto_dec_error(m, &e) == 0 &&
	      e.ref_seq == g->req.seq)) {
		g->mig.seen.ignored++;
		return;
	}
	switch (m->type) {
	case VT_PROTO_SESSION:
		got_session(g, m);
		break;
	case VT_PROTO_HELLO_REPLY:
		if (!g->req.active || g->req.want != VT_PROTO_HELLO_REPLY) {
			protocol_error(g, "HELLO_REPLY nobody asked for");
			break;
		}
		if (vt_proto_dec_hello(m, &g->hello) < 0) {
			session_fail(g, "malformed HELLO_REPLY");
			break;
		}
		collect_sanitize(g->agent.software, sizeof(g->agent.software), g->hello.software,
				 false);
		collect_sanitize(g->agent.clock, sizeof(g->agent.clock), g->hello.clock, false);
		g->hello.software = g->hello.clock = NULL;
		req_complete(g, 0);
		break;
	case VT_PROTO_OK:
		if (vt_proto_dec_ack(m, &ref) < 0)
			protocol_error(g, "malformed OK");
		else if (g->req.active && g->req.want == VT_PROTO_OK && ref == g->req.seq)
			req_complete(g, 0);
		break;
	case VT_PROTO_ERROR:
		if (vt_proto_dec_error(m, &e) < 0) {
			protocol_error(g, "malformed ERROR");
			break;
		}
		collect_sanitize(text, sizeof(text), e.text, false);
		if (g->req.active && e.ref_seq && e.ref_seq == g->req.seq) {
			snprintf(g->reply_text, sizeof(g->reply_text), "%s", text);
			req_complete(g, e.err > 0 && e.err < 4096 ? -e.err : -EPROTO);
		} else if (g->state == G_STOPPING && e.ref_seq && e.ref_seq == g->stop.seq) {
			/* E.g. an agent that restarted (the guest rebooted): no stop will come. */
			session_fail(g, "the agent refused the stop: %s", text);
		} else {
			guest_log(g, GMSG_AGENT_ERROR, L_WARN, "guest %s: agent reports: %s (%s)",
				  g->name, text, strerror(e.err));
			if (!g->figures.agent_error[0])
				snprintf(g->figures.agent_error, sizeof(g->figures.agent_error), "%s", text);
		}
		break;
	case VT_PROTO_NOTICE:
		if (vt_proto_dec_string(m, &notice) < 0) {
			protocol_error(g, "malformed NOTICE");
			break;
		}
		collect_sanitize(text, sizeof(text), notice, false);
		guest_log(g, GMSG_AGENT_NOTICE, L_WARN, "guest %s: agent: %s", g->name, text);
		if (!g->figures.agent_notice[0])
			snprintf(g->figures.agent_notice, sizeof(g->figures.agent_notice), "%s", text);
		break;
	case VT_PROTO_STATS:
		got_stats(g, m);
		break;
	case VT_PROTO_STOPPED:
		if (vt_proto_dec_ack(m, &ref) == 0 && ref == g->stop.seq) {
			g->stop.seen = true;
			log_debug("guest %s: STOPPED %.1f ms after STOP", g->name,
				  (engine_now_ns() - g->stop.sent_ns) / 1e6);
			check_drained(g);
		}
		break;
	case VT_PROTO_META:
		got_meta(g, m);
		break;
	case VT_PROTO_SYNC_REPLY:
		got_reply(g, m);
		break;
	default:
		snprintf(text, sizeof(text), "unexpected %s from the agent", vt_proto_type_name(m->type));
		protocol_error(g, text);
		break;
	}
}

/**
 * session_dispatch() - handle every complete message the connection holds
 * @g: the guest
 */
void session_dispatch(struct guest *g)
{
	struct vt_proto_msg m;
	int r;

	while (g->state != G_FAILED && (r = vt_conn_next(g->ctl.conn, &m)) != 0) {
		if (r < 0) {
			protocol_error(g, r == -EMSGSIZE ? "an oversized frame on the control port" :
						"garbage on the control port");
			continue;
		}
		handle(g, &m);
	}
}

static bool ctl_readable(void *arg, int revents)
{
	struct guest *g = arg;
	int turns, r;

	(void)revents;
	for (turns = 0; turns < 16 && g->state != G_FAILED; turns++) {
		r = vt_conn_read(g->ctl.conn);
		/* After the bytes arrived: a probe reply's t2 is never before it. */
		g->ctl.rx_tsc = sync_host_tsc();
		if (r > 0) {
			session_dispatch(g);
			continue;
		}
		if (r == -EAGAIN || r == -EINTR)
			return true;
		if (g->state != G_DONE)
			session_fail(g, r == 0 ? "the agent closed the control port" :
					    "cannot read the control port");
		return false;
	}
	return g->state != G_FAILED;
}

/* --- data streams --- */

static void stream_event(void *owner, struct stream *s, enum stream_ev ev, int err)
{
	struct guest *g = owner;

	switch (ev) {
	case STREAM_EV_ERROR:
		session_fail(g, "cannot write the spool: %s", strerror(-err));
		break;
	case STREAM_EV_LIMIT:
		log_warn("guest %s: reached --max-size (%llu of %llu bytes taken: %llu in pages, "
			 "%llu in malformed pages, %llu in fragments, %llu in metadata): stopping it",
			 g->name, (unsigned long long)g->figures.budget.used,
			 (unsigned long long)g->figures.budget.max,
			 (unsigned long long)g->figures.budget.pages,
			 (unsigned long long)g->figures.budget.bad,
			 (unsigned long long)g->figures.budget.frag,
			 (unsigned long long)g->figures.budget.meta);
		session_stop(g);
		break;
	case STREAM_EV_EOF:
		log_debug("%s: end of stream", s->label);
		check_drained(g);
		break;
	}
}

/* Serve one vCPU's port as the next stream (g->streams has room for every vCPU). */
static int add_stream(struct guest *g, unsigned int cpu, int fd)
{
	struct stream *s = &g->streams[g->nr_streams];
	char label[96];
	size_t stale;
	int ret;

	/* --incoming: what waits in the port is the guest's, from before the takeover. */
	stale = g->mig.incoming ? 0 : attach_discard_stale(fd);
	if (stale)
		log_info("guest %s cpu%u: discarded %zu stale bytes left in the port", g->name, cpu,
			 stale);
	snprintf(label, sizeof(label), "guest %s cpu%u", g->name, cpu);
	ret = stream_init(s, fd, label, cpu, g->agent.subbuf, g->spool_fd);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	s->owner = g;
	s->notify = stream_event;
	s->budget = &g->figures.budget;
	s->live = g->rec->live;
	s->live_trace = g->live_idx;
	g->nr_streams++;
	return engine_add(eng(g), s);
}

static int open_streams(struct guest *g)
{
	unsigned int cpu;
	int ret;

	g->streams = calloc(g->agent.nr_cpus, sizeof(*g->streams));
	if (!g->streams)
		return -ENOMEM;
	for (cpu = 0; cpu < g->agent.nr_cpus; cpu++) {
		int fd;

		if (g->mig.early_fds && cpu < g->link.nr_cpu_paths && g->mig.early_fds[cpu] >= 0) {
			fd = g->mig.early_fds[cpu];
			g->mig.early_fds[cpu] = -1;
			ret = 0;
		} else {
			ret = attach_open_data(g, cpu, &fd);
		}
		if (ret == -ENOENT) {
			log_warn("guest %s: vCPU %u has no data port: its events are not recorded",
				 g->name, cpu);
			continue;
		}
		if (ret < 0) {
			session_fail(g, "cannot open the data port of vCPU %u: %s", cpu, strerror(-ret));
			return ret;
		}
		ret = add_stream(g, cpu, fd);
		if (ret < 0)
			return ret;
	}
	return g->nr_streams ? 0 : -ENOENT;
}

/*
 * A connection to a --listen port (attach.c): the first one allowed is the
 * guest's (0, @fd set); a peer not allowed, or any connection once the port
 * is @taken, is refused and logged. Return: 0, -EAGAIN (none waits), -errno.
 */
static int take_connection(struct guest *g, int lfd, const char *path, bool taken, int *fd)
{
	char who[160];
	int turns, ret = -EAGAIN, peer = -1;

	for (turns = 0; turns < 16; turns++) {
		ret = taken ? attach_refuse(lfd, &peer, who, sizeof(who)) :
			      attach_accept(lfd, g->rec->o, &peer, who, sizeof(who));
		if (ret == 0 && !taken)
			*fd = peer;
		if (ret != -EPERM && !(taken && ret == 0))
			return ret;
		guest_log(g, GMSG_REFUSED, L_WARN, "guest %s: refused a %s to %s from %s: %s",
			  g->name, taken ? "second connection" : "connection", path, who,
			  taken ? "the port is taken" :
			  "not root, this user, --listen-uid or a member of --listen-group");
		/* Closed once logged: the peer sees its end after the line (test-collect-listen). */
		close(peer);
		ret = -EAGAIN;
	}
	return ret;
}

/* --listen: a data port QEMU connected to; later connections are refused. */
static bool port_acceptable(void *arg, int revents)
{
	struct guest_port *p = arg;
	struct guest *g = p->g;
	int fd, ret;

	(void)revents;
	if (g->state == G_FAILED)
		return false;
	ret = take_connection(g, p->lfd, p->base, p->taken, &fd);
	if (ret == -EAGAIN)
		return true;
	if (ret < 0 && p->taken)
		return false;
	p->taken = true;
	if (ret < 0) {
		session_fail(g, "cannot accept QEMU's connection on %s: %s", p->base, strerror(-ret));
		return false;
	}
	ret = add_stream(g, p->cpu, fd);
	if (ret < 0) {
		session_fail(g, "cannot serve the data port of vCPU %u: %s", p->cpu, strerror(-ret));
		return false;
	}
	if (--g->ctl.nr_waiting == 0 && g->setup.step == ST_STREAMS) {
		engine_timer_cancel(eng(g), &g->ctl.accept_timer);
		spool_save_state(g);
		g->setup.step++;
		setup_next(g);
	}
	return true;
}

static void listen_streams(struct guest *g)
{
	unsigned int cpu;

	g->streams = calloc(g->agent.nr_cpus, sizeof(*g->streams));
	g->ctl.ports = calloc(g->agent.nr_cpus, sizeof(*g->ctl.ports));
	if (!g->streams || !g->ctl.ports) {
		session_fail(g, "out of memory");
		return;
	}
	for (cpu = 0; cpu < g->agent.nr_cpus; cpu++) {
		struct guest_port *p = &g->ctl.ports[cpu];

		p->g = g;
		p->cpu = cpu;
		p->lfd = -1;
		if (attach_data_path(g, cpu, p->base, sizeof(p->base)) < 0)
			continue;
		p->lfd = attach_listen(p->base, g->rec->o);
		if (p->lfd < 0) {
			session_fail(g, "cannot listen on %s: %s", p->base, strerror(-p->lfd));
			return;
		}
		p->watch = engine_add_fd(eng(g), p->lfd, POLLIN, port_acceptable, p);
		if (!p->watch) {
			session_fail(g, "out of memory");
			return;
		}
		g->ctl.nr_waiting++;
	}
	engine_timer_arm(eng(g), &g->ctl.accept_timer, ACCEPT_TIMEOUT_NS, 0);
}

/* --- metadata --- */

static void fetch_meta(struct guest *g, uint32_t flags, void (*done)(struct guest *g, int err));

/*
 * The task names of the spooled bundle (@old) that the new one (@m) lacks
 * are added to it, the new bundle's name winning for a pid both name: the
 * kernel keeps saved_cmdlines_size names (128 on 6.1) in a ring, and a guest
 * whose boot filled it lets the names of tasks that ran early in the
 * recording go while it records, which trace-cmd then shows as "<...>". The
 * bytes it adds count against --max-size; without room, the new bundle's
 * names alone are kept. Return: the names added.
 */
static unsigned int keep_names(struct guest *g, struct vt_meta *m, const struct vt_meta *old)
{
	struct vt_meta names = { 0 };
	unsigned int before = 0, after = 0;
	size_t i;

	if (!old->saved_cmdlines.len ||
	    vt_meta_merge_cmdlines(&names, m->saved_cmdlines.data, m->saved_cmdlines.len) < 0)
		return 0;
	for (i = 0; i < names.saved_cmdlines.len; i++)
		before += names.saved_cmdlines.data[i] == '\n';
	if (vt_meta_merge_cmdlines(&names, old->saved_cmdlines.data, old->saved_cmdlines.len) == 0)
		for (i = 0; i < names.saved_cmdlines.len; i++)
			after += names.saved_cmdlines.data[i] == '\n';
	if (after > before && (names.saved_cmdlines.len <= m->saved_cmdlines.len ||
	    stream_budget_take(&g->figures.budget, names.saved_cmdlines.len - m->saved_cmdlines.len,
			       &g->figures.budget.meta))) {
		struct vt_blob t = m->saved_cmdlines;

		m->saved_cmdlines = names.saved_cmdlines;
		names.saved_cmdlines = t;
	} else {
		after = before;
	}
	vt_meta_free(&names);
	return after - before;
}

/*
 * A bundle fetched again (@m: while recording, or the final one) replaces
 * the spooled one, keeping the task names only the spooled one has
 * (keep_names()); and, when @keep_ks (the final bundle came without
 * kallsyms, asked for with KALLSYMS_IF_CHANGED: no module came or went),
 * the spooled one's kallsyms.
 */
static int refresh_meta(struct guest *g, struct vt_meta *m, bool keep_ks)
{
	struct vt_meta old;
	unsigned int kept;
	void *data;
	size_t len;
	int ret;

	/* Our own file: unreadable only if something outside broke it; keep what came then. */
	ret = spool_read_file(g->spool_fd, "meta.bin", &data, &len, VT_META_MAX_TOTAL);
	if (ret < 0)
		return spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
	ret = vt_meta_decode(&old, data, len);
	free(data);
	if (ret < 0)
		return spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
	kept = keep_names(g, m, &old);
	if (kept)
		log_info("guest %s: %u task names its kernel no longer holds are kept from the "
			 "earlier metadata", g->name, kept);
	if (keep_ks) {
		free(m->kallsyms.data);	/* an empty record's */
		m->kallsyms = old.kallsyms;
		old.kallsyms = (struct vt_blob){ 0 };
	}
	vt_meta_free(&old);
	if (!kept && !keep_ks)
		return spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
	return spool_encode_meta(g->spool_fd, m);
}

/*
 * Its VM's entry in the kallsyms cache (kcache.c), named by what the host
 * knows of the VM and looked up once. Return: whether the guest has one
 * (an agent that reports no key has none).
 */
static bool cache_lookup(struct guest *g)
{
	int r;

	if (g->rec->kcache_fd < 0 || !(g->agent.caps & VT_PROTO_CAP_KALLSYMS_KEY))
		return false;
	if (g->kcache.tried)
		return g->kcache.saved.vm[0];
	g->kcache.tried = true;
	if (kcache_vm_id(&g->link, g->qemu.uuid, g->kcache.saved.vm, sizeof(g->kcache.saved.vm)) < 0) {
		snprintf(g->kcache.saved.why, sizeof(g->kcache.saved.why), "nothing the host knows tells its VM "
			 "apart (--domain, --qemu-pid, or --qmp with QEMU's -uuid): not cached");
		log_debug("guest %s: kallsyms cache: %s", g->name, g->kcache.saved.why);
		return false;
	}
	r = kcache_key(g->rec->kcache_fd, g->kcache.saved.vm, &g->kcache.key);
	if (r < 0)
		g->kcache.key = 0;
	if (r < 0 && r != -ENOENT)
		log_warn("guest %s: its VM's entry %s in the kallsyms cache is not used: %s", g->name,
			 g->kcache.saved.vm, strerror(-r));
	log_debug("guest %s: kallsyms cache entry %s (%s)", g->name, g->kcache.saved.vm,
		  g->kcache.key ? "filled" : "empty");
	return true;
}

/* A guest's kallsyms kept for its VM's next recording in this boot (kcache.c). */
static void cache_kallsyms(struct guest *g, const struct vt_meta *m)
{
	int ret;

	if (!m->kallsyms_key || !cache_lookup(g) || m->kallsyms_key == g->kcache.key)
		return;
	ret = kcache_store(g->rec->kcache_fd, g->kcache.saved.vm, m->kallsyms_key, &m->kallsyms);
	if (ret < 0) {
		log_warn("guest %s: cannot keep its kallsyms in the cache: %s", g->name, strerror(-ret));
		return;
	}
	g->kcache.key = m->kallsyms_key;
	log_debug("guest %s: kallsyms (%zu bytes) kept in the cache as %s", g->name,
		  m->kallsyms.len, g->kcache.saved.vm);
}

/*
 * The setup's bundle left kallsyms out. Its VM's cache entry has them when
 * the key the guest reported in that bundle is the entry's: compared here,
 * never sent to the guest. Then they join the spooled bundle, counted
 * against --max-size as the guest's would be. Return: true when they did.
 */
static bool kallsyms_from_cache(struct guest *g)
{
	struct vt_blob ks = { 0 };
	struct vt_meta m;
	size_t len;
	void *data;
	int ret;

	if (!cache_lookup(g) || !g->kcache.guest_key || g->kcache.guest_key != g->kcache.key)
		return false;
	ret = kcache_load(g->rec->kcache_fd, g->kcache.saved.vm, g->kcache.guest_key, &ks);
	if (ret < 0) {
		log_warn("guest %s: the cached kallsyms cannot be used (%s): asking the guest",
			 g->name, strerror(-ret));
		g->kcache.key = 0;
		return false;
	}
	if (!stream_budget_take(&g->figures.budget, ks.len, &g->figures.budget.meta)) {
		free(ks.data);
		return false;
	}
	ret = spool_read_file(g->spool_fd, "meta.bin", &data, &len, VT_META_MAX_TOTAL);
	if (ret == 0) {
		ret = vt_meta_decode(&m, data, len);
		free(data);
	}
	if (ret < 0) {
		free(ks.data);
		return false;
	}
	free(m.kallsyms.data);
	m.kallsyms = ks;
	ret = spool_encode_meta(g->spool_fd, &m);
	vt_meta_free(&m);
	if (ret < 0)
		return false;
	g->meta.full = g->kcache.saved.hit = true;
	g->kcache.held_key = g->kcache.guest_key;
	log_info("guest %s: kallsyms (%zu bytes) from the cache, not read in the guest", g->name,
		 ks.len);
	return true;
}

static void meta_received(struct guest *g, int err)
{
	void (*done)(struct guest *g, int err) = g->meta.done;
	/*
	 * A fetch while recording or at the end only refreshes what the setup
	 * spooled (a session taken over, --incoming, has spooled none yet).
	 */
	bool refresh = (g->state == G_RUNNING || g->state == G_FINISHING) && g->meta.len;
	const char *which = g->state == G_RUNNING ? "full" : "final";
	struct vt_meta m;
	int ret;

	if (err < 0 && refresh) {
		log_warn("guest %s: the agent cannot send its %s metadata: %s (%s); the metadata "
			 "of the setup is kept", g->name, which,
			 g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		done(g, 0);
		return;
	}
	if (err < 0) {
		session_fail(g, "the agent cannot send its metadata: %s (%s)",
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	ret = vt_meta_decode(&m, g->meta.rx.data, g->meta.rx.len);
	if (ret < 0) {
		session_fail(g, "the metadata bundle is malformed (%s)", strerror(-ret));
		return;
	}
	/*
	 * HELLO gives the top level's sub-buffer size; the metadata gives the
	 * size of the buffer actually recorded (an instance's own, or what
	 * --subbuf-size made it), which is what the data ports will carry.
	 * Once the streams are open it must not change.
	 */
	if (!g->nr_streams && m.subbuf_size != g->agent.subbuf && m.subbuf_size >= VT_SUBBUF_MIN &&
	    m.subbuf_size <= VT_SUBBUF_MAX && !(m.subbuf_size & (m.subbuf_size - 1))) {
		log_info("guest %s: the recorded buffer has %u-byte sub-buffers", g->name, m.subbuf_size);
		g->agent.subbuf = m.subbuf_size;
	}
	if (m.subbuf_size != g->agent.subbuf || m.nr_cpus != g->agent.nr_cpus) {
		session_fail(g, "the metadata says %u CPUs and %u-byte pages, the recording has %u and %u",
			     m.nr_cpus, m.subbuf_size, g->agent.nr_cpus, g->agent.subbuf);
		vt_meta_free(&m);
		return;
	}
	if (g->agent.caps & VT_PROTO_CAP_KALLSYMS_KEY)
		g->kcache.guest_key = m.kallsyms_key;
	/*
	 * The final bundle without kallsyms, after kallsyms came from the
	 * cache: the agent never read them this session, so only the key it
	 * reports says whether a module came or went. If one did, ask again.
	 */
	if (g->kcache.final_key_check && !m.kallsyms.len &&
	    (!m.kallsyms_key || m.kallsyms_key != g->kcache.held_key)) {
		log_info("guest %s: its kallsyms changed while it recorded: asking for them again",
			 g->name);
		g->kcache.final_key_check = false;
		vt_meta_free(&m);
		vt_proto_meta_rx_release(&g->meta.rx);
		fetch_meta(g, 0, done);
		return;
	}
	/* Metadata counts against --max-size like pages (fetch_meta() asked for no more than fits). */
	if (!stream_budget_take(&g->figures.budget, g->meta.rx.len, &g->figures.budget.meta)) {
		vt_meta_free(&m);
		vt_proto_meta_rx_release(&g->meta.rx);
		if (!refresh) {
			session_fail(g, "its metadata is over --max-size (%llu bytes)",
				     (unsigned long long)g->figures.budget.max);
			return;
		}
		log_warn("guest %s: the %s metadata is over --max-size: the metadata of the setup "
			 "is kept", g->name, which);
		done(g, 0);
		return;
	}
	if (((g->meta.req_flags & VT_PROTO_META_REQ_KALLSYMS_IF_CHANGED) || g->kcache.final_key_check) &&
	    !m.kallsyms.len) {
		ret = refresh_meta(g, &m, true);
	} else {
		ret = refresh ? refresh_meta(g, &m, false) :
			spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
		if (ret == 0)
			g->meta.full = !(g->meta.req_flags & VT_PROTO_META_REQ_NO_KALLSYMS);
		if (ret == 0 && m.kallsyms.len) {
			g->kcache.held_key = m.kallsyms_key;
			cache_kallsyms(g, &m);
		}
	}
	vt_meta_free(&m);
	g->meta.len = g->meta.rx.len;
	vt_proto_meta_rx_release(&g->meta.rx);
	if (ret < 0) {
		session_fail(g, "cannot spool the metadata: %s", strerror(-ret));
		return;
	}
	done(g, 0);
}

/*
 * Ask for the metadata bundle (@flags: VT_PROTO_META_REQ_*, for an agent
 * that takes them); @done runs once it is checked and spooled.
 */
static void fetch_meta(struct guest *g, uint32_t flags, void (*done)(struct guest *g, int err))
{
	uint64_t limit = META_LIMIT;

	/* Never more than the budget has room for: nor in memory, nor in the spool. */
	if (g->figures.budget.max) {
		uint64_t left = g->figures.budget.reached ? 0 : g->figures.budget.max - g->figures.budget.used;

		limit = left < limit ? left : limit;
	}
	if ((g->state == G_RUNNING || g->state == G_FINISHING) && !flags && limit < g->meta.len) {
		/* Metadata only grows: a refreshed bundle cannot fit. */
		log_warn("guest %s: --max-size leaves no room for the %s metadata: the metadata "
			 "of the setup is kept", g->name, g->state == G_RUNNING ? "full" : "final");
		done(g, 0);
		return;
	}
	if (!limit) {
		session_fail(g, "--max-size leaves no room for its metadata");
		return;
	}
	vt_proto_meta_rx_release(&g->meta.rx);
	vt_proto_meta_rx_init(&g->meta.rx, limit);
	g->meta.done = done;
	g->meta.req_flags = flags;
	/* An agent that can send kallsyms as it reads it never holds it whole. */
	if ((g->agent.caps & (VT_PROTO_CAP_META_FLAGS | VT_PROTO_CAP_META_OPEN)) ==
	    (VT_PROTO_CAP_META_FLAGS | VT_PROTO_CAP_META_OPEN))
		flags |= VT_PROTO_META_REQ_OPEN;
	/*
	 * Never KALLSYMS_UNLESS_KEY: a key the cache holds is never sent to a
	 * guest (kallsyms_from_cache() compares keys on the host).
	 */
	request(g, vt_proto_enc_meta_req_flags(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
					       vt_conn_next_seq(g->ctl.conn), limit, flags),
		VT_PROTO_META, meta_received);
}

/* --- clock probe bursts --- */

static void burst_cpu_begin(struct guest *g);

static void burst_ended(struct guest *g, int err);

/*
 * A probe without a reply ends this vCPU's burst with the samples it has: a
 * guest (or host) too loaded to answer in time costs clock precision, not
 * the recording. A guest that answers nothing more fails at SYNC_END's own
 * timeout.
 */
/* End this vCPU's burst now, with the replies it has. */
static void burst_end_cpu(struct guest *g)
{
	struct guest_burst *b = &g->burst;
	struct vt_proto_sync s = { .cpu = b->cpu };

	engine_timer_cancel(eng(g), &b->timer);
	b->k = b->n;		/* a late reply is ignored */
	request(g, vt_proto_enc_sync(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_SYNC_END,
				     vt_conn_next_seq(g->ctl.conn), &s), VT_PROTO_OK, burst_ended);
}

static double ticks_ms(const struct guest *g, uint64_t ticks)
{
	return g->rec->tsc.khz ? (double)ticks / g->rec->tsc.khz : 0;
}

/*
 * The burst ends early: the vCPU being probed ends with what it has, the
 * ones after it are not probed (their earlier epochs hold). The final
 * sync's reason goes to the manifest.
 */
static void burst_cut(struct guest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void burst_cut(struct guest *g, const char *fmt, ...)
{
	struct guest_burst *b = &g->burst;
	char why[sizeof(g->sync.head.final_cut)];
	va_list ap;

	b->cut = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!strcmp(b->when, "stop"))
		snprintf(g->sync.head.final_cut, sizeof(g->sync.head.final_cut), "%s", why);
	guest_log(g, GMSG_SYNC, L_WARN, "guest %s: the clock sync at %s is cut short: %s", g->name,
		  b->when, why);
}

static void burst_timeout(void *arg)
{
	struct guest *g = arg;
	struct guest_burst *b = &g->burst;

	guest_log(g, GMSG_SYNC, L_WARN, "guest %s: clock sync probe %u of vCPU %u: no reply within "
		  "%llu s: this burst ends with %u samples", g->name, b->k, b->cpu,
		  (unsigned long long)(PROBE_TIMEOUT_NS / NSEC_PER_SEC), b->got);
	burst_end_cpu(g);
}

/*
 * The final sync's time is up. A probe in flight is given up; a SYNC_BEGIN
 * or SYNC_END in flight ends the burst when it is answered (burst_begun(),
 * burst_cpu_begin()).
 */
static void burst_budget(void *arg)
{
	struct guest *g = arg;
	struct guest_burst *b = &g->burst;

	if (!b->active || b->cut)
		return;
	burst_cut(g, "its %.1f s ran out with %u of %u vCPUs probed (the slowest reply took "
		  "%.1f ms)", (engine_now_ns() - b->began_ns) / 1e9,
		  b->idx + (b->got > 0), g->nr_streams, ticks_ms(g, b->max_rtt));
	if (!b->req_pending && b->k < b->n)
		burst_end_cpu(g);
}

static void burst_probe(struct guest *g)
{
	struct vt_proto_sync s = { .cpu = g->burst.cpu, .probe = g->burst.k };
	int len = vt_proto_enc_sync(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_SYNC_PROBE,
				    vt_conn_next_seq(g->ctl.conn), &s);

	g->burst.t1 = sync_host_tsc();
	if (send_frame(g, len) < 0)
		return;
	engine_timer_arm(eng(g), &g->burst.timer, PROBE_TIMEOUT_NS, 0);
}

static void burst_ended(struct guest *g, int err)
{
	int ret;

	if (err < 0) {
		session_fail(g, "ending a clock sync burst: %s (%s)",
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	ret = g->burst.got ? sync_probe_result(g, g->burst.cpu, g->burst.smp, g->burst.got) : -EAGAIN;
	if (ret < 0 && ret != -EAGAIN) {
		session_fail(g, "cannot record the clock mapping of vCPU %u: %s", g->burst.cpu,
			     strerror(-ret));
		return;
	}
	g->burst.idx++;
	burst_cpu_begin(g);
}

/* Intersect the burst's offsets with [@lo, @hi], one reply's. */
static void narrow(struct guest_burst *b, int64_t lo, int64_t hi)
{
	uint64_t was;

	if (b->got == 1) {
		b->lo = lo;
		b->hi = hi;
		b->since_narrowed = 0;
		return;
	}
	/* Unsigned: a guest's TSC is any value, the width of its offsets any size. */
	was = b->hi > b->lo ? (uint64_t)b->hi - (uint64_t)b->lo : 0;
	b->since_narrowed++;
	if (lo > b->lo)
		b->lo = lo;
	if (hi < b->hi)
		b->hi = hi;
	/* An empty intersection goes on anyway (got_reply()). */
	if (was && b->hi >= b->lo &&
	    was - ((uint64_t)b->hi - (uint64_t)b->lo) > was / BURST_NARROW_PART)
		b->since_narrowed = 0;
}

/*
 * After the start's burst, a reply far slower than the best this vCPU (or,
 * without one, any vCPU) had cannot narrow that bound: the burst ends here.
 * Return: true when it did.
 */
static bool slow_reply(struct guest *g, const struct vt_tsync_sample *smp)
{
	struct guest_burst *b = &g->burst;
	uint64_t rtt = smp->t2 > smp->t1 ? smp->t2 - smp->t1 : 0, best = 0;
	unsigned int cpu;

	if (!strcmp(b->when, "start") || !g->rec->tsc.khz)
		return false;
	if (b->cpu < COLLECT_MAX_CPUS)
		best = g->sync.min_rtt[b->cpu];
	for (cpu = 0; !best && cpu < g->agent.nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++)
		if (g->sync.min_rtt[cpu] && (!best || g->sync.min_rtt[cpu] < best))
			best = g->sync.min_rtt[cpu];
	if (!best || rtt / SLOW_RTT_FACTOR < best ||
	    ticks_ms(g, rtt) * NSEC_PER_MSEC < SLOW_RTT_FLOOR_NS)
		return false;
	burst_cut(g, "vCPU %u answered a probe in %.1f ms, its best round trip was %.3f ms: "
		  "such replies cannot narrow the bound, the vCPUs left keep their earlier epochs",
		  b->cpu, ticks_ms(g, rtt), ticks_ms(g, best));
	burst_end_cpu(g);
	return true;
}

static void got_reply(struct guest *g, const struct vt_proto_msg *m)
{
	struct guest_burst *b = &g->burst;
	struct vt_proto_sync s;
	struct vt_tsync_sample *smp;

	/* A late reply to an abandoned probe is harmless. */
	if (vt_proto_dec_sync(m, &s) < 0 || !b->active || b->req_pending || s.cpu != b->cpu ||
	    s.probe != b->k)
		return;
	engine_timer_cancel(eng(g), &b->timer);
	smp = &b->smp[b->got++];
	smp->t1 = b->t1;
	smp->t2 = g->ctl.rx_tsc;
	smp->g = s.tsc;
	smp->cpu = s.ran_on;
	smp->want_cpu = b->cpu;
	narrow(b, (int64_t)(smp->g - smp->t2), (int64_t)(smp->g - smp->t1));
	if (smp->t2 > smp->t1 && smp->t2 - smp->t1 > b->max_rtt)
		b->max_rtt = smp->t2 - smp->t1;
	if (slow_reply(g, smp))
		return;
	if (++b->k < b->n && (b->got < BURST_MIN_PROBES || b->since_narrowed < BURST_PATIENCE ||
			      b->lo > b->hi)) {
		burst_probe(g);
		return;
	}
	if (b->k < b->n)
		log_debug("guest %s: vCPU %u: %u probes, the last %u narrowed nothing", g->name, b->cpu,
			  b->got, b->since_narrowed);
	burst_end_cpu(g);
}

static void burst_begun(struct guest *g, int err)
{
	g->burst.req_pending = false;
	if (err < 0) {
		session_fail(g, "starting a clock sync burst: %s (%s)",
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	if (g->burst.cut) {
		burst_end_cpu(g);
		return;
	}
	burst_probe(g);
}

/* The next vCPU's burst, or the end of the whole sync. */
static void burst_cpu_begin(struct guest *g)
{
	struct guest_burst *b = &g->burst;
	void (*done)(struct guest *g, int err);
	struct vt_proto_sync s;

	if (b->idx >= g->nr_streams || b->cut) {
		log_debug("guest %s: clock sync at %s done%s", g->name, b->when,
			  b->cut ? " (cut short)" : "");
		sync_burst_done(g, b->when);
		done = b->done;
		burst_abort(g);
		done(g, 0);
		return;
	}
	b->cpu = g->streams[b->idx].cpu;
	b->k = b->got = 0;
	b->req_pending = true;
	s = (struct vt_proto_sync){ .cpu = b->cpu, .probe = b->n };
	request(g, vt_proto_enc_sync(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_SYNC_BEGIN,
				     vt_conn_next_seq(g->ctl.conn), &s), VT_PROTO_OK, burst_begun);
}

/*
 * Measure or read the guest's clock mapping (sync.c decides how); @done
 * runs when it is recorded. Probes go one vCPU after the other.
 */
static void burst_run(struct guest *g, const char *when, void (*done)(struct guest *g, int err))
{
	const struct record_opts *o = g->rec->o;
	struct guest_burst *b = &g->burst;
	int ret;

	ret = sync_prepare(g, o, when);
	if (ret <= 0) {
		if (ret < 0)
			log_warn("guest %s: clock sync at %s: %s", g->name, when, strerror(-ret));
		done(g, 0);
		return;
	}
	b->smp = calloc(o->sync_probes, sizeof(*b->smp));
	if (!b->smp) {
		session_fail(g, "out of memory for clock probes");
		return;
	}
	b->active = true;
	b->when = when;
	b->done = done;
	b->idx = 0;
	b->n = o->sync_probes;
	b->cut = false;
	b->max_rtt = 0;
	b->began_ns = engine_now_ns();
	if (!strcmp(when, "stop")) {
		/* Its own time, within what --stop-timeout leaves for the rest of the stop. */
		uint64_t budget = (uint64_t)(o->stop_timeout * NSEC_PER_SEC) / 2;

		g->sync.head.final_cut[0] = '\0';
		engine_timer_arm(eng(g), &b->budget, budget < FINAL_SYNC_NS ? budget : FINAL_SYNC_NS, 0);
	}
	burst_cpu_begin(g);
}

/* A burst while recording ended: another may be due (QEMU resumed the guest meanwhile). */
static void running_burst_done(struct guest *g, int err)
{
	(void)err;
	if (g->state == G_RUNNING && g->qemu.resync) {
		g->qemu.resync = false;
		burst_run(g, "resume", running_burst_done);
	}
}

static void kvm_tick(void *arg)
{
	struct guest *g = arg;

	if (g->state == G_RUNNING)
		sync_kvm_tick(g);
}

static void sync_tick(void *arg)
{
	struct guest *g = arg;

	/* Not while QEMU migrates it: a probe lost in the switchover would fail the burst. */
	if (g->state == G_RUNNING && !g->burst.active && !g->req.active && !g->mig.migrating)
		burst_run(g, "interval", running_burst_done);
}

/* QEMU resumed the guest: its TSC offset moved, sync again. */
static void resumed(struct guest *g)
{
	if (g->state == G_RUNNING && !g->burst.active && !g->req.active) {
		g->qemu.resync = false;
		burst_run(g, "resume", running_burst_done);
	} else if (g->state < G_STOPPING) {
		g->qemu.resync = true;
	}
}

/* --- live migration, out (this host's QEMU sent the guest away) --- */

/*
 * This host's wall clock and TSC read together, and its boot: `join` relates
 * two hosts' TSCs through their wall clocks (PTP, chrony) when the two
 * recordings come from two machines.
 */
static void mig_clock(struct guest *g)
{
	struct timespec ts;
	FILE *f;

	if (g->mig.seen.rt_tsc)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	g->mig.seen.rt_tsc = sync_host_tsc();
	g->mig.seen.rt_ns = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(g->mig.seen.boot_id, sizeof(g->mig.seen.boot_id), f))
			g->mig.seen.boot_id[0] = '\0';
		g->mig.seen.boot_id[strcspn(g->mig.seen.boot_id, "\n")] = '\0';
		fclose(f);
	}
}

static uint64_t streams_bytes(const struct guest *g)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < g->nr_streams; i++)
		n += g->streams[i].bytes;
	return n;
}

/* Drained: the guest's files end here, marked "migrated out"; no STOP, no BYE. */
static void migrated_done(struct guest *g)
{
	unsigned int i;

	engine_timer_cancel(eng(g), &g->stop.drain_timer);
	engine_timer_cancel(eng(g), &g->stop.timer);
	g->mig.seen.out_tsc = sync_host_tsc();
	g->state = G_DONE;
	msgs_summary(g);
	spool_save_state(g);
	spool_save_migration(g);
	for (i = 0; i < g->nr_streams; i++)
		log_info("%s: %llu pages to the switchover, the last stamped %llu", g->streams[i].label,
			 (unsigned long long)g->streams[i].pages,
			 (unsigned long long)g->streams[i].last_ts);
	log_info("guest %s: migrated out; its files end at the switchover (join them with the "
		 "destination's recording: virtio-trace-collect join)", g->name);
	changed(g);
}

/* Nothing more came for MIGRATED_QUIET_NS: every byte the ports still had is in. */
static void migrated_check(struct guest *g)
{
	uint64_t now = engine_now_ns(), n = streams_bytes(g);

	if (n != g->mig.quiet_bytes) {
		g->mig.quiet_bytes = n;
		g->mig.quiet_since = now;
		return;
	}
	if (now - g->mig.quiet_since >= MIGRATED_QUIET_NS)
		migrated_done(g);
}

/*
 * QEMU says the migration completed: the guest runs on another host now. Its
 * agent's session goes on there (record --incoming takes it over); here the
 * ports are drained of what they still deliver, and nothing more is asked of
 * an agent that is gone.
 */
static void migrated_out(struct guest *g)
{
	struct engine *e = eng(g);
	unsigned int i;

	if (g->mig.out || session_finished(g))
		return;
	g->mig.out = true;
	g->mig.migrating = false;
	if (!g->mig.seen.completed_tsc)
		g->mig.seen.completed_tsc = sync_host_tsc();
	if (g->state < G_RUNNING) {
		session_fail(g, "it migrated to another host before its recording started");
		return;
	}
	log_info("guest %s: it migrated to another host: draining what its ports still deliver",
		 g->name);
	engine_timer_cancel(e, &g->req.timer);
	engine_timer_cancel(e, &g->sync.kvm_timer);
	engine_timer_cancel(e, &g->sync.timer);
	engine_timer_cancel(e, &g->stop.timer);
	burst_abort(g);
	g->req.active = false;
	g->stop.deferred = false;
	ctl_close(g);
	for (i = 0; i < g->nr_streams; i++)
		g->streams[i].eager = true;
	g->state = G_DRAINING;
	g->mig.quiet_bytes = streams_bytes(g);
	g->mig.quiet_since = engine_now_ns();
	engine_timer_arm(e, &g->stop.drain_timer, DRAIN_CHECK_NS, DRAIN_CHECK_NS);
	engine_timer_arm(e, &g->stop.timer, (uint64_t)(g->rec->o->stop_timeout * NSEC_PER_SEC), 0);
	qmp_query_migrate(g);	/* QEMU's downtime, for the manifest */
	spool_save_migration(g);
	changed(g);
}

/* A MIGRATION status from QMP (QEMU's words). */
static void migration_status(struct guest *g, const char *status)
{
	snprintf(g->mig.seen.status, sizeof(g->mig.seen.status), "%s", status);
	mig_clock(g);
	if (g->mig.incoming) {
		/* The destination's QEMU: the guest arrives here. */
		log_info("guest %s: incoming migration %s", g->name, status);
		if (g->spool[0])
			spool_save_migration(g);
		return;
	}
	if (!strcmp(status, "completed")) {
		migrated_out(g);
		return;
	}
	if (!strcmp(status, "failed") || !strcmp(status, "cancelled")) {
		if (g->mig.migrating) {
			g->mig.seen.failures++;
			log_warn("guest %s: its migration %s: it stays on this host, and its recording "
				 "goes on", g->name, status);
		}
		g->mig.migrating = false;
		g->mig.seen.stop_tsc = 0;
		if (g->spool[0])
			spool_save_migration(g);
		return;
	}
	if (!strcmp(status, "none") || g->mig.migrating || session_finished(g))
		return;
	g->mig.migrating = true;
	log_info("guest %s: QEMU migrates it (%s): recording on until it has left", g->name, status);
	if (g->spool[0])
		spool_save_migration(g);
}

/* What the guest's QMP socket said (qmp.c). */
static void qmp_event(struct guest *g, enum qmp_ev ev, const char *detail)
{
	switch (ev) {
	case QMP_EV_MIGRATION:
		migration_status(g, detail);
		break;
	case QMP_EV_MIGRATION_INFO:
		if (g->spool[0])
			spool_save_migration(g);
		break;
	case QMP_EV_CPUS:
		if (g->spool[0])
			spool_save_state(g);
		break;
	case QMP_EV_RESUME:
		resumed(g);
		break;
	case QMP_EV_RESET:
		/*
		 * The guest reboots: its ring buffers and its agent's session are
		 * gone. Its recording ends RESET_GRACE_NS later, once QEMU wrote the
		 * vCPUs' TSCs (their epochs are listed, not applied) and what the
		 * ports still held came in.
		 */
		if (g->qemu.reset_why[0])
			break;
		sync_reset(g, g->qemu.reset_tsc);
		snprintf(g->qemu.reset_why, sizeof(g->qemu.reset_why), "%s",
			 detail[0] ? detail : "unknown");
		engine_timer_arm(eng(g), &g->qemu.reset_timer, RESET_GRACE_NS, 0);
		break;
	}
}

/* --- setup --- */

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

static int enc_events(struct guest *g, const struct record_opts *o)
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
	return vt_proto_enc_events(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
				   vt_conn_next_seq(g->ctl.conn), VT_PROTO_EVENTS_REPLACE, list,
				   o->nr_events);
}

/*
 * An event, tracer or clock the guest's kernel does not have (the agent says
 * ENOENT, or EINVAL for a filter it refused) is most likely a mistake on the
 * command line: when no guest takes the command line, the run is a usage
 * error and keeps nothing (record.c); a guest that refuses what others take
 * is dropped alone, so that one guest cannot end the others' recording.
 */
static const char *config_refused(const struct guest *g, int err)
{
	if (err != -ENOENT && err != -EINVAL)
		return NULL;
	switch (g->setup.step) {
	case ST_EVENTS:
		return "--event";
	case ST_TRACER:
		return "--tracer";
	case ST_CLOCK:
		return g->rec->o->clock ? "--clock" : NULL;
	default:
		return NULL;
	}
}

static void step_done(struct guest *g, int err)
{
	const char *opt = err < 0 ? config_refused(g, err) : NULL;

	if (opt) {
		g->setup.refused = true;
		session_fail(g, "%s: %s", opt, g->reply_text[0] ? g->reply_text : strerror(-err));
		return;
	}
	if (err < 0) {
		session_fail(g, "%s: %s (%s)", step_what[g->setup.step],
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	g->setup.step++;
	setup_next(g);
}

/* --incoming: the metadata is in (kallsyms too): the recording goes on as any does. */
static void incoming_meta_done(struct guest *g, int err)
{
	(void)err;
	spool_save_migration(g);
	full_meta_done(g, 0);
}

/* --incoming: the takeover's burst is done: the workload may go on, the metadata comes. */
/* Whether a vCPU that streams has no clock epoch yet (probes only: KVM's are read, not measured). */
static bool epoch_missing(const struct guest *g)
{
	unsigned int i;

	if (strcmp(g->sync.head.method, "probe"))
		return false;
	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;

		if (cpu < COLLECT_MAX_CPUS && !g->sync.cpus[cpu].nr && !g->sync.away[cpu])
			return true;
	}
	return false;
}

static void retry_synced(struct guest *g, int err);

static void retry_tick(void *arg)
{
	struct guest *g = arg;

	if (g->state != G_RUNNING || !epoch_missing(g))
		return;
	if (g->burst.active || g->req.active) {
		/* The metadata on its way: probes would wait behind it. */
		engine_timer_arm(eng(g), &g->sync.retry_timer, SYNC_RETRY_NS, 0);
		return;
	}
	log_info("guest %s: a vCPU has no clock epoch since the takeover: probing again", g->name);
	burst_run(g, "interval", retry_synced);
}

static void retry_synced(struct guest *g, int err)
{
	(void)err;
	if (g->state == G_RUNNING && epoch_missing(g) && ++g->sync.retries < SYNC_RETRIES)
		engine_timer_arm(eng(g), &g->sync.retry_timer, SYNC_RETRY_NS, 0);
	running_burst_done(g, 0);
}

/* The takeover's burst is done: the workload may go on, the metadata comes. */
static void incoming_synced(struct guest *g, int err)
{
	(void)err;
	g->setup.synced = true;
	changed(g);
	if (g->state != G_RUNNING)
		return;
	if (epoch_missing(g))
		engine_timer_arm(eng(g), &g->sync.retry_timer, SYNC_RETRY_NS, 0);
	fetch_meta(g, 0, incoming_meta_done);
}

/*
 * The agent handed its session over: its ports are read at once (it has
 * been waiting for a reader since the switchover), its clock is synced at
 * once (the offset changed with the host), then the metadata is fetched.
 */
static void resume_answered(struct guest *g, int err)
{
	int ret;

	if (err < 0) {
		session_fail(g, "--incoming: the agent did not hand its session over: %s (%s)",
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	if (!g->mig.streaming) {
		log_info("guest %s: its agent records nothing: a new recording is set up", g->name);
		g->setup.step = ST_LASTBOOT;
		setup_next(g);
		return;
	}
	g->mig.seen.resumed = true;
	g->mig.seen.taken_tsc = sync_host_tsc();
	mig_clock(g);
	g->qemu.resync = false;	/* the takeover's burst is the resume's */
	log_info("guest %s: took its agent's session over (resume %llu, %u events in %s%s)",
		 g->name, (unsigned long long)g->mig.seen.resume_no, g->mig.seen.nr_events,
		 g->mig.seen.instance[0] ? "instance " : "the top-level buffer", g->mig.seen.instance);
	ret = open_streams(g);
	if (ret < 0) {
		session_fail(g, "no data port could be opened (%s)", strerror(-ret));
		return;
	}
	g->state = G_RUNNING;
	g->setup.recorded = true;
	g->setup.step = ST_RUNNING;
	log_info("guest %s: recording again, on this host", g->name);
	spool_save_state(g);
	spool_save_migration(g);
	changed(g);
	if (g->stop.deferred) {
		/* Stopped while it was taken over: what it streams now is drained, no more. */
		g->stop.deferred = false;
		session_stop(g);
		return;
	}
	burst_run(g, "resume", incoming_synced);
}

/* --incoming: ask the agent for its running session. */
static void take_over(struct guest *g)
{
	if (!(g->agent.caps & VT_PROTO_CAP_RESUME)) {
		session_fail(g, "--incoming: the agent cannot hand its session over (%s has no "
			     "RESUME)", g->agent.software);
		return;
	}
	g->mig.session_seen = false;
	request(g, vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_RESUME,
				      vt_conn_next_seq(g->ctl.conn)), VT_PROTO_SESSION, resume_answered);
}

static void hello_done(struct guest *g, int err)
{
	const struct record_opts *o = g->rec->o;
	struct record_fds fds;

	if (err < 0) {
		session_fail(g, "handshake refused: %s", g->reply_text);
		return;
	}
	g->agent.caps = g->hello.caps;
	g->agent.nr_cpus = g->hello.nr_cpus;
	g->agent.subbuf = g->hello.subbuf_size;
	if (!g->agent.nr_cpus || g->agent.nr_cpus > COLLECT_MAX_CPUS) {
		session_fail(g, "the agent reports %u CPUs (1 to %d supported)", g->agent.nr_cpus,
			     COLLECT_MAX_CPUS);
		return;
	}
	if (g->agent.subbuf < VT_SUBBUF_MIN || g->agent.subbuf > VT_SUBBUF_MAX ||
	    (g->agent.subbuf & (g->agent.subbuf - 1))) {
		session_fail(g, "the agent reports %u-byte sub-buffers", g->agent.subbuf);
		return;
	}
	log_info("guest %s: %s, %u CPUs, %u-byte pages, clock %s", g->name, g->agent.software,
		 g->agent.nr_cpus, g->agent.subbuf, g->agent.clock);
	/* Before its ports take a descriptor: a guest too big fails alone (test-collect-fdbudget). */
	if (record_fds_claim(g, &fds) < 0) {
		session_fail(g, "not recorded: its %u vCPUs need about %" PRIu64 " open files, more than "
			     "the others leave under the open-file limit of %" PRIu64 " (RLIMIT_NOFILE); "
			     "recording it too needs `ulimit -n %" PRIu64 "` (LimitNOFILE= for a service)",
			     g->agent.nr_cpus, fds.guest, fds.limit, fds.need);
		return;
	}
	if (g->mig.incoming) {
		take_over(g);
		return;
	}
	if (!(g->agent.caps & VT_PROTO_CAP_X86_TSC) && !o->clock)
		log_warn("guest %s has no x86-tsc trace clock: its timestamps cannot be mapped "
			 "exactly onto the host's", g->name);
	step_done(g, 0);
}

/* The last boot's bundle arrived, or the agent has none to give: recording goes on either way. */
static void lastboot_received(struct guest *g, int err)
{
	if (err < 0) {
		log_warn("guest %s: no last boot's trace: %s", g->name,
			 g->reply_text[0] ? g->reply_text : strerror(-err));
		vt_proto_meta_rx_release(&g->meta.rx);
	} else if (lastboot_save(g, g->rec->o) < 0) {
		return;
	}
	step_done(g, 0);
}

static void started(struct guest *g, int err)
{
	if (err < 0) {
		step_done(g, err);
		return;
	}
	g->state = G_RUNNING;
	g->setup.recorded = true;
	log_info("guest %s: recording", g->name);
	spool_save_state(g);
	g->setup.step = ST_SYNC;
	setup_next(g);
}

/* The full metadata after START came (or the setup's is kept): setup is over. */
static void full_meta_done(struct guest *g, int err)
{
	const struct record_opts *o = g->rec->o;

	(void)err;
	g->meta.partial = false;
	/* The bundle the guest's events are shown with (kallsyms, task names): the live view may start. */
	live_meta(g->rec->live, g->live_idx);
	if (g->stop.deferred) {
		g->stop.deferred = false;
		session_stop(g);
		return;
	}
	g->setup.step = ST_RUNNING;
	if (!strcmp(g->sync.head.method, "kvm"))
		engine_timer_arm(eng(g), &g->sync.kvm_timer, sync_kvm_period_ns(g), sync_kvm_period_ns(g));
	if (o->sync_interval > 0)
		engine_timer_arm(eng(g), &g->sync.timer, (uint64_t)(o->sync_interval * NSEC_PER_SEC),
				 (uint64_t)(o->sync_interval * NSEC_PER_SEC));
	spool_save_state(g);
	running_burst_done(g, 0);
}

/*
 * The clock sync after START is done: the workload may start (it would
 * have disturbed the burst), and the full metadata is fetched while it runs
 * if the setup's left kallsyms out.
 */
static void synced(struct guest *g, int err)
{
	(void)err;
	g->setup.synced = true;
	if (g->meta.partial && g->state == G_RUNNING && !kallsyms_from_cache(g))
		fetch_meta(g, 0, full_meta_done);
	else
		full_meta_done(g, 0);
	changed(g);
}

static void setup_next(struct guest *g)
{
	const struct record_opts *o = g->rec->o;
	struct vt_conn *c = g->ctl.conn;
	uint8_t *f = vt_conn_frame(c);
	const size_t F = VT_PROTO_FRAME_MAX;
	int ret;

	for (;;) {
		if (g->state == G_FAILED)
			return;
		switch (g->setup.step) {
		case ST_HELLO: {
			struct vt_proto_hello hello = {
				.rev_min = VT_PROTO_REV_MIN, .rev_max = VT_PROTO_REV_MAX,
				.caps = VT_PROTO_CAP_X86_TSC | VT_PROTO_CAP_META | VT_PROTO_CAP_SYNC_TSC |
					VT_PROTO_CAP_NOTICE,
				.clock = o->clock ? o->clock : "",
				.software = "virtio-trace-collect " PACKAGE_VERSION,
			};

			g->state = G_HELLO;
			if (g->mig.incoming) {
				/*
				 * The agent may hold the start of a frame the host it
				 * left sent just before the switchover: a frame's worth
				 * of bytes that can begin no frame ends it (as a
				 * malformed or oversized one), and the parser then
				 * resyncs on our HELLO's magic.
				 */
				memset(f, 0xff, F);
				if (send_frame(g, (int)F) < 0)
					return;
				hello.caps |= VT_PROTO_CAP_RESUME;
			}
			request(g, vt_proto_enc_hello(f, F, VT_PROTO_HELLO, vt_conn_next_seq(c), &hello),
				VT_PROTO_HELLO_REPLY, hello_done);
			return;
		}
		case ST_LASTBOOT:
			/* The previous boot's trace first, before anything in the guest changes. */
			g->state = G_CONFIG;
			if (!o->last_boot)
				break;
			if (!(g->agent.caps & VT_PROTO_CAP_LASTBOOT)) {
				log_warn("guest %s: --last-boot: the agent cannot send the last boot's "
					 "trace (an older trace-agent)", g->name);
				break;
			}
			vt_proto_meta_rx_release(&g->meta.rx);
			vt_proto_meta_rx_init(&g->meta.rx, VT_PROTO_META_MAX_TOTAL);
			request(g, vt_proto_enc_string(f, F, VT_PROTO_LASTBOOT_REQ, vt_conn_next_seq(c),
						       o->last_boot), VT_PROTO_META, lastboot_received);
			return;
		case ST_INSTANCE:
			/* The agent's own default is a private instance; the top level only when asked. */
			if (!(o->top_level || (o->tracer && !strcmp(o->tracer, "mmiotrace"))))
				break;
			request(g, vt_proto_enc_instance(f, F, vt_conn_next_seq(c), NULL), VT_PROTO_OK,
				step_done);
			return;
		case ST_CLOCK:
			/* x86-tsc where the guest has it: the one clock that maps exactly onto the host's. */
			if (!o->clock && !(g->agent.caps & VT_PROTO_CAP_X86_TSC))
				break;
			snprintf(g->agent.clock, sizeof(g->agent.clock), "%s", o->clock ? o->clock : "x86-tsc");
			request(g, vt_proto_enc_string(f, F, VT_PROTO_CLOCK, vt_conn_next_seq(c), g->agent.clock),
				VT_PROTO_OK, step_done);
			return;
		case ST_BUFFER: {
			struct vt_proto_buffer_size bs = { .size_kb = o->buffer_kb, .subbuf_kb = o->subbuf_kb };

			if (o->subbuf_kb && !(g->agent.caps & VT_PROTO_CAP_SUBBUF)) {
				session_fail(g, "--subbuf-size: the guest kernel cannot change its sub-buffer "
					     "size (no buffer_subbuf_size_kb: Linux 6.8 or later needed)");
				return;
			}
			if (!o->buffer_kb && !o->subbuf_kb)
				break;
			request(g, vt_proto_enc_buffer_size(f, F, vt_conn_next_seq(c), &bs), VT_PROTO_OK,
				step_done);
			return;
		}
		case ST_TRACER:
			if (!o->tracer)
				break;
			request(g, vt_proto_enc_string(f, F, VT_PROTO_TRACER, vt_conn_next_seq(c), o->tracer),
				VT_PROTO_OK, step_done);
			return;
		case ST_EVENTS:
			if (!o->nr_events)
				break;
			request(g, enc_events(g, o), VT_PROTO_OK, step_done);
			return;
		case ST_FLUSH:
			/* --live: partial pages too, so that a quiet guest's events show within the window. */
			if (!o->live_ms)
				break;
			if (!(g->agent.caps & VT_PROTO_CAP_FLUSH)) {
				log_warn("guest %s: its agent sends whole pages only (an older trace-agent): "
					 "its events show up live as its pages fill", g->name);
				break;
			}
			request(g, vt_proto_enc_flush(f, F, vt_conn_next_seq(c), live_flush_ms(o->live_ms)),
				VT_PROTO_OK, step_done);
			return;
		case ST_META:
			g->state = G_META;
			g->setup.accepted = true;	/* it took the command line's events, tracer and clock */
			spool_save_state(g);
			/*
			 * kallsyms (4 MB on a Debian kernel, slow to read under TCG)
			 * is not needed to start: the full bundle follows once the
			 * guest records, off the start's path.
			 */
			g->meta.partial = (g->agent.caps & VT_PROTO_CAP_META_FLAGS) != 0;
			fetch_meta(g, g->meta.partial ? VT_PROTO_META_REQ_NO_KALLSYMS : 0, step_done);
			return;
		case ST_STREAMS:
			if (g->link.listen && g->link.chardev_dir[0]) {
				listen_streams(g);	/* the step ends when QEMU connected them all */
				return;
			}
			ret = open_streams(g);
			if (ret < 0) {
				session_fail(g, "no data port could be opened (%s)", strerror(-ret));
				return;
			}
			spool_save_state(g);
			break;
		case ST_START:
			/* KVM's offsets are followed from before the guest records anything. */
			sync_kvm_begin(g, o);
			request(g, vt_proto_enc_empty(f, F, VT_PROTO_START, vt_conn_next_seq(c)),
				VT_PROTO_OK, started);
			return;
		case ST_SYNC:
			/*
			 * While recording: the burst is not on the start's path, and
			 * its epoch holds for the events before it as after it.
			 */
			burst_run(g, "start", synced);
			return;
		default:
			return;
		}
		g->setup.step++;
	}
}

/**
 * session_begin() - start driving an attached guest: its setup runs on its
 * own from here, and it starts recording when it is ready
 * @g: the guest, attached (control port open)
 *
 * Return: 0, or -errno with the guest failed.
 */
/* The control port is open: the connection, then setup. */
static int connected(struct guest *g)
{
	struct engine *e = eng(g);

	if (attach_discard_stale(g->ctl.rfd))
		log_info("guest %s: discarded stale bytes on the control port", g->name);
	g->ctl.conn = vt_conn_new(g->ctl.rfd, g->ctl.wfd);
	if (!g->ctl.conn) {
		session_fail(g, "cannot set up its control connection: %m");
		return -ENOMEM;
	}
	vt_conn_set_hook(g->ctl.conn, conn_hook, g);
	g->ctl.in = engine_add_fd(e, g->ctl.rfd, POLLIN, ctl_readable, g);
	g->ctl.out = engine_add_fd(e, g->ctl.wfd, POLLOUT, ctl_writable, g);
	if (!g->ctl.in || !g->ctl.out) {
		session_fail(g, "out of memory");
		return -ENOMEM;
	}
	g->setup.step = ST_HELLO;
	setup_next(g);
	return g->state == G_FAILED ? -ECONNRESET : 0;
}

static bool ctl_acceptable(void *arg, int revents)
{
	struct guest *g = arg;
	int fd, ret;

	(void)revents;
	if (g->state == G_FAILED)
		return false;
	ret = take_connection(g, g->ctl.lfd, g->link.ctl_path, g->ctl.taken, &fd);
	if (ret == -EAGAIN)
		return true;
	if (ret < 0 && g->ctl.taken)
		return false;
	g->ctl.taken = true;
	engine_timer_cancel(eng(g), &g->ctl.accept_timer);
	if (ret < 0) {
		session_fail(g, "cannot accept QEMU's connection on %s: %s", g->link.ctl_path, strerror(-ret));
		return false;
	}
	g->ctl.rfd = g->ctl.wfd = fd;
	connected(g);
	return true;
}

static void accept_timeout(void *arg)
{
	struct guest *g = arg;
	unsigned int i;

	if (g->ctl.lfd >= 0 && !g->ctl.taken) {
		session_fail(g, "nothing connected to %s within %llu s: start QEMU with a socket "
			     "chardev (server=off) on that path", g->link.ctl_path,
			     (unsigned long long)(ACCEPT_TIMEOUT_NS / NSEC_PER_SEC));
		return;
	}
	for (i = 0; g->ctl.ports && i < g->agent.nr_cpus; i++)
		if (g->ctl.ports[i].lfd >= 0 && !g->ctl.ports[i].taken)
			break;
	session_fail(g, "nothing connected to %s within %llu s: start QEMU with a socket "
		     "chardev (server=off) on that path", g->ctl.ports ? g->ctl.ports[i].base : "?",
		     (unsigned long long)(ACCEPT_TIMEOUT_NS / NSEC_PER_SEC));
}

/*
 * --incoming: the data ports are opened at once, before the guest arrives.
 * A socket chardev that has no reader when the destination's QEMU sends the
 * data that was under way at the switchover drops it; a FIFO keeps it.
 */
static void open_early(struct guest *g)
{
	unsigned int cpu;

	if (g->link.listen || !g->link.nr_cpu_paths)
		return;
	g->mig.early_fds = malloc(g->link.nr_cpu_paths * sizeof(int));
	if (!g->mig.early_fds)
		return;
	for (cpu = 0; cpu < g->link.nr_cpu_paths; cpu++)
		if (attach_open_data(g, cpu, &g->mig.early_fds[cpu]) < 0)
			g->mig.early_fds[cpu] = -1;
}

/**
 * session_begin() - start driving an attached guest: its setup runs on its
 * own from here, and it starts recording when it is ready
 * @g: the guest, attached (control port open, or listening for QEMU)
 *
 * Return: 0, or -errno with the guest failed.
 */
int session_begin(struct guest *g)
{
	struct engine *e = eng(g);

	engine_timer_init(&g->req.timer, req_timeout, g);
	engine_timer_init(&g->burst.timer, burst_timeout, g);
	engine_timer_init(&g->burst.budget, burst_budget, g);
	engine_timer_init(&g->stop.drain_timer, drain_tick, g);
	engine_timer_init(&g->sync.kvm_timer, kvm_tick, g);
	engine_timer_init(&g->sync.timer, sync_tick, g);
	engine_timer_init(&g->stop.timer, stop_timeout, g);
	engine_timer_init(&g->ctl.accept_timer, accept_timeout, g);
	engine_timer_init(&g->sync.retry_timer, retry_tick, g);
	engine_timer_init(&g->qemu.reset_timer, reset_done, g);
	vt_proto_meta_rx_init(&g->meta.rx, META_LIMIT);
	if (g->link.qmp_path[0])
		qmp_attach(g, e, g->rec->tsc.khz, qmp_event);
	if (g->mig.incoming) {
		open_early(g);
		/* KVM's offset writes from the guest's arrival on are epochs (sync.c, kvm_arrive()). */
		sync_kvm_begin(g, g->rec->o);
	}
	if (g->ctl.lfd < 0)
		return connected(g);
	/* --listen: QEMU connects when it can (reconnect=N); the engine waits, nobody else does. */
	if (!engine_add_fd(e, g->ctl.lfd, POLLIN, ctl_acceptable, g)) {
		session_fail(g, "out of memory");
		return -ENOMEM;
	}
	engine_timer_arm(e, &g->ctl.accept_timer, ACCEPT_TIMEOUT_NS, 0);
	return 0;
}

/* --- stop --- */

static void bye_done(struct guest *g, int err)
{
	if (err < 0)
		log_warn("guest %s: BYE refused (%s)", g->name, strerror(-err));
	engine_timer_cancel(eng(g), &g->stop.timer);
	g->state = G_DONE;
	ctl_close(g);
	msgs_summary(g);
	spool_save_state(g);
	spool_save_migration(g);
	log_info("guest %s: done", g->name);
	if (g->stop.sent_ns)
		log_debug("guest %s: done %.1f ms after STOP", g->name,
			  (engine_now_ns() - g->stop.sent_ns) / 1e6);
	changed(g);
}

static void final_meta_done(struct guest *g, int err)
{
	(void)err;
	request(g, vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_BYE,
				      vt_conn_next_seq(g->ctl.conn)), VT_PROTO_OK, bye_done);
}

static void final_sync_done(struct guest *g, int err)
{
	(void)err;
	uint32_t flags = 0;

	sync_kvm_end(g);
	if (g->stop.meta_abandoned) {
		/* It withheld the last bundle asked for: not asked again, the spooled one is kept. */
		final_meta_done(g, 0);
		return;
	}

	/*
	 * saved_cmdlines grew while tracing: the bundle is fetched again; its
	 * kallsyms only if a module came or went since the spooled whole one.
	 * Kallsyms from the cache were never read by the agent this session:
	 * the key the bundle reports tells (meta_received()).
	 */
	g->kcache.final_key_check = false;
	if (g->meta.full && (g->agent.caps & VT_PROTO_CAP_META_FLAGS)) {
		if (g->kcache.saved.hit && g->kcache.held_key && (g->agent.caps & VT_PROTO_CAP_KALLSYMS_KEY)) {
			flags = VT_PROTO_META_REQ_NO_KALLSYMS;
			g->kcache.final_key_check = true;
		} else {
			flags = VT_PROTO_META_REQ_KALLSYMS_IF_CHANGED;
		}
	}
	fetch_meta(g, flags, final_meta_done);
}

/* Everything arrived: the figures go to the spool first, then the final exchanges. */
static void finish(struct guest *g)
{
	g->state = G_FINISHING;
	spool_save_agent(g);
	burst_run(g, "stop", final_sync_done);
}

static void reset_done(void *arg)
{
	struct guest *g = arg;

	if (g->state == G_FAILED || g->state == G_DONE)
		return;
	sync_reset_settled(g);
	session_fail(g, "QEMU reset the guest (QMP RESET, reason %s): its recording ends there",
		     g->qemu.reset_why);
}

static void stop_timeout(void *arg)
{
	struct guest *g = arg;
	double t = g->rec->o->stop_timeout;

	if (g->stop.deferred && g->state == G_RUNNING && g->req.active &&
	    g->req.want == VT_PROTO_META) {
		log_warn("guest %s: the metadata bundle asked for after the start (kallsyms, task "
			 "names) did not come within %g s of the stop: abandoned, its trace is written "
			 "with the setup's bundle (%llu bytes of it had come)", g->name,
			 (double)deferred_stop_ns(g) / NSEC_PER_SEC, (unsigned long long)g->meta.rx.len);
		g->stop.deferred = false;
		g->stop.meta_abandoned = true;
		g->req.active = false;	/* its late chunks are "metadata nobody asked for" */
		engine_timer_cancel(eng(g), &g->req.timer);
		vt_proto_meta_rx_release(&g->meta.rx);
		session_stop(g);
		return;
	}
	if (g->mig.out && g->state == G_DRAINING) {
		log_warn("guest %s: its ports still delivered after %g s: ending its recording", g->name, t);
		migrated_done(g);
	} else if (g->state == G_STOPPING)
		session_fail(g, "the agent did not confirm the stop within %g s", t);
	else if (g->state == G_DRAINING) {
		char what[256] = "";
		size_t n = 0;
		unsigned int i;

		for (i = 0; i < g->nr_streams && n < sizeof(what) - 64; i++) {
			const struct stream *s = &g->streams[i];

			n += snprintf(what + n, sizeof(what) - n, "%scpu%u %llu of %llu", i ? ", " : "",
				      s->cpu, (unsigned long long)(s->bytes_session + s->resume_base),
				      (unsigned long long)g->stats.bytes[s->cpu]);
		}
		session_fail(g, "data ports delivered less than the agent reported sent within %g s (%s)",
			     t, what);
	}
	else if (g->state == G_FINISHING)
		session_fail(g, "the final clock sync, metadata and bye took longer than %g s", t);
}

/**
 * session_stop() - stop a guest: a recording one is asked to stop and drain;
 * one still in its setup is abandoned
 * @g: the guest
 */
void session_stop(struct guest *g)
{
	struct engine *e = eng(g);

	if (g->qemu.reset_why[0]) {
		/* Reset: no agent to stop; its end comes now rather than after the grace. */
		engine_timer_cancel(e, &g->qemu.reset_timer);
		reset_done(g);
		return;
	}
	if (g->state == G_RUNNING && g->req.active && g->req.want == VT_PROTO_META) {
		/* The agent sends every chunk before it reads the STOP: take them, then stop. */
		log_debug("guest %s: the stop waits for the metadata on its way (%g s at most)", g->name,
			  (double)deferred_stop_ns(g) / NSEC_PER_SEC);
		if (!g->stop.deferred)
			engine_timer_arm(e, &g->stop.timer, deferred_stop_ns(g), 0);
		g->stop.deferred = true;
		return;
	}
	if (g->state == G_RUNNING) {
		burst_abort(g);
		if (g->req.active) {
			g->req.active = false;
			engine_timer_cancel(e, &g->req.timer);
		}
		engine_timer_cancel(e, &g->sync.kvm_timer);
		engine_timer_cancel(e, &g->sync.timer);
		engine_timer_cancel(e, &g->sync.retry_timer);
		g->stop.seen = g->stats.last = false;
		if (send_frame(g, vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
						     VT_PROTO_STOP, vt_conn_next_seq(g->ctl.conn))) < 0)
			return;
		g->stop.seq = vt_conn_seq(g->ctl.conn);
		g->stop.sent_ns = engine_now_ns();
		g->state = G_STOPPING;
		for (unsigned int i = 0; i < g->nr_streams; i++)
			g->streams[i].eager = true;	/* the last bytes without a rest */
		engine_timer_arm(e, &g->stop.timer, (uint64_t)(g->rec->o->stop_timeout * NSEC_PER_SEC), 0);
		engine_timer_arm(e, &g->stop.drain_timer, DRAIN_CHECK_NS, DRAIN_CHECK_NS);
		changed(g);
		return;
	}
	if (g->state >= G_STOPPING)
		return;
	if (g->state == G_NEW && g->wait.until && !g->ctl.conn) {
		session_fail(g, "the recording ended while it waited for its trace ports");
		return;
	}
	if (g->mig.incoming && g->req.active && g->req.want == VT_PROTO_SESSION) {
		/* The agent answers RESUME at once: take the session over, then stop it. */
		log_info("guest %s: the stop waits for the takeover under way", g->name);
		g->stop.deferred = true;
		return;
	}
	/* Still setting up: it never recorded. session_fail() says bye to the agent. */
	session_fail(g, "the recording ended before its setup finished (at: %s)",
		     step_what[g->setup.step < ST_RUNNING ? g->setup.step : ST_RUNNING]);
}

/**
 * session_finished() - whether a guest is done with (done or failed)
 * @g: the guest
 *
 * Return: true when nothing more will happen to it.
 */
bool session_finished(const struct guest *g)
{
	return g->state == G_DONE || g->state == G_FAILED;
}

/**
 * session_release() - free what the session holds (after the engine stopped)
 * @g: the guest
 */
void session_release(struct guest *g)
{
	unsigned int i;

	free(g->burst.smp);
	g->burst.smp = NULL;
	sync_release(g);
	for (i = 0; g->ctl.ports && i < g->agent.nr_cpus; i++) {
		if (g->ctl.ports[i].lfd >= 0) {
			close(g->ctl.ports[i].lfd);
			unlink(g->ctl.ports[i].base);
		}
	}
	free(g->ctl.ports);
	g->ctl.ports = NULL;
	for (i = 0; g->mig.early_fds && i < g->link.nr_cpu_paths; i++)
		if (g->mig.early_fds[i] >= 0)
			close(g->mig.early_fds[i]);
	free(g->mig.early_fds);
	g->mig.early_fds = NULL;
	vt_conn_free(g->ctl.conn);
	g->ctl.conn = NULL;
	vt_proto_meta_rx_release(&g->meta.rx);
	for (i = 0; i < COLLECT_MAX_CPUS; i++) {
		free(g->stats.text[i]);
		g->stats.text[i] = NULL;
	}
}
