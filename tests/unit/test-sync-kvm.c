// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kvm clock method's epochs, without KVM: host-collector/record/sync.c,
 * sync-kvm.c and sync-check.c are linked into this test (the spool, the log,
 * the engine's timer and the event instance are stubs the link takes before
 * the library's), KVM's debugfs is a fixture tree (a copy in a
 * temporary directory where values change), and kvm:kvm_write_tsc_offset
 * comes from a stub of tscwatch.c that hands out the writes the test made
 * up. Times are the real TSC's, so that debugfs reads (which read it) fall
 * where the test wants them among the writes.
 *
 *  - exact: an epoch per write at its moment, with its offset and the
 *    debugfs ratio; a write read a poll late is put in its place; one from
 *    before the first debugfs read replaces it; a read that raced a write;
 *    a lost write found by the next one's previous offset (bounded); two
 *    writes stamped out of order put back by their offsets; debugfs at the
 *    end disagreeing with the writes; a read that found the instance filling
 *    brings the next one forward to 20 ms;
 *  - re-reads (no events): a change bounded by its size, the moment between
 *    two reads;
 *  - --sync-check: replies inside and outside, across a change;
 *  - --incoming: the epochs begin at QEMU's RESUME, from a watch begun
 *    before the guest arrived;
 *  - a reset: the mapping ends at QEMU's stamp of the RESET;
 *  - the TIME_SHIFT table made of exact epochs maps every guest time the
 *    vCPU can have read to its host time exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "record.h"
#include "session.h"
#include "stream.h"
#include "sync.h"
#include "sync-int.h"
#include "tscwatch.h"
#include "vt_tsync.h"

/* ---- stubs: the spool, the log, the event instance ---- */

static unsigned int saves;

void collect_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

int spool_save_sync(const struct guest *g)
{
	(void)g;
	saves++;
	return 0;
}

static struct {
	bool refuse;			/* tscwatch_start() fails */
	struct tscwatch_change ev[64];	/* what the next tscwatch_read() hands out */
	size_t n;
	struct tscwatch_change late[4];	/* what a later read hands out: events that trail */
	size_t n_late;
	unsigned int late_reads;	/* reads before the late ones are seen */
	uint64_t from;
	uint64_t lost;
	bool busy;			/* tscwatch_busy() */
	int dummy;
} tw;

struct tscwatch *tscwatch_start(pid_t qemu_pid, const char *tag, char *why, size_t why_len)
{
	(void)qemu_pid;
	(void)tag;
	if (tw.refuse) {
		snprintf(why, why_len, "stub: no such event");
		return NULL;
	}
	tw.from = vt_tsc_read();
	return (struct tscwatch *)&tw.dummy;
}

int tscwatch_read(struct tscwatch *w, struct tscwatch_change **changes, size_t *nr)
{
	(void)w;
	*changes = malloc(sizeof(tw.ev));
	if (!*changes)
		return -ENOMEM;
	if (tw.n_late && tw.late_reads && !--tw.late_reads) {
		memcpy(tw.ev + tw.n, tw.late, tw.n_late * sizeof(tw.late[0]));
		tw.n += tw.n_late;
		tw.n_late = 0;
	}
	memcpy(*changes, tw.ev, tw.n * sizeof(tw.ev[0]));
	*nr = tw.n;
	tw.n = 0;
	return 0;
}

uint64_t tscwatch_from(const struct tscwatch *w)
{
	(void)w;
	return tw.from;
}

uint64_t tscwatch_lost(const struct tscwatch *w)
{
	(void)w;
	return tw.lost;
}

void tscwatch_get_stats(const struct tscwatch *w, struct tscwatch_stats *st)
{
	(void)w;
	memset(st, 0, sizeof(*st));
}

bool tscwatch_busy(const struct tscwatch *w)
{
	(void)w;
	return tw.busy;
}

const char *tscwatch_name(const struct tscwatch *w)
{
	(void)w;
	return "stub";
}

void tscwatch_free(struct tscwatch *w)
{
	(void)w;
}

/* Until the TSC passed @tsc: made-up writes must lie in the past when they are read. */
static void spin_until(uint64_t tsc)
{
	while (vt_tsc_read() <= tsc)
		;
}

static void write_event(uint64_t tsc, uint32_t vcpu, int64_t prev, int64_t next)
{
	assert_true(tw.n < sizeof(tw.ev) / sizeof(tw.ev[0]));
	tw.ev[tw.n++] = (struct tscwatch_change){ .tsc = tsc, .vcpu = vcpu, .prev = prev, .next = next };
}

/* ---- the fixture ---- */

#define PID	4242
#define OFF0	-35270968921ll
#define OFF1	-35335404954ll

struct fx {
	char root[64];		/* the debugfs copy */
	char vm[128];
	struct guest *g;
	struct record_opts o;
	struct stream streams[2];
};

static void set_offset(struct fx *f, unsigned int vcpu, int64_t off)
{
	char path[256], val[32];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/vcpu%u", f->vm, vcpu);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/vcpu%u/tsc-offset", f->vm, vcpu);
	fp = fopen(path, "w");
	assert_non_null(fp);
	snprintf(val, sizeof(val), "%lld\n", (long long)off);
	fputs(val, fp);
	fclose(fp);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char path[192];

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/vt-test-sync-kvm.XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(path, sizeof(path), "%s/kvm", f->root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(f->vm, sizeof(f->vm), "%s/kvm/%d-13", f->root, PID);
	assert_int_equal(mkdir(f->vm, 0700), 0);
	set_offset(f, 0, OFF0);
	set_offset(f, 1, OFF1);
	f->g = calloc(1, sizeof(*f->g));
	assert_non_null(f->g);
	snprintf(f->g->name, sizeof(f->g->name), "sim");
	snprintf(f->g->agent.clock, sizeof(f->g->agent.clock), "x86-tsc");
	f->g->agent.caps = VT_PROTO_CAP_SYNC_TSC;
	f->g->agent.nr_cpus = 2;
	f->streams[0].cpu = 0;
	f->streams[1].cpu = 1;
	f->g->streams = f->streams;
	f->g->nr_streams = 2;
	f->g->state = G_RUNNING;
	f->g->link.qemu_pid = PID;
	f->g->sync.save = spool_save_sync;	/* as session_begin() sets it */
	f->o = (struct record_opts){ .sync = "kvm", .debugfs = f->root, .sync_probes = 16 };
	memset(&tw, 0, sizeof(tw));
	saves = 0;
	*state = f;
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sync_release(f->g);
	free(f->g);
	nftw(f->root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static const struct vt_tsync_epoch *ep(const struct guest *g, unsigned int cpu, uint32_t i)
{
	assert_true(i < g->sync.cpus[cpu].nr);
	return &g->sync.cpus[cpu].epochs[i];
}

/* The start: the watch is on, debugfs is read once, both vCPUs have their offset. */
static void begin(struct fx *f)
{
	assert_int_equal(sync_kvm_begin(f->g, &f->o), 0);
	assert_int_equal(sync_prepare(f->g, &f->o, "start"), 0);
	assert_string_equal(f->g->sync.head.method, "kvm");
}

/* ---- exact: kvm_write_tsc_offset ---- */

static void exact_epochs(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t r0, t;

	begin(f);
	assert_non_null(g->sync.watch);
	assert_string_equal(g->sync.kvm.changes_from, "events");
	assert_int_equal(g->sync.cpus[0].nr, 1);
	assert_int_equal(ep(g, 0, 0)->map.offset, OFF0);
	assert_int_equal(ep(g, 1, 0)->map.offset, OFF1);
	assert_int_equal(ep(g, 0, 0)->source, VT_TSYNC_SRC_KVM);
	r0 = ep(g, 0, 0)->host_from;
	/* A load and its catch-up on vCPU 0; a guest TSC write on vCPU 1. */
	t = vt_tsc_read();
	write_event(t + 1000, 0, OFF0, OFF0 - 900000000);
	write_event(t + 5000, 0, OFF0 - 900000000, OFF0 + 3000);
	write_event(t + 7000, 1, OFF1, OFF1 + 200000000);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.cpus[0].nr, 3);
	assert_int_equal(ep(g, 0, 0)->host_from, r0);
	assert_int_equal(ep(g, 0, 1)->host_from, t + 1000);
	assert_int_equal(ep(g, 0, 1)->map.offset, OFF0 - 900000000);
	assert_int_equal(ep(g, 0, 1)->source, VT_TSYNC_SRC_KVM_EVENT);
	assert_int_equal(ep(g, 0, 2)->host_from, t + 5000);
	assert_int_equal(ep(g, 0, 2)->map.offset, OFF0 + 3000);
	assert_int_equal(g->sync.cpus[1].nr, 2);
	assert_int_equal(ep(g, 1, 1)->map.offset, OFF1 + 200000000);
	/* vCPU 1's write seen one poll after a later one of vCPU 0: each in its place. */
	write_event(t + 9000, 1, OFF1 + 200000000, OFF1 + 200000500);
	sync_kvm_tick(g);
	write_event(t + 8000, 0, OFF0 + 3000, OFF0 + 4000);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.cpus[0].nr, 4);
	assert_int_equal(ep(g, 0, 3)->host_from, t + 8000);
	assert_int_equal(g->sync.kvm.changes, 5);
	assert_int_equal(g->sync.kvm.breaks, 0);
	spin_until(t + 10000);
	/* At the stop debugfs agrees with the last writes: exact throughout. */
	set_offset(f, 0, OFF0 + 4000);
	set_offset(f, 1, OFF1 + 200000500);
	assert_int_equal(sync_prepare(g, &f->o, "stop"), 0);
	assert_int_equal(g->sync.kvm.mismatch, 0);
	for (unsigned int cpu = 0; cpu < 2; cpu++)
		for (uint32_t i = 0; i < g->sync.cpus[cpu].nr; i++)
			assert_int_equal(ep(g, cpu, i)->error, 0);
}

/*
 * A write from between the watch's start and the first read comes in after
 * that read: it starts the vCPU's epochs, what it replaced holds from the
 * watch's start, and the read that only confirms it goes.
 */
static void write_before_first_read(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;

	tw.from = 0;
	assert_int_equal(sync_kvm_begin(g, &f->o), 0);
	{
		uint64_t from = tw.from, r0 = ep(g, 0, 0)->host_from;

		assert_true(from < r0);
		/* debugfs read OFF0 already: the write set it */
		write_event(from + (r0 - from) / 2, 0, OFF0 - 777, OFF0);
		assert_int_equal(sync_prepare(g, &f->o, "start"), 0);
		assert_int_equal(g->sync.cpus[0].nr, 2);
		assert_int_equal(ep(g, 0, 0)->host_from, from);
		assert_int_equal(ep(g, 0, 0)->map.offset, OFF0 - 777);
		assert_int_equal(ep(g, 0, 1)->host_from, from + (r0 - from) / 2);
		assert_int_equal(ep(g, 0, 1)->map.offset, OFF0);
		assert_int_equal(ep(g, 0, 1)->source, VT_TSYNC_SRC_KVM_EVENT);
		assert_int_equal(g->sync.kvm.breaks, 0);
	}
}

/* A write inside the read's window: the read saw its result, before it the old offset held. */
static void read_races_write(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	const struct vt_tsync_epoch *a;

	begin(f);
	a = ep(g, 1, 0);
	assert_true(a->first_reply > a->host_from);
	write_event(a->host_from + (a->first_reply - a->host_from) / 2, 1, OFF1 - 5, OFF1);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.cpus[1].nr, 2);
	assert_int_equal(ep(g, 1, 0)->map.offset, OFF1 - 5);
	assert_int_equal(ep(g, 1, 1)->map.offset, OFF1);
	assert_int_equal(g->sync.kvm.breaks, 0);
	assert_int_equal(ep(g, 1, 0)->error, 0);
}

