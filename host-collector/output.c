// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Turning a spool into the run's output: guest-NAME.dat per guest, host.dat,
 * and manifest.json. `record` ends with this; `recover` runs only this, on
 * whatever a killed collector left.
 *
 * Every spooled page is walked once more, fully (vt_page_validate): a page
 * whose events do not chain up is moved to bad-pages/ and counted, never
 * written into a trace.dat. The spool is read as hostile too: its files were
 * made from guest data.
 *
 * Uncompressed files are made in place when they can be: the walk only
 * reads the spool's data file (CPU N's pages at N * region), then
 * fallocate() collapses the holes between the regions and inserts room at the
 * front for the file header, metadata and options (the writer lays them out
 * in a memfd, the pages declared present), and the data file is renamed into
 * place: every page is written once, at ingest. Anything else - a malformed
 * page, a CPU that overflowed its region, --keep-spool, zstd, a filesystem
 * without FALLOC_FL_COLLAPSE_RANGE/INSERT_RANGE (tmpfs) - takes the copy path.
 * Before moving extents, the marker file "inplace" records the layout, so
 * that recover can find the pages again in a file left half moved.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "vt_tracedat.h"

#define CHUNK_PAGES	256
#define STATE_MAX	(64u << 10)

struct cpu_sum {
	unsigned int cpu;
	uint64_t bytes, pages, bad_pages, events, missed_pages, lost_in_pages, frag_bytes;
	uint64_t dropped;
	uint64_t agent_bytes, agent_pages;
	char stats[2048];
};

struct trace_sum {
	char name[COLLECT_NAME_MAX];
	char file[128];
	bool host;
	bool written;
	uint64_t trace_id;
	unsigned int nr_cpus;
	uint32_t subbuf;
	char clock[64];
	char agent[128];
	char error[512];
	uint64_t protocol_errors;
	bool max_reached;
	uint32_t tids[COLLECT_MAX_CPUS];
	unsigned int nr_tids;
	struct cpu_sum cpus[COLLECT_MAX_CPUS];
	unsigned int nr_sums;
	/* sync */
	char sync_method[16];
	char sync_why[160];
	uint64_t host_end;
	struct vt_tsync_cpu sync[COLLECT_MAX_CPUS];
	uint64_t min_rtt[COLLECT_MAX_CPUS];
	uint32_t samples[COLLECT_MAX_CPUS];
	char problems[1024];
};

/* Where each CPU's pages are in a trace's spool data file. */
struct spool_data {
	int fd;				/* -1: no data file */
	uint64_t region;
	uint64_t off[COLLECT_MAX_CPUS];
	uint64_t len[COLLECT_MAX_CPUS];
	bool interrupted;		/* an in-place finish was cut short: lengths are whole pages */
};

struct run {
	const char *out;
	bool keep_spool;
	bool fsync;
	char spool[4200];
	unsigned int version;
	bool compress;
	uint64_t host_trace_id;
	uint32_t tsc_mult, tsc_shift;
	uint64_t tsc_khz;
	char tsc_method[64];
	char cmdline[8192];
	struct trace_sum *traces;
	unsigned int nr_traces;
};

/* key=value text: the value of @key, copied into @buf. */
static bool kv(const char *text, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
			const char *v = p + klen + 1;
			size_t len = strcspn(v, "\n");

			snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), v);
			return true;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return false;
}

static uint64_t kv_u64(const char *text, const char *key)
{
	char buf[32];

	return kv(text, key, buf, sizeof(buf)) ? strtoull(buf, NULL, 0) : 0;
}

