// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The in-place finish: an uncompressed trace.dat made of the spool's data
 * file itself. The walk only reads it (CPU N's pages at N * region; a CPU
 * whose pages were counted at ingest is not read at all), then fallocate()
 * collapses the holes between the regions and inserts room at the front for
 * the file header, metadata and options (the writer lays them out in a
 * memfd, the pages declared present), and the data file is renamed into
 * place: every page is written once, at ingest. Anything else - a malformed
 * page, a CPU that overflowed its region, --keep-spool, zstd, a filesystem
 * without FALLOC_FL_COLLAPSE_RANGE/INSERT_RANGE (tmpfs) - takes output.c's
 * copy path. Before moving extents, the spool's in-place marker records the
 * layout, so that recover can find the pages again in a file left half moved.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "write.h"

/*
 * An in-place finish was cut short: the marker says where each CPU's pages
 * were and which moves were planned; the file's size says how many were made.
 */
static int resume_layout(struct trace_sum *t, struct spool_data *sd, const struct spool_inplace *m)
{
	uint64_t size0 = m->size0, head = m->head, sz, total = 0, amt;
	unsigned int n = m->nr_cpus, i, j, k = 0;
	struct stat st;

	if (fstat(sd->fd, &st) < 0)
		return -errno;
	sd->region = m->region;
	for (i = 0; i < n; i++) {
		sd->len[i] = m->len[i];
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
	output_problem(t, "the spool's data file is %lld bytes, which no step of the in-place finish "
		   "leaves", (long long)st.st_size);
	return -EINVAL;
}

/* Find each CPU's pages in the trace's data file, if it has one. */
int inplace_load_data(struct trace_sum *t, int dir, struct spool_data *sd)
{
	struct spool_inplace m;
	unsigned int i;
	int ret;

	memset(sd, 0, sizeof(*sd));
	sd->fd = spool_data_fd(dir);
	if (sd->fd < 0)
		return sd->fd == -ENOENT ? (sd->fd = -1, 0) : sd->fd;
	ret = spool_load_inplace(dir, &m);
	if (ret != -ENOENT) {
		sd->interrupted = true;
		if (ret < 0) {
			output_problem(t, "the in-place marker makes no sense (%s)", strerror(-ret));
			return ret;
		}
		return resume_layout(t, sd, &m);
	}
	ret = spool_data_region(dir, &sd->region);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		sd->off[i] = (uint64_t)i * sd->region;
		ret = spool_data_len(sd->fd, sd->region, i, &sd->len[i]);
	}
	return ret;
}

/* Whether this filesystem moves extents: try it on a small scratch file in @dir. */
static bool can_move_extents(int dir, unsigned long blk)
{
	uint8_t *buf = calloc(3, blk);
	bool ok = false;
	int fd;

	fd = spool_scratch_open(dir);
	if (fd >= 0 && buf && pwrite(fd, buf, 3 * blk, 0) == (ssize_t)(3 * blk))
		ok = fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, blk) == 0 &&
		     fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, blk) == 0;
	if (fd >= 0)
		close(fd);
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
	struct finish *r;
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
		j->ret = output_walk_pages(wk->r, wk->t, NULL, wk->fd, j->off, j->len, &j->sum, NULL);
		if (j->ret)
			atomic_store(&wk->stop, true);
	}
	return NULL;
}

static void *sync_thread(void *arg)
{
	output_flush_file(*(int *)arg);
	return NULL;
}

/*
 * What the collector counted while it validated CPU @cpu's pages on the way
 * in (cpuN.sums, see stream_close()), when it covers exactly the @len bytes
 * its region holds. Return: true with @c filled.
 */
static bool ingest_sums(const struct trace_sum *t, unsigned int cpu, uint64_t len, struct cpu_sum *c)
{
	const struct spool_sums *s = &t->rec.cpus[cpu].sums;

	if (!t->rec.cpus[cpu].have_sums || s->len != len || !t->subbuf ||
	    s->pages * t->subbuf != len)
		return false;
	c->bytes += len;
	c->pages += s->pages;
	c->events += s->events;
	c->missed_pages += s->missed_pages;
	c->lost_in_pages += s->lost;
	return true;
}

/*
 * Walk every CPU's pages of @sd (read only), adding to t->cpus; a CPU whose
 * pages were counted on the way in (ingest_sums()) is not read again.
 * Return: 0, 1 at a malformed page (with *@bad_cpu), or -errno.
 */
