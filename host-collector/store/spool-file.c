// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A trace's key=value files in the spool (state, agent, sync, migration),
 * each written down once: a table of sections (struct spool_section: its
 * name, its kind, where its data is in struct spool_trace, its keys), in the
 * file's order. spool_file_save() walks the table to write the file,
 * spool_file_load() walks the same table to read it back: record fills a
 * struct spool_trace and saves it, recover and join load one.
 *
 * A file is made from guest data and read as hostile: every count and index
 * is bounded by its section, and a file cut short (its last line without an
 * end), a number that is none, a list too long or a line that lacks keys is
 * refused whole, with the file and the section named (struct spool_trace's
 * @bad). A key or a line missing is not an error: older collectors wrote
 * fewer (tests/data/spool-keys, tests/data/spool-sections).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "spool.h"
#include "spool-int.h"

#define TRACE(field)	offsetof(struct spool_trace, field)

/* A key for a bare uint64_t element (an array of figures). */
#define SPOOL_KEY_U64(name_)	{ .name = (name_), .type = SPOOL_KU64, .off = 0, \
				  .size = sizeof(uint64_t) }

/* --- the records of the sync file: what a line holds, and where it comes from --- */

struct probe_rec {
	uint32_t cpu;
	uint64_t min_rtt;
	uint32_t samples;
};

struct epoch_rec {
	uint32_t cpu;
	struct vt_tsync_epoch ep;
};

static const struct spool_key check_keys[] = {
	SPOOL_KEY("cpu", SPOOL_KU32, struct spool_check_iv, cpu),
	SPOOL_KEY("burst", SPOOL_KU32, struct spool_check_iv, burst),
	SPOOL_KEY("n", SPOOL_KU32, struct spool_check_iv, n),
	SPOOL_KEY("inside", SPOOL_KBOOL, struct spool_check_iv, inside),
	SPOOL_KEY("t", SPOOL_KU64, struct spool_check_iv, t),
	SPOOL_KEY("from", SPOOL_KU64, struct spool_check_iv, epoch_from),
	SPOOL_KEY("offset", SPOOL_KS64, struct spool_check_iv, offset),
	SPOOL_KEY("lo", SPOOL_KS64, struct spool_check_iv, lo),
	SPOOL_KEY("hi", SPOOL_KS64, struct spool_check_iv, hi),
};

static const struct spool_key probe_keys[] = {
	SPOOL_KEY("cpu", SPOOL_KU32, struct probe_rec, cpu),
	SPOOL_KEY("min_rtt", SPOOL_KU64, struct probe_rec, min_rtt),
	SPOOL_KEY("samples", SPOOL_KU32, struct probe_rec, samples),
};

/* min_rtt and since came later: a line needs the first eight. */
static const struct spool_key epoch_keys[] = {
	SPOOL_KEY("cpu", SPOOL_KU32, struct epoch_rec, cpu),
	SPOOL_KEY("from", SPOOL_KU64, struct epoch_rec, ep.host_from),
	SPOOL_KEY("offset", SPOOL_KS64, struct epoch_rec, ep.map.offset),
	SPOOL_KEY("ratio", SPOOL_KU64, struct epoch_rec, ep.map.ratio),
	SPOOL_KEY("frac", SPOOL_KU32, struct epoch_rec, ep.map.frac_bits),
	SPOOL_KEY("source", SPOOL_KINT, struct epoch_rec, ep.source),
	SPOOL_KEY("flags", SPOOL_KU32, struct epoch_rec, ep.flags),
	SPOOL_KEY("error", SPOOL_KU64, struct epoch_rec, ep.error),
	SPOOL_KEY("min_rtt", SPOOL_KU64, struct epoch_rec, ep.min_rtt),
	SPOOL_KEY("since", SPOOL_KU64, struct epoch_rec, ep.since),
};

static bool check_get(const struct spool_trace *t, unsigned int cpu, size_t i, void *rec)
{
	(void)cpu;
	if (i >= t->check.nr_ivs)
		return false;
	memcpy(rec, &t->check.ivs[i], sizeof(t->check.ivs[i]));
	return true;
}

