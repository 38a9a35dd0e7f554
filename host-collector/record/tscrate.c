// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The host TSC rate for TSC2NSEC: the kernel's own (the perf mmap page's
 * time_mult/time_shift), else measured against CLOCK_MONOTONIC_RAW, once
 * per boot: two recordings on one host (a migration's source and
 * destination) must convert the TSC alike, or their files disagree by
 * 60 ppb of the uptime (0.6 ms after three hours) when merged.
 * Host-only I/O, hence not in lib/; the arithmetic is lib/tsync-tsc.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "hostclock.h"

/**
 * vt_tsc_rate_method_name() - a word for the manifest
 * @m: the method
 *
 * Return: "perf", "calibrated", "calibrated-boot" or "none".
 */
const char *vt_tsc_rate_method_name(enum vt_tsc_rate_method m)
{
	switch (m) {
	case VT_TSC_RATE_PERF:
		return "perf";
	case VT_TSC_RATE_CALIBRATED:
		return "calibrated";
	case VT_TSC_RATE_BOOT:
		return "calibrated-boot";
	default:
		return "none";
	}
}

/**
 * vt_tsc2nsec_from_perf() - the kernel's TSC rate, from a perf mmap page
 * @t: filled in, method VT_TSC_RATE_PERF
 *
 * Opens a software event on this thread, maps its first page and reads
 * time_mult and time_shift under the page's seqlock; reduces them to what
 * trace-cmd can use (mult < 2^31, shift <= 32).
 *
 * Return: 0, -EOPNOTSUPP when the page does not offer cap_user_time, or
 * -errno from perf_event_open() (a locked-down kernel says EACCES/EPERM).
 */
int vt_tsc2nsec_from_perf(struct vt_tsc2nsec *t)
{
	struct perf_event_attr attr;
	volatile struct perf_event_mmap_page *pc;
	uint32_t seq, mult = 0, shift = 0;
	bool cap = false;
	long psz = sysconf(_SC_PAGESIZE);
	void *map;
	int fd, ret, tries;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	map = mmap(NULL, psz, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_close_fd;
	}
	pc = map;
	for (tries = 0; tries < 1000; tries++) {
		seq = pc->lock;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		cap = pc->cap_user_time;
		mult = pc->time_mult;
		shift = pc->time_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (pc->lock == seq && !(seq & 1))
			break;
	}
	ret = tries == 1000 ? -EAGAIN : (cap && mult ? 0 : -EOPNOTSUPP);
	if (ret == 0)
		ret = vt_tsc2nsec_fit(t, mult, shift);
	if (ret == 0)
		t->method = VT_TSC_RATE_PERF;
	munmap(map, psz);
err_close_fd:
	close(fd);
	return ret;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* A CLOCK_MONOTONIC_RAW reading and the TSC at it (best of a few brackets). */
static int tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t a, b, best = UINT64_MAX;
	struct timespec now;
	int i;

	for (i = 0; i < 16; i++) {
		a = vt_tsc_read();
		if (clock_gettime(CLOCK_MONOTONIC_RAW, &now) < 0)
			return -errno;
		b = vt_tsc_read();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = ts_ns(&now);
		}
	}
	return best == UINT64_MAX || !*tsc ? -EOPNOTSUPP : 0;
}

/**
 * vt_tsc2nsec_calibrate() - measure the TSC rate against CLOCK_MONOTONIC_RAW
 * @t: filled in, method VT_TSC_RATE_CALIBRATED
 * @ms: how long to measure (100 gives about 1 ppm)
 *
 * Return: 0, -EINVAL for @ms 0, -EOPNOTSUPP without a TSC, -ERANGE for an
 * absurd rate, or -errno.
 */
int vt_tsc2nsec_calibrate(struct vt_tsc2nsec *t, unsigned int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
	uint64_t t0, n0, t1, n1;
	unsigned __int128 hz;
	int ret;

	if (!ms)
		return -EINVAL;
	ret = tsc_pair(&t0, &n0);
	if (ret < 0)
		return ret;
	while (nanosleep(&d, &d) < 0)
		if (errno != EINTR)
			return -errno;
	ret = tsc_pair(&t1, &n1);
	if (ret < 0)
		return ret;
	if (n1 <= n0 || t1 <= t0)
		return -ERANGE;
	hz = ((unsigned __int128)(t1 - t0) * 1000000000u + (n1 - n0) / 2) / (n1 - n0);
	if (hz > UINT64_MAX)
		return -ERANGE;
	ret = vt_tsc2nsec_from_hz(t, (uint64_t)hz);
	if (ret == 0)
		t->method = VT_TSC_RATE_CALIBRATED;
	return ret;
}

/*
 * The boot's rate lives in DIR/tsc-rate as "vt-tsc-rate 1 BOOT_ID MULT SHIFT\n",
 * TSC2NSEC's own numbers (a rate in Hz would round differently on the way back).
 * DIR is trusted only when it is a directory of ours (or root's) that no
 * one else may write, the file only when it is a regular file of ours
 * that no one else may write; neither is followed when it is a link.
 */
#define RATE_FILE	"tsc-rate"
#define RATE_MAGIC	"vt-tsc-rate 1 "

static bool ours(const struct stat *st)
{
	return (st->st_uid == geteuid() || st->st_uid == 0) && !(st->st_mode & 022);
}

