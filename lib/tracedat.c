// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The trace.dat writer. Layouts (little-endian throughout):
 *
 * v6: magic "6" endian long-size page-size, the metadata blocks back to back,
 *     u32 nr_cpus, "options  \0" {u16 id, u32 size, data}... u16 0,
 *     "flyrecord\0" {u64 offset, u64 size} per CPU, u64 len + "[clock]"
 *     (only when a TRACECLOCK option exists), then the page-aligned CPU data.
 *
 * v7: magic "7" endian long-size page-size "zstd\0VER\0" | "none\0\0",
 *     u64 offset of the options section, then an unbroken chain of sections
 *     {u16 id, u16 flags, u32 string id, u64 size} that readers walk from the
 *     start: strings, the six metadata sections, the flyrecord buffer (CPU
 *     data page-aligned inside it; compressed as {u32 nr_chunks, {u32 zsize,
 *     u32 size, data}...} per CPU) and last the options section, which ends
 *     with DONE {u64 next = 0}.
 *
 * The readers this was checked against are trace-cmd 3.1.6's report and dump.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "vt_le.h"
#include "vt_pages.h"
#include "vt_tracedat.h"
#include "vt_grow.h"

#define SEC_FL_COMPRESS		1u
#define OPT_MAX_SIZE		(64u << 20)
#define TSHIFT_MAX_SAMPLES	(1u << 20)
#define VT_TD_CHUNK_BYTES_MAX	(4u << 20)

static const uint8_t td_magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

/* Section descriptions, in the strings section in this order. */
enum { STR_STRINGS, STR_OPTIONS, STR_HEADERS, STR_FTRACE, STR_EVENTS, STR_KALLSYMS,
       STR_PRINTK, STR_CMDLINES, STR_FLYRECORD, NR_STRS };
static const char *const td_strings[NR_STRS] = {
	"strings", "options", "headers", "ftrace events", "events format", "kallsyms",
	"printk", "command lines", "buffer flyrecord",
};

/* A growable byte buffer; the first allocation failure sticks in @err. */
struct dbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

/*
 * zstd chunks compressed on worker threads: a ring of jobs, submitted in file
 * order by the writer, taken in that order by the workers, written in that
 * order by the writer. A job owns a chunk buffer (swapped with the writer's
 * on submission, so no copy) and an output buffer.
 */
enum td_job_state { JOB_FREE, JOB_QUEUED, JOB_BUSY, JOB_DONE };

struct td_job {
	uint8_t *in;
	size_t len;
	uint8_t *out;
	size_t out_cap;
	size_t zlen;
	int ret;
	enum td_job_state state;
};

struct td_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* to workers: a job is queued, or stop */
	pthread_cond_t done;		/* to the writer: a job is done */
	pthread_t *threads;
	unsigned int nr_threads;
	struct td_job *jobs;
	unsigned int nr_jobs;
	unsigned int head;		/* oldest job not written yet */
	unsigned int take;		/* next job for a worker */
	unsigned int pending;		/* submitted, not written yet */
	int zlevel;
	bool stop;
};

struct td_cpu {
	uint64_t offset;
	uint64_t size;
	bool written;
	struct vt_tracedat_stats st;
};

struct vt_tracedat {
	int fd;
	int err;
	unsigned int version;
	bool zstd;
	unsigned int flags;
	uint64_t trace_id;
	struct vt_page_fmt fmt;
	uint32_t nr_cpus;
	char clock[64];
	bool has_clock;
	char *trace_clock;
	char *uname;
	uint64_t pos;
	uint32_t str_off[NR_STRS];

	struct dbuf opts;
	uint8_t tsc2nsec[16];
	bool has_tsc2nsec;

	uint64_t options_ptr;		/* v7: where the options offset goes */
	uint64_t sec_off[6];		/* v7: HEADER_INFO .. CMDLINES sections */
	uint64_t fly_off;		/* v7: the flyrecord section header */
	uint64_t table_off;		/* v6: the flyrecord offset table */
	bool data_started;
	bool finished;

	int cur;			/* CPU between begin and end, or -1 */
	uint64_t in_pages;		/* pages of that CPU seen so far */
	uint8_t *chunk;
	size_t chunk_len, chunk_cap;
	uint8_t *zout;
	size_t zout_cap;
	uint32_t nr_chunks;
	uint64_t count_off;
	ZSTD_CCtx *zc;
	int zlevel;
	struct td_pool *pool;		/* NULL: compress on the calling thread */

	struct td_cpu *cpus;
	struct vt_tracedat_fault fault;
};

