// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a guest's session leaves in its spool directory for the finish and
 * for `recover`: its state, the agent's final figures, the clock mapping and
 * a live migration. The files are store's (store/spool-file.c writes and
 * reads each from one table of sections): here a guest is only put into the
 * struct spool_trace they are made of.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "recording.h"
#include "session.h"
#include "stream.h"
#include "store/spool.h"

/* A trace to save @g's files from, with its streams in their order. */
static struct spool_trace *trace_of(const struct guest *g)
{
	struct spool_trace *t = calloc(1, sizeof(*t));
	unsigned int i;

	if (!t)
		return NULL;
	t->agent = g->agent;
	for (i = 0; i < g->nr_streams && i < COLLECT_MAX_CPUS; i++)
		t->streams.v[t->streams.nr++] = g->streams[i].cpu;
	return t;
}

/* From the control port's connection to the first good page on any data port, µs (0: none). */
static uint64_t first_page_us(const struct guest *g)
{
	uint64_t first = 0, us;
	unsigned int i;

	for (i = 0; i < g->nr_streams; i++) {
		uint64_t f = g->streams[i].first_ns;

		if (f && (!first || f < first))
			first = f;
	}
	if (!first || !g->setup.connected_ns || first < g->setup.connected_ns)
		return 0;
	us = (first - g->setup.connected_ns) / 1000;
	return us ? us : 1;	/* at least 1: 0 says none came */
}

/**
 * spool_save_state() - write a guest's state file
 * @g: the guest
 *
 * Return: 0 or -errno.
 */
int spool_save_state(const struct guest *g)
{
	struct spool_trace *t = trace_of(g);
	unsigned int i;
	int ret;

	if (!t)
		return -ENOMEM;
	snprintf(t->state.name, sizeof(t->state.name), "%s", g->name);
	t->state.trace_id = g->trace_id;
	t->state.streams = g->nr_streams;
	t->state.qemu_pid = (int)g->link.qemu_pid;
	t->state.max_reached = g->figures.budget.reached;
	t->figures = g->figures;
	t->figures.first_page_us = first_page_us(g);
	t->kcache = g->kcache.saved;
	t->nr_tids = g->link.nr_vcpu_tids;
	memcpy(t->tids, g->link.vcpu_tids, sizeof(t->tids));
	for (i = 0; i < g->nr_streams; i++) {
		struct spool_cpu *c = &t->cpus[g->streams[i].cpu];

		c->dropped = g->streams[i].dropped_pages;
		c->bad_pages = g->streams[i].bad_pages;
	}
	ret = spool_file_save(g->spool_fd, &spool_state_file, t);
	free(t);
	return ret;
}

/**
 * spool_save_agent() - write the agent's final per-CPU figures and stats texts
 * @g: the guest, stopped
 *
 * Return: 0 or -errno.
 */
int spool_save_agent(const struct guest *g)
{
	struct spool_trace *t = trace_of(g);
	unsigned int i;
	int ret;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;

		t->cpus[cpu].stats = g->stats.text[cpu];
		t->cpus[cpu].agent_bytes = g->stats.bytes[cpu];
		t->cpus[cpu].agent_pages = g->stats.pages[cpu];
	}
	ret = spool_agent_save(g->spool_fd, t);
	free(t);
	return ret;
}

/**
 * spool_save_sync() - write the guest's clock mapping
 * @g: the guest
 *
 * The method, how KVM's offsets were followed and --sync-check's results,
 * then one line per check interval and per epoch.
 *
 * Return: 0 or -errno.
 */
int spool_save_sync(const struct guest *g)
{
	struct spool_trace *t = trace_of(g);
	int ret;

	if (!t)
		return -ENOMEM;
	t->sync_head = g->sync.head;
	t->kvm = g->sync.kvm;
	/* Borrowed, not copied: t is freed, never spool_trace_free()d. */
	t->check = g->sync.check;
	memcpy(t->sync, g->sync.cpus, sizeof(t->sync));
	memcpy(t->min_rtt, g->sync.min_rtt, sizeof(t->min_rtt));
	memcpy(t->samples, g->sync.samples, sizeof(t->samples));
	ret = spool_file_save(g->spool_fd, &spool_sync_file, t);
	free(t);
	/* The live view maps the guest's timestamps with what the files will be made of. */
	if (g->rec)
		live_clock(g->rec->live, g->live_idx, g->sync.cpus,
			   g->agent.nr_cpus < COLLECT_MAX_CPUS ? g->agent.nr_cpus : COLLECT_MAX_CPUS,
			   g->sync.head.host_end);
	return ret;
}

/**
 * spool_save_migration() - write what a live migration did to the guest's
 * recording (the spool's "migration" file; nothing for a guest that never
 * saw one)
 * @g: the guest
 *
 * Where each stream stands: its bytes and pages, the timestamp of its last
 * page, and for a takeover (--incoming) where its resume mark was.
 *
 * Return: 0 or -errno.
 */
int spool_save_migration(const struct guest *g)
{
	const struct guest_migration *m = &g->mig;
	struct spool_trace *t;
	unsigned int i;
	int ret;

	if (!m->incoming && !m->out && !m->migrating && !m->seen.failures)
		return 0;
	t = trace_of(g);
	if (!t)
		return -ENOMEM;
	snprintf(t->mig.direction, sizeof(t->mig.direction), "%s",
		 m->incoming ? "in" : m->out ? "out" : "none");
	t->mig.seen = m->seen;
	for (i = 0; i < g->nr_streams; i++) {
		const struct stream *s = &g->streams[i];

		t->mig.cpus[s->cpu] = (struct spool_mig_cpu){ s->bytes_session, s->pages, s->last_ts,
							      s->marked, s->mark_pos, s->mark_pre,
							      s->marks };
	}
	ret = spool_file_save(g->spool_fd, &spool_migration_file, t);
	free(t);
	return ret;
}
