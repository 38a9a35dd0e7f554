// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The spool's trace files (state, agent, sync, migration) against a fixture
 * (tests/data/spool-sections/) that the writers in record/session-save.c made
 * before store/ described each file as one table of sections.
 *
 * The fixture's guest has what test-spool-keys' does not: three vCPUs with
 * streams on two of them, not in CPU order (2 then 0); a vCPU without probes
 * or epochs; two epochs on one vCPU; three check intervals; an outgoing
 * migration. A section's writer that walks CPUs or records in another order
 * shows here.
 *
 * `test-spool-sections --generate DIR` writes DIR/.spool as the test expects
 * it; it made the fixture.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect.h"
#include "record/session.h"
#include "record/stream.h"
#include "store/spool.h"

#define NR_CPUS		3u
#define NR_STREAMS	2u

/* Distinct values, so that two fields swapped or read into one another show. */
#define V(n)		(2000000ull + (n))

static struct stream streams[NR_STREAMS];
static struct spool_check_iv ivs[3];
static char *stats[NR_CPUS];

static int t_epoch(struct guest *g, unsigned int cpu, unsigned int n)
{
	struct vt_tsync_epoch ep = { 0 };

	ep.host_from = V(100 + 10 * cpu + n);
	ep.map.offset = -(int64_t)V(200 + 10 * cpu + n);
	ep.map.ratio = 1;
	ep.source = 1 + n;
	ep.flags = n;
	ep.error = V(300 + 10 * cpu + n);
	ep.min_rtt = V(400 + 10 * cpu + n);
	ep.since = V(500 + 10 * cpu + n);
	return vt_tsync_cpu_update(&g->sync.cpus[cpu], &ep) < 0 ? -ENOMEM : 0;
}

static void t_fill_streams(struct guest *g)
{
	unsigned int i;

	memset(streams, 0, sizeof(streams));
	g->streams = streams;
	g->nr_streams = NR_STREAMS;
	for (i = 0; i < NR_STREAMS; i++) {
		struct stream *s = &streams[i];

		s->cpu = i ? 0 : 2;
		s->dropped_pages = V(20 + i);
		s->bad_pages = V(22 + i);
		s->bytes_session = V(24 + i);
		s->pages = V(26 + i);
		s->last_ts = V(28 + i);
		s->marked = i == 0;
		s->mark_pos = V(30 + i);
		s->mark_pre = V(32 + i);
		s->marks = V(34 + i);
		g->stats.bytes[s->cpu] = V(36 + i);
		g->stats.pages[s->cpu] = V(38 + i);
	}
	stats[0] = "entries: 12\noverrun: 0\n";
	stats[2] = "entries: 34\noverrun: 5\n";
	g->stats.text[0] = stats[0];
	g->stats.text[2] = stats[2];
}

static void t_fill_state(struct guest *g)
{
	unsigned int i;

	snprintf(g->name, sizeof(g->name), "web-1");
	g->trace_id = V(1);
	g->agent.nr_cpus = NR_CPUS;
	g->agent.subbuf = 8192;
	snprintf(g->agent.clock, sizeof(g->agent.clock), "x86-tsc");
	snprintf(g->agent.software, sizeof(g->agent.software), "trace-agent 1.2 (splice)");
	g->agent.caps = V(2);
	g->link.qemu_pid = 98765;
	g->figures.budget = (struct spool_budget){ V(3), V(4), V(5), V(6), V(7), V(8), false };
	g->figures.protocol_errors = 3;
	snprintf(g->figures.agent_notice, sizeof(g->figures.agent_notice), "buffer_percent 50");
	snprintf(g->kcache.saved.vm, sizeof(g->kcache.saved.vm), "uuid-1");
	snprintf(g->kcache.saved.why, sizeof(g->kcache.saved.why), "kaslr moved");
	g->link.nr_vcpu_tids = NR_CPUS;
	for (i = 0; i < NR_CPUS; i++)
		g->link.vcpu_tids[i] = 5000 + i;
	for (i = 0; i < GMSG_NR; i++)
		g->figures.msgs[i] = i * 7;
}

