// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mapping each vCPU's TSC onto the host's.
 *
 * Probes (sent by session.c, one after the other, each when the last reply
 * came): the host reads its TSC (t1), sends probe k, and reads its TSC again
 * (t2) right after the read that brought the reply carrying the guest's TSC
 * g. Whatever the delays, guest = host + offset with the offset in
 * [g - t2, g - t1]; the intersection over all probes bounds it, the midpoint
 * is kept and the bound is half the width. The agent busy-polls during the
 * burst so that its wake-up does not skew the replies.
 *
 * The estimator (lib/tsync-est.c) fits a drift only when no constant offset fits,
 * and splits a burst into epochs when the offset jumped. KVM's debugfs gives
 * exact per-vCPU offsets instead, when the collector knows the QEMU pid.
 *
 * KVM: debugfs gives each vCPU's offset (and scaling ratio) at the moment it
 * is read, not when it changed. KVM changes offsets when a vCPU is created,
 * when QEMU writes the TSC (a reset, an incoming migration), when the guest
 * writes IA32_TSC, and on a host whose TSC it does not trust at every load
 * of the vCPU (tens of times a second in a nested guest). The moment of
 * each change comes from kvm:kvm_write_tsc_offset (tscwatch.c), started
 * before the guest's START: an epoch opens at the event's host TSC with its
 * new offset, exactly; debugfs is read once then (the offsets in force,
 * the ratio) and once at the stop, where it must agree with the events.
 * Where the event cannot be had (no tracefs, no such event, not permitted,
 * --no-kvm-events), debugfs is re-read every second; a change is then only
 * known to lie between two reads, and the epoch before it gets the size of
 * the change as its bound (the events of that stretch may be off by that
 * much, assuming one change between the reads), flagged
 * VT_TSYNC_EPOCH_UNSEEN, the new epoch its `since`. Events lost by the
 * instance are found the same way: an event whose previous offset is not
 * the one in force.
 *
 * --sync-check runs the probe bursts beside the exact method and keeps their
 * replies until the epochs covering them are known (the instance read past
 * them): each reply must then fall within the offsets the epochs in force
 * during its round trip give (spool_check in the manifest).
 *
 * Replies are checked before they are believed (plausible()): a vCPU's guest
 * TSC must increase from reply to reply, across bursts too, and within a
 * burst may not advance more between two replies than the host's clock did
 * between the first request and the second reply (plus the drift the
 * estimator allows and a few ticks; between bursts the offset may jump). A
 * burst that breaks either is rejected whole and counted.
 * When probes were the method and a vCPU is left with no epoch, the manifest
 * says so (sync_burst_done()): method "none" when no vCPU has one.
 *
 * The mapping is written to the spool's "sync" file as one epoch per line.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "guest.h"
#include "hostclock.h"
#include "recording.h"
#include "stream.h"
#include "sync.h"
#include "sync-int.h"
#include "tscwatch.h"
#include "store/spool.h"
#include "vt_tsync.h"

/**
 * sync_host_tsc() - the host's TSC, read in order with earlier loads
 *
 * Return: the TSC.
 */
uint64_t sync_host_tsc(void)
{
	return vt_tsc_read();
}

/*
 * Probes measure, they do not observe a change: a new estimate opens a new
 * epoch only when its interval and the current epoch's cannot both hold.
 * Otherwise the tighter of the two is kept for the current epoch.
 */
static int record_epoch(struct guest *g, unsigned int cpu, const struct vt_tsync_epoch *ep)
{
	struct vt_tsync_cpu *c = &g->sync.cpus[cpu];
	struct vt_tsync_epoch *last = c->nr ? &c->epochs[c->nr - 1] : NULL;

	if (last && last->source == ep->source && !((last->flags | ep->flags) & VT_TSYNC_EPOCH_DRIFT) &&
	    !vt_tsc_map_scaled(&last->map) && !vt_tsc_map_scaled(&ep->map)) {
		uint64_t diff = ep->map.offset > last->map.offset ?
				(uint64_t)(ep->map.offset - last->map.offset) :
				(uint64_t)(last->map.offset - ep->map.offset);

		if (diff <= ep->error + last->error) {
			if (ep->error < last->error) {
				last->map = ep->map;
				last->error = ep->error;
				last->min_rtt = ep->min_rtt;
			}
			return 0;
		}
	}
	return vt_tsync_cpu_update(c, ep);
}

/* Slack of plausible(): the estimator's drift limit, and a few ticks of rounding. */
#define PLAUSIBLE_PPM		1000
#define PLAUSIBLE_TICKS		10000

