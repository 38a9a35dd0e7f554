// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The collector's in-band clock sync across a QMP stop/cont, without a guest:
 * host-collector/record/sync.c is linked into this test and fed the probes that
 * session.c's burst would take from a simulated guest answering "host TSC +
 * offset", whose clock stands still while it is stopped.
 * A probe can be made to straddle the stop: it is sent, the guest stops, the
 * offset moves back by the stopped time, the guest resumes, and only then is
 * the probe answered - what a periodic burst running into a QMP stop sees.
 *
 * After the resume sync, every vCPU's new epoch must start at the resume, and
 * an epoch that was opened before the stop must stay where it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "hostclock.h"
#include "record.h"
#include "session.h"
#include "stream.h"
#include "sync.h"
#include "sync-int.h"
#include "tscwatch.h"
#include "vt_tsync.h"

/* ---- the simulated guest ---- */

static struct {
	struct guest *g;
	int64_t offset;			/* guest TSC = host TSC + offset */
	bool straddle;			/* the next probe straddles the stop */
	uint64_t stop_ticks;		/* how long the guest stays stopped */
} sim;

static void spin_until(uint64_t tsc)
{
	while (vt_tsc_read() < tsc)
		;
}

/* The stop and the resume, as the QMP events would record them. */
static void stop_and_resume(void)
{
	uint64_t t0;

	sim.g->qemu.stop_tsc = t0 = vt_tsc_read();
	spin_until(t0 + sim.stop_ticks);
	sim.g->qemu.resume_tsc = vt_tsc_read();
	sim.offset -= (int64_t)(sim.g->qemu.resume_tsc - t0);
	sim.g->qemu.resync = true;
}

void collect_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

/* No engine here: sync.c's kvm timer is never armed for a probe guest, nor run. */
void engine_timer_arm(struct engine *e, struct engine_timer *t, uint64_t delay_ns,
		      uint64_t period_ns)
{
	(void)e;
	(void)t;
	(void)delay_ns;
	(void)period_ns;
}

int spool_save_sync(const struct guest *g)
{
	(void)g;
	return 0;
}

/*
 * What session.c's probe burst does, with the simulated guest answering:
 * t1, the probe (perhaps straddling a stop and resume), the guest's TSC,
 * t2; then the estimate per vCPU and the end of the burst.
 */
static int sim_sync(struct guest *g, const struct record_opts *o, const char *when)
{
	struct vt_tsync_sample smp[64];
	unsigned int i, k;
	int ret;

	assert_true(o->sync_probes <= 64);
	ret = sync_prepare(g, o, when);
	if (ret <= 0)
		return ret;
	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;

		for (k = 0; k < o->sync_probes; k++) {
			smp[k].t1 = vt_tsc_read();
			if (sim.straddle) {
				stop_and_resume();
				sim.straddle = false;
			}
			smp[k].g = vt_tsc_read() + sim.offset;
			smp[k].t2 = vt_tsc_read();
			smp[k].cpu = smp[k].want_cpu = cpu;
		}
		ret = sync_probe_result(g, cpu, smp, o->sync_probes);
		if (ret < 0)
			return ret;
	}
	sync_burst_done(g, when);
	return 0;
}

/* ---- the tests ---- */

static struct stream streams[2] = { { .cpu = 0 }, { .cpu = 1 } };
static const struct record_opts opts = { .sync = "probe", .sync_probes = 40 };

static int setup(void **state)
{
	struct guest *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	snprintf(g->name, sizeof(g->name), "sim");
	snprintf(g->agent.clock, sizeof(g->agent.clock), "x86-tsc");
	g->agent.caps = VT_PROTO_CAP_SYNC_TSC;
	g->agent.nr_cpus = 2;
	g->streams = streams;
	g->nr_streams = 2;
	g->state = G_RUNNING;
	sim.g = g;
	sim.offset = -123456789012;
	sim.straddle = false;
	/* 2 ms at the TSC's rate */
	{
		struct host_tsc t;

		host_tsc_rate(&t);
		assert_true(t.khz > 0);
		sim.stop_ticks = t.khz * 2;
	}
	*state = g;
	return 0;
}

