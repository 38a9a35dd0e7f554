// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * KVM's TSC offset writes for one QEMU, with their exact moments.
 *
 * KVM traces every write of a vCPU's TSC offset as kvm:kvm_write_tsc_offset
 * (vcpu_id, previous_tsc_offset, next_tsc_offset), in the thread that does
 * it: the vCPU's own (its creation, QEMU's KVM_SET_MSRS at a reset or an
 * incoming migration, the guest writing IA32_TSC, and, where the host's TSC
 * is unstable, every time the vCPU is loaded on a CPU and caught up). A
 * private instance records only this event, only for the QEMU's threads
 * (set_event_pid, options/event-fork for threads made later), with the
 * x86-tsc clock: each event's timestamp is the host TSC at the write, the
 * moment from which the new offset holds. The guest does not run at that
 * moment (KVM writes offsets outside guest mode), so the moment is exact
 * for every guest event.
 *
 * Apart from --host-events' recorder (hostrec.c) on purpose: it exists
 * whatever the user asked of the host, its buffer is small, and the engine
 * reads it with non-blocking read()s of whole pages on a timer, without a
 * thread or splice. A tracefs that is not mounted is not mounted here: the
 * caller falls back to re-reading KVM's debugfs and says why.
 *
 * A nested host (KVM distrusts its TSC) writes an offset at every vCPU
 * load, and under mmiotrace a vCPU is loaded thousands of times a second:
 * 256 KiB per CPU read every 200 ms overran (test-kvm-mmiotrace, 2 of 8
 * runs, 112-2147 writes lost). So each read measures how many pages each
 * CPU gave. From a quarter of its buffer in one read, the watch is busy
 * and the caller reads again at once (sync-kvm.c: 20 ms) rather than on its
 * timer. From half of it, or when the CPU lost writes, that CPU's buffer
 * (per_cpu/cpuN/buffer_size_kb, the kernel resizes a live buffer without
 * dropping what it holds) grows fourfold, up to WATCH_BUFFER_MAX_KB: the
 * budget is 4 MiB per host CPU that needs it, and no more than 256 KiB on
 * a CPU that never ran a busy vCPU.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "tscwatch.h"
#include "vt_le.h"
#include "vt_pages.h"
#include "vt_tsync.h"
#include "vt_grow.h"

#define WATCH_BUFFER_KB		256u	/* per CPU, at the start */
#define WATCH_BUFFER_MAX_KB	4096u	/* per CPU: the most a busy CPU's buffer grows to */
#define WATCH_GROW		4u	/* the factor it grows by */
#define WATCH_EVENT		"events/kvm/kvm_write_tsc_offset"
#define WATCH_FORMAT_MAX	8192

struct tscwatch {
	char name[64];
	char inst[96];		/* "instances/NAME", relative to tfd */
	int tfd;		/* the tracefs root */
	int ifd;		/* the instance */
	unsigned int nr_cpus;
	int *fds;		/* per_cpu/cpuN/trace_pipe_raw, non-blocking */
	unsigned int *kb;	/* per_cpu/cpuN/buffer_size_kb, as we set it */
	unsigned int peak;	/* the most pages one CPU gave in the last read */
	unsigned int grows;	/* buffers grown */
	bool busy;		/* the last read found a buffer a quarter full */
	struct tscwatch_stats st;
	uint64_t last_ns;	/* CLOCK_MONOTONIC of the last read */
	struct vt_page_fmt fmt;
	uint16_t id;
	uint32_t off_vcpu, off_prev, off_next, need;
	uint8_t *page;
	uint64_t from;
	uint64_t lost;
};

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