/*
 * Whether a burst's replies can be true, whatever the offset: see the top
 * comment. Probes are sent one after the other, so the guest read each one
 * after the one before. Return: true, or false with g->sync.reject_why set.
 */
static bool plausible(struct guest *g, unsigned int cpu, const struct vt_tsync_sample *smp,
		      unsigned int n)
{
	uint64_t pg = g->sync.last_g[cpu], pt1 = 0;
	bool have = pg != 0, across = have;
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct vt_tsync_sample *s = &smp[i];
		uint64_t window, adv;

		if (s->cpu != s->want_cpu || s->t2 < s->t1)
			continue;	/* the estimator rejects these on its own */
		if (have && s->g <= pg) {
			snprintf(g->sync.reject_why, sizeof(g->sync.reject_why),
				 "vCPU %u: the guest TSC went backwards (%" PRIu64 " after %" PRIu64 "%s)",
				 cpu, s->g, pg, across ? " in an earlier burst" : "");
			/* A TSC written back between bursts costs one burst, not all later ones. */
			if (across)
				g->sync.last_g[cpu] = 0;
			return false;
		}
		/* Between bursts the offset may jump (a migration, a TSC write): order only. */
		if (have && !across) {
			window = s->t2 - pt1;
			adv = s->g - pg;
			if (adv > window + window / (1000000 / PLAUSIBLE_PPM) + PLAUSIBLE_TICKS) {
				snprintf(g->sync.reject_why, sizeof(g->sync.reject_why),
					 "vCPU %u: the guest TSC advanced %" PRIu64 " ticks while the host's "
					 "advanced at most %" PRIu64, cpu, adv, window);
				return false;
			}
		}
		pg = s->g;
		pt1 = s->t1;
		have = true;
		across = false;
	}
	if (have)
		g->sync.last_g[cpu] = pg;
	return true;
}

/* The sync file, saved by the guest's owner (g->sync.save: the session's spool_save_sync()). */
int sync_save(const struct guest *g)
{
	return g->sync.save ? g->sync.save(g) : 0;
}

/**
 * sync_probe_result() - turn one vCPU's probe burst into epochs
 * @g: the guest
 * @cpu: the vCPU probed
 * @smp: the samples (t1, t2, the guest's TSC, where it was read)
 * @n: how many
 *
 * A constant offset first: when every probe allows one, the bound is half
 * the intersection, as wide as the data say and no wider. Only probes no
 * constant offset fits get a drift (or a split into epochs, when the offset
 * jumped during the burst).
 *
 * Return: 0, -EAGAIN when the probes give no usable estimate (logged), or
 * -errno.
 */
int sync_probe_result(struct guest *g, unsigned int cpu, const struct vt_tsync_sample *smp,
		      unsigned int n)
{
	static const struct vt_tsync_est_opts no_drift = { .no_drift = true };
	struct vt_tsync_estimate est[8];
	size_t nr_est = 1, i;
	int ret;

	if (cpu >= COLLECT_MAX_CPUS)
		return -EINVAL;
	if (g->sync.checking)
		return sync_check_add(g, cpu, smp, n);
	/*
	 * Every reply read on another CPU: the vCPU was offline (mmiotrace takes
	 * all but one offline). It has no events to map and needs no epoch.
	 */
	for (i = 0; i < n && smp[i].cpu != smp[i].want_cpu; i++)
		;
	g->sync.away[cpu] = n && i == n;
	if (g->sync.away[cpu]) {
		log_debug("guest %s: vCPU %u is offline: its probes ran elsewhere", g->name, cpu);
		return -EAGAIN;
	}
	if (!plausible(g, cpu, smp, n)) {
		g->sync.head.rejected++;
		guest_log(g, GMSG_SYNC, L_WARN, "guest %s: implausible clock probe replies, burst "
			  "rejected: %s", g->name, g->sync.reject_why);
		return -EAGAIN;
	}
	ret = vt_tsync_estimate(smp, n, &no_drift, &est[0]);
	if (ret < 0)
		ret = vt_tsync_estimate_split(smp, n, NULL, est, 8, &nr_est);
	if (ret < 0) {
		snprintf(g->sync.reject_why, sizeof(g->sync.reject_why),
			 "vCPU %u: the probes give no usable clock estimate (%s)", cpu, strerror(-ret));
		guest_log(g, GMSG_SYNC, L_WARN, "guest %s: %s", g->name, g->sync.reject_why);
		return -EAGAIN;
	}
	for (i = 0; i < nr_est; i++) {
		struct vt_tsync_epoch ep;

		ret = vt_tsync_estimate_epoch(&est[i], &ep);
		if (ret < 0)
			return ret;
		if (g->sync.min_rtt[cpu] == 0 || est[i].min_rtt < g->sync.min_rtt[cpu])
			g->sync.min_rtt[cpu] = est[i].min_rtt;
		g->sync.samples[cpu] += est[i].used;
		ret = record_epoch(g, cpu, &ep);
		if (ret < 0)
			return ret;
		if (ret == 1 && g->sync.cpus[cpu].nr > 1)
			log_info("guest %s vCPU %u: the clock offset moved: new epoch", g->name, cpu);
		log_debug("guest %s vCPU %u: offset %" PRId64 " +- %" PRIu64 " ticks, min RTT %" PRIu64
			  "%s", g->name, cpu, est[i].offset, est[i].bound, est[i].min_rtt,
			  est[i].drift_fitted ? ", drift fitted" : "");
	}
	return 0;
}