/*
 * A write the instance lost: the next one's previous offset is not the one
 * in force. The epoch before gets the unseen change as its bound; debugfs
 * at the end disagreeing with the writes is counted.
 */
static void lost_write(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t t;

	begin(f);
	t = vt_tsc_read();
	tw.lost = 1;
	write_event(t + 100, 0, OFF0 + 50000, OFF0 + 60000);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.kvm.breaks, 1);
	assert_int_equal(g->sync.kvm.lost, 1);
	assert_int_equal(ep(g, 0, 0)->error, 50000);
	assert_true(ep(g, 0, 0)->flags & VT_TSYNC_EPOCH_UNSEEN);
	assert_int_equal(ep(g, 0, 1)->map.offset, OFF0 + 60000);
	assert_true(g->sync.kvm.note[0]);
	/* vCPU 1 changed and nothing said so */
	set_offset(f, 0, OFF0 + 60000);
	set_offset(f, 1, OFF1 + 1);
	assert_int_equal(sync_prepare(g, &f->o, "stop"), 0);
	assert_int_equal(g->sync.kvm.mismatch, 1);
}

/* The engine's timer, stubbed: what sync.c asked of it. */
static struct {
	unsigned int arms;
	uint64_t delay, period;
} timer;

void engine_timer_arm(struct engine *e, struct engine_timer *t, uint64_t delay_ns,
		      uint64_t period_ns)
{
	(void)e;
	(void)t;
	timer.arms++;
	timer.delay = delay_ns;
	timer.period = period_ns;
}

