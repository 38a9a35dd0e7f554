// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The spool: DIR/.spool/ holds, while recording, everything the output is
 * made from, so that `recover` can finish what a killed collector started.
 *
 *   .spool/options          key=value: file version, compression, command line
 *   .spool/guest-NAME/      one per guest:
 *       state               key=value: name, trace id, CPUs, sub-buffer, clock...
 *       meta.bin            the metadata bundle as the agent sent it (re-checked on use)
 *       data                whole pages that passed the header check, in order: CPU N's
 *                           at N * region onwards, up to the first hole (a sparse file, so
 *                           it takes only what was written; output.c may turn it into the
 *                           trace.dat in place, by moving extents, without copying)
 *       layout              region=BYTES, the region size of data
 *       cpuN.pages          whole pages of a CPU that filled its region, after those
 *       cpuN.bad            malformed pages kept aside, at most STREAM_BAD_KEEP (the
 *                           state file's badN counts them all)
 *       cpuN.frag           a trailing fragment, when a stream ended mid-page
 *       cpuN.stats          the guest's final per_cpu stats text
 *       agent               key=value: the agent's final counters
 *       sync                the clock mapping (see sync.c)
 *   .spool/host/            the host's pages and metadata, same layout
 *
 * Small files are written to a temporary name and renamed, so a kill leaves
 * either the old or the new version, never half of one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"

/**
 * spool_prepare() - create the output and spool directories
 * @out_dir: the output directory
 * @spool: set to its .spool path
 * @size: size of @spool
 *
 * Return: 0, -EEXIST when a spool is already there (an unfinished run: use
 * recover), or -errno.
 */
int spool_prepare(const char *out_dir, char *spool, size_t size)
{
	if (mkdir(out_dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(spool, size, "%s/.spool", out_dir) >= size)
		return -ENAMETOOLONG;
	if (mkdir(spool, 0755) < 0)
		return -errno;
	return 0;
}

/**
 * spool_guest_dir() - create a trace's directory in the spool
 * @spool: the spool
 * @name: "guest-NAME" or "host"
 * @dir: set to the path
 * @size: size of @dir
 *
 * Return: 0 or -errno.
 */
int spool_guest_dir(const char *spool, const char *name, char *dir, size_t size)
{
	if ((size_t)snprintf(dir, size, "%s/%s", spool, name) >= size)
		return -ENAMETOOLONG;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/**
 * spool_write_file() - replace a small file atomically
 * @dir: directory
 * @name: file name
 * @data: contents
 * @len: length
 *
 * Return: 0 or -errno.
 */
int spool_write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4200], tmp[4210];
	const char *p = data;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		len -= n;
	}
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

/**
 * spool_read_file() - read a whole file, refusing one larger than @max
 * @dir: directory
 * @name: file name
 * @data: set to a malloc()ed, NUL-terminated copy
 * @len: set to its length
 * @max: the largest size accepted
 *
 * Return: 0, -EFBIG, or -errno.
 */
int spool_read_file(const char *dir, const char *name, void **data, size_t *len, size_t max)
{
	char path[4200];
	struct stat st;
	size_t have = 0;
	char *buf;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size > max) {
		ret = fstat(fd, &st) < 0 ? -errno : -EFBIG;
		close(fd);
		return ret;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + have, st.st_size - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += n;
	}
	close(fd);
	buf[have] = '\0';
	*data = buf;
	*len = have;
	return 0;
}

/* A growing text: key=value files of any length, never cut short. */
struct text {
	char *buf;
	size_t len, cap;
	bool oom;
};

static void tprintf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = t->oom ? 0 : vsnprintf(t->buf ? t->buf + t->len : NULL,
					   t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (t->oom || n < 0)
			return;
		if (t->buf && t->len + n < t->cap) {
			t->len += n;
			return;
		}
		{
			size_t cap = (t->cap ? t->cap : 4096);
			char *nb;

			while (cap <= t->len + n)
				cap *= 2;
			nb = realloc(t->buf, cap);
			if (!nb) {
				t->oom = true;
				return;
			}
			t->buf = nb;
			t->cap = cap;
		}
	}
}

