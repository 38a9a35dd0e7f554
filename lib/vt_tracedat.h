/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A trace.dat writer (file versions 6 and 7, what trace-cmd report reads).
 *
 * Usage: vt_tracedat_create() writes the metadata at once; add options; then
 * per CPU either vt_tracedat_cpu_fd()/vt_tracedat_cpu_path(), or
 * vt_tracedat_cpu_begin(), any number of vt_tracedat_cpu_write() and
 * vt_tracedat_cpu_end(), or (uncompressed only) vt_tracedat_cpu_present() for
 * pages the caller puts at the offset it returns; finally vt_tracedat_finish()
 * and vt_tracedat_free(). With zstd, a CPU's first pages may come as chunks
 * compressed beforehand (vt_tdchunker_encode(), vt_tracedat_cpu_chunks()).
 *
 * Per-CPU data is streamed through a bounded buffer (a few compression chunks)
 * and written as whole pages at page-aligned offsets; a trailing partial page
 * is completed with zeros. Version 6 needs every option before the first
 * per-CPU data (-EBUSY afterwards); version 7 takes options until finish.
 * Any error is sticky: later calls return it again.
 */
#ifndef VT_TRACEDAT_H
#define VT_TRACEDAT_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "vt_meta.h"

/* trace.dat option ids (trace-cmd's numbering). */
#define VT_TD_OPT_DONE		0
#define VT_TD_OPT_DATE		1
#define VT_TD_OPT_CPUSTAT	2
#define VT_TD_OPT_BUFFER	3
#define VT_TD_OPT_TRACECLOCK	4
#define VT_TD_OPT_UNAME		5
#define VT_TD_OPT_CPUCOUNT	8
#define VT_TD_OPT_VERSION	9
#define VT_TD_OPT_TRACEID	11
#define VT_TD_OPT_TIME_SHIFT	12
#define VT_TD_OPT_GUEST		13
#define VT_TD_OPT_TSC2NSEC	14
#define VT_TD_OPT_STRINGS	15
#define VT_TD_OPT_HEADER_INFO	16
#define VT_TD_OPT_FTRACE_EVENTS	17
#define VT_TD_OPT_EVENT_FORMATS	18
#define VT_TD_OPT_KALLSYMS	19
#define VT_TD_OPT_PRINTK	20
#define VT_TD_OPT_CMDLINES	21

enum vt_tracedat_compression {
	VT_TD_COMPRESS_DEFAULT = 0,	/* zstd for version 7, none for version 6 */
	VT_TD_COMPRESS_NONE,
	VT_TD_COMPRESS_ZSTD,
};

/* vt_tracedat_opts.flags */
#define VT_TD_VALIDATE	(1u << 0)	/* walk every page: count events, drop malformed pages */
#define VT_TD_STRICT	(1u << 1)	/* with VALIDATE: a malformed page fails with -EBADMSG */
#define VT_TD_SINGLE_THREAD (1u << 2)	/* compress on the calling thread (no workers) */

#define VT_TD_THREADS_MAX		4u	/* zstd worker threads at most */

#define VT_TD_CHUNK_PAGES_DEFAULT	16u	/* pages per zstd chunk */
#define VT_TD_CHUNK_PAGES_MAX		256u

/**
 * struct vt_tracedat_opts - how to write the file
 * @version: 6 or 7 (0 means 7)
 * @compression: v7 only; v6 is never compressed
 * @trace_id: written as the TRACEID option when non-zero
 * @flags: VT_TD_VALIDATE, VT_TD_STRICT
 * @chunk_pages: pages per compressed chunk, and per write; 0 for the default
 * @zstd_level: zstd compression level, 0 for zstd's default
 * @zstd_threads: zstd worker threads, 0 for one per online CPU but the
 *	caller's (at least 1, at most VT_TD_THREADS_MAX). Chunks are compressed by the workers while the caller
 *	reads the next ones, and written in order: the file is byte for byte the
 *	one VT_TD_SINGLE_THREAD writes. Each worker holds a zstd context and two
 *	chunks (in and out) in memory.
 */
struct vt_tracedat_opts {
	unsigned int version;
	enum vt_tracedat_compression compression;
	uint64_t trace_id;
	unsigned int flags;
	uint32_t chunk_pages;
	int zstd_level;
	uint32_t zstd_threads;
};

