// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `report DIR`: a summary of a recorded run. Event counts come from the
 * trace.dat files themselves, read with libtracecmd (what trace-cmd and
 * KernelShark will show); loss, bad pages, problems and the clock mapping come
 * from manifest.json, which is read as untrusted input (json.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <trace-cmd.h>

#include "analyze.h"
#include "collect.h"
#include "opts.h"
#include "json.h"
#include "perfetto.h"
#include "report.h"
#include "store/spool.h"
#include "store/sysinfo.h"
#include "text.h"
#include "vt_grow.h"

#define MANIFEST_MAX	(64u << 20)
/* What --json prints, as doc/report.schema.json describes it (a key renamed is a new version). */
#define REPORT_SCHEMA_VERSION	1

struct ev_count {
	int id;
	uint64_t n;
	char name[160];
};

struct ev_counter {
	struct ev_count *v;
	size_t nr, cap, last;
	uint64_t total;
	int err;
	struct iommu_an *iommu;		/* the analyses fed in the same pass, when asked for */
	struct mmio_an *mmio;
	struct exits_an *exits;		/* the host file's */
	const char *dir;
	const struct json_value *guests;
	struct tracecmd_input *gh[64];	/* guest files open for their kallsyms */
	unsigned int nr_gh;
};

/* What the command line asked for. */
struct report_opts {
	bool iommu, exits, json, vcpus, latency;
	uint64_t threshold_ns;		/* --latency=THRESHOLD, for --interval too */
	const char *interval;		/* --interval SYS:START,SYS:END[,FIELD] */
	bool seen_iommu, seen_mmio, seen_exits;	/* what the analyses asked for found */
	const char *mmio_log, *html, *guest;
	const char *perfetto;		/* --perfetto FILE */
	const char *perf_kvm;		/* --perf-kvm DIR */
	FILE *mmio_file;		/* --mmiotrace-log, given to the first guest analysed */
	const struct json_value *guests;	/* the manifest's, for the host's VM exits */
	uint64_t tsc_khz;
	mode_t mode;			/* the recording's files' (its manifest.json's) */
	struct jw jw;
};

/**
 * an_open_out() - open a file report writes (--html, --mmiotrace-log, --perfetto)
 * @path: the file: created or truncated, never through a link
 * @mode: the recording's files' mode (its manifest.json's)
 *
 * What report writes holds what the recording does: the file gets the
 * recording's mode whatever the umask, and under sudo the user who asked
 * (store/spool.c).
 *
 * Return: the stream, or NULL with errno set.
 */
FILE *an_open_out(const char *path, mode_t mode)
{
	struct spool_perm p;
	FILE *f;
	int fd, ret;

	spool_perm_default(&p);
	p.file = mode;
	spool_perm_set(&p);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	ret = spool_perm_apply(fd, false);
	f = ret == 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		close(fd);
		errno = ret < 0 ? -ret : errno;
	}
	return f;
}

/* --latency=THRESHOLD: "250us", "1ms", "2s", or nanoseconds. */
static int parse_ns(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t mult; } units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	unsigned long long v;
	unsigned int i;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			if (v > UINT64_MAX / units[i].mult)
				return -EINVAL;
			*ns = v * units[i].mult;
			return 0;
		}
	return -EINVAL;
}

static bool latency_ok(const char *arg)
{
	uint64_t ns;

	return parse_ns(arg, &ns) == 0;
}

enum { OPT_IOMMU = 256, OPT_MMIO_LOG, OPT_EXITS, OPT_VCPUS, OPT_LATENCY, OPT_INTERVAL, OPT_HTML,
       OPT_PERFETTO, OPT_PERF_KVM, OPT_GUEST, OPT_JSON };

/* report's command line: the one declaration its parsing and --help read (opts.h). */
static const struct opt_def report_opts_def[] = {
	{ "iommu", OPT_IOMMU, KIND_FLAG, NULL,
"each guest's IOMMU group topology (its sysfs at the end of the\n"
"recording, and the group events), DMA map/unmap counts, bytes,\n"
"sizes (4K/2M/1G/other), unmap:map ratio and still-mapped bytes\n"
"per domain and device (\"unattributed\" when more than one\n"
"domain could have mapped), flags, every io_page_fault" },
	{ "mmiotrace-log", OPT_MMIO_LOG, KIND_PATH, "FILE",
"write the first (or --guest's) guest's mmiotrace entries to FILE\n"
"as the classic mmiotrace text log (VERSION 20070824; PCIDEV lines\n"
"from the guest's /proc/bus/pci/devices; MAP, UNMAP, R, W, UNKNOWN\n"
"and MARK lines with host-aligned sec.usec timestamps; a line\n"
"\"MARK sec.usec Lost N events.\" where pages report lost events),\n"
"and print the accesses per guest function (the pc resolved with\n"
"the guest's kallsyms; the guest records a pc only when booted with\n"
"mmiotrace.trace_pc=1) and per register offset of each map",
	  .what = "the mmiotrace log to write, a path, not empty" },
	{ "exits", OPT_EXITS, KIND_FLAG, NULL,
"VM exits from the host's kvm:kvm_exit and kvm:kvm_entry (record\n"
"--kvm-exits): per exit reason the count, share and time to the\n"
"next entry (kvm_stat's shape) with its p50 and p99, for all\n"
"guests, per guest and per vCPU (host threads from the GUEST\n"
"option), and per guest function (guest_rip resolved with the\n"
"guest's kallsyms)" },
	{ "vcpus", OPT_VCPUS, KIND_FLAG, NULL,
"each vCPU's wall time over the recording, in host nanoseconds,\n"
"split into states that add up to it exactly: in the guest\n"
"(kvm_entry to kvm_exit), in exits handled by the kernel and in\n"
"exits to QEMU (kvm_userspace_exit) per reason, halted (asleep\n"
"after a hlt exit until woken), preempted (runnable while other\n"
"host tasks, named, ran on its CPU) and unknown (before the\n"
"thread's first event, after lost events); the same per guest\n"
"task (the guest's sched_switch, in host time). Without KVM's\n"
"events (TCG) the states are running, halted and preempted.\n"
"Needs the host events of `record --kvm-exits`" },
	{ "latency", OPT_LATENCY, KIND_STRING, "THRESHOLD",
"each guest wakeup (guest sched_waking to the sched_switch that\n"
"runs the task, in host time) of at least THRESHOLD (ns, or with\n"
"us, ms, s; default 0), split by what its vCPU did meanwhile:\n"
"the guest tasks it ran, exits by reason, halted, preempted by\n"
"whom; totals per cause per guest, then the 10 longest", .optional = true, .ok = latency_ok,
	  .what = "a duration, N with ns, us, ms or s (a bare number is nanoseconds)" },
	{ "interval", OPT_INTERVAL, KIND_STRING, "SYS:START,SYS:END[,FIELD]",
"the same for the guest intervals from a START event to the END\n"
"event of the same FIELD value (without FIELD: of the same task),\n"
"split by what the vCPU of START did, e.g.\n"
"block:block_rq_issue,block:block_rq_complete,sector", .ok = vcpus_interval_ok,
	  .what = "SYS:START,SYS:END[,FIELD], two different events (e.g. "
		  "block:block_rq_issue,block:block_rq_complete,sector)" },
	{ "html", OPT_HTML, KIND_PATH, "FILE",
"write FILE, one self-contained HTML page (no network) with the\n"
"host's CPUs and each guest's vCPUs as lanes: sched_switch task\n"
"slices coloured per task, the other events as ticks, trace\n"
"markers, lost-event stretches shaded, each guest's clock-sync\n"
"epochs and error bound as a band; zoom (wheel, +/-) and pan (drag);\n"
"under each vCPU, a strip of its --vcpus states",
	  .what = "the HTML page to write, a path, not empty" },
	{ "perfetto", OPT_PERFETTO, KIND_PATH, "FILE",
"write FILE, the recording as one Perfetto trace (protobuf): the\n"
"host and each guest a machine of its own, named; guest events\n"
"at host time as trace-cmd report -i host.dat -i guest.dat shows\n"
"them; typed sched, irq, softirq, power and print events,\n"
"generic ftrace events for the rest; losses marked per CPU; a\n"
"track per vCPU naming the host thread that runs it, with its\n"
"--vcpus states as slices", .what = "the Perfetto trace to write, a path, not empty" },
	{ "perf-kvm", OPT_PERF_KVM, KIND_PATH, "OUTDIR",
"write OUTDIR/NAME.kallsyms and OUTDIR/NAME.modules per guest, the\n"
"files perf kvm --guest --guestkallsyms=FILE --guestmodules=FILE\n"
"reads: the guest file's kallsyms, and /proc/modules lines derived\n"
"from its [module] symbols (OUTDIR made if missing; files 0600)",
	  .what = "the directory to write to, a path, not empty" },
	{ "guest", OPT_GUEST, KIND_NAME, "NAME",
"only this guest (the host's counts are still shown); a NAME\n"
"the run does not have is a usage error" },
	{ "json", OPT_JSON, KIND_FLAG, NULL,
"everything the report and the options above show, as one JSON\n"
"document on standard output" },
	{ NULL },
};