static void db_put(struct dbuf *b, const void *data, size_t len)
{
	if (b->err)
		return;
	if (vt_grow((void **)&b->p, &b->cap, b->len + len, 1) < 0) {
		b->err = -ENOMEM;
		return;
	}
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void db_u16(struct dbuf *b, uint16_t v)
{
	uint8_t x[2];

	vt_put_le16(x, v);
	db_put(b, x, 2);
}

static void db_u32(struct dbuf *b, uint32_t v)
{
	uint8_t x[4];

	vt_put_le32(x, v);
	db_put(b, x, 4);
}

static void db_u64(struct dbuf *b, uint64_t v)
{
	uint8_t x[8];

	vt_put_le64(x, v);
	db_put(b, x, 8);
}

static void db_str(struct dbuf *b, const char *s)
{
	db_put(b, s, strlen(s) + 1);
}

static void db_free(struct dbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* --- Output --- */

static int td_pwrite(struct vt_tracedat *w, const void *data, size_t len, uint64_t off)
{
	const uint8_t *p = data;
	ssize_t n;

	while (len) {
		n = pwrite(w->fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/* Appends at w->pos: the file is written only by position, never by its offset. */
static int td_write(struct vt_tracedat *w, const void *data, size_t len)
{
	int ret = td_pwrite(w, data, len, w->pos);

	if (ret == 0)
		w->pos += len;
	return ret;
}

static int td_pwrite64(struct vt_tracedat *w, uint64_t v, uint64_t off)
{
	uint8_t x[8];

	vt_put_le64(x, v);
	return td_pwrite(w, x, 8, off);
}

/* Zero-fill up to the next multiple of the page size. */
static int td_align(struct vt_tracedat *w)
{
	static const uint8_t zeros[4096];
	uint64_t pad = (w->fmt.subbuf_size - w->pos % w->fmt.subbuf_size) % w->fmt.subbuf_size;
	int ret = 0;

	while (pad && !ret) {
		size_t n = pad > sizeof(zeros) ? sizeof(zeros) : pad;

		ret = td_write(w, zeros, n);
		pad -= n;
	}
	return ret;
}

/* Errors stick: once the file is inconsistent nothing else may be written. */
static int td_fail(struct vt_tracedat *w, int ret)
{
	if (ret < 0 && !w->err)
		w->err = ret;
	return ret;
}

/* --- Metadata --- */

static void body_headers(struct dbuf *b, const struct vt_meta *m)
{
	db_str(b, "header_page");
	db_u64(b, m->header_page.len);
	db_put(b, m->header_page.data, m->header_page.len);
	db_str(b, "header_event");
	db_u64(b, m->header_event.len);
	db_put(b, m->header_event.data, m->header_event.len);
}

static void body_formats(struct dbuf *b, const struct vt_meta_system *s)
{
	uint32_t i;

	db_u32(b, s->nr_events);
	for (i = 0; i < s->nr_events; i++) {
		db_u64(b, s->events[i].format.len);
		db_put(b, s->events[i].format.data, s->events[i].format.len);
	}
}

static void body_events(struct dbuf *b, const struct vt_meta *m)
{
	uint32_t i, n = 0;

	for (i = 0; i < m->nr_systems; i++)
		n += m->systems[i].nr_events > 0;
	db_u32(b, n);
	for (i = 0; i < m->nr_systems; i++) {
		if (!m->systems[i].nr_events)
			continue;
		db_str(b, m->systems[i].name);
		body_formats(b, &m->systems[i]);
	}
}

static void body_blob32(struct dbuf *b, const struct vt_blob *blob)
{
	db_u32(b, blob->len);
	db_put(b, blob->data, blob->len);
}

static void body_blob64(struct dbuf *b, const struct vt_blob *blob)
{
	db_u64(b, blob->len);
	db_put(b, blob->data, blob->len);
}

/* One of the six metadata blocks; @i follows VT_TD_OPT_HEADER_INFO + i. */
static void body_meta(struct dbuf *b, const struct vt_meta *m, int i)
{
	switch (i) {
	case 0:
		body_headers(b, m);
		break;
	case 1:
		body_formats(b, &m->ftrace);
		break;
	case 2:
		body_events(b, m);
		break;
	case 3:
		body_blob32(b, &m->kallsyms);
		break;
	case 4:
		body_blob32(b, &m->printk_formats);
		break;
	default:
		body_blob64(b, &m->saved_cmdlines);
		break;
	}
}

static int section_header(struct vt_tracedat *w, uint16_t id, uint16_t flags, uint32_t str,
			  uint64_t size)
{
	uint8_t h[16];

	vt_put_le16(h, id);
	vt_put_le16(h + 2, flags);
	vt_put_le32(h + 4, w->str_off[str]);
	vt_put_le64(h + 8, size);
	return td_write(w, h, sizeof(h));
}

static int compress_into(struct vt_tracedat *w, const void *src, size_t len, size_t *zlen)
{
	size_t bound = ZSTD_compressBound(len), n;

	if (bound > w->zout_cap) {
		uint8_t *p = realloc(w->zout, bound);

		if (!p)
			return -ENOMEM;
		w->zout = p;
		w->zout_cap = bound;
	}
	n = ZSTD_compressCCtx(w->zc, w->zout, w->zout_cap, src, len, w->zlevel);
	if (ZSTD_isError(n))
		return -EIO;
	*zlen = n;
	return 0;
}

/* A whole v7 section; metadata sections are one compressed block each. */
static int write_section(struct vt_tracedat *w, uint16_t id, uint32_t str,
			 const struct dbuf *body, bool compress)
{
	uint8_t sizes[8];
	size_t zlen;
	int ret;

	if (!compress)
		return section_header(w, id, 0, str, body->len) ?:
		       td_write(w, body->p, body->len);
	if (body->len > UINT32_MAX)
		return -EFBIG;
	ret = compress_into(w, body->p, body->len, &zlen);
	if (ret < 0)
		return ret;
	vt_put_le32(sizes, zlen);
	vt_put_le32(sizes + 4, body->len);
	return section_header(w, id, SEC_FL_COMPRESS, str, 8 + zlen) ?:
	       td_write(w, sizes, 8) ?: td_write(w, w->zout, zlen);
}

static int write_start(struct vt_tracedat *w)
{
	struct dbuf b = { 0 };
	int ret;

	db_put(&b, td_magic, sizeof(td_magic));
	db_str(&b, w->version == 6 ? "6" : "7");
	db_put(&b, "\0", 1);				/* little endian */
	db_put(&b, (uint8_t []){ w->fmt.commit_size }, 1);
	db_u32(&b, w->fmt.subbuf_size);
	if (w->version >= 7) {
		db_str(&b, w->zstd ? "zstd" : "none");
		db_str(&b, w->zstd ? ZSTD_versionString() : "");
		w->options_ptr = b.len;
		db_u64(&b, 0);
	}
	ret = b.err ?: td_write(w, b.p, b.len);
	db_free(&b);
	return ret;
}

static int write_meta_v7(struct vt_tracedat *w, const struct vt_meta *m)
{
	static const uint32_t strs[6] = { STR_HEADERS, STR_FTRACE, STR_EVENTS, STR_KALLSYMS,
					  STR_PRINTK, STR_CMDLINES };
	struct dbuf b = { 0 };
	int i, ret;

	for (i = 0; i < NR_STRS; i++) {
		w->str_off[i] = b.len;
		db_str(&b, td_strings[i]);
	}
	ret = b.err ?: write_section(w, VT_TD_OPT_STRINGS, STR_STRINGS, &b, false);
	for (i = 0; i < 6 && !ret; i++) {
		b.len = 0;
		body_meta(&b, m, i);
		w->sec_off[i] = w->pos;
		ret = b.err ?: write_section(w, VT_TD_OPT_HEADER_INFO + i, strs[i], &b, w->zstd);
	}
	db_free(&b);
	return ret;
}

static int write_meta_v6(struct vt_tracedat *w, const struct vt_meta *m)
{
	struct dbuf b = { 0 };
	int i, ret = 0;

	for (i = 0; i < 6 && !ret; i++) {
		b.len = 0;
		body_meta(&b, m, i);
		ret = b.err ?: td_write(w, b.p, b.len);
	}
	b.len = 0;
	db_u32(&b, w->nr_cpus);
	ret = ret ?: b.err ?: td_write(w, b.p, b.len);
	db_free(&b);
	return ret;
}

/* --- Options --- */

static void opt_put(struct dbuf *b, uint16_t id, const void *data, size_t len)
{
	db_u16(b, id);
	db_u32(b, len);
	db_put(b, data, len);
}

static int opt_check(struct vt_tracedat *w, size_t len)
{
	if (w->err)
		return w->err;
	if (w->finished || (w->version == 6 && w->data_started))
		return -EBUSY;
	if (len > OPT_MAX_SIZE)
		return -E2BIG;
	return 0;
}

/**
 * vt_tracedat_add_option() - add a raw option
 * @w: the writer
 * @id: the option id (VT_TD_OPT_*)
 * @data: its payload, already in file byte order
 * @len: payload size
 *
 * Options come out in the order they were added, after the ones the writer
 * generates itself (TSC2NSEC, TRACECLOCK, UNAME, CPUCOUNT, TRACEID).
 *
 * Return: 0, -EBUSY when too late (v6 after CPU data, or after finish),
 * -E2BIG, -ENOMEM, or the writer's sticky error.
 */
int vt_tracedat_add_option(struct vt_tracedat *w, uint16_t id, const void *data, size_t len)
{
	int ret = opt_check(w, len);

	if (ret < 0)
		return ret;
	opt_put(&w->opts, id, data, len);
	return w->opts.err;
}

/* Encode into @b, then add it as option @id. */
static int add_built(struct vt_tracedat *w, uint16_t id, struct dbuf *b)
{
	int ret = b->err ?: vt_tracedat_add_option(w, id, b->p, b->len);

	db_free(b);
	return ret;
}

/**
 * vt_tracedat_add_cpustat() - add a CPUSTAT option
 * @w: the writer
 * @cpu: the CPU whose per_cpu/cpuN/stats text this is
 * @text: the text (need not be NUL-terminated)
 * @len: its length
 *
 * Written as "CPU: N\n" followed by the text, the way trace-cmd record does.
 *
 * Return: as vt_tracedat_add_option().
 */
int vt_tracedat_add_cpustat(struct vt_tracedat *w, uint32_t cpu, const char *text, size_t len)
{
	struct dbuf b = { 0 };
	char head[32];

	snprintf(head, sizeof(head), "CPU: %u\n", cpu);
	db_put(&b, head, strlen(head));
	db_put(&b, text, len);
	db_put(&b, "", 1);
	return add_built(w, VT_TD_OPT_CPUSTAT, &b);
}

/**
 * vt_tracedat_add_date() - add a DATE option
 * @w: the writer
 * @usecs: microseconds the reader adds to every timestamp (after conversion
 *	to nanoseconds, unless it is told to ignore the date)
 *
 * Return: as vt_tracedat_add_option().
 */
int vt_tracedat_add_date(struct vt_tracedat *w, int64_t usecs)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)usecs);
	return vt_tracedat_add_option(w, VT_TD_OPT_DATE, buf, strlen(buf) + 1);
}

/**
 * vt_tracedat_add_time_shift() - add a TIME_SHIFT option (in a guest's file)
 * @w: the writer
 * @peer_id: the trace id of the peer, usually the host's file
 * @flags: VT_TD_TSHIFT_INTERPOLATE
 * @nr_cpus: entries in @cpus (guest CPUs)
 * @cpus: per guest CPU samples; times, offsets are required when nr > 0
 *
 * The per-CPU fraction-bit arrays trace-cmd expects after the samples are
 * always written.
 *
 * Return: 0, -EINVAL for missing arrays or too many samples, or as
 * vt_tracedat_add_option().
 */
int vt_tracedat_add_time_shift(struct vt_tracedat *w, uint64_t peer_id, uint32_t flags,
			       uint32_t nr_cpus, const struct vt_tracedat_tshift_cpu *cpus)
{
	struct dbuf b = { 0 };
	uint32_t c, i;

	if (nr_cpus > VT_META_MAX_CPUS || (nr_cpus && !cpus))
		return -EINVAL;
	for (c = 0; c < nr_cpus; c++)
		if (cpus[c].nr > TSHIFT_MAX_SAMPLES ||
		    (cpus[c].nr && (!cpus[c].times || !cpus[c].offsets)))
			return -EINVAL;
	db_u64(&b, peer_id);
	db_u32(&b, flags);
	db_u32(&b, nr_cpus);
	for (c = 0; c < nr_cpus; c++) {
		const struct vt_tracedat_tshift_cpu *s = &cpus[c];

		db_u32(&b, s->nr);
		for (i = 0; i < s->nr; i++)
			db_u64(&b, s->times[i]);
		for (i = 0; i < s->nr; i++)
			db_u64(&b, s->offsets[i]);
		for (i = 0; i < s->nr; i++)
			db_u64(&b, s->scalings ? s->scalings[i] : 1);
	}
	for (c = 0; c < nr_cpus; c++)
		for (i = 0; i < cpus[c].nr; i++)
			db_u64(&b, cpus[c].frac_bits ? cpus[c].frac_bits[i] : 0);
	return add_built(w, VT_TD_OPT_TIME_SHIFT, &b);
}

/**
 * vt_tracedat_add_guest() - add a GUEST option (in the host's file)
 * @w: the writer
 * @name: the guest's name
 * @guest_id: the trace id the guest's file carries in its TRACEID option
 * @nr_vcpus: entries in @host_tids
 * @host_tids: the host thread running each vCPU, indexed by vCPU; 0 for a
 *	vCPU whose thread is not known, which is left out of the map (a map
 *	naming thread 0 would tell readers the vCPU is the idle task)
 *
 * Return: 0, -EINVAL, or as vt_tracedat_add_option().
 */
int vt_tracedat_add_guest(struct vt_tracedat *w, const char *name, uint64_t guest_id,
			  uint32_t nr_vcpus, const uint32_t *host_tids)
{
	struct dbuf b = { 0 };
	uint32_t i;

	uint32_t known = 0;

	if (!name || nr_vcpus > VT_META_MAX_CPUS || (nr_vcpus && !host_tids))
		return -EINVAL;
	for (i = 0; i < nr_vcpus; i++)
		known += host_tids[i] != 0;
	db_str(&b, name);
	db_u64(&b, guest_id);
	db_u32(&b, known);
	for (i = 0; i < nr_vcpus; i++) {
		if (!host_tids[i])
			continue;
		db_u32(&b, i);
		db_u32(&b, host_tids[i]);
	}
	return add_built(w, VT_TD_OPT_GUEST, &b);
}

/**
 * vt_tracedat_set_tsc2nsec() - add the TSC2NSEC option
 * @w: the writer
 * @mult: multiplier
 * @shift: right shift
 * @offset: added after conversion
 *
 * It is written before TRACECLOCK, which is the order report needs to show
 * x86-tsc timestamps as time.
 *
 * Return: as vt_tracedat_add_option().
 */
int vt_tracedat_set_tsc2nsec(struct vt_tracedat *w, uint32_t mult, uint32_t shift,
			     uint64_t offset)
{
	int ret = opt_check(w, 16);

	if (ret < 0)
		return ret;
	vt_put_le32(w->tsc2nsec, mult);
	vt_put_le32(w->tsc2nsec + 4, shift);
	vt_put_le64(w->tsc2nsec + 8, offset);
	w->has_tsc2nsec = true;
	return 0;
}

/* Every option, generated ones first; v7 adds section pointers and BUFFER. */
static void build_options(struct vt_tracedat *w, struct dbuf *b)
{
	uint8_t x[8];
	uint32_t c;
	int i;

	if (w->version >= 7) {
		for (i = 0; i < 6; i++) {
			vt_put_le64(x, w->sec_off[i]);
			opt_put(b, VT_TD_OPT_HEADER_INFO + i, x, 8);
		}
	}
	if (w->has_tsc2nsec)
		opt_put(b, VT_TD_OPT_TSC2NSEC, w->tsc2nsec, 16);
	if (w->has_clock)
		opt_put(b, VT_TD_OPT_TRACECLOCK, w->trace_clock, strlen(w->trace_clock) + 1);
	if (w->uname && *w->uname)
		opt_put(b, VT_TD_OPT_UNAME, w->uname, strlen(w->uname) + 1);
	vt_put_le32(x, w->nr_cpus);
	opt_put(b, VT_TD_OPT_CPUCOUNT, x, 4);
	if (w->trace_id) {
		vt_put_le64(x, w->trace_id);
		opt_put(b, VT_TD_OPT_TRACEID, x, 8);
	}
	db_put(b, w->opts.p, w->opts.len);
	if (w->version < 7)
		return;

	db_u16(b, VT_TD_OPT_BUFFER);
	db_u32(b, 8 + 1 + strlen(w->has_clock ? w->clock : "local") + 1 + 8 + w->nr_cpus * 20);
	db_u64(b, w->fly_off);
	db_str(b, "");
	db_str(b, w->has_clock ? w->clock : "local");
	db_u32(b, w->fmt.subbuf_size);
	db_u32(b, w->nr_cpus);
	for (c = 0; c < w->nr_cpus; c++) {
		db_u32(b, c);
		db_u64(b, w->cpus[c].offset);
		db_u64(b, w->cpus[c].size);
	}
	vt_put_le64(x, 0);
	opt_put(b, VT_TD_OPT_DONE, x, 8);
}

/* v6: options, "flyrecord", the offset table (patched later), the clock. */
static int start_data_v6(struct vt_tracedat *w)
{
	struct dbuf b = { 0 };
	char clk[80];
	uint32_t c;
	int ret;

	db_put(&b, "options  ", 10);
	build_options(w, &b);
	db_u16(&b, 0);
	db_put(&b, "flyrecord", 10);
	w->table_off = w->pos + b.len;
	for (c = 0; c < w->nr_cpus; c++) {
		db_u64(&b, 0);
		db_u64(&b, 0);
	}
	if (w->has_clock) {
		snprintf(clk, sizeof(clk), "[%s]", w->clock);
		db_u64(&b, strlen(clk));
		db_put(&b, clk, strlen(clk));
	}
	ret = b.err ?: td_write(w, b.p, b.len);
	db_free(&b);
	return ret;
}

static int start_data(struct vt_tracedat *w)
{
	int ret;

	if (w->data_started)
		return 0;
	if (w->version == 6) {
		ret = start_data_v6(w);
	} else {
		w->fly_off = w->pos;
		ret = section_header(w, VT_TD_OPT_BUFFER, w->zstd ? SEC_FL_COMPRESS : 0,
				     STR_FLYRECORD, 0);
	}
	if (ret == 0)
		w->data_started = true;
	return ret;
}

/* --- Per-CPU data --- */

static void note_fault(struct vt_tracedat *w, uint32_t offset, const char *why)
{
	if (w->fault.cpu >= 0)
		return;
	w->fault.cpu = w->cur;
	w->fault.page = w->in_pages;
	w->fault.offset = offset;
	w->fault.reason = why;
}

/* Count what a page holds; 1 to keep it, 0 to drop it, -EBADMSG when strict. */
static int account_page(struct vt_tracedat *w, const uint8_t *page)
{
	struct vt_tracedat_stats *st = &w->cpus[w->cur].st;
	struct vt_page_info info;
	const char *why = NULL;
	uint32_t nr = 0, bad = 0;

	if (w->flags & VT_TD_VALIDATE) {
		if (vt_page_validate(&w->fmt, page, w->fmt.subbuf_size, &info, &nr, &bad,
				     &why) < 0) {
			note_fault(w, bad, why);
			if (w->flags & VT_TD_STRICT)
				return -EBADMSG;
			st->bad_pages++;
			return 0;
		}
		st->events += nr;
	} else if (vt_page_header(&w->fmt, page, w->fmt.subbuf_size, &info) < 0) {
		return 1;
	}
	st->missed_pages += info.missed;
	if (info.missed_stored)
		st->lost_events += info.missed_events;
	return 1;
}

/*
 * Complete a partial page: zeros after the bytes we have. When the commit
 * word claims data we do not have, cut the length back to the last whole
 * event, so that no reader walks into the zeros.
 */
static void complete_page(struct vt_tracedat *w, uint8_t *page, size_t have)
{
	const struct vt_page_fmt *f = &w->fmt;
	struct vt_tracedat_stats *st = &w->cpus[w->cur].st;
	uint32_t commit, len, avail, keep;
	struct vt_page_iter it;
	struct vt_event ev;

	memset(page + have, 0, f->subbuf_size - have);
	st->padded_pages++;
	if (have < f->data_offset) {
		memset(page + 8, 0, f->commit_size);	/* an empty page */
		return;
	}
	commit = vt_get_le32(page + 8);
	len = commit & VT_COMMIT_LEN_MASK;
	avail = have - f->data_offset;
	if (len + ((commit & VT_COMMIT_MISSED_STORED) ? f->commit_size : 0) <= avail)
		return;
	keep = len < avail ? len : avail;
	commit = (commit & ~(VT_COMMIT_LEN_MASK | (uint32_t)VT_COMMIT_MISSED_STORED)) | keep;
	vt_put_le32(page + 8, commit);
	if (vt_page_iter_init(&it, f, page, f->subbuf_size) == 0) {
		while (vt_page_iter_next(&it, &ev) > 0)
			;
		if (it.bad_reason)
			keep = it.bad_offset - f->data_offset;
	}
	vt_put_le32(page + 8, (commit & ~VT_COMMIT_LEN_MASK) | keep);
	memset(page + f->data_offset + keep, 0, f->subbuf_size - f->data_offset - keep);
	st->repaired_pages++;
}

/* Large sub-buffers: keep the chunk (our memory, and the reader's) bounded. */
static size_t chunk_bytes(uint32_t pages, uint32_t subbuf_size)
{
	while (pages > 1 && (size_t)pages * subbuf_size > VT_TD_CHUNK_BYTES_MAX)
		pages--;
	return (size_t)pages * subbuf_size;
}

/* --- zstd worker threads --- */

static void *pool_worker(void *arg)
{
	struct td_pool *p = arg;
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	struct td_job *j;
	size_t n;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->jobs[p->take].state != JOB_QUEUED)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		j = &p->jobs[p->take];
		p->take = (p->take + 1) % p->nr_jobs;
		j->state = JOB_BUSY;
		pthread_mutex_unlock(&p->lock);
		if (!zc) {
			j->ret = -ENOMEM;
		} else {
			n = ZSTD_compressCCtx(zc, j->out, j->out_cap, j->in, j->len, p->zlevel);
			j->ret = ZSTD_isError(n) ? -EIO : 0;
			j->zlen = ZSTD_isError(n) ? 0 : n;
		}
		pthread_mutex_lock(&p->lock);
		j->state = JOB_DONE;
		pthread_cond_broadcast(&p->done);
		/* The next queued job may have been skipped by a worker that woke first. */
		pthread_cond_signal(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
	ZSTD_freeCCtx(zc);
	return NULL;
}

static void pool_free(struct td_pool *p)
{
	unsigned int i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nr_threads; i++)
		pthread_join(p->threads[i], NULL);
	for (i = 0; p->jobs && i < p->nr_jobs; i++) {
		free(p->jobs[i].in);
		free(p->jobs[i].out);
	}
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p->jobs);
	free(p->threads);
	free(p);
}