/* Intervals of the agent's vCPUs only, SPOOL_CHECK_IVS_MAX at most (the rest dropped). */
static int check_put(struct spool_trace *t, const void *rec)
{
	const struct spool_check_iv *iv = rec;
	struct spool_check_iv *p;

	if (iv->cpu >= t->agent.nr_cpus || t->check.nr_ivs >= SPOOL_CHECK_IVS_MAX)
		return 0;
	p = realloc(t->check.ivs, (t->check.nr_ivs + 1) * sizeof(*p));
	if (!p)
		return 1;
	t->check.ivs = p;
	t->check.ivs[t->check.nr_ivs++] = *iv;
	return 0;
}

static bool probe_get(const struct spool_trace *t, unsigned int cpu, size_t i, void *rec)
{
	struct probe_rec *p = rec;

	if (i || !t->min_rtt[cpu])
		return false;
	*p = (struct probe_rec){ cpu, t->min_rtt[cpu], t->samples[cpu] };
	return true;
}

static int probe_put(struct spool_trace *t, const void *rec)
{
	const struct probe_rec *p = rec;

	if (p->cpu < COLLECT_MAX_CPUS) {
		t->min_rtt[p->cpu] = p->min_rtt;
		t->samples[p->cpu] = p->samples;
	}
	return 0;
}

static bool epoch_get(const struct spool_trace *t, unsigned int cpu, size_t i, void *rec)
{
	struct epoch_rec *e = rec;

	if (i >= t->sync[cpu].nr)
		return false;
	e->cpu = cpu;
	e->ep = t->sync[cpu].epochs[i];
	return true;
}

/*
 * A mapping that makes no sense, or a vCPU the agent has not, is dropped; an
 * epoch out of order ends the list.
 */
static int epoch_put(struct spool_trace *t, const void *rec)
{
	const struct epoch_rec *e = rec;

	if (e->cpu >= t->agent.nr_cpus || e->cpu >= COLLECT_MAX_CPUS ||
	    !vt_tsc_map_valid(&e->ep.map))
		return 0;
	return vt_tsync_cpu_update(&t->sync[e->cpu], &e->ep) < 0 ? 1 : 0;
}

/* A record as save_records() and load_records() hold it: any of the above. */
#define REC_MAX		256
_Static_assert(sizeof(struct spool_check_iv) <= REC_MAX && sizeof(struct probe_rec) <= REC_MAX &&
	       sizeof(struct epoch_rec) <= REC_MAX, "a record is larger than REC_MAX");

/* --- the files --- */

static const struct spool_key state_cpu_keys[] = {
	SPOOL_KEY(SPOOL_IKEY_DROPPED, SPOOL_KU64, struct spool_cpu, dropped),
	SPOOL_KEY(SPOOL_IKEY_BAD, SPOOL_KU64, struct spool_cpu, bad_pages),
};

static const struct spool_key msgs_keys[] = { SPOOL_KEY_U64(SPOOL_IKEY_MSGS) };

#define KEYS(name_, field, table) \
	{ .name = (name_), .kind = SPOOL_SEC_KEYS, .off = TRACE(field), .keys = (table), \
	  .nkeys = SPOOL_NKEYS(table) }
/* The number of table's keys, when the table is extern (spool.c's). */
#define XKEYS(name_, field, table) \
	{ .name = (name_), .kind = SPOOL_SEC_KEYS, .off = TRACE(field), .keys = (table), \
	  .nkeys = SPOOL_NONE }

/*
 * state: name and trace_id, the agent's, streams, qemu_pid and max_reached,
 * the figures, the kallsyms cache, the vCPU threads, droppedN and badN by
 * stream, the budget, msgsN by kind of message.
 */
static const struct spool_section state_secs[] = {
	XKEYS("state", state, spool_state_keys),
	XKEYS("agent", agent, spool_agent_keys),
	XKEYS("state_tail", state, spool_state_tail_keys),
	XKEYS("figures", figures, spool_figures_keys),
	XKEYS("kcache", kcache, spool_kcache_keys),
	{ .name = "vcpu_tids", .kind = SPOOL_SEC_LIST, .off = TRACE(tids), .max = COLLECT_MAX_CPUS,
	  .count = TRACE(nr_tids) },
	{ .name = "dropped", .kind = SPOOL_SEC_INDEXED, .off = TRACE(cpus),
	  .elem = sizeof(struct spool_cpu), .keys = state_cpu_keys,
	  .nkeys = SPOOL_NKEYS(state_cpu_keys), .max = COLLECT_MAX_CPUS,
	  .idx = TRACE(streams), .count = TRACE(agent.nr_cpus) },
	XKEYS("budget", figures.budget, spool_budget_keys),
	{ .name = "msgs", .kind = SPOOL_SEC_INDEXED, .off = TRACE(figures.msgs),
	  .elem = sizeof(uint64_t), .keys = msgs_keys, .nkeys = 1, .max = GMSG_NR,
	  .idx = SPOOL_NONE, .count = SPOOL_NONE },
};

