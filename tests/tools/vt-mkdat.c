// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-mkdat: build a trace.dat from a capture directory (the layout vt-capture
 * writes: the metadata bundle as plain files plus cpuN.raw and cpuN.stats),
 * so that tests and benchmarks can drive the writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_le.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_tracedat.h"

#define MAX_SAMPLES	16
#define MAX_MISSED	64
#define MAX_VCPUS	256
#define MAX_GUESTS	4

struct missed {
	uint32_t cpu;
	uint64_t page;
	long long count;	/* -1: flag only, no stored count */
};

struct mkdat {
	const char *in, *out;
	struct vt_tracedat_opts o;
	bool stats, no_cpustat;
	int64_t date;
	bool has_date;
	uint64_t ts_peer;
	uint32_t ts_flags;
	uint32_t nr_samples;
	int64_t ts_time[MAX_SAMPLES], ts_off[MAX_SAMPLES], ts_scale[MAX_SAMPLES],
		ts_frac[MAX_SAMPLES];
	struct {
		char *name;
		uint64_t id;
		uint32_t nr_vcpus;
		uint32_t vcpu_tid[MAX_VCPUS];
	} guests[MAX_GUESTS];
	uint32_t nr_guests;
	bool has_tsc;
	uint32_t tsc_mult, tsc_shift;
	uint64_t tsc_off;
	struct missed missed[MAX_MISSED];
	uint32_t nr_missed;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vt-mkdat -i DIR -o FILE [options]\n"
		"  -V, --version 6|7          file version (7)\n"
		"  -z, --compress none|zstd   v7 compression (zstd)\n"
		"  --trace-id ID              TRACEID option\n"
		"  --ts-peer ID               TIME_SHIFT: the peer's (host's) trace id\n"
		"  --ts-sample T:OFF[:SCALE:FRAC]  TIME_SHIFT sample for every CPU (repeatable)\n"
		"  --ts-interpolate           TIME_SHIFT interpolate flag\n"
		"  --guest NAME:ID:TID[,TID]  GUEST option (vCPU i runs in host thread TID i; up to 4)\n"
		"  --tsc2nsec MULT:SHIFT:OFF  TSC2NSEC option\n"
		"  --date USECS               DATE option\n"
		"  --missed CPU:PAGE:COUNT|?  flag a page as having lost events (COUNT stored)\n"
		"  --chunk-pages N            pages per compression chunk\n"
		"  --validate, --strict       validate every page (count events)\n"
		"  --no-cpustat               do not add cpuN.stats as CPUSTAT options\n"
		"  --stats                    print what was written\n");
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return (errno || end == s || *end) ? -1 : 0;
}