static void problem(struct trace_sum *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static pthread_mutex_t problem_lock = PTHREAD_MUTEX_INITIALIZER;

static void problem(struct trace_sum *t, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	pthread_mutex_lock(&problem_lock);	/* the in-place walk runs in threads */
	len = strlen(t->problems);

	if (len && len + 3 < sizeof(t->problems)) {
		strcat(t->problems, "; ");
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(t->problems + len, sizeof(t->problems) - len, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&problem_lock);
}

static int append_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* Pages the header check set aside at ingest join the ones the walk rejects. */
static void keep_ingest_bad(struct run *r, struct trace_sum *t, const char *dir, struct cpu_sum *c,
			    const char *bad)
{
	char path[4300];
	void *data;
	size_t len;

	snprintf(path, sizeof(path), "cpu%u.bad", c->cpu);
	if (spool_read_file(dir, path, &data, &len, (size_t)1 << 30) < 0)
		return;
	c->bad_pages += len / t->subbuf;
	c->bytes += len;
	snprintf(path, sizeof(path), "%s/bad-pages", r->out);
	mkdir(path, 0755);
	append_file(bad, data, len);
	free(data);
}

/*
 * Walk @len bytes of spooled pages at @off in @fd, every page, counting into
 * @c. With a writer, good pages go to it and bad ones to @bad; without one
 * (the in-place check) the first bad page stops the walk: return 1.
 */
static int walk_pages(struct run *r, struct trace_sum *t, struct vt_tracedat *w, int fd,
		      uint64_t off, uint64_t len, struct cpu_sum *c, const char *bad)
{
	struct vt_page_fmt fmt;
	char path[4300];
	uint8_t *buf;
	ssize_t n;
	int ret = 0;

	vt_page_fmt_default(&fmt);
	fmt.subbuf_size = t->subbuf;
	buf = malloc((size_t)CHUNK_PAGES * t->subbuf);
	if (!buf)
		return -ENOMEM;
	while (len) {
		size_t have = 0, i, run = 0, run_start = 0;
		size_t want = len < (uint64_t)CHUNK_PAGES * t->subbuf ? len :
			      (size_t)CHUNK_PAGES * t->subbuf;

		while (have < want) {
			n = pread(fd, buf + have, want - have, off + have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			have += n;
		}
		off += have;
		len = have < want ? 0 : len - have;
		c->bytes += have;
		if (have % t->subbuf) {
			/* The spool only ever holds whole pages; a torn tail is a kill mid-write. */
			problem(t, "cpu%u: the spool ends %zu bytes into a page (cut at a kill)", c->cpu,
				have % t->subbuf);
			have -= have % t->subbuf;
		}
		for (i = 0; i < have / t->subbuf; i++) {
			uint8_t *p = buf + i * t->subbuf;
			struct vt_page_info info;
			uint32_t events;

			if (vt_page_validate(&fmt, p, t->subbuf, &info, &events, NULL, NULL) < 0) {
				if (!w) {
					ret = 1;
					goto out;
				}
				if (run && (ret = vt_tracedat_cpu_write(w, buf + run_start, run)) < 0)
					goto out;
				run = 0;
				run_start = (i + 1) * t->subbuf;
				c->bad_pages++;
				snprintf(path, sizeof(path), "%s/bad-pages", r->out);
				mkdir(path, 0755);
				append_file(bad, p, t->subbuf);
				continue;
			}
			c->pages++;
			c->events += events;
			c->missed_pages += info.missed;
			c->lost_in_pages += info.missed_events;
			run += t->subbuf;
		}
		if (w && run && (ret = vt_tracedat_cpu_write(w, buf + run_start, run)) < 0)
			goto out;
	}
out:
	free(buf);
	return ret;
}

static void bad_path(struct run *r, struct trace_sum *t, struct cpu_sum *c, char *bad, size_t size)
{
	snprintf(bad, size, "%s/bad-pages/%s-cpu%u.bad", r->out, t->host ? "host" : t->name, c->cpu);
}

/* Stream one CPU's spooled pages (its region, then cpuN.pages) into the writer. */
static int write_cpu(struct run *r, struct trace_sum *t, struct vt_tracedat *w, const char *dir,
		     struct cpu_sum *c, const struct spool_data *sd)
{
	char path[4300], bad[4300];
	struct stat st;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/cpu%u.pages", dir, c->cpu);
	bad_path(r, t, c, bad, sizeof(bad));
	ret = vt_tracedat_cpu_begin(w, c->cpu);
	if (ret < 0)
		return ret;
	keep_ingest_bad(r, t, dir, c, bad);
	if (sd->fd >= 0 && c->cpu < COLLECT_MAX_CPUS && sd->len[c->cpu]) {
		ret = walk_pages(r, t, w, sd->fd, sd->off[c->cpu], sd->len[c->cpu], c, bad);
		if (ret < 0)
			return ret;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vt_tracedat_cpu_end(w);	/* a CPU that sent nothing more */
	ret = fstat(fd, &st) < 0 ? -errno :
	      walk_pages(r, t, w, fd, 0, st.st_size, c, bad);
	close(fd);
	return ret ?: vt_tracedat_cpu_end(w);
}

static void load_sync(struct trace_sum *t, const char *dir)
{
	size_t len;
	char *text, *line;

	snprintf(t->sync_method, sizeof(t->sync_method), "none");
	if (spool_read_file(dir, "sync", (void **)&text, &len, STATE_MAX * 64) < 0) {
		snprintf(t->sync_why, sizeof(t->sync_why), "no clock mapping was recorded");
		return;
	}
	kv(text, "method", t->sync_method, sizeof(t->sync_method));
	kv(text, "why", t->sync_why, sizeof(t->sync_why));
	t->host_end = kv_u64(text, "host_end");
	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		struct vt_tsync_epoch ep = { 0 };
		unsigned int cpu, samples;
		uint64_t rtt;
		int source;

		if (sscanf(line, "probes cpu=%u min_rtt=%" SCNu64 " samples=%u", &cpu, &rtt,
			   &samples) == 3 && cpu < COLLECT_MAX_CPUS) {
			t->min_rtt[cpu] = rtt;
			t->samples[cpu] = samples;
			continue;
		}
		if (sscanf(line, "epoch cpu=%u from=%" SCNu64 " offset=%" SCNd64 " ratio=%" SCNu64
			   " frac=%u source=%d flags=%u error=%" SCNu64 " min_rtt=%" SCNu64, &cpu,
			   &ep.host_from, &ep.map.offset, &ep.map.ratio, &ep.map.frac_bits, &source,
			   &ep.flags, &ep.error, &ep.min_rtt) < 8 || cpu >= t->nr_cpus || cpu >= COLLECT_MAX_CPUS ||
		    !vt_tsc_map_valid(&ep.map))
			continue;
		ep.source = source;
		if (vt_tsync_cpu_update(&t->sync[cpu], &ep) < 0)
			break;
	}
	free(text);
}

/* TIME_SHIFT: the guest's timestamps onto the host's, per vCPU, exactly as trace-cmd applies it. */
static int add_time_shift(struct run *r, struct trace_sum *t, struct vt_tracedat *w)
{
	struct vt_tracedat_tshift_cpu *view = calloc(t->nr_cpus, sizeof(*view));
	struct vt_tsync_tshift *tables = calloc(t->nr_cpus, sizeof(*tables));
	bool interp = vt_tsync_needs_interpolate(t->sync, t->nr_cpus);
	unsigned int cpu;
	int ret = 0;

	if (!view || !tables) {
		ret = -ENOMEM;
		goto out;
	}
	for (cpu = 0; cpu < t->nr_cpus; cpu++) {
		if (!t->sync[cpu].nr)
			continue;
		ret = vt_tsync_tshift_build(t->sync[cpu].epochs, t->sync[cpu].nr, t->host_end, interp,
					    &tables[cpu]);
		if (ret < 0) {
			problem(t, "cpu%u: cannot express the clock mapping as TIME_SHIFT (%s)", cpu,
				strerror(-ret));
			goto out;
		}
		vt_tsync_tshift_view(&tables[cpu], &view[cpu]);
	}
	ret = vt_tracedat_add_time_shift(w, r->host_trace_id, interp ? VT_TD_TSHIFT_INTERPOLATE : 0,
					 t->nr_cpus, view);
out:
	for (cpu = 0; tables && cpu < t->nr_cpus; cpu++)
		vt_tsync_tshift_free(&tables[cpu]);
	free(tables);
	free(view);
	return ret;
}

static int add_guests(struct run *r, struct vt_tracedat *w)
{
	unsigned int i;
	int ret;

	for (i = 0; i < r->nr_traces; i++) {
		struct trace_sum *t = &r->traces[i];
		uint32_t tids[COLLECT_MAX_CPUS] = { 0 };

		if (t->host || !t->written)
			continue;
		memcpy(tids, t->tids, sizeof(uint32_t) * t->nr_tids);
		ret = vt_tracedat_add_guest(w, t->name, t->trace_id, t->nr_cpus, tids);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * An in-place finish was cut short: the marker says where each CPU's pages
 * were and which moves were planned; the file's size says how many were made.
 */
static int resume_layout(struct trace_sum *t, struct spool_data *sd, const char *text)
{
	uint64_t size0 = kv_u64(text, "size0"), head = kv_u64(text, "head"), sz, total = 0, amt;
	unsigned int n = kv_u64(text, "nr_cpus"), i, j, k = 0;
	char key[32];
	struct stat st;

	if (fstat(sd->fd, &st) < 0)
		return -errno;
	sd->region = kv_u64(text, "region");
	if (!sd->region || n > COLLECT_MAX_CPUS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "len%u", i);
		sd->len[i] = kv_u64(text, key);
		sd->off[i] = (uint64_t)i * sd->region;
		if (sd->len[i] > sd->region)
			return -EINVAL;
		total += sd->len[i];
		if (sd->len[i])
			k = i;
	}
	for (; i < COLLECT_MAX_CPUS; i++)
		sd->len[i] = 0;
	sz = size0;
	for (i = k; i-- > 0;) {
		amt = sd->region - sd->len[i];
		if (!amt)
			continue;
		if ((uint64_t)st.st_size == sz)
			return 0;
		sz -= amt;
		for (j = i + 1; j < n; j++)
			sd->off[j] -= amt;
	}
	if ((uint64_t)st.st_size == sz || (uint64_t)st.st_size == total)
		return 0;
	if ((uint64_t)st.st_size >= total + head) {
		for (i = 0; i < n; i++)
			sd->off[i] += head;
		return 0;
	}
	problem(t, "the spool's data file is %lld bytes, which no step of the in-place finish "
		   "leaves", (long long)st.st_size);
	return -EINVAL;
}

/* Find each CPU's pages in the trace's data file, if it has one. */
static int load_data(struct trace_sum *t, const char *dir, struct spool_data *sd)
{
	char path[4300], *text;
	unsigned int i;
	size_t len;
	int ret;

	memset(sd, 0, sizeof(*sd));
	snprintf(path, sizeof(path), "%s/data", dir);
	sd->fd = open(path, O_RDWR | O_CLOEXEC);
	if (sd->fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (spool_read_file(dir, "inplace", (void **)&text, &len, STATE_MAX) == 0) {
		sd->interrupted = true;
		ret = resume_layout(t, sd, text);
		free(text);
		return ret;
	}
	ret = spool_data_region(dir, &sd->region);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		sd->off[i] = (uint64_t)i * sd->region;
		ret = spool_data_len(sd->fd, sd->region, i, &sd->len[i]);
	}
	return ret;
}

/* Whether this filesystem moves extents: try it on a small scratch file in @dir. */
static bool can_move_extents(const char *dir, unsigned long blk)
{
	char path[4300];
	uint8_t *buf = calloc(3, blk);
	bool ok = false;
	int fd;

	snprintf(path, sizeof(path), "%s/probe", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0 && buf && pwrite(fd, buf, 3 * blk, 0) == (ssize_t)(3 * blk))
		ok = fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, blk) == 0 &&
		     fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, blk) == 0;
	if (fd >= 0)
		close(fd);
	unlink(path);
	free(buf);
	return ok;
}

static int copy_range(int from, int to, uint64_t off, uint64_t len)
{
	uint8_t buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		ssize_t got = pread(from, buf, n, off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		if (pwrite(to, buf, got, off) != got)
			return -EIO;
		off += got;
		len -= got;
	}
	return 0;
}

/* The options, CPU statistics and so on that go in every trace file. */
static int add_options(struct run *r, struct trace_sum *t, struct vt_tracedat *w, const char *dir)
{
	unsigned int i;
	size_t len;
	int ret;

	if (r->tsc_mult)
		vt_tracedat_set_tsc2nsec(w, r->tsc_mult, r->tsc_shift, 0);
	if (t->host)
		ret = add_guests(r, w);
	else
		ret = add_time_shift(r, t, w);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		char name[32], *text;

		snprintf(name, sizeof(name), "cpu%u.stats", i);
		if (spool_read_file(dir, name, (void **)&text, &len, 8192) == 0) {
			collect_sanitize(t->cpus[i].stats, sizeof(t->cpus[i].stats), text, true);
			if (len)
				ret = vt_tracedat_add_cpustat(w, i, t->cpus[i].stats,
							      strlen(t->cpus[i].stats));
			free(text);
		}
	}
	return ret;
}

/* The in-place walk, in pieces over a few threads: it reads, so it takes CPU time. */
#define WALK_PIECE	(16ull << 20)
#define WALK_THREADS	8

struct walk_job {
	unsigned int cpu;
	uint64_t off, len;
	struct cpu_sum sum;
	int ret;
};

struct walk {
	struct run *r;
	struct trace_sum *t;
	int fd;
	struct walk_job *jobs;
	unsigned int nr;
	atomic_uint next;
	atomic_bool stop;
};

static void *walk_thread(void *arg)
{
	struct walk *wk = arg;
	unsigned int i;

	while (!atomic_load(&wk->stop) && (i = atomic_fetch_add(&wk->next, 1)) < wk->nr) {
		struct walk_job *j = &wk->jobs[i];

		j->sum.cpu = j->cpu;
		j->ret = walk_pages(wk->r, wk->t, NULL, wk->fd, j->off, j->len, &j->sum, NULL);
		if (j->ret)
			atomic_store(&wk->stop, true);
	}
	return NULL;
}

/*
 * Write the file's dirty pages back and wait: sync_file_range() first, as
 * ext4's fdatasync() alone writes a large delayed-allocation file back far
 * more slowly (measured: 64 MiB in 340-450 ms, against 11 ms + 30 ms). The
 * fdatasync() makes the data and the size durable; the name is the output
 * directory's fsync (write_manifest()).
 */
static int flush_file(int fd)
{
	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			SYNC_FILE_RANGE_WAIT_AFTER);
	return fdatasync(fd);
}

