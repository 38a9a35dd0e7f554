// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * manifest.json: what a run recorded, per trace and per CPU, its losses,
 * clock mapping and problems (see virtio-trace-collect(1), OUTPUT).
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

/*
 * doc/manifest.schema.json describes this version of the keys; a key renamed or removed, or
 * one whose type changes, is a new version (one added is not: readers ignore what they do
 * not know, but the schema is closed, so it is updated with the writer).
 */
#define MANIFEST_SCHEMA_VERSION	1

static void json_str(FILE *f, const char *s)
{
	json_write_string(f, s);
}

static uint64_t stat_field(const char *stats, const char *key)
{
	const char *p = stats;
	size_t klen = strlen(key);

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':')
			return strtoull(p + klen + 1, NULL, 10);
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return 0;
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
static void json_migration(FILE *f, const struct finish *r, const struct spool_migration *m,
			   unsigned int nr_cpus)
{
	bool out = !strcmp(m->direction, "out"), in = !strcmp(m->direction, "in");
	uint64_t at = m->seen.stop_tsc ? m->seen.stop_tsc : m->seen.completed_tsc;
	unsigned int i;
	bool first = true;

	fprintf(f, "      \"migration\": {\n        \"direction\": ");
	json_str(f, m->direction);
	fprintf(f, ",\n        \"status\": ");
	json_str(f, m->seen.status);
	fprintf(f, ",\n        \"reason\": ");
	if (out)
		json_str(f, "migrated out: QEMU reported the live migration completed; the recording "
			 "ends at the switchover, drained of what the ports still delivered");
	else if (in && m->seen.resumed)
		json_str(f, "migrated in: the agent's running session was taken over (RESUME)");
	else if (in)
		json_str(f, "migrated in: the agent had no running session; a new recording was set up");
	else
		json_str(f, "a live migration began but did not complete: the guest stayed");
	fprintf(f, ",\n        \"failures\": %u", m->seen.failures);
	if (out)
		fprintf(f, ",\n        \"migrated_out_at_ns\": %" PRIu64, tsc_ns(r, at));
	if (in)
		fprintf(f, ",\n        \"resumed_at_ns\": %" PRIu64 ",\n        \"taken_over_at_ns\": %"
			PRIu64 ",\n        \"resume_number\": %" PRIu64 ",\n        \"stale_messages\": %"
			PRIu64, tsc_ns(r, m->seen.resume_tsc), tsc_ns(r, m->seen.taken_tsc), m->seen.resume_no,
			m->seen.ignored);
	fprintf(f, ",\n        \"host_tsc\": { \"active\": %" PRIu64 ", \"stop\": %" PRIu64
		", \"completed\": %" PRIu64 ", \"resume\": %" PRIu64 ", \"taken_over\": %" PRIu64
		", \"drained\": %" PRIu64 " }", m->seen.active_tsc, m->seen.stop_tsc, m->seen.completed_tsc,
		m->seen.resume_tsc, m->seen.taken_tsc, m->seen.out_tsc);
	fprintf(f, ",\n        \"qemu_downtime_ms\": %" PRIu64 ",\n        \"qemu_total_ms\": %" PRIu64,
		m->seen.downtime_ms, m->seen.total_ms);
	fprintf(f, ",\n        \"cpus\": [");
	for (i = 0; i < nr_cpus && i < COLLECT_MAX_CPUS; i++) {
		const struct spool_mig_cpu *c = &m->cpus[i];

		if (!c->bytes && !c->pages && !c->marked)
			continue;
		fprintf(f, "%s\n          { \"cpu\": %u, \"stream_bytes\": %" PRIu64 ", \"pages\": %" PRIu64
			", \"last_page_ts\": %" PRIu64, first ? "" : ",", i, c->bytes, c->pages, c->last_ts);
		if (in)
			fprintf(f, ", \"resume_mark\": %s, \"mark_position\": %" PRIu64
				", \"bytes_before_mark\": %" PRIu64, c->marked ? "true" : "false",
				c->mark_pos, c->mark_pre);
		fprintf(f, " }");
		first = false;
	}
	fprintf(f, "\n        ]\n      },\n");
}