static const struct opt_cmd report_cmd = {
	.name = "report",
	.usage = "[OPTION]... DIR",
	.about =
"Summarise a run recorded by `virtio-trace-collect record -o DIR`: for the\n"
"host and each guest, the events per type (counted in the trace.dat files\n"
"with libtracecmd), lost events, bad pages and problems (from manifest.json),\n"
"and for each guest the time synchronisation method, its bound, the smallest\n"
"probe round trip and the clock-mapping epochs of every vCPU. When a guest\n"
"recorded iommu events or mmiotrace entries, a short IOMMU or mmiotrace\n"
"section follows its counts.\n",
	.tail =
"Exit status: 0 success; 1 DIR has no readable, well-formed manifest.json, a\n"
"trace file it names cannot be read or a file asked for cannot be written (a\n"
"guest without kallsyms for --perf-kvm too); 2 usage error (an unknown --guest\n"
"too); 5 --exits, --iommu or --mmiotrace-log found none of its events (the\n"
"message names the record option that adds them).\n",
	.defs = report_opts_def,
	.col = 15,
	.in_order = true,
	.narrow = true,
};

/* Text from the manifest goes to a terminal: the collector's one rule (text.h). */
static void put_safe(const char *s)
{
	collect_fput_safe(stdout, s);
}

static uint64_t u64_field(const struct json_value *obj, const char *key, bool *bad)
{
	const struct json_value *v = json_get(obj, key);
	uint64_t x = 0;

	if (v && json_u64(v, &x) < 0)
		*bad = true;
	return x;
}

static double num_field(const struct json_value *obj, const char *key, bool *bad)
{
	const struct json_value *v = json_get(obj, key);
	double d = 0;

	if (v && json_double(v, &d) < 0)
		*bad = true;
	return d;
}

static int count_record(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *arg)
{
	struct ev_counter *c = arg;
	struct tep_handle *tep = tracecmd_get_tep(handle);
	int id = tep_data_type(tep, rec);
	size_t i;

	if ((c->iommu && iommu_an_record(c->iommu, tep, rec) < 0) ||
	    (c->mmio && mmio_an_record(c->mmio, tep, rec) < 0) ||
	    (c->exits && exits_an_record(c->exits, tep, rec) < 0)) {
		c->err = -ENOMEM;
		return -1;
	}
	c->total++;
	if (c->nr && c->v[c->last].id == id) {
		c->v[c->last].n++;
		return 0;
	}
	for (i = 0; i < c->nr; i++)
		if (c->v[i].id == id)
			break;
	if (i == c->nr) {
		struct tep_event *ev = tep_find_event(tep, id);

		if (vt_grow((void **)&c->v, &c->cap, c->nr + 1, sizeof(*c->v)) < 0) {
			c->err = -ENOMEM;
			return -1;
		}
		c->v[i].id = id;
		c->v[i].n = 0;
		if (ev) {
			/* A trace.dat's formats name the events: a file from anywhere may say anything. */
			snprintf(c->v[i].name, sizeof(c->v[i].name), "%s:%s", ev->system, ev->name);
			an_sanitize(c->v[i].name);
		} else
			snprintf(c->v[i].name, sizeof(c->v[i].name), "unknown:id%d", id);
		c->nr++;
	}
	c->v[i].n++;
	c->last = i;
	return 0;
}

static int by_count(const void *a, const void *b)
{
	const struct ev_count *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* A file name from the manifest: a plain name inside DIR, nothing else. */
static bool file_name_ok(const char *s)
{
	return s && s[0] && s[0] != '.' && !strchr(s, '/') && strlen(s) < 256;
}

/* The analyses of one guest trace, fed in the counting pass. */
static int analyses_new(const char *dir, const char *file, struct ev_counter *c,
			struct report_opts *ro)
{
	struct vt_blob b;
	FILE *log = ro->mmio_file;
	int ret;

	c->iommu = iommu_an_new();
	if (!c->iommu)
		return -ENOMEM;
	ret = sysinfo_load(dir, file, "iommu_groups", &b);
	if (ret == 0 && b.data)
		ret = iommu_an_snapshot(c->iommu, b.data, b.len);
	free(b.data);
	if (ret < 0 && ret != -EBADMSG)
		return ret;
	ret = sysinfo_load(dir, file, "pci_devices", &b);
	c->mmio = mmio_an_new(log, ret == 0 ? b.data : NULL, ret == 0 ? b.len : 0);
	free(b.data);
	if (!c->mmio)
		return -ENOMEM;
	ro->mmio_file = NULL;		/* one guest's log */
	return 0;
}

/* The host file: VM exits, with each guest's vCPU threads and kallsyms. */
static int exits_new(const char *dir, const struct json_value *guests, struct ev_counter *c)
{
	c->exits = exits_an_new();
	if (!c->exits)
		return -ENOMEM;
	c->dir = dir;
	c->guests = guests;
	return 0;
}

static void exits_attach(struct ev_counter *c, struct tracecmd_input *host)
{
	const struct json_value *g;

	for (g = json_is(c->guests, JSON_ARRAY) ? c->guests->child : NULL; g; g = g->next) {
		const char *file = json_string(json_get(g, "file"));
		const char *id = json_string(json_get(g, "trace_id"));
		const char *name = NULL;
		const int *tids = NULL;
		struct tracecmd_input *gh = NULL;
		unsigned long long tid;
		char path[4400], *end;
		int nr = 0;

		if (!id || !file_name_ok(file) || c->nr_gh >= sizeof(c->gh) / sizeof(c->gh[0]))
			continue;
		errno = 0;
		tid = strtoull(id, &end, 16);
		if (errno || *end || tracecmd_get_guest_cpumap(host, tid, &name, &nr, &tids) < 0 ||
		    nr <= 0 || nr > 4096 || !tids)
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->dir, file);
		gh = tracecmd_open_head(path, TRACECMD_FL_LOAD_NO_PLUGINS);
		if (gh)
			c->gh[c->nr_gh++] = gh;
		exits_an_add_guest(c->exits, json_string(json_get(g, "name")) ?: "?", nr, tids,
				   gh ? tracecmd_get_tep(gh) : NULL);
	}
}

