// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-tracedat: how fast the trace.dat writer turns per-CPU spool files
 * into a trace.dat, against copying the same bytes in the same run.
 *
 *   bench-tracedat [-v] [-r REPEATS] [-m MIB] [-d DIR] FIXTUREDIR
 *
 * FIXTUREDIR is a capture (tests/data/cap-host): its metadata bundle and its
 * cpuN.raw pages. The pages of each CPU are replicated into a spool file of
 * MIB MiB (default 256) in a temporary directory under DIR (default /tmp;
 * the outputs go to the same directory, so to the same filesystem). Then,
 * interleaved and REPEATS times each (default 5), the median is printed for:
 *   cp            `cp --reflink=never` of every spool file (a subprocess)
 *   read/write    read() + write() of the spool files, one after the other,
 *                 into one file, in chunks of the writer's size
 *   v7 none, v7 zstd, v6   vt_tracedat_create() .. vt_tracedat_cpu_path()
 *                 for each CPU .. vt_tracedat_finish(); v7 zstd with the
 *                 default worker threads and with VT_TD_SINGLE_THREAD, and
 *                 single-threaded at zstd levels 1 and -3 against the
 *                 default level (3): what a faster level would buy
 * The page cache is not dropped: every variant runs with the spool files in
 * the cache (they are read once before timing). Outputs are unlinked before
 * each run (untimed) so that dirty pages are discarded, not written back,
 * and no variant pays for another's writeback. No variant calls fsync.
 * One untimed round of every variant comes first; -v prints every run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_tracedat.h"

#define MAX_CPUS	64
#define MAX_REPEATS	64

enum variant { CP, RW, V7, V7Z, V7Z1, V7ZL1, V7ZLN, V6, NR_VARIANTS };

static const char *const names[NR_VARIANTS] = {
	"cp (subprocess)", "read/write loop", "trace.dat v7", "trace.dat v7 zstd",
	"trace.dat v7 zstd, 1 thread", "v7 zstd level 1, 1 thread",
	"v7 zstd level -3, 1 thread", "trace.dat v6",
};

struct bench {
	const char *dir;
	char spool[MAX_CPUS][PATH_MAX];
	char out[PATH_MAX];
	unsigned int nr_cpus;
	size_t chunk;		/* the writer's chunk: bytes per read and write */
	uint64_t in_bytes;	/* all spool files */
	uint64_t out_bytes[NR_VARIANTS];
	struct vt_meta meta;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* Replicate the whole pages of @raw into @path until it holds @size bytes. */
static int make_spool(const char *raw, const char *path, size_t size, size_t page)
{
	uint8_t *pages, *buf;
	size_t have, off;
	struct stat st;
	int in, out, ret = -EINVAL;

	in = open(raw, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || st.st_size < (off_t)page) {
		close(in);
		return -EINVAL;
	}
	have = st.st_size - st.st_size % page;
	pages = malloc(have);
	buf = malloc(1 << 20);
	if (!pages || !buf || pread(in, pages, have, 0) != (ssize_t)have)
		goto out_free;
	/* A 1 MiB block of whole pages, repeated. */
	for (off = 0; off < (1 << 20); off += page)
		memcpy(buf + off, pages + (off / page % (have / page)) * page, page);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		goto out_free;
	}
	for (off = 0, ret = 0; off < size && ret == 0; off += 1 << 20)
		ret = write_all(out, buf, size - off < (1 << 20) ? size - off : 1 << 20);
	close(out);
out_free:
	free(buf);
	free(pages);
	close(in);
	return ret;
}