/* A KVM epoch: how its moment is known, and why its bound is what it is. */
static void json_epoch_kvm(FILE *f, const struct vt_tsync_epoch *ep)
{
	if (ep->source == VT_TSYNC_SRC_KVM_EVENT)
		fprintf(f, ", \"moment\": \"exact\"");
	else if (ep->source == VT_TSYNC_SRC_KVM && ep->since)
		fprintf(f, ", \"moment\": \"between-reads\", \"changed_after_tsc\": %" PRIu64, ep->since);
	else if (ep->source == VT_TSYNC_SRC_KVM)
		fprintf(f, ", \"moment\": \"read\"");
	if (ep->flags & VT_TSYNC_EPOCH_UNSEEN)
		fprintf(f, ", \"why\": \"the offset changed to the next epoch's at a moment not "
			"seen (between two debugfs reads, or an event lost): events in between may be off "
			"by the bound\"");
}

/* How KVM's offsets were followed (record/sync.c), null when they were not. */
static void json_kvm(FILE *f, const struct spool_kvm *k)
{
	fprintf(f, "        \"kvm\": ");
	if (!k->changes_from[0]) {
		fprintf(f, "null,\n");
		return;
	}
	fprintf(f, "{ \"changes_from\": ");
	json_str(f, !strcmp(k->changes_from, "events") ? "kvm:kvm_write_tsc_offset" : "debugfs re-reads");
	fprintf(f, ", \"why\": ");
	json_str(f, k->why);
	fprintf(f, ", \"instance\": ");
	if (k->instance[0])
		json_str(f, k->instance);
	else
		fprintf(f, "null");
	fprintf(f, ", \"changes\": %" PRIu64 ", \"events_lost\": %" PRIu64 ", \"changes_not_seen\": %"
		PRIu64 ", \"reordered\": %" PRIu64 ", \"merged\": %" PRIu64 ", \"debugfs_disagreed\": %"
		PRIu64 ", \"note\": ", k->changes, k->lost, k->breaks, k->reordered, k->merged,
		k->mismatch);
	if (k->note[0])
		json_str(f, k->note);
	else
		fprintf(f, "null");
	fprintf(f, ",\n          \"host_tsc\": { \"constant_tsc\": %s, \"nonstop_tsc\": %s, \"clocksource\": ",
		strstr(k->host_flags, "constant_tsc") ? "true" : "false",
		strstr(k->host_flags, "nonstop_tsc") ? "true" : "false");
	json_str(f, k->clocksource);
	fprintf(f, " } },\n");
}

/* --sync-check's results, null without it. */
static void json_check(FILE *f, const struct spool_check *c)
{
	uint32_t i;

	fprintf(f, "        \"check\": ");
	if (!c->on) {
		fprintf(f, "null,\n");
		return;
	}
	fprintf(f, "{ \"bursts\": %" PRIu64 ", \"replies\": %" PRIu64 ", \"outside\": %" PRIu64
		", \"straddling\": %" PRIu64 ", \"no_epoch\": %" PRIu64 ", \"intervals_not_listed\": %"
		PRIu64 ",\n          \"intervals\": [", c->bursts, c->replies, c->outside,
		c->straddling, c->no_epoch, c->unlisted);
	for (i = 0; i < c->nr_ivs; i++) {
		const struct spool_check_iv *v = &c->ivs[i];

		fprintf(f, "%s\n            { \"cpu\": %u, \"burst\": %u, \"replies\": %u, \"host_tsc\": %"
			PRIu64 ", \"epoch_host_tsc_from\": %" PRIu64 ", \"offset\": %" PRId64
			", \"lo\": %" PRId64 ", \"hi\": %" PRId64 ", \"inside\": %s }", i ? "," : "",
			v->cpu, v->burst, v->n, v->t, v->epoch_from, v->offset, v->lo, v->hi,
			v->inside ? "true" : "false");
	}
	fprintf(f, "\n          ] },\n");
}

