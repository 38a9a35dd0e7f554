// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The offset watch reads and sizes its instance by what it sees
 * (host-collector/record/tscwatch.c), without KVM: the instance is a
 * directory of this test's (events/header_page, the event's format as a
 * 6.18 host gives it, per_cpu/cpuN/ with trace_pipe_raw a FIFO the test
 * writes ring-buffer pages into, and buffer_size_kb a plain file), handed to
 * tscwatch_open().
 *
 *  - every write of every page comes out, in host-TSC order, with its vCPU
 *    and offsets;
 *  - a read that found a quarter of a CPU's buffer (16 of 64 pages) says
 *    busy: read again at once; fewer pages do not;
 *  - half of it grows that CPU's buffer fourfold (256 -> 1024 KiB), and only
 *    that CPU's; a page that says writes were lost grows it too, and the
 *    loss is counted;
 *  - growth stops at 4096 KiB per CPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "tscwatch.h"
#include "vt_le.h"

#define NR_CPUS		2
#define EV_ID		83
#define EV_SIZE		36		/* a 4-byte header, 32 bytes of payload */
#define PER_PAGE	113		/* (4096 - 16) / 36 */

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static const char format[] =
	"name: kvm_write_tsc_offset\n"
	"ID: 83\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:__u64 previous_tsc_offset;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:__u64 next_tsc_offset;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\n"
	"print fmt: \"vcpu=%u prev=%llu next=%llu\", REC->vcpu_id, REC->previous_tsc_offset, "
	"REC->next_tsc_offset\n";

void collect_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

struct fx {
	char dir[64];
	int wfd[NR_CPUS];	/* the FIFOs' write ends */
	struct tscwatch *w;
	uint64_t ts;		/* the next page's timestamp */
	int64_t off;		/* the next write's offset */
};

static void put(struct fx *f, const char *rel, const char *text)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static void get(struct fx *f, const char *rel, char *buf, size_t size)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	fp = fopen(path, "r");
	assert_non_null(fp);
	if (!fgets(buf, (int)size, fp))
		buf[0] = '\0';
	fclose(fp);
}

static void dir(struct fx *f, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	assert_int_equal(mkdir(path, 0700), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char rel[96], why[160] = "";
	unsigned int cpu;
	int ifd;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/vt-tscwatch-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	dir(f, "events");
	dir(f, "events/kvm");
	dir(f, "events/kvm/kvm_write_tsc_offset");
	put(f, "events/header_page", header_page);
	put(f, "events/kvm/kvm_write_tsc_offset/format", format);
	dir(f, "per_cpu");
	for (cpu = 0; cpu < NR_CPUS; cpu++) {
		char path[256];

		snprintf(rel, sizeof(rel), "per_cpu/cpu%u", cpu);
		dir(f, rel);
		snprintf(rel, sizeof(rel), "per_cpu/cpu%u/buffer_size_kb", cpu);
		put(f, rel, "");
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", f->dir, cpu);
		assert_int_equal(mkfifo(path, 0600), 0);
	}
	ifd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ifd >= 0);
	f->w = tscwatch_open(ifd, "test", why, sizeof(why));
	if (!f->w)
		fail_msg("tscwatch_open: %s", why);
	for (cpu = 0; cpu < NR_CPUS; cpu++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", f->dir, cpu);
		f->wfd[cpu] = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		assert_true(f->wfd[cpu] >= 0);
		/* 256 pages: a quarter of a 4 MiB buffer (1 MiB is pipe-max-size) */
		assert_true(fcntl(f->wfd[cpu], F_SETPIPE_SZ, 1 << 20) >= 1 << 20);
	}
	f->ts = 1000000;
	f->off = -19129085558;
	*state = f;
	return 0;
}

static int rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	unsigned int cpu;

	tscwatch_free(f->w);
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		close(f->wfd[cpu]);
	nftw(f->dir, rm, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* @n full pages of writes for vCPU @vcpu into @cpu's buffer; the first says @lost were lost. */
static void pages(struct fx *f, unsigned int cpu, unsigned int n, uint32_t vcpu, uint64_t lost)
{
	uint8_t page[4096];
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		uint64_t commit = PER_PAGE * EV_SIZE;
		uint8_t *p = page + 16;

		memset(page, 0, sizeof(page));
		vt_put_le64(page, f->ts);
		for (j = 0; j < PER_PAGE; j++, p += EV_SIZE) {
			vt_put_le32(p, 8 | (j ? 10u << 5 : 0));	/* type_len 8: 32 bytes; 10 ticks apart */
			vt_put_le16(p + 4, EV_ID);
			vt_put_le32(p + 4 + 8, vcpu);
			vt_put_le64(p + 4 + 16, (uint64_t)f->off);
			f->off += 7;
			vt_put_le64(p + 4 + 24, (uint64_t)f->off);
		}
		if (!i && lost) {
			commit |= 1ull << 31 | 1ull << 30;
			vt_put_le64(page + 16 + PER_PAGE * EV_SIZE, lost);
		}
		vt_put_le64(page + 8, commit);
		f->ts += 10 * PER_PAGE;
		assert_int_equal(write(f->wfd[cpu], page, sizeof(page)), (ssize_t)sizeof(page));
	}
}