static void analyses_finish(struct ev_counter *c)
{
	if (c->iommu)
		iommu_an_finish(c->iommu);
	if (c->mmio)
		mmio_an_finish(c->mmio);
	if (c->exits)
		exits_an_finish(c->exits);
	while (c->nr_gh)
		tracecmd_close(c->gh[--c->nr_gh]);
}

static void exits_an_finish_free(struct ev_counter *c)
{
	while (c->nr_gh)
		tracecmd_close(c->gh[--c->nr_gh]);
	exits_an_free(c->exits);
}

static void analyses_free(struct ev_counter *c)
{
	iommu_an_free(c->iommu);
	mmio_an_free(c->mmio);
	exits_an_finish_free(c);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* report --vcpus: the host file and the guest files, merged in host time, walked once. */
struct vcpus_walk {
	struct vcpus_an *an;
	struct tracecmd_input *h[65];
	int guest[65];			/* per handle: -1 the host, else the guest's index */
	int nr;
};

static int vcpus_record(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *arg)
{
	struct vcpus_walk *w = arg;
	int i;

	for (i = 0; i < w->nr && w->h[i] != handle; i++)
		;
	if (i == w->nr)
		return 0;
	/* @cpu counts the CPUs of the handles before this one too: the record's own is its file's. */
	if (w->guest[i] < 0)
		vcpus_an_host(w->an, tracecmd_get_tep(handle), rec, rec->cpu);
	else
		vcpus_an_guest(w->an, w->guest[i], tracecmd_get_tep(handle), rec, rec->cpu);
	return 0;
}

/* The guest's steal time per CPU, from its agent's stats text (manifest "cpus"). */
static void vcpus_steal(struct vcpus_an *an, int gi, const struct json_value *g)
{
	const struct json_value *c = json_get(g, "cpus");

	for (c = json_is(c, JSON_ARRAY) ? c->child : NULL; c; c = c->next) {
		const struct json_value *st = json_get(c, "stats");
		bool bad = false;
		uint64_t cpu = u64_field(c, "cpu", &bad), ns = u64_field(st, "steal_ns", &bad);
		uint64_t hz = u64_field(st, "user_hz", &bad);

		if (!bad && json_get(st, "steal_ns") && hz && cpu < 4096)
			vcpus_an_guest_steal(an, gi, (int)cpu, ns, 1000000000ull / hz);
	}
}

static struct vcpus_an *vcpus_walk(const char *dir, const struct json_value *root,
				   const struct report_opts *ro, bool strips)
{
	const struct json_value *host = json_get(root, "host"), *g;
	struct vcpus_walk w = { 0 };
	char path[4400];
	int ret = -EBADMSG;

	w.an = vcpus_an_new();
	if (!w.an)
		return NULL;
	if (strips)
		vcpus_an_strips(w.an);
	if ((ro->latency && vcpus_an_latency(w.an, ro->threshold_ns) < 0) ||
	    (ro->interval && vcpus_an_interval(w.an, ro->interval, ro->threshold_ns) < 0))
		goto err_free;
	if (!file_name_ok(json_string(json_get(host, "file")))) {
		fprintf(stderr, "virtio-trace-collect report: --vcpus: %s has no host trace\n", dir);
		goto err_free;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, json_string(json_get(host, "file")));
	w.h[0] = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!w.h[0]) {
		fprintf(stderr, "virtio-trace-collect report: %s: libtracecmd cannot read it\n", path);
		goto err_free;
	}
	w.guest[0] = -1;
	w.nr = 1;
	g = json_get(root, "guests");
	for (g = json_is(g, JSON_ARRAY) ? g->child : NULL; g && w.nr < 65; g = g->next) {
		const char *file = json_string(json_get(g, "file"));
		const char *id = json_string(json_get(g, "trace_id"));
		const char *name = NULL;
		const int *tids = NULL;
		unsigned long long tid;
		char *end;
		int nr = 0, gi;

		if (!id)
			continue;
		errno = 0;
		tid = strtoull(id, &end, 16);
		if (errno || *end || tracecmd_get_guest_cpumap(w.h[0], tid, &name, &nr, &tids) < 0 ||
		    nr <= 0 || nr > 4096 || !tids)
			continue;
		gi = vcpus_an_add_guest(w.an, json_string(json_get(g, "name")) ?: "?", nr, tids);
		if (gi == -ENOMEM)
			goto err_close;
		if (gi >= 0)
			vcpus_steal(w.an, gi, g);
		if (gi < 0 || !file_name_ok(file))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		w.h[w.nr] = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
		if (!w.h[w.nr])
			continue;	/* the host's side is still told */
		w.guest[w.nr++] = gi;
	}
	/* For a drawing only: no vCPU thread is mapped, so no strip; spare the walk. */
	if (strips && !vcpus_an_nr_vcpus(w.an)) {
		ret = 0;
		goto err_close;
	}
	if (tracecmd_iterate_events_multi(w.h, w.nr, vcpus_record, &w) < 0) {
		fprintf(stderr, "virtio-trace-collect report: --vcpus: reading the traces failed\n");
		ret = -EIO;
		goto err_close;
	}
	vcpus_an_finish(w.an);
	while (w.nr)
		tracecmd_close(w.h[--w.nr]);
	return w.an;
err_close:
	while (w.nr)
		tracecmd_close(w.h[--w.nr]);
err_free:
	vcpus_an_free(w.an);
	errno = -ret;
	return NULL;
}

/* Events per type in one trace.dat file, as libtracecmd reads them. */
static int count_events(const char *path, struct ev_counter *c)
{
	struct tracecmd_input *h;

	h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h)
		return -EBADMSG;
	if (c->exits)
		exits_attach(c, h);
	if (tracecmd_iterate_events(h, NULL, 0, count_record, c) < 0 && !c->err)
		c->err = -EIO;
	analyses_finish(c);
	tracecmd_close(h);
	if (c->err)
		return c->err;
	qsort(c->v, c->nr, sizeof(*c->v), by_count);
	return 0;
}


/*
 * One line per epoch; past EPOCHS_LISTED per vCPU (a host whose TSC KVM
 * distrusts writes offsets tens of times a second) the first and last few,
 * and how many are between: the manifest lists them all.
 */
#define EPOCHS_LISTED	8

