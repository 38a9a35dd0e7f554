// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One guest's agent, driven over its control port as a state machine.
 *
 * Nothing here waits. A request is sent with a continuation and a timer
 * (struct guest_req); the engine calls back when the control port has a
 * message, when the port can take queued bytes, or when a timer fires.
 * Setup is a table of steps (hello, configure, meta, streams, start, clock
 * sync: session-setup.c), most of them one request each; the states a guest
 * goes through are a table too (session-life.c), and every move between them
 * goes through guest_set_state(); a clock probe burst is a chain of probes, each
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
#include "recording.h"
#include "session.h"
#include "session-int.h"
#include "stream.h"
#include "sync.h"
#include "text.h"
#include "trigger-guest.h"
#include "store/spool.h"
#include "vt_conn.h"
#include "vt_stats.h"

#define REQ_TIMEOUT_NS		(15 * NSEC_PER_SEC)
#define META_TIMEOUT_NS		(120 * NSEC_PER_SEC)
#define MAX_PROTOCOL_ERRORS	64
/* --incoming: how long the guest may take to arrive and its agent to answer. */
#define INCOMING_TIMEOUT_NS	(600 * NSEC_PER_SEC)

static void resume_stats_done(struct guest *g);
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
		return sess_step_what(g->setup.step);
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

struct engine *sess_eng(const struct guest *g)
{
	return g->rec->e;
}

void sess_changed(struct guest *g)
{
	if (g->rec->changed)
		g->rec->changed(g->rec);
}

static void cancel_timers(struct guest *g)
{
	struct engine *e = sess_eng(g);

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
	engine_timer_cancel(e, &g->qemu.end_timer);
	sess_alive_end(g);
	g->req.active = false;
}

void sess_burst_abort(struct guest *g)
{
	engine_timer_cancel(sess_eng(g), &g->burst.timer);
	engine_timer_cancel(sess_eng(g), &g->burst.budget);
	free(g->burst.smp);
	g->burst.smp = NULL;
	g->burst.active = false;
}

/* The control port is not read or written any more. */
void sess_ctl_close(struct guest *g)
{
	engine_fd_remove(g->ctl.in);
	engine_fd_remove(g->ctl.out);
	g->ctl.in = g->ctl.out = NULL;
	sess_unwatch_qemu(g);	/* nothing more to end */
}

/* The one summary line of what guest_log() did not print, when the guest ends. */
void sess_msgs_summary(struct guest *g)
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
	sess_msgs_summary(g);
	/* A guest that migrated away is not there to hear a BYE: its agent serves the next host. */
	talked = g->ctl.conn && g->state > G_NEW && !g->mig.out;
	/* --incoming before the takeover: the session is another host's, a BYE would end it. */
	if (g->mig.incoming && !g->mig.seen.resumed)
		talked = false;
	guest_set_state(g, G_FAILED, g->figures.error);
	for (i = 0; i < g->nr_streams; i++)
		g->streams[i].closed = true;
	if (g->rec) {
		cancel_timers(g);
		sess_burst_abort(g);
		sess_ctl_close(g);
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
		sess_changed(g);
}

/* A control message, marked in the host trace (sent ones before they leave). */
void sess_conn_hook(void *arg, bool tx, uint16_t type, uint32_t seq)
{
	struct guest *g = arg;
	char text[128];

	if (!g->rec || !g->rec->host || type == VT_PROTO_SYNC_PROBE || type == VT_PROTO_SYNC_REPLY)
		return;
	if (vt_proto_marker(text, sizeof(text), tx, type, seq) > 0)
		hostrec_marker(g->rec->host, text);
}

/* Queue a frame the encoder left in the connection's buffer; the port takes it when it can. */
int sess_send_frame(struct guest *g, int len)
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

bool sess_ctl_writable(void *arg, int revents)
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

void sess_req_timeout(void *arg)
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
int sess_request(struct guest *g, int len, uint16_t want, void (*done)(struct guest *g, int err))
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
		engine_timer_arm(sess_eng(g), &g->req.timer, g->req.timeout_ns, 0);
	if (want == VT_PROTO_HELLO_REPLY && g->wait.until && !g->mig.incoming)
		log_info("guest %s: waiting for trace-agent to answer%s", g->name,
			 g->req.timeout_ns ? "" : " (no time limit: Ctrl-C ends)");
	return sess_send_frame(g, len);
}