static void json_trace(FILE *f, const struct finish *r, const struct trace_sum *t)
{
	uint64_t overrun = 0, lost_pages = 0, dropped = 0;
	double bound = 0;
	unsigned int i, j;
	bool first;

	fprintf(f, "    {\n      \"name\": ");
	json_str(f, t->rec.name);
	fprintf(f, ",\n      \"file\": ");
	if (t->written)
		json_str(f, t->file);
	else
		fprintf(f, "null");
	if (!t->rec.host) {
		/* record --last-boot's file (record/lastboot-file.c): another boot, another clock. */
		char lb[4400];
		struct stat st;

		snprintf(lb, sizeof(lb), "%s/guest-%s.lastboot.dat", r->out, t->rec.name);
		if (lstat(lb, &st) == 0 && S_ISREG(st.st_mode)) {
			fprintf(f, ",\n      \"last_boot_file\": ");
			json_str(f, strrchr(lb, '/') + 1);
			fprintf(f, ",\n      \"last_boot_note\": \"the previous boot's trace: that "
				"boot's own clock, not synchronised with the host\"");
		}
	}
	fprintf(f, ",\n      \"trace_id\": \"0x%016" PRIx64 "\",\n      \"clock\": ", t->rec.trace_id);
	json_str(f, t->rec.agent.clock);
	fprintf(f, ",\n      \"cpus\": [\n");
	for (i = 0; i < t->nr_sums; i++) {
		const struct cpu_sum *c = &t->cpus[i];
		const struct spool_cpu *sc = &t->rec.cpus[c->cpu < COLLECT_MAX_CPUS ? c->cpu : 0];
		const char *stats = sc->stats ? sc->stats : "";
		uint64_t ov = stat_field(stats, "overrun");

		overrun += ov;
		lost_pages += c->lost_in_pages;
		dropped += sc->dropped;
		fprintf(f, "        { \"cpu\": %u, \"bytes\": %" PRIu64 ", \"pages\": %" PRIu64
			", \"events\": %" PRIu64 ", \"bad_pages\": %" PRIu64
			", \"bad_pages_kept\": %" PRIu64 ", \"pages_after_loss\": %" PRIu64 ", \"lost_events_in_pages\": %" PRIu64
			", \"fragment_bytes\": %" PRIu64 ", \"dropped_pages_max_size\": %" PRIu64,
			c->cpu, c->bytes, c->pages, c->events, c->bad_pages, c->bad_pages_kept,
			c->missed_pages,
			c->lost_in_pages, sc->frag_bytes, sc->dropped);
		if (!t->rec.host)
			fprintf(f, ", \"agent_bytes\": %" PRIu64 ", \"agent_pages\": %" PRIu64,
				sc->agent_bytes, sc->agent_pages);
		fprintf(f, ", \"stats\": { \"entries\": %" PRIu64 ", \"overrun\": %" PRIu64
			", \"commit_overrun\": %" PRIu64 ", \"dropped_events\": %" PRIu64
			", \"read_events\": %" PRIu64 " } }%s\n",
			stat_field(stats, "entries"), ov, stat_field(stats, "commit overrun"),
			stat_field(stats, "dropped events"), stat_field(stats, "read events"),
			i + 1 < t->nr_sums ? "," : "");
	}
	fprintf(f, "      ],\n      \"lost_events\": { \"in_pages\": %" PRIu64 ", \"overrun\": %"
		PRIu64 " },\n", lost_pages, overrun);
	if (!t->rec.host) {
		fprintf(f, "      \"agent\": ");
		json_str(f, t->rec.agent.software);
		fprintf(f, ",\n      \"vcpu_threads\": [");
		for (i = 0; i < t->rec.nr_tids; i++)
			fprintf(f, "%s%u", i ? ", " : "", t->rec.tids[i]);
		fprintf(f, "],\n      \"sync\": {\n        \"method\": ");
		json_str(f, t->rec.sync_head.method);
		fprintf(f, ",\n        \"why\": ");
		json_str(f, t->rec.sync_head.why);
		fprintf(f, ",\n        \"final_sync_cut\": ");
		if (t->rec.sync_head.final_cut[0])
			json_str(f, t->rec.sync_head.final_cut);
		else
			fprintf(f, "null");
		fprintf(f, ",\n        \"epochs\": [");
		for (i = 0, first = true; i < t->nr_cpus; i++) {
			for (j = 0; j < t->rec.sync[i].nr; j++) {
				const struct vt_tsync_epoch *ep = &t->rec.sync[i].epochs[j];

				if ((ep->host_from <= t->rec.sync_head.host_end || !j) &&
				    ticks_ns(r, ep->error) > bound)
					bound = ticks_ns(r, ep->error);
				fprintf(f, "%s\n          { \"cpu\": %u, \"host_tsc_from\": %" PRIu64
					", \"offset\": %" PRId64 ", \"ratio\": %" PRIu64
					", \"frac_bits\": %u, \"source\": \"%s\", \"drift\": %s"
					", \"bound_ns\": %.1f, \"min_rtt_ns\": %.1f",
					first ? "" : ",", i, ep->host_from,
					ep->map.offset, ep->map.ratio, ep->map.frac_bits,
					vt_tsync_source_name(ep->source),
					ep->flags & VT_TSYNC_EPOCH_DRIFT ? "true" : "false",
					ticks_ns(r, ep->error), ticks_ns(r, ep->min_rtt));
				json_epoch_kvm(f, ep);
				if (ep->host_from > t->rec.sync_head.host_end && j)
					fprintf(f, ", \"applied\": false");
				fprintf(f, " }");
				first = false;
			}
		}
		fprintf(f, "\n        ],\n        \"probes\": [");
		for (i = 0, first = true; i < t->nr_cpus; i++) {
			if (!t->rec.samples[i])
				continue;
			fprintf(f, "%s\n          { \"cpu\": %u, \"samples\": %u, \"min_rtt_ns\": %.1f }",
				first ? "" : ",", i, t->rec.samples[i], ticks_ns(r, t->rec.min_rtt[i]));
			first = false;
		}
		fprintf(f, "\n        ],\n");
		json_kvm(f, &t->rec.kvm);
		json_check(f, &t->rec.check);
		fprintf(f, "        \"reset_host_tsc\": ");
		if (t->rec.sync_head.reset_tsc)
			fprintf(f, "%" PRIu64 ",\n", t->rec.sync_head.reset_tsc);
		else
			fprintf(f, "null,\n");
		/* No mapping has no bound; 0 comes only from an exact method. */
		if (!strcmp(t->rec.sync_head.method, "none"))
			fprintf(f, "        \"bound_ns\": null\n      },\n");
		else
			fprintf(f, "        \"bound_ns\": %.1f\n      },\n", bound);
		if (t->rec.mig.have)
			json_migration(f, r, &t->rec.mig, t->rec.agent.nr_cpus);
		fprintf(f, "      \"max_size_reached\": %s,\n", t->rec.max_reached ? "true" : "false");
		fprintf(f, "      \"kallsyms_from_cache\": %s,\n      \"kallsyms_cache_vm\": ",
			t->rec.kcache.hit ? "true" : "false");
		if (t->rec.kcache.vm[0])
			json_str(f, t->rec.kcache.vm);
		else
			fprintf(f, "null");
		fprintf(f, ",\n      \"kallsyms_cache_note\": ");
		if (t->rec.kcache.why[0])
			json_str(f, t->rec.kcache.why);
		else
			fprintf(f, "null");
		fprintf(f, ",\n");
		fprintf(f, "      \"agent_warnings\": %" PRIu64 ",\n      \"agent_first_warning\": ",
			t->rec.figures.msgs[GMSG_AGENT_NOTICE]);
		if (t->rec.figures.agent_notice[0])
			json_str(f, t->rec.figures.agent_notice);
		else
			fprintf(f, "null");
		fprintf(f, ",\n");
		fprintf(f, "      \"budget\": { \"max\": %" PRIu64 ", \"used\": %" PRIu64
			", \"pages_bytes\": %" PRIu64 ", \"bad_pages_bytes\": %" PRIu64
			", \"fragment_bytes\": %" PRIu64 ", \"metadata_bytes\": %" PRIu64 " },\n",
			t->rec.figures.budget.max, t->rec.figures.budget.used, t->rec.figures.budget.pages,
			t->rec.figures.budget.bad, t->rec.figures.budget.frag, t->rec.figures.budget.meta);
	}
	(void)dropped;
	fprintf(f, "      \"text_replaced\": %" PRIu64 ",\n      \"formats_refused\": %u,\n",
		t->text_replaced, t->formats_refused);
	fprintf(f, "      \"problems\": ");
	json_str(f, t->problems);
	fprintf(f, "\n    }");
}