/**
 * struct vt_tracedat_stats - what was written for one CPU, or for all
 * @pages: pages written
 * @bytes: page bytes written, before compression
 * @file_bytes: bytes the data takes in the file
 * @events: data events in those pages (counted only with VT_TD_VALIDATE)
 * @missed_pages: pages flagged "events were lost before this page"
 * @lost_events: sum of the lost-event counts the pages store
 * @padded_pages: trailing partial pages completed with zeros
 * @repaired_pages: partial pages whose commit length had to be cut back to
 *	the last whole event
 * @bad_pages: malformed pages dropped (VT_TD_VALIDATE without VT_TD_STRICT)
 */
struct vt_tracedat_stats {
	uint64_t pages;
	uint64_t bytes;
	uint64_t file_bytes;
	uint64_t events;
	uint64_t missed_pages;
	uint64_t lost_events;
	uint64_t padded_pages;
	uint64_t repaired_pages;
	uint64_t bad_pages;
};

/**
 * struct vt_tracedat_fault - the first malformed page seen
 * @cpu: its CPU, -1 when there was none
 * @page: its index in that CPU's input stream
 * @offset: where in the page the fault is
 * @reason: why (a static string)
 */
struct vt_tracedat_fault {
	int cpu;
	uint64_t page;
	uint32_t offset;
	const char *reason;
};

/**
 * struct vt_tracedat_tshift_cpu - time-shift samples of one guest CPU
 * @nr: number of samples
 * @times: guest times at which each sample holds
 * @offsets: offsets added to guest time
 * @scalings: multipliers, NULL for all 1
 * @frac_bits: right shifts after the multiply, NULL for all 0
 *
 * The reader computes host = ((guest * scaling) >> frac_bits) + offset.
 */
struct vt_tracedat_tshift_cpu {
	uint32_t nr;
	const int64_t *times;
	const int64_t *offsets;
	const int64_t *scalings;
	const int64_t *frac_bits;
};

#define VT_TD_TSHIFT_INTERPOLATE	(1u << 0)

struct vt_tracedat;

struct vt_tracedat *vt_tracedat_create(int fd, const struct vt_meta *meta,
				       const struct vt_tracedat_opts *opts);
int vt_tracedat_add_option(struct vt_tracedat *w, uint16_t id, const void *data, size_t len);
int vt_tracedat_add_cpustat(struct vt_tracedat *w, uint32_t cpu, const char *text, size_t len);
int vt_tracedat_add_date(struct vt_tracedat *w, int64_t usecs);
int vt_tracedat_add_time_shift(struct vt_tracedat *w, uint64_t peer_id, uint32_t flags,
			       uint32_t nr_cpus, const struct vt_tracedat_tshift_cpu *cpus);
int vt_tracedat_add_guest(struct vt_tracedat *w, const char *name, uint64_t guest_id,
			  uint32_t nr_vcpus, const uint32_t *host_tids);
int vt_tracedat_set_tsc2nsec(struct vt_tracedat *w, uint32_t mult, uint32_t shift,
			     uint64_t offset);
int vt_tracedat_cpu_begin(struct vt_tracedat *w, uint32_t cpu);
int vt_tracedat_cpu_write(struct vt_tracedat *w, const void *data, size_t len);
int vt_tracedat_cpu_end(struct vt_tracedat *w);
int vt_tracedat_cpu_fd(struct vt_tracedat *w, uint32_t cpu, int fd);
int vt_tracedat_cpu_path(struct vt_tracedat *w, uint32_t cpu, const char *path);
int vt_tracedat_cpu_present(struct vt_tracedat *w, uint32_t cpu, uint64_t len,
			    uint64_t *offset);
int vt_tracedat_cpu_chunks(struct vt_tracedat *w, int fd, uint64_t len, uint64_t raw,
			   const struct vt_tracedat_stats *add);
int vt_tracedat_finish(struct vt_tracedat *w);
void vt_tracedat_stats(const struct vt_tracedat *w, int cpu, struct vt_tracedat_stats *st);
void vt_tracedat_fault(const struct vt_tracedat *w, struct vt_tracedat_fault *f);
void vt_tracedat_free(struct vt_tracedat *w);

/* Chunks compressed ahead of the writer (e.g. while the pages stream in). */
struct vt_tdchunker;

struct vt_tdchunker *vt_tdchunker_new(uint32_t subbuf_size, uint32_t chunk_pages, int zstd_level);
size_t vt_tdchunker_bytes(const struct vt_tdchunker *c);
ssize_t vt_tdchunker_encode(struct vt_tdchunker *c, const void *in, size_t len,
			    const uint8_t **out);
void vt_tdchunker_rest(struct vt_tdchunker *c);
void vt_tdchunker_free(struct vt_tdchunker *c);

#endif
