// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The trace.dat writer's own logic, checked on the bytes it writes: the v6
 * option terminator and clock string, the v7 section chain, page-aligned
 * whole pages, partial-page padding and repair, validation counters, and the
 * metadata loader on a fake tracefs tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "vt_le.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_tracedat.h"

#define PAGE 4096

static const char t_header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static void t_blob(struct vt_blob *b, const char *s)
{
	b->data = strdup(s);
	b->len = strlen(s);
}

static void t_meta(struct vt_meta *m)
{
	memset(m, 0, sizeof(*m));
	t_blob(&m->header_page, t_header_page);
	t_blob(&m->header_event, "# compressed entry header\n");
	t_blob(&m->trace_clock, "local global [x86-tsc]\n");
	t_blob(&m->uname, "Linux 6.1.0 #1 x86_64");
	t_blob(&m->saved_cmdlines, "1 init\n");
	assert_int_equal(vt_meta_add_event(m, "sched", "sched_switch", "ID: 316\n", 8), 0);
	m->nr_cpus = 2;
	m->subbuf_size = PAGE;
}

/* A page with @n 8-byte events of id 316. */
static void t_page(uint8_t *p, uint64_t ts, int n)
{
	int i;

	memset(p, 0, PAGE);
	vt_put_le64(p, ts);
	vt_put_le64(p + 8, n * 12);
	for (i = 0; i < n; i++) {
		vt_put_le32(p + 16 + i * 12, 2 | (10u << 5));	/* type_len 2, delta 10 */
		vt_put_le16(p + 20 + i * 12, 316);
	}
}