static void *sync_thread(void *arg)
{
	flush_file(*(int *)arg);
	return NULL;
}

/*
 * What the collector counted while it validated CPU @cpu's pages on the way
 * in (cpuN.sums, see stream_close()), when it covers exactly the @len bytes
 * its region holds. Return: true with @c filled.
 */
static bool ingest_sums(const char *dir, unsigned int cpu, uint64_t len, uint32_t subbuf,
			struct cpu_sum *c)
{
	unsigned long long l, pages, events, missed, lost;
	char path[4300], text[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/cpu%u.sums", dir, cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = 0;
	if (sscanf(text, "len=%llu pages=%llu events=%llu missed_pages=%llu lost=%llu", &l, &pages,
		   &events, &missed, &lost) != 5 || l != len || !subbuf || pages * subbuf != len)
		return false;
	c->bytes += len;
	c->pages += pages;
	c->events += events;
	c->missed_pages += missed;
	c->lost_in_pages += lost;
	return true;
}

/*
 * Walk every CPU's pages of @sd (read only), adding to t->cpus; a CPU whose
 * pages were counted on the way in (ingest_sums()) is not read again.
 * Return: 0, 1 at a malformed page (with *@bad_cpu), or -errno.
 */
static int walk_all(struct run *r, struct trace_sum *t, const char *dir, struct spool_data *sd,
		    unsigned int n, unsigned int *bad_cpu)
{
	bool counted[COLLECT_MAX_CPUS] = { false };
	struct walk wk = { .r = r, .t = t, .fd = sd->fd };
	pthread_t th[WALK_THREADS];
	unsigned int i, nr_th = 0, want;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t o, piece = WALK_PIECE - WALK_PIECE % t->subbuf;	/* whole pages */
	int ret = 0;

	if (!piece)
		piece = t->subbuf;
	for (i = 0; i < n; i++)
		counted[i] = !sd->interrupted &&
			     ingest_sums(dir, i, sd->len[i], t->subbuf, &t->cpus[i]);
	for (i = 0; i < n; i++)
		if (!counted[i])
			wk.nr += (sd->len[i] + piece - 1) / piece;
	wk.jobs = calloc(wk.nr ? wk.nr : 1, sizeof(*wk.jobs));
	if (!wk.jobs)
		return -ENOMEM;
	wk.nr = 0;
	for (i = 0; i < n; i++) {
		for (o = 0; !counted[i] && o < sd->len[i]; o += piece) {
			struct walk_job *j = &wk.jobs[wk.nr++];

			j->cpu = i;
			j->off = sd->off[i] + o;
			j->len = sd->len[i] - o < piece ? sd->len[i] - o : piece;
		}
	}
	want = online > 1 ? (online < WALK_THREADS ? online : WALK_THREADS) : 1;
	if (want > wk.nr)
		want = wk.nr;
	for (i = 1; i < want; i++)
		if (pthread_create(&th[nr_th], NULL, walk_thread, &wk) == 0)
			nr_th++;
	walk_thread(&wk);
	for (i = 0; i < nr_th; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < wk.nr; i++) {
		struct walk_job *j = &wk.jobs[i];
		struct cpu_sum *c = &t->cpus[j->cpu];

		if (j->ret && !ret) {
			ret = j->ret;
			*bad_cpu = j->cpu;
		}
		c->bytes += j->sum.bytes;
		c->pages += j->sum.pages;
		c->events += j->sum.events;
		c->missed_pages += j->sum.missed_pages;
		c->lost_in_pages += j->sum.lost_in_pages;
	}
	free(wk.jobs);
	return ret;
}

/*
 * Make the trace file out of the spool's data file in place (see the top of
 * this file). Return: 0 when the file is in place at @path; 1 when the copy
 * path must do it (@sd then says where the pages are); -ENOMEM.
 */
static int write_inplace(struct run *r, struct trace_sum *t, const char *dir,
			 const struct vt_meta *meta, const struct vt_tracedat_opts *opts,
			 struct spool_data *sd, const char *path)
{
	uint64_t off[COLLECT_MAX_CPUS], len[COLLECT_MAX_CPUS], total = 0, head = 0, expect, size0;
	char marker[8192], name[4300], bad[4300];
	struct cpu_sum *saved = NULL;
	char problems[sizeof(t->problems)];
	struct vt_tracedat *w = NULL;
	unsigned int i, k = 0, n = t->nr_cpus;
	struct statfs sfs;
	struct stat st;
	pthread_t sync_th;
	bool synced;
	int mfd = -1, ret, m;