static int run_cp(struct bench *b)
{
	pid_t pid;
	int status;

	if (mkdir(b->out, 0755) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		const char *argv[MAX_CPUS + 4];
		unsigned int i, n = 0;

		argv[n++] = "cp";
		argv[n++] = "--reflink=never";
		for (i = 0; i < b->nr_cpus; i++)
			argv[n++] = b->spool[i];
		argv[n++] = b->out;
		argv[n] = NULL;
		execvp("cp", (char **)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int run_rw(struct bench *b)
{
	uint8_t *buf = malloc(b->chunk);
	unsigned int i;
	int out, ret = 0;

	if (!buf)
		return -ENOMEM;
	out = open(b->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		goto out_free;
	}
	for (i = 0; i < b->nr_cpus && ret == 0; i++) {
		int in = open(b->spool[i], O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (in < 0) {
			ret = -errno;
			break;
		}
		while ((n = read(in, buf, b->chunk)) > 0 && ret == 0)
			ret = write_all(out, buf, n);
		if (n < 0)
			ret = -errno;
		close(in);
	}
	if (close(out) < 0 && ret == 0)
		ret = -errno;
out_free:
	free(buf);
	return ret;
}

static int run_tracedat(struct bench *b, enum variant v)
{
	struct vt_tracedat_opts o = {
		.version = v == V6 ? 6 : 7,
		.compression = v == V7Z || v == V7Z1 || v == V7ZL1 || v == V7ZLN ? VT_TD_COMPRESS_ZSTD :
										  VT_TD_COMPRESS_NONE,
		.flags = v == V7Z1 || v == V7ZL1 || v == V7ZLN ? VT_TD_SINGLE_THREAD : 0,
		.zstd_level = v == V7ZL1 ? 1 : v == V7ZLN ? -3 : 0,
	};
	struct vt_tracedat *w;
	unsigned int i;
	int fd, ret = 0;

	fd = open(b->out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	w = vt_tracedat_create(fd, &b->meta, &o);
	if (!w) {
		ret = -errno;
		goto out_close;
	}
	for (i = 0; i < b->nr_cpus && ret == 0; i++)
		ret = vt_tracedat_cpu_path(w, i, b->spool[i]);
	if (ret == 0)
		ret = vt_tracedat_finish(w);
	vt_tracedat_free(w);
out_close:
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

/* Remove the previous output: its dirty pages are dropped, never written. */
static void clean_out(struct bench *b)
{
	char path[PATH_MAX + 32];
	unsigned int i;

	for (i = 0; i < b->nr_cpus; i++) {
		const char *base = strrchr(b->spool[i], '/') + 1;

		snprintf(path, sizeof(path), "%s/%s", b->out, base);
		unlink(path);
	}
	rmdir(b->out);
	unlink(b->out);
}

static uint64_t out_size(struct bench *b, enum variant v)
{
	char path[PATH_MAX + 32];
	uint64_t sum = 0;
	struct stat st;
	unsigned int i;

	if (v != CP)
		return stat(b->out, &st) == 0 ? (uint64_t)st.st_size : 0;
	for (i = 0; i < b->nr_cpus; i++) {
		snprintf(path, sizeof(path), "%s/%s", b->out, strrchr(b->spool[i], '/') + 1);
		if (stat(path, &st) == 0)
			sum += st.st_size;
	}
	return sum;
}

static int run(struct bench *b, enum variant v, double *secs)
{
	double t0;
	int ret;

	clean_out(b);
	t0 = now();
	if (v == CP)
		ret = run_cp(b);
	else if (v == RW)
		ret = run_rw(b);
	else
		ret = run_tracedat(b, v);
	*secs = now() - t0;
	b->out_bytes[v] = out_size(b, v);
	return ret;
}

/* Read every spool file once so that all variants start from a warm cache. */
static void warm(struct bench *b)
{
	static uint8_t buf[1 << 20];
	unsigned int i;

	for (i = 0; i < b->nr_cpus; i++) {
		int fd = open(b->spool[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
}

int main(int argc, char **argv)
{
	const char *tmp = "/tmp", *fixture;
	double t[NR_VARIANTS][MAX_REPEATS], med[NR_VARIANTS];
	int repeats = 5, mib = 256, verbose = 0, opt, r, v, ret, rc = 1;
	struct bench b = { .nr_cpus = 0 };
	char raw[PATH_MAX], dir[PATH_MAX];
	unsigned int i;

	while ((opt = getopt(argc, argv, "r:m:d:v")) != -1) {
		if (opt == 'r')
			repeats = atoi(optarg);
		else if (opt == 'm')
			mib = atoi(optarg);
		else if (opt == 'd')
			tmp = optarg;
		else if (opt == 'v')
			verbose = 1;
		else
			goto usage;
	}
	if (optind + 1 != argc || repeats < 1 || repeats > MAX_REPEATS || mib < 1)
		goto usage;
	fixture = argv[optind];

	ret = vt_meta_load_dir(&b.meta, fixture);
	if (ret < 0) {
		fprintf(stderr, "bench-tracedat: %s: %s\n", fixture, strerror(-ret));
		return 1;
	}
	for (i = 0; i < b.meta.nr_cpus && i < MAX_CPUS; i++) {
		snprintf(raw, sizeof(raw), "%s/cpu%u.raw", fixture, i);
		if (access(raw, R_OK) < 0)
			break;
	}
	b.nr_cpus = i;
	if (!b.nr_cpus) {
		fprintf(stderr, "bench-tracedat: %s: no cpuN.raw\n", fixture);
		goto out_meta;
	}
	b.chunk = (size_t)VT_TD_CHUNK_PAGES_DEFAULT * b.meta.subbuf_size;

	snprintf(dir, sizeof(dir), "%s/vt-bench-tracedat.XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bench-tracedat: %s: %s\n", dir, strerror(errno));
		goto out_meta;
	}
	b.dir = dir;
	snprintf(b.out, sizeof(b.out), "%s/out", b.dir);
	for (i = 0; i < b.nr_cpus; i++) {
		snprintf(raw, sizeof(raw), "%s/cpu%u.raw", fixture, i);
		snprintf(b.spool[i], sizeof(b.spool[i]), "%s/cpu%u", b.dir, i);
		ret = make_spool(raw, b.spool[i], (size_t)mib << 20, b.meta.subbuf_size);
		if (ret < 0) {
			fprintf(stderr, "bench-tracedat: %s: %s\n", raw, strerror(-ret));
			goto out_rm;
		}
		b.in_bytes += (uint64_t)mib << 20;
	}
	warm(&b);

	/*
	 * Interleaved, so that a slow moment of the machine hits every variant.
	 * Round -1 is not counted: the first writes after the spool files were
	 * made are slower for everyone (cp's first run takes several times its
	 * median).
	 */
	for (r = -1; r < repeats; r++)
		for (v = 0; v < NR_VARIANTS; v++) {
			ret = run(&b, v, &t[v][r < 0 ? 0 : r]);
			if (verbose)
				fprintf(stderr, "  run %d %-18s %.3f s\n", r, names[v],
					t[v][r < 0 ? 0 : r]);
			if (ret < 0) {
				fprintf(stderr, "bench-tracedat: %s: %s\n", names[v], strerror(-ret));
				goto out_rm;
			}
		}
	for (v = 0; v < NR_VARIANTS; v++)
		med[v] = median(t[v], repeats);		/* sorts: t[v][0] is the fastest */

	printf("bench-tracedat: %u CPUs x %d MiB spool files of real pages (%s), "
	       "%zu KiB chunks, median of %d runs, page cache warm for all variants, no fsync\n",
	       b.nr_cpus, mib, fixture, b.chunk >> 10, repeats);
	printf("  %-29s %8s %8s %8s %10s %9s %9s\n", "variant", "seconds", "GB/s", "best",
	       "out MiB", "x cp", "x r/w");
	for (v = 0; v < NR_VARIANTS; v++)
		printf("  %-29s %8.3f %8.2f %8.2f %10.1f %8.2fx %8.2fx\n", names[v], med[v],
		       b.in_bytes / med[v] / 1e9, b.in_bytes / t[v][0] / 1e9,
		       b.out_bytes[v] / 1048576.0, med[CP] / med[v], med[RW] / med[v]);
	printf("  (GB/s: spool bytes in per second, median run; best: fastest run;\n"
	       "   x cp > 1 means faster than cp. Writes into the page cache vary run to run\n"
	       "   by up to 5x here, cp's most: compare medians of several runs, or -v.)\n");
	printf("  target: v7 uncompressed >= 0.8x cp: %s (%.2fx)\n",
	       med[CP] / med[V7] >= 0.8 ? "met" : "NOT met", med[CP] / med[V7]);
	rc = 0;
out_rm:
	clean_out(&b);
	for (i = 0; i < b.nr_cpus; i++)
		unlink(b.spool[i]);
	rmdir(b.dir);
out_meta:
	vt_meta_free(&b.meta);
	return rc;
usage:
	fprintf(stderr, "usage: bench-tracedat [-v] [-r REPEATS] [-m MIB] [-d DIR] FIXTUREDIR\n");
	return 2;
}