/*
 * A read that found the instance filling (tscwatch_busy()): the next is due
 * in KVM_BUSY_NS, not a whole KVM_POLL_NS later (under mmiotrace a nested
 * host's writes overran 256 KiB in 200 ms), and the period goes on after it.
 * A calm read leaves the timer alone. The timer runs from the watch's start.
 */
static void busy_watch_read_again_soon(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	struct recording rec = { 0 };

	rec.e = (struct engine *)&tw.dummy;
	g->rec = &rec;
	memset(&timer, 0, sizeof(timer));
	begin(f);
	/* armed as the watch starts, not once the setup is over (7-10 s later under mmiotrace) */
	assert_int_equal(timer.arms, 1);
	assert_int_equal(timer.delay, KVM_POLL_NS);
	assert_int_equal(timer.period, KVM_POLL_NS);
	memset(&timer, 0, sizeof(timer));
	sync_kvm_tick(g);
	assert_int_equal(timer.arms, 0);
	tw.busy = true;
	sync_kvm_tick(g);
	assert_int_equal(timer.arms, 1);
	assert_true(timer.delay == KVM_BUSY_NS && KVM_BUSY_NS <= 20 * 1000000ull);
	assert_int_equal(timer.period, KVM_POLL_NS);
	tw.busy = false;
	sync_kvm_tick(g);
	assert_int_equal(timer.arms, 1);
	g->rec = NULL;
}