static int text_save(struct text *t, const char *dir, const char *name)
{
	int ret = t->oom ? -ENOMEM : spool_write_file(dir, name, t->buf ? t->buf : "", t->len);

	free(t->buf);
	t->buf = NULL;
	return ret;
}

/**
 * spool_save_state() - write a guest's state file
 * @g: the guest
 *
 * Return: 0 or -errno.
 */
int spool_save_state(const struct guest *g)
{
	struct text t = { 0 };
	unsigned int i;

	tprintf(&t, "name=%s\ntrace_id=%llu\nnr_cpus=%u\nsubbuf=%u\nclock=%s\nagent=%s\ncaps=%llu\n"
		"streams=%u\nqemu_pid=%d\nmax_reached=%d\nprotocol_errors=%llu\nerror=%s\n"
		"vcpu_tids=",
		g->name, (unsigned long long)g->trace_id, g->nr_cpus, g->subbuf, g->clock,
		g->agent_software, (unsigned long long)g->caps, g->nr_streams, (int)g->qemu_pid,
		g->budget.reached, (unsigned long long)g->protocol_errors, g->error);
	for (i = 0; i < g->nr_vcpu_tids; i++)
		tprintf(&t, "%s%u", i ? "," : "", g->vcpu_tids[i]);
	tprintf(&t, "\n");
	for (i = 0; i < g->nr_streams; i++)
		tprintf(&t, "dropped%u=%llu\nbad%u=%llu\n", g->streams[i].cpu,
			(unsigned long long)g->streams[i].dropped_pages, g->streams[i].cpu,
			(unsigned long long)g->streams[i].bad_pages);
	tprintf(&t, "budget_max=%llu\nbudget_used=%llu\nbudget_pages=%llu\nbudget_bad=%llu\n"
		"budget_frag=%llu\nbudget_meta=%llu\n", (unsigned long long)g->budget.max,
		(unsigned long long)g->budget.used, (unsigned long long)g->budget.pages,
		(unsigned long long)g->budget.bad, (unsigned long long)g->budget.frag,
		(unsigned long long)g->budget.meta);
	for (i = 0; i < GMSG_NR; i++)
		tprintf(&t, "msgs%u=%llu\n", i, (unsigned long long)g->msgs[i]);
	return text_save(&t, g->spool, "state");
}

/**
 * spool_save_agent() - write the agent's final per-CPU figures and stats texts
 * @g: the guest, stopped
 *
 * Return: 0 or -errno.
 */
int spool_save_agent(const struct guest *g)
{
	struct text t = { 0 };
	unsigned int i;
	int ret = 0;

	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;
		const char *st = g->stats_text[cpu] ? g->stats_text[cpu] : "";

		ret = spool_save_stats(g->spool, cpu, st) ?: ret;
		tprintf(&t, "bytes%u=%llu\npages%u=%llu\n", cpu,
			(unsigned long long)g->agent_bytes[cpu], cpu,
			(unsigned long long)g->agent_pages[cpu]);
	}
	return text_save(&t, g->spool, "agent") ?: ret;
}

/**
 * spool_save_sync() - write the guest's clock mapping
 * @g: the guest
 *
 * One line per epoch.
 *
 * Return: 0 or -errno.
 */
int spool_save_sync(const struct guest *g)
{
	struct text t = { 0 };
	unsigned int cpu, i;

	tprintf(&t, "method=%s\nwhy=%s\nhost_end=%" PRIu64 "\nrejected=%u\nfailed=%d\n",
		g->sync.method, g->sync.why, g->sync.host_end, g->sync.rejected, g->sync.failed);
	for (cpu = 0; cpu < g->nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++) {
		if (g->sync.min_rtt[cpu])
			tprintf(&t, "probes cpu=%u min_rtt=%" PRIu64 " samples=%u\n", cpu,
				g->sync.min_rtt[cpu], g->sync.samples[cpu]);
		for (i = 0; i < g->sync.cpus[cpu].nr; i++) {
			const struct vt_tsync_epoch *ep = &g->sync.cpus[cpu].epochs[i];

			tprintf(&t, "epoch cpu=%u from=%" PRIu64 " offset=%" PRId64 " ratio=%" PRIu64
				" frac=%u source=%d flags=%u error=%" PRIu64 " min_rtt=%" PRIu64 "\n",
				cpu, ep->host_from, ep->map.offset, ep->map.ratio, ep->map.frac_bits,
				(int)ep->source, ep->flags, ep->error, ep->min_rtt);
		}
	}
	return text_save(&t, g->spool, "sync");
}