/* `join`: the two recordings, the switchover and each CPU's stream across it. */
static void json_join(FILE *f, const struct finish *r, const struct join_sum *js)
{
	uint64_t stop = tsc_ns(r, js->stop_tsc), resume = tsc_ns(r, js->resume_tsc);
	unsigned int i;

	fprintf(f, ",\n  \"join\": {\n    \"source\": ");
	json_str(f, js->src);
	fprintf(f, ",\n    \"destination\": ");
	json_str(f, js->dst);
	fprintf(f, ",\n    \"hosts\": \"%s\",\n    \"host_sync_bound_ns\": %" PRIu64
		",\n    \"host_delta_ticks\": %" PRId64, js->two_hosts ? "two" : "one",
		js->sync_bound_ns, js->host_delta);
	fprintf(f, ",\n    \"blackout\": { \"from_ns\": %" PRIu64 ", \"to_ns\": %" PRIu64
		", \"ms\": %.3f, \"qemu_downtime_ms\": %" PRIu64 " }", stop, resume,
		resume > stop ? (resume - stop) / 1e6 : 0.0, js->qemu_downtime_ms);
	fprintf(f, ",\n    \"switch_guest_tsc\": %" PRIu64 ",\n    \"switch_host_ns\": %" PRIu64,
		js->switch_guest_tsc, tsc_ns(r, js->switch_host_tsc));
	fprintf(f, ",\n    \"cpus\": [");
	for (i = 0; i < js->nr; i++) {
		const struct join_cpu *c = &js->cpus[i];

		fprintf(f, "%s\n      { \"cpu\": %u, \"resume_mark\": %s, \"source_stream_bytes\": %"
			PRIu64 ", \"destination_from_byte\": %" PRIu64 ", \"duplicate_bytes_dropped\": %"
			PRIu64 ", \"lost_bytes\": %" PRIu64 ", \"source_pages\": %" PRIu64
			", \"source_events\": %" PRIu64 ", \"destination_pages\": %" PRIu64
			", \"destination_events\": %" PRIu64 " }", i ? "," : "", c->cpu,
			c->marked ? "true" : "false", c->src_to, c->dst_from, c->skip, c->gap,
			c->src_pages, c->src_events, c->dst_pages, c->dst_events);
	}
	fprintf(f, "\n    ]\n  }");
}

