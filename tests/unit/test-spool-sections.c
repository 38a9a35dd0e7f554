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

	assert_int_equal(collect_read_file(a, name, &da, &la, 1 << 20), 0);
	assert_int_equal(collect_read_file(b, name, &db, &lb, 1 << 20), 0);
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

/* @t loaded from the fixture's guest holds every value the fixture was written with. */
static void t_check_loaded(const struct spool_trace *t, const struct guest *g)
{
	unsigned int i, j;

	assert_string_equal(t->name, g->name);
	assert_int_equal(t->trace_id, g->trace_id);
	assert_memory_equal(&t->agent, &g->agent, sizeof(t->agent));
	assert_string_equal(t->figures.agent_notice, g->figures.agent_notice);
	assert_memory_equal(&t->figures.budget, &g->figures.budget, sizeof(t->figures.budget));
	assert_memory_equal(t->figures.msgs, g->figures.msgs, sizeof(t->figures.msgs));
	assert_memory_equal(&t->kcache, &g->kcache.saved, sizeof(t->kcache));
	assert_int_equal(t->nr_tids, NR_CPUS);
	assert_memory_equal(t->tids, g->link.vcpu_tids, NR_CPUS * sizeof(t->tids[0]));
	for (i = 0; i < NR_STREAMS; i++) {
		const struct stream *s = &streams[i];
		const struct spool_cpu *c = &t->cpus[s->cpu];
		const struct spool_mig_cpu *mc = &t->mig.cpus[s->cpu];

		assert_int_equal(c->dropped, s->dropped_pages);
		assert_int_equal(c->bad_pages, s->bad_pages);
		assert_int_equal(c->agent_bytes, g->stats.bytes[s->cpu]);
		assert_int_equal(c->agent_pages, g->stats.pages[s->cpu]);
		assert_int_equal(mc->bytes, s->bytes_session);
		assert_int_equal(mc->marks, s->marks);
		assert_int_equal(mc->marked, s->marked);
	}
	assert_int_equal(t->cpus[1].dropped + t->cpus[1].agent_bytes + t->mig.cpus[1].bytes, 0);
	assert_memory_equal(&t->sync_head, &g->sync.head, sizeof(t->sync_head));
	assert_memory_equal(&t->kvm, &g->sync.kvm, sizeof(t->kvm));
	assert_int_equal(t->check.nr_ivs, 3);
	assert_memory_equal(t->check.ivs, ivs, sizeof(ivs));
	for (i = 0; i < NR_CPUS; i++) {
		assert_int_equal(t->min_rtt[i], g->sync.min_rtt[i]);
		assert_int_equal(t->samples[i], g->sync.samples[i]);
		assert_int_equal(t->sync[i].nr, g->sync.cpus[i].nr);
		for (j = 0; j < t->sync[i].nr; j++)
			assert_memory_equal(&t->sync[i].epochs[j], &g->sync.cpus[i].epochs[j],
					    sizeof(struct vt_tsync_epoch));
	}
	assert_string_equal(t->mig.direction, "out");
	assert_memory_equal(&t->mig.seen, &g->mig.seen, sizeof(t->mig.seen));
}

/* The fixture loads with the tables; what they load, saved with them, is the fixture again. */
static void test_round_trip(void **state)
{
	static const struct spool_file *const tf[] = {
		&spool_state_file, &spool_agent_file, &spool_sync_file, &spool_migration_file,
	};
	struct spool_trace *t = calloc(1, sizeof(*t));
	struct guest *g = calloc(1, sizeof(*g));
	unsigned int i;
	int dir;

	(void)state;
	printf("the fixture loads with every value; saved again by the same tables, the same bytes\n");
	assert_non_null(t);
	assert_non_null(g);
	assert_int_equal(t_fill_guest(g), 0);
	dir = open(fixture, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir >= 0);
	assert_int_equal(spool_trace_load(dir, false, t), 0);
	assert_true(t->have_state && t->have_agent && t->have_sync && t->mig.have);
	t_check_loaded(t, g);
	/* The write order: the streams, as the state file's droppedN lines list them. */
	t->streams = (struct spool_idx){ NR_STREAMS, { 2, 0 } };
	for (i = 0; i < sizeof(tf) / sizeof(tf[0]); i++) {
		struct spool_text text = { 0 };
		void *want;
		size_t len;

		assert_int_equal(spool_file_text(tf[i], t, &text), 0);
		assert_int_equal(collect_read_file(dir, tf[i]->name, &want, &len, 1 << 20), 0);
		if (text.len != len || memcmp(text.buf, want, len))
			fail_msg("%s saved from what it loaded differs:\n%.*s", tf[i]->name,
				 (int)text.len, text.buf);
		free(want);
		free(text.buf);
	}
	spool_trace_free(t);
	close(dir);
	t_free_guest(g);
	free(g);
	free(t);
}