static void print_epoch(const struct json_value *ep, bool *bad)
{
	bool drift = false;
	int64_t off = 0;

	if (json_i64(json_get(ep, "offset"), &off) < 0 || json_bool(json_get(ep, "drift"), &drift) < 0)
		*bad = true;
	printf("    cpu%" PRIu64 ": from host TSC %" PRIu64 " offset %" PRId64 " ratio %" PRIu64 "/2^%"
	       PRIu64 " source ", u64_field(ep, "cpu", bad), u64_field(ep, "host_tsc_from", bad), off,
	       u64_field(ep, "ratio", bad), u64_field(ep, "frac_bits", bad));
	put_safe(json_string(json_get(ep, "source")));
	printf(" drift %s bound %.1f ns\n", drift ? "yes" : "no", num_field(ep, "bound_ns", bad));
}

static void print_epochs(const struct json_value *v, bool *bad)
{
	const struct json_value *ep, *first;
	uint64_t cpu;
	size_t n, i;

	for (ep = v ? v->child : NULL; ep; ) {
		cpu = u64_field(ep, "cpu", bad);
		for (first = ep, n = 0; ep && u64_field(ep, "cpu", bad) == cpu; ep = ep->next)
			n++;
		for (i = 0; first != ep; first = first->next, i++) {
			if (n <= EPOCHS_LISTED || i < EPOCHS_LISTED / 2 || i >= n - EPOCHS_LISTED / 2 + 1)
				print_epoch(first, bad);
			else if (i == EPOCHS_LISTED / 2)
				printf("    cpu%" PRIu64 ": ... %zu more epochs (manifest.json lists them)\n", cpu,
				       n - EPOCHS_LISTED + 1);
		}
	}
}

static void print_sync(const struct json_value *sync, bool *bad)
{
	const struct json_value *v;

	if (!json_is(sync, JSON_OBJECT)) {
		printf("  sync: not recorded\n");
		return;
	}
	printf("  sync method: ");
	put_safe(json_string(json_get(sync, "method")));
	if (json_string(json_get(sync, "why"))) {
		printf(" (");
		put_safe(json_string(json_get(sync, "why")));
		printf(")");
	}
	if (!json_is(json_get(sync, "bound_ns"), JSON_NUMBER) ||
	    !strcmp(json_string(json_get(sync, "method")) ?: "", "none"))
		printf("\n  sync bound: none: this guest's timestamps are not mapped onto the host's\n");
	else
		printf("\n  sync bound: %.1f ns\n", num_field(sync, "bound_ns", bad));
	v = json_get(sync, "probes");
	if (json_is(v, JSON_ARRAY) && v->count) {
		const struct json_value *p, *best = NULL;
		double min = 0;

		for (p = v->child; p; p = p->next) {
			double rtt = num_field(p, "min_rtt_ns", bad);

			if (!best || rtt < min) {
				best = p;
				min = rtt;
			}
		}
		printf("  min RTT: %.1f ns (cpu%" PRIu64 ")\n", min, u64_field(best, "cpu", bad));
		for (p = v->child; p; p = p->next)
			printf("    cpu%" PRIu64 ": %" PRIu64 " probes, min RTT %.1f ns\n",
			       u64_field(p, "cpu", bad), u64_field(p, "samples", bad),
			       num_field(p, "min_rtt_ns", bad));
	} else {
		printf("  min RTT: none (no probes)\n");
	}
	v = json_get(sync, "kvm");
	if (json_is(v, JSON_OBJECT)) {
		printf("  KVM offset changes: ");
		put_safe(json_string(json_get(v, "changes_from")));
		printf(", %" PRIu64 " seen, %" PRIu64 " events lost, %" PRIu64 " not seen, %" PRIu64
		       " merged, debugfs disagreed on %" PRIu64 " vCPU(s)\n", u64_field(v, "changes", bad),
		       u64_field(v, "events_lost", bad), u64_field(v, "changes_not_seen", bad),
		       u64_field(v, "merged", bad), u64_field(v, "debugfs_disagreed", bad));
	}
	v = json_get(sync, "check");
	if (json_is(v, JSON_OBJECT))
		printf("  --sync-check: %" PRIu64 " bursts, %" PRIu64 " replies, %" PRIu64 " outside KVM's "
		       "offsets\n", u64_field(v, "bursts", bad), u64_field(v, "replies", bad),
		       u64_field(v, "outside", bad));
	v = json_get(sync, "epochs");
	printf("  epochs: %zu\n", json_is(v, JSON_ARRAY) ? v->count : 0);
	print_epochs(json_is(v, JSON_ARRAY) ? v : NULL, bad);
}

/* Every CPU's figures: what reached the host, and what the agent says it sent. */
static void print_cpus(const struct json_value *cpus, bool host, bool *bad)
{
	const struct json_value *c;

	if (!json_is(cpus, JSON_ARRAY) || !cpus->count)
		return;
	printf("  per CPU:\n");
	for (c = cpus->child; c; c = c->next) {
		printf("    cpu%" PRIu64 ": %" PRIu64 " events, %" PRIu64 " pages, %" PRIu64 " bytes",
		       u64_field(c, "cpu", bad), u64_field(c, "events", bad), u64_field(c, "pages", bad),
		       u64_field(c, "bytes", bad));
		if (!host)
			printf("; agent: %" PRIu64 " pages, %" PRIu64 " bytes",
			       u64_field(c, "agent_pages", bad), u64_field(c, "agent_bytes", bad));
		printf("\n");
	}
}

/* record --hold: the rings' last window, and the events they overwrote (not losses). */
static void print_held(const struct json_value *held)
{
	double w;
	bool bad = false;

	if (!json_is(held, JSON_OBJECT))
		return;
	printf("  held (record --hold): %" PRIu64 " older events overwritten",
	       u64_field(held, "overwritten", &bad));
	if (json_double(json_get(held, "window_ns"), &w) == 0)
		printf(", the kept events span %.6f s", w / 1e9);
	printf("\n");
}

/* One trace (the host or a guest): Return: 0, or -errno if its file cannot be read. */
static int report_trace(const char *dir, const struct json_value *t, bool host,
			struct report_opts *ro)
{
	const struct json_value *cpus = json_get(t, "cpus"), *lost = json_get(t, "lost_events");
	const struct json_value *c, *file = json_get(t, "file");
	uint64_t man_events = 0, after_loss = 0, bad_pages = 0, frag = 0, dropped = 0;
	struct ev_counter cnt = { 0 };
	const char *problems;
	bool bad = false;
	size_t i;
	int ret = 0;