static void req_complete(struct guest *g, int err)
{
	if (!g->req.active)
		return;
	g->req.active = false;
	engine_timer_cancel(sess_eng(g), &g->req.timer);
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

/* Stopping: STOPPED, the last STATS and every byte the agent reported sent. */
void sess_check_drained(struct guest *g)
{
	unsigned int i;

	if (g->state != G_STOPPING && g->state != G_DRAINING)
		return;
	if (g->stop.seen && g->state == G_STOPPING && guest_set_state(g, G_DRAINING, "STOPPED") < 0)
		return;
	if (!(g->stop.seen && g->stats.last && drained(g)))
		return;
	engine_timer_cancel(sess_eng(g), &g->stop.drain_timer);
	log_debug("guest %s: every byte in %.1f ms after STOP", g->name,
		  (engine_now_ns() - g->stop.sent_ns) / 1e6);
	for (i = 0; i < g->nr_streams; i++) {
		struct stream *s = &g->streams[i];

		if (s->bytes_session + s->resume_base > g->stats.bytes[s->cpu])
			log_warn("%s: received %llu bytes, the agent reports %llu", s->label,
				 (unsigned long long)(s->bytes_session + s->resume_base),
				 (unsigned long long)g->stats.bytes[s->cpu]);
	}
	sess_finish(g);
}

void sess_drain_tick(void *arg)
{
	struct guest *g = arg;

	if (g->mig.out)
		sess_migrated_check(g);
	else
		sess_check_drained(g);
}

/* HELLO_REPLY: the answer to the handshake, its strings kept sanitised. */
static void got_hello(struct guest *g, const struct vt_proto_msg *m)
{
	if (!g->req.active || g->req.want != VT_PROTO_HELLO_REPLY) {
		protocol_error(g, "HELLO_REPLY nobody asked for");
		return;
	}
	if (vt_proto_dec_hello(m, &g->hello) < 0) {
		session_fail(g, "malformed HELLO_REPLY");
		return;
	}
	collect_sanitize(g->agent.software, sizeof(g->agent.software), g->hello.software, false);
	collect_sanitize(g->agent.clock, sizeof(g->agent.clock), g->hello.clock, false);
	g->hello.software = g->hello.clock = NULL;
	req_complete(g, 0);
}

/*
 * The CPU time the agent says its metadata bundles took (its STATS for every
 * CPU, a newer agent's line "meta_cpu_us"): a figure for the manifest, never
 * more than the session's time so far (one thread builds the bundles).
 */
static void agent_meta_cpu(struct guest *g, const char *text)
{
	uint64_t us = vt_stats_u64(text ? text : "", "meta_cpu_us");
	uint64_t most = g->setup.connected_ns ? (engine_now_ns() - g->setup.connected_ns) / 1000 : 0;

	g->figures.meta_guest_cpu_us = us < most ? us : most;
}

static void got_stats(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_stats st;

	if (vt_proto_dec_stats(m, &st) < 0) {
		protocol_error(g, "malformed STATS");
		return;
	}
	/* A liveness check's answer (--alive-interval): not the session's figures. */
	if (sess_alive_stats(g, &st))
		return;
	if (st.cpu == VT_PROTO_CPU_ALL) {
		agent_meta_cpu(g, st.text);
		if (st.flags & VT_PROTO_STATS_LAST) {
			g->stats.last = true;
			resume_stats_done(g);
			sess_check_drained(g);
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
		got_hello(g, m);
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
		if (e.err == EPROTO && !strcmp(e.text, "send HELLO first") && g->state > G_HELLO &&
		    g->state < G_STOPPING) {
			/* Its guest rebooted or it was restarted: what it held is gone. */
			session_fail(g, "the agent restarted (it asks for HELLO again): its recording ends there");
		} else if (g->req.active && e.ref_seq && e.ref_seq == g->req.seq) {
			snprintf(g->reply_text, sizeof(g->reply_text), "%s", text);
			req_complete(g, e.err > 0 && e.err < 4096 ? -e.err : -EPROTO);
		} else if (g->state == G_STOPPING && e.ref_seq && e.ref_seq == g->stop.seq) {
			/* E.g. an agent that restarted (the guest rebooted): no stop will come. */
			session_fail(g, "the agent refused the stop: %s", text);
		} else {
			/* One answering a liveness check: the agent is there, its error is said. */
			sess_alive_refused(g, e.ref_seq);
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
			sess_check_drained(g);
		}
		break;
	case VT_PROTO_META:
		got_meta(g, m);
		break;
	case VT_PROTO_SYNC_REPLY:
		sess_got_reply(g, m);
		break;
	case VT_PROTO_TRIGGER:
		if (trig_guest_got(g, m) < 0)
			protocol_error(g, "malformed TRIGGER");
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

bool sess_ctl_readable(void *arg, int revents)
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