/*
 * The stop's check reads debugfs a write ahead of the events it has: the
 * write's event is readable a moment later (as once seen under nested
 * KVM). Read again, it is one more epoch, not "a change not seen".
 */
static void event_trails_debugfs(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t t;

	begin(f);
	t = vt_tsc_read();
	set_offset(f, 1, OFF1 - 6478976);
	tw.late[0] = (struct tscwatch_change){ .tsc = t, .vcpu = 1, .prev = OFF1, .next = OFF1 - 6478976 };
	tw.n_late = 1;
	tw.late_reads = 2;	/* not at the first comparison's read, at the second's */
	assert_int_equal(sync_prepare(g, &f->o, "stop"), 0);
	assert_int_equal(g->sync.kvm.mismatch, 0);
	assert_false(g->sync.kvm.note[0]);
	assert_int_equal(ep(g, 1, g->sync.cpus[1].nr - 1)->map.offset, OFF1 - 6478976);
}

/*
 * Two writes for vCPU 0 made on two host CPUs whose TSCs are not in step
 * come stamped out of order (the nested L1: "a change not seen", 570 ns):
 * each names the offset it replaced, and the chain puts them back when they
 * lie within 1 ms. Beyond that they are what they say: a change not seen.
 */
static void writes_stamped_out_of_order(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	struct recording rec = { 0 };
	uint64_t t, r0;

	rec.tsc.khz = 2000000;		/* a 1 ms window of 2e6 ticks */
	g->rec = &rec;
	begin(f);
	r0 = ep(g, 0, 0)->host_from;
	t = vt_tsc_read();
	/* OFF0 -> +570 was written first, on a CPU whose TSC runs 200 ticks ahead */
	write_event(t + 100, 0, OFF0 + 570, OFF0 + 1140);
	write_event(t + 300, 0, OFF0, OFF0 + 570);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.kvm.breaks, 0);
	assert_int_equal(g->sync.kvm.reordered, 1);
	assert_int_equal(g->sync.cpus[0].nr, 3);
	assert_int_equal(ep(g, 0, 0)->host_from, r0);
	assert_int_equal(ep(g, 0, 1)->host_from, t + 100);
	assert_int_equal(ep(g, 0, 1)->map.offset, OFF0 + 570);
	assert_int_equal(ep(g, 0, 2)->host_from, t + 300);
	assert_int_equal(ep(g, 0, 2)->map.offset, OFF0 + 1140);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(ep(g, 0, i)->error, 0);
	/* vCPU 1's writes in between do not matter; 2 ms apart is beyond the window */
	write_event(t + 1000, 1, OFF1, OFF1 + 10);
	write_event(t + 2000, 0, OFF0 + 2000, OFF0 + 3000);
	write_event(t + 4002000, 0, OFF0 + 1140, OFF0 + 2000);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.kvm.reordered, 1);
	assert_int_equal(g->sync.kvm.breaks, 2);
	assert_int_equal(g->sync.cpus[1].nr, 2);
	spin_until(t + 4003000);
	set_offset(f, 0, OFF0 + 2000);
	set_offset(f, 1, OFF1 + 10);
	assert_int_equal(sync_prepare(g, &f->o, "stop"), 0);
	assert_int_equal(g->sync.kvm.mismatch, 0);
	g->rec = NULL;
}