static const struct spool_key agent_cpu_keys[] = {
	SPOOL_KEY(SPOOL_IKEY_BYTES, SPOOL_KU64, struct spool_cpu, agent_bytes),
	SPOOL_KEY(SPOOL_IKEY_PAGES, SPOOL_KU64, struct spool_cpu, agent_pages),
};

/* agent: bytesN and pagesN by stream (the stats texts are files of their own). */
static const struct spool_section agent_secs[] = {
	{ .name = "bytes", .kind = SPOOL_SEC_INDEXED, .off = TRACE(cpus),
	  .elem = sizeof(struct spool_cpu), .keys = agent_cpu_keys,
	  .nkeys = SPOOL_NKEYS(agent_cpu_keys), .max = COLLECT_MAX_CPUS,
	  .idx = TRACE(streams), .count = TRACE(agent.nr_cpus) },
};

#define RECORDS(name_, rec, table, min_, get_, put_) \
	{ .name = (name_), .kind = SPOOL_SEC_RECORDS, .elem = sizeof(rec), .keys = (table), \
	  .nkeys = SPOOL_NKEYS(table), .min = (min_), .get = (get_), .put = (put_) }

static const struct spool_section sync_cpu_secs[] = {
	RECORDS("probes", struct probe_rec, probe_keys, 3, probe_get, probe_put),
	RECORDS("epoch", struct epoch_rec, epoch_keys, 8, epoch_get, epoch_put),
};

/*
 * sync: the head, KVM's, the check's, a line per check interval, then each
 * vCPU's probes and epochs.
 */
static const struct spool_section sync_secs[] = {
	XKEYS("sync", sync_head, spool_sync_keys),
	XKEYS("kvm", kvm, spool_kvm_keys),
	XKEYS("check_keys", check, spool_check_keys),
	RECORDS("check", struct spool_check_iv, check_keys, 9, check_get, check_put),
	{ .name = "per_cpu", .kind = SPOOL_SEC_PER_CPU, .max = COLLECT_MAX_CPUS,
	  .count = TRACE(agent.nr_cpus), .sub = sync_cpu_secs, .nsub = SPOOL_NKEYS(sync_cpu_secs) },
};

static const struct spool_key mig_cpu_keys[] = {
	SPOOL_KEY("bytes", SPOOL_KU64, struct spool_mig_cpu, bytes),
	SPOOL_KEY("pages", SPOOL_KU64, struct spool_mig_cpu, pages),
	SPOOL_KEY("last_ts", SPOOL_KU64, struct spool_mig_cpu, last_ts),
	SPOOL_KEY("marked", SPOOL_KBOOL, struct spool_mig_cpu, marked),
	SPOOL_KEY("mark_pos", SPOOL_KU64, struct spool_mig_cpu, mark_pos),
	SPOOL_KEY("mark_pre", SPOOL_KU64, struct spool_mig_cpu, mark_pre),
	SPOOL_KEY("marks", SPOOL_KU64, struct spool_mig_cpu, marks),
};

/* migration: direction, what was seen, streamN=seven values by stream. */
static const struct spool_section migration_secs[] = {
	XKEYS("migration", mig, spool_migration_keys),
	XKEYS("seen", mig.seen, spool_mig_seen_keys),
	{ .name = "stream", .kind = SPOOL_SEC_CSV, .off = TRACE(mig.cpus),
	  .elem = sizeof(struct spool_mig_cpu), .keys = mig_cpu_keys,
	  .nkeys = SPOOL_NKEYS(mig_cpu_keys), .max = COLLECT_MAX_CPUS,
	  .idx = TRACE(streams), .count = TRACE(agent.nr_cpus) },
};

#define FILE_OF(name_, secs_, max_) \
	{ .name = (name_), .secs = (secs_), .nsecs = SPOOL_NKEYS(secs_), .max = (max_) }