static int boot_id(char *id, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	bool ok;

	if (!f)
		return -errno;
	ok = fgets(id, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	id[strcspn(id, "\n")] = '\0';
	return id[0] ? 0 : -EIO;
}

static int open_rate_dir(const char *dir)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !ours(&st)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The boot's rate from @dfd's file: 0, -ENOENT (none), -ESTALE (another boot's), -EPERM, -EINVAL. */
static int read_rate(int dfd, const char *boot, uint64_t *mult, uint32_t *shift)
{
	char buf[160], *end, *p;
	unsigned long sh;
	struct stat st;
	ssize_t n;
	int fd;

	fd = openat(dfd, RATE_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !ours(&st)) {
		close(fd);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	if (strncmp(buf, RATE_MAGIC, strlen(RATE_MAGIC)))
		return -EINVAL;
	p = buf + strlen(RATE_MAGIC);
	end = strchr(p, ' ');
	if (!end)
		return -EINVAL;
	if ((size_t)(end - p) != strlen(boot) || strncmp(p, boot, strlen(boot)))
		return -ESTALE;
	errno = 0;
	*mult = strtoull(end + 1, &p, 10);
	if (errno || p == end + 1 || *p != ' ')
		return -EINVAL;
	end = p;
	sh = strtoul(end + 1, &p, 10);
	if (errno || p == end + 1 || *p != '\n' || p[1] || sh > 63)
		return -EINVAL;
	*shift = (uint32_t)sh;
	return 0;
}

/*
 * Publish @t under a temporary name; the first recording's stays (two
 * calibrating at once: the loser reads the winner's), another boot's or a
 * damaged one is replaced.
 */
static int write_rate(int dfd, const char *boot, const struct vt_tsc2nsec *t, bool replace)
{
	char tmp[64], text[160];
	int fd, len, ret = 0;

	snprintf(tmp, sizeof(tmp), RATE_FILE ".%ld", (long)getpid());
	len = snprintf(text, sizeof(text), RATE_MAGIC "%s %u %u\n", boot, t->mult, t->shift);
	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len)
		ret = -EIO;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && replace && renameat(dfd, tmp, dfd, RATE_FILE) < 0)
		ret = -errno;
	if (!ret && !replace && linkat(dfd, tmp, dfd, RATE_FILE, 0) < 0)
		ret = -errno;
	unlinkat(dfd, tmp, 0);
	return ret;
}

/**
 * vt_tsc2nsec_boot() - the TSC rate measured once in this boot
 * @t: filled in, method VT_TSC_RATE_BOOT (or VT_TSC_RATE_CALIBRATED when
 *     @dir cannot keep it: not ours, or read-only)
 * @calibrate_ms: measuring time when this boot has no rate yet
 * @dir: where the boot's rate is kept (created 0755 if absent)
 *
 * Return: 0, or as vt_tsc2nsec_calibrate().
 */
int vt_tsc2nsec_boot(struct vt_tsc2nsec *t, unsigned int calibrate_ms, const char *dir)
{
	char boot[64];
	uint64_t mult = 0;
	uint32_t shift = 0;
	int dfd, ret, tries;

	memset(t, 0, sizeof(*t));
	if (boot_id(boot, sizeof(boot)) < 0 || (dfd = open_rate_dir(dir)) < 0)
		return vt_tsc2nsec_calibrate(t, calibrate_ms);
	for (tries = 0; tries < 2; tries++) {
		ret = read_rate(dfd, boot, &mult, &shift);
		if (ret == 0 && vt_tsc2nsec_fit(t, mult, shift) == 0 && t->hz >= 1000000 &&
		    t->hz <= 100000000000ull)
			goto kept;
		if (ret == -EPERM || (ret < 0 && ret != -ENOENT && ret != -ESTALE && ret != -EINVAL))
			break;		/* a link, someone else's, unreadable: measure, keep nothing */
		if (!t->hz && vt_tsc2nsec_calibrate(t, calibrate_ms) < 0)
			break;
		/* None yet: the first to publish wins (EEXIST: read the winner's). */
		ret = write_rate(dfd, boot, t, ret != -ENOENT);
		if (ret == 0)
			goto kept;
		if (ret != -EEXIST)
			break;
	}
	close(dfd);
	return t->hz ? 0 : vt_tsc2nsec_calibrate(t, calibrate_ms);
kept:
	t->method = VT_TSC_RATE_BOOT;
	close(dfd);
	return 0;
}

/**
 * vt_tsc2nsec_get() - the host TSC rate: perf first, else this boot's
 * @t: filled in; @t->method says which
 * @calibrate_ms: measuring time if perf is refused and this boot has no rate
 *
 * Return: 0, or as vt_tsc2nsec_calibrate().
 */
int vt_tsc2nsec_get(struct vt_tsc2nsec *t, unsigned int calibrate_ms)
{
	memset(t, 0, sizeof(*t));
	if (vt_tsc2nsec_from_perf(t) == 0)
		return 0;
	return vt_tsc2nsec_boot(t, calibrate_ms, VT_TSC_RATE_DIR);
}

/**
 * host_tsc_rate() - the host TSC rate, for TSC2NSEC and the manifest's figures
 * @t: filled
 *
 * From the perf mmap page when the kernel offers it, else calibrated.
 */
void host_tsc_rate(struct host_tsc *t)
{
	struct vt_tsc2nsec c;

	memset(t, 0, sizeof(*t));
	if (vt_tsc2nsec_get(&c, 100) < 0) {
		snprintf(t->method, sizeof(t->method), "unavailable");
		return;
	}
	t->khz = c.hz / 1000;
	t->mult = c.mult;
	t->shift = c.shift;
	snprintf(t->method, sizeof(t->method), "%s", vt_tsc_rate_method_name(c.method));
}