/* Workers and jobs for @w, or NULL (then the caller compresses) when none start. */
static struct td_pool *pool_new(struct vt_tracedat *w, unsigned int threads)
{
	struct td_pool *p = calloc(1, sizeof(*p));
	unsigned int i;

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->zlevel = w->zlevel;
	/* One job per worker, one being filled behind them, one being written. */
	p->nr_jobs = threads + 2;
	p->jobs = calloc(p->nr_jobs, sizeof(*p->jobs));
	p->threads = calloc(threads, sizeof(*p->threads));
	if (!p->jobs || !p->threads)
		goto err_free;
	for (i = 0; i < p->nr_jobs; i++) {
		p->jobs[i].out_cap = ZSTD_compressBound(w->chunk_cap);
		p->jobs[i].in = malloc(w->chunk_cap);
		p->jobs[i].out = malloc(p->jobs[i].out_cap);
		if (!p->jobs[i].in || !p->jobs[i].out)
			goto err_free;
	}
	for (i = 0; i < threads; i++) {
		if (pthread_create(&p->threads[i], NULL, pool_worker, p) != 0)
			break;
		p->nr_threads++;
	}
	if (!p->nr_threads)
		goto err_free;
	return p;

err_free:
	pool_free(p);
	return NULL;
}

/* Write the oldest submitted job, waiting for it if it is not done yet. */
static int pool_write_oldest(struct vt_tracedat *w)
{
	struct td_pool *p = w->pool;
	struct td_job *j = &p->jobs[p->head];
	uint64_t before = w->pos;
	uint8_t sizes[8];
	int ret;

	pthread_mutex_lock(&p->lock);
	while (j->state != JOB_DONE)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
	ret = j->ret;
	if (ret == 0 && !w->nr_chunks) {
		w->count_off = w->pos;
		vt_put_le32(sizes, 0);
		ret = td_write(w, sizes, 4);
	}
	if (ret == 0) {
		vt_put_le32(sizes, j->zlen);
		vt_put_le32(sizes + 4, j->len);
		ret = td_write(w, sizes, 8) ?: td_write(w, j->out, j->zlen);
		w->nr_chunks++;
		w->cpus[w->cur].st.file_bytes += w->pos - before;
	}
	pthread_mutex_lock(&p->lock);
	j->state = JOB_FREE;
	p->head = (p->head + 1) % p->nr_jobs;
	p->pending--;
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/* Hand the chunk's first @len bytes to a worker; write what is done, in order. */
static int pool_submit(struct vt_tracedat *w, size_t len)
{
	struct td_pool *p = w->pool;
	struct td_job *j;
	uint8_t *tmp;
	bool ready;
	int ret;

	if (p->pending == p->nr_jobs) {
		ret = pool_write_oldest(w);
		if (ret < 0)
			return ret;
	}
	j = &p->jobs[(p->head + p->pending) % p->nr_jobs];
	tmp = j->in;
	j->in = w->chunk;
	w->chunk = tmp;
	j->len = len;
	pthread_mutex_lock(&p->lock);
	j->state = JOB_QUEUED;
	p->pending++;
	pthread_cond_signal(&p->work);
	ready = p->jobs[p->head].state == JOB_DONE;
	pthread_mutex_unlock(&p->lock);
	while (ready) {
		ret = pool_write_oldest(w);
		if (ret < 0)
			return ret;
		pthread_mutex_lock(&p->lock);
		ready = p->pending && p->jobs[p->head].state == JOB_DONE;
		pthread_mutex_unlock(&p->lock);
	}
	return 0;
}

/* Write every submitted job. */
static int pool_drain(struct vt_tracedat *w)
{
	int ret = 0;

	while (w->pool && w->pool->pending && ret == 0)
		ret = pool_write_oldest(w);
	return ret;
}

/* Write the whole pages in the chunk buffer: raw, or as one zstd chunk. */
static int flush_chunk(struct vt_tracedat *w)
{
	struct vt_tracedat_stats *st = &w->cpus[w->cur].st;
	size_t page = w->fmt.subbuf_size, in, out = 0, zlen;
	uint64_t before = w->pos;
	uint8_t sizes[8];
	int ret;

	for (in = 0; in + page <= w->chunk_len; in += page, w->in_pages++) {
		ret = account_page(w, w->chunk + in);
		if (ret < 0)
			return ret;
		if (!ret)
			continue;
		if (out != in)
			memmove(w->chunk + out, w->chunk + in, page);
		out += page;
	}
	w->chunk_len = 0;
	if (!out)
		return 0;
	if (w->zstd && w->pool) {
		st->pages += out / page;
		st->bytes += out;
		return pool_submit(w, out);
	}
	if (!w->zstd) {
		ret = td_write(w, w->chunk, out);
	} else {
		if (!w->nr_chunks) {
			w->count_off = w->pos;
			vt_put_le32(sizes, 0);
			ret = td_write(w, sizes, 4);
			if (ret < 0)
				return ret;
		}
		ret = compress_into(w, w->chunk, out, &zlen);
		if (ret < 0)
			return ret;
		vt_put_le32(sizes, zlen);
		vt_put_le32(sizes + 4, out);
		ret = td_write(w, sizes, 8) ?: td_write(w, w->zout, zlen);
		w->nr_chunks++;
	}
	st->pages += out / page;
	st->bytes += out;
	st->file_bytes += w->pos - before;
	return ret;
}

/**
 * vt_tracedat_cpu_begin() - start one CPU's data
 * @w: the writer
 * @cpu: the CPU, below the bundle's nr_cpus, not written before
 *
 * Return: 0, -EINVAL for a bad or repeated CPU, -EBUSY when another CPU is
 * open or the file is finished, -errno from writing, or the sticky error.
 */
int vt_tracedat_cpu_begin(struct vt_tracedat *w, uint32_t cpu)
{
	int ret;

	if (w->err)
		return w->err;
	if (w->finished || w->cur >= 0)
		return -EBUSY;
	if (cpu >= w->nr_cpus || w->cpus[cpu].written)
		return -EINVAL;
	ret = start_data(w) ?: td_align(w);
	if (ret < 0)
		return td_fail(w, ret);
	w->cur = cpu;
	w->cpus[cpu].offset = w->pos;
	w->in_pages = 0;
	w->chunk_len = 0;
	w->nr_chunks = 0;
	return 0;
}

/**
 * vt_tracedat_cpu_write() - append raw pages to the open CPU
 * @w: the writer
 * @data: bytes of concatenated pages; need not end on a page boundary
 * @len: how many
 *
 * Return: 0, -EBADMSG for a malformed page under VT_TD_STRICT, -EBUSY when
 * no CPU is open, -errno from writing, or the sticky error.
 */
int vt_tracedat_cpu_write(struct vt_tracedat *w, const void *data, size_t len)
{
	const uint8_t *p = data;
	int ret;

	if (w->err)
		return w->err;
	if (w->cur < 0)
		return -EBUSY;
	while (len) {
		size_t n = w->chunk_cap - w->chunk_len;

		if (n > len)
			n = len;
		memcpy(w->chunk + w->chunk_len, p, n);
		w->chunk_len += n;
		p += n;
		len -= n;
		if (w->chunk_len == w->chunk_cap) {
			ret = flush_chunk(w);
			if (ret < 0)
				return td_fail(w, ret);
		}
	}
	return 0;
}

/**
 * vt_tracedat_cpu_end() - finish the open CPU
 * @w: the writer
 *
 * A trailing partial page is completed with zeros (and its commit length cut
 * to the data present), never dropped.
 *
 * Return: as vt_tracedat_cpu_write().
 */
int vt_tracedat_cpu_end(struct vt_tracedat *w)
{
	struct td_cpu *c;
	size_t rest;
	uint8_t x[4];
	int ret;

	if (w->err)
		return w->err;
	if (w->cur < 0)
		return -EBUSY;
	c = &w->cpus[w->cur];
	rest = w->chunk_len % w->fmt.subbuf_size;
	if (rest) {
		complete_page(w, w->chunk + w->chunk_len - rest, rest);
		w->chunk_len += w->fmt.subbuf_size - rest;
	}
	ret = flush_chunk(w) ?: pool_drain(w);
	if (ret == 0 && w->nr_chunks) {
		vt_put_le32(x, w->nr_chunks);
		ret = td_pwrite(w, x, 4, w->count_off);
	}
	if (ret < 0)
		return td_fail(w, ret);
	c->size = w->pos - c->offset;
	c->written = true;
	if (w->version == 6) {
		ret = td_pwrite64(w, c->offset, w->table_off + 16ull * w->cur) ?:
		      td_pwrite64(w, c->size, w->table_off + 16ull * w->cur + 8);
		if (ret < 0)
			return td_fail(w, ret);
	}
	w->cur = -1;
	return 0;
}

/**
 * vt_tracedat_cpu_fd() - write one CPU's data from a file descriptor
 * @w: the writer
 * @cpu: the CPU
 * @fd: read until EOF (a spool file of concatenated pages, a pipe)
 *
 * Only a chunk of pages is held in memory at a time.
 *
 * Return: as vt_tracedat_cpu_begin() and vt_tracedat_cpu_write(), or -errno
 * from reading.
 */
int vt_tracedat_cpu_fd(struct vt_tracedat *w, uint32_t cpu, int fd)
{
	ssize_t n;
	int ret;

	ret = vt_tracedat_cpu_begin(w, cpu);
	if (ret < 0)
		return ret;
	for (;;) {
		n = read(fd, w->chunk + w->chunk_len, w->chunk_cap - w->chunk_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return td_fail(w, -errno);
		if (n == 0)
			break;
		w->chunk_len += n;
		if (w->chunk_len == w->chunk_cap) {
			ret = flush_chunk(w);
			if (ret < 0)
				return td_fail(w, ret);
		}
	}
	return vt_tracedat_cpu_end(w);
}

/**
 * vt_tracedat_cpu_path() - write one CPU's data from a file
 * @w: the writer
 * @cpu: the CPU
 * @path: the file
 *
 * Return: as vt_tracedat_cpu_fd(), or -errno from open().
 */
int vt_tracedat_cpu_path(struct vt_tracedat *w, uint32_t cpu, const char *path)
{
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = vt_tracedat_cpu_fd(w, cpu, fd);
	close(fd);
	return ret;
}

/**
 * vt_tracedat_cpu_present() - declare one CPU's pages without writing them
 * @w: the writer, uncompressed (v6, or v7 with VT_TD_COMPRESS_NONE)
 * @cpu: the CPU, as for vt_tracedat_cpu_begin()
 * @len: bytes of whole pages (a multiple of the page size)
 * @offset: set to where they belong: the next page-aligned offset
 *
 * The file is laid out as if @len bytes of pages had been written at *@offset
 * (w's position moves past them; nothing is written there); the caller puts
 * the pages there itself, before or after, e.g. by moving extents into place.
 * The pages are counted (pages, bytes, file_bytes) but not walked:
 * VT_TD_VALIDATE does not apply to them.
 *
 * Return: 0, -EINVAL for a compressed writer or a @len that is not whole
 * pages, or as vt_tracedat_cpu_begin().
 */
int vt_tracedat_cpu_present(struct vt_tracedat *w, uint32_t cpu, uint64_t len,
			    uint64_t *offset)
{
	struct td_cpu *c;
	int ret;

	if (w->err)
		return w->err;
	if (w->zstd || len % w->fmt.subbuf_size)
		return -EINVAL;
	ret = vt_tracedat_cpu_begin(w, cpu);
	if (ret < 0)
		return ret;
	c = &w->cpus[cpu];
	w->pos += len;
	c->st.pages += len / w->fmt.subbuf_size;
	c->st.bytes += len;
	c->st.file_bytes += len;
	if (offset)
		*offset = c->offset;
	return vt_tracedat_cpu_end(w);
}

/*
 * Check a file of chunks as vt_tdchunker_encode() makes them: every header
 * in bounds, the raw sizes whole pages adding up to @raw, the file exactly
 * @len bytes. Only the headers are read.
 */
static int check_chunks(struct vt_tracedat *w, int fd, uint64_t len, uint64_t raw,
			uint32_t *nr_chunks)
{
	uint64_t off = 0, sum = 0;
	uint32_t n = 0, zlen, size;
	uint8_t h[8];
	ssize_t got;

	while (off < len) {
		if (len - off < sizeof(h))
			return -EBADMSG;
		got = pread(fd, h, sizeof(h), off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got != (ssize_t)sizeof(h))
			return got < 0 ? -errno : -EBADMSG;
		zlen = vt_get_le32(h);
		size = vt_get_le32(h + 4);
		if (!size || size % w->fmt.subbuf_size || size > VT_TD_CHUNK_BYTES_MAX ||
		    !zlen || zlen > ZSTD_compressBound(size) || zlen > len - off - sizeof(h) ||
		    n == UINT32_MAX)
			return -EBADMSG;
		off += sizeof(h) + zlen;
		sum += size;
		n++;
	}
	if (sum != raw)
		return -EBADMSG;
	*nr_chunks = n;
	return 0;
}

/* Copy @len bytes at the start of @fd to the writer's position. */
static int copy_in(struct vt_tracedat *w, int fd, uint64_t len)
{
	loff_t in = 0, out = w->pos;
	uint64_t left = len;
	ssize_t n;
	int ret;

	while (left) {
		n = copy_file_range(fd, &in, w->fd, &out, left, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			      errno == EOPNOTSUPP))
			break;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		left -= n;
	}
	while (left) {
		size_t want = left < w->chunk_cap ? left : w->chunk_cap;

		n = pread(fd, w->chunk, want, in);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		ret = td_pwrite(w, w->chunk, n, out);
		if (ret < 0)
			return ret;
		in += n;
		out += n;
		left -= n;
	}
	w->pos += len;
	return 0;
}

/**
 * vt_tracedat_cpu_chunks() - put zstd chunks made beforehand at the start of the open CPU
 * @w: a v7 zstd writer, with a CPU just begun (nothing written for it yet)
 * @fd: a file of chunks from vt_tdchunker_encode(), read from offset 0
 * @len: its length in bytes
 * @raw: the page bytes the chunks hold
 * @add: what those pages hold (events, missed and lost counts), added to the
 *	CPU's statistics; NULL for nothing
 *
 * The chunks are checked (headers only: sizes in bounds, whole pages adding
 * up to @raw, the file exactly @len) before anything is written, so a file
 * that fails the check leaves the writer as it was and the caller can write
 * the pages the usual way. Then they are copied (copy_file_range(), or
 * read() and write()); the CPU goes on with vt_tracedat_cpu_write() for the
 * pages after @raw. With chunks made of the writer's own chunk size
 * (vt_tdchunker_new() with its chunk_pages and level), the file is byte for
 * byte the one the pages alone would have made.
 *
 * Return: 0, -EINVAL for an uncompressed writer, no CPU open or a CPU already
 * written to, -EBADMSG when the file fails the check (nothing written),
 * -errno from copying (sticky).
 */
int vt_tracedat_cpu_chunks(struct vt_tracedat *w, int fd, uint64_t len, uint64_t raw,
			   const struct vt_tracedat_stats *add)
{
	struct vt_tracedat_stats *st;
	uint32_t nr = 0;
	uint8_t x[4];
	int ret;

	if (w->err)
		return w->err;
	if (!w->zstd || w->cur < 0 || w->nr_chunks || w->chunk_len || w->in_pages ||
	    (w->pool && w->pool->pending))
		return -EINVAL;
	if (!len)
		return raw ? -EBADMSG : 0;
	ret = check_chunks(w, fd, len, raw, &nr);
	if (ret < 0)
		return ret;
	st = &w->cpus[w->cur].st;
	w->count_off = w->pos;
	vt_put_le32(x, 0);
	ret = td_write(w, x, 4) ?: copy_in(w, fd, len);
	if (ret < 0)
		return td_fail(w, ret);
	w->nr_chunks = nr;
	w->in_pages = raw / w->fmt.subbuf_size;
	st->pages += raw / w->fmt.subbuf_size;
	st->bytes += raw;
	st->file_bytes += 4 + len;
	if (add) {
		st->events += add->events;
		st->missed_pages += add->missed_pages;
		st->lost_events += add->lost_events;
	}
	return 0;
}

/*
 * Chunks made ahead of the writer: what a v7 zstd writer with the same
 * chunk size and level writes for the same pages, {u32 zsize, u32 size,
 * zstd frame}, byte for byte.
 */
struct vt_tdchunker {
	ZSTD_CCtx *zc;
	int level;
	size_t chunk;
	uint8_t *out;
	size_t out_cap;
};

/**
 * vt_tdchunker_new() - make a chunker
 * @subbuf_size: the trace's sub-buffer (page) size
 * @chunk_pages: pages per chunk, 0 for VT_TD_CHUNK_PAGES_DEFAULT (as in struct vt_tracedat_opts)
 * @zstd_level: as in struct vt_tracedat_opts
 *
 * zstd's working memory and the output buffer are made by the first
 * vt_tdchunker_encode(), as after vt_tdchunker_rest().
 *
 * Return: the chunker, or NULL with errno set.
 */
struct vt_tdchunker *vt_tdchunker_new(uint32_t subbuf_size, uint32_t chunk_pages, int zstd_level)
{
	struct vt_tdchunker *c;

	if (!chunk_pages)
		chunk_pages = VT_TD_CHUNK_PAGES_DEFAULT;
	if (!subbuf_size || chunk_pages > VT_TD_CHUNK_PAGES_MAX) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->level = zstd_level;
	c->chunk = chunk_bytes(chunk_pages, subbuf_size);
	c->out_cap = 8 + ZSTD_compressBound(c->chunk);
	return c;
}

/**
 * vt_tdchunker_bytes() - the page bytes of one whole chunk
 * @c: the chunker
 *
 * Return: the size; only whole chunks of it give the writer's own chunking.
 */
size_t vt_tdchunker_bytes(const struct vt_tdchunker *c)
{
	return c->chunk;
}

/**
 * vt_tdchunker_encode() - compress one chunk
 * @c: the chunker
 * @in: whole pages
 * @len: at most vt_tdchunker_bytes()
 * @out: set to the encoded chunk, valid until the next call
 *
 * Return: the encoded chunk's length, -EINVAL for a bad @len, -ENOMEM when
 * what vt_tdchunker_rest() freed cannot be made again, -EIO from zstd.
 */
ssize_t vt_tdchunker_encode(struct vt_tdchunker *c, const void *in, size_t len,
			    const uint8_t **out)
{
	size_t n;

	if (!len || len > c->chunk)
		return -EINVAL;
	if (!c->zc)
		c->zc = ZSTD_createCCtx();
	if (!c->out)
		c->out = malloc(c->out_cap);
	if (!c->zc || !c->out)
		return -ENOMEM;
	n = ZSTD_compressCCtx(c->zc, c->out + 8, c->out_cap - 8, in, len, c->level);
	if (ZSTD_isError(n))
		return -EIO;
	vt_put_le32(c->out, n);
	vt_put_le32(c->out + 4, len);
	*out = c->out;
	return 8 + n;
}

/**
 * vt_tdchunker_rest() - free what encoding holds between chunks
 * @c: the chunker
 *
 * zstd's working memory (about half a MiB at the default level, made by the
 * first chunk) and the output buffer: a chunker that waits long between
 * chunks need not keep them. The next vt_tdchunker_encode() makes them
 * again; its chunks are the same.
 */
void vt_tdchunker_rest(struct vt_tdchunker *c)
{
	ZSTD_freeCCtx(c->zc);
	c->zc = NULL;
	free(c->out);
	c->out = NULL;
}

/**
 * vt_tdchunker_free() - free a chunker
 * @c: the chunker, or NULL
 */
void vt_tdchunker_free(struct vt_tdchunker *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->zc);
	free(c->out);
	free(c);
}