	if (sd->fd < 0 || sd->interrupted || r->keep_spool || opts->compression == VT_TD_COMPRESS_ZSTD)
		return 1;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s/cpu%u.pages", dir, i);
		if (stat(name, &st) == 0 && st.st_size > 0) {
			log_info("%s: cpu%u overflowed its spool region: copying", t->file, i);
			return 1;
		}
	}
	if (fstatfs(sd->fd, &sfs) < 0 || fstat(sd->fd, &st) < 0 || !sfs.f_bsize ||
	    t->subbuf % sfs.f_bsize || sd->region % sfs.f_bsize)
		return 1;
	if (!can_move_extents(dir, sfs.f_bsize)) {
		log_info("%s: this filesystem cannot move extents (fallocate collapse/insert "
			 "range): copying the pages", t->file);
		return 1;
	}
	size0 = st.st_size;
	saved = malloc(sizeof(t->cpus));
	if (!saved)
		return -ENOMEM;
	memcpy(saved, t->cpus, sizeof(t->cpus));
	memcpy(problems, t->problems, sizeof(problems));
	/*
	 * The walk: read only. One malformed page and the copy path sets it
	 * aside. Meanwhile, with --fsync, the pages go to the disk.
	 */
	for (i = 0; i < n; i++) {
		len[i] = sd->len[i] - sd->len[i] % t->subbuf;
		total += len[i];
		if (len[i])
			k = i;
		t->cpus[i].cpu = i;
	}
	synced = r->fsync && pthread_create(&sync_th, NULL, sync_thread, &sd->fd) == 0;
	ret = walk_all(r, t, dir, sd, n, &i);
	if (synced)
		pthread_join(sync_th, NULL);
	if (ret) {
		if (ret > 0)
			log_info("%s: cpu%u has a malformed page: copying", t->file, i);
		goto fallback;
	}
	if (!total) {
		ret = 1;
		goto fallback;
	}
	/* The file around the pages, laid out in memory. */
	mfd = memfd_create("vt-tracedat", MFD_CLOEXEC);
	w = mfd >= 0 ? vt_tracedat_create(mfd, meta, opts) : NULL;
	if (!w) {
		ret = -errno;
		goto fallback;
	}
	ret = add_options(r, t, w, dir);
	for (i = 0; ret == 0 && i < n; i++)
		ret = vt_tracedat_cpu_present(w, i, len[i], &off[i]);
	ret = ret ?: vt_tracedat_finish(w);
	vt_tracedat_free(w);
	if (ret < 0)
		goto fallback;
	head = off[0];
	for (i = 0, expect = head; i < n; expect += len[i], i++)
		if (off[i] != expect)
			break;
	if (i < n || head % sfs.f_bsize) {
		ret = 1;
		goto fallback;
	}
	/* From here the data file changes: the marker lets recover find the pages. */
	m = snprintf(marker, sizeof(marker), "region=%llu\nhead=%llu\nsize0=%llu\nnr_cpus=%u\n",
		     (unsigned long long)sd->region, (unsigned long long)head,
		     (unsigned long long)size0, n);
	for (i = 0; i < n && m < (int)sizeof(marker) - 40; i++)
		m += snprintf(marker + m, sizeof(marker) - m, "len%u=%llu\n", i,
			      (unsigned long long)len[i]);
	ret = spool_write_file(dir, "inplace", marker, m);
	if (ret < 0)
		goto fallback;
	sd->interrupted = true;		/* lengths are now the whole pages */
	for (i = 0; i < n; i++)
		sd->len[i] = len[i];
	for (i = k; i-- > 0;) {
		uint64_t amt = sd->region - len[i];
		unsigned int j;

		if (!amt)
			continue;
		if (fallocate(sd->fd, FALLOC_FL_COLLAPSE_RANGE, (off_t)sd->off[i] + len[i], amt) < 0) {
			ret = -errno;
			goto moved;
		}
		for (j = i + 1; j < n; j++)
			sd->off[j] -= amt;
	}
	if (ftruncate(sd->fd, total) < 0 ||
	    fallocate(sd->fd, FALLOC_FL_INSERT_RANGE, 0, head) < 0) {
		ret = -errno;
		goto moved;
	}
	for (i = 0; i < n; i++)
		sd->off[i] += head;
	if (fstat(mfd, &st) < 0) {
		ret = -errno;
		goto moved;
	}
	ret = copy_range(mfd, sd->fd, 0, head);
	if (ret == 0 && (uint64_t)st.st_size > head + total)
		ret = copy_range(mfd, sd->fd, head + total, st.st_size - (head + total));
	if (ret < 0)
		goto moved;
	snprintf(name, sizeof(name), "%s/data", dir);
	if ((r->fsync && fsync(sd->fd) < 0) || rename(name, path) < 0) {
		ret = -errno;
		goto moved;
	}
	/* The marker stays until the spool goes: recover must not redo this file. */
	for (i = 0; i < n; i++) {
		bad_path(r, t, &t->cpus[i], bad, sizeof(bad));
		keep_ingest_bad(r, t, dir, &t->cpus[i], bad);
	}
	log_info("%s: %llu bytes of pages moved in place, not copied", t->file,
		 (unsigned long long)total);
	close(mfd);
	free(saved);
	return 0;
moved:
	log_warn("%s: moving the pages in place failed (%s): copying them", t->file,
		 strerror(-ret));
	ret = 1;
fallback:
	if (ret < 0) {
		log_info("%s: cannot lay the file out in place (%s): copying", t->file,
			 strerror(-ret));
		ret = 1;
	}
	if (mfd >= 0)
		close(mfd);
	memcpy(t->cpus, saved, sizeof(t->cpus));
	memcpy(t->problems, problems, sizeof(problems));
	free(saved);
	return ret;
}