int manifest_write(struct finish *r, bool recovered)
{
	char tmp[64], date[64];
	time_t now = time(NULL);
	unsigned int i;
	bool first = true;
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
	fprintf(f, "{\n  \"tool\": \"virtio-trace-collect\",\n  \"version\": \"%s\",\n"
		"  \"schema_version\": %d,\n  \"created\": \"%s\",\n  \"recovered\": %s,\n"
		"  \"command_line\": ", PACKAGE_VERSION, MANIFEST_SCHEMA_VERSION, date,
		recovered ? "true" : "false");
	json_str(f, r->opt.cmdline);
	fprintf(f, ",\n  \"file_version\": %u,\n  \"compression\": \"%s\",\n"
		"  \"host_tsc\": { \"khz\": %" PRIu64 ", \"method\": ", r->opt.version,
		r->opt.compress && r->opt.version >= 7 ? "zstd" : "none", r->opt.tsc_khz);
	json_str(f, r->opt.tsc_method);
	fprintf(f, ", \"tsc2nsec_mult\": %u, \"tsc2nsec_shift\": %u },\n  \"host\": ",
		r->opt.tsc_mult, r->opt.tsc_shift);
	for (i = 0; i < r->nr_traces; i++)
		if (r->traces[i].rec.host)
			break;
	if (i < r->nr_traces) {
		fprintf(f, "\n");
		json_trace(f, r, &r->traces[i]);
		fprintf(f, ",\n");
	} else {
		fprintf(f, "null,\n");
	}
	fprintf(f, "  \"guests\": [\n");
	for (i = 0; i < r->nr_traces; i++) {
		if (r->traces[i].rec.host)
			continue;
		if (!first)
			fprintf(f, ",\n");
		json_trace(f, r, &r->traces[i]);
		first = false;
	}
	fprintf(f, "\n  ]");
	if (r->join)
		json_join(f, r, r->join);
	fprintf(f, "\n}\n");
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
	fprintf(f, " %3u %-5s %8.2f MB %9" PRIu64 " events  lost %" PRIu64, nr, host ? "CPUs" : "vCPUs",
		bytes / 1e6, events, in_pages);
	if (overrun)
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