void sync_set_method(struct guest *g, const char *method, const char *fmt, ...)
{
	va_list ap;

	snprintf(g->sync.head.method, sizeof(g->sync.head.method), "%s", method);
	va_start(ap, fmt);
	vsnprintf(g->sync.head.why, sizeof(g->sync.head.why), fmt, ap);
	va_end(ap);
}

/**
 * sync_release() - free what the guest's clock holds
 * @g: the guest
 */
void sync_release(struct guest *g)
{
	unsigned int i;

	tscwatch_free(g->sync.watch);
	g->sync.watch = NULL;
	free(g->sync.pend);
	g->sync.pend = NULL;
	g->sync.nr_pend = g->sync.cap_pend = 0;
	free(g->sync.check.ivs);
	g->sync.check.ivs = NULL;
	g->sync.check.nr_ivs = 0;
	for (i = 0; i < COLLECT_MAX_CPUS; i++)
		vt_tsync_cpu_free(&g->sync.cpus[i]);
}
/*
 * After QEMU resumed a guest, every vCPU's new offset holds from the moment
 * it resumed, not from whenever its probes happened to run: a periodic burst
 * that straddled the stop may have opened the new epoch while the guest was
 * frozen, and the resume burst of another vCPU only after it ran again. The
 * first epoch opened since the stop is moved to the resume. An epoch counts
 * as opened since the stop when it starts after it, or when its first reply
 * came after it: a burst whose first probe was sent just before the stop and
 * answered after the resume starts before the stop but measured the new
 * offset only.
 */
static void align_to_resume(struct guest *g)
{
	uint64_t since = g->qemu.stop_tsc && g->qemu.stop_tsc < g->qemu.resume_tsc ?
			 g->qemu.stop_tsc : g->qemu.resume_tsc;
	unsigned int cpu, i;

	for (cpu = 0; cpu < g->agent.nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++) {
		struct vt_tsync_cpu *c = &g->sync.cpus[cpu];

		for (i = 1; i < c->nr; i++) {
			if (c->epochs[i].host_from < since && c->epochs[i].first_reply < since)
				continue;
			if (c->epochs[i - 1].host_from < g->qemu.resume_tsc)
				c->epochs[i].host_from = g->qemu.resume_tsc;
			break;
		}
	}
}

/**
 * sync_prepare() - read the guest's clock mapping, or say that probes must
 * measure it
 * @g: the guest (setting up, streaming or stopped)
 * @o: options
 * @when: "start", "interval", "resume" or "stop", for messages
 *
 * KVM debugfs first (exact), then in-band probes, then the user's
 * --tsc-offset; --sync forces one. Without any, the guest file gets no
 * TIME_SHIFT and the manifest says why. The probes themselves are sent by
 * session.c, whose results come back through sync_probe_result() and
 * sync_burst_done().
 *
 * Return: 0 when the mapping is recorded (or cannot be had: the method says
 * why), 1 when probes must measure it, or -errno.
 */