/**
 * vt_tracedat_finish() - complete the file
 * @w: the writer
 *
 * CPUs that were never written are recorded as empty. v7: closes the
 * flyrecord section, writes the options section and links it from the file
 * header. The fd is not closed or synced.
 *
 * Return: 0, -EBUSY when a CPU is still open, -errno, or the sticky error.
 */
int vt_tracedat_finish(struct vt_tracedat *w)
{
	struct dbuf b = { 0 };
	uint64_t opt_off;
	int ret;

	if (w->err)
		return w->err;
	if (w->finished || w->cur >= 0)
		return -EBUSY;
	ret = start_data(w);
	if (ret < 0)
		return td_fail(w, ret);
	if (w->version == 6) {
		w->finished = true;
		return 0;
	}
	ret = td_pwrite64(w, w->pos - (w->fly_off + 16), w->fly_off + 8);
	if (ret < 0)
		return td_fail(w, ret);
	build_options(w, &b);
	opt_off = w->pos;
	ret = b.err ?: section_header(w, VT_TD_OPT_DONE, 0, STR_OPTIONS, b.len) ?:
	      td_write(w, b.p, b.len) ?: td_pwrite64(w, opt_off, w->options_ptr);
	db_free(&b);
	if (ret < 0)
		return td_fail(w, ret);
	w->finished = true;
	return 0;
}

