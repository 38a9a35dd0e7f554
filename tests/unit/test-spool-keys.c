// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The spool's key=value files against golden copies (tests/data/spool-keys/),
 * written by the writers as they were before the keys went into tables.
 *
 * `recover` reads spools that earlier versions wrote, so a key renamed (in a
 * table or anywhere else) must fail here: the golden files are loaded and
 * every value checked, then the same values are saved again and compared
 * byte for byte.
 *
 * test_tables_round_trip walks every file's table: distinct values in every
 * field it names, saved and loaded back, field by field.
 *
 * `test-spool-keys --generate DIR` writes the files this test expects; it
 * made the golden copies and is kept so that a deliberate format change can
 * make new ones.
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

#define NR_CPUS		2u

/* Distinct values, so that two keys swapped or read into one another show. */
#define V(n)		(1000000ull + (n))

static struct stream streams[NR_CPUS];

/* The guest whose files the golden copies hold; record's writers take a struct guest. */
static int t_fill_guest(struct guest *g)
{
	struct vt_tsync_epoch ep = { 0 };
	static struct spool_check_iv iv;
	unsigned int i;

	memset(g, 0, sizeof(*g));
	memset(streams, 0, sizeof(streams));
	snprintf(g->name, sizeof(g->name), "g1");
	g->trace_id = V(1);
	g->agent.nr_cpus = NR_CPUS;
	g->agent.subbuf = 4096;
	snprintf(g->agent.clock, sizeof(g->agent.clock), "x86-tsc");
	snprintf(g->agent.software, sizeof(g->agent.software), "trace-agent 9.9");
	g->agent.caps = V(2);
	g->link.qemu_pid = 4321;
	g->figures.budget = (struct spool_budget){ V(3), V(4), V(5), V(6), V(7), V(8), true };
	g->figures.protocol_errors = V(9);
	snprintf(g->figures.error, sizeof(g->figures.error), "an error");
	snprintf(g->figures.agent_error, sizeof(g->figures.agent_error), "an agent error");
	snprintf(g->figures.agent_notice, sizeof(g->figures.agent_notice), "a notice");
	g->figures.meta_fetches = V(30);
	g->figures.meta_us = V(31);
	g->figures.meta_guest_cpu_us = V(32);
	/*
	 * first_page_us, which spool_save_state() works out from the streams: the
	 * earlier one's first page (7 ms) less the connection (5 ms).
	 */
	g->setup.connected_ns = 5000000;
	g->figures.first_page_us = 2000;
	g->kcache.saved.hit = true;
	snprintf(g->kcache.saved.vm, sizeof(g->kcache.saved.vm), "vm1");
	snprintf(g->kcache.saved.why, sizeof(g->kcache.saved.why), "not cached: why");
	g->link.nr_vcpu_tids = NR_CPUS;
	g->link.vcpu_tids[0] = 111;
	g->link.vcpu_tids[1] = 222;
	for (i = 0; i < GMSG_NR; i++)
		g->figures.msgs[i] = V(10 + i);
	g->streams = streams;
	g->nr_streams = NR_CPUS;
	for (i = 0; i < NR_CPUS; i++) {
		struct stream *s = &streams[i];

		s->cpu = i;
		s->first_ns = i ? 7000000 : 9000000;
		s->dropped_pages = V(20 + i);
		s->bad_pages = V(22 + i);
		s->bytes_session = V(24 + i);
		s->pages = V(26 + i);
		s->last_ts = V(28 + i);
		s->marked = true;
		s->mark_pos = V(30 + i);
		s->mark_pre = V(32 + i);
		s->marks = V(34 + i);
		g->stats.bytes[i] = V(36 + i);
		g->stats.pages[i] = V(38 + i);
		g->sync.min_rtt[i] = V(40 + i);
		g->sync.samples[i] = 50 + i;
		ep.host_from = V(42 + i);
		ep.map.offset = -(int64_t)V(44 + i);
		ep.map.ratio = 1;
		ep.map.frac_bits = 0;
		ep.source = 1;
		ep.flags = 3;
		ep.error = V(46 + i);
		ep.min_rtt = V(48 + i);
		ep.since = V(50 + i);
		if (vt_tsync_cpu_update(&g->sync.cpus[i], &ep) < 0)
			return -ENOMEM;
	}
	snprintf(g->sync.head.method, sizeof(g->sync.head.method), "kvm");
	snprintf(g->sync.head.why, sizeof(g->sync.head.why), "exact offsets");
	g->sync.head.host_end = V(60);
	g->sync.head.rejected = 61;
	g->sync.head.failed = true;
	snprintf(g->sync.head.final_cut, sizeof(g->sync.head.final_cut), "cut short");
	g->sync.head.reset_tsc = V(62);
	g->sync.kvm = (struct spool_kvm){ .changes_from = "events", .why = "kvm why",
					  .instance = "inst0", .changes = V(63), .lost = V(64),
					  .breaks = V(65), .merged = V(66), .mismatch = V(67),
					  .reordered = V(136), .note = "a note",
					  .host_flags = "constant_tsc", .clocksource = "tsc" };
	iv = (struct spool_check_iv){ 1, 2, 3, true, V(70), V(71), -(int64_t)V(72),
				      -(int64_t)V(73), V(74) };
	g->sync.check = (struct spool_check){ true, V(75), V(76), V(77), V(78), V(79), V(80),
					      &iv, 1 };
	g->mig.incoming = true;
	g->mig.seen.resumed = true;
	snprintf(g->mig.seen.status, sizeof(g->mig.seen.status), "completed");
	g->mig.seen.active_tsc = V(81);
	g->mig.seen.stop_tsc = V(82);
	g->mig.seen.completed_tsc = V(83);
	g->mig.seen.resume_tsc = V(84);
	g->mig.seen.taken_tsc = V(85);
	g->mig.seen.out_tsc = V(86);
	g->mig.seen.downtime_ms = V(87);
	g->mig.seen.total_ms = V(88);
	g->mig.seen.failures = 89;
	g->mig.seen.resume_no = V(90);
	snprintf(g->mig.seen.instance, sizeof(g->mig.seen.instance), "inst1");
	g->mig.seen.nr_events = 91;
	g->mig.seen.ignored = V(92);
	snprintf(g->mig.seen.boot_id, sizeof(g->mig.seen.boot_id), "boot-1234");
	g->mig.seen.rt_ns = V(93);
	g->mig.seen.rt_tsc = V(94);
	return 0;
}

