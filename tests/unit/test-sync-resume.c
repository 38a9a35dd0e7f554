// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The collector's in-band clock sync across a QMP stop/cont, without a guest:
 * host-collector/sync.c is compiled into this test and the session functions
 * it calls are stubs that answer each probe with "host TSC + offset", the
 * offset of a simulated guest whose clock stands still while it is stopped.
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

#include "sync.c"

/* ---- the simulated guest ---- */

static struct {
	struct guest *g;
	int pipe[2];
	int64_t offset;			/* guest TSC = host TSC + offset */
	bool straddle;			/* the next probe straddles the stop */
	uint64_t stop_ticks;		/* how long the guest stays stopped */
	uint64_t answer;		/* the guest's TSC when it read it for the last probe */
	unsigned int sent;
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

	sim.g->stop_tsc = t0 = vt_tsc_read();
	spin_until(t0 + sim.stop_ticks);
	sim.g->resume_tsc = vt_tsc_read();
	sim.offset -= (int64_t)(sim.g->resume_tsc - t0);
	sim.g->resync = true;
}

void collect_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

void session_fail(struct guest *g, const char *fmt, ...)
{
	(void)fmt;
	g->state = G_FAILED;
}

uint32_t session_next_seq(struct guest *g)
{
	(void)g;
	return ++sim.sent;
}

int session_req_ok(struct guest *g, struct engine *e, int len, const char *what)
{
	(void)g;
	(void)e;
	(void)what;
	return len < 0 ? len : 0;
}

/*
 * A probe was sent (after sync.c read t1): the guest reads its TSC, perhaps
 * only after a stop and resume, and its answer makes the control port
 * readable (sync.c reads t2 when it is).
 */
int session_send(struct guest *g, int len, uint16_t type)
{
	(void)g;
	(void)len;
	assert_int_equal(type, VT_PROTO_SYNC_PROBE);
	if (sim.straddle) {
		stop_and_resume();
		sim.straddle = false;
	}
	sim.answer = vt_tsc_read() + sim.offset;
	assert_int_equal(write(sim.pipe[1], "p", 1), 1);
	return 0;
}

/* The answer reaches sync.c, which is waiting for it. */
void session_feed(struct guest *g, const uint8_t *buf, size_t n,
		  void (*on_msg)(void *arg, const struct vt_proto_msg *m), void *arg)
{
	struct probe_wait *w = arg;

	(void)g;
	(void)buf;
	(void)n;
	(void)on_msg;
	w->got = true;
	w->ran_on = w->cpu;
	w->tsc = sim.answer;
}

int spool_write_file(const char *dir, const char *name, const void *data, size_t len)
{
	(void)dir;
	(void)name;
	(void)data;
	(void)len;
	return 0;
}

/* ---- the tests ---- */

static struct stream streams[2] = { { .cpu = 0 }, { .cpu = 1 } };
static const struct collect_opts opts = { .sync = "probe", .sync_probes = 40 };

static int setup(void **state)
{
	struct guest *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	snprintf(g->name, sizeof(g->name), "sim");
	snprintf(g->clock, sizeof(g->clock), "x86-tsc");
	g->caps = VT_PROTO_CAP_SYNC_TSC;
	g->nr_cpus = 2;
	g->streams = streams;
	g->nr_streams = 2;
	g->state = G_RUNNING;
	assert_int_equal(pipe(sim.pipe), 0);
	g->ctl_rfd = sim.pipe[0];
	sim.g = g;
	sim.offset = -123456789012;
	sim.straddle = false;
	/* 2 ms at the TSC's rate */
	{
		struct sync_tsc t;

		sync_tsc_rate(&t);
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
	close(sim.pipe[0]);
	close(sim.pipe[1]);
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

	assert_int_equal(sync_guest(g, NULL, &opts, "start"), 0);
	before = sim.offset;
	sim.straddle = true;	/* vCPU 0's first probe */
	assert_int_equal(sync_guest(g, NULL, &opts, "interval"), 0);
	assert_false(sim.straddle);
	assert_int_equal(g->sync.cpus[0].nr, 2);
	/* the symptom: opened before the stop by the probe that straddled it */
	assert_true(g->sync.cpus[0].epochs[1].host_from < g->stop_tsc);
	assert_true(g->sync.cpus[0].epochs[1].first_reply > g->resume_tsc);
	{
		uint64_t resume = g->resume_tsc;

		assert_true(g->resync);
		g->resync = false;
		assert_int_equal(sync_guest(g, NULL, &opts, "resume"), 0);
		for (cpu = 0; cpu < 2; cpu++) {
			const struct vt_tsync_cpu *c = &g->sync.cpus[cpu];

			assert_int_equal(c->nr, 2);
			assert_offset(&c->epochs[0], before);
			assert_offset(&c->epochs[1], sim.offset);
			assert_true(c->epochs[0].host_from < resume);
			assert_int_equal(c->epochs[1].host_from, resume);
		}
	}
	assert_int_equal(g->stop_tsc, 0);
	assert_int_equal(g->resume_tsc, 0);
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

	assert_int_equal(sync_guest(g, NULL, &opts, "start"), 0);
	sim.offset += 50000000;	/* far beyond any probe's error */
	assert_int_equal(sync_guest(g, NULL, &opts, "interval"), 0);
	from1 = g->sync.cpus[0].epochs[1].host_from;
	spin_until(vt_tsc_read() + sim.stop_ticks);
	stop_and_resume();
	resume = g->resume_tsc;
	g->resync = false;
	assert_int_equal(sync_guest(g, NULL, &opts, "resume"), 0);
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
