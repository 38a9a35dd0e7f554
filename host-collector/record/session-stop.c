// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's stop (session.c's part): STOP, the last pages, a final clock
 * sync, the metadata again and BYE, bounded by --stop-timeout.
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
#include "store/spool.h"
#include "vt_conn.h"

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

static void bye_done(struct guest *g, int err)
{
	if (err < 0)
		log_warn("guest %s: BYE refused (%s)", g->name, strerror(-err));
	engine_timer_cancel(sess_eng(g), &g->stop.timer);
	if (guest_set_state(g, G_DONE, "BYE answered") < 0)
		return;
	sess_ctl_close(g);
	sess_msgs_summary(g);
	spool_save_state(g);
	spool_save_migration(g);
	log_info("guest %s: done", g->name);
	if (g->stop.sent_ns)
		log_debug("guest %s: done %.1f ms after STOP", g->name,
			  (engine_now_ns() - g->stop.sent_ns) / 1e6);
	sess_changed(g);
}

static void final_meta_done(struct guest *g, int err)
{
	(void)err;
	sess_request(g, vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_BYE,
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
	sess_fetch_meta(g, flags, final_meta_done);
}

/* Everything arrived: the figures go to the spool first, then the final exchanges. */
void sess_finish(struct guest *g)
{
	if (guest_set_state(g, G_FINISHING, "every byte in") < 0)
		return;
	spool_save_agent(g);
	sess_burst_run(g, "stop", final_sync_done);
}

void sess_reset_done(void *arg)
{
	struct guest *g = arg;

	if (g->state == G_FAILED || g->state == G_DONE)
		return;
	sync_reset_settled(g);
	session_fail(g, "QEMU reset the guest (QMP RESET, reason %s): its recording ends there",
		     g->qemu.reset_why);
}

void sess_stop_timeout(void *arg)
{
	struct guest *g = arg;
	double t = g->rec->o->stop_timeout;

	if (g->stop.deferred && g->state == G_RUNNING && g->req.active &&
	    g->req.want == VT_PROTO_META) {
		log_warn("guest %s: the metadata bundle asked for after the start (kallsyms, task "
			 "names) did not come within %g s of the stop: abandoned, its trace is written "
			 "with the setup's bundle (%llu bytes of it had come)", g->name,
			 (double)deferred_stop_ns(g) / NSEC_PER_SEC, (unsigned long long)g->meta.rx.len);
		g->stop.meta_abandoned = true;
		g->req.active = false;	/* its late chunks are "metadata nobody asked for" */
		engine_timer_cancel(sess_eng(g), &g->req.timer);
		vt_proto_meta_rx_release(&g->meta.rx);
		guest_take_deferred_stop(g);
		return;
	}
	if (g->mig.out && g->state == G_DRAINING) {
		log_warn("guest %s: its ports still delivered after %g s: ending its recording", g->name, t);
		sess_migrated_done(g);
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

/* Stopping (from running): STOP, then the drain (sess_check_drained()) within --stop-timeout. */
static void send_stop(struct guest *g)
{
	struct engine *e = sess_eng(g);

	sess_burst_abort(g);
	if (g->req.active) {
		g->req.active = false;
		engine_timer_cancel(e, &g->req.timer);
	}
	engine_timer_cancel(e, &g->sync.kvm_timer);
	engine_timer_cancel(e, &g->sync.timer);
	engine_timer_cancel(e, &g->sync.retry_timer);
	sess_alive_end(g);	/* the checks owed are answered before the STOP */
	g->stop.seen = g->stats.last = false;
	if (sess_send_frame(g, vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
					     VT_PROTO_STOP, vt_conn_next_seq(g->ctl.conn))) < 0)
		return;
	g->stop.seq = vt_conn_seq(g->ctl.conn);
	g->stop.sent_ns = engine_now_ns();
	for (unsigned int i = 0; i < g->nr_streams; i++)
		g->streams[i].eager = true;	/* the last bytes without a rest */
	engine_timer_arm(e, &g->stop.timer, (uint64_t)(g->rec->o->stop_timeout * NSEC_PER_SEC), 0);
	engine_timer_arm(e, &g->stop.drain_timer, DRAIN_CHECK_NS, DRAIN_CHECK_NS);
	sess_changed(g);
}

/*
 * A stop the table lets wait (guest_transitions[]): the full metadata on its
 * way (the agent sends every chunk before it reads the STOP: they are taken,
 * then it stops), or --incoming's takeover (RESUME is answered at once).
 */
static void stop_deferred(struct guest *g, bool was)
{
	if (g->state == G_RUNNING) {
		log_debug("guest %s: the stop waits for the metadata on its way (%g s at most)", g->name,
			  (double)deferred_stop_ns(g) / NSEC_PER_SEC);
		if (!was)
			engine_timer_arm(sess_eng(g), &g->stop.timer, deferred_stop_ns(g), 0);
	} else {
		log_info("guest %s: the stop waits for the takeover under way", g->name);
	}
}

/**
 * session_stop() - stop a guest: a recording one is asked to stop and drain;
 * one still in its setup is abandoned
 * @g: the guest
 */
void session_stop(struct guest *g)
{
	const struct guest_transition *t;
	bool was = g->stop.deferred;
	int ret;

	if (g->qemu.reset_why[0]) {
		/* Reset: no agent to stop; its end comes now rather than after the grace. */
		engine_timer_cancel(sess_eng(g), &g->qemu.reset_timer);
		sess_reset_done(g);
		return;
	}
	if (g->qemu.ended && g->qemu.end_timer.armed)
		return;	/* no QEMU, no agent to stop: the end comes once the ports are read */
	if (g->state >= G_STOPPING)
		return;
	t = guest_transition_find(g->state, G_STOPPING);
	if (t && (!t->defer_only || t->waits(g))) {
		ret = guest_set_state(g, G_STOPPING, "stop");
		if (ret == -EINPROGRESS)
			stop_deferred(g, was);
		else if (ret == 0)
			send_stop(g);
		return;
	}
	if (g->state == G_NEW && g->wait.until && !g->ctl.conn) {
		session_fail(g, "the recording ended while it waited for its trace ports");
		return;
	}
	/* Still setting up: it never recorded. session_fail() says bye to the agent. */
	session_fail(g, "the recording ended before its setup finished (at: %s)",
		     sess_step_what(g->setup.step));
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
	if (g->qemu.pid_open)
		close(g->qemu.pidfd);
	g->qemu.pid_open = false;
	vt_proto_meta_rx_release(&g->meta.rx);
	for (i = 0; i < COLLECT_MAX_CPUS; i++) {
		free(g->stats.text[i]);
		g->stats.text[i] = NULL;
	}
}