static void t_free_guest(struct guest *g)
{
	unsigned int i;

	for (i = 0; i < NR_CPUS; i++)
		vt_tsync_cpu_free(&g->sync.cpus[i]);
}

static void t_fill_options(struct spool_options *o)
{
	memset(o, 0, sizeof(*o));
	o->version = 7;
	o->compress = true;
	o->host_trace_id = V(100);
	o->tsc_khz = V(101);
	o->tsc_mult = 102;
	o->tsc_shift = 103;
	snprintf(o->tsc_method, sizeof(o->tsc_method), "cpuid");
	snprintf(o->cmdline, sizeof(o->cmdline), "virtio-trace-collect record -o out");
	o->hold = true;
	o->have_perm = true;
	o->perm.file = 0640;
	o->perm.dir = spool_perm_dir_mode(0640);
	o->perm.uid = 1000;
	o->perm.gid = 1001;
}

static void t_fill_inplace(struct spool_inplace *m)
{
	memset(m, 0, sizeof(*m));
	m->region = V(110);
	m->head = V(111);
	m->size0 = V(112);
	m->nr_cpus = NR_CPUS;
	m->len[0] = V(113);
	m->len[1] = V(114);
}

static const struct spool_sums sums = { V(120), V(121), V(122), V(123), V(124) };
static const struct spool_zsum zsum = { V(130), V(131), V(132), V(133), V(134), V(135), 136 };