const struct spool_file spool_state_file = FILE_OF("state", state_secs, STATE_MAX);
const struct spool_file spool_agent_file = FILE_OF("agent", agent_secs, STATE_MAX);
const struct spool_file spool_sync_file = FILE_OF("sync", sync_secs, SYNC_MAX);
const struct spool_file spool_migration_file = FILE_OF("migration", migration_secs, STATE_MAX);

/* The keys of a KEYS section whose table is spool.c's (their count is there). */
static size_t sec_nkeys(const struct spool_section *s)
{
	static const struct {
		const struct spool_key *keys;
		const size_t *n;
	} ext[] = {
		{ spool_state_keys, &spool_state_nkeys }, { spool_agent_keys, &spool_agent_nkeys },
		{ spool_state_tail_keys, &spool_state_tail_nkeys },
		{ spool_figures_keys, &spool_figures_nkeys }, { spool_kcache_keys, &spool_kcache_nkeys },
		{ spool_budget_keys, &spool_budget_nkeys }, { spool_sync_keys, &spool_sync_nkeys },
		{ spool_kvm_keys, &spool_kvm_nkeys }, { spool_check_keys, &spool_check_nkeys },
		{ spool_migration_keys, &spool_migration_nkeys },
		{ spool_mig_seen_keys, &spool_mig_seen_nkeys },
	};
	size_t i;

	if (s->nkeys != SPOOL_NONE)
		return s->nkeys;
	for (i = 0; i < SPOOL_NKEYS(ext); i++)
		if (ext[i].keys == s->keys)
			return *ext[i].n;
	return 0;
}

/* An unsigned int of @t at @off, bounded by @max (@max itself for SPOOL_NONE). */
static size_t bound(const struct spool_trace *t, size_t off, size_t max)
{
	unsigned int v;

	if (off == SPOOL_NONE)
		return max;
	memcpy(&v, (const char *)t + off, sizeof(v));
	return v < max ? v : max;
}

/* --- writing --- */

static void save_indexed(struct spool_text *out, const struct spool_section *s, const char *base,
			 unsigned int idx)
{
	const char *el = base + s->off + idx * s->elem;
	size_t k;

	if (s->kind == SPOOL_SEC_CSV)
		spool_tprintf(out, "%s%u=", s->name, idx);
	for (k = 0; k < s->nkeys; k++) {
		if (s->kind == SPOOL_SEC_CSV)
			spool_tprintf(out, k ? "," : "");
		else
			spool_tprintf(out, "%s%u=", s->keys[k].name, idx);
		spool_key_value(out, &s->keys[k], el);
		if (s->kind != SPOOL_SEC_CSV)
			spool_tprintf(out, "\n");
	}
	if (s->kind == SPOOL_SEC_CSV)
		spool_tprintf(out, "\n");
}

static void save_each(struct spool_text *out, const struct spool_section *s,
		      const struct spool_trace *t)
{
	const struct spool_idx *idx = (const void *)((const char *)t + s->idx);
	size_t i, n = s->idx == SPOOL_NONE ? s->max : idx->nr < s->max ? idx->nr : s->max;

	for (i = 0; i < n; i++) {
		unsigned int v = s->idx == SPOOL_NONE ? i : idx->v[i];

		if (v < s->max)
			save_indexed(out, s, (const char *)t, v);
	}
}

static void save_records(struct spool_text *out, const struct spool_section *s,
			 const struct spool_trace *t, unsigned int cpu)
{
	uint64_t rec[REC_MAX / sizeof(uint64_t)];
	size_t i;

	for (i = 0; s->get(t, cpu, i, rec); i++) {
		spool_tprintf(out, "%s ", s->name);
		spool_keys_write_line(out, s->keys, s->nkeys, rec);
	}
}

static void save_section(struct spool_text *out, const struct spool_section *s,
			 const struct spool_trace *t)
{
	const uint32_t *v = (const void *)((const char *)t + s->off);
	size_t i, n, j;

	switch (s->kind) {
	case SPOOL_SEC_KEYS:
		spool_keys_write(out, s->keys, sec_nkeys(s), (const char *)t + s->off);
		break;
	case SPOOL_SEC_LIST:
		n = bound(t, s->count, s->max);
		spool_tprintf(out, "%s=", s->name);
		for (i = 0; i < n; i++)
			spool_tprintf(out, "%s%u", i ? "," : "", v[i]);
		spool_tprintf(out, "\n");
		break;
	case SPOOL_SEC_INDEXED:
	case SPOOL_SEC_CSV:
		save_each(out, s, t);
		break;
	case SPOOL_SEC_RECORDS:
		save_records(out, s, t, 0);
		break;
	case SPOOL_SEC_PER_CPU:
		n = bound(t, s->count, s->max);
		for (i = 0; i < n; i++)
			for (j = 0; j < s->nsub; j++)
				save_records(out, &s->sub[j], t, i);
		break;
	}
}