/**
 * spool_data_region() - the region size of a trace's data file
 * @dir: the trace's spool directory
 * @region: set from its layout file, SPOOL_REGION when there is none
 *
 * Return: 0, or -EINVAL for a layout that makes no sense.
 */
int spool_data_region(const char *dir, uint64_t *region)
{
	char *text, *p;
	size_t len;

	*region = SPOOL_REGION;
	if (spool_read_file(dir, "layout", (void **)&text, &len, 4096) < 0)
		return 0;
	p = strstr(text, "region=");
	if (p)
		*region = strtoull(p + 7, NULL, 10);
	free(text);
	if (!*region || *region % 65536 || *region > SPOOL_REGION * 256)
		return -EINVAL;
	return 0;
}

/**
 * spool_data_open() - open (create) a trace's data file
 * @dir: the trace's spool directory
 * @region: set to its region size; the layout file is written with the file
 *
 * Return: the fd, or -errno.
 */
int spool_data_open(const char *dir, uint64_t *region)
{
	char path[4200], text[64];
	struct stat st;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/layout", dir);
	if (stat(path, &st) < 0) {
		ret = snprintf(text, sizeof(text), "region=%llu\n", (unsigned long long)SPOOL_REGION);
		ret = spool_write_file(dir, "layout", text, ret);
		if (ret < 0)
			return ret;
	}
	ret = spool_data_region(dir, region);
	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

/**
 * spool_data_len() - how much of a CPU's region holds pages
 * @fd: the data file
 * @region: its region size
 * @cpu: the CPU
 * @len: set to the bytes from the region's start to the first hole (or EOF)
 *
 * Nothing else marks the length: what a killed collector wrote is all there.
 *
 * Return: 0 or -errno.
 */
int spool_data_len(int fd, uint64_t region, unsigned int cpu, uint64_t *len)
{
	off_t start = (off_t)cpu * region, end;

	*len = 0;
	end = lseek(fd, start, SEEK_HOLE);
	if (end < 0)
		return errno == ENXIO ? 0 : -errno;
	*len = (uint64_t)(end - start) < region ? (uint64_t)(end - start) : region;
	return 0;
}

/* --- everything else the spool holds, written and read back here only --- */

#define STATE_MAX	(64u << 10)
#define STATS_MAX	8192u
#define SYNC_MAX	(64u << 20)

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

static void cpu_name(char *buf, size_t size, unsigned int cpu, const char *suffix)
{
	snprintf(buf, size, "cpu%u.%s", cpu, suffix);
}

/**
 * spool_save_options() - write the run's options
 * @spool: the spool directory
 * @o: the options
 *
 * Return: 0 or -errno.
 */
int spool_save_options(const char *spool, const struct spool_options *o)
{
	struct text t = { 0 };

	tprintf(&t, "file_version=%u\ncompress=%d\nhost_trace_id=%" PRIu64 "\ntsc_khz=%" PRIu64
		"\ntsc_mult=%u\ntsc_shift=%u\ntsc_method=%s\ncmdline=%s\n", o->version, o->compress,
		o->host_trace_id, o->tsc_khz, o->tsc_mult, o->tsc_shift, o->tsc_method, o->cmdline);
	return text_save(&t, spool, "options");
}

/**
 * spool_load_options() - read the run's options back
 * @spool: the spool directory
 * @o: filled
 *
 * Return: 0, or -errno when there is no options file (no spool).
 */
int spool_load_options(const char *spool, struct spool_options *o)
{
	char *text;
	size_t len;
	int ret;

	memset(o, 0, sizeof(*o));
	ret = spool_read_file(spool, "options", (void **)&text, &len, STATE_MAX);
	if (ret < 0)
		return ret;
	o->version = kv_u64(text, "file_version");
	if (o->version != 6 && o->version != 7)
		o->version = 7;
	o->compress = kv_u64(text, "compress");
	o->host_trace_id = kv_u64(text, "host_trace_id");
	o->tsc_khz = kv_u64(text, "tsc_khz");
	o->tsc_mult = kv_u64(text, "tsc_mult");
	o->tsc_shift = kv_u64(text, "tsc_shift");
	kv(text, "tsc_method", o->tsc_method, sizeof(o->tsc_method));
	kv(text, "cmdline", o->cmdline, sizeof(o->cmdline));
	free(text);
	return 0;
}

/**
 * spool_save_stats() - a CPU's per_cpu stats text (guest or host)
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @text: the text
 *
 * Return: 0 or -errno.
 */
int spool_save_stats(const char *dir, unsigned int cpu, const char *text)
{
	char name[32];

	cpu_name(name, sizeof(name), cpu, "stats");
	return spool_write_file(dir, name, text, strlen(text));
}

/**
 * spool_save_sums() - what ingest counted of a CPU's region
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @sums: the figures
 *
 * Return: 0 or -errno.
 */
int spool_save_sums(const char *dir, unsigned int cpu, const struct spool_sums *sums)
{
	char name[32], text[256];
	int n;

	cpu_name(name, sizeof(name), cpu, "sums");
	n = snprintf(text, sizeof(text), "len=%" PRIu64 " pages=%" PRIu64 " events=%" PRIu64
		     " missed_pages=%" PRIu64 " lost=%" PRIu64 "\n", sums->len, sums->pages,
		     sums->events, sums->missed_pages, sums->lost);
	return spool_write_file(dir, name, text, n);
}

/**
 * spool_save_frag() - a trailing fragment of a stream that ended mid-page
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @data: the bytes
 * @len: how many
 *
 * Return: 0 or -errno.
 */
int spool_save_frag(const char *dir, unsigned int cpu, const void *data, size_t len)
{
	char name[32];

	cpu_name(name, sizeof(name), cpu, "frag");
	return spool_write_file(dir, name, data, len);
}

/**
 * spool_save_meta() - the metadata bundle as the agent (or the host) made it
 * @dir: the trace's spool directory
 * @data: the bundle
 * @len: its length
 *
 * Return: 0 or -errno.
 */
int spool_save_meta(const char *dir, const void *data, size_t len)
{
	return spool_write_file(dir, "meta.bin", data, len);
}

/**
 * spool_load_meta() - read the metadata bundle back (checked by its decoder)
 * @dir: the trace's spool directory
 * @data: set to a malloc()ed copy
 * @len: its length
 *
 * Return: 0 or -errno.
 */
int spool_load_meta(const char *dir, void **data, size_t *len)
{
	return spool_read_file(dir, "meta.bin", data, len, VT_META_MAX_TOTAL);
}

/**
 * spool_save_inplace() - record an in-place finish before the data file changes
 * @dir: the trace's spool directory
 * @m: the layout
 *
 * Return: 0 or -errno.
 */
int spool_save_inplace(const char *dir, const struct spool_inplace *m)
{
	struct text t = { 0 };
	unsigned int i;

	tprintf(&t, "region=%" PRIu64 "\nhead=%" PRIu64 "\nsize0=%" PRIu64 "\nnr_cpus=%u\n",
		m->region, m->head, m->size0, m->nr_cpus);
	for (i = 0; i < m->nr_cpus && i < COLLECT_MAX_CPUS; i++)
		tprintf(&t, "len%u=%" PRIu64 "\n", i, m->len[i]);
	return text_save(&t, dir, "inplace");
}

/**
 * spool_load_inplace() - read the in-place marker back
 * @dir: the trace's spool directory
 * @m: filled
 *
 * Return: 0, -ENOENT when there is none, -EINVAL when it makes no sense.
 */
int spool_load_inplace(const char *dir, struct spool_inplace *m)
{
	char *text, key[32];
	unsigned int i;
	size_t len;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = spool_read_file(dir, "inplace", (void **)&text, &len, STATE_MAX);
	if (ret < 0)
		return ret;
	m->region = kv_u64(text, "region");
	m->head = kv_u64(text, "head");
	m->size0 = kv_u64(text, "size0");
	m->nr_cpus = kv_u64(text, "nr_cpus");
	if (!m->region || m->nr_cpus > COLLECT_MAX_CPUS) {
		free(text);
		return -EINVAL;
	}
	for (i = 0; i < m->nr_cpus; i++) {
		snprintf(key, sizeof(key), "len%u", i);
		m->len[i] = kv_u64(text, key);
	}
	free(text);
	return 0;
}

/**
 * spool_has_inplace() - whether an in-place finish was begun in @dir
 * @dir: the trace's spool directory
 *
 * Return: true when the marker exists.
 */
bool spool_has_inplace(const char *dir)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/inplace", dir);
	return access(path, F_OK) == 0;
}