/*
 * The first debugfs read comes before the writes around it are read, and
 * its stamp is this CPU's TSC, the writes' theirs: in a nested L1 the read
 * gave the value a write stamped 1-1.5 ms after it made. The writes chain
 * without the read: it goes, and nothing is called a change not seen (the
 * instance lost nothing; with a loss, lost_write's break stands).
 */
static void read_between_chained_writes(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t from, r0, mid;

	tw.from = 0;
	assert_int_equal(sync_kvm_begin(g, &f->o), 0);
	from = tw.from;
	r0 = ep(g, 1, 0)->host_from;
	mid = from + (r0 - from) / 2;
	assert_true(from < mid && mid < r0);
	write_event(mid, 1, OFF1 - 100, OFF1 + 7000);
	write_event(r0 + 100, 1, OFF1 + 7000, OFF1 + 9000);
	write_event(r0 + 200, 1, OFF1 + 9000, OFF1);	/* what the read said */
	spin_until(r0 + 300);
	assert_int_equal(sync_prepare(g, &f->o, "start"), 0);
	assert_int_equal(g->sync.kvm.breaks, 0);
	assert_int_equal(g->sync.cpus[1].nr, 4);
	assert_int_equal(ep(g, 1, 0)->map.offset, OFF1 - 100);
	assert_int_equal(ep(g, 1, 1)->host_from, mid);
	assert_int_equal(ep(g, 1, 1)->map.offset, OFF1 + 7000);
	assert_int_equal(ep(g, 1, 2)->host_from, r0 + 100);
	assert_int_equal(ep(g, 1, 3)->host_from, r0 + 200);
	assert_int_equal(ep(g, 1, 3)->map.offset, OFF1);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(ep(g, 1, i)->error, 0);
	/*
	 * vCPU 0: the read is its only epoch and says what a write stamped
	 * after it made; the write before that replaced OFF0 + 202, held
	 * since before the watch (the nested L1: "a change not seen", 82.6 ns).
	 */
	write_event(r0 + 400, 0, OFF0 + 202, OFF0 - 5000);
	write_event(r0 + 500, 0, OFF0 - 5000, OFF0);
	spin_until(r0 + 600);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.kvm.breaks, 0);
	assert_int_equal(g->sync.kvm.changes, 5);
	assert_int_equal(g->sync.cpus[0].nr, 3);
	assert_int_equal(ep(g, 0, 0)->host_from, from);
	assert_int_equal(ep(g, 0, 0)->map.offset, OFF0 + 202);
	assert_int_equal(ep(g, 0, 1)->host_from, r0 + 400);
	assert_int_equal(ep(g, 0, 2)->map.offset, OFF0);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(ep(g, 0, i)->error, 0);
}

/*
 * KVM on a host whose TSC it distrusts writes each vCPU's offset hundreds of
 * times a second (the nested L1: 290 a second per vCPU). Past
 * VT_TSYNC_MAX_EPOCHS the writes are merged into the last epoch's bound and
 * counted as merged, not each also called a change not seen (26846 of them
 * in one 200 s recording).
 */
static void epochs_full(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t t;
	uint32_t i, extra = 10;

	begin(f);
	t = vt_tsc_read();
	for (i = 0; i < VT_TSYNC_MAX_EPOCHS + extra; i++) {
		struct tscwatch_change ch = {
			.tsc = t + 1000 + 10 * (uint64_t)i, .vcpu = 0,
			.prev = i % 2 ? OFF0 + 4000 : OFF0, .next = i % 2 ? OFF0 : OFF0 + 4000,
		};

		sync_kvm_apply(g, &ch);
	}
	assert_int_equal(g->sync.cpus[0].nr, VT_TSYNC_MAX_EPOCHS);
	assert_int_equal(g->sync.kvm.breaks, 0);
	/* the first read's epoch and the writes that fitted: one write over, then the extra */
	assert_int_equal(g->sync.kvm.merged, extra + 1);
	assert_int_equal(g->sync.kvm.changes, VT_TSYNC_MAX_EPOCHS + extra);
	assert_int_equal(ep(g, 0, VT_TSYNC_MAX_EPOCHS - 1)->error, 4000);
}