/**
 * spool_file_text() - a trace's file as its sections make it
 * @f: the file (spool_state_file, ...)
 * @t: what it is made of
 * @text: appended to (zeroed to begin)
 *
 * Return: 0 or -ENOMEM.
 */
int spool_file_text(const struct spool_file *f, const struct spool_trace *t,
		    struct spool_text *text)
{
	size_t i;

	for (i = 0; i < f->nsecs; i++)
		save_section(text, &f->secs[i], t);
	return text->oom ? -ENOMEM : 0;
}

/**
 * spool_file_save() - write a trace's file, walking its sections
 * @dir: the trace's spool directory
 * @f: the file (spool_state_file, ...)
 * @t: what it is made of
 *
 * Return: 0 or -errno.
 */
int spool_file_save(int dir, const struct spool_file *f, const struct spool_trace *t)
{
	struct spool_text text = { 0 };

	spool_file_text(f, t, &text);
	return spool_text_save(&text, dir, f->name);
}

/**
 * spool_agent_save() - write the agent's final figures: each stream's stats
 * text (cpuN.stats, "" when none came) and the agent file
 * @dir: the trace's spool directory
 * @t: the streams (@t->streams), and each CPU's stats and counts
 *
 * Return: 0 or -errno (the first error; every file is tried).
 */
int spool_agent_save(int dir, const struct spool_trace *t)
{
	unsigned int i, n = t->streams.nr < COLLECT_MAX_CPUS ? t->streams.nr : COLLECT_MAX_CPUS;
	int ret = 0;

	for (i = 0; i < n; i++) {
		unsigned int cpu = t->streams.v[i];

		if (cpu < COLLECT_MAX_CPUS)
			ret = spool_save_stats(dir, cpu, t->cpus[cpu].stats ? t->cpus[cpu].stats : "")
			      ?: ret;
	}
	return spool_file_save(dir, &spool_agent_file, t) ?: ret;
}

/* --- reading --- */

struct parse {
	const struct spool_file *f;
	const char *text;
	struct spool_trace *t;
	bool store;		/* false: only check */
};

/* The 1-based line @p is on. */
static unsigned int line_no(const char *text, const char *p)
{
	unsigned int n = 1;

	for (; text < p; text++)
		n += *text == '\n';
	return n;
}

static int refuse(struct parse *ps, const struct spool_section *s, const char *at, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));

static int refuse(struct parse *ps, const struct spool_section *s, const char *at, const char *fmt,
		  ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!ps->t->bad[0])
		snprintf(ps->t->bad, sizeof(ps->t->bad), "%s: section '%s', line %u: %s", ps->f->name,
			 s->name, line_no(ps->text, at), why);
	return -EBADMSG;
}

/* A number as the writers spell it: digits (a '-' first for a signed type), nothing else. */
static bool number(const char *p, const char **end, int base, uint64_t *v)
{
	char *e;

	if (!(*p >= '0' && *p <= '9') && !(*p == '-' && p[1] >= '0' && p[1] <= '9'))
		return false;
	errno = 0;
	*v = strtoull(p, &e, base);
	*end = e;
	return errno == 0;
}

static int load_keys(struct parse *ps, const struct spool_section *s)
{
	size_t i, n = sec_nkeys(s);
	const char *line, *end;
	char buf[32];
	uint64_t v;

	/* Strings are taken as spool_keys_read() takes them; numbers must be numbers. */
	for (i = 0; i < n; i++) {
		const struct spool_key *k = &s->keys[i];

		if (k->type == SPOOL_KSTR || k->type == SPOOL_KTEXT)
			continue;
		line = spool_kv(ps->text, k->name, buf, sizeof(buf));
		if (line && (!number(buf, &end, 0, &v) || *end))
			return refuse(ps, s, line, "%s is not a number", k->name);
	}
	if (ps->store)
		spool_keys_read(ps->text, s->keys, n, (char *)ps->t + s->off);
	return 0;
}