static void add_stats(struct vt_tracedat_stats *to, const struct vt_tracedat_stats *s)
{
	to->pages += s->pages;
	to->bytes += s->bytes;
	to->file_bytes += s->file_bytes;
	to->events += s->events;
	to->missed_pages += s->missed_pages;
	to->lost_events += s->lost_events;
	to->padded_pages += s->padded_pages;
	to->repaired_pages += s->repaired_pages;
	to->bad_pages += s->bad_pages;
}

/**
 * vt_tracedat_stats() - what has been written
 * @w: the writer
 * @cpu: a CPU, or -1 for the sum over all CPUs
 * @st: filled (zeroed for a CPU out of range)
 */
void vt_tracedat_stats(const struct vt_tracedat *w, int cpu, struct vt_tracedat_stats *st)
{
	uint32_t c;

	memset(st, 0, sizeof(*st));
	if (cpu >= 0) {
		if ((uint32_t)cpu < w->nr_cpus)
			*st = w->cpus[cpu].st;
		return;
	}
	for (c = 0; c < w->nr_cpus; c++)
		add_stats(st, &w->cpus[c].st);
}

/**
 * vt_tracedat_fault() - the first malformed page met (VT_TD_VALIDATE)
 * @w: the writer
 * @f: filled; @f->cpu is -1 when every page was well formed
 */