/* Every file the writers make, in DIR/options and DIR/guest-g1/. */
static int t_write_all(int spool)
{
	struct spool_options o;
	struct spool_inplace m;
	struct guest *g;
	int dir, ret;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	t_fill_options(&o);
	t_fill_inplace(&m);
	ret = t_fill_guest(g);
	if (ret < 0)
		goto out;
	ret = spool_save_options(spool, &o);
	if (ret < 0)
		goto out;
	ret = spool_guest_dir(spool, "guest-g1", &dir);
	if (ret < 0)
		goto out;
	g->spool_fd = dir;
	ret = spool_save_state(g) ?: spool_save_agent(g) ?: spool_save_sync(g) ?:
	      spool_save_migration(g) ?: spool_save_inplace(dir, &m) ?:
	      spool_save_sums(dir, 0, &sums) ?: spool_save_zsum(dir, 0, &zsum);
	close(dir);
out:
	t_free_guest(g);
	free(g);
	return ret;
}

static char golden[4096];

static int t_setup(void **state)
{
	const char *src = getenv("VT_SRCDIR");

	(void)state;
	snprintf(golden, sizeof(golden), "%s/tests/data/spool-keys", src ? src : "..");
	return 0;
}

/* @a and @b agree in every field @keys names: the failure names the key. */
static void t_equal_keys(const struct spool_key *keys, size_t n, const void *a, const void *b,
			 const char *file)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (memcmp((const char *)a + keys[i].off, (const char *)b + keys[i].off, keys[i].size))
			fail_msg("%s: key %s does not load as it was written", file, keys[i].name);
}