/**
 * spool_open_cpu() - open a CPU's overflow pages (cpuN.pages) or kept-aside
 * pages (cpuN.bad)
 * @dir: the trace's spool directory
 * @cpu: the CPU
 * @kind: which
 * @flags: open() flags (O_CLOEXEC is added; O_CREAT makes it 0644)
 *
 * Return: the fd or -errno.
 */
int spool_open_cpu(const char *dir, unsigned int cpu, enum spool_cpu_file kind, int flags)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/cpu%u.%s", dir, cpu, kind == SPOOL_CPU_BAD ? "bad" : "pages");
	fd = open(path, flags | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

/**
 * spool_data_fd() - open an existing data file for the finish
 * @dir: the trace's spool directory
 *
 * Return: the fd, -ENOENT when there is none, or -errno.
 */
int spool_data_fd(const char *dir)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/**
 * spool_data_rename() - move the data file, laid out as a trace.dat, into place
 * @dir: the trace's spool directory
 * @path: the trace file
 *
 * Return: 0 or -errno.
 */
int spool_data_rename(const char *dir, const char *path)
{
	char name[4200];

	snprintf(name, sizeof(name), "%s/data", dir);
	return rename(name, path) < 0 ? -errno : 0;
}

static void load_sync(struct spool_trace *t, const char *dir)
{
	char *text, *line;
	size_t len;

	snprintf(t->sync_method, sizeof(t->sync_method), "none");
	if (spool_read_file(dir, "sync", (void **)&text, &len, SYNC_MAX) < 0) {
		snprintf(t->sync_why, sizeof(t->sync_why), "no clock mapping was recorded");
		return;
	}
	t->have_sync = true;
	kv(text, "method", t->sync_method, sizeof(t->sync_method));
	kv(text, "why", t->sync_why, sizeof(t->sync_why));
	t->host_end = kv_u64(text, "host_end");
	t->sync_rejected = kv_u64(text, "rejected") > UINT32_MAX ? UINT32_MAX : kv_u64(text, "rejected");
	t->sync_failed = kv_u64(text, "failed") != 0;
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
			   &ep.flags, &ep.error, &ep.min_rtt) < 8 || cpu >= t->nr_cpus ||
		    cpu >= COLLECT_MAX_CPUS || !vt_tsc_map_valid(&ep.map))
			continue;
		ep.source = source;
		if (vt_tsync_cpu_update(&t->sync[cpu], &ep) < 0)
			break;
	}
	free(text);
}