void vt_tracedat_fault(const struct vt_tracedat *w, struct vt_tracedat_fault *f)
{
	*f = w->fault;
}

static int td_init(struct vt_tracedat *w, const struct vt_meta *m,
		   const struct vt_tracedat_opts *o)
{
	char clk[sizeof(w->clock)];
	uint32_t pages = o->chunk_pages ? o->chunk_pages : VT_TD_CHUNK_PAGES_DEFAULT;
	int ret;

	ret = vt_page_fmt_parse(&w->fmt, m->header_page.data, m->header_page.len);
	if (ret < 0)
		return ret;
	if (!m->nr_cpus || m->nr_cpus > VT_META_MAX_CPUS || pages > VT_TD_CHUNK_PAGES_MAX)
		return -EINVAL;
	w->nr_cpus = m->nr_cpus;
	w->cpus = calloc(w->nr_cpus, sizeof(*w->cpus));
	w->chunk_cap = chunk_bytes(pages, w->fmt.subbuf_size);
	w->chunk = malloc(w->chunk_cap);
	if (!w->cpus || !w->chunk)
		return -ENOMEM;
	if (vt_meta_clock(m, clk, sizeof(clk))) {
		memcpy(w->clock, clk, sizeof(clk));
		w->has_clock = true;
		w->trace_clock = strndup(m->trace_clock.data, m->trace_clock.len);
		if (!w->trace_clock)
			return -ENOMEM;
	}
	if (m->uname.data) {
		w->uname = strndup(m->uname.data, m->uname.len);
		if (!w->uname)
			return -ENOMEM;
	}
	if (w->zstd) {
		w->zc = ZSTD_createCCtx();
		if (!w->zc)
			return -ENOMEM;
		if (!(o->flags & VT_TD_SINGLE_THREAD)) {
			long cpus = sysconf(_SC_NPROCESSORS_ONLN);
			unsigned int n = o->zstd_threads;

			/* The caller's thread reads and validates: one worker fewer than CPUs. */
			if (!n)
				n = cpus > 2 ? (unsigned int)cpus - 1 : 1;
			if (n > VT_TD_THREADS_MAX)
				n = VT_TD_THREADS_MAX;
			/* No workers: compress here, as with VT_TD_SINGLE_THREAD. */
			w->pool = pool_new(w, n);
		}
	}
	ret = write_start(w);
	if (ret == 0)
		ret = w->version == 6 ? write_meta_v6(w, m) : write_meta_v7(w, m);
	return ret;
}

