// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-pages: how fast pages are checked and iterated, against a plain
 * memcpy of the same bytes in the same run.
 *
 *   bench-pages [-r REPEATS] [-m MIB] RAWFILE...
 *
 * RAWFILE holds whole 4 KiB pages captured from trace_pipe_raw (the fixtures
 * in tests/data). The pages are replicated into a working set of MIB MiB
 * (default 64: larger than the caches, as pages arriving from a guest are)
 * and each measurement is repeated REPEATS times (default 7); the median is
 * printed. Figures are deterministic in their inputs; only time varies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vt_pages.h"

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

/* Keeps results alive so the compiler cannot drop the work. */
static volatile uint64_t sink;

enum what { COPY, HEADER, VALIDATE, ITERATE };

static double run(enum what w, const struct vt_page_fmt *fmt, uint8_t *src, uint8_t *dst,
		  size_t npages, uint64_t *events)
{
	size_t ps = fmt->subbuf_size, i;
	uint64_t n = 0;
	double t0 = now();

	for (i = 0; i < npages; i++) {
		uint8_t *p = src + i * ps;
		struct vt_page_info info;
		struct vt_page_iter it;
		struct vt_event ev;
		uint32_t cnt;

		switch (w) {
		case COPY:
			memcpy(dst + i * ps, p, ps);
			break;
		case HEADER:
			if (vt_page_header(fmt, p, ps, &info) == 0)
				n += info.len;
			break;
		case VALIDATE:
			if (vt_page_validate(fmt, p, ps, NULL, &cnt, NULL, NULL) == 0)
				n += cnt;
			break;
		case ITERATE:
			if (vt_page_iter_init(&it, fmt, p, ps) == 0)
				while (vt_page_iter_next(&it, &ev) == 1)
					n += ev.id != 0xffff;
			break;
		}
	}
	sink += n + dst[0];
	if (events)
		*events = n;
	return now() - t0;
}

int main(int argc, char **argv)
{
	static const char *names[] = { "memcpy", "header check", "validate (walk)", "iterate" };
	int repeats = 7, mib = 64, opt, i, r, w;
	size_t have = 0, cap = 0, npages, filled;
	struct vt_page_fmt fmt;
	uint8_t *pages = NULL, *src, *dst;
	double t[4][64], best[4];
	uint64_t events = 0;

	while ((opt = getopt(argc, argv, "r:m:")) != -1) {
		if (opt == 'r')
			repeats = atoi(optarg);
		else if (opt == 'm')
			mib = atoi(optarg);
		else
			goto usage;
	}
	if (optind >= argc || repeats < 1 || repeats > 64 || mib < 1)
		goto usage;
	vt_page_fmt_default(&fmt);

	for (i = optind; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);
		struct stat st;

		if (fd < 0 || fstat(fd, &st) < 0) {
			fprintf(stderr, "bench-pages: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		st.st_size -= st.st_size % fmt.subbuf_size;
		if (have + st.st_size > cap) {
			cap = (have + st.st_size) * 2;
			pages = realloc(pages, cap);
			if (!pages)
				return 1;
		}
		if (read(fd, pages + have, st.st_size) != st.st_size) {
			fprintf(stderr, "bench-pages: %s: short read\n", argv[i]);
			return 1;
		}
		have += st.st_size;
		close(fd);
	}
	/* Keep only pages the validator accepts: the benchmark measures good input. */
	for (filled = 0, i = 0; (size_t)i * fmt.subbuf_size < have; i++) {
		uint8_t *p = pages + (size_t)i * fmt.subbuf_size;

		if (vt_page_validate(&fmt, p, fmt.subbuf_size, NULL, NULL, NULL, NULL) == 0)
			memmove(pages + filled++ * fmt.subbuf_size, p, fmt.subbuf_size);
	}
	if (!filled) {
		fprintf(stderr, "bench-pages: no valid pages in the input\n");
		return 1;
	}
	npages = ((size_t)mib << 20) / fmt.subbuf_size;
	src = aligned_alloc(4096, npages * fmt.subbuf_size);
	dst = aligned_alloc(4096, npages * fmt.subbuf_size);
	if (!src || !dst)
		return 1;
	for (i = 0; (size_t)i < npages; i++)
		memcpy(src + (size_t)i * fmt.subbuf_size,
		       pages + (i % filled) * fmt.subbuf_size, fmt.subbuf_size);
	memset(dst, 0, npages * fmt.subbuf_size);

	for (r = 0; r < repeats; r++)
		for (w = 0; w < 4; w++)
			t[w][r] = run(w, &fmt, src, dst, npages, w == ITERATE ? &events : NULL);
	for (w = 0; w < 4; w++)
		best[w] = median(t[w], repeats);

	printf("bench-pages: %zu distinct real pages replicated to %d MiB (%zu pages), "
	       "median of %d runs\n", filled, mib, npages, repeats);
	for (w = 0; w < 4; w++) {
		double gbs = npages * (double)fmt.subbuf_size / best[w] / 1e9;

		printf("  %-16s %8.2f GB/s  %8.1f ns/page  %6.2fx memcpy speed",
		       names[w], gbs, best[w] / npages * 1e9, best[COPY] / best[w]);
		if (w == ITERATE || w == VALIDATE)
			printf("  %.1f M events/s", events / best[w] / 1e6);
		printf("\n");
	}
	printf("  events per page: %.1f\n", (double)events / npages);
	printf("  target: header check >= 20x memcpy: %s (%.1fx)\n",
	       best[COPY] / best[HEADER] >= 20 ? "met" : "NOT met", best[COPY] / best[HEADER]);
	free(src);
	free(dst);
	free(pages);
	return 0;
usage:
	fprintf(stderr, "usage: bench-pages [-r REPEATS] [-m MIB] RAWFILE...\n");
	return 2;
}
