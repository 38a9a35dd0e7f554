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
 * Uncompressed files are made in place when the filesystem allows it
 * (inplace.c); everything else is copied here. manifest.c writes the
 * manifest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "output.h"


static pthread_mutex_t problem_lock = PTHREAD_MUTEX_INITIALIZER;

void output_problem(struct trace_sum *t, const char *fmt, ...)
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

/* Pages the check set aside at ingest join the ones the walk rejects, copied in pieces. */
void output_keep_ingest_bad(struct run *r, struct trace_sum *t, const char *dir, struct cpu_sum *c,
			    const char *bad)
{
	char path[4300], buf[65536];
	int fd = spool_open_cpu(dir, c->cpu, SPOOL_CPU_BAD, O_RDONLY), out = -1;
	uint64_t total = 0, kept, seen;
	ssize_t n;

	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "%s/bad-pages", r->out);
	mkdir(path, 0755);
	out = open(bad, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		total += n;
		if (out >= 0 && write(out, buf, n) != n) {
			close(out);
			out = -1;
		}
	}
	if (out >= 0)
		close(out);
	close(fd);
	/* The file holds the first STREAM_BAD_KEEP; the state file counted them all. */
	kept = total / t->subbuf;
	seen = c->cpu < COLLECT_MAX_CPUS && t->rec.cpus[c->cpu].bad_pages > kept ?
	       t->rec.cpus[c->cpu].bad_pages : kept;
	c->bad_pages += seen;
	c->bad_pages_kept += kept;
	c->bytes += total + (seen - kept) * t->subbuf;
}

/*
 * Walk @len bytes of spooled pages at @off in @fd, every page, counting into
 * @c. With a writer, good pages go to it and bad ones to @bad; without one
 * (the in-place check) the first bad page stops the walk: return 1.
 */