/**
 * vt_tracedat_create() - start a trace.dat file
 * @fd: an empty file open for writing that allows pwrite(); it is written by position, from 0
 * @meta: the metadata bundle (copied as needed; may be freed afterwards)
 * @opts: version, compression, trace id, flags; NULL for v7 + zstd
 *
 * Writes the file header and all metadata at once.
 *
 * Return: the writer, or NULL with errno set (EINVAL for bad options or a
 * bundle without a page layout or CPUs, or the error of writing).
 */
struct vt_tracedat *vt_tracedat_create(int fd, const struct vt_meta *meta,
				       const struct vt_tracedat_opts *opts)
{
	static const struct vt_tracedat_opts dflt = { .version = 7 };
	struct vt_tracedat *w;
	int ret;

	if (!opts)
		opts = &dflt;
	if (fd < 0 || !meta || !meta->header_page.data ||
	    (opts->version != 0 && opts->version != 6 && opts->version != 7) ||
	    (opts->version == 6 && opts->compression == VT_TD_COMPRESS_ZSTD) ||
	    opts->compression > VT_TD_COMPRESS_ZSTD) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->fd = fd;
	w->cur = -1;
	w->fault.cpu = -1;
	w->version = opts->version ? opts->version : 7;
	w->zstd = w->version >= 7 && opts->compression != VT_TD_COMPRESS_NONE;
	w->zlevel = opts->zstd_level;
	w->flags = opts->flags;
	w->trace_id = opts->trace_id;
	ret = td_init(w, meta, opts);
	if (ret < 0) {
		vt_tracedat_free(w);
		errno = -ret;
		return NULL;
	}
	return w;
}

/**
 * vt_tracedat_free() - release a writer
 * @w: the writer, or NULL
 *
 * Does not close the fd. A writer freed before vt_tracedat_finish() leaves
 * an incomplete file.
 */
void vt_tracedat_free(struct vt_tracedat *w)
{
	if (!w)
		return;
	pool_free(w->pool);
	ZSTD_freeCCtx(w->zc);
	db_free(&w->opts);
	free(w->zout);
	free(w->chunk);
	free(w->cpus);
	free(w->trace_clock);
	free(w->uname);
	free(w);
}