/* ---- re-reads ---- */

static void rereads_bound_the_change(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t r0, r1;

	tw.refuse = true;
	begin(f);
	assert_null(g->sync.watch);
	assert_string_equal(g->sync.kvm.changes_from, "reread");
	assert_non_null(strstr(g->sync.kvm.why, "stub: no such event"));
	assert_int_equal(sync_kvm_period_ns(g), KVM_REREAD_NS);
	r0 = g->sync.kvm_last_read;
	sync_kvm_tick(g);	/* nothing changed: no epoch */
	assert_int_equal(g->sync.cpus[0].nr, 1);
	r1 = g->sync.kvm_last_read;
	assert_true(r1 > r0);
	set_offset(f, 0, OFF0 - 123456);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.cpus[0].nr, 2);
	assert_int_equal(g->sync.cpus[1].nr, 1);
	assert_int_equal(ep(g, 0, 0)->error, 123456);
	assert_true(ep(g, 0, 0)->flags & VT_TSYNC_EPOCH_UNSEEN);
	assert_int_equal(ep(g, 0, 1)->since, r1);
	assert_int_equal(ep(g, 0, 1)->host_from, g->sync.kvm_last_read);
	assert_int_equal(ep(g, 0, 1)->error, 0);
	assert_int_equal(ep(g, 1, 0)->error, 0);
	assert_int_equal(g->sync.kvm.changes, 1);
}

static void no_kvm_events_option(void **state)
{
	struct fx *f = *state;

	f->o.no_kvm_events = true;
	begin(f);
	assert_null(f->g->sync.watch);
	assert_non_null(strstr(f->g->sync.kvm.why, "--no-kvm-events"));
}

/* ---- --sync-check ---- */

static void probe(struct vt_tsync_sample *s, unsigned int cpu, uint64_t t1, uint64_t t2, int64_t off)
{
	*s = (struct vt_tsync_sample){ .t1 = t1, .t2 = t2, .g = (t1 + t2) / 2 + off,
				       .cpu = (int32_t)cpu, .want_cpu = (int32_t)cpu };
}

static void sync_check(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	struct vt_tsync_sample s[3];
	uint64_t t;

	f->o.sync_check = true;
	assert_int_equal(sync_kvm_begin(g, &f->o), 0);
	assert_int_equal(sync_prepare(g, &f->o, "start"), 1);	/* probes are due */
	assert_true(g->sync.checking);
	t = vt_tsc_read();
	write_event(t + 100000, 0, OFF0, OFF0 + 40000000);
	/* vCPU 0: one reply before the change, one across it, one after; all true */
	probe(&s[0], 0, t + 10000, t + 30000, OFF0);
	probe(&s[1], 0, t + 90000, t + 110000, OFF0);
	s[1].g = t + 95000 + OFF0;	/* read before the change */
	probe(&s[2], 0, t + 200000, t + 220000, OFF0 + 40000000);
	spin_until(t + 220000);
	assert_int_equal(sync_probe_result(g, 0, s, 3), 0);
	/* vCPU 1: a reply no offset explains */
	probe(&s[0], 1, t + 10000, t + 30000, OFF1 + 5000000);
	assert_int_equal(sync_probe_result(g, 1, s, 1), 0);
	assert_int_equal(g->sync.cpus[0].nr, 1);	/* replies are not epochs */
	sync_burst_done(g, "start");
	assert_false(g->sync.checking);
	sync_kvm_end(g);
	assert_int_equal(g->sync.check.bursts, 1);
	assert_int_equal(g->sync.check.replies, 4);
	assert_int_equal(g->sync.check.straddling, 1);
	assert_int_equal(g->sync.check.outside, 1);
	assert_int_equal(g->sync.check.nr_ivs, 3);
	assert_true(g->sync.check.ivs[0].inside);
	assert_int_equal(g->sync.check.ivs[0].offset, OFF0);
	assert_true(g->sync.check.ivs[0].lo <= OFF0 && OFF0 <= g->sync.check.ivs[0].hi);
	assert_true(g->sync.check.ivs[1].inside);
	assert_int_equal(g->sync.check.ivs[1].offset, OFF0 + 40000000);
	assert_false(g->sync.check.ivs[2].inside);
	assert_int_equal(g->sync.check.ivs[2].cpu, 1);
}