static size_t take(struct fx *f)
{
	struct tscwatch_change *ch = NULL;
	size_t n = 0, i;

	assert_int_equal(tscwatch_read(f->w, &ch, &n), 0);
	for (i = 1; i < n; i++)
		assert_true(ch[i - 1].tsc <= ch[i].tsc);
	for (i = 0; i < n; i++)
		assert_int_equal(ch[i].next - ch[i].prev, 7);
	free(ch);
	return n;
}

static void sized(struct fx *f, unsigned int cpu, const char *want)
{
	char rel[64], got[32];

	snprintf(rel, sizeof(rel), "per_cpu/cpu%u/buffer_size_kb", cpu);
	get(f, rel, got, sizeof(got));
	assert_string_equal(got, want);
}

/* Every write comes out; few pages: no hurry, no growth. */
static void calm(void **state)
{
	struct fx *f = *state;

	pages(f, 0, 4, 0, 0);
	pages(f, 1, 3, 1, 0);
	assert_int_equal(take(f), 7 * PER_PAGE);
	assert_false(tscwatch_busy(f->w));
	assert_int_equal(tscwatch_peak(f->w), 4);
	assert_int_equal(tscwatch_lost(f->w), 0);
	assert_int_equal(tscwatch_grows(f->w), 0);
	assert_int_equal(tscwatch_buffer_kb(f->w, 0), 256);
	sized(f, 0, "");
	sized(f, 1, "");
	/* empty: nothing, and calm again */
	assert_int_equal(take(f), 0);
	assert_false(tscwatch_busy(f->w));
}

/* A quarter of the 64 pages in one read: read again at once, but the buffer is big enough. */
static void busy(void **state)
{
	struct fx *f = *state;

	pages(f, 1, 15, 1, 0);
	assert_int_equal(take(f), 15 * PER_PAGE);
	assert_false(tscwatch_busy(f->w));
	pages(f, 1, 16, 1, 0);
	assert_int_equal(take(f), 16 * PER_PAGE);
	assert_true(tscwatch_busy(f->w));
	assert_int_equal(tscwatch_grows(f->w), 0);
	sized(f, 1, "");
	assert_int_equal(take(f), 0);
	assert_false(tscwatch_busy(f->w));
}

/* Half of it: that CPU's buffer grows fourfold, the other's stays. */
static void grows(void **state)
{
	struct fx *f = *state;

	pages(f, 0, 32, 0, 0);
	pages(f, 1, 2, 1, 0);
	assert_int_equal(take(f), 34 * PER_PAGE);
	assert_true(tscwatch_busy(f->w));
	assert_int_equal(tscwatch_peak(f->w), 32);
	assert_int_equal(tscwatch_grows(f->w), 1);
	assert_int_equal(tscwatch_buffer_kb(f->w, 0), 1024);
	assert_int_equal(tscwatch_buffer_kb(f->w, 1), 256);
	sized(f, 0, "1024");
	sized(f, 1, "");
	/* 32 pages of 256 are an eighth of it now: neither busy nor grown */
	pages(f, 0, 32, 0, 0);
	assert_int_equal(take(f), 32 * PER_PAGE);
	assert_false(tscwatch_busy(f->w));
	assert_int_equal(tscwatch_grows(f->w), 1);
}

/* A page that says writes were lost: counted, and the buffer grows though it came out small. */
static void lost_grows(void **state)
{
	struct fx *f = *state;

	pages(f, 1, 2, 1, 500);
	assert_int_equal(take(f), 2 * PER_PAGE);
	assert_int_equal(tscwatch_lost(f->w), 500);
	assert_int_equal(tscwatch_buffer_kb(f->w, 1), 1024);
	sized(f, 1, "1024");
}

/* 256 -> 1024 -> 4096, then no more. */
static void capped(void **state)
{
	struct fx *f = *state;

	pages(f, 0, 40, 0, 0);
	assert_int_equal(take(f), 40 * PER_PAGE);
	sized(f, 0, "1024");
	pages(f, 0, 130, 0, 0);
	assert_int_equal(take(f), 130 * PER_PAGE);
	sized(f, 0, "4096");
	pages(f, 0, 256, 0, 0);
	assert_int_equal(take(f), 256 * PER_PAGE);
	assert_true(tscwatch_busy(f->w));
	assert_int_equal(tscwatch_buffer_kb(f->w, 0), 4096);
	assert_int_equal(tscwatch_grows(f->w), 2);
	sized(f, 0, "4096");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(calm, setup, teardown),
		cmocka_unit_test_setup_teardown(busy, setup, teardown),
		cmocka_unit_test_setup_teardown(grows, setup, teardown),
		cmocka_unit_test_setup_teardown(lost_grows, setup, teardown),
		cmocka_unit_test_setup_teardown(capped, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