static int write_trace(struct run *r, struct trace_sum *t, const char *dir)
{
	struct vt_tracedat_opts opts = {
		.version = r->version,
		.compression = r->compress ? VT_TD_COMPRESS_ZSTD : VT_TD_COMPRESS_NONE,
		.trace_id = t->trace_id,
	};
	char path[4300], tmp[4310];
	struct spool_data sd = { .fd = -1 };
	struct vt_tracedat *w;
	struct vt_meta meta;
	size_t len;
	void *blob;
	unsigned int i;
	int fd, ret;

	ret = spool_read_file(dir, "meta.bin", &blob, &len, VT_META_MAX_TOTAL);
	if (ret < 0) {
		problem(t, "no metadata was received, so no trace.dat can be written; the pages "
			   "stay in %s", dir);
		return ret;
	}
	ret = vt_meta_decode(&meta, blob, len);
	free(blob);
	if (ret < 0) {
		problem(t, "the spooled metadata is malformed (%s)", strerror(-ret));
		return ret;
	}
	t->nr_cpus = meta.nr_cpus < COLLECT_MAX_CPUS ? meta.nr_cpus : COLLECT_MAX_CPUS;
	t->subbuf = meta.subbuf_size;
	snprintf(path, sizeof(path), "%s/%s", r->out, t->file);
	snprintf(tmp, sizeof(tmp), "%s/inplace", dir);
	ret = load_data(t, dir, &sd);
	if (ret < 0)
		goto out_meta;
	if (sd.fd < 0 && access(tmp, F_OK) == 0 && access(path, F_OK) == 0) {
		/* Killed between renaming the moved file into place and removing the spool. */
		problem(t, "%s was finished in place before the kill: its page counts are not in "
			   "this manifest", t->file);
		t->nr_sums = t->nr_cpus;
		t->written = true;
		goto out_meta;
	}
	ret = write_inplace(r, t, dir, &meta, &opts, &sd, path);
	if (ret == 0) {
		t->nr_sums = t->nr_cpus;
		t->written = true;
		goto out_meta;
	}
	if (ret < 0) {
		problem(t, "cannot write %s: %s", t->file, strerror(-ret));
		goto out_meta;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out_meta;
	}
	w = vt_tracedat_create(fd, &meta, &opts);
	if (!w) {
		ret = -errno;
		goto out_close;
	}
	ret = add_options(r, t, w, dir);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		t->cpus[i].cpu = i;
		ret = write_cpu(r, t, w, dir, &t->cpus[i], &sd);
	}
	t->nr_sums = t->nr_cpus;
	if (ret == 0)
		ret = vt_tracedat_finish(w);
	vt_tracedat_free(w);
	if (ret == 0 && ((r->fsync && flush_file(fd) < 0) || rename(tmp, path) < 0))
		ret = -errno;
