// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a guest's session leaves in its spool directory for the finish and
 * for `recover`: its state, the agent's final figures and the clock mapping.
 * The files and their keys are the spool's (store/spool.c reads them back).
 */
#include <inttypes.h>

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

	spool_tprintf(&t, "name=%s\ntrace_id=%llu\nnr_cpus=%u\nsubbuf=%u\nclock=%s\nagent=%s\ncaps=%llu\n"
		"streams=%u\nqemu_pid=%d\nmax_reached=%d\nprotocol_errors=%llu\nerror=%s\n"
		"agent_error=%s\nagent_notice=%s\nkcache_hit=%d\nkcache_vm=%s\nkcache_why=%s\nvcpu_tids=",
		g->name, (unsigned long long)g->trace_id, g->nr_cpus, g->subbuf, g->clock,
		g->agent_software, (unsigned long long)g->caps, g->nr_streams, (int)g->link.qemu_pid,
		g->budget.reached, (unsigned long long)g->protocol_errors, g->error, g->agent_error,
		g->agent_notice, g->kcache_hit, g->kcache_vm, g->kcache_why);
	for (i = 0; i < g->link.nr_vcpu_tids; i++)
		spool_tprintf(&t, "%s%u", i ? "," : "", g->link.vcpu_tids[i]);
	spool_tprintf(&t, "\n");
	for (i = 0; i < g->nr_streams; i++)
		spool_tprintf(&t, "dropped%u=%llu\nbad%u=%llu\n", g->streams[i].cpu,
			(unsigned long long)g->streams[i].dropped_pages, g->streams[i].cpu,
			(unsigned long long)g->streams[i].bad_pages);
	spool_tprintf(&t, "budget_max=%llu\nbudget_used=%llu\nbudget_pages=%llu\nbudget_bad=%llu\n"
		"budget_frag=%llu\nbudget_meta=%llu\n", (unsigned long long)g->budget.max,
		(unsigned long long)g->budget.used, (unsigned long long)g->budget.pages,
		(unsigned long long)g->budget.bad, (unsigned long long)g->budget.frag,
		(unsigned long long)g->budget.meta);
	for (i = 0; i < GMSG_NR; i++)
		spool_tprintf(&t, "msgs%u=%llu\n", i, (unsigned long long)g->msgs[i]);
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

	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;
		const char *st = g->stats_text[cpu] ? g->stats_text[cpu] : "";

		ret = spool_save_stats(g->spool_fd, cpu, st) ?: ret;
		spool_tprintf(&t, "bytes%u=%llu\npages%u=%llu\n", cpu,
			(unsigned long long)g->agent_bytes[cpu], cpu,
			(unsigned long long)g->agent_pages[cpu]);
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
	struct spool_text t = { 0 };
	unsigned int cpu, i;

	const struct spool_kvm *k = &g->sync.kvm;
	const struct spool_check *ck = &g->sync.check;

	spool_tprintf(&t, "method=%s\nwhy=%s\nhost_end=%" PRIu64 "\nrejected=%u\nfailed=%d\n"
		"final_cut=%s\n", g->sync.method, g->sync.why, g->sync.host_end, g->sync.rejected,
		g->sync.failed, g->sync.final_cut);
	spool_tprintf(&t, "reset_tsc=%" PRIu64 "\n", g->sync.reset_tsc);
	spool_tprintf(&t, "kvm_changes_from=%s\nkvm_why=%s\nkvm_instance=%s\nkvm_changes=%" PRIu64
		"\nkvm_lost=%" PRIu64 "\nkvm_breaks=%" PRIu64 "\nkvm_merged=%" PRIu64 "\nkvm_mismatch=%"
		PRIu64 "\nkvm_note=%s\nkvm_host_flags=%s\nkvm_clocksource=%s\n", k->changes_from, k->why,
		k->instance, k->changes, k->lost, k->breaks, k->merged, k->mismatch, k->note,
		k->host_flags, k->clocksource);
	spool_tprintf(&t, "check_on=%d\ncheck_bursts=%" PRIu64 "\ncheck_replies=%" PRIu64
		"\ncheck_outside=%" PRIu64 "\ncheck_straddling=%" PRIu64 "\ncheck_no_epoch=%" PRIu64
		"\ncheck_unlisted=%" PRIu64 "\n", ck->on, ck->bursts, ck->replies, ck->outside,
		ck->straddling, ck->no_epoch, ck->unlisted);
	for (i = 0; i < ck->nr_ivs; i++) {
		const struct spool_check_iv *iv = &ck->ivs[i];

		spool_tprintf(&t, "check cpu=%u burst=%u n=%u inside=%d t=%" PRIu64 " from=%" PRIu64
			" offset=%" PRId64 " lo=%" PRId64 " hi=%" PRId64 "\n", iv->cpu, iv->burst, iv->n,
			iv->inside, iv->t, iv->epoch_from, iv->offset, iv->lo, iv->hi);
	}
	for (cpu = 0; cpu < g->nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++) {
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
			   g->nr_cpus < COLLECT_MAX_CPUS ? g->nr_cpus : COLLECT_MAX_CPUS, g->sync.host_end);
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
	unsigned int i;

	if (!m->incoming && !m->out && !m->migrating && !m->failures)
		return 0;
	spool_tprintf(&t, "direction=%s\nstatus=%s\nresumed=%d\nactive_tsc=%" PRIu64
		"\nstop_tsc=%" PRIu64 "\ncompleted_tsc=%" PRIu64 "\nresume_tsc=%" PRIu64
		"\ntaken_tsc=%" PRIu64 "\nout_tsc=%" PRIu64 "\ndowntime_ms=%" PRIu64
		"\ntotal_ms=%" PRIu64 "\nfailures=%u\nresume_no=%" PRIu64 "\ninstance=%s\nnr_events=%u"
		"\nignored=%" PRIu64 "\nhost_boot_id=%s\nhost_rt_ns=%" PRIu64 "\nhost_rt_tsc=%" PRIu64 "\n",
		m->incoming ? "in" : m->out ? "out" : "none", m->status, m->resumed, m->active_tsc,
		m->stop_tsc, m->completed_tsc, m->resume_tsc, m->taken_tsc, m->out_tsc,
		m->downtime_ms, m->total_ms, m->failures, m->resume_no, m->instance, m->nr_events,
		m->ignored, m->boot_id, m->rt_ns, m->rt_tsc);
	for (i = 0; i < g->nr_streams; i++) {
		const struct stream *s = &g->streams[i];

		spool_tprintf(&t, "stream%u=%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%d,%" PRIu64 ",%" PRIu64
			",%" PRIu64 "\n", s->cpu, s->bytes_session, s->pages, s->last_ts, s->marked,
			s->mark_pos, s->mark_pre, s->marks);
	}
	return spool_text_save(&t, g->spool_fd, "migration");
}
