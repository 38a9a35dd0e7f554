// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * manifest.json: what a run recorded, per trace and per CPU, its losses,
 * clock mapping and problems (see virtio-trace-collect-files(5)).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "output.h"
#include "write.h"
#include "vt_stats.h"

/*
 * doc/manifest.schema.json describes this version of the keys; a key renamed or removed, or
 * one whose type changes, is a new version (one added is not: readers ignore what they do
 * not know, but the schema is closed, so it is updated with the writer).
 */
#define MANIFEST_SCHEMA_VERSION	1

/* A string member, null when @s is empty. */
static void str_or_null(struct jw *w, const char *key, const char *s)
{
	jw_str(w, key, s && s[0] ? s : NULL);
}

static uint64_t stat_field(const char *stats, const char *key)
{
	return vt_stats_u64(stats, key);
}

/* Whether the agent's stats text has @key (the steal lines are newer than some agents). */
static bool stat_has(const char *stats, const char *key)
{
	return vt_stats_line(stats, key) != NULL;
}

static double ticks_ns(const struct finish *r, uint64_t ticks)
{
	return r->opt.tsc_khz ? ticks * 1e6 / r->opt.tsc_khz : 0;
}

/* Host TSC as trace-cmd prints it (TSC2NSEC), 0 when unknown. */
static uint64_t tsc_ns(const struct finish *r, uint64_t tsc)
{
	const struct vt_tsc2nsec t = { .mult = r->opt.tsc_mult, .shift = r->opt.tsc_shift };

	return tsc && t.mult ? vt_tsc2nsec_apply(&t, tsc) : 0;
}