out_close:
	close(fd);
	if (ret < 0) {
		unlink(tmp);
		problem(t, "cannot write %s: %s", t->file, strerror(-ret));
	} else {
		t->written = true;
	}
out_meta:
	if (sd.fd >= 0)
		close(sd.fd);
	vt_meta_free(&meta);
	return ret;
}

static void load_trace(struct run *r, struct trace_sum *t, const char *dir, bool host)
{
	char *state = NULL, buf[1024], key[32];
	unsigned int i;
	size_t len;

	t->host = host;
	if (host) {
		snprintf(t->name, sizeof(t->name), "host");
		snprintf(t->file, sizeof(t->file), "host.dat");
		t->trace_id = r->host_trace_id;
		snprintf(t->clock, sizeof(t->clock), "x86-tsc");
		return;
	}
	if (spool_read_file(dir, "state", (void **)&state, &len, STATE_MAX) < 0) {
		problem(t, "no state file in %s", dir);
		return;
	}
	kv(state, "name", buf, sizeof(buf));
	collect_sanitize(t->name, sizeof(t->name), buf, false);
	snprintf(t->file, sizeof(t->file), "guest-%s.dat", t->name);
	t->trace_id = kv_u64(state, "trace_id");
	t->nr_cpus = kv_u64(state, "nr_cpus");
	if (t->nr_cpus > COLLECT_MAX_CPUS)
		t->nr_cpus = COLLECT_MAX_CPUS;
	for (i = 0; i < t->nr_cpus; i++)
		t->cpus[i].cpu = i;
	kv(state, "clock", t->clock, sizeof(t->clock));
	kv(state, "agent", t->agent, sizeof(t->agent));
	if (kv(state, "error", buf, sizeof(buf)) && buf[0])
		problem(t, "%s", buf);
	t->protocol_errors = kv_u64(state, "protocol_errors");
	if (t->protocol_errors)
		problem(t, "%" PRIu64 " protocol errors on the control port", t->protocol_errors);
	t->max_reached = kv_u64(state, "max_reached");
	if (kv(state, "vcpu_tids", buf, sizeof(buf))) {
		char *p = buf;

		while (*p && t->nr_tids < COLLECT_MAX_CPUS) {
			t->tids[t->nr_tids++] = strtoul(p, &p, 10);
			if (*p != ',')
				break;
			p++;
		}
	}
	for (i = 0; i < t->nr_cpus; i++) {
		snprintf(key, sizeof(key), "dropped%u", i);
		t->cpus[i].dropped = kv_u64(state, key);
	}
	free(state);
	if (spool_read_file(dir, "agent", (void **)&state, &len, STATE_MAX) == 0) {
		for (i = 0; i < t->nr_cpus; i++) {
			snprintf(key, sizeof(key), "bytes%u", i);
			t->cpus[i].agent_bytes = kv_u64(state, key);
			snprintf(key, sizeof(key), "pages%u", i);
			t->cpus[i].agent_pages = kv_u64(state, key);
		}
		free(state);
	} else {
		problem(t, "no final statistics from the agent (the run was cut short)");
	}
	load_sync(t, dir);
}

static void frag_sizes(struct trace_sum *t, const char *dir)
{
	unsigned int i;

	for (i = 0; i < t->nr_cpus; i++) {
		char path[4300];
		struct stat st;

		snprintf(path, sizeof(path), "%s/cpu%u.frag", dir, i);
		if (stat(path, &st) == 0) {
			t->cpus[i].frag_bytes = st.st_size;
			t->cpus[i].bytes += st.st_size;
			problem(t, "cpu%u: the stream ended %lld bytes into a page", i,
				(long long)st.st_size);
		}
	}
}

