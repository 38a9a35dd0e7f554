// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mapping each vCPU's TSC onto the host's.
 *
 * Probes: the host reads its TSC (t1), sends probe k, busy-reads the control
 * port until the reply carrying the guest's TSC g arrives, and reads its TSC
 * again (t2). Whatever the delays, guest = host + offset with the offset in
 * [g - t2, g - t1]; the intersection over all probes bounds it, the midpoint
 * is kept and the bound is half the width. The agent busy-polls during the
 * burst so that its wake-up does not skew the replies.
 *
 * The estimator (lib/tsync.c) fits a drift only when no constant offset fits,
 * and splits a burst into epochs when the offset jumped. KVM's debugfs gives
 * exact per-vCPU offsets instead, when the collector knows the QEMU pid.
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
#include "hostclock.h"
#include "vt_tsync.h"

#define PROBE_TIMEOUT_NS	(2ll * 1000 * 1000 * 1000)

/**
 * sync_host_tsc() - the host's TSC, read in order with earlier loads
 *
 * Return: the TSC.
 */
uint64_t sync_host_tsc(void)
{
	return vt_tsc_read();
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

struct probe_wait {
	uint32_t cpu, k;
	bool got;
	uint64_t tsc;
	uint32_t ran_on;
};

static void on_reply(void *arg, const struct vt_proto_msg *m)
{
	struct probe_wait *w = arg;
	struct vt_proto_sync s;

	if (vt_proto_dec_sync(m, &s) == 0 && s.cpu == w->cpu && s.probe == w->k) {
		w->got = true;
		w->tsc = s.tsc;
		w->ran_on = s.ran_on;
	}
}

/* One probe: 0 with t1, t2, the guest's TSC and the CPU it was read on. */
static int probe(struct guest *g, uint32_t cpu, uint32_t k, uint64_t *t1, uint64_t *t2, uint64_t *gt,
		 uint32_t *ran_on)
{
	struct vt_proto_sync s = { .cpu = cpu, .probe = k };
	struct probe_wait w = { .cpu = cpu, .k = k };
	long long deadline = now_ns() + PROBE_TIMEOUT_NS;
	uint8_t buf[4096];
	int len, ret;

	len = vt_proto_enc_sync(g->frame, sizeof(g->frame), VT_PROTO_SYNC_PROBE, session_next_seq(g), &s);
	if (len < 0)
		return len;
	*t1 = sync_host_tsc();
	ret = session_send(g, len, VT_PROTO_SYNC_PROBE);
	if (ret < 0)
		return ret;
	while (!w.got) {
		ssize_t n = read(g->ctl_rfd, buf, sizeof(buf));

		if (n > 0) {
			uint64_t t = sync_host_tsc();

			session_feed(g, buf, n, on_reply, &w);
			if (w.got)
				*t2 = t;
			if (g->state == G_FAILED)
				return -ECONNRESET;
			continue;
		}
		if (now_ns() > deadline)
			return -ETIMEDOUT;
	}
	*gt = w.tsc;
	*ran_on = w.ran_on;
	return 0;
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

/*
 * A burst of probes on one vCPU, turned into one or more epochs by the
 * estimator (more than one when the offset jumped during the burst).
 */
static int probe_cpu(struct guest *g, struct engine *e, const struct collect_opts *o,
		     unsigned int cpu)
{
	static const struct vt_tsync_est_opts no_drift = { .no_drift = true };
	struct vt_proto_sync b = { .cpu = cpu, .probe = o->sync_probes };
	struct vt_tsync_estimate est[8];
	unsigned int n = o->sync_probes, got = 0, k;
	struct vt_tsync_sample *smp = calloc(n, sizeof(*smp));
	size_t nr_est = 0, i;
	int ret;

	if (!smp)
		return -ENOMEM;
	ret = session_req_ok(g, e, vt_proto_enc_sync(g->frame, sizeof(g->frame), VT_PROTO_SYNC_BEGIN,
						     session_next_seq(g), &b), "starting a clock sync burst");
	if (ret < 0)
		goto out;
	for (k = 0; k < n; k++) {
		uint32_t ran_on = 0;

		ret = probe(g, cpu, k, &smp[got].t1, &smp[got].t2, &smp[got].g, &ran_on);
		if (ret < 0) {
			if (g->state != G_FAILED)
				session_fail(g, "clock sync probe %u of vCPU %u: %s", k, cpu, strerror(-ret));
			goto out;
		}
		smp[got].cpu = ran_on;
		smp[got].want_cpu = cpu;
		got++;
	}
	b.probe = 0;
	ret = session_req_ok(g, e, vt_proto_enc_sync(g->frame, sizeof(g->frame), VT_PROTO_SYNC_END,
						     session_next_seq(g), &b), "ending a clock sync burst");
	if (ret < 0)
		goto out;
	/*
	 * A constant offset first: when every probe allows one, the bound is
	 * half the intersection, as wide as the data say and no wider. Only
	 * probes no constant offset fits get a drift (or a split into epochs).
	 */
	ret = vt_tsync_estimate(smp, got, &no_drift, &est[0]);
	nr_est = 1;
	if (ret < 0)
		ret = vt_tsync_estimate_split(smp, got, NULL, est, 8, &nr_est);
	if (ret < 0) {
		log_warn("guest %s: vCPU %u: the probes give no usable clock estimate (%s)", g->name,
			 cpu, strerror(-ret));
		ret = -EAGAIN;
		goto out;
	}
	for (i = 0; i < nr_est; i++) {
		struct vt_tsync_epoch ep;

		ret = vt_tsync_estimate_epoch(&est[i], &ep);
		if (ret < 0)
			goto out;
		if (g->sync.min_rtt[cpu] == 0 || est[i].min_rtt < g->sync.min_rtt[cpu])
			g->sync.min_rtt[cpu] = est[i].min_rtt;
		g->sync.samples[cpu] += est[i].used;
		ret = record_epoch(g, cpu, &ep);
		if (ret < 0)
			goto out;
		if (ret == 1 && g->sync.cpus[cpu].nr > 1)
			log_info("guest %s vCPU %u: the clock offset moved: new epoch", g->name, cpu);
		log_debug("guest %s vCPU %u: offset %" PRId64 " +- %" PRIu64 " ticks, min RTT %" PRIu64
			  "%s", g->name, cpu, est[i].offset, est[i].bound, est[i].min_rtt,
			  est[i].drift_fitted ? ", drift fitted" : "");
	}
	ret = 0;
out:
	free(smp);
	return ret;
}

/**
 * spool_save_sync() - write the guest's clock mapping to its spool
 * @g: the guest
 *
 * One line per epoch; output.c reads them back.
 *
 * Return: 0 or -errno.
 */
int spool_save_sync(const struct guest *g)
{
	char *buf;
	size_t size = 1024, n;
	unsigned int cpu, i;
	int ret;

	for (cpu = 0; cpu < g->nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++)
		size += 256 * (g->sync.cpus[cpu].nr + 1);
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	n = snprintf(buf, size, "method=%s\nwhy=%s\nhost_end=%" PRIu64 "\n", g->sync.method,
		     g->sync.why, g->sync.host_end);
	for (cpu = 0; cpu < g->nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++) {
		if (g->sync.min_rtt[cpu])
			n += snprintf(buf + n, size - n, "probes cpu=%u min_rtt=%" PRIu64 " samples=%u\n",
				      cpu, g->sync.min_rtt[cpu], g->sync.samples[cpu]);
		for (i = 0; i < g->sync.cpus[cpu].nr; i++) {
			const struct vt_tsync_epoch *ep = &g->sync.cpus[cpu].epochs[i];

			n += snprintf(buf + n, size - n,
				      "epoch cpu=%u from=%" PRIu64 " offset=%" PRId64 " ratio=%" PRIu64
				      " frac=%u source=%d flags=%u error=%" PRIu64 " min_rtt=%" PRIu64 "\n",
				      cpu, ep->host_from, ep->map.offset, ep->map.ratio,
				      ep->map.frac_bits, (int)ep->source, ep->flags, ep->error, ep->min_rtt);
		}
	}
	ret = spool_write_file(g->spool, "sync", buf, n);
	free(buf);
	return ret;
}

static void set_method(struct guest *g, const char *method, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_method(struct guest *g, const char *method, const char *fmt, ...)
{
	va_list ap;

	snprintf(g->sync.method, sizeof(g->sync.method), "%s", method);
	va_start(ap, fmt);
	vsnprintf(g->sync.why, sizeof(g->sync.why), fmt, ap);
	va_end(ap);
}

/* KVM debugfs: exact per-vCPU offsets (and scaling) for a QEMU we know the pid of. */
static int sync_kvm(struct guest *g, const struct collect_opts *o)
{
	const char *debugfs = o->debugfs ? o->debugfs : "/sys/kernel/debug";
	struct vt_kvm_vcpu v[COLLECT_MAX_CPUS];
	char vmdir[4096];
	uint64_t now = vt_tsc_read();
	uint32_t nr = 0, i;
	int ret;

	if (!g->qemu_pid)
		return -ENOENT;
	ret = vt_kvm_find_vm(debugfs, g->qemu_pid, vmdir, sizeof(vmdir));
	if (ret < 0)
		return ret;
	ret = vt_kvm_read_vm(vmdir, v, COLLECT_MAX_CPUS, &nr);
	if (ret < 0)
		return ret;
	for (i = 0; i < nr; i++) {
		/*
		 * An epoch starts when it was read. Not at 0: the guest TSC there
		 * (0 + a negative offset, as KVM's usually are) would be out of
		 * range, and trace-cmd applies the first epoch to earlier
		 * timestamps anyway.
		 */
		struct vt_tsync_epoch ep = {
			.host_from = now, .map = v[i].map, .source = VT_TSYNC_SRC_KVM,
		};

		if (v[i].id >= g->nr_cpus || v[i].id >= COLLECT_MAX_CPUS)
			continue;
		ret = vt_tsync_cpu_update(&g->sync.cpus[v[i].id], &ep);
		if (ret < 0)
			return ret;
		if (ret == 1 && g->sync.cpus[v[i].id].nr > 1)
			log_info("guest %s vCPU %u: KVM changed the TSC offset: new epoch", g->name,
				 v[i].id);
	}
	set_method(g, "kvm", "KVM debugfs %s (exact)", vmdir);
	return nr ? 0 : -ENOENT;
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
	uint64_t since = g->stop_tsc && g->stop_tsc < g->resume_tsc ? g->stop_tsc : g->resume_tsc;
	unsigned int cpu, i;

	for (cpu = 0; cpu < g->nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++) {
		struct vt_tsync_cpu *c = &g->sync.cpus[cpu];

		for (i = 1; i < c->nr; i++) {
			if (c->epochs[i].host_from < since && c->epochs[i].first_reply < since)
				continue;
			if (c->epochs[i - 1].host_from < g->resume_tsc)
				c->epochs[i].host_from = g->resume_tsc;
			break;
		}
	}
}

/**
 * sync_guest() - measure or read the guest's clock mapping and record it
 * @g: the guest (streaming or stopped)
 * @e: the engine
 * @o: options
 * @when: "start", "interval" or "stop", for messages
 *
 * KVM debugfs first (exact), then in-band probes, then the user's
 * --tsc-offset; --sync forces one. Without any, the guest file gets no
 * TIME_SHIFT and the manifest says why.
 *
 * Return: 0, or -errno when the mapping could not be had.
 */
int sync_guest(struct guest *g, struct engine *e, const struct collect_opts *o, const char *when)
{
	const char *method = o->sync ? o->sync : "auto";
	unsigned int i;
	int ret = 0;

	/* A generous end for the last epoch: an hour past now at 10 GHz. */
	g->sync.host_end = vt_tsc_read() + 36000000000000ull;
	if (!strcmp(method, "none")) {
		set_method(g, "none", "--sync none");
		return spool_save_sync(g);
	}
	if (!strcmp(method, "offset")) {
		struct vt_tsync_epoch ep = {
			.host_from = vt_tsc_read(),
			.map = { .offset = o->tsc_offset, .ratio = 1 }, .source = VT_TSYNC_SRC_USER,
		};

		set_method(g, "offset", "--tsc-offset given by the user");
		for (i = 0; i < g->nr_streams; i++)
			if (!g->sync.cpus[g->streams[i].cpu].nr)
				ret = vt_tsync_cpu_update(&g->sync.cpus[g->streams[i].cpu], &ep);
		return ret < 0 ? ret : spool_save_sync(g);
	}
	if (!strcmp(method, "kvm") || !strcmp(method, "auto")) {
		ret = sync_kvm(g, o);
		if (ret == 0)
			return spool_save_sync(g);
		if (!strcmp(method, "kvm")) {
			log_err("guest %s: --sync kvm: no KVM debugfs entry for QEMU pid %d under %s (%s)",
				g->name, (int)g->qemu_pid, o->debugfs ? o->debugfs : "/sys/kernel/debug",
				strerror(-ret));
			set_method(g, "none", "--sync kvm, but KVM debugfs was not readable");
			return spool_save_sync(g);
		}
	}
	if (!(g->caps & VT_PROTO_CAP_SYNC_TSC) || strcmp(g->clock, "x86-tsc") != 0) {
		set_method(g, "none", "the guest traces with clock %s and cannot answer TSC probes",
			   g->clock);
		return spool_save_sync(g);
	}
	set_method(g, "probe", "%s: in-band probes over the control port",
		   g->qemu_pid ? "no KVM debugfs for this QEMU" : "no --qemu-pid (no KVM debugfs)");
	for (i = 0; i < g->nr_streams && g->state != G_FAILED; i++) {
		ret = probe_cpu(g, e, o, g->streams[i].cpu);
		if (ret == -EAGAIN)
			continue;
		if (ret < 0)
			return ret;
	}
	log_debug("guest %s: clock sync at %s done", g->name, when);
	if (!strcmp(when, "resume")) {
		align_to_resume(g);
		g->resume_tsc = g->stop_tsc = 0;
	}
	return spool_save_sync(g);
}

/**
 * sync_tsc_rate() - the host TSC rate, for TSC2NSEC and the manifest's figures
 * @t: filled
 *
 * From the perf mmap page when the kernel offers it, else calibrated.
 */
void sync_tsc_rate(struct sync_tsc *t)
{
	struct vt_tsc2nsec c;

	memset(t, 0, sizeof(*t));
	if (vt_tsc2nsec_get(&c, 100) < 0) {
		snprintf(t->method, sizeof(t->method), "unavailable");
		return;
	}
	t->khz = c.hz / 1000;
	t->mult = c.mult;
	t->shift = c.shift;
	snprintf(t->method, sizeof(t->method), "%s", vt_tsc_rate_method_name(c.method));
}