/* ---- a reset ---- */

/*
 * QEMU's RESET: the reset's writes come before its stamp and are applied,
 * the epochs after it are listed, not applied.
 */
static void reset_ends_the_mapping(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t t;

	begin(f);
	t = vt_tsc_read();
	/* the reset's writes (KVM keeps the TSC running), QEMU's RESET, a load after it */
	write_event(t + 1000, 0, OFF0, OFF0 + 10);
	write_event(t + 1500, 1, OFF1, OFF1 + 20);
	write_event(t + 90000, 0, OFF0 + 10, OFF0 - 5000);
	spin_until(t + 90000);
	sync_reset(g, t + 50000);
	assert_int_equal(g->sync.head.reset_tsc, t + 50000);
	assert_int_equal(g->sync.head.host_end, t + 50000);
	assert_int_equal(vt_tsync_cpu_until(&g->sync.cpus[0], g->sync.head.host_end), 2);
	assert_int_equal(vt_tsync_cpu_until(&g->sync.cpus[1], g->sync.head.host_end), 2);
	assert_int_equal(g->sync.cpus[0].nr, 3);	/* still listed */
}

/* A failure without a RESET: nothing is cut. */
static void failure_without_reset(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t end;

	begin(f);
	end = g->sync.head.host_end;
	sync_reset(g, 0);
	assert_int_equal(g->sync.head.reset_tsc, 0);
	assert_int_equal(g->sync.head.host_end, end);
}

/* ---- the TIME_SHIFT table of exact epochs ---- */

static void timeshift_exact(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	struct vt_tsync_tshift ts;
	uint64_t t, h, gt, back;
	uint32_t i;

	begin(f);
	t = vt_tsc_read();
	for (i = 0; i < 20; i++) {
		int64_t steady = OFF0 + (int64_t)i * 3000, last = i ? steady - 3000 : OFF0;

		/*
		 * Put 5000 ticks before the load; the load writes the offset that
		 * continues the guest TSC from where it was put, the catch-up
		 * the steady one (as KVM does on a host whose TSC it distrusts).
		 */
		write_event(t + i * 100000 + 10000, 0, last, last - 5000);
		write_event(t + i * 100000 + 30000, 0, last - 5000, steady);
	}
	spin_until(t + 2000000);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.cpus[0].nr, 41);
	g->sync.head.host_end = t + 3000000;
	assert_int_equal(vt_tsync_tshift_build(g->sync.cpus[0].epochs, g->sync.cpus[0].nr,
					       g->sync.head.host_end, false, &ts), 0);
	/* Every host time the guest runs at (from a catch-up to the next put) maps back exactly. */
	for (i = 0; i < 20; i++) {
		for (h = t + i * 100000 + 30000; h < t + i * 100000 + 105000; h += 797) {
			assert_int_equal(vt_tsc_host_to_guest(&vt_tsync_cpu_at(&g->sync.cpus[0], h)->map,
							      h, &gt), 0);
			assert_int_equal(vt_tsync_tshift_apply(&ts, false, gt, &back), 0);
			assert_int_equal(back, h);
		}
	}
	vt_tsync_tshift_free(&ts);
}

/* The fixture's scaling ratio (Intel, 48 fraction bits) goes with the writes, which carry none. */
static void scaled_writes(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	uint64_t t;

	static char fixture[4096];
	const char *src = getenv("VT_SRCDIR");

	snprintf(fixture, sizeof(fixture), "%s/tests/data/kvm-debugfs/intel48", src ? src : ".");
	f->o.debugfs = fixture;
	begin(f);
	assert_int_equal(ep(g, 0, 0)->map.ratio, 335089257988876ull);
	assert_int_equal(ep(g, 0, 0)->map.frac_bits, 48);
	t = vt_tsc_read();
	write_event(t + 10, 0, -1234567890123ll, -1234567000000ll);
	sync_kvm_tick(g);
	assert_int_equal(ep(g, 0, 1)->map.ratio, 335089257988876ull);
	assert_int_equal(ep(g, 0, 1)->map.frac_bits, 48);
	assert_int_equal(ep(g, 0, 1)->map.offset, -1234567000000ll);
}