static bool load_sums(const char *dir, unsigned int cpu, struct spool_sums *s)
{
	unsigned long long l, pages, events, missed, lost;
	char name[32], *text;
	size_t len;
	int n;

	cpu_name(name, sizeof(name), cpu, "sums");
	if (spool_read_file(dir, name, (void **)&text, &len, 4096) < 0)
		return false;
	n = sscanf(text, "len=%llu pages=%llu events=%llu missed_pages=%llu lost=%llu", &l, &pages,
		   &events, &missed, &lost);
	free(text);
	if (n != 5)
		return false;
	*s = (struct spool_sums){ l, pages, events, missed, lost };
	return true;
}

static void load_cpu_files(struct spool_trace *t, const char *dir, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr && i < COLLECT_MAX_CPUS; i++) {
		struct spool_cpu *c = &t->cpus[i];
		char name[32], path[4200], *text;
		struct stat st;
		size_t len;

		cpu_name(name, sizeof(name), i, "stats");
		if (spool_read_file(dir, name, (void **)&text, &len, STATS_MAX) == 0) {
			c->stats = malloc(len + 1);
			if (c->stats)
				collect_sanitize(c->stats, len + 1, text, true);
			free(text);
		}
		c->have_sums = load_sums(dir, i, &c->sums);
		snprintf(path, sizeof(path), "%s/cpu%u.frag", dir, i);
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			c->frag_bytes = st.st_size;
	}
}