static int t_tmpfile(void)
{
	char path[] = "/tmp/vt-test-td.XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

static uint8_t *t_slurp(int fd, size_t *len)
{
	struct stat st;
	uint8_t *p;

	assert_int_equal(fstat(fd, &st), 0);
	p = malloc(st.st_size);
	assert_non_null(p);
	assert_int_equal(pread(fd, p, st.st_size, 0), st.st_size);
	*len = st.st_size;
	return p;
}

/* Write 3 pages + 100 bytes on CPU 0, nothing on CPU 1. */
static struct vt_tracedat *t_write(int fd, struct vt_meta *m, unsigned int version,
				   enum vt_tracedat_compression z)
{
	struct vt_tracedat_opts o = { .version = version, .compression = z,
				      .flags = VT_TD_VALIDATE, .trace_id = 0x42, .chunk_pages = 2 };
	struct vt_tracedat *w;
	uint8_t pages[3 * PAGE + 100];
	int i;

	for (i = 0; i < 3; i++)
		t_page(pages + i * PAGE, 1000 * (i + 1), 10 + i);
	t_page(pages + 3 * PAGE - PAGE, 3000, 12);
	memcpy(pages + 3 * PAGE, pages, 100);	/* a partial page: header + 7 events */
	w = vt_tracedat_create(fd, m, &o);
	assert_non_null(w);
	assert_int_equal(vt_tracedat_add_date(w, -5), 0);
	assert_int_equal(vt_tracedat_cpu_begin(w, 0), 0);
	assert_int_equal(vt_tracedat_cpu_write(w, pages, 1000), 0);
	assert_int_equal(vt_tracedat_cpu_write(w, pages + 1000, sizeof(pages) - 1000), 0);
	assert_int_equal(vt_tracedat_cpu_end(w), 0);
	assert_int_equal(vt_tracedat_finish(w), 0);
	return w;
}

static void t_check_stats(struct vt_tracedat *w)
{
	struct vt_tracedat_stats st;

	vt_tracedat_stats(w, -1, &st);
	assert_int_equal(st.pages, 4);
	assert_int_equal(st.bytes, 4 * PAGE);
	/* 10 + 11 + 12 whole pages, then the partial one cut to 7 events. */
	assert_int_equal(st.events, 10 + 11 + 12 + 7);
	assert_int_equal(st.padded_pages, 1);
	assert_int_equal(st.repaired_pages, 1);
	vt_tracedat_stats(w, 1, &st);
	assert_int_equal(st.pages, 0);
}

static void test_v6_layout(void **state)
{
	struct vt_meta m;
	struct vt_tracedat *w;
	size_t len, pos;
	uint8_t *p;
	int fd = t_tmpfile();

	t_meta(&m);
	w = t_write(fd, &m, 6, VT_TD_COMPRESS_DEFAULT);
	t_check_stats(w);
	/* Too late for options in v6. */
	assert_int_equal(vt_tracedat_add_date(w, 1), -EBUSY);
	p = t_slurp(fd, &len);
	assert_memory_equal(p + 10, "6\0", 2);
	assert_int_equal(vt_get_le32(p + 14), PAGE);
	/* Find "options  \0" and walk the options to the bare u16 0. */
	for (pos = 0; pos + 10 < len && memcmp(p + pos, "options  \0", 10); pos++)
		;
	assert_true(pos + 10 < len);
	assert_int_equal(vt_get_le32(p + pos - 4), 2);	/* u32 nr_cpus before it */
	pos += 10;
	while (vt_get_le16(p + pos))
		pos += 6 + vt_get_le32(p + pos + 2);
	pos += 2;
	assert_memory_equal(p + pos, "flyrecord\0", 10);
	pos += 10;
	/* CPU 0: page-aligned, 4 whole pages; CPU 1: empty. */
	assert_int_equal(vt_get_le64(p + pos) % PAGE, 0);
	assert_int_equal(vt_get_le64(p + pos + 8), 4 * PAGE);
	assert_int_equal(vt_get_le64(p + pos + 24), 0);
	assert_int_equal(vt_get_le64(p + pos + 32), strlen("[x86-tsc]"));
	assert_memory_equal(p + pos + 40, "[x86-tsc]", 9);
	assert_int_equal(vt_get_le64(p + pos) + 4 * PAGE, len);
	/* The repaired page: 7 events of 12 bytes, nothing after them. */
	assert_int_equal(vt_get_le32(p + len - PAGE + 8), 7 * 12);
	assert_int_equal(p[len - PAGE + 16 + 7 * 12], 0);
	free(p);
	vt_tracedat_free(w);
	vt_meta_free(&m);
	close(fd);
}

static void t_v7_chain(enum vt_tracedat_compression z)
{
	struct vt_meta m;
	struct vt_tracedat *w;
	size_t len, pos, opt = 0;
	uint16_t last_id = 0xffff;
	uint8_t *p;
	int fd = t_tmpfile(), sections = 0;

	t_meta(&m);
	w = t_write(fd, &m, 7, z);
	t_check_stats(w);
	p = t_slurp(fd, &len);
	assert_memory_equal(p + 10, "7\0", 2);
	pos = 18;
	assert_string_equal((char *)p + pos, z == VT_TD_COMPRESS_NONE ? "none" : "zstd");
	pos += strlen((char *)p + pos) + 1;
	pos += strlen((char *)p + pos) + 1;
	opt = vt_get_le64(p + pos);
	pos += 8;
	/* An unbroken chain of sections that ends exactly at EOF. */
	while (pos < len) {
		assert_true(pos + 16 <= len);
		last_id = vt_get_le16(p + pos);
		if (last_id == 3)
			assert_int_equal(vt_get_le16(p + pos + 2), z == VT_TD_COMPRESS_NONE ? 0 : 1);
		if (last_id == 0)
			assert_int_equal(pos, opt);
		pos += 16 + vt_get_le64(p + pos + 8);
		sections++;
	}
	assert_int_equal(pos, len);
	assert_int_equal(last_id, 0);
	assert_int_equal(sections, 9);
	/* The options end with DONE pointing nowhere. */
	assert_int_equal(vt_get_le16(p + len - 14), 0);
	assert_int_equal(vt_get_le32(p + len - 12), 8);
	assert_int_equal(vt_get_le64(p + len - 8), 0);
	free(p);
	vt_tracedat_free(w);
	vt_meta_free(&m);
	close(fd);
}

static void test_v7_none(void **state)
{
	t_v7_chain(VT_TD_COMPRESS_NONE);
}

static void test_v7_zstd(void **state)
{
	t_v7_chain(VT_TD_COMPRESS_DEFAULT);
}

/*
 * Pages declared present and put in place by the caller make the same bytes
 * as pages written through the writer; a compressed writer refuses.
 */
static void t_present(unsigned int version, enum vt_tracedat_compression z)
{
	struct vt_tracedat_opts o = { .version = version, .compression = z, .trace_id = 0x42 };
	uint8_t pages[3 * PAGE];
	struct vt_tracedat_stats st;
	struct vt_tracedat *w;
	struct vt_meta m;
	int fa = t_tmpfile(), fb = t_tmpfile(), i;
	uint64_t off = 0, off1 = 0;
	size_t la, lb;
	uint8_t *a, *b;

	t_meta(&m);
	for (i = 0; i < 3; i++)
		t_page(pages + i * PAGE, 1000 * (i + 1), 10 + i);
	w = vt_tracedat_create(fa, &m, &o);
	assert_non_null(w);
	assert_int_equal(vt_tracedat_cpu_begin(w, 0), 0);
	assert_int_equal(vt_tracedat_cpu_write(w, pages, 2 * PAGE), 0);
	assert_int_equal(vt_tracedat_cpu_end(w), 0);
	assert_int_equal(vt_tracedat_cpu_begin(w, 1), 0);
	assert_int_equal(vt_tracedat_cpu_write(w, pages + 2 * PAGE, PAGE), 0);
	assert_int_equal(vt_tracedat_cpu_end(w), 0);
	assert_int_equal(vt_tracedat_finish(w), 0);
	vt_tracedat_free(w);

	w = vt_tracedat_create(fb, &m, &o);
	assert_non_null(w);
	assert_int_equal(vt_tracedat_cpu_present(w, 0, PAGE + 1, &off), -EINVAL);
	assert_int_equal(vt_tracedat_cpu_present(w, 0, 2 * PAGE, &off), 0);
	assert_int_equal(off % PAGE, 0);
	assert_int_equal(vt_tracedat_cpu_present(w, 0, PAGE, &off1), -EINVAL);
	assert_int_equal(vt_tracedat_cpu_present(w, 1, PAGE, &off1), 0);
	assert_int_equal(off1, off + 2 * PAGE);
	assert_int_equal(vt_tracedat_finish(w), 0);
	vt_tracedat_stats(w, 0, &st);
	assert_int_equal(st.pages, 2);
	assert_int_equal(st.bytes, 2 * PAGE);
	vt_tracedat_free(w);
	assert_int_equal(pwrite(fb, pages, 2 * PAGE, off), 2 * PAGE);
	assert_int_equal(pwrite(fb, pages + 2 * PAGE, PAGE, off1), PAGE);

	a = t_slurp(fa, &la);
	b = t_slurp(fb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	free(a);
	free(b);
	close(fa);
	close(fb);
	vt_meta_free(&m);
}

/*
 * zstd chunks compressed on worker threads make the same file, byte for byte,
 * as the single-threaded writer: many chunks (more than the workers' ring
 * holds), on both CPUs, written in odd-sized pieces, with 1, 2 and 4 workers.
 */
static void test_threads_same_bytes(void **state)
{
	enum { NPAGES = 203 };
	static const uint32_t threads[] = { 1, 2, 4 };
	struct vt_tracedat_stats sa, sb;
	uint8_t *pages = malloc(NPAGES * PAGE), *a, *b;
	struct vt_tracedat *w;
	struct vt_meta m;
	size_t la, lb, i, t;
	int fa, fb;

	assert_non_null(pages);
	t_meta(&m);
	for (i = 0; i < NPAGES; i++)
		t_page(pages + i * PAGE, 1000 * (i + 1), 1 + i % 300);
	for (t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		struct vt_tracedat_opts o = { .version = 7, .flags = VT_TD_VALIDATE, .chunk_pages = 3 };

		fa = t_tmpfile();
		fb = t_tmpfile();
		for (i = 0; i < 2; i++) {
			int fd = i ? fb : fa;
			size_t off = 0, piece = 5000;

			o.flags = VT_TD_VALIDATE | (i ? 0 : VT_TD_SINGLE_THREAD);
			o.zstd_threads = threads[t];
			w = vt_tracedat_create(fd, &m, &o);
			assert_non_null(w);
			assert_int_equal(vt_tracedat_cpu_begin(w, 0), 0);
			while (off < NPAGES * PAGE - 100) {
				size_t n = off + piece > NPAGES * PAGE - 100 ? NPAGES * PAGE - 100 - off : piece;

				assert_int_equal(vt_tracedat_cpu_write(w, pages + off, n), 0);
				off += n;
				piece = piece * 7 % 40000 + 1;
			}
			assert_int_equal(vt_tracedat_cpu_end(w), 0);
			assert_int_equal(vt_tracedat_cpu_begin(w, 1), 0);
			assert_int_equal(vt_tracedat_cpu_write(w, pages, 40 * PAGE), 0);
			assert_int_equal(vt_tracedat_cpu_end(w), 0);
			assert_int_equal(vt_tracedat_finish(w), 0);
			vt_tracedat_stats(w, -1, i ? &sb : &sa);
			vt_tracedat_free(w);
		}
		assert_int_equal(sa.pages, NPAGES + 40);
		assert_int_equal(sb.pages, sa.pages);
		assert_int_equal(sb.events, sa.events);
		assert_int_equal(sb.file_bytes, sa.file_bytes);
		a = t_slurp(fa, &la);
		b = t_slurp(fb, &lb);
		assert_int_equal(la, lb);
		assert_memory_equal(a, b, la);
		free(a);
		free(b);
		close(fa);
		close(fb);
	}
	free(pages);
	vt_meta_free(&m);
}

/* One CPU's 203 pages: @pre of them as chunks made beforehand (from @zfd), the rest written. */
static void t_chunked(int fd, struct vt_meta *m, const uint8_t *pages, size_t npages, size_t pre,
		      int zfd, uint64_t zlen, int want, struct vt_tracedat_stats *st)
{
	struct vt_tracedat_opts o = { .version = 7, .flags = VT_TD_VALIDATE, .chunk_pages = 3 };
	struct vt_tracedat_stats add = { .events = 1000 };
	struct vt_tracedat *w = vt_tracedat_create(fd, m, &o);

	assert_non_null(w);
	assert_int_equal(vt_tracedat_cpu_begin(w, 0), 0);
	if (zfd >= 0)
		assert_int_equal(vt_tracedat_cpu_chunks(w, zfd, zlen, pre * PAGE, &add), want);
	/* Refused (nothing written): the pages go the usual way, all of them. */
	if (want < 0)
		pre = 0;
	assert_int_equal(vt_tracedat_cpu_write(w, pages + pre * PAGE, (npages - pre) * PAGE - 100), 0);
	/* Only before the CPU's first page. */
	if (zfd >= 0)
		assert_int_equal(vt_tracedat_cpu_chunks(w, zfd, zlen, pre * PAGE, NULL), -EINVAL);
	assert_int_equal(vt_tracedat_cpu_end(w), 0);
	assert_int_equal(vt_tracedat_finish(w), 0);
	vt_tracedat_stats(w, 0, st);
	vt_tracedat_free(w);
}

/*
 * Chunks compressed ahead (vt_tdchunker_encode()) and put in with
 * vt_tracedat_cpu_chunks() make the same file, byte for byte, as the writer
 * alone; a chunk file that does not add up is refused before anything is
 * written, and the writer goes on as if it had not been offered.
 */
static void test_chunks_ahead(void **state)
{
	enum { NPAGES = 203, PRE = 99 };	/* 33 whole chunks of 3 pages ahead */
	struct vt_tracedat_stats sa, sb;
	uint8_t *pages = malloc(NPAGES * PAGE), *a, *b;
	struct vt_tdchunker *ck;
	const uint8_t *out;
	struct vt_meta m;
	size_t la, lb, i;
	uint64_t zlen = 0;
	int fa, fb, zfd;
	ssize_t n;

	assert_non_null(pages);
	t_meta(&m);
	for (i = 0; i < NPAGES; i++)
		t_page(pages + i * PAGE, 1000 * (i + 1), 1 + i % 300);
	ck = vt_tdchunker_new(PAGE, 3, 0);
	assert_non_null(ck);
	assert_int_equal(vt_tdchunker_bytes(ck), 3 * PAGE);
	assert_int_equal(vt_tdchunker_encode(ck, pages, 4 * PAGE, &out), -EINVAL);
	zfd = t_tmpfile();
	for (i = 0; i < PRE; i += 3) {
		n = vt_tdchunker_encode(ck, pages + i * PAGE, 3 * PAGE, &out);
		assert_true(n > 8);
		assert_int_equal(pwrite(zfd, out, n, zlen), n);
		zlen += n;
	}
	vt_tdchunker_free(ck);

	fa = t_tmpfile();
	t_chunked(fa, &m, pages, NPAGES, 0, -1, 0, 0, &sa);
	a = t_slurp(fa, &la);
	fb = t_tmpfile();
	t_chunked(fb, &m, pages, NPAGES, PRE, zfd, zlen, 0, &sb);
	b = t_slurp(fb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	assert_int_equal(sb.pages, sa.pages);
	assert_int_equal(sb.file_bytes, sa.file_bytes);
	/* The pages ahead are not walked: their events (1 + 2 + ... + 99) are the caller's 1000. */
	assert_int_equal(sb.events, sa.events - PRE * (PRE + 1) / 2 + 1000);
	free(b);
	close(fb);

	/* Refused: a length that cuts the last chunk, raw bytes that do not add up. */
	fb = t_tmpfile();
	t_chunked(fb, &m, pages, NPAGES, PRE, zfd, zlen - 1, -EBADMSG, &sb);
	b = t_slurp(fb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	free(b);
	close(fb);
	fb = t_tmpfile();
	t_chunked(fb, &m, pages, NPAGES, PRE - 3, zfd, zlen, -EBADMSG, &sb);
	b = t_slurp(fb, &lb);
	assert_memory_equal(a, b, la);
	free(b);
	close(fb);

	free(a);
	close(fa);
	close(zfd);
	free(pages);
	vt_meta_free(&m);
}

static void test_present(void **state)
{
	struct vt_tracedat_opts o = { .version = 7 };
	struct vt_tracedat *w;
	struct vt_meta m;
	uint64_t off;
	int fd = t_tmpfile();

	t_present(6, VT_TD_COMPRESS_DEFAULT);
	t_present(7, VT_TD_COMPRESS_NONE);
	t_meta(&m);
	w = vt_tracedat_create(fd, &m, &o);
	assert_non_null(w);
	assert_int_equal(vt_tracedat_cpu_present(w, 0, PAGE, &off), -EINVAL);
	vt_tracedat_free(w);
	vt_meta_free(&m);
	close(fd);
}

static void test_bad_pages(void **state)
{
	struct vt_tracedat_opts o = { .version = 7, .flags = VT_TD_VALIDATE };
	struct vt_tracedat_fault f;
	struct vt_tracedat_stats st;
	struct vt_tracedat *w;
	uint8_t pages[2 * PAGE];
	struct vt_meta m;
	int fd = t_tmpfile();

	t_meta(&m);
	t_page(pages, 1, 3);
	t_page(pages + PAGE, 2, 3);
	vt_put_le32(pages + PAGE + 16 + 12, 0);		/* type_len 0, length 0 */
	w = vt_tracedat_create(fd, &m, &o);
	assert_non_null(w);
	assert_int_equal(vt_tracedat_cpu_begin(w, 2), -EINVAL);
	assert_int_equal(vt_tracedat_cpu_begin(w, 1), 0);
	assert_int_equal(vt_tracedat_cpu_begin(w, 0), -EBUSY);
	assert_int_equal(vt_tracedat_cpu_write(w, pages, sizeof(pages)), 0);
	assert_int_equal(vt_tracedat_cpu_end(w), 0);
	assert_int_equal(vt_tracedat_cpu_begin(w, 1), -EINVAL);
	vt_tracedat_stats(w, 1, &st);
	assert_int_equal(st.pages, 1);
	assert_int_equal(st.bad_pages, 1);
	assert_int_equal(st.events, 3);
	vt_tracedat_fault(w, &f);
	assert_int_equal(f.cpu, 1);
	assert_int_equal(f.page, 1);
	assert_int_equal(f.offset, 16 + 12);
	vt_tracedat_free(w);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);

	/* Strict: the bad page fails the write, and the error sticks. */
	o.flags |= VT_TD_STRICT;
	w = vt_tracedat_create(fd, &m, &o);
	assert_non_null(w);
	assert_int_equal(vt_tracedat_cpu_begin(w, 0), 0);
	assert_int_equal(vt_tracedat_cpu_write(w, pages, sizeof(pages)), 0);
	assert_int_equal(vt_tracedat_cpu_end(w), -EBADMSG);
	assert_int_equal(vt_tracedat_finish(w), -EBADMSG);
	vt_tracedat_free(w);
	vt_meta_free(&m);
	close(fd);
}

static void t_put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void t_mkdirs(const char *root, const char *const *dirs)
{
	char path[PATH_MAX];

	for (; *dirs; dirs++) {
		snprintf(path, sizeof(path), "%s/%s", root, *dirs);
		assert_int_equal(mkdir(path, 0755), 0);
	}
}

static void test_meta_load(void **state)
{
	static const char *const dirs[] = {
		"events", "events/ftrace", "events/ftrace/print", "events/sched",
		"events/sched/sched_switch", "events/sched/sched_wakeup", "events/irq",
		"events/irq/irq_handler_entry", "instances", "instances/vt", "instances/vt/per_cpu",
		"instances/vt/per_cpu/cpu0", "instances/vt/per_cpu/cpu3", NULL,
	};
	char root[] = "/tmp/vt-test-meta.XXXXXX", out[PATH_MAX], buf[32], cmd[PATH_MAX + 16];
	struct vt_meta m, d;

	assert_non_null(mkdtemp(root));
	t_mkdirs(root, dirs);
	t_put(root, "events/header_page", t_header_page);
	t_put(root, "events/header_event", "# header event\n");
	t_put(root, "events/ftrace/print/format", "name: print\nID: 5\n");
	t_put(root, "events/sched/enable", "0\n");
	t_put(root, "events/sched/sched_switch/format", "name: sched_switch\nID: 316\n");
	t_put(root, "events/sched/sched_wakeup/format", "name: sched_wakeup\nID: 318\n");
	t_put(root, "events/irq/irq_handler_entry/format", "name: irq_handler_entry\n");
	t_put(root, "saved_cmdlines", "1 init\n");
	t_put(root, "instances/vt/set_event", "sched:sched_switch\nirq:irq_handler_entry\n");
	t_put(root, "instances/vt/trace_clock", "local [x86-tsc] global\n");

	assert_int_equal(vt_meta_load(&m, root, "vt", VT_META_NO_KALLSYMS), 0);
	assert_int_equal(m.subbuf_size, PAGE);
	assert_int_equal(m.nr_cpus, 4);
	assert_int_equal(m.ftrace.nr_events, 1);
	assert_int_equal(m.nr_systems, 2);
	assert_string_equal(m.systems[0].name, "sched");
	assert_int_equal(m.systems[0].nr_events, 1);
	assert_string_equal(m.systems[0].events[0].format.data, "name: sched_switch\nID: 316\n");
	assert_string_equal(vt_meta_clock(&m, buf, sizeof(buf)), "x86-tsc");
	assert_null(vt_meta_clock(&m, buf, 4));
	assert_string_equal(m.saved_cmdlines.data, "1 init\n");
	assert_int_equal(m.printk_formats.len, 0);
	assert_int_equal(vt_meta_add_event(&m, "sched", "sched_switch", "x", 1), -EEXIST);
	assert_int_equal(vt_meta_add_event(&m, "sched", "../x", "x", 1), -EINVAL);

	/* Saved as plain files and loaded back: the same bundle. */
	snprintf(out, sizeof(out), "%s/bundle", root);
	assert_int_equal(vt_meta_save_dir(&m, out), 0);
	assert_int_equal(vt_meta_load_dir(&d, out), 0);
	assert_int_equal(d.nr_cpus, 4);
	assert_int_equal(d.nr_systems, 2);
	assert_string_equal(d.systems[1].name, "sched");	/* name order on disk */
	assert_string_equal(d.trace_clock.data, m.trace_clock.data);
	assert_string_equal(d.header_page.data, t_header_page);
	vt_meta_free(&d);
	vt_meta_free(&m);

	/* Every system, not just the enabled ones. */
	assert_int_equal(vt_meta_load(&m, root, NULL, VT_META_ALL_EVENTS | VT_META_NO_KALLSYMS),
			 -ENOENT);	/* the top level has no trace_clock here */
	t_put(root, "trace_clock", "[local] global\n");
	t_mkdirs(root, (const char *const []){ "per_cpu", "per_cpu/cpu0", NULL });
	assert_int_equal(vt_meta_load(&m, root, "", VT_META_ALL_EVENTS | VT_META_NO_KALLSYMS), 0);
	assert_int_equal(m.nr_systems, 2);
	assert_int_equal(m.systems[1].nr_events, 2);
	assert_int_equal(m.nr_cpus, 1);
	vt_meta_free(&m);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v6_layout),
		cmocka_unit_test(test_v7_none),
		cmocka_unit_test(test_v7_zstd),
		cmocka_unit_test(test_bad_pages),
		cmocka_unit_test(test_present),
		cmocka_unit_test(test_threads_same_bytes),
		cmocka_unit_test(test_chunks_ahead),
		cmocka_unit_test(test_meta_load),
	};

	printf("trace.dat writer: v6/v7 layout, whole pages, padding, validation; metadata loader\n");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