static int open_tracefs(void)
{
	struct statfs st;
	unsigned int i;
	int fd;

	for (i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
		fd = open(tracefs_dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstatfs(fd, &st) == 0 && (unsigned long)st.f_type == TRACEFS_MAGIC)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

static int write_at(int dfd, const char *path, const char *text, int flags)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, ret = 0;

	fd = openat(dfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | flags);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	close(fd);
	return ret;
}

/* A small tracefs file, NUL-terminated; -EFBIG past @size - 1 bytes. */
static int read_at(int dfd, const char *path, char *buf, size_t size)
{
	size_t have = 0;
	ssize_t n;
	int fd, ret = 0;

	fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (have < size - 1) {
		n = read(fd, buf + have, size - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (!n)
			break;
		have += n;
	}
	if (ret == 0 && have == size - 1)
		ret = -EFBIG;
	buf[have] = '\0';
	close(fd);
	return ret;
}

/* Every thread of @pid into set_event_pid (threads made later: event-fork). */
static int filter_threads(struct tscwatch *w, pid_t pid)
{
	char dir[64], path[sizeof(w->inst) + 32], tid[32];
	struct dirent *de;
	unsigned int n = 0;
	DIR *d;
	int fd, ret = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	snprintf(path, sizeof(path), "%s/set_event_pid", w->inst);
	fd = openat(w->tfd, path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		ret = -errno;
		goto out_closedir;
	}
	while ((de = readdir(d))) {
		int len;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		len = snprintf(tid, sizeof(tid), "%s\n", de->d_name);
		if (write(fd, tid, len) == len)
			n++;
	}
	close(fd);
	if (!n)
		ret = -ESRCH;
out_closedir:
	closedir(d);
	return ret;
}

/* The event's id and where its three fields are. */
static int read_format(struct tscwatch *w, char *why, size_t why_len)
{
	unsigned long off[3], size[3];
	static const char *const names[3] = { "vcpu_id", "previous_tsc_offset", "next_tsc_offset" };
	static const unsigned long want[3] = { 4, 8, 8 };
	char *buf, *p;
	unsigned long id;
	unsigned int i;
	int ret;

	buf = malloc(WATCH_FORMAT_MAX);
	if (!buf)
		return -ENOMEM;
	ret = read_at(w->ifd, "events/header_page", buf, WATCH_FORMAT_MAX);
	if (ret == 0)
		ret = vt_page_fmt_parse(&w->fmt, buf, strlen(buf));
	if (ret < 0) {
		snprintf(why, why_len, "cannot read the instance's page layout (%s)", strerror(-ret));
		goto out_free;
	}
	ret = read_at(w->ifd, WATCH_EVENT "/format", buf, WATCH_FORMAT_MAX);
	if (ret < 0) {
		snprintf(why, why_len, "cannot read kvm_write_tsc_offset's format (%s)", strerror(-ret));
		goto out_free;
	}
	p = strstr(buf, "\nID: ");
	id = p ? strtoul(p + 5, NULL, 10) : 0;
	if (!id || id > UINT16_MAX) {
		ret = -EBADMSG;
		snprintf(why, why_len, "kvm_write_tsc_offset's format has no event id");
		goto out_free;
	}
	w->id = id;
	w->need = 0;
	for (i = 0; i < 3; i++) {
		ret = vt_format_field(buf, strlen(buf), names[i], &off[i], &size[i]);
		if (ret < 0 || size[i] != want[i] || off[i] > 4096) {
			ret = ret < 0 ? ret : -EBADMSG;
			snprintf(why, why_len, "kvm_write_tsc_offset has no %lu-byte field %s in this "
				 "kernel", want[i], names[i]);
			goto out_free;
		}
		if (off[i] + size[i] > w->need)
			w->need = off[i] + size[i];
	}
	w->off_vcpu = off[0];
	w->off_prev = off[1];
	w->off_next = off[2];
	ret = 0;
out_free:
	free(buf);
	return ret;
}

static int open_cpus(struct tscwatch *w)
{
	char path[64];
	unsigned int cpu, *kb;
	int fd, *fds;

	for (cpu = 0; cpu < 8192; cpu++) {
		snprintf(path, sizeof(path), "per_cpu/cpu%u/trace_pipe_raw", cpu);
		fd = openat(w->ifd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			break;
		fds = realloc(w->fds, (w->nr_cpus + 1) * sizeof(*fds));
		if (fds)
			w->fds = fds;
		kb = realloc(w->kb, (w->nr_cpus + 1) * sizeof(*kb));
		if (kb)
			w->kb = kb;
		if (!fds || !kb) {
			close(fd);
			return -ENOMEM;
		}
		w->kb[w->nr_cpus] = WATCH_BUFFER_KB;
		w->fds[w->nr_cpus++] = fd;
	}
	return w->nr_cpus ? 0 : -ENOENT;
}

/* The layout, the event's fields, a page to read into, the per-CPU buffers. */
static int open_buffers(struct tscwatch *w, char *why, size_t why_len)
{
	int ret = read_format(w, why, why_len);

	if (ret < 0)
		return ret;
	w->page = malloc(w->fmt.subbuf_size);
	ret = w->page ? open_cpus(w) : -ENOMEM;
	if (ret < 0)
		snprintf(why, why_len, "cannot open the instance's per-CPU buffers (%s)", strerror(-ret));
	return ret;
}

/**
 * tscwatch_open() - read an instance that records kvm_write_tsc_offset
 * @ifd: the instance's directory (taken: closed by tscwatch_free())
 * @name: what to call it in messages
 * @why: set to the reason when it cannot
 * @why_len: size of @why
 *
 * Its page layout, the event's format and its per-CPU buffers, each taken
 * to hold WATCH_BUFFER_KB; nothing is written. tscwatch_start() sets the
 * instance up first; a test hands a directory of its own.
 *
 * Return: the watch, or NULL with @why set (@ifd closed).
 */
struct tscwatch *tscwatch_open(int ifd, const char *name, char *why, size_t why_len)
{
	struct tscwatch *w = calloc(1, sizeof(*w));

	if (!w) {
		snprintf(why, why_len, "out of memory");
		close(ifd);
		return NULL;
	}
	w->tfd = -1;
	w->ifd = ifd;
	snprintf(w->name, sizeof(w->name), "%s", name);
	if (open_buffers(w, why, why_len) < 0)
		goto err_free;
	return w;
err_free:
	tscwatch_free(w);
	return NULL;
}

/**
 * tscwatch_start() - record a QEMU's kvm_write_tsc_offset events from now on
 * @qemu_pid: the QEMU process
 * @tag: what makes the instance's name unique in this collector (the guest's index)
 * @why: set to the reason when it cannot
 * @why_len: size of @why
 *
 * Return: the watch, or NULL with @why set (no tracefs mounted, no such
 * event, not permitted...): the caller re-reads debugfs instead.
 */
struct tscwatch *tscwatch_start(pid_t qemu_pid, const char *tag, char *why, size_t why_len)
{
	struct tscwatch *w = calloc(1, sizeof(*w));
	char path[sizeof(w->inst) + 64];
	int ret;

	if (!w) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	w->ifd = -1;
	w->tfd = open_tracefs();
	if (w->tfd < 0) {
		snprintf(why, why_len, "tracefs is not mounted (%s)", tracefs_dirs[0]);
		goto err_free;
	}
	if (faccessat(w->tfd, WATCH_EVENT "/format", R_OK, 0) < 0) {
		snprintf(why, why_len, "the host kernel has no event kvm:kvm_write_tsc_offset (%s)",
			 strerror(errno));
		goto err_close;
	}
	snprintf(w->name, sizeof(w->name), "virtio-trace-collect-%d-tsc-%.16s", (int)getpid(), tag);
	snprintf(w->inst, sizeof(w->inst), "instances/%s", w->name);
	if (mkdirat(w->tfd, w->inst, 0700) < 0) {
		snprintf(why, why_len, "cannot create the tracefs instance %s (%s)", w->name,
			 strerror(errno));
		goto err_close;
	}
	w->ifd = openat(w->tfd, w->inst, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (w->ifd < 0) {
		snprintf(why, why_len, "cannot open the tracefs instance %s (%s)", w->name, strerror(errno));
		goto err_rmdir;
	}
	ret = write_at(w->ifd, "tracing_on", "0", O_TRUNC);
	if (ret == 0 && (ret = write_at(w->ifd, "trace_clock", "x86-tsc", O_TRUNC)) < 0) {
		snprintf(why, why_len, "the host has no x86-tsc trace clock (%s)", strerror(-ret));
		goto err_rmdir;
	}
	if (ret == 0) {
		snprintf(path, sizeof(path), "%u", WATCH_BUFFER_KB);
		ret = write_at(w->ifd, "buffer_size_kb", path, O_TRUNC);
	}
	if (ret == 0 && write_at(w->ifd, "options/event-fork", "1", O_TRUNC) < 0)
		log_warn("tracefs instance %s: no options/event-fork: vCPU threads QEMU starts later "
			 "are not followed", w->name);
	if (ret == 0 && (ret = filter_threads(w, qemu_pid)) < 0) {
		snprintf(why, why_len, "cannot follow QEMU pid %d's threads (%s)", (int)qemu_pid,
			 strerror(-ret));
		goto err_rmdir;
	}
	if (ret < 0) {
		snprintf(why, why_len, "cannot set up the tracefs instance %s (%s)", w->name, strerror(-ret));
		goto err_rmdir;
	}
	if (open_buffers(w, why, why_len) < 0)
		goto err_rmdir;
	snprintf(path, sizeof(path), WATCH_EVENT "/enable");
	ret = write_at(w->ifd, path, "1", O_TRUNC);
	if (ret < 0) {
		snprintf(why, why_len, "the kernel refused to enable kvm:kvm_write_tsc_offset (%s)",
			 strerror(-ret));
		goto err_rmdir;
	}
	/* Nothing can be recorded before tracing_on: every event comes after @from. */
	w->from = vt_tsc_read();
	ret = write_at(w->ifd, "tracing_on", "1", O_TRUNC);
	if (ret < 0) {
		snprintf(why, why_len, "cannot turn the instance on (%s)", strerror(-ret));
		goto err_rmdir;
	}
	return w;
err_rmdir:
	tscwatch_free(w);
	return NULL;
err_close:
	close(w->tfd);
err_free:
	free(w);
	return NULL;
}

static int cmp_change(const void *a, const void *b)
{
	const struct tscwatch_change *x = a, *y = b;

	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

static int push(struct tscwatch_change **v, size_t *nr, size_t *cap, const struct tscwatch_change *c)
{
	if (vt_grow((void **)v, cap, *nr + 1, sizeof(**v)) < 0)
		return -ENOMEM;
	(*v)[(*nr)++] = *c;
	return 0;
}

/* The events of one page. */
static int read_page(struct tscwatch *w, size_t len, struct tscwatch_change **v, size_t *nr,
		     size_t *cap)
{
	struct vt_page_info info;
	struct vt_page_iter it;
	struct vt_event ev;
	int ret;

	if (len < w->fmt.data_offset || vt_page_header(&w->fmt, w->page, w->fmt.subbuf_size, &info) < 0) {
		w->lost++;
		return 0;
	}
	if (info.missed)
		w->lost += info.missed_stored && info.missed_events ? info.missed_events : 1;
	if (vt_page_iter_init(&it, &w->fmt, w->page, w->fmt.subbuf_size) < 0) {
		w->lost++;
		return 0;
	}
	while ((ret = vt_page_iter_next(&it, &ev)) > 0) {
		struct tscwatch_change c;

		if (ev.id != w->id || ev.len < w->need)
			continue;
		c.tsc = ev.ts;
		c.vcpu = vt_get_le32(ev.data + w->off_vcpu);
		c.prev = (int64_t)vt_get_le64(ev.data + w->off_prev);
		c.next = (int64_t)vt_get_le64(ev.data + w->off_next);
		if (push(v, nr, cap, &c) < 0)
			return -ENOMEM;
	}
	if (ret < 0)
		w->lost++;	/* the rest of a malformed page */
	return 0;
}

/*
 * After a CPU's buffer was read: @pages came out, and writes were @lost or
 * not. A quarter of the buffer makes the watch busy (read again soon); half
 * of it, or a loss, grows the buffer (see the top of the file).
 */
static void plan(struct tscwatch *w, unsigned int cpu, unsigned int pages, bool lost)
{
	unsigned int have = (unsigned int)((uint64_t)w->kb[cpu] * 1024 / w->fmt.subbuf_size);
	unsigned int kb = w->kb[cpu] * WATCH_GROW;
	char path[64], text[16];
	int ret;

	if (pages > w->peak)
		w->peak = pages;
	if (pages > w->st.max_pages)
		w->st.max_pages = pages;
	if (pages * 4 >= have) {
		if (!w->busy)
			w->st.busy++;
		w->busy = true;
	}
	if ((pages * 2 < have && !lost) || w->kb[cpu] >= WATCH_BUFFER_MAX_KB)
		return;
	if (kb > WATCH_BUFFER_MAX_KB)
		kb = WATCH_BUFFER_MAX_KB;
	snprintf(path, sizeof(path), "per_cpu/cpu%u/buffer_size_kb", cpu);
	snprintf(text, sizeof(text), "%u", kb);
	ret = write_at(w->ifd, path, text, O_TRUNC);
	if (ret < 0) {
		log_warn("tracefs instance %s: cpu%u's buffer cannot grow to %u KiB (%s): offset writes "
			 "may be lost", w->name, cpu, kb, strerror(-ret));
		w->kb[cpu] = WATCH_BUFFER_MAX_KB;	/* not tried again */
		return;
	}
	log_info("tracefs instance %s: cpu%u's buffer grown to %u KiB (%u pages in one read%s)",
		 w->name, cpu, kb, pages, lost ? ", writes lost" : "");
	w->kb[cpu] = kb;
	w->grows++;
	if (kb > w->st.max_kb)
		w->st.max_kb = kb;
}

/**
 * tscwatch_read() - take every offset write recorded so far
 * @w: the watch
 * @changes: set to the writes, by host TSC (free() it), or NULL
 * @nr: set to how many
 *
 * Never blocks: each CPU's buffer is read until it is empty. A CPU that
 * gave half its buffer in this read, or lost writes, gets a bigger buffer;
 * tscwatch_busy() says whether to read again soon.
 *
 * Return: 0, -ENOMEM, or -errno from a read.
 */
int tscwatch_read(struct tscwatch *w, struct tscwatch_change **changes, size_t *nr)
{
	struct tscwatch_change *v = NULL;
	size_t n = 0, cap = 0;
	struct timespec ts;
	unsigned int cpu;
	uint64_t now;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (w->last_ns && now - w->last_ns > w->st.max_gap_ns)
		w->st.max_gap_ns = now - w->last_ns;
	w->last_ns = now;
	w->st.reads++;
	w->peak = 0;
	w->busy = false;
	for (cpu = 0; cpu < w->nr_cpus && ret == 0; cpu++) {
		uint64_t lost = w->lost;
		unsigned int pages = 0;

		for (;;) {
			ssize_t got = read(w->fds[cpu], w->page, w->fmt.subbuf_size);

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0 && errno == EAGAIN)
				break;
			if (got < 0) {
				ret = -errno;
				break;
			}
			if (!got)
				break;
			if ((size_t)got < w->fmt.subbuf_size)
				memset(w->page + got, 0, w->fmt.subbuf_size - got);
			pages++;
			ret = read_page(w, (size_t)got, &v, &n, &cap);
			if (ret < 0)
				break;
		}
		plan(w, cpu, pages, w->lost > lost);
	}
	if (ret < 0) {
		free(v);
		return ret;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_change);
	*changes = v;
	*nr = n;
	return 0;
}

/**
 * tscwatch_from() - when the watch began
 * @w: the watch
 *
 * Return: the host TSC read just before tracing was turned on: every write
 * after it is seen.
 */
uint64_t tscwatch_from(const struct tscwatch *w)
{
	return w->from;
}

/**
 * tscwatch_lost() - writes the instance could not keep
 * @w: the watch
 *
 * Return: events lost (buffer overrun, or a page that did not parse).
 */
uint64_t tscwatch_lost(const struct tscwatch *w)
{
	return w->lost;
}

/**
 * tscwatch_busy() - whether the next read should come at once
 * @w: the watch
 *
 * Return: true when the last tscwatch_read() found a CPU's buffer at least
 * a quarter full: on the usual timer it could overrun before the next read.
 */
bool tscwatch_busy(const struct tscwatch *w)
{
	return w->busy;
}

/**
 * tscwatch_peak() - the most pages one CPU gave in the last read
 * @w: the watch
 *
 * Return: pages.
 */
unsigned int tscwatch_peak(const struct tscwatch *w)
{
	return w->peak;
}

/**
 * tscwatch_buffer_kb() - a CPU's buffer size, as the watch set it
 * @w: the watch
 * @cpu: the host CPU
 *
 * Return: KiB, 0 for a CPU the instance does not have.
 */
unsigned int tscwatch_buffer_kb(const struct tscwatch *w, unsigned int cpu)
{
	return cpu < w->nr_cpus ? w->kb[cpu] : 0;
}

/**
 * tscwatch_grows() - how many times a buffer was grown
 * @w: the watch
 *
 * Return: the count.
 */
unsigned int tscwatch_grows(const struct tscwatch *w)
{
	return w->grows;
}

/**
 * tscwatch_get_stats() - how the reads went
 * @w: the watch
 * @st: filled in
 */
void tscwatch_get_stats(const struct tscwatch *w, struct tscwatch_stats *st)
{
	*st = w->st;
	if (st->max_kb < WATCH_BUFFER_KB)
		st->max_kb = WATCH_BUFFER_KB;
}

/**
 * tscwatch_name() - the tracefs instance's name
 * @w: the watch
 *
 * Return: the name.
 */
const char *tscwatch_name(const struct tscwatch *w)
{
	return w->name;
}

/**
 * tscwatch_free() - stop, remove the instance, free
 * @w: the watch, or NULL
 */
void tscwatch_free(struct tscwatch *w)
{
	unsigned int i;

	if (!w)
		return;
	if (w->ifd >= 0) {
		write_at(w->ifd, "tracing_on", "0", O_TRUNC);
		write_at(w->ifd, WATCH_EVENT "/enable", "0", O_TRUNC);
	}
	for (i = 0; i < w->nr_cpus; i++)
		close(w->fds[i]);
	free(w->fds);
	free(w->kb);
	free(w->page);
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->tfd >= 0) {
		if (w->inst[0] && unlinkat(w->tfd, w->inst, AT_REMOVEDIR) < 0 && errno != ENOENT)
			log_warn("cannot remove the tracefs instance %s: %m", w->name);
		close(w->tfd);
	}
	free(w);
}
