// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a guest's session leaves in its spool directory for the finish and
 * for `recover`: its state, the agent's final figures and the clock mapping.
 * The files and their keys are the spool's (store/spool.c reads them back).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "live.h"
#include "record.h"
#include "session.h"
#include "stream.h"
#include "store/spool.h"

/**
 * spool_save_state() - write a guest's state file
 * @g: the guest
 *
 * Return: 0 or -errno.
 */
int spool_save_state(const struct guest *g)
{
	struct spool_text t = { 0 };
	unsigned int i;

	struct spool_state st = {
		.trace_id = g->trace_id,
		.streams = g->nr_streams,
		.qemu_pid = (int)g->link.qemu_pid,
		.max_reached = g->figures.budget.reached,
	};

	snprintf(st.name, sizeof(st.name), "%s", g->name);
	spool_keys_write(&t, spool_state_keys, spool_state_nkeys, &st);
	spool_keys_write(&t, spool_agent_keys, spool_agent_nkeys, &g->agent);
	spool_keys_write(&t, spool_state_tail_keys, spool_state_tail_nkeys, &st);
	spool_keys_write(&t, spool_figures_keys, spool_figures_nkeys, &g->figures);
	spool_keys_write(&t, spool_kcache_keys, spool_kcache_nkeys, &g->kcache.saved);
	/* A list, per-CPU keys and an array: more than a table's fixed fields. */
	spool_tprintf(&t, "vcpu_tids=");
	for (i = 0; i < g->link.nr_vcpu_tids; i++)
		spool_tprintf(&t, "%s%u", i ? "," : "", g->link.vcpu_tids[i]);
	spool_tprintf(&t, "\n");
	for (i = 0; i < g->nr_streams; i++) {
		spool_ikey_write(&t, SPOOL_IKEY_DROPPED, g->streams[i].cpu, g->streams[i].dropped_pages);
		spool_ikey_write(&t, SPOOL_IKEY_BAD, g->streams[i].cpu, g->streams[i].bad_pages);
	}
	spool_keys_write(&t, spool_budget_keys, spool_budget_nkeys, &g->figures.budget);
	for (i = 0; i < GMSG_NR; i++)
		spool_ikey_write(&t, SPOOL_IKEY_MSGS, i, g->figures.msgs[i]);
	return spool_text_save(&t, g->spool_fd, "state");
}

/**
 * spool_save_agent() - write the agent's final per-CPU figures and stats texts
 * @g: the guest, stopped
 *
 * Return: 0 or -errno.
 */
int spool_save_agent(const struct guest *g)
{
	struct spool_text t = { 0 };
	unsigned int i;
	int ret = 0;

	/* Only per-CPU keys (SPOOL_IKEY_BYTES and _PAGES, spool.h). */
	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;
		const char *st = g->stats.text[cpu] ? g->stats.text[cpu] : "";

		ret = spool_save_stats(g->spool_fd, cpu, st) ?: ret;
		spool_ikey_write(&t, SPOOL_IKEY_BYTES, cpu, g->stats.bytes[cpu]);
		spool_ikey_write(&t, SPOOL_IKEY_PAGES, cpu, g->stats.pages[cpu]);
	}
	return spool_text_save(&t, g->spool_fd, "agent") ?: ret;
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
	const struct spool_check *ck = &g->sync.check;
	struct spool_text t = { 0 };
	unsigned int cpu, i;

	spool_keys_write(&t, spool_sync_keys, spool_sync_nkeys, &g->sync.head);
	spool_keys_write(&t, spool_kvm_keys, spool_kvm_nkeys, &g->sync.kvm);
	spool_keys_write(&t, spool_check_keys, spool_check_nkeys, &g->sync.check);
	/* Lists of records, several values a line: hand-written (spool.c's load_sync() reads them). */
	for (i = 0; i < ck->nr_ivs; i++) {
		const struct spool_check_iv *iv = &ck->ivs[i];

		spool_tprintf(&t, "check cpu=%u burst=%u n=%u inside=%d t=%" PRIu64 " from=%" PRIu64
			" offset=%" PRId64 " lo=%" PRId64 " hi=%" PRId64 "\n", iv->cpu, iv->burst, iv->n,
			iv->inside, iv->t, iv->epoch_from, iv->offset, iv->lo, iv->hi);
	}
	for (cpu = 0; cpu < g->agent.nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++) {
		if (g->sync.min_rtt[cpu])
			spool_tprintf(&t, "probes cpu=%u min_rtt=%" PRIu64 " samples=%u\n", cpu,
				g->sync.min_rtt[cpu], g->sync.samples[cpu]);
		for (i = 0; i < g->sync.cpus[cpu].nr; i++) {
			const struct vt_tsync_epoch *ep = &g->sync.cpus[cpu].epochs[i];

			spool_tprintf(&t, "epoch cpu=%u from=%" PRIu64 " offset=%" PRId64 " ratio=%" PRIu64
				" frac=%u source=%d flags=%u error=%" PRIu64 " min_rtt=%" PRIu64
				" since=%" PRIu64 "\n", cpu, ep->host_from, ep->map.offset, ep->map.ratio,
				ep->map.frac_bits, (int)ep->source, ep->flags, ep->error, ep->min_rtt,
				ep->since);
		}
	}
	/* The live view maps the guest's timestamps with what the files will be made of. */
	if (g->rec)
		live_clock(g->rec->live, g->live_idx, g->sync.cpus,
			   g->agent.nr_cpus < COLLECT_MAX_CPUS ? g->agent.nr_cpus : COLLECT_MAX_CPUS,
			   g->sync.head.host_end);
	return spool_text_save(&t, g->spool_fd, "sync");
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
	struct spool_text t = { 0 };
	struct spool_migration *mf;
	unsigned int i;

	if (!m->incoming && !m->out && !m->migrating && !m->seen.failures)
		return 0;
	/* Only direction: cpus[] stays zero, the streams are written below. */
	mf = calloc(1, sizeof(*mf));
	if (!mf)
		return -ENOMEM;
	snprintf(mf->direction, sizeof(mf->direction), "%s",
		 m->incoming ? "in" : m->out ? "out" : "none");
	spool_keys_write(&t, spool_migration_keys, spool_migration_nkeys, mf);
	spool_keys_write(&t, spool_mig_seen_keys, spool_mig_seen_nkeys, &m->seen);
	free(mf);
	/* Seven values a stream on one line: hand-written (spool.c's load_migration() reads them). */
	for (i = 0; i < g->nr_streams; i++) {
		const struct stream *s = &g->streams[i];

		spool_tprintf(&t, "stream%u=%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%d,%" PRIu64 ",%" PRIu64
			",%" PRIu64 "\n", s->cpu, s->bytes_session, s->pages, s->last_ts, s->marked,
			s->mark_pos, s->mark_pre, s->marks);
	}
	return spool_text_save(&t, g->spool_fd, "migration");
}