int sync_prepare(struct guest *g, const struct record_opts *o, const char *when)
{
	const char *method = o->sync ? o->sync : "auto";
	unsigned int i;
	int ret = 0;

	(void)when;
	/* A generous end for the last epoch: an hour past now at 10 GHz. */
	g->sync.head.host_end = vt_tsc_read() + 36000000000000ull;
	if (!strcmp(method, "none")) {
		sync_set_method(g, "none", "--sync none");
		return sync_save(g);
	}
	if (!strcmp(method, "offset")) {
		struct vt_tsync_epoch ep = {
			.host_from = vt_tsc_read(),
			.map = { .offset = o->tsc_offset, .ratio = 1 }, .source = VT_TSYNC_SRC_USER,
		};

		sync_set_method(g, "offset", "--tsc-offset given by the user");
		for (i = 0; i < g->nr_streams; i++)
			if (!g->sync.cpus[g->streams[i].cpu].nr)
				ret = vt_tsync_cpu_update(&g->sync.cpus[g->streams[i].cpu], &ep);
		return ret < 0 ? ret : sync_save(g);
	}
	if (!strcmp(method, "kvm") || !strcmp(method, "auto")) {
		ret = sync_kvm(g, o, when);
		if (ret == 0 && o->sync_check) {
			if ((g->agent.caps & VT_PROTO_CAP_SYNC_TSC) && !strcmp(g->agent.clock, "x86-tsc")) {
				/* Probes beside: their replies wait for the epochs (sync_check_eval()). */
				g->sync.checking = true;
				g->sync.check.on = true;
				g->sync.check.bursts++;
				sync_save(g);
				return 1;
			}
			if (!g->sync.check.on)
				log_warn("guest %s: --sync-check: the guest traces with clock %s and cannot "
					 "answer TSC probes: nothing to check", g->name, g->agent.clock);
			g->sync.check.on = true;
		}
		if (ret == 0)
			return sync_save(g);
		if (!strcmp(method, "kvm")) {
			log_err("guest %s: --sync kvm: no KVM debugfs entry for QEMU pid %d under %s (%s)",
				g->name, (int)g->link.qemu_pid, o->debugfs ? o->debugfs : "/sys/kernel/debug",
				strerror(-ret));
			sync_set_method(g, "none", "--sync kvm, but KVM debugfs was not readable");
			return sync_save(g);
		}
	}
	if (!(g->agent.caps & VT_PROTO_CAP_SYNC_TSC) || strcmp(g->agent.clock, "x86-tsc") != 0) {
		sync_set_method(g, "none", "the guest traces with clock %s and cannot answer TSC probes",
			   g->agent.clock);
		return sync_save(g);
	}
	sync_set_method(g, "probe", "%s: in-band probes over the control port",
		   g->link.qemu_pid ? "no KVM debugfs for this QEMU" : "no --qemu-pid (no KVM debugfs)");
	if (o->sync_check && !g->sync.check.on) {
		g->sync.check.on = true;
		log_warn("guest %s: --sync-check: the clock method is probe, no exact offsets to check "
			 "the probes against", g->name);
	}
	return 1;
}

/**
 * sync_burst_done() - every vCPU of a probe burst is measured: record it
 * @g: the guest
 * @when: as given to sync_prepare(); after a "resume", the new epochs are
 *	moved to the moment QEMU resumed the guest
 */
void sync_burst_done(struct guest *g, const char *when)
{
	unsigned int i, missing = 0, first = 0, away;

	if (g->sync.checking) {
		/* --sync-check: the replies wait for the epochs of their time. */
		g->sync.checking = false;
		if (!strcmp(when, "resume"))
			g->qemu.resume_tsc = g->qemu.stop_tsc = 0;
		sync_kvm_poll(g);
		sync_save(g);
		return;
	}
	if (!strcmp(when, "resume")) {
		align_to_resume(g);
		g->qemu.resume_tsc = g->qemu.stop_tsc = 0;
	}
	/* Probes that left a vCPU without any epoch: say so, never a silent 0 ns bound. */
	if (!strcmp(g->sync.head.method, "probe")) {
		for (i = 0; i < g->nr_streams; i++) {
			unsigned int cpu = g->streams[i].cpu;

			if (cpu < COLLECT_MAX_CPUS && !g->sync.cpus[cpu].nr && !g->sync.away[cpu] &&
			    !missing++)
				first = cpu;
		}
		g->sync.head.failed = missing > 0;
		for (i = 0, away = 0; i < g->nr_streams; i++)
			away += g->streams[i].cpu < COLLECT_MAX_CPUS && g->sync.away[g->streams[i].cpu];
		if (missing && missing + away == g->nr_streams)
			sync_set_method(g, "none", "in-band probes gave no plausible clock estimate (%.100s)",
				   g->sync.reject_why[0] ? g->sync.reject_why : "no reply");
		else if (missing)
			sync_set_method(g, "probe", "in-band probes; %u vCPU(s) from %u on have no plausible "
				   "clock estimate (%.80s)", missing, first, g->sync.reject_why);
	}
	sync_save(g);
}