static int t_fill_sync(struct guest *g)
{
	unsigned int i;

	snprintf(g->sync.head.method, sizeof(g->sync.head.method), "probe");
	snprintf(g->sync.head.why, sizeof(g->sync.head.why), "no KVM debugfs");
	g->sync.head.host_end = V(60);
	g->sync.head.rejected = 2;
	g->sync.kvm = (struct spool_kvm){ .why = "not KVM", .host_flags = "constant_tsc nonstop_tsc",
					  .clocksource = "tsc" };
	for (i = 0; i < 3; i++)
		ivs[i] = (struct spool_check_iv){ i % NR_CPUS, i, 8 + i, i != 1, V(70 + i), V(80 + i),
						  -(int64_t)V(90 + i), -(int64_t)V(93 + i), V(96 + i) };
	g->sync.check = (struct spool_check){ true, 3, 24, 1, 2, 0, 0, ivs, 3 };
	/* vCPU 1: neither probes nor epochs. */
	g->sync.min_rtt[0] = V(40);
	g->sync.samples[0] = 16;
	g->sync.min_rtt[2] = V(42);
	g->sync.samples[2] = 15;
	return t_epoch(g, 0, 0) ?: t_epoch(g, 0, 1) ?: t_epoch(g, 2, 0);
}

static void t_fill_mig(struct guest *g)
{
	struct spool_mig_seen *s = &g->mig.seen;

	g->mig.out = true;
	snprintf(s->status, sizeof(s->status), "completed");
	s->active_tsc = V(81);
	s->stop_tsc = V(82);
	s->completed_tsc = V(83);
	s->downtime_ms = 12;
	s->total_ms = 3400;
	snprintf(s->boot_id, sizeof(s->boot_id), "0f8e-77");
	s->rt_ns = V(93);
	s->rt_tsc = V(94);
}

/* The guest whose files the fixture holds. */
static int t_fill_guest(struct guest *g)
{
	memset(g, 0, sizeof(*g));
	t_fill_streams(g);
	t_fill_state(g);
	t_fill_mig(g);
	return t_fill_sync(g);
}

static void t_free_guest(struct guest *g)
{
	unsigned int i;

	for (i = 0; i < NR_CPUS; i++)
		vt_tsync_cpu_free(&g->sync.cpus[i]);
}

/* The trace files, in SPOOL/guest-web-1/. */
static int t_write_all(int spool)
{
	struct guest *g;
	int dir, ret;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	ret = t_fill_guest(g);
	if (ret < 0)
		goto out;
	ret = spool_guest_dir(spool, "guest-web-1", &dir);
	if (ret < 0)
		goto out;
	g->spool_fd = dir;
	ret = spool_save_state(g) ?: spool_save_agent(g) ?: spool_save_sync(g) ?:
	      spool_save_migration(g);
	close(dir);
out:
	t_free_guest(g);
	free(g);
	return ret;
}

static const char *const files[] = {
	"state", "agent", "sync", "migration", "cpu0.stats", "cpu2.stats",
};

static char fixture[4096];

static int t_setup(void **state)
{
	const char *src = getenv("VT_SRCDIR");

	(void)state;
	snprintf(fixture, sizeof(fixture), "%s/tests/data/spool-sections/guest-web-1",
		 src ? src : "..");
	return 0;
}

static void t_same_file(int a, int b, const char *name)
{
	void *da, *db;
	size_t la, lb;

	assert_int_equal(spool_read_file(a, name, &da, &la, 1 << 20), 0);
	assert_int_equal(spool_read_file(b, name, &db, &lb, 1 << 20), 0);
	if (la != lb || memcmp(da, db, la))
		fail_msg("%s differs from the fixture:\n--- fixture\n%s--- written\n%s", name,
			 (char *)da, (char *)db);
	free(da);
	free(db);
}

/* What the sections write now is what the old writers wrote, byte for byte. */
static void test_fixture_save(void **state)
{
	char tmp[] = "/tmp/test-spool-sections.XXXXXX";
	int out, spool, fdir, odir;
	unsigned int i;

	(void)state;
	printf("trace files written now are the old writers' fixture, byte for byte\n");
	assert_non_null(mkdtemp(tmp));
	out = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(out >= 0);
	assert_int_equal(spool_prepare(out, &spool), 0);
	assert_int_equal(t_write_all(spool), 0);
	fdir = open(fixture, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fdir >= 0);
	odir = spool_open_dir(spool, "guest-web-1");
	assert_true(odir >= 0);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		t_same_file(fdir, odir, files[i]);
	close(fdir);
	close(odir);
	close(spool);
	assert_int_equal(spool_remove(out, tmp), 0);
	close(out);
	rmdir(tmp);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_save),
	};

	if (argc == 3 && !strcmp(argv[1], "--generate")) {
		int out = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC), spool = -1;
		int ret = out < 0 ? -errno : spool_prepare(out, &spool) ?: t_write_all(spool);

		if (ret < 0) {
			fprintf(stderr, "test-spool-sections: cannot write %s/.spool: %s\n", argv[2],
				strerror(-ret));
			return 1;
		}
		return 0;
	}
	return cmocka_run_group_tests(tests, t_setup, NULL);
}