static int parse_args(struct mkdat *k, int argc, char **argv)
{
	enum { O_TRACEID = 256, O_TSPEER, O_TSSAMPLE, O_TSINTERP, O_GUEST, O_TSC, O_DATE,
	       O_MISSED, O_CHUNK, O_VALIDATE, O_STRICT, O_NOCPUSTAT, O_STATS };
	static const struct option lo[] = {
		{ "version", required_argument, NULL, 'V' },
		{ "compress", required_argument, NULL, 'z' },
		{ "trace-id", required_argument, NULL, O_TRACEID },
		{ "ts-peer", required_argument, NULL, O_TSPEER },
		{ "ts-sample", required_argument, NULL, O_TSSAMPLE },
		{ "ts-interpolate", no_argument, NULL, O_TSINTERP },
		{ "guest", required_argument, NULL, O_GUEST },
		{ "tsc2nsec", required_argument, NULL, O_TSC },
		{ "date", required_argument, NULL, O_DATE },
		{ "missed", required_argument, NULL, O_MISSED },
		{ "chunk-pages", required_argument, NULL, O_CHUNK },
		{ "validate", no_argument, NULL, O_VALIDATE },
		{ "strict", no_argument, NULL, O_STRICT },
		{ "no-cpustat", no_argument, NULL, O_NOCPUSTAT },
		{ "stats", no_argument, NULL, O_STATS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	char *p, *q;
	int c;

	while ((c = getopt_long(argc, argv, "i:o:V:z:h", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			k->in = optarg;
			break;
		case 'o':
			k->out = optarg;
			break;
		case 'V':
			k->o.version = atoi(optarg);
			break;
		case 'z':
			if (!strcmp(optarg, "none"))
				k->o.compression = VT_TD_COMPRESS_NONE;
			else if (!strcmp(optarg, "zstd"))
				k->o.compression = VT_TD_COMPRESS_ZSTD;
			else
				return -1;
			break;
		case O_TRACEID:
			if (parse_u64(optarg, &k->o.trace_id))
				return -1;
			break;
		case O_TSPEER:
			if (parse_u64(optarg, &k->ts_peer))
				return -1;
			break;
		case O_TSSAMPLE: {
			long long t, o, s = 1, f = 0;
			int n = sscanf(optarg, "%lli:%lli:%lli:%lli", &t, &o, &s, &f);

			if ((n != 2 && n != 4) || k->nr_samples >= MAX_SAMPLES)
				return -1;
			k->ts_time[k->nr_samples] = t;
			k->ts_off[k->nr_samples] = o;
			k->ts_scale[k->nr_samples] = s;
			k->ts_frac[k->nr_samples] = f;
			k->nr_samples++;
			break;
		}
		case O_TSINTERP:
			k->ts_flags |= VT_TD_TSHIFT_INTERPOLATE;
			break;
		case O_GUEST:
			p = strchr(optarg, ':');
			q = p ? strchr(p + 1, ':') : NULL;
			if (!q || k->nr_guests >= MAX_GUESTS)
				return -1;
			k->guests[k->nr_guests].name = strndup(optarg, p - optarg);
			*q = '\0';
			if (parse_u64(p + 1, &k->guests[k->nr_guests].id))
				return -1;
			for (p = strtok(q + 1, ","); p; p = strtok(NULL, ",")) {
				if (k->guests[k->nr_guests].nr_vcpus >= MAX_VCPUS || parse_u64(p, &v))
					return -1;
				k->guests[k->nr_guests].vcpu_tid[k->guests[k->nr_guests].nr_vcpus++] = v;
			}
			k->nr_guests++;
			break;
		case O_TSC: {
			unsigned long long o;

			if (sscanf(optarg, "%" SCNu32 ":%" SCNu32 ":%llu", &k->tsc_mult,
				   &k->tsc_shift, &o) != 3)
				return -1;
			k->tsc_off = o;
			k->has_tsc = true;
			break;
		}
		case O_DATE:
			k->date = strtoll(optarg, NULL, 0);
			k->has_date = true;
			break;
		case O_MISSED: {
			struct missed *m = &k->missed[k->nr_missed];
			unsigned long long page;
			char cnt[32];

			if (k->nr_missed >= MAX_MISSED ||
			    sscanf(optarg, "%" SCNu32 ":%llu:%31s", &m->cpu, &page, cnt) != 3)
				return -1;
			m->page = page;
			m->count = strcmp(cnt, "?") ? strtoll(cnt, NULL, 0) : -1;
			k->nr_missed++;
			break;
		}
		case O_CHUNK:
			k->o.chunk_pages = atoi(optarg);
			break;
		case O_VALIDATE:
			k->o.flags |= VT_TD_VALIDATE;
			break;
		case O_STRICT:
			k->o.flags |= VT_TD_VALIDATE | VT_TD_STRICT;
			break;
		case O_NOCPUSTAT:
			k->no_cpustat = true;
			break;
		case O_STATS:
			k->stats = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	return (k->in && k->out && optind == argc) ? 0 : -1;
}

/* Flag @page as "events lost before it", storing @count after the data. */
static int mark_missed(const struct vt_page_fmt *f, uint8_t *page, long long count)
{
	struct vt_page_info info;
	uint32_t commit, at;

	if (vt_page_header(f, page, f->subbuf_size, &info) < 0)
		return -EBADMSG;
	commit = vt_get_le32(page + 8) | (uint32_t)VT_COMMIT_MISSED;
	if (count >= 0) {
		at = f->data_offset + info.len;
		if (f->subbuf_size - at < f->commit_size)
			return -ENOSPC;
		if (f->commit_size == 8)
			vt_put_le64(page + at, count);
		else
			vt_put_le32(page + at, count);
		commit |= VT_COMMIT_MISSED_STORED;
	}
	vt_put_le32(page + 8, commit);
	return 0;
}

/* Stream a CPU page by page, applying --missed marks. */
static int copy_marked(struct mkdat *k, struct vt_tracedat *w, const struct vt_page_fmt *f,
		       uint32_t cpu, const char *path)
{
	uint8_t *page;
	uint64_t idx = 0;
	uint32_t i;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	page = malloc(f->subbuf_size);
	ret = page ? vt_tracedat_cpu_begin(w, cpu) : -ENOMEM;
	while (ret == 0) {
		size_t have = 0;

		while (have < f->subbuf_size) {
			n = read(fd, page + have, f->subbuf_size - have);
			if (n <= 0)
				break;
			have += n;
		}
		if (!have)
			break;
		for (i = 0; i < k->nr_missed && have == f->subbuf_size; i++)
			if (k->missed[i].cpu == cpu && k->missed[i].page == idx)
				ret = mark_missed(f, page, k->missed[i].count);
		if (ret == 0)
			ret = vt_tracedat_cpu_write(w, page, have);
		idx++;
	}
	if (ret == 0)
		ret = vt_tracedat_cpu_end(w);
	free(page);
	close(fd);
	return ret;
}

static int add_options(struct mkdat *k, struct vt_tracedat *w, const struct vt_meta *m)
{
	struct vt_tracedat_tshift_cpu ts[VT_META_MAX_CPUS];
	char path[PATH_MAX];
	struct vt_blob b;
	uint32_t c;
	int ret = 0, fd;

	if (k->has_tsc)
		ret = vt_tracedat_set_tsc2nsec(w, k->tsc_mult, k->tsc_shift, k->tsc_off);
	if (!ret && k->has_date)
		ret = vt_tracedat_add_date(w, k->date);
	if (!ret && k->nr_samples) {
		for (c = 0; c < m->nr_cpus; c++) {
			ts[c].nr = k->nr_samples;
			ts[c].times = k->ts_time;
			ts[c].offsets = k->ts_off;
			ts[c].scalings = k->ts_scale;
			ts[c].frac_bits = k->ts_frac;
		}
		ret = vt_tracedat_add_time_shift(w, k->ts_peer, k->ts_flags, m->nr_cpus, ts);
	}
	for (c = 0; c < k->nr_guests && !ret; c++)
		ret = vt_tracedat_add_guest(w, k->guests[c].name, k->guests[c].id, k->guests[c].nr_vcpus,
					    k->guests[c].vcpu_tid);
	for (c = 0; c < m->nr_cpus && !ret && !k->no_cpustat; c++) {
		char buf[4096];
		ssize_t n;

		snprintf(path, sizeof(path), "%s/cpu%u.stats", k->in, c);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n < 0)
			return -errno;
		b.data = buf;
		b.len = n;
		ret = vt_tracedat_add_cpustat(w, c, b.data, b.len);
	}
	return ret;
}

static int build(struct mkdat *k)
{
	struct vt_tracedat_stats st;
	struct vt_tracedat_fault fault;
	struct vt_tracedat *w;
	struct vt_page_fmt f;
	struct vt_meta m;
	char path[PATH_MAX];
	uint32_t c, i;
	int fd, ret;

	ret = vt_meta_load_dir(&m, k->in);
	if (ret < 0) {
		fprintf(stderr, "vt-mkdat: %s: %s\n", k->in, strerror(-ret));
		return ret;
	}
	vt_page_fmt_parse(&f, m.header_page.data, m.header_page.len);
	fd = open(k->out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "vt-mkdat: %s: %s\n", k->out, strerror(errno));
		goto out_meta;
	}
	w = vt_tracedat_create(fd, &m, &k->o);
	if (!w) {
		ret = -errno;
		fprintf(stderr, "vt-mkdat: create: %s\n", strerror(errno));
		goto out_fd;
	}
	ret = add_options(k, w, &m);
	for (c = 0; c < m.nr_cpus && ret == 0; c++) {
		bool marked = false;

		snprintf(path, sizeof(path), "%s/cpu%u.raw", k->in, c);
		if (access(path, F_OK) < 0)
			continue;
		for (i = 0; i < k->nr_missed; i++)
			marked |= k->missed[i].cpu == c;
		ret = marked ? copy_marked(k, w, &f, c, path) : vt_tracedat_cpu_path(w, c, path);
	}
	if (ret == 0)
		ret = vt_tracedat_finish(w);
	if (ret < 0) {
		vt_tracedat_fault(w, &fault);
		fprintf(stderr, "vt-mkdat: writing %s: %s\n", k->out, strerror(-ret));
		if (fault.cpu >= 0)
			fprintf(stderr, "vt-mkdat: cpu %d page %" PRIu64 " offset %u: %s\n",
				fault.cpu, fault.page, fault.offset, fault.reason);
	} else if (k->stats) {
		vt_tracedat_stats(w, -1, &st);
		printf("events %" PRIu64 "\nlost_events %" PRIu64 "\nmissed_pages %" PRIu64
		       "\npages %" PRIu64 "\nbytes %" PRIu64 "\nfile_bytes %" PRIu64
		       "\npadded_pages %" PRIu64 "\nrepaired_pages %" PRIu64
		       "\nbad_pages %" PRIu64 "\n", st.events, st.lost_events, st.missed_pages,
		       st.pages, st.bytes, st.file_bytes, st.padded_pages, st.repaired_pages,
		       st.bad_pages);
		for (c = 0; c < m.nr_cpus; c++) {
			vt_tracedat_stats(w, c, &st);
			printf("cpu%u_events %" PRIu64 "\ncpu%u_pages %" PRIu64 "\n", c, st.events,
			       c, st.pages);
		}
	}
	vt_tracedat_free(w);
out_fd:
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
out_meta:
	vt_meta_free(&m);
	return ret;
}

int main(int argc, char **argv)
{
	struct mkdat k = { .o.version = 7 };
	uint32_t i;
	int ret;

	if (parse_args(&k, argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	ret = build(&k);
	for (i = 0; i < k.nr_guests; i++)
		free(k.guests[i].name);
	return ret < 0 ? 1 : 0;
}