static int teardown(void **state)
{
	struct guest *g = *state;
	unsigned int i;

	for (i = 0; i < COLLECT_MAX_CPUS; i++)
		free(g->sync.cpus[i].epochs);
	free(g);
	return 0;
}

static void assert_offset(const struct vt_tsync_epoch *ep, int64_t want)
{
	int64_t d = ep->map.offset - want;

	assert_true(d >= -(int64_t)ep->error - 1 && d <= (int64_t)ep->error + 1);
}

/*
 * The first probe of vCPU 0's periodic burst is sent before the stop and
 * answered after the resume: its burst opens the new epoch from a host time
 * before the stop. The resume sync must move that epoch to the resume, as it
 * moves vCPU 1's.
 */
static void straddling_burst(void **state)
{
	struct guest *g = *state;
	int64_t before;
	unsigned int cpu;

	assert_int_equal(sim_sync(g, &opts, "start"), 0);
	before = sim.offset;
	sim.straddle = true;	/* vCPU 0's first probe */
	assert_int_equal(sim_sync(g, &opts, "interval"), 0);
	assert_false(sim.straddle);
	assert_int_equal(g->sync.cpus[0].nr, 2);
	/* the symptom: opened before the stop by the probe that straddled it */
	assert_true(g->sync.cpus[0].epochs[1].host_from < g->qemu.stop_tsc);
	assert_true(g->sync.cpus[0].epochs[1].first_reply > g->qemu.resume_tsc);
	{
		uint64_t resume = g->qemu.resume_tsc;

		assert_true(g->qemu.resync);
		g->qemu.resync = false;
		assert_int_equal(sim_sync(g, &opts, "resume"), 0);
		for (cpu = 0; cpu < 2; cpu++) {
			const struct vt_tsync_cpu *c = &g->sync.cpus[cpu];

			assert_int_equal(c->nr, 2);
			assert_offset(&c->epochs[0], before);
			assert_offset(&c->epochs[1], sim.offset);
			assert_true(c->epochs[0].host_from < resume);
			assert_int_equal(c->epochs[1].host_from, resume);
		}
	}
	assert_int_equal(g->qemu.stop_tsc, 0);
	assert_int_equal(g->qemu.resume_tsc, 0);
}

/*
 * An offset change well before the stop (epoch 1) is not the resume's:
 * it keeps its start; only the epoch the resume burst opens moves.
 */
static void earlier_epoch_stays(void **state)
{
	struct guest *g = *state;
	uint64_t from1, resume;
	unsigned int cpu;

	assert_int_equal(sim_sync(g, &opts, "start"), 0);
	sim.offset += 50000000;	/* far beyond any probe's error */
	assert_int_equal(sim_sync(g, &opts, "interval"), 0);
	from1 = g->sync.cpus[0].epochs[1].host_from;
	spin_until(vt_tsc_read() + sim.stop_ticks);
	stop_and_resume();
	resume = g->qemu.resume_tsc;
	g->qemu.resync = false;
	assert_int_equal(sim_sync(g, &opts, "resume"), 0);
	for (cpu = 0; cpu < 2; cpu++) {
		const struct vt_tsync_cpu *c = &g->sync.cpus[cpu];

		assert_int_equal(c->nr, 3);
		assert_offset(&c->epochs[2], sim.offset);
		assert_true(c->epochs[1].host_from < g->sync.cpus[cpu].epochs[2].host_from);
		assert_int_equal(c->epochs[2].host_from, resume);
	}
	assert_int_equal(g->sync.cpus[0].epochs[1].host_from, from1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(straddling_burst, setup, teardown),
		cmocka_unit_test_setup_teardown(earlier_epoch_stays, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
