// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's clock probe bursts (session.c's part): a chain of probes per
 * vCPU, each sent when the last reply came; sync.c turns the replies into
 * epochs.
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
 * A reply that took this many times the vCPU's best round trip so far (and
 * more than SLOW_RTT_FLOOR_NS) cannot narrow the bound that one gave: a
 * burst after the start's ends at once, the vCPUs left keep their epochs.
 * The floor is far above a busy host's scheduling delays (a 5 ms floor cut a
 * good guest's stop burst on a loaded host, and its vCPU kept the start's
 * epoch), and far below a guest that holds each reply for seconds.
 */
#define SLOW_RTT_FACTOR		100
#define SLOW_RTT_FLOOR_NS	(250 * NSEC_PER_MSEC)

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

	engine_timer_cancel(sess_eng(g), &b->timer);
	b->k = b->n;		/* a late reply is ignored */
	sess_request(g, vt_proto_enc_sync(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_SYNC_END,
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

void sess_burst_timeout(void *arg)
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
void sess_burst_budget(void *arg)
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
	if (sess_send_frame(g, len) < 0)
		return;
	engine_timer_arm(sess_eng(g), &g->burst.timer, PROBE_TIMEOUT_NS, 0);
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
	/* An empty intersection goes on anyway (sess_got_reply()). */
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

void sess_got_reply(struct guest *g, const struct vt_proto_msg *m)
{
	struct guest_burst *b = &g->burst;
	struct vt_proto_sync s;
	struct vt_tsync_sample *smp;

	/* A late reply to an abandoned probe is harmless. */
	if (vt_proto_dec_sync(m, &s) < 0 || !b->active || b->req_pending || s.cpu != b->cpu ||
	    s.probe != b->k)
		return;
	engine_timer_cancel(sess_eng(g), &b->timer);
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
		sess_burst_abort(g);
		done(g, 0);
		return;
	}
	b->cpu = g->streams[b->idx].cpu;
	b->k = b->got = 0;
	b->req_pending = true;
	s = (struct vt_proto_sync){ .cpu = b->cpu, .probe = b->n };
	sess_request(g, vt_proto_enc_sync(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_SYNC_BEGIN,
				     vt_conn_next_seq(g->ctl.conn), &s), VT_PROTO_OK, burst_begun);
}

/*
 * Measure or read the guest's clock mapping (sync.c decides how); @done
 * runs when it is recorded. Probes go one vCPU after the other.
 */
void sess_burst_run(struct guest *g, const char *when, void (*done)(struct guest *g, int err))
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
		engine_timer_arm(sess_eng(g), &b->budget, budget < FINAL_SYNC_NS ? budget : FINAL_SYNC_NS, 0);
	}
	burst_cpu_begin(g);
}

/* A burst while recording ended: another may be due (QEMU resumed the guest meanwhile). */
void sess_running_burst_done(struct guest *g, int err)
{
	(void)err;
	if (g->state == G_RUNNING && g->qemu.resync) {
		g->qemu.resync = false;
		sess_burst_run(g, "resume", sess_running_burst_done);
	}
}

void sess_kvm_tick(void *arg)
{
	struct guest *g = arg;

	if (g->state == G_RUNNING)
		sync_kvm_tick(g);
}

void sess_sync_tick(void *arg)
{
	struct guest *g = arg;

	/* Not while QEMU migrates it: a probe lost in the switchover would fail the burst. */
	if (g->state == G_RUNNING && !g->burst.active && !g->req.active && !g->mig.migrating)
		sess_burst_run(g, "interval", sess_running_burst_done);
}

/* QEMU resumed the guest: its TSC offset moved, sync again. */
void sess_resumed(struct guest *g)
{
	if (g->state == G_RUNNING && !g->burst.active && !g->req.active) {
		g->qemu.resync = false;
		sess_burst_run(g, "resume", sess_running_burst_done);
	} else if (g->state < G_STOPPING) {
		g->qemu.resync = true;
	}
}

