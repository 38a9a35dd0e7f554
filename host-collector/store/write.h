/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Finishing a spool, shared by its four files (store-internal): finish.c drives it (and
 * recover.c), output.c writes trace.dat files by copying and holds what the
 * others share (page walk, options, bad pages, installing files), inplace.c
 * lays a spool's data file out as the trace.dat where the filesystem can move
 * extents, and manifest.c writes manifest.json. finish.c calls the others,
 * inplace.c calls output.c, and nothing calls back.
 */
#ifndef STORE_WRITE_H
#define STORE_WRITE_H

#include "collect.h"
#include "spool.h"
#include "vt_pages.h"
#include "vt_tracedat.h"

#define CHUNK_PAGES	256

struct cpu_sum {
	unsigned int cpu;
	uint64_t bytes, pages, bad_pages, events, missed_pages, lost_in_pages;
	uint64_t bad_pages_kept;	/* of @bad_pages, in bad-pages/ (at most SPOOL_BAD_KEEP) */
};

/* One trace being written: what the spool says (rec) and what the finish counts. */
struct trace_sum {
	struct spool_trace rec;
	char dir[4300];			/* its spool directory, for messages */
	int dir_fd;			/* and its fd */
	char file[128];
	bool written;
	unsigned int nr_cpus;
	uint32_t subbuf;
	struct cpu_sum cpus[COLLECT_MAX_CPUS];
	unsigned int nr_sums;
	uint64_t text_replaced;		/* metadata characters made safe (vt_meta_sanitize()) */
	uint32_t formats_refused;	/* event formats left out */
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

/* `join`: one CPU's stream across the migration. */
struct join_cpu {
	unsigned int cpu;
	bool marked;			/* the destination saw its resume mark */
	uint64_t src_to;		/* stream bytes the source received */
	uint64_t dst_from;		/* where the destination's first byte stands */
	uint64_t skip;			/* bytes both received: the destination's are dropped */
	uint64_t gap;			/* bytes neither received */
	uint64_t src_pages, src_events, dst_pages, dst_events;
};

/* `join`: what manifest.json says about the two recordings and the switchover. */
struct join_sum {
	const char *src, *dst;
	bool two_hosts;
	uint64_t sync_bound_ns;		/* --host-sync-bound */
	int64_t host_delta;		/* destination host TSC -> source's, ticks */
	uint64_t stop_tsc;		/* the source's switchover STOP */
	uint64_t resume_tsc;		/* the destination's RESUME (source TSC) */
	uint64_t switch_guest_tsc;	/* the guest's TSC at the switchover */
	uint64_t switch_host_tsc;	/* where the destination's epochs begin */
	uint64_t qemu_downtime_ms;
	unsigned int nr;
	struct join_cpu cpus[COLLECT_MAX_CPUS];
};

struct finish {
	const char *out;		/* the output directory, for messages */
	int out_fd;			/* and its fd: every file is made relative to it */
	int spool_fd;
	int bad_fd;			/* bad-pages/: -1 not yet open, -2 refused */
	bool keep_spool;
	bool fsync;
	char spool[4200];
	struct spool_options opt;
	struct trace_sum *traces;
	unsigned int nr_traces;
	const struct join_sum *join;	/* `join`'s output, else NULL */
};

void output_problem(struct trace_sum *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int output_walk_pages(struct finish *r, struct trace_sum *t, struct vt_tracedat *w, int fd,
		      uint64_t off, uint64_t len, struct cpu_sum *c, const char *bad);
void output_bad_name(struct trace_sum *t, struct cpu_sum *c, char *bad, size_t size);
void output_keep_ingest_bad(struct finish *r, struct trace_sum *t, int dir, struct cpu_sum *c,
			    const char *bad);
int output_create_tmp(struct finish *r, const char *name, char *tmp, size_t size);
int output_install(struct finish *r, const char *tmp, const char *name);
int output_install_check(struct finish *r, const char *name);
int output_write_cpu(struct finish *r, struct trace_sum *t, struct vt_tracedat *w, int dir,
		     struct cpu_sum *c, const struct spool_data *sd);
int output_add_options(struct finish *r, struct trace_sum *t, struct vt_tracedat *w);
int output_flush_file(int fd);

/* inplace.c */
int inplace_load_data(struct trace_sum *t, int dir, struct spool_data *sd);
int inplace_write(struct finish *r, struct trace_sum *t, int dir, const struct vt_meta *meta,
		  const struct vt_tracedat_opts *opts, struct spool_data *sd);

/* manifest.c */
int manifest_write(struct finish *r, bool recovered);

#endif