/* --- manifest.json --- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
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

static double ticks_ns(const struct run *r, uint64_t ticks)
{
	return r->tsc_khz ? ticks * 1e6 / r->tsc_khz : 0;
}

static void json_trace(FILE *f, const struct run *r, const struct trace_sum *t)
{
	uint64_t overrun = 0, lost_pages = 0, dropped = 0;
	double bound = 0;
	unsigned int i, j;
	bool first;

	fprintf(f, "    {\n      \"name\": ");
	json_str(f, t->name);
	fprintf(f, ",\n      \"file\": ");
	if (t->written)
		json_str(f, t->file);
	else
		fprintf(f, "null");
	if (!t->host) {
		/* record --last-boot's file (lastboot.c): another boot, another clock. */
		char lb[4400];
		struct stat st;

		snprintf(lb, sizeof(lb), "%s/guest-%s.lastboot.dat", r->out, t->name);
		if (stat(lb, &st) == 0) {
			fprintf(f, ",\n      \"last_boot_file\": ");
			json_str(f, strrchr(lb, '/') + 1);
			fprintf(f, ",\n      \"last_boot_note\": \"the previous boot's trace: that "
				"boot's own clock, not synchronised with the host\"");
		}
	}
	fprintf(f, ",\n      \"trace_id\": \"0x%016" PRIx64 "\",\n      \"clock\": ", t->trace_id);
	json_str(f, t->clock);
	fprintf(f, ",\n      \"cpus\": [\n");
	for (i = 0; i < t->nr_sums; i++) {
		const struct cpu_sum *c = &t->cpus[i];
		uint64_t ov = stat_field(c->stats, "overrun");

		overrun += ov;
		lost_pages += c->lost_in_pages;
		dropped += c->dropped;
		fprintf(f, "        { \"cpu\": %u, \"bytes\": %" PRIu64 ", \"pages\": %" PRIu64
			", \"events\": %" PRIu64 ", \"bad_pages\": %" PRIu64
			", \"pages_after_loss\": %" PRIu64 ", \"lost_events_in_pages\": %" PRIu64
			", \"fragment_bytes\": %" PRIu64 ", \"dropped_pages_max_size\": %" PRIu64,
			c->cpu, c->bytes, c->pages, c->events, c->bad_pages, c->missed_pages,
			c->lost_in_pages, c->frag_bytes, c->dropped);
		if (!t->host)
			fprintf(f, ", \"agent_bytes\": %" PRIu64 ", \"agent_pages\": %" PRIu64,
				c->agent_bytes, c->agent_pages);
		fprintf(f, ", \"stats\": { \"entries\": %" PRIu64 ", \"overrun\": %" PRIu64
			", \"commit_overrun\": %" PRIu64 ", \"dropped_events\": %" PRIu64
			", \"read_events\": %" PRIu64 " } }%s\n",
			stat_field(c->stats, "entries"), ov, stat_field(c->stats, "commit overrun"),
			stat_field(c->stats, "dropped events"), stat_field(c->stats, "read events"),
			i + 1 < t->nr_sums ? "," : "");
	}
	fprintf(f, "      ],\n      \"lost_events\": { \"in_pages\": %" PRIu64 ", \"overrun\": %"
		PRIu64 " },\n", lost_pages, overrun);
	if (!t->host) {
		fprintf(f, "      \"agent\": ");
		json_str(f, t->agent);
		fprintf(f, ",\n      \"vcpu_threads\": [");
		for (i = 0; i < t->nr_tids; i++)
			fprintf(f, "%s%u", i ? ", " : "", t->tids[i]);
		fprintf(f, "],\n      \"sync\": {\n        \"method\": ");
		json_str(f, t->sync_method);
		fprintf(f, ",\n        \"why\": ");
		json_str(f, t->sync_why);
		fprintf(f, ",\n        \"epochs\": [");
		for (i = 0, first = true; i < t->nr_cpus; i++) {
			for (j = 0; j < t->sync[i].nr; j++) {
				const struct vt_tsync_epoch *ep = &t->sync[i].epochs[j];

				if (ticks_ns(r, ep->error) > bound)
					bound = ticks_ns(r, ep->error);
				fprintf(f, "%s\n          { \"cpu\": %u, \"host_tsc_from\": %" PRIu64
					", \"offset\": %" PRId64 ", \"ratio\": %" PRIu64
					", \"frac_bits\": %u, \"source\": \"%s\", \"drift\": %s"
					", \"bound_ns\": %.1f, \"min_rtt_ns\": %.1f }",
					first ? "" : ",", i, ep->host_from,
					ep->map.offset, ep->map.ratio, ep->map.frac_bits,
					vt_tsync_source_name(ep->source),
					ep->flags & VT_TSYNC_EPOCH_DRIFT ? "true" : "false",
					ticks_ns(r, ep->error), ticks_ns(r, ep->min_rtt));
				first = false;
			}
		}
		fprintf(f, "\n        ],\n        \"probes\": [");
		for (i = 0, first = true; i < t->nr_cpus; i++) {
			if (!t->samples[i])
				continue;
			fprintf(f, "%s\n          { \"cpu\": %u, \"samples\": %u, \"min_rtt_ns\": %.1f }",
				first ? "" : ",", i, t->samples[i], ticks_ns(r, t->min_rtt[i]));
			first = false;
		}
		fprintf(f, "\n        ],\n");
		fprintf(f, "        \"bound_ns\": %.1f\n      },\n", bound);
		fprintf(f, "      \"max_size_reached\": %s,\n", t->max_reached ? "true" : "false");
	}
	(void)dropped;
	fprintf(f, "      \"problems\": ");
	json_str(f, t->problems);
	fprintf(f, "\n    }");
}