/**
 * spool_trace_load() - read everything the spool holds about one trace
 * @dir: the trace's spool directory
 * @host: it is the host's (no state, agent or sync files)
 * @t: filled; spool_trace_free() releases it
 *
 * The spool was made from guest data: every number is bounded here, every
 * string sanitised. Missing files leave their have_ flag false.
 *
 * Return: 0 or -errno (-ENOMEM).
 */
int spool_trace_load(const char *dir, bool host, struct spool_trace *t)
{
	char *text, buf[1024], key[32];
	unsigned int i;
	size_t len;

	memset(t, 0, sizeof(*t));
	t->host = host;
	if (host) {
		snprintf(t->name, sizeof(t->name), "host");
		snprintf(t->clock, sizeof(t->clock), "x86-tsc");
		load_cpu_files(t, dir, COLLECT_MAX_CPUS);
		return 0;
	}
	if (spool_read_file(dir, "state", (void **)&text, &len, STATE_MAX) == 0) {
		t->have_state = true;
		kv(text, "name", buf, sizeof(buf));
		collect_sanitize(t->name, sizeof(t->name), buf, false);
		t->trace_id = kv_u64(text, "trace_id");
		t->nr_cpus = kv_u64(text, "nr_cpus");
		if (t->nr_cpus > COLLECT_MAX_CPUS)
			t->nr_cpus = COLLECT_MAX_CPUS;
		t->subbuf = kv_u64(text, "subbuf");
		kv(text, "clock", buf, sizeof(buf));
		collect_sanitize(t->clock, sizeof(t->clock), buf, false);
		kv(text, "agent", buf, sizeof(buf));
		collect_sanitize(t->agent, sizeof(t->agent), buf, false);
		if (kv(text, "error", buf, sizeof(buf)))
			collect_sanitize(t->error, sizeof(t->error), buf, false);
		t->protocol_errors = kv_u64(text, "protocol_errors");
		t->max_reached = kv_u64(text, "max_reached");
		if (kv(text, "vcpu_tids", buf, sizeof(buf))) {
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
			t->cpus[i].dropped = kv_u64(text, key);
			snprintf(key, sizeof(key), "bad%u", i);
			t->cpus[i].bad_pages = kv_u64(text, key);
		}
		t->budget.max = kv_u64(text, "budget_max");
		t->budget.used = kv_u64(text, "budget_used");
		t->budget.pages = kv_u64(text, "budget_pages");
		t->budget.bad = kv_u64(text, "budget_bad");
		t->budget.frag = kv_u64(text, "budget_frag");
		t->budget.meta = kv_u64(text, "budget_meta");
		t->budget.reached = t->max_reached;
		for (i = 0; i < GMSG_NR; i++) {
			snprintf(key, sizeof(key), "msgs%u", i);
			t->msgs[i] = kv_u64(text, key);
		}
		free(text);
	}
	if (spool_read_file(dir, "agent", (void **)&text, &len, STATE_MAX) == 0) {
		t->have_agent = true;
		for (i = 0; i < t->nr_cpus; i++) {
			snprintf(key, sizeof(key), "bytes%u", i);
			t->cpus[i].agent_bytes = kv_u64(text, key);
			snprintf(key, sizeof(key), "pages%u", i);
			t->cpus[i].agent_pages = kv_u64(text, key);
		}
		free(text);
	}
	load_cpu_files(t, dir, t->nr_cpus);
	load_sync(t, dir);
	return 0;
}

/**
 * spool_trace_free() - release what spool_trace_load() allocated
 * @t: the trace
 */
void spool_trace_free(struct spool_trace *t)
{
	unsigned int i;

	for (i = 0; i < COLLECT_MAX_CPUS; i++) {
		free(t->cpus[i].stats);
		t->cpus[i].stats = NULL;
		vt_tsync_cpu_free(&t->sync[i]);
	}
}
