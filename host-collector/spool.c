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
 *       cpuN.bad            pages kept aside
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
		tprintf(&t, "dropped%u=%llu\n", g->streams[i].cpu,
			(unsigned long long)g->streams[i].dropped_pages);
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
	char name[32];
	unsigned int i;
	int ret = 0;

	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;
		const char *st = g->stats_text[cpu] ? g->stats_text[cpu] : "";

		snprintf(name, sizeof(name), "cpu%u.stats", cpu);
		ret = spool_write_file(g->spool, name, st, strlen(st)) ?: ret;
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

	tprintf(&t, "method=%s\nwhy=%s\nhost_end=%" PRIu64 "\n", g->sync.method, g->sync.why,
		g->sync.host_end);
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