	if (!json_is(t, JSON_OBJECT)) {
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json: a trace entry is not "
			"an object\n", dir);
		return -EBADMSG;
	}
	if (host) {
		printf("host: ");
	} else {
		printf("guest ");
		put_safe(json_string(json_get(t, "name")));
		printf(": ");
	}
	for (c = json_is(cpus, JSON_ARRAY) ? cpus->child : NULL; c; c = c->next) {
		man_events += u64_field(c, "events", &bad);
		after_loss += u64_field(c, "pages_after_loss", &bad);
		bad_pages += u64_field(c, "bad_pages", &bad);
		frag += u64_field(c, "fragment_bytes", &bad);
		dropped += u64_field(c, "dropped_pages_max_size", &bad);
	}
	if (json_is(file, JSON_NULL) || !file) {
		printf("no trace file was written\n");
	} else if (!file_name_ok(json_string(file))) {
		printf("?\n");
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json: the file of '%s' is "
			"not a plain file name\n", dir, host ? "host" : "a guest");
		ret = -EBADMSG;
	} else {
		char path[4400];

		put_safe(json_string(file));
		printf(", %zu CPUs, clock ", json_is(cpus, JSON_ARRAY) ? cpus->count : 0);
		put_safe(json_string(json_get(t, "clock")));
		if (json_string(json_get(t, "agent"))) {
			printf(", agent ");
			put_safe(json_string(json_get(t, "agent")));
		}
		printf("\n");
		snprintf(path, sizeof(path), "%s/%s", dir, json_string(file));
		if (access(path, R_OK) < 0) {
			ret = -errno;
			fprintf(stderr, "virtio-trace-collect report: cannot read %s: %s\n", path,
				strerror(-ret));
		} else {
			ret = host ? exits_new(dir, ro->guests, &cnt) :
				     analyses_new(dir, json_string(file), &cnt, ro);
			if (ret == 0)
				ret = count_events(path, &cnt);
			if (ret < 0)
				fprintf(stderr, "virtio-trace-collect report: %s: libtracecmd cannot "
					"read it (%s)\n", path, strerror(-ret));
		}
		if (ret == 0) {
			printf("  events: %" PRIu64 "\n", cnt.total);
			for (i = 0; i < cnt.nr; i++) {
				printf("    %12" PRIu64 "  ", cnt.v[i].n);
				put_safe(cnt.v[i].name);	/* the trace file's: anyone's */
				printf("\n");
			}
			if (cnt.total != man_events)
				printf("  note: manifest.json counts %" PRIu64 " events\n", man_events);
		}
	}
	printf("  lost events in pages: %" PRIu64 "\n", u64_field(lost, "in_pages", &bad));
	printf("  pages after loss: %" PRIu64 "\n", after_loss);
	printf("  overrun (%s ring buffer): %" PRIu64 "\n", host ? "host" : "guest",
	       u64_field(lost, "overrun", &bad));
	printf("  bad pages: %" PRIu64 "\n", bad_pages);
	print_held(json_get(t, "held"));
	if (frag)
		printf("  fragment bytes: %" PRIu64 "\n", frag);
	if (dropped)
		printf("  pages dropped at --max-size: %" PRIu64 "\n", dropped);
	print_cpus(cpus, host, &bad);
	if (!host)
		print_sync(json_get(t, "sync"), &bad);
	ro->seen_iommu |= cnt.iommu && iommu_an_any(cnt.iommu);
	ro->seen_mmio |= cnt.mmio && mmio_an_entries(cnt.mmio);
	ro->seen_exits |= cnt.exits && exits_an_any(cnt.exits);
	if (cnt.iommu && iommu_an_any(cnt.iommu)) {
		fflush(stdout);
		iommu_an_print(cnt.iommu, stdout, !ro->iommu);
	}
	if (cnt.mmio && mmio_an_any(cnt.mmio))
		mmio_an_print(cnt.mmio, stdout, !ro->mmio_log);
	if (cnt.exits && exits_an_any(cnt.exits) && !ro->exits)
		printf("  VM exits: kvm_exit events present (`report --exits` breaks them down)\n");
	if (cnt.exits && exits_an_any(cnt.exits) && ro->exits)
		exits_an_print(cnt.exits, stdout);
	problems = json_string(json_get(t, "problems"));
	printf("  problems: ");
	put_safe(problems && problems[0] ? problems : "none");
	printf("\n");
	if (bad)
		printf("  note: some manifest figures are not valid numbers (shown as 0)\n");
	analyses_free(&cnt);
	return ret;
}

/*
 * An analysis asked for on a recording without its events would print the
 * plain report and look like an answer: say so, with the record option that
 * adds them, and exit EXIT_NO_EVENTS.
 */
static int events_missing(const struct report_opts *ro)
{
	int status = EXIT_OK;

	if (ro->exits && !ro->seen_exits) {
		log_err("--exits: the host trace has no kvm:kvm_exit events (record them with "
			"`record --kvm-exits`)");
		status = EXIT_NO_EVENTS;
	}
	if (ro->iommu && !ro->seen_iommu) {
		log_err("--iommu: %s iommu events (record them with `record -e iommu`)",
			ro->guest ? "the guest recorded no" : "no guest recorded");
		status = EXIT_NO_EVENTS;
	}
	if (ro->mmio_log && !ro->seen_mmio) {
		log_err("--mmiotrace-log: %s mmiotrace entries (record them with `record --tracer "
			"mmiotrace`); %s holds the header only", ro->guest ? "the guest recorded no" :
			"no guest recorded", ro->mmio_log);
		status = EXIT_NO_EVENTS;
	}
	return status;
}

/* Whether the manifest's guests include @name. */
static bool guest_known(const struct json_value *guests, const char *name)
{
	const struct json_value *g;

	for (g = guests->child; g; g = g->next) {
		const char *n = json_string(json_get(g, "name"));

		if (n && !strcmp(n, name))
			return true;
	}
	return false;
}

/* --guest NAME: only that guest's trace. */
static bool guest_selected(const struct report_opts *ro, const struct json_value *g)
{
	const char *name = json_string(json_get(g, "name"));

	return !ro->guest || (name && !strcmp(name, ro->guest));
}

static unsigned int nr_cpus(const struct json_value *t)
{
	const struct json_value *c = json_get(t, "cpus");

	return json_is(c, JSON_ARRAY) && c->count < 4096 ? c->count : 0;
}

struct html_vs {
	struct timeline *tl;
	const char *only;		/* --guest */
};

static int html_vstate(void *ctx, const char *guest, int vcpu, uint64_t start, uint64_t end,
		       const char *kind, const char *name, unsigned int merged)
{
	struct html_vs *h = ctx;

	if (h->only && strcmp(h->only, guest))
		return 0;
	return tl_add_vstate(h->tl, guest, vcpu, start, end, kind, name, merged);
}

/* --html: each vCPU's states as report --vcpus finds them, where the host file maps vCPU threads. */
static int html_vstates(struct timeline *tl, const char *dir, const struct json_value *root,
			const struct report_opts *ro)
{
	struct html_vs h = { tl, ro->guest };
	struct vcpus_an *va;
	int ret;

	if (!file_name_ok(json_string(json_get(json_get(root, "host"), "file"))))
		return 0;
	va = vcpus_walk(dir, root, ro, true);
	if (!va)
		return errno == ENOMEM ? -ENOMEM : 0;	/* the page still shows the traces */
	ret = vcpus_an_each_strip(va, html_vstate, &h);
	vcpus_an_free(va);
	return ret;
}

/* --perfetto FILE, with each vCPU's states as slices where the host file maps vCPU threads. */
static int pf_write_vcpus(const char *dir, const struct json_value *root, const struct report_opts *ro)
{
	struct vcpus_an *va = NULL;
	int ret;

	if (file_name_ok(json_string(json_get(json_get(root, "host"), "file"))))
		va = vcpus_walk(dir, root, ro, true);
	ret = pf_write(dir, root, ro->guest, ro->perfetto, ro->mode, va);
	vcpus_an_free(va);
	return ret;
}