static int load_list(struct parse *ps, const struct spool_section *s)
{
	uint32_t *out = (uint32_t *)((char *)ps->t + s->off);
	const char *line, *p, *end;
	unsigned int n = 0;
	char buf[4096];
	uint64_t v;

	line = spool_kv(ps->text, s->name, buf, sizeof(buf));
	if (!line || !buf[0])
		return 0;
	for (p = buf;; p = end + 1) {
		if (n >= s->max)
			return refuse(ps, s, line, "more than %zu values", s->max);
		if (!number(p, &end, 10, &v) || v > UINT32_MAX || (*end && *end != ','))
			return refuse(ps, s, line, "value %u is not a number", n);
		if (ps->store)
			out[n] = (uint32_t)v;
		n++;
		if (!*end)
			break;
	}
	if (ps->store)
		memcpy((char *)ps->t + s->count, &n, sizeof(n));
	return 0;
}

/* The values of a NAMEi=v,v,... line. */
static size_t values(const char *val)
{
	size_t n = 1;

	for (; *val; val++)
		n += *val == ',';
	return n;
}

/* NAMEi=v,v,...: all of @s's keys, or the line is refused. */
static int load_csv(struct parse *ps, const struct spool_section *s, unsigned int idx,
		    const char *line, const char *val)
{
	char *el = (char *)ps->t + s->off + idx * s->elem;
	const char *p = val, *end;
	uint64_t v;
	size_t k;

	for (k = 0; k < s->nkeys; k++) {
		if (!number(p, &end, 10, &v))
			return refuse(ps, s, line, "%s%u: value %zu is not a number", s->name, idx, k);
		if (*end != (k + 1 < s->nkeys ? ',' : '\0'))
			return refuse(ps, s, line, "%s%u: %zu values, %zu wanted", s->name, idx,
				      values(val), s->nkeys);
		if (ps->store)
			spool_key_store(&s->keys[k], el, v);
		p = end + 1;
	}
	return 0;
}

static int load_indexed(struct parse *ps, const struct spool_section *s)
{
	/* Checked as far as any index goes, stored as far as the agent's vCPUs. */
	size_t i, k, n = ps->store ? bound(ps->t, s->count, s->max) : s->max;
	char key[64], buf[1024];
	const char *line, *end;
	uint64_t v;
	int ret;

	for (i = 0; i < n; i++)
		for (k = 0; k < (s->kind == SPOOL_SEC_CSV ? 1 : s->nkeys); k++) {
			const char *name = s->kind == SPOOL_SEC_CSV ? s->name : s->keys[k].name;

			snprintf(key, sizeof(key), "%s%zu", name, i);
			line = spool_kv(ps->text, key, buf, sizeof(buf));
			if (!line)
				continue;
			if (s->kind == SPOOL_SEC_CSV) {
				ret = load_csv(ps, s, i, line, buf);
				if (ret < 0)
					return ret;
				continue;
			}
			if (!number(buf, &end, 0, &v) || *end)
				return refuse(ps, s, line, "%s is not a number", key);
			if (ps->store)
				spool_key_store(&s->keys[k], (char *)ps->t + s->off + i * s->elem, v);
		}
	return 0;
}

/* The keys of a record line, in order, as many as there are: how many. */
static size_t record_keys(const char *p, const struct spool_section *s, void *rec)
{
	const char *end;
	size_t i, klen;
	uint64_t v;

	for (i = 0; i < s->nkeys; i++) {
		while (i && (*p == ' ' || *p == '\t'))
			p++;
		klen = strlen(s->keys[i].name);
		if (strncmp(p, s->keys[i].name, klen) || p[klen] != '=' ||
		    !number(p + klen + 1, &end, 10, &v))
			break;
		spool_key_store(&s->keys[i], rec, v);
		p = end;
	}
	return i;
}

static int load_records(struct parse *ps, const struct spool_section *s)
{
	size_t plen = strlen(s->name);
	uint64_t rec[REC_MAX / sizeof(uint64_t)];
	const char *line;
	int ret;

	for (line = ps->text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, s->name, plen) || line[plen] != ' ')
			continue;
		memset(rec, 0, sizeof(rec));
		if (record_keys(line + plen + 1, s, rec) < s->min)
			return refuse(ps, s, line, "%s line without its %zu values", s->name, s->min);
		if (!ps->store)
			continue;
		ret = s->put(ps->t, rec);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return 0;
}