int output_walk_pages(struct run *r, struct trace_sum *t, struct vt_tracedat *w, int fd,
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
			output_problem(t, "cpu%u: the spool ends %zu bytes into a page (cut at a kill)", c->cpu,
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
				if (c->bad_pages_kept >= STREAM_BAD_KEEP)
					continue;	/* evidence enough: counted only */
				c->bad_pages_kept++;
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

void output_bad_path(struct run *r, struct trace_sum *t, struct cpu_sum *c, char *bad, size_t size)
{
	snprintf(bad, size, "%s/bad-pages/%s-cpu%u.bad", r->out, t->rec.host ? "host" : t->rec.name, c->cpu);
}

/* Stream one CPU's spooled pages (its region, then cpuN.pages) into the writer. */
static int write_cpu(struct run *r, struct trace_sum *t, struct vt_tracedat *w, const char *dir,
		     struct cpu_sum *c, const struct spool_data *sd)
{
	char bad[4300];
	struct stat st;
	int fd, ret;

	output_bad_path(r, t, c, bad, sizeof(bad));
	ret = vt_tracedat_cpu_begin(w, c->cpu);
	if (ret < 0)
		return ret;
	output_keep_ingest_bad(r, t, dir, c, bad);
	if (sd->fd >= 0 && c->cpu < COLLECT_MAX_CPUS && sd->len[c->cpu]) {
		ret = output_walk_pages(r, t, w, sd->fd, sd->off[c->cpu], sd->len[c->cpu], c, bad);
		if (ret < 0)
			return ret;
	}
	fd = spool_open_cpu(dir, c->cpu, SPOOL_CPU_PAGES, O_RDONLY);
	if (fd < 0)
		return vt_tracedat_cpu_end(w);	/* a CPU that sent nothing more */
	ret = fstat(fd, &st) < 0 ? -errno :
	      output_walk_pages(r, t, w, fd, 0, st.st_size, c, bad);
	close(fd);
	return ret ?: vt_tracedat_cpu_end(w);
}

/* TIME_SHIFT: the guest's timestamps onto the host's, per vCPU, exactly as trace-cmd applies it. */
static int add_time_shift(struct run *r, struct trace_sum *t, struct vt_tracedat *w)
{
	struct vt_tracedat_tshift_cpu *view = calloc(t->nr_cpus, sizeof(*view));
	struct vt_tsync_tshift *tables = calloc(t->nr_cpus, sizeof(*tables));
	bool interp = vt_tsync_needs_interpolate(t->rec.sync, t->nr_cpus);
	unsigned int cpu;
	int ret = 0;

	if (!view || !tables) {
		ret = -ENOMEM;
		goto out;
	}
	for (cpu = 0; cpu < t->nr_cpus; cpu++) {
		if (!t->rec.sync[cpu].nr)
			continue;
		ret = vt_tsync_tshift_build(t->rec.sync[cpu].epochs, t->rec.sync[cpu].nr, t->rec.host_end, interp,
					    &tables[cpu]);
		if (ret < 0) {
			output_problem(t, "cpu%u: cannot express the clock mapping as TIME_SHIFT (%s)", cpu,
				strerror(-ret));
			goto out;
		}
		vt_tsync_tshift_view(&tables[cpu], &view[cpu]);
	}
	ret = vt_tracedat_add_time_shift(w, r->opt.host_trace_id, interp ? VT_TD_TSHIFT_INTERPOLATE : 0,
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

		if (t->rec.host || !t->written)
			continue;
		memcpy(tids, t->rec.tids, sizeof(uint32_t) * t->rec.nr_tids);
		if (!t->rec.nr_tids)
			log_warn("%s: no vCPU thread is known, so host.dat maps none of its vCPUs to "
				 "a host thread: give record --qmp PATH (QEMU's -qmp socket), or "
				 "--qemu-pid PID with QEMU started as -name NAME,debug-threads=on",
				 t->rec.name);
		ret = vt_tracedat_add_guest(w, t->rec.name, t->rec.trace_id, t->nr_cpus, tids);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The options, CPU statistics and so on that go in every trace file. */
int output_add_options(struct run *r, struct trace_sum *t, struct vt_tracedat *w)
{
	unsigned int i;
	int ret;

	if (r->opt.tsc_mult)
		vt_tracedat_set_tsc2nsec(w, r->opt.tsc_mult, r->opt.tsc_shift, 0);
	if (t->rec.host)
		ret = add_guests(r, w);
	else
		ret = add_time_shift(r, t, w);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		const char *st = t->rec.cpus[i].stats;

		if (st && *st)
			ret = vt_tracedat_add_cpustat(w, i, st, strlen(st));
	}
	return ret;
}

/*
 * Write the file's dirty pages back and wait: sync_file_range() first, as
 * ext4's fdatasync() alone writes a large delayed-allocation file back far
 * more slowly (measured: 64 MiB in 340-450 ms, against 11 ms + 30 ms). The
 * fdatasync() makes the data and the size durable; the name is the output
 * directory's fsync (manifest_write()).
 */
int output_flush_file(int fd)
{
	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			SYNC_FILE_RANGE_WAIT_AFTER);
	return fdatasync(fd);
}

static int write_trace(struct run *r, struct trace_sum *t, const char *dir)
{
	struct vt_tracedat_opts opts = {
		.version = r->opt.version,
		.compression = r->opt.compress ? VT_TD_COMPRESS_ZSTD : VT_TD_COMPRESS_NONE,
		.trace_id = t->rec.trace_id,
	};
	char path[4300], tmp[4310];
	struct spool_data sd = { .fd = -1 };
	struct vt_tracedat *w;
	struct vt_meta meta;
	size_t len;
	void *blob;
	unsigned int i;
	int fd, ret;

	ret = spool_load_meta(dir, &blob, &len);
	if (ret < 0) {
		output_problem(t, "no metadata was received, so no trace.dat can be written; the pages "
			   "stay in %s", dir);
		return ret;
	}
	ret = vt_meta_decode(&meta, blob, len);
	free(blob);
	if (ret < 0) {
		output_problem(t, "the spooled metadata is malformed (%s)", strerror(-ret));
		return ret;
	}
	t->nr_cpus = meta.nr_cpus < COLLECT_MAX_CPUS ? meta.nr_cpus : COLLECT_MAX_CPUS;
	t->subbuf = meta.subbuf_size;
	/* The guest's IOMMU groups and PCI devices, for report's analyses (sysinfo.c). */
	if (!t->rec.host && sysinfo_save(r->out, t->file, &meta) < 0)
		output_problem(t, "cannot keep the guest's sysinfo next to %s", t->file);
	snprintf(path, sizeof(path), "%s/%s", r->out, t->file);
	ret = inplace_load_data(t, dir, &sd);
	if (ret < 0)
		goto out_meta;
	if (sd.fd < 0 && spool_has_inplace(dir) && access(path, F_OK) == 0) {
		/* Killed between renaming the moved file into place and removing the spool. */
		output_problem(t, "%s was finished in place before the kill: its page counts are not in "
			   "this manifest", t->file);
		t->nr_sums = t->nr_cpus;
		t->written = true;
		goto out_meta;
	}
	ret = inplace_write(r, t, dir, &meta, &opts, &sd, path);
	if (ret == 0) {
		t->nr_sums = t->nr_cpus;
		t->written = true;
		goto out_meta;
	}
	if (ret < 0) {
		output_problem(t, "cannot write %s: %s", t->file, strerror(-ret));
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
	ret = output_add_options(r, t, w);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		t->cpus[i].cpu = i;
		ret = write_cpu(r, t, w, dir, &t->cpus[i], &sd);
	}
	t->nr_sums = t->nr_cpus;
	if (ret == 0)
		ret = vt_tracedat_finish(w);
	vt_tracedat_free(w);
	if (ret == 0 && ((r->fsync && output_flush_file(fd) < 0) || rename(tmp, path) < 0))
		ret = -errno;
out_close:
	close(fd);
	if (ret < 0) {
		unlink(tmp);
		output_problem(t, "cannot write %s: %s", t->file, strerror(-ret));
	} else {
		t->written = true;
	}
out_meta:
	if (sd.fd >= 0)
		close(sd.fd);
	vt_meta_free(&meta);
	return ret;
}

/* What the spool says about a trace, and the problems that already shows. */
static int load_trace(struct trace_sum *t, const char *dir, bool host)
{
	unsigned int i;
	int ret;

	ret = spool_trace_load(dir, host, &t->rec);
	if (ret < 0)
		return ret;
	if (host) {
		snprintf(t->file, sizeof(t->file), "host.dat");
		return 0;
	}
	snprintf(t->file, sizeof(t->file), "guest-%s.dat", t->rec.name);
	if (!t->rec.have_state) {
		output_problem(t, "no state file in %s", dir);
		return 0;
	}
	if (t->rec.error[0])
		output_problem(t, "%s", t->rec.error);
	if (t->rec.protocol_errors)
		output_problem(t, "%" PRIu64 " protocol errors on the control port", t->rec.protocol_errors);
	if (!t->rec.have_agent)
		output_problem(t, "no final statistics from the agent (the run was cut short)");
	if (t->rec.max_reached)
		output_problem(t, "--max-size reached: %" PRIu64 " of %" PRIu64 " bytes taken (%" PRIu64
			" in pages, %" PRIu64 " in malformed pages, %" PRIu64 " in fragments, %" PRIu64
			" in metadata); the guest was stopped", t->rec.budget.used, t->rec.budget.max,
			t->rec.budget.pages, t->rec.budget.bad, t->rec.budget.frag, t->rec.budget.meta);
	for (i = 0; i < GMSG_NR; i++)
		if (t->rec.msgs[i] > COLLECT_LOG_BURST)
			output_problem(t, "%" PRIu64 " %s (the first %d printed)", t->rec.msgs[i],
				session_msg_name(i), COLLECT_LOG_BURST);
	if (t->rec.sync_failed)
		output_problem(t, "no clock mapping: %s", t->rec.sync_why);
	if (t->rec.sync_rejected)
		output_problem(t, "%u clock probe bursts rejected as implausible", t->rec.sync_rejected);
	for (i = 0; i < t->rec.nr_cpus; i++) {
		t->cpus[i].cpu = i;
		if (t->rec.cpus[i].frag_bytes) {
			t->cpus[i].bytes += t->rec.cpus[i].frag_bytes;
			output_problem(t, "cpu%u: the stream ended %" PRIu64 " bytes into a page", i,
				t->rec.cpus[i].frag_bytes);
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
	struct dirent *de;
	unsigned int i, written = 0, troubled = 0;
	DIR *d;
	int ret;

	snprintf(r.spool, sizeof(r.spool), "%s/.spool", out_dir);
	if (spool_load_options(r.spool, &r.opt) < 0) {
		log_err("%s holds no spool (%s/options is missing): nothing to recover", out_dir,
			r.spool);
		return EXIT_FAIL;
	}
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
		snprintf(r.traces[r.nr_traces].dir, sizeof(r.traces[r.nr_traces].dir), "%s/%s", r.spool,
			 de->d_name);
		if (load_trace(&r.traces[r.nr_traces], r.traces[r.nr_traces].dir, host) < 0)
			log_err("cannot read %s: out of memory", r.traces[r.nr_traces].dir);
		r.nr_traces++;
	}
	closedir(d);
	/* Guests first: the host file names them in its GUEST options. */
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];

		if (t->rec.host)
			continue;
		if (write_trace(&r, t, t->dir) == 0)
			written++;
	}
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];

		if (!t->rec.host)
			continue;
		if (write_trace(&r, t, t->dir) == 0)
			written++;
	}
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];
		unsigned int c;

		for (c = 0; c < t->nr_sums; c++)
			if (t->cpus[c].bad_pages)
				output_problem(t, "cpu%u: %" PRIu64 " malformed pages (%" PRIu64
					" kept in bad-pages/)", c, t->cpus[c].bad_pages,
					t->cpus[c].bad_pages_kept);
		if (t->problems[0]) {
			troubled++;
			log_warn("%s: %s", t->rec.name, t->problems);
		}
	}
	ret = manifest_write(&r, recovering);
	if (ret < 0)
		log_err("cannot write %s/manifest.json: %s", out_dir, strerror(-ret));
	/* The spool goes only when every trace made it into a file. */
	if (ret == 0 && written == r.nr_traces && !(o && o->keep_spool))
		remove_tree(r.spool);
	else if (written != r.nr_traces)
		log_warn("the spool %s is kept: not every trace could be written", r.spool);
	for (i = 0; i < r.nr_traces; i++)
		spool_trace_free(&r.traces[i].rec);
	free(r.traces);
	if (!written)
		return EXIT_FAIL;
	return troubled || ret < 0 ? EXIT_PARTIAL : EXIT_OK;
}