static int walk_all(struct finish *r, struct trace_sum *t, int dir, struct spool_data *sd,
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
			     ingest_sums(t, i, sd->len[i], &t->cpus[i]);
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
 * Whether the pages can be moved in place: a spool whose regions held every
 * page, no compression, a filesystem that moves extents in blocks the pages
 * fill. Return: 0 with *@sfs and *@st the data file's, or 1 to copy.
 */
static int inplace_possible(const struct finish *r, const struct trace_sum *t, int dir,
			    const struct vt_tracedat_opts *opts, const struct spool_data *sd,
			    struct statfs *sfs, struct stat *st)
{
	unsigned int i;
	int fd, ret;

	if (sd->fd < 0 || sd->interrupted || r->keep_spool || opts->compression == VT_TD_COMPRESS_ZSTD)
		return 1;
	for (i = 0; i < t->nr_cpus; i++) {
		fd = spool_open_cpu(dir, i, SPOOL_CPU_PAGES, O_RDONLY);
		if (fd < 0)
			continue;
		ret = fstat(fd, st) == 0 && st->st_size > 0;
		close(fd);
		if (ret) {
			log_info("%s: cpu%u overflowed its spool region: copying", t->file, i);
			return 1;
		}
	}
	if (fstatfs(sd->fd, sfs) < 0 || fstat(sd->fd, st) < 0 || !sfs->f_bsize ||
	    t->subbuf % sfs->f_bsize || sd->region % sfs->f_bsize)
		return 1;
	if (!can_move_extents(dir, sfs->f_bsize)) {
		log_info("%s: this filesystem cannot move extents (fallocate collapse/insert "
			 "range): copying the pages", t->file);
		return 1;
	}
	return 0;
}

/*
 * The pages made one run at the file's head: each CPU's region cut to its
 * whole pages (the last CPU with pages is @k), the data file cut to @total
 * bytes, @head bytes of room opened before them. Return: 0, or -errno.
 */
static int inplace_move(struct spool_data *sd, unsigned int n, unsigned int k, const uint64_t *len,
			uint64_t head, uint64_t total)
{
	unsigned int i;

	for (i = k; i-- > 0;) {
		uint64_t amt = sd->region - len[i];
		unsigned int j;

		if (!amt)
			continue;
		if (fallocate(sd->fd, FALLOC_FL_COLLAPSE_RANGE, (off_t)sd->off[i] + len[i], amt) < 0)
			return -errno;
		for (j = i + 1; j < n; j++)
			sd->off[j] -= amt;
	}
	if (ftruncate(sd->fd, total) < 0 ||
	    fallocate(sd->fd, FALLOC_FL_INSERT_RANGE, 0, head) < 0)
		return -errno;
	for (i = 0; i < n; i++)
		sd->off[i] += head;
	return 0;
}

/*
 * Make the trace file out of the spool's data file in place (see the top of
 * this file). Return: 0 when the file is in place as t->file; 1 when the copy
 * path must do it (@sd then says where the pages are); -ENOMEM.
 */
int inplace_write(struct finish *r, struct trace_sum *t, int dir,
			 const struct vt_meta *meta, const struct vt_tracedat_opts *opts,
			 struct spool_data *sd)
{
	uint64_t off[COLLECT_MAX_CPUS], len[COLLECT_MAX_CPUS], total = 0, head = 0, expect, size0;
	struct spool_inplace marker;
	char bad[256];
	struct cpu_sum *saved = NULL;
	char problems[sizeof(t->problems)];
	struct vt_tracedat *w = NULL;
	unsigned int i, k = 0, n = t->nr_cpus;
	struct statfs sfs;
	struct stat st;
	pthread_t sync_th;
	bool synced;
	int mfd = -1, ret;

	if (inplace_possible(r, t, dir, opts, sd, &sfs, &st))
		return 1;
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
	ret = output_add_options(r, t, w);
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
	marker = (struct spool_inplace){ .region = sd->region, .head = head, .size0 = size0, .nr_cpus = n };
	memcpy(marker.len, len, sizeof(marker.len));
	ret = spool_save_inplace(dir, &marker);
	if (ret < 0)
		goto fallback;
	sd->interrupted = true;		/* lengths are now the whole pages */
	for (i = 0; i < n; i++)
		sd->len[i] = len[i];
	ret = inplace_move(sd, n, k, len, head, total);
	if (ret < 0)
		goto moved;
	if (fstat(mfd, &st) < 0) {
		ret = -errno;
		goto moved;
	}
	ret = copy_range(mfd, sd->fd, 0, head);
	if (ret == 0 && (uint64_t)st.st_size > head + total)
		ret = copy_range(mfd, sd->fd, head + total, st.st_size - (head + total));
	if (ret < 0)
		goto moved;
	if (r->fsync && fsync(sd->fd) < 0) {
		ret = -errno;
		goto moved;
	}
	/* A link in the trace's place is refused (renaming over it would not follow it, but say so). */
	ret = output_install_check(r, t->file);
	if (ret == 0)
		ret = spool_data_rename(dir, r->out_fd, t->file);
	if (ret < 0)
		goto moved;
	/* The marker stays until the spool goes: recover must not redo this file. */
	for (i = 0; i < n; i++) {
		output_bad_name(t, &t->cpus[i], bad, sizeof(bad));
		output_keep_ingest_bad(r, t, dir, &t->cpus[i], bad);
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