/* The golden files load, and every value is the one they were written with. */
static void test_golden_load(void **state)
{
	struct spool_options o, want_o;
	struct spool_inplace m, want_m;
	struct spool_trace *t;
	struct guest *g;
	unsigned int i;
	int spool, dir;

	(void)state;
	printf("golden spool files load with every value\n");
	t = calloc(1, sizeof(*t));
	g = calloc(1, sizeof(*g));
	assert_non_null(t);
	assert_non_null(g);
	assert_int_equal(t_fill_guest(g), 0);
	t_fill_options(&want_o);
	t_fill_inplace(&want_m);
	spool = open(golden, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(spool >= 0);
	assert_int_equal(spool_load_options(spool, &o), 0);
	t_equal_keys(spool_options_keys, spool_options_nkeys, &o, &want_o, "options");
	assert_memory_equal(&o, &want_o, sizeof(o));
	dir = spool_open_dir(spool, "guest-g1");
	assert_true(dir >= 0);
	assert_int_equal(spool_load_inplace(dir, &m), 0);
	t_equal_keys(spool_inplace_keys, spool_inplace_nkeys, &m, &want_m, "inplace");
	assert_memory_equal(&m, &want_m, sizeof(m));

	assert_int_equal(spool_trace_load(dir, false, t), 0);
	/* state */
	assert_true(t->have_state);
	assert_string_equal(t->name, g->name);
	assert_int_equal(t->trace_id, g->trace_id);
	/* The parts record writes are the parts the trace embeds: compared through their tables. */
	t_equal_keys(spool_agent_keys, spool_agent_nkeys, &t->agent, &g->agent, "state");
	t_equal_keys(spool_figures_keys, spool_figures_nkeys, &t->figures, &g->figures, "state");
	assert_true(t->max_reached);
	t_equal_keys(spool_kcache_keys, spool_kcache_nkeys, &t->kcache, &g->kcache.saved, "state");
	t_equal_keys(spool_budget_keys, spool_budget_nkeys, &t->figures.budget, &g->figures.budget,
		     "state");
	assert_memory_equal(t->figures.msgs, g->figures.msgs, sizeof(t->figures.msgs));
	assert_int_equal(t->nr_tids, NR_CPUS);
	assert_memory_equal(t->tids, g->link.vcpu_tids, NR_CPUS * sizeof(t->tids[0]));
	for (i = 0; i < NR_CPUS; i++) {
		const struct spool_cpu *c = &t->cpus[i];
		const struct spool_mig_cpu *mc = &t->mig.cpus[i];

		assert_int_equal(c->dropped, streams[i].dropped_pages);
		assert_int_equal(c->bad_pages, streams[i].bad_pages);
		/* agent */
		assert_int_equal(c->agent_bytes, g->stats.bytes[i]);
		assert_int_equal(c->agent_pages, g->stats.pages[i]);
		/* migration's streams */
		assert_int_equal(mc->bytes, streams[i].bytes_session);
		assert_int_equal(mc->pages, streams[i].pages);
		assert_int_equal(mc->last_ts, streams[i].last_ts);
		assert_true(mc->marked);
		assert_int_equal(mc->mark_pos, streams[i].mark_pos);
		assert_int_equal(mc->mark_pre, streams[i].mark_pre);
		assert_int_equal(mc->marks, streams[i].marks);
		/* sync's per-CPU lines */
		assert_int_equal(t->min_rtt[i], g->sync.min_rtt[i]);
		assert_int_equal(t->samples[i], g->sync.samples[i]);
		assert_int_equal(t->sync[i].nr, 1);
		assert_memory_equal(&t->sync[i].epochs[0].map, &g->sync.cpus[i].epochs[0].map,
				    sizeof(struct vt_tsc_map));
		assert_int_equal(t->sync[i].epochs[0].host_from, g->sync.cpus[i].epochs[0].host_from);
		assert_int_equal(t->sync[i].epochs[0].since, g->sync.cpus[i].epochs[0].since);
	}
	/* cpu0.sums, cpu0.zsum */
	assert_true(t->cpus[0].have_sums);
	t_equal_keys(spool_sums_keys, spool_sums_nkeys, &t->cpus[0].sums, &sums, "cpu0.sums");
	assert_true(t->cpus[0].have_zsum);
	t_equal_keys(spool_zsum_keys, spool_zsum_nkeys, &t->cpus[0].zsum, &zsum, "cpu0.zsum");
	/* sync */
	assert_true(t->have_sync);
	t_equal_keys(spool_sync_keys, spool_sync_nkeys, &t->sync_head, &g->sync.head, "sync");
	t_equal_keys(spool_kvm_keys, spool_kvm_nkeys, &t->kvm, &g->sync.kvm, "sync");
	assert_memory_equal(&t->kvm, &g->sync.kvm, sizeof(t->kvm));
	t_equal_keys(spool_check_keys, spool_check_nkeys, &t->check, &g->sync.check, "sync");
	assert_true(t->check.on);
	assert_int_equal(t->check.bursts, g->sync.check.bursts);
	assert_int_equal(t->check.replies, g->sync.check.replies);
	assert_int_equal(t->check.outside, g->sync.check.outside);
	assert_int_equal(t->check.straddling, g->sync.check.straddling);
	assert_int_equal(t->check.no_epoch, g->sync.check.no_epoch);
	assert_int_equal(t->check.unlisted, g->sync.check.unlisted);
	assert_int_equal(t->check.nr_ivs, 1);
	assert_int_equal(t->check.ivs[0].cpu, g->sync.check.ivs[0].cpu);
	assert_int_equal(t->check.ivs[0].burst, g->sync.check.ivs[0].burst);
	assert_int_equal(t->check.ivs[0].n, g->sync.check.ivs[0].n);
	assert_true(t->check.ivs[0].inside);
	assert_int_equal(t->check.ivs[0].t, g->sync.check.ivs[0].t);
	assert_int_equal(t->check.ivs[0].epoch_from, g->sync.check.ivs[0].epoch_from);
	assert_int_equal(t->check.ivs[0].offset, g->sync.check.ivs[0].offset);
	assert_int_equal(t->check.ivs[0].lo, g->sync.check.ivs[0].lo);
	assert_int_equal(t->check.ivs[0].hi, g->sync.check.ivs[0].hi);
	/* migration */
	assert_true(t->mig.have);
	assert_string_equal(t->mig.direction, "in");
	t_equal_keys(spool_mig_seen_keys, spool_mig_seen_nkeys, &t->mig.seen, &g->mig.seen, "migration");

	spool_trace_free(t);
	close(dir);
	close(spool);
	t_free_guest(g);
	free(g);
	free(t);
}

static void t_same_file(int a, int b, const char *name)
{
	void *da, *db;
	size_t la, lb;

	assert_int_equal(collect_read_file(a, name, &da, &la, 1 << 20), 0);
	assert_int_equal(collect_read_file(b, name, &db, &lb, 1 << 20), 0);
	if (la != lb || memcmp(da, db, la)) {
		const char *ga = da, *gb = db;
		size_t line = 1;

		/* The first line that differs: a renamed key shows as itself. */
		while (*ga && *ga == *gb) {
			line += *ga == '\n';
			ga++;
			gb++;
		}
		while (ga > (const char *)da && ga[-1] != '\n') {
			ga--;
			gb--;
		}
		fail_msg("%s differs from its golden copy at line %zu: golden '%.*s', written '%.*s'",
			 name, line, (int)strcspn(ga, "\n"), ga, (int)strcspn(gb, "\n"), gb);
	}
	free(da);
	free(db);
}

/* The same values saved now make the golden files, byte for byte. */
static void test_golden_save(void **state)
{
	static const char *const files[] = {
		"state", "agent", "sync", "migration", "inplace", "cpu0.sums", "cpu0.zsum", "cpu0.stats",
		"cpu1.stats",
	};
	char tmp[] = "/tmp/test-spool-keys.XXXXXX";
	int spool, out, gdir, gsub, odir;
	unsigned int i;

	(void)state;
	printf("spool files saved now are the golden ones, byte for byte\n");
	assert_non_null(mkdtemp(tmp));
	out = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(out >= 0);
	assert_int_equal(spool_prepare(out, &spool), 0);
	assert_int_equal(t_write_all(spool), 0);
	gdir = open(golden, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(gdir >= 0);
	t_same_file(gdir, spool, "options");
	gsub = spool_open_dir(gdir, "guest-g1");
	assert_true(gsub >= 0);
	close(gdir);
	odir = spool_open_dir(spool, "guest-g1");
	assert_true(odir >= 0);
	gdir = gsub;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		t_same_file(gdir, odir, files[i]);
	close(gdir);
	close(odir);
	close(spool);
	assert_int_equal(spool_remove(out, tmp), 0);
	close(out);
	rmdir(tmp);
}

/* Every file's table, the struct it describes, and whether it is one line. */
static const struct t_table {
	const char *file;
	const struct spool_key *keys;
	const size_t *n;
	size_t size;
	bool line;
} tables[] = {
	{ "options", spool_options_keys, &spool_options_nkeys, sizeof(struct spool_options), false },
	{ "state", spool_state_keys, &spool_state_nkeys, sizeof(struct spool_state), false },
	{ "state (agent)", spool_agent_keys, &spool_agent_nkeys, sizeof(struct spool_agent), false },
	{ "state (tail)", spool_state_tail_keys, &spool_state_tail_nkeys, sizeof(struct spool_state),
	  false },
	{ "state (figures)", spool_figures_keys, &spool_figures_nkeys, sizeof(struct spool_figures),
	  false },
	{ "state (kcache)", spool_kcache_keys, &spool_kcache_nkeys, sizeof(struct spool_kcache), false },
	{ "state (budget)", spool_budget_keys, &spool_budget_nkeys, sizeof(struct spool_budget), false },
	{ "sync", spool_sync_keys, &spool_sync_nkeys, sizeof(struct spool_sync_head), false },
	{ "sync (kvm)", spool_kvm_keys, &spool_kvm_nkeys, sizeof(struct spool_kvm), false },
	{ "sync (check)", spool_check_keys, &spool_check_nkeys, sizeof(struct spool_check), false },
	{ "migration", spool_migration_keys, &spool_migration_nkeys, sizeof(struct spool_migration),
	  false },
	{ "migration (seen)", spool_mig_seen_keys, &spool_mig_seen_nkeys, sizeof(struct spool_mig_seen),
	  false },
	{ "inplace", spool_inplace_keys, &spool_inplace_nkeys, sizeof(struct spool_inplace), false },
	{ "cpuN.sums", spool_sums_keys, &spool_sums_nkeys, sizeof(struct spool_sums), true },
	{ "cpuN.zsum", spool_zsum_keys, &spool_zsum_nkeys, sizeof(struct spool_zsum), true },
};

/* The size a key's type stores, 0 for strings (any array). */
static size_t t_type_size(enum spool_ktype type)
{
	switch (type) {
	case SPOOL_KU64:
	case SPOOL_KS64:
		return sizeof(uint64_t);
	case SPOOL_KU32:
	case SPOOL_KU32_SAT:
		return sizeof(uint32_t);
	case SPOOL_KBOOL:
		return sizeof(bool);
	case SPOOL_KINT:
		return sizeof(int);
	case SPOOL_KSTR:
	case SPOOL_KTEXT:
		break;
	}
	return 0;
}

/* A distinct, non-zero value for key @i of a table, as its type stores it. */
static void t_fill_key(const struct spool_key *k, unsigned int i, void *obj)
{
	char *p = (char *)obj + k->off;
	uint64_t v = V(1000 + i);

	if (k->type == SPOOL_KSTR || k->type == SPOOL_KTEXT) {
		/* As long as the field takes: a value cut short shows too. */
		memset(p, 'a' + i % 26, k->size - 1);
		p[0] = '0' + i % 10;
		p[k->size - 1] = '\0';
	} else if (k->type == SPOOL_KBOOL) {
		*(bool *)p = true;
	} else {
		/* Little-endian: the low bytes of @v, a number that fits 32 bits too. */
		memcpy(p, &v, k->size);
	}
}

/* Each table: its keys unique and the right size; what is saved loads back, field by field. */
static void test_tables_round_trip(void **state)
{
	unsigned int ti, i, j;

	(void)state;
	printf("every table's fields survive a save and a load\n");
	for (ti = 0; ti < sizeof(tables) / sizeof(tables[0]); ti++) {
		const struct t_table *tb = &tables[ti];
		struct spool_text text = { 0 };
		void *in = calloc(1, tb->size), *out = calloc(1, tb->size);

		assert_non_null(in);
		assert_non_null(out);
		assert_true(*tb->n > 0);
		for (i = 0; i < *tb->n; i++) {
			const struct spool_key *k = &tb->keys[i];
			size_t want = t_type_size(k->type);

			if (want && k->size != want)
				fail_msg("%s: %s is %zu bytes, its type %zu", tb->file, k->name, k->size,
					 want);
			assert_true(k->off + k->size <= tb->size);
			for (j = 0; j < i; j++)
				if (!strcmp(tb->keys[j].name, k->name))
					fail_msg("%s: %s twice", tb->file, k->name);
			t_fill_key(k, i, in);
		}
		if (tb->line)
			spool_keys_write_line(&text, tb->keys, *tb->n, in);
		else
			spool_keys_write(&text, tb->keys, *tb->n, in);
		assert_false(text.oom);
		if (tb->line)
			assert_true(spool_keys_read_line(text.buf, tb->keys, *tb->n, out));
		else
			spool_keys_read(text.buf, tb->keys, *tb->n, out);
		for (i = 0; i < *tb->n; i++) {
			const struct spool_key *k = &tb->keys[i];

			if (memcmp((char *)in + k->off, (char *)out + k->off, k->size))
				fail_msg("%s: %s did not come back from:\n%s", tb->file, k->name,
					 text.buf);
		}
		free(text.buf);
		free(in);
		free(out);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_load),
		cmocka_unit_test(test_golden_save),
		cmocka_unit_test(test_tables_round_trip),
	};

	if (argc == 3 && !strcmp(argv[1], "--generate")) {
		int out = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC), spool = -1;
		int ret = out < 0 ? -errno : spool_prepare(out, &spool) ?: t_write_all(spool);

		if (ret < 0) {
			fprintf(stderr, "test-spool-keys: cannot write %s/.spool: %s\n", argv[2],
				strerror(-ret));
			return 1;
		}
		return 0;
	}
	return cmocka_run_group_tests(tests, t_setup, NULL);
}
