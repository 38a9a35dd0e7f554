// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `join SRC DST -o OUT`: one guest file across a live migration.
 *
 * The source's `record` ended its guest at the switchover (QMP MIGRATION
 * completed) and the destination's `record --incoming` took the agent's
 * session over; both kept their spools for this. Each CPU's stream is one
 * stream of the agent's: the source has its first bytes, the destination
 * the rest, placed by the resume mark the agent put into each port (mark
 * position - bytes before it = where the destination's first byte stands).
 * What both received (the source's QEMU may deliver data the destination's
 * delivers again) is taken once; what neither received is counted as lost.
 *
 * Time: the guest's TSC runs on across the move (it is migrated), but its
 * offset to the host's changes; it stands still from the switchover to the
 * resume. The joined TIME_SHIFT takes the source's epochs up to the guest
 * TSC at the switchover (the destination's mapping of its QMP RESUME; else
 * the source's of its STOP) and the destination's from there. On one machine the
 * two hosts' TSCs are one; two machines are related through their wall
 * clocks (each recording read its wall clock and TSC together), as well as
 * the hosts' own sync (PTP, chrony) holds them: --host-sync-bound.
 *
 * It reads the two spools and writes OUT/guest-NAME.dat and OUT/manifest.json
 * with the store's own writers; nothing else in SRC or DST changes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opts.h"
#include "output.h"
#include "spool.h"
#include "text.h"
#include "write.h"

/* One recording's side of the join. */
struct side {
	const char *path;
	int out_fd, spool_fd, dir_fd;
	struct spool_options opt;
	struct trace_sum t;
	struct spool_data sd;
};

enum { OPT_NAME = 256, OPT_DST_NAME, OPT_FORCE, OPT_BOUND };

/* join's command line: the one declaration its parsing and --help read (opts.h). */
static const struct opt_def join_opts[] = {
	{ "output", 'o', KIND_PATH, "OUT", "where to write (made if missing)",
	  .what = "the output directory, where the joined recording goes" },
	{ "name", OPT_NAME, KIND_NAME, "NAME", "the guest, when the recordings hold several" },
	{ "dst-name", OPT_DST_NAME, KIND_NAME, "NAME", "the guest's name in DST, when it is not its "
	  "name in\nSRC (two daemons on one host name the two QEMUs\napart)" },
	{ "force", OPT_FORCE, KIND_FLAG, NULL, "replace a recording in OUT" },
	{ "host-sync-bound", OPT_BOUND, KIND_U64, "NS", "the two recordings come from two machines: "
	  "how far\napart their wall clocks may be (PTP, chrony), in ns;\nadded to the "
	  "destination's clock bound", .what = "nanoseconds" },
	{ "quiet", 'q', KIND_FLAG, NULL, "no progress messages" },
	{ NULL },
};

static const struct opt_cmd join_cmd = {
	.name = "join",
	.usage = "SRC DST -o OUT [--name NAME] [--dst-name NAME]\n"
"                                 [--force] [--host-sync-bound NS]",
	.about =
"Make one guest trace of a guest that migrated live: SRC is the recording\n"
"`record --qmp` made on the source host (it ends at the switchover), DST the\n"
"one `record --incoming` made on the destination. Writes OUT/guest-NAME.dat\n"
"(the source's pages, then the destination's, each byte once, with a clock\n"
"epoch per side) and OUT/manifest.json (the blackout, and per CPU what each\n"
"side gave). Show the whole story with\n"
"  trace-cmd report -i SRC/host.dat -i DST/host.dat -i OUT/guest-NAME.dat\n",
	.tail =
"Exit status: 0 joined; 1 nothing written; 2 usage error; 3 written, with\n"
"problems (see OUT/manifest.json).\n",
	.defs = join_opts,
	.col = 26,
};

static void side_close(struct side *s)
{
	if (s->sd.fd >= 0)
		close(s->sd.fd);
	if (s->t.dir_fd >= 0)
		close(s->t.dir_fd);
	if (s->spool_fd >= 0)
		close(s->spool_fd);
	if (s->out_fd >= 0)
		close(s->out_fd);
	spool_trace_free(&s->t.rec);
}

/*
 * The guest of a recording that took part in a migration in @dir ("out" or
 * "in"): --name's, or the only one. A guest of another name that migrated
 * in is named in the error (the destination's daemon may call it
 * otherwise): the user says with --dst-name that it is the same guest.
 * Return: 0, or -errno (logged).
 */
static int find_guest(struct side *s, const char *direction, const char *name, char *found,
		      size_t size)
{
	char other[COLLECT_NAME_MAX] = "";
	struct dirent *de;
	unsigned int n = 0;
	int fd = dup(s->spool_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		struct spool_trace t;
		int dir;

		if (strncmp(de->d_name, "guest-", 6) || !spool_trace_dir_name(de->d_name))
			continue;
		dir = spool_open_dir(s->spool_fd, de->d_name);
		if (dir < 0)
			continue;
		if (spool_trace_load(dir, false, &t) == 0 && t.mig.have &&
		    !strcmp(t.mig.direction, direction)) {
			if (name && strcmp(de->d_name + 6, name))
				snprintf(other, sizeof(other), "%s", de->d_name + 6);
			else if (!n++)
				snprintf(found, size, "%s", de->d_name + 6);
		}
		spool_trace_free(&t);
		close(dir);
	}
	closedir(d);
	if (!n && other[0] && !strcmp(direction, "in")) {
		log_err("%s: no guest named %s that migrated in, but %s did: give --dst-name %s if it "
			"is the same guest", s->path, name, other, other);
		return -ENOENT;
	}
	if (!n) {
		log_err("%s: no guest%s%s that migrated %s (record keeps DIR/.spool for join: give "
			"the directory record wrote)", s->path, name ? " named " : "", name ? name : "",
			direction);
		return -ENOENT;
	}
	if (n > 1) {
		log_err("%s: %u guests migrated %s: choose one with --name", s->path, n, direction);
		return -EINVAL;
	}
	return 0;
}

static int side_open(struct side *s, const char *path)
{
	s->path = path;
	s->out_fd = s->spool_fd = s->t.dir_fd = s->sd.fd = -1;
	s->out_fd = output_open_dir(path, false, NULL);
	if (s->out_fd < 0) {
		log_err("%s: %s", path, s->out_fd == -ELOOP ? "a symbolic link: refused" :
			strerror(-s->out_fd));
		return s->out_fd;
	}
	s->spool_fd = spool_open_dir(s->out_fd, ".spool");
	if (s->spool_fd < 0 || spool_load_options(s->spool_fd, &s->opt) < 0) {
		log_err("%s holds no spool: record keeps DIR/.spool when a guest migrated (was it "
			"removed, or did the migration not complete?)", path);
		return -ENOENT;
	}
	return 0;
}

static int side_load(struct side *s, const char *name)
{
	char dirname[COLLECT_NAME_MAX + 8];
	int ret;

	snprintf(dirname, sizeof(dirname), "guest-%s", name);
	snprintf(s->t.dir, sizeof(s->t.dir), "%s/.spool/%s", s->path, dirname);
	s->t.dir_fd = spool_open_dir(s->spool_fd, dirname);
	if (s->t.dir_fd < 0)
		return s->t.dir_fd;
	ret = spool_trace_load(s->t.dir_fd, false, &s->t.rec);
	if (ret == -EBADMSG)
		log_err("%s/%s: the file was refused", s->t.dir, s->t.rec.bad);
	if (ret < 0)
		return ret;
	s->t.subbuf = s->t.rec.agent.subbuf;
	s->t.nr_cpus = s->t.rec.agent.nr_cpus;
	snprintf(s->t.rec.name, sizeof(s->t.rec.name), "%s", name);
	return inplace_load_data(&s->t, s->t.dir_fd, &s->sd);
}

/*
 * The destination's host TSC @x on the source's: the same TSC on one
 * machine (one boot), else through the wall clocks each recording read
 * together with its TSC.
 */
static int64_t host_delta(const struct side *src, const struct side *dst, uint64_t x, bool two)
{
	const struct spool_migration *a = &src->t.rec.mig, *b = &dst->t.rec.mig;
	long double rt, s;

	if (!two || !src->opt.tsc_khz || !dst->opt.tsc_khz)
		return 0;
	rt = (long double)b->seen.rt_ns + ((long double)x - b->seen.rt_tsc) * 1e6L / dst->opt.tsc_khz;
	s = (long double)a->seen.rt_tsc + (rt - a->seen.rt_ns) * src->opt.tsc_khz / 1e6L;
	return (int64_t)(s - (long double)x);
}

/*
 * One host, two recordings that converted its TSC at different rates (an
 * old recording, or one whose rate could be neither read from perf nor kept
 * for the boot): merged with the destination's host.dat, the joined file's
 * events are off by what the two conversions disagree on.
 */
static void tsc2nsec_differ(const struct side *src, const struct side *dst)
{
	const struct vt_tsc2nsec a = { .mult = src->opt.tsc_mult, .shift = src->opt.tsc_shift };
	const struct vt_tsc2nsec b = { .mult = dst->opt.tsc_mult, .shift = dst->opt.tsc_shift };
	uint64_t at = dst->t.rec.mig.seen.taken_tsc ? dst->t.rec.mig.seen.taken_tsc : 1;
	double off = ((double)vt_tsc2nsec_apply(&b, at) - (double)vt_tsc2nsec_apply(&a, at)) / 1000;

	log_warn("the two recordings convert this host's TSC to ns at different rates (TSC2NSEC %u>>%u "
		 "and %u>>%u): with %s/host.dat the joined file's events are %.1f us off; give "
		 "trace-cmd --ts-offset, or record both on a host whose rate perf offers or "
		 "/run/virtio-trace keeps", src->opt.tsc_mult, src->opt.tsc_shift, dst->opt.tsc_mult,
		 dst->opt.tsc_shift, dst->path, off);
}

/* An epoch of the destination's, on the source host's TSC. */
static struct vt_tsync_epoch moved(const struct vt_tsync_epoch *e, int64_t delta, uint64_t extra)
{
	struct vt_tsync_epoch m = *e;
	unsigned __int128 d = (unsigned __int128)(delta < 0 ? -(__int128)delta : delta) * e->map.ratio;
	int64_t shift = (int64_t)(d >> e->map.frac_bits);

	m.host_from = (uint64_t)((int64_t)e->host_from + delta);
	m.map.offset -= delta < 0 ? -shift : shift;
	m.error += extra;
	return m;
}

/*
 * Per CPU: the source's epochs up to the switchover's guest TSC, then the
 * destination's from the host time that maps to it (@resume: the
 * destination's RESUME on its own TSC, 0 if unknown). Return: 0 or -errno.
 */
static int join_epochs(struct trace_sum *j, const struct side *src, const struct side *dst,
		       unsigned int cpu, uint64_t stop, uint64_t resume, int64_t delta, uint64_t extra,
		       uint64_t *switch_g, uint64_t *switch_h)
{
	const struct vt_tsync_cpu *s = &src->t.rec.sync[cpu], *d = &dst->t.rec.sync[cpu];
	const struct vt_tsync_epoch *at;
	uint64_t g = 0, h = 0, last = 0;
	uint32_t i, k = 0;
	int ret;

	for (i = 0; i < s->nr; i++) {
		if (i && s->epochs[i].host_from >= stop)
			break;
		ret = vt_tsync_cpu_update(&j->rec.sync[cpu], &s->epochs[i]);
		if (ret < 0)
			return ret;
		last = s->epochs[i].host_from;
	}
	if (!d->nr)
		return 0;
	at = resume ? vt_tsync_cpu_at(d, resume) : NULL;
	if (at && vt_tsc_host_to_guest(&at->map, resume, &g) == 0) {
		/*
		 * The guest's TSC stands still from the switchover to the resume:
		 * its value when the destination's QEMU resumed it is where the
		 * source's time ends (the source's STOP is stamped a little before
		 * the guest really stops).
		 */
		h = resume;
	} else if ((at = s->nr ? vt_tsync_cpu_at(s, stop) : NULL) &&
		   vt_tsc_host_to_guest(&at->map, stop, &g) == 0 &&
		   vt_tsc_guest_to_host(&d->epochs[0].map, g, &h) == 0) {
		/* No resume time: the source's STOP, as the destination's clock reads it. */
	} else {
		h = d->epochs[0].host_from;
	}
	/* The destination's epoch in force at that moment, from then on. */
	for (k = 0; k + 1 < d->nr && d->epochs[k + 1].host_from <= h; k++)
		;
	for (i = k; i < d->nr; i++) {
		struct vt_tsync_epoch e = moved(&d->epochs[i], delta, extra);

		if (i == k)
			e.host_from = (uint64_t)((int64_t)h + delta);
		if (j->rec.sync[cpu].nr && e.host_from <= last)
			e.host_from = last + 1;
		ret = vt_tsync_cpu_update(&j->rec.sync[cpu], &e);
		if (ret < 0)
			return ret;
		last = e.host_from;
	}
	*switch_g = g;
	*switch_h = (uint64_t)((int64_t)h + delta);
	return 0;
}

/* Pages of one side's CPU into the writer: its region from @skip bytes on, then cpuN.pages. */
static int copy_side(struct finish *r, struct trace_sum *j, struct vt_tracedat *w, struct side *s,
		     struct cpu_sum *c, uint64_t skip)
{
	uint64_t len = s->sd.fd >= 0 && c->cpu < COLLECT_MAX_CPUS ? s->sd.len[c->cpu] : 0;
	char bad[256];
	struct stat st;
	int fd, ret;

	output_bad_name(j, c, bad, sizeof(bad));
	if (skip > len) {
		output_problem(j, "cpu%u: %s: %" PRIu64 " bytes to skip, its region has %" PRIu64,
			       c->cpu, s->path, skip, len);
		skip = len;
	}
	if (len > skip) {
		ret = output_walk_pages(r, j, w, s->sd.fd, s->sd.off[c->cpu] + skip, len - skip, c, bad);
		if (ret < 0)
			return ret;
	}
	fd = spool_open_cpu(s->t.dir_fd, c->cpu, SPOOL_CPU_PAGES, O_RDONLY);
	if (fd < 0)
		return 0;
	ret = fstat(fd, &st) < 0 ? -errno : output_walk_pages(r, j, w, fd, 0, st.st_size, c, bad);
	close(fd);
	return ret;
}

static int write_joined(struct finish *r, struct trace_sum *j, struct side *src, struct side *dst,
			struct join_sum *js)
{
	struct vt_tracedat_opts opts = {
		.version = r->opt.version,
		.compression = r->opt.compress ? VT_TD_COMPRESS_ZSTD : VT_TD_COMPRESS_NONE,
		.trace_id = j->rec.trace_id,
	};
	char tmp[sizeof(j->file) + 8];
	struct vt_tracedat *w;
	struct vt_meta meta;
	unsigned int i;
	size_t len;
	void *blob;
	int fd, ret;

	/* The destination's bundle is the later one (saved_cmdlines grew); else the source's. */
	ret = spool_load_meta(dst->t.dir_fd, &blob, &len);
	if (ret < 0)
		ret = spool_load_meta(src->t.dir_fd, &blob, &len);
	if (ret < 0) {
		log_err("neither recording holds the guest's metadata");
		return ret;
	}
	ret = vt_meta_decode(&meta, blob, len);
	free(blob);
	if (ret < 0) {
		log_err("the spooled metadata is malformed (%s)", strerror(-ret));
		return ret;
	}
	fd = output_create_tmp(r, j->file, tmp, sizeof(tmp));
	if (fd < 0) {
		vt_meta_free(&meta);
		return fd;
	}
	w = vt_tracedat_create(fd, &meta, &opts);
	ret = w ? output_add_options(r, j, w) : -errno;
	for (i = 0; ret == 0 && i < j->nr_cpus; i++) {
		struct cpu_sum *c = &j->cpus[i];
		struct join_cpu *jc = &js->cpus[i];

		c->cpu = i;
		ret = vt_tracedat_cpu_begin(w, i);
		if (ret == 0)
			ret = copy_side(r, j, w, src, c, 0);
		jc->src_pages = c->pages;
		jc->src_events = c->events;
		if (ret == 0)
			ret = copy_side(r, j, w, dst, c, jc->skip);
		jc->dst_pages = c->pages - jc->src_pages;
		jc->dst_events = c->events - jc->src_events;
		if (ret == 0)
			ret = vt_tracedat_cpu_end(w);
	}
	j->nr_sums = j->nr_cpus;
	if (ret == 0)
		ret = vt_tracedat_finish(w);
	vt_tracedat_free(w);
	if (ret == 0)
		ret = output_install(r, tmp, j->file);
	close(fd);
	if (ret < 0)
		unlinkat(r->out_fd, tmp, 0);
	else
		j->written = true;
	vt_meta_free(&meta);
	return ret;
}

/* Where each CPU's destination stream stands against the source's: what to skip, what is lost. */
static void place_streams(struct trace_sum *j, const struct side *src, const struct side *dst,
			  struct join_sum *js)
{
	unsigned int i;

	for (i = 0; i < j->nr_cpus; i++) {
		const struct spool_mig_cpu *s = &src->t.rec.mig.cpus[i], *d = &dst->t.rec.mig.cpus[i];
		struct join_cpu *jc = &js->cpus[i];
		uint64_t whole = s->bytes - s->bytes % j->subbuf, p;

		jc->cpu = i;
		jc->marked = d->marked;
		if (!d->marked) {
			if (d->bytes)
				output_problem(j, "cpu%u: the destination saw no resume mark: its pages follow "
					       "the source's unplaced", i);
			continue;
		}
		p = d->mark_pos - d->mark_pre;
		jc->dst_from = p;
		jc->src_to = s->bytes;
		if (whole > p) {
			/* Both received these: the source's QEMU delivered what it had migrated too. */
			jc->skip = whole - p;
			if (jc->skip > d->mark_pre)
				jc->skip = d->mark_pre;
		} else if (p > whole) {
			jc->gap = p - whole;
		}
		if (jc->skip % j->subbuf || p % j->subbuf)
			output_problem(j, "cpu%u: the switchover cut a page (the destination's stream starts "
				       "at byte %" PRIu64 "): its first pages are misframed", i, p);
		else if (jc->gap)
			output_problem(j, "cpu%u: %" PRIu64 " bytes the guest sent at the switchover reached "
				       "neither host (a socket chardev with no reader drops them)", i,
				       jc->gap);
	}
}

/* The joined trace: the destination's final figures, the source's identity. */
static void join_trace_init(struct trace_sum *j, const struct side *src, const struct side *dst,
			    const char *found)
{
	j->rec = dst->t.rec;	/* its stats texts stay the destination's (freed with it) */
	snprintf(j->rec.name, sizeof(j->rec.name), "%s", found);	/* its --dst-name's otherwise */
	memset(j->rec.sync, 0, sizeof(j->rec.sync));
	j->rec.trace_id = src->t.rec.trace_id;
	j->rec.sync_head.host_end = dst->t.rec.sync_head.host_end;
	j->dir_fd = -1;
	j->nr_cpus = src->t.nr_cpus;
	j->subbuf = src->t.subbuf;
	snprintf(j->dir, sizeof(j->dir), "%s + %s", src->path, dst->path);
	snprintf(j->file, sizeof(j->file), "guest-%s.dat", found);
	snprintf(j->rec.sync_head.method, sizeof(j->rec.sync_head.method), "joined");
	snprintf(j->rec.sync_head.why, sizeof(j->rec.sync_head.why),
		 "source: %.60s; destination: %.60s", src->t.rec.sync_head.method,
		 dst->t.rec.sync_head.method);
	snprintf(j->rec.mig.direction, sizeof(j->rec.mig.direction), "joined");
	j->rec.mig.have = false;	/* the manifest's "join" says it all */
}

/*
 * The joined clock: the switchover and resume in the source host's TSC, each
 * CPU's epochs joined there (@extra: --host-sync-bound's ns). Return: 0, or
 * -errno (logged).
 */
static int join_clocks(struct trace_sum *j, const struct side *src, const struct side *dst,
		       struct join_sum *js, bool two, uint64_t extra)
{
	uint64_t stop;
	unsigned int i;
	int ret;

	stop = src->t.rec.mig.seen.stop_tsc ? src->t.rec.mig.seen.stop_tsc :
	       src->t.rec.mig.seen.completed_tsc;
	js->src = src->path;
	js->dst = dst->path;
	js->two_hosts = two;
	js->sync_bound_ns = extra;
	js->nr = j->nr_cpus;
	js->qemu_downtime_ms = src->t.rec.mig.seen.downtime_ms;
	if (two)
		js->host_delta = host_delta(src, dst, dst->t.rec.mig.seen.taken_tsc, true);
	js->stop_tsc = stop;
	js->resume_tsc = dst->t.rec.mig.seen.resume_tsc ?
			(uint64_t)((int64_t)dst->t.rec.mig.seen.resume_tsc + js->host_delta) : 0;
	extra = src->opt.tsc_khz ? extra * src->opt.tsc_khz / 1000000 : 0;
	for (i = 0; i < j->nr_cpus; i++) {
		uint64_t g = 0, h = 0;

		ret = join_epochs(j, src, dst, i, stop, dst->t.rec.mig.seen.resume_tsc, js->host_delta,
				  extra, &g, &h);
		if (ret < 0) {
			log_err("cpu%u: cannot join the clock epochs: %s", i, strerror(-ret));
			return ret;
		}
		if (g && (!js->switch_guest_tsc || g < js->switch_guest_tsc)) {
			js->switch_guest_tsc = g;
			js->switch_host_tsc = h;
		}
	}
	if (!js->resume_tsc)
		js->resume_tsc = js->switch_host_tsc;
	if (j->rec.sync_head.host_end)
		j->rec.sync_head.host_end = (uint64_t)((int64_t)j->rec.sync_head.host_end +
						       js->host_delta);
	return 0;
}

/**
 * join_main() - the `join` subcommand
 * @argc: arguments from "join" on
 * @argv: their values
 *
 * Return: the exit status (collect.h).
 */
int join_main(int argc, char **argv)
{
	static struct side src, dst;
	static struct trace_sum j;
	static struct join_sum js;
	const char *out = NULL, *name = NULL, *dst_name = NULL;
	struct finish r = { .bad_fd = -1 };
	char found[COLLECT_NAME_MAX], other[COLLECT_NAME_MAX];
	bool force = false, two, bound_given = false;
	uint64_t extra = 0;
	struct opt_val v;
	unsigned int i;
	int c, ret, status = EXIT_FAIL;

	optind = 1;
	while ((c = opt_parse(&join_cmd, argc, argv, &v)) != -1) {
		switch (c) {
		case 'o': out = v.s; break;
		case OPT_NAME: name = v.s; break;
		case OPT_DST_NAME: dst_name = v.s; break;
		case OPT_FORCE: force = true; break;
		case OPT_BOUND:
			extra = v.u64;
			bound_given = true;
			break;
		case 'q': collect_quiet = true; break;
		case OPT_HELP: return EXIT_OK;
		default: return EXIT_USAGE;	/* opt_parse() said why */
		}
	}
	if (argc - optind != 2 || !out) {
		collect_usage("%s", argc - optind != 2 ?
			      "give the source's and the destination's recordings: SRC DST" :
			      "-o/--output is missing: the output directory, where the joined recording goes");
		opt_try_help();
		return EXIT_USAGE;
	}
	if (side_open(&src, argv[optind]) < 0 || side_open(&dst, argv[optind + 1]) < 0)
		goto out;
	if (find_guest(&src, "out", name, found, sizeof(found)) < 0 ||
	    find_guest(&dst, "in", dst_name ? dst_name : found, other, sizeof(other)) < 0)
		goto out;
	if (side_load(&src, found) < 0 || side_load(&dst, other) < 0) {
		log_err("cannot read the spools of guest %s", found);
		goto out;
	}
	if (src.t.nr_cpus != dst.t.nr_cpus || src.t.subbuf != dst.t.subbuf || !src.t.subbuf) {
		log_err("guest %s: %u CPUs of %u-byte pages in %s, %u of %u in %s: not one guest", found,
			src.t.nr_cpus, src.t.subbuf, src.path, dst.t.nr_cpus, dst.t.subbuf, dst.path);
		goto out;
	}
	if (!dst.t.rec.mig.seen.resumed) {
		log_err("%s: guest %s did not take a session over (no RESUME): nothing to join",
			dst.path, found);
		goto out;
	}
	two = src.t.rec.mig.seen.boot_id[0] && dst.t.rec.mig.seen.boot_id[0] &&
	      strcmp(src.t.rec.mig.seen.boot_id, dst.t.rec.mig.seen.boot_id);
	if (two && !bound_given) {
		log_err("the recordings come from two hosts (two boots): give --host-sync-bound NS, how "
			"far apart their wall clocks may be (what PTP or chrony guarantees)");
		status = EXIT_USAGE;
		goto out;
	}
	if (!two)
		extra = 0;
	if (!two && (src.opt.tsc_mult != dst.opt.tsc_mult || src.opt.tsc_shift != dst.opt.tsc_shift))
		tsc2nsec_differ(&src, &dst);

	r.out = out;
	r.opt = src.opt;
	r.out_fd = output_open_dir(out, true, NULL);
	if (r.out_fd < 0) {
		log_err("%s: %s", out, r.out_fd == -ELOOP ? "a symbolic link: refused" :
			strerror(-r.out_fd));
		goto out;
	}
	if (output_previous(r.out_fd, out, force) < 0)
		goto out_close;

	join_trace_init(&j, &src, &dst, found);
	if (join_clocks(&j, &src, &dst, &js, two, extra) < 0)
		goto out_close;
	place_streams(&j, &src, &dst, &js);
	ret = write_joined(&r, &j, &src, &dst, &js);
	if (ret < 0) {
		log_err("cannot write %s/%s: %s", out, j.file, strerror(-ret));
		goto out_close;
	}
	r.traces = &j;
	r.nr_traces = 1;
	r.join = &js;
	ret = manifest_write(&r, false);
	if (ret < 0) {
		log_err("cannot write %s/manifest.json: %s", out, strerror(-ret));
		goto out_close;
	}
	if (!collect_quiet)
		log_info("wrote %s/%s: %" PRIu64 " source pages and %" PRIu64 " destination pages per "
			 "CPU 0; blackout %.1f ms", out, j.file, js.cpus[0].src_pages, js.cpus[0].dst_pages,
			 js.resume_tsc > js.stop_tsc && src.opt.tsc_khz ?
			 (js.resume_tsc - js.stop_tsc) / (double)src.opt.tsc_khz : 0.0);
	status = j.problems[0] ? EXIT_PARTIAL : EXIT_OK;
	if (j.problems[0])
		log_warn("%s: %s", found, j.problems);
out_close:
	if (r.bad_fd >= 0)
		close(r.bad_fd);
	close(r.out_fd);
out:
	for (i = 0; i < COLLECT_MAX_CPUS; i++)
		vt_tsync_cpu_free(&j.rec.sync[i]);
	side_close(&src);
	side_close(&dst);
	return status;
}