/* A live migration's facts ("migration" in a guest): out, in, or one that failed. */
static void json_migration(struct jw *w, const struct finish *r, const struct spool_migration *m,
			   unsigned int nr_cpus)
{
	bool out = !strcmp(m->direction, "out"), in = !strcmp(m->direction, "in");
	uint64_t at = m->seen.stop_tsc ? m->seen.stop_tsc : m->seen.completed_tsc;
	unsigned int i;

	jw_obj(w, "migration");
	jw_str(w, "direction", m->direction);
	jw_str(w, "status", m->seen.status);
	if (out)
		jw_str(w, "reason", "migrated out: QEMU reported the live migration completed; the "
		       "recording ends at the switchover, drained of what the ports still delivered");
	else if (in && m->seen.resumed)
		jw_str(w, "reason", "migrated in: the agent's running session was taken over (RESUME)");
	else if (in)
		jw_str(w, "reason", "migrated in: the agent had no running session; a new recording "
		       "was set up");
	else
		jw_str(w, "reason", "a live migration began but did not complete: the guest stayed");
	jw_u64(w, "failures", m->seen.failures);
	if (out)
		jw_u64(w, "migrated_out_at_ns", tsc_ns(r, at));
	if (in) {
		jw_u64(w, "resumed_at_ns", tsc_ns(r, m->seen.resume_tsc));
		jw_u64(w, "taken_over_at_ns", tsc_ns(r, m->seen.taken_tsc));
		jw_u64(w, "resume_number", m->seen.resume_no);
		jw_u64(w, "stale_messages", m->seen.ignored);
	}
	jw_inline(w, "host_tsc", '{');
	jw_u64(w, "active", m->seen.active_tsc);
	jw_u64(w, "stop", m->seen.stop_tsc);
	jw_u64(w, "completed", m->seen.completed_tsc);
	jw_u64(w, "resume", m->seen.resume_tsc);
	jw_u64(w, "taken_over", m->seen.taken_tsc);
	jw_u64(w, "drained", m->seen.out_tsc);
	jw_end(w, '}');
	jw_u64(w, "qemu_downtime_ms", m->seen.downtime_ms);
	jw_u64(w, "qemu_total_ms", m->seen.total_ms);
	jw_arr(w, "cpus");
	for (i = 0; i < nr_cpus && i < COLLECT_MAX_CPUS; i++) {
		const struct spool_mig_cpu *c = &m->cpus[i];

		if (!c->bytes && !c->pages && !c->marked)
			continue;
		jw_inline(w, NULL, '{');
		jw_u64(w, "cpu", i);
		jw_u64(w, "stream_bytes", c->bytes);
		jw_u64(w, "pages", c->pages);
		jw_u64(w, "last_page_ts", c->last_ts);
		if (in) {
			jw_bool(w, "resume_mark", c->marked);
			jw_u64(w, "mark_position", c->mark_pos);
			jw_u64(w, "bytes_before_mark", c->mark_pre);
		}
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
}

/* A KVM epoch: how its moment is known, and why its bound is what it is. */
static void json_epoch_kvm(struct jw *w, const struct vt_tsync_epoch *ep)
{
	if (ep->source == VT_TSYNC_SRC_KVM_EVENT) {
		jw_str(w, "moment", "exact");
	} else if (ep->source == VT_TSYNC_SRC_KVM && ep->since) {
		jw_str(w, "moment", "between-reads");
		jw_u64(w, "changed_after_tsc", ep->since);
	} else if (ep->source == VT_TSYNC_SRC_KVM) {
		jw_str(w, "moment", "read");
	}
	if (ep->flags & VT_TSYNC_EPOCH_UNSEEN)
		jw_str(w, "why", "the offset changed to the next epoch's at a moment not seen (between "
		       "two debugfs reads, or an event lost): events in between may be off by the bound");
}

/* How KVM's offsets were followed (record/sync.c), null when they were not. */
static void json_kvm(struct jw *w, const struct spool_kvm *k)
{
	if (!k->changes_from[0]) {
		jw_null(w, "kvm");
		return;
	}
	jw_obj(w, "kvm");
	jw_str(w, "changes_from", !strcmp(k->changes_from, "events") ? "kvm:kvm_write_tsc_offset" :
	       "debugfs re-reads");
	jw_str(w, "why", k->why);
	str_or_null(w, "instance", k->instance);
	jw_u64(w, "changes", k->changes);
	jw_u64(w, "events_lost", k->lost);
	jw_u64(w, "changes_not_seen", k->breaks);
	jw_u64(w, "reordered", k->reordered);
	jw_u64(w, "merged", k->merged);
	jw_u64(w, "debugfs_disagreed", k->mismatch);
	str_or_null(w, "note", k->note);
	jw_inline(w, "host_tsc", '{');
	jw_bool(w, "constant_tsc", strstr(k->host_flags, "constant_tsc"));
	jw_bool(w, "nonstop_tsc", strstr(k->host_flags, "nonstop_tsc"));
	jw_str(w, "clocksource", k->clocksource);
	jw_end(w, '}');
	jw_end(w, '}');
}

/* --sync-check's results, null without it. */
static void json_check(struct jw *w, const struct spool_check *c)
{
	uint32_t i;

	if (!c->on) {
		jw_null(w, "check");
		return;
	}
	jw_obj(w, "check");
	jw_u64(w, "bursts", c->bursts);
	jw_u64(w, "replies", c->replies);
	jw_u64(w, "outside", c->outside);
	jw_u64(w, "straddling", c->straddling);
	jw_u64(w, "no_epoch", c->no_epoch);
	jw_u64(w, "intervals_not_listed", c->unlisted);
	jw_arr(w, "intervals");
	for (i = 0; i < c->nr_ivs; i++) {
		const struct spool_check_iv *v = &c->ivs[i];

		jw_inline(w, NULL, '{');
		jw_u64(w, "cpu", v->cpu);
		jw_u64(w, "burst", v->burst);
		jw_u64(w, "replies", v->n);
		jw_u64(w, "host_tsc", v->t);
		jw_u64(w, "epoch_host_tsc_from", v->epoch_from);
		jw_i64(w, "offset", v->offset);
		jw_i64(w, "lo", v->lo);
		jw_i64(w, "hi", v->hi);
		jw_bool(w, "inside", v->inside);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
}

/* A `key: text` line of the stats, copied into @buf ("" when absent). */
static void stat_text(const char *stats, const char *key, char *buf, size_t size)
{
	const char *p = vt_stats_line(stats, key);

	buf[0] = '\0';
	if (p) {
		p += strspn(p, " ");
		snprintf(buf, size, "%.*s", (int)strcspn(p, "\n"), p);
	}
}

/* The agent's buffer lines of a CPU's stats. */
static void json_cpu_buffer(struct jw *w, const char *stats)
{
	char why[256];

	jw_u64(w, "buffer_kb", stat_field(stats, "buffer_kb"));
	jw_u64(w, "buffer_start_kb", stat_field(stats, "buffer_start_kb"));
	jw_u64(w, "buffer_budget_kb", stat_field(stats, "buffer_budget_kb"));
	jw_u64(w, "buffer_grows", stat_field(stats, "buffer_grows"));
	jw_bool(w, "buffer_capped", stat_field(stats, "buffer_capped") != 0);
	jw_u64(w, "buffer_paused_us", stat_field(stats, "buffer_paused_us"));
	stat_text(stats, "buffer_why", why, sizeof(why));
	if (*why)
		jw_str(w, "buffer_why", why);
	else
		jw_null(w, "buffer_why");
}

/* One CPU's figures ("cpus" of a trace). */
static void json_cpu(struct jw *w, const struct trace_sum *t, const struct cpu_sum *c,
		     const struct spool_cpu *sc)
{
	const char *stats = sc->stats ? sc->stats : "";

	jw_inline(w, NULL, '{');
	jw_u64(w, "cpu", c->cpu);
	jw_u64(w, "bytes", c->bytes);
	jw_u64(w, "pages", c->pages);
	jw_u64(w, "events", c->events);
	jw_u64(w, "bad_pages", c->bad_pages);
	jw_u64(w, "bad_pages_kept", c->bad_pages_kept);
	jw_u64(w, "pages_after_loss", c->missed_pages);
	jw_u64(w, "lost_events_in_pages", c->lost_in_pages);
	jw_u64(w, "fragment_bytes", sc->frag_bytes);
	jw_u64(w, "dropped_pages_max_size", sc->dropped);
	if (!t->rec.host) {
		jw_u64(w, "agent_bytes", sc->agent_bytes);
		jw_u64(w, "agent_pages", sc->agent_pages);
	}
	jw_obj(w, "stats");
	jw_u64(w, "entries", stat_field(stats, "entries"));
	jw_u64(w, "overrun", stat_field(stats, "overrun"));
	jw_u64(w, "commit_overrun", stat_field(stats, "commit overrun"));
	jw_u64(w, "dropped_events", stat_field(stats, "dropped events"));
	jw_u64(w, "read_events", stat_field(stats, "read events"));
	/* The guest kernel's steal time over the recording (/proc/stat, USER_HZ ticks). */
	if (!t->rec.host && stat_has(stats, "steal_ns")) {
		jw_u64(w, "steal_ns", stat_field(stats, "steal_ns"));
		jw_u64(w, "steal_ticks", stat_field(stats, "steal_ticks"));
		jw_u64(w, "user_hz", stat_field(stats, "user_hz"));
	}
	/* Its ring buffer's size, and how the agent grew it (an agent with BUFFER_BUDGET). */
	if (!t->rec.host && stat_has(stats, "buffer_kb"))
		json_cpu_buffer(w, stats);
	jw_end(w, '}');
	jw_end(w, '}');
}

/* A guest's clock mapping ("sync"). */
static void json_sync(struct jw *w, const struct finish *r, const struct trace_sum *t)
{
	double bound = 0;
	unsigned int i;
	uint32_t j;

	jw_obj(w, "sync");
	jw_str(w, "method", t->rec.sync_head.method);
	jw_str(w, "why", t->rec.sync_head.why);
	str_or_null(w, "final_sync_cut", t->rec.sync_head.final_cut);
	jw_arr(w, "epochs");
	for (i = 0; i < t->nr_cpus; i++) {
		for (j = 0; j < t->rec.sync[i].nr; j++) {
			const struct vt_tsync_epoch *ep = &t->rec.sync[i].epochs[j];

			if ((ep->host_from <= t->rec.sync_head.host_end || !j) &&
			    ticks_ns(r, ep->error) > bound)
				bound = ticks_ns(r, ep->error);
			jw_inline(w, NULL, '{');
			jw_u64(w, "cpu", i);
			jw_u64(w, "host_tsc_from", ep->host_from);
			jw_i64(w, "offset", ep->map.offset);
			jw_u64(w, "ratio", ep->map.ratio);
			jw_u64(w, "frac_bits", ep->map.frac_bits);
			jw_str(w, "source", vt_tsync_source_name(ep->source));
			jw_bool(w, "drift", ep->flags & VT_TSYNC_EPOCH_DRIFT);
			jw_fixed(w, "bound_ns", ticks_ns(r, ep->error), 1);
			jw_fixed(w, "min_rtt_ns", ticks_ns(r, ep->min_rtt), 1);
			json_epoch_kvm(w, ep);
			if (ep->host_from > t->rec.sync_head.host_end && j)
				jw_bool(w, "applied", false);
			jw_end(w, '}');
		}
	}
	jw_end(w, ']');
	jw_arr(w, "probes");
	for (i = 0; i < t->nr_cpus; i++) {
		if (!t->rec.samples[i])
			continue;
		jw_inline(w, NULL, '{');
		jw_u64(w, "cpu", i);
		jw_u64(w, "samples", t->rec.samples[i]);
		jw_fixed(w, "min_rtt_ns", ticks_ns(r, t->rec.min_rtt[i]), 1);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	json_kvm(w, &t->rec.kvm);
	json_check(w, &t->rec.check);
	if (t->rec.sync_head.reset_tsc)
		jw_u64(w, "reset_host_tsc", t->rec.sync_head.reset_tsc);
	else
		jw_null(w, "reset_host_tsc");
	/* No mapping has no bound; 0 comes only from an exact method. */
	if (!strcmp(t->rec.sync_head.method, "none"))
		jw_null(w, "bound_ns");
	else
		jw_fixed(w, "bound_ns", bound, 1);
	jw_end(w, '}');
}

/*
 * What the metadata bundles cost and how soon the first page came: the host's
 * clock, and the agent's word for its CPU (null when it did not say).
 */
static void json_metacost(struct jw *w, const struct spool_figures *f)
{
	jw_inline(w, "metadata", '{');
	jw_u64(w, "bytes", f->budget.meta);
	jw_u64(w, "fetches", f->meta_fetches);
	jw_fixed(w, "fetch_ms", f->meta_us / 1e3, 3);
	if (f->meta_guest_cpu_us)
		jw_fixed(w, "guest_cpu_ms", f->meta_guest_cpu_us / 1e3, 3);
	else
		jw_null(w, "guest_cpu_ms");
	if (f->first_page_us)
		jw_fixed(w, "first_page_ms", f->first_page_us / 1e3, 3);
	else
		jw_null(w, "first_page_ms");
	jw_end(w, '}');
}

/*
 * record --hold: what the rings kept ("held"), null otherwise. The window is
 * the span of the kept events in the trace's own clock (first page to last
 * event, every CPU), in ns where that clock can say (x86-tsc by the host's
 * TSC rate, which the guest's shares; the ns clocks as they are).
 */
static void json_held(struct jw *w, const struct finish *r, const struct trace_sum *t,
		      uint64_t overwritten)
{
	static const char *const ns_clocks[] = { "local", "global", "mono", "mono_raw", "boot",
						 "tai", "perf", NULL };
	const char *clock = t->rec.agent.clock;
	uint64_t first = UINT64_MAX, end = 0;
	unsigned int i;

	if (!r->opt.hold) {
		jw_null(w, "held");
		return;
	}
	for (i = 0; i < t->nr_cpus && i < COLLECT_MAX_CPUS; i++) {
		const struct spool_cpu *c = &t->rec.cpus[i];

		if (!c->have_window || c->window.end_ts < c->window.first_ts)
			continue;
		if (c->window.first_ts < first)
			first = c->window.first_ts;
		if (c->window.end_ts > end)
			end = c->window.end_ts;
	}
	jw_obj(w, "held");
	jw_u64(w, "overwritten", overwritten);
	if (first > end) {
		jw_null(w, "first_ts");
		jw_null(w, "last_ts");
		jw_null(w, "window_ns");
	} else {
		jw_u64(w, "first_ts", first);
		jw_u64(w, "last_ts", end);
		for (i = 0; ns_clocks[i] && strcmp(ns_clocks[i], clock); i++)
			;
		if (!strcmp(clock, "x86-tsc") && r->opt.tsc_khz)
			jw_fixed(w, "window_ns", ticks_ns(r, end - first), 0);
		else if (ns_clocks[i])
			jw_fixed(w, "window_ns", (double)(end - first), 0);
		else
			jw_null(w, "window_ns");
	}
	jw_end(w, '}');
}

/* One trace: the host's ("host", @key) or a guest's (an element of "guests", @key NULL). */
static void json_trace(struct jw *w, const char *key, const struct finish *r,
		       const struct trace_sum *t)
{
	uint64_t overrun = 0, lost_pages = 0;
	char id[24];
	unsigned int i;

	jw_obj(w, key);
	jw_str(w, "name", t->rec.name);
	jw_str(w, "file", t->written ? t->file : NULL);
	if (!t->rec.host) {
		/* record --last-boot's file (record/lastboot-file.c): another boot, another clock. */
		char lb[4400];
		struct stat st;

		snprintf(lb, sizeof(lb), "%s/guest-%s.lastboot.dat", r->out, t->rec.name);
		if (lstat(lb, &st) == 0 && S_ISREG(st.st_mode)) {
			jw_str(w, "last_boot_file", strrchr(lb, '/') + 1);
			jw_str(w, "last_boot_note", "the previous boot's trace: that boot's own clock, "
			       "not synchronised with the host");
		}
	}
	snprintf(id, sizeof(id), "0x%016" PRIx64, t->rec.trace_id);
	jw_str(w, "trace_id", id);
	jw_str(w, "clock", t->rec.agent.clock);
	jw_arr(w, "cpus");
	for (i = 0; i < t->nr_sums; i++) {
		const struct cpu_sum *c = &t->cpus[i];
		const struct spool_cpu *sc = &t->rec.cpus[c->cpu < COLLECT_MAX_CPUS ? c->cpu : 0];

		overrun += stat_field(sc->stats ? sc->stats : "", "overrun");
		lost_pages += c->lost_in_pages;
		json_cpu(w, t, c, sc);
	}
	jw_end(w, ']');
	jw_inline(w, "lost_events", '{');
	jw_u64(w, "in_pages", lost_pages);
	jw_u64(w, "overrun", overrun);
	jw_end(w, '}');
	json_held(w, r, t, overrun);
	if (!t->rec.host) {
		jw_str(w, "agent", t->rec.agent.software);
		jw_inline(w, "vcpu_threads", '[');
		for (i = 0; i < t->rec.nr_tids; i++)
			jw_u64(w, NULL, t->rec.tids[i]);
		jw_end(w, ']');
		json_sync(w, r, t);
		if (t->rec.mig.have)
			json_migration(w, r, &t->rec.mig, t->rec.agent.nr_cpus);
		jw_bool(w, "max_size_reached", t->rec.max_reached);
		jw_bool(w, "kallsyms_from_cache", t->rec.kcache.hit);
		str_or_null(w, "kallsyms_cache_vm", t->rec.kcache.vm);
		str_or_null(w, "kallsyms_cache_note", t->rec.kcache.why);
		jw_u64(w, "agent_warnings", t->rec.figures.msgs[GMSG_AGENT_NOTICE]);
		str_or_null(w, "agent_first_warning", t->rec.figures.agent_notice);
		jw_inline(w, "budget", '{');
		jw_u64(w, "max", t->rec.figures.budget.max);
		jw_u64(w, "used", t->rec.figures.budget.used);
		jw_u64(w, "pages_bytes", t->rec.figures.budget.pages);
		jw_u64(w, "bad_pages_bytes", t->rec.figures.budget.bad);
		jw_u64(w, "fragment_bytes", t->rec.figures.budget.frag);
		jw_u64(w, "metadata_bytes", t->rec.figures.budget.meta);
		jw_end(w, '}');
		json_metacost(w, &t->rec.figures);
	}
	jw_u64(w, "text_replaced", t->text_replaced);
	jw_u64(w, "formats_refused", t->formats_refused);
	jw_str(w, "problems", t->problems);
	jw_end(w, '}');
}

/* `join`: the two recordings, the switchover and each CPU's stream across it. */
static void json_join(struct jw *w, const struct finish *r, const struct join_sum *js)
{
	uint64_t stop = tsc_ns(r, js->stop_tsc), resume = tsc_ns(r, js->resume_tsc);
	unsigned int i;

	jw_obj(w, "join");
	jw_str(w, "source", js->src);
	jw_str(w, "destination", js->dst);
	jw_str(w, "hosts", js->two_hosts ? "two" : "one");
	jw_u64(w, "host_sync_bound_ns", js->sync_bound_ns);
	jw_i64(w, "host_delta_ticks", js->host_delta);
	jw_inline(w, "blackout", '{');
	jw_u64(w, "from_ns", stop);
	jw_u64(w, "to_ns", resume);
	jw_fixed(w, "ms", resume > stop ? (resume - stop) / 1e6 : 0.0, 3);
	jw_u64(w, "qemu_downtime_ms", js->qemu_downtime_ms);
	jw_end(w, '}');
	jw_u64(w, "switch_guest_tsc", js->switch_guest_tsc);
	jw_u64(w, "switch_host_ns", tsc_ns(r, js->switch_host_tsc));
	jw_arr(w, "cpus");
	for (i = 0; i < js->nr; i++) {
		const struct join_cpu *c = &js->cpus[i];

		jw_inline(w, NULL, '{');
		jw_u64(w, "cpu", c->cpu);
		jw_bool(w, "resume_mark", c->marked);
		jw_u64(w, "source_stream_bytes", c->src_to);
		jw_u64(w, "destination_from_byte", c->dst_from);
		jw_u64(w, "duplicate_bytes_dropped", c->skip);
		jw_u64(w, "lost_bytes", c->gap);
		jw_u64(w, "source_pages", c->src_pages);
		jw_u64(w, "source_events", c->src_events);
		jw_u64(w, "destination_pages", c->dst_pages);
		jw_u64(w, "destination_events", c->dst_events);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
}

int manifest_write(struct finish *r, bool recovered)
{
	char tmp[64], date[64];
	time_t now = time(NULL);
	unsigned int i;
	struct jw w;
	FILE *f;
	int fd, ret;

	fd = output_create_tmp(r, "manifest.json", tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		unlinkat(r->out_fd, tmp, 0);
		return ret;
	}
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	jw_begin_pretty(&w, f);
	jw_obj(&w, NULL);
	jw_str(&w, "tool", "virtio-trace-collect");
	jw_str(&w, "version", PACKAGE_VERSION);
	jw_u64(&w, "schema_version", MANIFEST_SCHEMA_VERSION);
	jw_str(&w, "created", date);
	jw_bool(&w, "recovered", recovered);
	jw_str(&w, "command_line", r->opt.cmdline);
	jw_bool(&w, "held", r->opt.hold);
	jw_u64(&w, "file_version", r->opt.version);
	jw_str(&w, "compression", r->opt.compress && r->opt.version >= 7 ? "zstd" : "none");
	jw_inline(&w, "host_tsc", '{');
	jw_u64(&w, "khz", r->opt.tsc_khz);
	jw_str(&w, "method", r->opt.tsc_method);
	jw_u64(&w, "tsc2nsec_mult", r->opt.tsc_mult);
	jw_u64(&w, "tsc2nsec_shift", r->opt.tsc_shift);
	jw_end(&w, '}');
	for (i = 0; i < r->nr_traces; i++)
		if (r->traces[i].rec.host)
			break;
	if (i < r->nr_traces)
		json_trace(&w, "host", r, &r->traces[i]);
	else
		jw_null(&w, "host");
	jw_arr(&w, "guests");
	for (i = 0; i < r->nr_traces; i++)
		if (!r->traces[i].rec.host)
			json_trace(&w, NULL, r, &r->traces[i]);
	jw_end(&w, ']');
	if (r->join)
		json_join(&w, r, r->join);
	jw_end(&w, '}');
	if (r->fsync && (fflush(f) != 0 || fsync(fileno(f)) < 0)) {
		ret = -errno;
		fclose(f);
		unlinkat(r->out_fd, tmp, 0);
		return ret;
	}
	if (fclose(f) != 0) {
		ret = -errno;
		unlinkat(r->out_fd, tmp, 0);
		return ret;
	}
	ret = output_install(r, tmp, "manifest.json");
	if (ret < 0) {
		unlinkat(r->out_fd, tmp, 0);
		return ret;
	}
	if (r->fsync)
		fsync(r->out_fd);
	return 0;
}

/* --- what a recording leaves, in a few lines (record's and recover's end) --- */

#define SUMMARY_MANIFEST_MAX	(64u << 20)

static uint64_t sum_u64(const struct json_value *v)
{
	uint64_t x = 0;

	return json_u64(v, &x) == 0 ? x : 0;
}

/* Text from the manifest goes to a terminal: printable ASCII only. */
static void put_text(FILE *f, const char *s, int width)
{
	int n = 0;

	for (; s && *s; s++, n++)
		fputc(*s >= 0x20 && *s < 0x7f ? *s : '?', f);
	for (; n < width; n++)
		fputc(' ', f);
}

/* "+-1.2 us" and the like: the bound of a probed clock mapping. */
static void fmt_bound(char *buf, size_t size, double ns)
{
	if (ns < 1000)
		snprintf(buf, size, "+-%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "+-%.1f us", ns / 1e3);
	else
		snprintf(buf, size, "+-%.1f ms", ns / 1e6);
}

/* One trace's line: name, file, CPUs, MB, events, lost, clock. */
static void summary_line(FILE *f, const struct json_value *t, bool host, int name_w, int file_w)
{
	const struct json_value *cpus = json_get(t, "cpus"), *c, *lost = json_get(t, "lost_events");
	const struct json_value *sync = json_get(t, "sync");
	const char *file = json_string(json_get(t, "file"));
	const char *problems = json_string(json_get(t, "problems"));
	uint64_t bytes = 0, events = 0, bad = 0, dropped = 0, in_pages, overrun;
	unsigned int nr = 0;

	for (c = json_is(cpus, JSON_ARRAY) ? cpus->child : NULL; c; c = c->next, nr++) {
		bytes += sum_u64(json_get(c, "bytes"));
		events += sum_u64(json_get(c, "events"));
		bad += sum_u64(json_get(c, "bad_pages"));
		dropped += sum_u64(json_get(c, "dropped_pages_max_size"));
	}
	in_pages = sum_u64(json_get(lost, "in_pages"));
	overrun = sum_u64(json_get(lost, "overrun"));
	fprintf(f, "  ");
	put_text(f, host ? "host" : json_string(json_get(t, "name")), name_w);
	fprintf(f, "  ");
	put_text(f, file ? file : "(no file)", file_w);
	fprintf(f, " %3u %-5s %8.2f MB %9" PRIu64 " events", nr, host ? "CPUs" : "vCPUs",
		bytes / 1e6, events);
	/* A held ring overwrote its older events: no transport lost them. */
	if (json_is(json_get(t, "held"), JSON_OBJECT))
		fprintf(f, "  held, %" PRIu64 " older overwritten", overrun);
	else
		fprintf(f, "  lost %" PRIu64, in_pages);
	if (overrun && !json_is(json_get(t, "held"), JSON_OBJECT))
		fprintf(f, " (overrun %" PRIu64 ")", overrun);
	if (bad)
		fprintf(f, ", %" PRIu64 " bad pages", bad);
	if (dropped)
		fprintf(f, ", %" PRIu64 " pages over --max-size", dropped);
	if (!host) {
		const char *method = json_string(json_get(sync, "method"));
		double ns = -1;
		char b[32];

		if (!method || !strcmp(method, "none")) {
			fprintf(f, ", clock not synced");
		} else if (!strcmp(method, "offset")) {
			fprintf(f, ", clock offset given");
		} else if (json_double(json_get(sync, "bound_ns"), &ns) == 0 && ns == 0) {
			fprintf(f, ", clock ");
			put_text(f, method, 0);
			fprintf(f, " exact");
		} else {
			fmt_bound(b, sizeof(b), ns < 0 ? 0 : ns);
			fprintf(f, ", clock ");
			put_text(f, method, 0);
			fprintf(f, " %s", b);
		}
	}
	if (problems && *problems)
		fprintf(f, "; problems: see manifest.json");
	fputc('\n', f);
}

static int read_manifest(int out_fd, char **text, size_t *len)
{
	struct stat st;
	size_t have = 0;
	int fd, ret = 0;

	fd = openat(out_fd, "manifest.json", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SUMMARY_MANIFEST_MAX) {
		ret = -EINVAL;
		goto err_close_fd;
	}
	*text = malloc(st.st_size + 1);
	if (!*text) {
		ret = -ENOMEM;
		goto err_close_fd;
	}
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, *text + have, st.st_size - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += n;
	}
	*len = have;
err_close_fd:
	close(fd);
	return ret;
}

/* A path for a command line: printable ASCII, quoted when the shell would split it. */
static void put_arg(FILE *f, const char *dir, const char *file)
{
	bool quote = strpbrk(dir, " \t'\"\\$`*?[]{}()<>|&;~#!") != NULL;

	if (quote)
		fputc('\'', f);
	for (const char *p = dir; *p; p++) {
		if (*p == '\'' && quote)
			fputs("'\\''", f);
		else
			fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', f);
	}
	if (file) {
		fputc('/', f);
		put_text(f, file, 0);
	}
	if (quote)
		fputc('\'', f);
}

/**
 * manifest_summary() - what a recording left, in a few lines, from its manifest
 * @out_fd: the output directory
 * @out_dir: its path, as the user gave it
 * @status: the exit status the run ends with
 * @f: where to print
 *
 * A line for the host and one per guest: CPUs, megabytes received, events,
 * events lost (the page headers' count; the ring buffer's overrun when not
 * 0), bad pages, pages over --max-size, the clock mapping's method and
 * bound, and the file; then what to run next. The figures are the
 * manifest's (read back, as a user would), so the two cannot disagree.
 *
 * Return: 0, or -errno when the manifest cannot be read (nothing printed).
 */
int manifest_summary(int out_fd, const char *out_dir, int status, FILE *f)
{
	const struct json_limits lim = { .max_depth = 16 };
	const struct json_value *root, *host, *guests, *g;
	struct json_error jerr;
	struct json_doc *doc;
	char *text = NULL;
	size_t len = 0, n;
	int name_w = 4, file_w = 8, ret;

	ret = read_manifest(out_fd, &text, &len);
	if (ret < 0)
		return ret;
	doc = json_parse(text, len, &lim, &jerr);
	free(text);
	if (!doc)
		return -EBADMSG;
	root = json_root(doc);
	host = json_get(root, "host");
	guests = json_get(root, "guests");
	if (!json_is(guests, JSON_ARRAY)) {
		json_free(doc);
		return -EBADMSG;
	}
	for (g = guests->child; g; g = g->next) {
		n = strlen(json_string(json_get(g, "name")) ?: "");
		if ((int)n > name_w)
			name_w = n < 64 ? (int)n : 64;
		n = strlen(json_string(json_get(g, "file")) ?: "(no file)");
		if ((int)n > file_w)
			file_w = n < 80 ? (int)n : 80;
	}
	fprintf(f, "virtio-trace-collect%s%s: recorded in ", collect_cmd ? " " : "",
		collect_cmd ? collect_cmd : "");
	put_arg(f, out_dir, NULL);
	fprintf(f, " (exit status %d%s):\n", status, status == EXIT_PARTIAL ? ": see the problems above" : "");
	if (json_is(host, JSON_OBJECT))
		summary_line(f, host, true, name_w, file_w);
	for (g = guests->child; g; g = g->next)
		summary_line(f, g, false, name_w, file_w);
	fprintf(f, "  next: trace-cmd report");
	if (json_is(host, JSON_OBJECT) && json_string(json_get(host, "file"))) {
		fprintf(f, " -i ");
		put_arg(f, out_dir, json_string(json_get(host, "file")));
	}
	for (g = guests->child; g; g = g->next) {
		if (!json_string(json_get(g, "file")))
			continue;
		fprintf(f, " -i ");
		put_arg(f, out_dir, json_string(json_get(g, "file")));
	}
	fprintf(f, "\n        virtio-trace-collect report --html ");
	put_arg(f, out_dir, "timeline.html");
	fputc(' ', f);
	put_arg(f, out_dir, NULL);
	fputc('\n', f);
	json_free(doc);
	return 0;
}