static int load_section(struct parse *ps, const struct spool_section *s)
{
	size_t i;
	int ret;

	switch (s->kind) {
	case SPOOL_SEC_KEYS:
		return load_keys(ps, s);
	case SPOOL_SEC_LIST:
		return load_list(ps, s);
	case SPOOL_SEC_INDEXED:
	case SPOOL_SEC_CSV:
		return load_indexed(ps, s);
	case SPOOL_SEC_RECORDS:
		return load_records(ps, s);
	case SPOOL_SEC_PER_CPU:
		for (i = 0; i < s->nsub; i++) {
			ret = load_records(ps, &s->sub[i]);
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	return 0;
}

/* The section a line belongs to, by its key or first word; NULL for none. */
static const struct spool_section *line_section(const struct spool_section *secs, size_t n,
						const char *line)
{
	size_t i, k, nk, len;

	for (i = 0; i < n; i++) {
		const struct spool_section *s = &secs[i];

		if (s->kind == SPOOL_SEC_PER_CPU) {
			s = line_section(s->sub, s->nsub, line);
			if (s)
				return s;
			continue;
		}
		len = strlen(s->name);
		if (s->kind != SPOOL_SEC_KEYS && !strncmp(line, s->name, len) && line[len] &&
		    strchr(" =0123456789", line[len]))
			return s;
		nk = s->kind == SPOOL_SEC_LIST ? 0 : s->kind == SPOOL_SEC_KEYS ? sec_nkeys(s) : s->nkeys;
		for (k = 0; k < nk; k++) {
			len = strlen(s->keys[k].name);
			if (!strncmp(line, s->keys[k].name, len) && line[len] &&
			    strchr("=0123456789", line[len]))
				return s;
		}
	}
	return NULL;
}

/* A file cut short: its last line has no end, or a NUL byte cuts the text. */
static int check_whole(struct parse *ps, size_t len)
{
	static const struct spool_section whole = { .name = "(none)" };
	const struct spool_section *s;
	size_t tlen = strlen(ps->text);
	const char *last;

	if (tlen == len && (!len || ps->text[len - 1] == '\n'))
		return 0;
	last = ps->text + tlen;
	while (last > ps->text && last[-1] != '\n')
		last--;
	s = line_section(ps->f->secs, ps->f->nsecs, last);
	return refuse(ps, s ? s : &whole, last, tlen == len ? "cut short (no end of line)" :
		      "a NUL byte");
}

/**
 * spool_file_parse() - read a trace's file from its text, walking its sections
 * @f: the file (spool_state_file, ...)
 * @text: the file's bytes, NUL-terminated
 * @len: how many (without the NUL)
 * @t: filled, section by section; left as it was when the file is refused
 *
 * A count or index read is bounded by what @t already holds (the agent's
 * vCPUs for the per-CPU sections: load the state file first).
 *
 * Return: 0, -EBADMSG with @t->bad saying which section of which file was
 * refused and why, or -ENOMEM.
 */
int spool_file_parse(const struct spool_file *f, const char *text, size_t len,
		     struct spool_trace *t)
{
	struct parse ps = { .f = f, .text = text, .t = t };
	size_t i;
	int ret;

	ret = check_whole(&ps, len);
	for (i = 0; !ret && i < f->nsecs; i++)
		ret = load_section(&ps, &f->secs[i]);
	if (ret < 0)
		return ret;
	ps.store = true;
	for (i = 0; !ret && i < f->nsecs; i++)
		ret = load_section(&ps, &f->secs[i]);
	return ret;
}

/**
 * spool_file_load() - read a trace's file back, walking its sections
 * @dir: the trace's spool directory
 * @f: the file (spool_state_file, ...)
 * @t: filled (spool_file_parse())
 *
 * Return: 0, -ENOENT (no such file), -EBADMSG (refused: @t->bad says why),
 * or -errno.
 */
int spool_file_load(int dir, const struct spool_file *f, struct spool_trace *t)
{
	size_t len;
	char *text;
	int ret;

	ret = collect_read_file(dir, f->name, (void **)&text, &len, f->max);
	if (ret < 0)
		return ret;
	ret = spool_file_parse(f, text, len, t);
	free(text);
	return ret;
}