/*
 * --incoming: the watch begins before the guest arrives (no vCPUs known yet:
 * the agent has not answered), and the takeover's sync comes after QEMU's
 * RESUME and after KVM's writes around it. Each vCPU's epochs begin with the
 * offset in force at the RESUME (the migrated state's write), the writes
 * after it follow; what the destination's vCPU held before is left out; a
 * vCPU no write reached gets the debugfs read of the takeover. (Read at the
 * takeover alone, the offset of that moment mapped everything before it.)
 */
static void incoming_epochs_from_resume(void **state)
{
	struct fx *f = *state;
	struct guest *g = f->g;
	const int64_t mig = -987654321000ll;
	uint64_t t;

	g->mig.incoming = true;
	g->agent.nr_cpus = 0;
	g->state = G_HELLO;
	assert_int_equal(sync_kvm_begin(g, &f->o), 0);
	assert_non_null(g->sync.watch);
	assert_int_equal(g->sync.cpus[0].nr, 0);
	t = vt_tsc_read();
	/* vCPU 0: the incoming state's write, the RESUME, two loads after it. */
	write_event(t + 1000, 0, OFF0, mig);
	g->mig.seen.resume_tsc = t + 3000;
	write_event(t + 5000, 0, mig, mig + 4000);
	write_event(t + 9000, 0, mig + 4000, mig + 7000);
	spin_until(t + 20000);
	set_offset(f, 0, mig + 7000);
	set_offset(f, 1, OFF1 + 55);
	/* The agent answered, the session is taken over: the resume's sync. */
	g->agent.nr_cpus = 2;
	g->state = G_RUNNING;
	g->mig.seen.taken_tsc = vt_tsc_read();
	assert_int_equal(sync_prepare(g, &f->o, "resume"), 0);
	assert_string_equal(g->sync.head.method, "kvm");
	assert_int_equal(g->sync.cpus[0].nr, 3);
	assert_int_equal(ep(g, 0, 0)->map.offset, mig);
	assert_int_equal(ep(g, 0, 0)->host_from, t + 1000);
	assert_int_equal(ep(g, 0, 1)->host_from, t + 5000);
	assert_int_equal(ep(g, 0, 1)->map.offset, mig + 4000);
	assert_int_equal(ep(g, 0, 2)->host_from, t + 9000);
	assert_int_equal(ep(g, 0, 2)->map.offset, mig + 7000);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(ep(g, 0, i)->source, VT_TSYNC_SRC_KVM_EVENT);
		assert_int_equal(ep(g, 0, i)->error, 0);
	}
	/* vCPU 1: no write since the watch began: the takeover's read. */
	assert_int_equal(g->sync.cpus[1].nr, 1);
	assert_int_equal(ep(g, 1, 0)->map.offset, OFF1 + 55);
	assert_int_equal(ep(g, 1, 0)->source, VT_TSYNC_SRC_KVM);
	assert_true(ep(g, 1, 0)->host_from >= g->mig.seen.taken_tsc);
	assert_int_equal(g->sync.kvm.breaks, 0);
	/* Later writes go on from there. */
	t = vt_tsc_read();
	write_event(t + 1000, 1, OFF1 + 55, OFF1 + 99);
	sync_kvm_tick(g);
	assert_int_equal(g->sync.cpus[1].nr, 2);
	assert_int_equal(ep(g, 1, 1)->map.offset, OFF1 + 99);
	assert_int_equal(g->sync.kvm.breaks, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(exact_epochs, setup, teardown),
		cmocka_unit_test_setup_teardown(write_before_first_read, setup, teardown),
		cmocka_unit_test_setup_teardown(read_races_write, setup, teardown),
		cmocka_unit_test_setup_teardown(lost_write, setup, teardown),
		cmocka_unit_test_setup_teardown(busy_watch_read_again_soon, setup, teardown),
		cmocka_unit_test_setup_teardown(event_trails_debugfs, setup, teardown),
		cmocka_unit_test_setup_teardown(writes_stamped_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(epochs_full, setup, teardown),
		cmocka_unit_test_setup_teardown(read_between_chained_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(rereads_bound_the_change, setup, teardown),
		cmocka_unit_test_setup_teardown(no_kvm_events_option, setup, teardown),
		cmocka_unit_test_setup_teardown(sync_check, setup, teardown),
		cmocka_unit_test_setup_teardown(reset_ends_the_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(failure_without_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(timeshift_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(scaled_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(incoming_epochs_from_resume, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