/* --html FILE: the host and the selected guests on one timeline page. */
static int write_html(const char *dir, const struct json_value *root, struct report_opts *ro)
{
	const struct json_value *g, *host = json_get(root, "host");
	struct timeline *tl = tl_new();
	char path[4400], label[96], title[4200];
	FILE *f = NULL;
	int ret = 0;

	if (!tl)
		return -ENOMEM;
	if (json_is(host, JSON_OBJECT) && file_name_ok(json_string(json_get(host, "file")))) {
		snprintf(path, sizeof(path), "%s/%s", dir, json_string(json_get(host, "file")));
		ret = tl_add_trace(tl, "host", path, nr_cpus(host));
	}
	for (g = ro->guests->child; g && ret == 0; g = g->next) {
		const struct json_value *sync = json_get(g, "sync"), *ep;
		const char *file = json_string(json_get(g, "file"));

		if (!guest_selected(ro, g) || !file_name_ok(file))
			continue;
		snprintf(label, sizeof(label), "guest %s", json_string(json_get(g, "name")) ?: "?");
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		ret = tl_add_trace(tl, label, path, nr_cpus(g));
		ep = json_get(sync, "epochs");
		for (ep = json_is(ep, JSON_ARRAY) ? ep->child : NULL; ep && ret == 0 && ro->tsc_khz;
		     ep = ep->next) {
			bool bad = false;
			uint64_t tsc = u64_field(ep, "host_tsc_from", &bad);
			double bound = num_field(ep, "bound_ns", &bad);
			long double ns = (long double)tsc * 1000000.0L / ro->tsc_khz;

			if (!bad && ns < 1.8e19L)	/* a manifest figure: bounded before the cast */
				ret = tl_add_epoch(tl, label, (uint64_t)ns, bound,
						   json_string(json_get(sync, "method")));
		}
	}
	if (ret == 0)
		ret = html_vstates(tl, dir, root, ro);
	if (ret < 0) {
		fprintf(stderr, "virtio-trace-collect report: cannot read the traces for %s (%s)\n",
			ro->html, strerror(-ret));
		goto out;
	}
	f = an_open_out(ro->html, ro->mode);
	if (!f) {
		ret = -errno;
		fprintf(stderr, "virtio-trace-collect report: cannot write %s: %s\n", ro->html,
			strerror(errno));
		goto out;
	}
	snprintf(title, sizeof(title), "virtio-trace: %s", dir);
	ret = tl_write_html(tl, f, title);
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	if (ret < 0)
		fprintf(stderr, "virtio-trace-collect report: writing %s failed\n", ro->html);
	else
		fprintf(stderr, "virtio-trace-collect report: wrote %s (%" PRIu64 " slices, ticks and "
			"markers)\n", ro->html, tl_nr_items(tl));
out:
	tl_free(tl);
	return ret;
}


/* --json: a guest's clock-mapping epochs, as the manifest has them (print_epoch()'s figures). */
static void json_epochs(struct jw *w, const struct json_value *v, bool *bad)
{
	const struct json_value *ep;
	bool drift;
	int64_t off;

	jw_arr(w, "epochs");
	for (ep = json_is(v, JSON_ARRAY) ? v->child : NULL; ep; ep = ep->next) {
		drift = false;
		off = 0;
		if (json_i64(json_get(ep, "offset"), &off) < 0 ||
		    json_bool(json_get(ep, "drift"), &drift) < 0)
			*bad = true;
		jw_obj(w, NULL);
		jw_u64(w, "cpu", u64_field(ep, "cpu", bad));
		jw_u64(w, "host_tsc_from", u64_field(ep, "host_tsc_from", bad));
		jw_i64(w, "offset", off);
		jw_u64(w, "ratio", u64_field(ep, "ratio", bad));
		jw_u64(w, "frac_bits", u64_field(ep, "frac_bits", bad));
		jw_str(w, "source", json_string(json_get(ep, "source")));
		jw_bool(w, "drift", drift);
		jw_fixed(w, "bound_ns", num_field(ep, "bound_ns", bad), 1);
		jw_end(w, '}');
	}
	jw_end(w, ']');
}