static int write_manifest(struct run *r, bool recovered)
{
	char path[4300], tmp[4310], date[64];
	time_t now = time(NULL);
	unsigned int i;
	bool first = true;
	FILE *f;

	snprintf(path, sizeof(path), "%s/manifest.json", r->out);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "{\n  \"tool\": \"virtio-trace-collect\",\n  \"version\": \"%s\",\n"
		"  \"created\": \"%s\",\n  \"recovered\": %s,\n  \"command_line\": ",
		PACKAGE_VERSION, date, recovered ? "true" : "false");
	json_str(f, r->cmdline);
	fprintf(f, ",\n  \"file_version\": %u,\n  \"compression\": \"%s\",\n"
		"  \"host_tsc\": { \"khz\": %" PRIu64 ", \"method\": ", r->version,
		r->compress && r->version >= 7 ? "zstd" : "none", r->tsc_khz);
	json_str(f, r->tsc_method);
	fprintf(f, ", \"tsc2nsec_mult\": %u, \"tsc2nsec_shift\": %u },\n  \"host\": ",
		r->tsc_mult, r->tsc_shift);
	for (i = 0; i < r->nr_traces; i++)
		if (r->traces[i].host)
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
		if (r->traces[i].host)
			continue;
		if (!first)
			fprintf(f, ",\n");
		json_trace(f, r, &r->traces[i]);
		first = false;
	}
	fprintf(f, "\n  ]\n}\n");
	if (r->fsync && (fflush(f) != 0 || fsync(fileno(f)) < 0)) {
		fclose(f);
		return -errno;
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	if (r->fsync) {
		int dfd = open(r->out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	return 0;
}

static int remove_tree(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	char path[4300];

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	return rmdir(dir) < 0 ? -errno : 0;
}

/**
 * output_finalise() - write the trace.dat files and manifest.json from the spool
 * @out_dir: the output directory holding .spool/
 * @o: options, for --keep-spool (may be NULL)
 * @recovering: this is `recover` after a killed run
 *
 * Return: EXIT_OK, EXIT_PARTIAL (files written, some trace had problems) or
 * EXIT_FAIL (nothing written).
 */
int output_finalise(const char *out_dir, const struct collect_opts *o, bool recovering)
{
	struct run r = { .out = out_dir, .keep_spool = o && o->keep_spool, .fsync = o && o->fsync };
	char *opts = NULL, dir[4300];
	struct dirent *de;
	unsigned int i, written = 0, troubled = 0;
	size_t len;
	DIR *d;
	int ret;

	snprintf(r.spool, sizeof(r.spool), "%s/.spool", out_dir);
	if (spool_read_file(r.spool, "options", (void **)&opts, &len, STATE_MAX) < 0) {
		log_err("%s holds no spool (%s/options is missing): nothing to recover", out_dir,
			r.spool);
		return EXIT_FAIL;
	}
	r.version = kv_u64(opts, "file_version");
	if (r.version != 6 && r.version != 7)
		r.version = 7;
	r.compress = kv_u64(opts, "compress");
	r.host_trace_id = kv_u64(opts, "host_trace_id");
	r.tsc_khz = kv_u64(opts, "tsc_khz");
	r.tsc_mult = kv_u64(opts, "tsc_mult");
	r.tsc_shift = kv_u64(opts, "tsc_shift");
	kv(opts, "tsc_method", r.tsc_method, sizeof(r.tsc_method));
	kv(opts, "cmdline", r.cmdline, sizeof(r.cmdline));
	free(opts);

	d = opendir(r.spool);
	if (!d)
		return EXIT_FAIL;
	r.traces = calloc(COLLECT_MAX_GUESTS + 1, sizeof(*r.traces));
	if (!r.traces) {
		closedir(d);
		return EXIT_FAIL;
	}
	while ((de = readdir(d)) && r.nr_traces < COLLECT_MAX_GUESTS + 1) {
		bool host = strcmp(de->d_name, "host") == 0;

		if (!host && strncmp(de->d_name, "guest-", 6) != 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", r.spool, de->d_name);
		load_trace(&r, &r.traces[r.nr_traces], dir, host);
		r.nr_traces++;
	}
	closedir(d);
	/* Guests first: the host file names them in its GUEST options. */
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];

		if (t->host)
			continue;
		snprintf(dir, sizeof(dir), "%s/guest-%s", r.spool, t->name);
		frag_sizes(t, dir);
		if (write_trace(&r, t, dir) == 0)
			written++;
	}
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];

		if (!t->host)
			continue;
		snprintf(dir, sizeof(dir), "%s/host", r.spool);
		if (write_trace(&r, t, dir) == 0)
			written++;
	}
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];
		unsigned int c;

		for (c = 0; c < t->nr_sums; c++)
			if (t->cpus[c].bad_pages)
				problem(t, "cpu%u: %" PRIu64 " malformed pages kept aside in bad-pages/", c,
					t->cpus[c].bad_pages);
		if (t->problems[0]) {
			troubled++;
			log_warn("%s: %s", t->name, t->problems);
		}
	}
	ret = write_manifest(&r, recovering);
	if (ret < 0)
		log_err("cannot write %s/manifest.json: %s", out_dir, strerror(-ret));
	/* The spool goes only when every trace made it into a file. */
	if (ret == 0 && written == r.nr_traces && !(o && o->keep_spool))
		remove_tree(r.spool);
	else if (written != r.nr_traces)
		log_warn("the spool %s is kept: not every trace could be written", r.spool);
	for (i = 0; i < r.nr_traces; i++)
		for (unsigned int c = 0; c < COLLECT_MAX_CPUS; c++)
			vt_tsync_cpu_free(&r.traces[i].sync[c]);
	free(r.traces);
	if (!written)
		return EXIT_FAIL;
	return troubled || ret < 0 ? EXIT_PARTIAL : EXIT_OK;
}