/* One corruption of a file's text and the refusal it must get. */
static const struct t_bad {
	const char *file;
	const char *from, *to;		/* the fixture's text, with @from replaced by @to */
	size_t to_len;			/* @to's length, when it holds a NUL */
	bool cut;			/* the file ends after @to */
	const char *want;		/* t->bad */
} bads[] = {
	{ "sync", "since=2000520\n", "since=2000520", 0, true,
	  "sync: section 'epoch', line 34: cut short (no end of line)" },
	{ "sync", "kvm_clocksource=tsc\n", "kvm_clocksource=ts", 0, true,
	  "sync: section 'kvm', line 19: cut short (no end of line)" },
	{ "sync", "rejected=2\n", "rejected=two\n", 0, false,
	  "sync: section 'sync', line 4: rejected is not a number" },
	{ "sync", " ratio=1 frac=0 source=2", " ratio=1 frac=", 0, false,
	  "sync: section 'epoch', line 32: epoch line without its 8 values" },
	{ "sync", "check cpu=1 burst=1 n=9 inside=0", "check cpu=1 burst=1 n=9 inside=x", 0, false,
	  "sync: section 'check', line 28: check line without its 9 values" },
	{ "sync", "probes cpu=2 min_rtt=2000042 samples=15", "probes cpu=2 min_rtt=", 0, false,
	  "sync: section 'probes', line 33: probes line without its 3 values" },
	{ "migration", "stream0=2000025,2000027,2000029,0,2000031,2000033,2000035",
	  "stream0=2000025,2000027", 0, false,
	  "migration: section 'stream', line 21: stream0: 2 values, 7 wanted" },
	{ "migration", "2000033,2000035\n", "2000033,2000035,1\n", 0, false,
	  "migration: section 'stream', line 21: stream0: 8 values, 7 wanted" },
	{ "migration", "stream2=2000024,", "stream2=-,", 0, false,
	  "migration: section 'stream', line 20: stream2: value 0 is not a number" },
	{ "state", "vcpu_tids=5000,5001,5002", "vcpu_tids=5000,50x1", 0, false,
	  "state: section 'vcpu_tids', line 22: value 1 is not a number" },
	{ "state", "vcpu_tids=5000,5001,5002", "vcpu_tids=5000,5001,5002,", 0, false,
	  "state: section 'vcpu_tids', line 22: value 3 is not a number" },
	{ "state", "nr_cpus=3", "nr_cpus=3q", 0, false,
	  "state: section 'agent', line 3: nr_cpus is not a number" },
	{ "state", "bad0=2000023", "bad0=", 0, false,
	  "state: section 'dropped', line 26: bad0 is not a number" },
	{ "state", "msgs3=21\n", "msgs3=21\0\n", 10, false,
	  "state: section 'msgs', line 36: a NUL byte" },
	{ "agent", "pages0=2000039\n", "pages0=2000039", 0, true,
	  "agent: section 'bytes', line 4: cut short (no end of line)" },
};

/* @text with @from replaced by @to, and cut after it if asked. */
static char *t_corrupt(const char *text, const struct t_bad *b, size_t *len)
{
	const char *at = strstr(text, b->from);
	size_t tlen = b->to_len ? b->to_len : strlen(b->to), skip = strlen(b->from);
	size_t rest = b->cut ? 0 : strlen(at + skip);
	char *out;

	assert_non_null(at);
	*len = (at - text) + tlen + rest;
	out = calloc(1, *len + 1);
	assert_non_null(out);
	memcpy(out, text, at - text);
	memcpy(out + (at - text), b->to, tlen);
	memcpy(out + (at - text) + tlen, at + skip, rest);
	return out;
}

/* Each corruption is refused: an error naming the file, the section and the line, nothing loaded. */
static void test_refused(void **state)
{
	static const struct {
		const char *name;
		const struct spool_file *f;
	} fs[] = {
		{ "state", &spool_state_file }, { "agent", &spool_agent_file },
		{ "sync", &spool_sync_file }, { "migration", &spool_migration_file },
	};
	struct spool_trace *t = calloc(1, sizeof(*t)), *empty = calloc(1, sizeof(*t));
	unsigned int i, j;
	int dir;

	(void)state;
	printf("a cut or corrupted section is refused, naming the file and the section\n");
	assert_non_null(t);
	assert_non_null(empty);
	dir = open(fixture, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir >= 0);
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct spool_file *f = NULL;
		char *text, *bad;
		size_t len;

		for (j = 0; j < sizeof(fs) / sizeof(fs[0]); j++)
			if (!strcmp(fs[j].name, bads[i].file))
				f = fs[j].f;
		assert_non_null(f);
		assert_int_equal(collect_read_file(dir, bads[i].file, (void **)&text, &len, 1 << 20), 0);
		bad = t_corrupt(text, &bads[i], &len);
		memset(t, 0, sizeof(*t));
		t->agent.nr_cpus = NR_CPUS;
		assert_int_equal(spool_file_parse(f, text, strlen(text), t), 0);
		spool_trace_free(t);
		memset(t, 0, sizeof(*t));
		t->agent.nr_cpus = NR_CPUS;
		assert_int_equal(spool_file_parse(f, bad, len, t), -EBADMSG);
		if (strcmp(t->bad, bads[i].want))
			fail_msg("refused as '%s', not '%s'", t->bad, bads[i].want);
		/* Nothing of a refused file is kept. */
		memset(empty, 0, sizeof(*empty));
		empty->agent.nr_cpus = NR_CPUS;
		snprintf(empty->bad, sizeof(empty->bad), "%s", t->bad);
		assert_memory_equal(t, empty, sizeof(*t));
		free(bad);
		free(text);
	}
	close(dir);
	free(empty);
	free(t);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_save),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
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