/* --json: a guest's time synchronisation, the figures print_sync() shows (null: not recorded). */
static void json_sync(struct jw *w, const struct json_value *sync, bool *bad)
{
	const struct json_value *v, *p;

	if (!json_is(sync, JSON_OBJECT)) {
		jw_null(w, "sync");
		return;
	}
	jw_obj(w, "sync");
	jw_str(w, "method", json_string(json_get(sync, "method")));
	if (json_string(json_get(sync, "why")))
		jw_str(w, "why", json_string(json_get(sync, "why")));
	if (!json_is(json_get(sync, "bound_ns"), JSON_NUMBER) ||
	    !strcmp(json_string(json_get(sync, "method")) ?: "", "none"))
		jw_null(w, "bound_ns");
	else
		jw_fixed(w, "bound_ns", num_field(sync, "bound_ns", bad), 1);
	v = json_get(sync, "probes");
	jw_arr(w, "probes");
	for (p = json_is(v, JSON_ARRAY) ? v->child : NULL; p; p = p->next) {
		jw_obj(w, NULL);
		jw_u64(w, "cpu", u64_field(p, "cpu", bad));
		jw_u64(w, "samples", u64_field(p, "samples", bad));
		jw_fixed(w, "min_rtt_ns", num_field(p, "min_rtt_ns", bad), 1);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	v = json_get(sync, "kvm");
	if (json_is(v, JSON_OBJECT)) {
		jw_obj(w, "kvm");
		jw_str(w, "changes_from", json_string(json_get(v, "changes_from")));
		jw_u64(w, "changes", u64_field(v, "changes", bad));
		jw_u64(w, "events_lost", u64_field(v, "events_lost", bad));
		jw_u64(w, "changes_not_seen", u64_field(v, "changes_not_seen", bad));
		jw_u64(w, "merged", u64_field(v, "merged", bad));
		jw_u64(w, "debugfs_disagreed", u64_field(v, "debugfs_disagreed", bad));
		jw_end(w, '}');
	}
	v = json_get(sync, "check");
	if (json_is(v, JSON_OBJECT)) {
		jw_obj(w, "check");
		jw_u64(w, "bursts", u64_field(v, "bursts", bad));
		jw_u64(w, "replies", u64_field(v, "replies", bad));
		jw_u64(w, "outside", u64_field(v, "outside", bad));
		jw_end(w, '}');
	}
	json_epochs(w, json_get(sync, "epochs"), bad);
	jw_end(w, '}');
}

/*
 * --json: a trace's manifest figures, as the text report shows them: its
 * clock, the sums over its CPUs, each CPU's, a guest's sync, its problems.
 */
static void json_figures(struct jw *w, const struct json_value *t, bool host)
{
	const struct json_value *cpus = json_get(t, "cpus"), *c;
	uint64_t after_loss = 0, bad_pages = 0, frag = 0, dropped = 0;
	const char *problems = json_string(json_get(t, "problems"));
	bool bad = false;

	jw_str(w, "clock", json_string(json_get(t, "clock")));
	if (!host)
		jw_str(w, "agent", json_string(json_get(t, "agent")));
	jw_arr(w, "cpus");
	for (c = json_is(cpus, JSON_ARRAY) ? cpus->child : NULL; c; c = c->next) {
		after_loss += u64_field(c, "pages_after_loss", &bad);
		bad_pages += u64_field(c, "bad_pages", &bad);
		frag += u64_field(c, "fragment_bytes", &bad);
		dropped += u64_field(c, "dropped_pages_max_size", &bad);
		jw_obj(w, NULL);
		jw_u64(w, "cpu", u64_field(c, "cpu", &bad));
		jw_u64(w, "events", u64_field(c, "events", &bad));
		jw_u64(w, "pages", u64_field(c, "pages", &bad));
		jw_u64(w, "bytes", u64_field(c, "bytes", &bad));
		if (!host) {
			jw_u64(w, "agent_pages", u64_field(c, "agent_pages", &bad));
			jw_u64(w, "agent_bytes", u64_field(c, "agent_bytes", &bad));
		}
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_u64(w, "pages_after_loss", after_loss);
	jw_u64(w, "bad_pages", bad_pages);
	jw_u64(w, "fragment_bytes", frag);
	jw_u64(w, "dropped_pages_max_size", dropped);
	if (!host)
		json_sync(w, json_get(t, "sync"), &bad);
	jw_str(w, "problems", problems && problems[0] ? problems : NULL);
	jw_bool(w, "figures_valid", !bad);
}

/* One trace as a JSON object: the manifest's figures, event counts and the analyses. */
static int json_trace(const char *dir, const struct json_value *t, bool host, struct report_opts *ro)
{
	const struct json_value *file = json_get(t, "file"), *lost = json_get(t, "lost_events");
	struct ev_counter cnt = { 0 };
	struct jw *w = &ro->jw;
	char path[4400];
	bool bad = false;
	size_t i;
	int ret = 0;

	jw_obj(w, NULL);
	jw_str(w, "name", host ? "host" : json_string(json_get(t, "name")));
	jw_bool(w, "host", host);
	if (!file_name_ok(json_string(file))) {
		jw_null(w, "file");
		jw_end(w, '}');
		return json_string(file) ? -EBADMSG : 0;
	}
	jw_str(w, "file", json_string(file));
	jw_u64(w, "lost_events_in_pages", u64_field(lost, "in_pages", &bad));
	jw_u64(w, "overrun", u64_field(lost, "overrun", &bad));
	json_figures(w, t, host);
	snprintf(path, sizeof(path), "%s/%s", dir, json_string(file));
	ret = host ? exits_new(dir, ro->guests, &cnt) : analyses_new(dir, json_string(file), &cnt, ro);
	if (ret == 0)
		ret = count_events(path, &cnt);
	if (ret < 0) {
		fprintf(stderr, "virtio-trace-collect report: %s: cannot read it (%s)\n", path,
			strerror(-ret));
		jw_end(w, '}');
		analyses_free(&cnt);
		return ret;
	}
	jw_u64(w, "events_total", cnt.total);
	jw_obj(w, "events");
	for (i = 0; i < cnt.nr; i++)
		jw_u64(w, cnt.v[i].name, cnt.v[i].n);
	jw_end(w, '}');
	ro->seen_iommu |= cnt.iommu && iommu_an_any(cnt.iommu);
	ro->seen_mmio |= cnt.mmio && mmio_an_entries(cnt.mmio);
	ro->seen_exits |= cnt.exits && exits_an_any(cnt.exits);
	if (cnt.iommu && iommu_an_any(cnt.iommu))
		iommu_an_json(cnt.iommu, w);
	if (cnt.mmio && mmio_an_any(cnt.mmio))
		mmio_an_json(cnt.mmio, w);
	if (cnt.exits && exits_an_any(cnt.exits))
		exits_an_json(cnt.exits, w);
	jw_end(w, '}');
	analyses_free(&cnt);
	return 0;
}

static int read_manifest(const char *dir, char **text, size_t *len, mode_t *mode)
{
	char path[4200];
	struct stat st;
	size_t have = 0;
	ssize_t n;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto err_close_fd;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MANIFEST_MAX) {
		ret = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		goto err_close_fd;
	}
	/* Read and write bits, the owner's always (as record --mode). */
	*mode = (st.st_mode & 0666) | 0600;
	*text = malloc(st.st_size + 1);
	if (!*text) {
		ret = -ENOMEM;
		goto err_close_fd;
	}
	while (have < (size_t)st.st_size) {
		n = read(fd, *text + have, st.st_size - have);
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

/* The options, into @ro. Return: -1 to go on, else the exit status (the message said). */
static int report_parse(int argc, char **argv, struct report_opts *ro)
{
	struct opt_val v;
	int c;

	optind = 1;
	while ((c = opt_parse(&report_cmd, argc, argv, &v)) != -1) {
		switch (c) {
		case OPT_HELP: return EXIT_OK;
		case OPT_ERROR: return EXIT_USAGE;
		case OPT_IOMMU: ro->iommu = true; break;
		case OPT_JSON: ro->json = true; break;
		case OPT_MMIO_LOG: ro->mmio_log = v.s; break;
		case OPT_EXITS: ro->exits = true; break;
		case OPT_INTERVAL: ro->interval = v.s; break;
		case OPT_VCPUS: ro->vcpus = true; break;
		case OPT_LATENCY:
			ro->latency = true;
			if (v.s)
				parse_ns(v.s, &ro->threshold_ns);	/* checked: latency_ok() */
			break;
		case OPT_HTML: ro->html = v.s; break;
		case OPT_GUEST: ro->guest = v.s; break;
		case OPT_PERFETTO: ro->perfetto = v.s; break;
		case OPT_PERF_KVM: ro->perf_kvm = v.s; break;
		}
	}
	if (opt_one_dir(argc, argv, "report [OPTION]... DIR") < 0)
		return EXIT_USAGE;
	return -1;
}

/* --guest NAME the run does not have: a usage error naming the ones it has. */
static bool report_guest_missing(const char *dir, const struct json_value *guests, const char *name)
{
	const struct json_value *g;

	if (!name || guest_known(guests, name))
		return false;
	fprintf(stderr, "virtio-trace-collect report: --guest %s: %s has no such guest; ", name, dir);
	if (!guests->count)
		fprintf(stderr, "it recorded none\n");
	for (g = guests->child; g; g = g->next) {
		fprintf(stderr, "%s", g == guests->child ? "its guests: " : ", ");
		collect_fput_safe(stderr, json_string(json_get(g, "name")));
		fprintf(stderr, "%s", g->next ? "" : "\n");
	}
	return true;
}

/*
 * DIR/manifest.json, read as untrusted input: *@doc its document, ro->guests
 * its "guests" array. Return: EXIT_OK, or the exit status after the message.
 */
static int report_load(const char *dir, struct report_opts *ro, struct json_doc **doc)
{
	const struct json_limits lim = { .max_depth = 16, .max_string = 1u << 16 };
	const struct json_value *root, *v;
	struct json_error jerr;
	char *text = NULL;
	size_t len = 0;
	bool bad = false;
	int ret;

	ret = read_manifest(dir, &text, &len, &ro->mode);
	if (ret < 0) {
		fprintf(stderr, "virtio-trace-collect report: cannot read %s/manifest.json: %s%s\n",
			dir, strerror(-ret), ret == -ENOENT ? " (is DIR the -o of a finished record? "
			"a killed run needs `virtio-trace-collect recover DIR` first)" : "");
		return EXIT_FAIL;
	}
	*doc = json_parse(text, len, &lim, &jerr);
	free(text);
	if (!*doc) {
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json:%u: %s (byte %zu)\n",
			dir, jerr.line, jerr.msg, jerr.offset);
		return EXIT_FAIL;
	}
	root = json_root(*doc);
	v = json_get(root, "guests");
	if (!json_is(root, JSON_OBJECT) || !json_is(v, JSON_ARRAY)) {
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json is not a "
			"virtio-trace-collect manifest (no \"guests\" array)\n", dir);
		ret = EXIT_FAIL;
		goto err_free_doc;
	}
	ro->tsc_khz = u64_field(json_get(root, "host_tsc"), "khz", &bad);
	ro->guests = v;
	if (report_guest_missing(dir, v, ro->guest)) {
		ret = EXIT_USAGE;
		goto err_free_doc;
	}
	return EXIT_OK;
err_free_doc:
	json_free(*doc);
	*doc = NULL;
	return ret;
}

/* The files asked for beside the report: --html, --perfetto, --perf-kvm, --mmiotrace-log. */
static int report_files(const char *dir, const struct json_value *root, struct report_opts *ro)
{
	if (ro->html && write_html(dir, root, ro) < 0)
		return EXIT_FAIL;
	if (ro->perfetto && pf_write_vcpus(dir, root, ro) < 0)
		return EXIT_FAIL;
	if (ro->perf_kvm && pk_write(dir, root, ro->guest, ro->perf_kvm) < 0)
		return EXIT_FAIL;
	if (ro->mmio_log) {
		ro->mmio_file = an_open_out(ro->mmio_log, ro->mode);
		if (!ro->mmio_file) {
			fprintf(stderr, "virtio-trace-collect report: cannot write %s: %s\n",
				ro->mmio_log, strerror(errno));
			return EXIT_FAIL;
		}
	}
	return EXIT_OK;
}

/* --vcpus, --latency and --interval, as text or (@json) into ro->jw. Return: the status. */
static int report_vcpus(const char *dir, const struct json_value *root, struct report_opts *ro,
			bool json)
{
	struct vcpus_an *va;

	if (!ro->vcpus && !ro->latency && !ro->interval)
		return EXIT_OK;
	va = vcpus_walk(dir, root, ro, false);
	if (!va)
		return EXIT_FAIL;
	if (ro->vcpus && json)
		vcpus_an_json(va, &ro->jw, ro->guest);
	else if (ro->vcpus)
		vcpus_an_print(va, stdout, ro->guest);
	if (ro->latency && json)
		vcpus_an_json_latency(va, &ro->jw, ro->guest);
	else if (ro->latency)
		vcpus_an_print_latency(va, stdout, ro->guest);
	if (ro->interval && json)
		vcpus_an_json_intervals(va, &ro->jw, ro->guest);
	else if (ro->interval)
		vcpus_an_print_intervals(va, stdout, ro->guest);
	vcpus_an_free(va);
	return EXIT_OK;
}

/* --json: the report as one document on stdout. Return: the status. */
static int report_json(const char *dir, const struct json_value *root, struct report_opts *ro)
{
	const struct json_value *g;
	int status = EXIT_OK;

	jw_begin(&ro->jw, stdout);
	jw_obj(&ro->jw, NULL);
	jw_u64(&ro->jw, "schema_version", REPORT_SCHEMA_VERSION);
	jw_str(&ro->jw, "run", dir);
	jw_u64(&ro->jw, "host_tsc_khz", ro->tsc_khz);
	jw_arr(&ro->jw, "traces");
	if (json_is(json_get(root, "host"), JSON_OBJECT) &&
	    json_trace(dir, json_get(root, "host"), true, ro) < 0)
		status = EXIT_FAIL;
	for (g = ro->guests->child; g; g = g->next)
		if (guest_selected(ro, g) && json_trace(dir, g, false, ro) < 0)
			status = EXIT_FAIL;
	jw_end(&ro->jw, ']');
	if (report_vcpus(dir, root, ro, true) != EXIT_OK)
		status = EXIT_FAIL;
	jw_end(&ro->jw, '}');
	return status;
}

/* The report's first lines: the run, the tool, the file format, the host's TSC. */
static void report_header(const char *dir, const struct json_value *root)
{
	bool bad = false, flag;

	printf("run: ");
	put_safe(dir);
	printf("\nrecorded by ");
	put_safe(json_string(json_get(root, "tool")));
	printf(" ");
	put_safe(json_string(json_get(root, "version")));
	printf(" at ");
	put_safe(json_string(json_get(root, "created")));
	if (json_bool(json_get(root, "recovered"), &flag) == 0 && flag)
		printf(" (recovered after a killed run)");
	printf("\nfile version %" PRIu64 ", compression ", u64_field(root, "file_version", &bad));
	put_safe(json_string(json_get(root, "compression")));
	printf("\nhost TSC: %" PRIu64 " kHz (", u64_field(json_get(root, "host_tsc"), "khz", &bad));
	put_safe(json_string(json_get(json_get(root, "host_tsc"), "method")));
	printf(")\n");
}

/* The report as text on stdout. Return: the status. */
static int report_text(const char *dir, const struct json_value *root, struct report_opts *ro)
{
	const struct json_value *g;
	int status = EXIT_OK;

	report_header(dir, root);
	if (json_is(json_get(root, "host"), JSON_OBJECT)) {
		printf("\n");
		if (report_trace(dir, json_get(root, "host"), true, ro) < 0)
			status = EXIT_FAIL;
	}
	for (g = ro->guests->child; g; g = g->next) {
		if (!guest_selected(ro, g))
			continue;
		printf("\n");
		if (report_trace(dir, g, false, ro) < 0)
			status = EXIT_FAIL;
	}
	if (!ro->guests->count)
		printf("\nno guests were recorded\n");
	if (report_vcpus(dir, root, ro, false) != EXIT_OK)
		status = EXIT_FAIL;
	return status;
}

/* --mmiotrace-log's file closed: still open means no guest took it. Return: the status. */
static int report_close_log(FILE *log_file, struct report_opts *ro, int status)
{
	if (!log_file)
		return status;
	if (ro->mmio_file) {
		fprintf(stderr, "virtio-trace-collect report: no guest trace to write %s from\n",
			ro->mmio_log);
		status = EXIT_FAIL;
	}
	if (fclose(log_file) != 0 && status == EXIT_OK) {
		fprintf(stderr, "virtio-trace-collect report: writing %s: %s\n", ro->mmio_log,
			strerror(errno));
		status = EXIT_FAIL;
	}
	return status;
}

/**
 * report_main() - the report subcommand
 * @argc: argument count
 * @argv: arguments, argv[0] is "report"
 *
 * Return: EXIT_OK, EXIT_FAIL (no manifest, or a file cannot be read),
 * EXIT_USAGE or EXIT_NO_EVENTS.
 */
int report_main(int argc, char **argv)
{
	struct report_opts ro = { 0 };
	const struct json_value *root;
	struct json_doc *doc = NULL;
	const char *dir;
	FILE *log_file;
	int status;

	status = report_parse(argc, argv, &ro);
	if (status >= 0)
		return status;
	dir = argv[optind];
	status = report_load(dir, &ro, &doc);
	if (status != EXIT_OK)
		return status;
	root = json_root(doc);
	status = report_files(dir, root, &ro);
	if (status != EXIT_OK) {
		json_free(doc);
		return status;
	}
	log_file = ro.mmio_file;
	if (ro.json)
		status = report_json(dir, root, &ro);
	else
		status = report_text(dir, root, &ro);
	status = report_close_log(log_file, &ro, status);
	json_free(doc);
	return status == EXIT_OK ? events_missing(&ro) : status;
}
