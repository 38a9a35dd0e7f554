// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kpatch-guest: guest and host halves of the kernel-patches/ e2e tests.
 * Built static with gcc by tests/e2e/test-kpatch-*.sh; the same binary runs
 * in the guest (initramfs) and on the host (check).
 *
 *   kpatch-guest splice-block [--cpu N] [--wait S]
 *	Patch 1 reproducer. In a private tracefs instance with buffer_percent=0,
 *	write one trace_marker on CPU N (a partial sub-buffer only), then a
 *	blocking splice() from per_cpu/cpuN/trace_pipe_raw into a pipe, in a
 *	child pinned to CPU N. Prints one "KP: splice-block ..." line.
 *	Exit 0: the splice returned within S seconds (default 5);
 *	2: it did not (the child's state and whether SIGKILL ended it are
 *	reported); 1: setup error.
 *
 *   kpatch-guest stream --port PATH [--cpu N] [--markers M] [--size B]
 *                [--rounds R] [--tee] [--kmem]
 *	Patch 2. R times: write M markers of B bytes on CPU N into a private
 *	instance (buffer big enough: nothing is lost), stop it, then splice
 *	every full sub-buffer from trace_pipe_raw through a pipe into the
 *	virtio port PATH (SPLICE_F_MOVE), and write() the last partial page.
 *	--tee: tee() each batch into a second pipe first, splice the first to
 *	the port, then read the second and check it (count, payloads, FNV-1a
 *	64 of the spliced pages, printed for the host to compare).
 *	--kmem: count order-0 page allocations during the splice phase with
 *	kmem:mm_page_alloc in a second instance, split by __GFP_NORETRY (the
 *	ring buffer's spare pages) and the rest (virtio_console's copies).
 *	Prints "KP: stream ..." lines: pages, bytes, fnv, pgalloc per MiB
 *	from /proc/vmstat, CPU time of the splicing task (getrusage) and of
 *	the whole guest (/proc/stat) per GiB.
 *
 *   kpatch-guest wait-ack --port PATH [--wait S]
 *	Wait up to S seconds (default 5) for a line "ack" from the host on the
 *	virtio port PATH: the host sends it once it has received every byte
 *	the "sent=" figures announce, so that the guest does not power off
 *	while QEMU still holds port data. Exit 0 acked, 1 not.
 *
 *   kpatch-guest check FILE --cpu N --markers M --size B [--rounds R]
 *                [--pages K --fnv X]
 *	Host side: FILE is what the host read from the port: page records of
 *	4096 bytes. Parses the ring-buffer pages and checks that exactly R*M
 *	markers came, in order, with the exact payloads, no page flagged with
 *	lost events; with --pages/--fnv also that the FNV-1a 64 of the first
 *	K pages is X. Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRACEFS		"/sys/kernel/tracing"
#define INSTANCE	"kpatch"
#define KMEM_INSTANCE	"kpatch-kmem"
#define IBASE		TRACEFS "/instances/" INSTANCE
#define PAGE		4096
#define PIPE_BYTES	(1 << 20)
#define MAX_MARKER	1000


static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_file(const char *path, const char *val)
{
	int fd, ret = 0;
	ssize_t n;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != strlen(val))
		ret = -EIO;
	close(fd);
	return ret;
}

static int iwrite(const char *inst, const char *file, const char *val)
{
	char path[512];
	int ret;

	snprintf(path, sizeof(path), TRACEFS "/instances/%s/%s", inst, file);
	ret = write_file(path, val);
	if (ret < 0)
		fprintf(stderr, "kpatch-guest: write '%s' to %s: %s\n", val, path, strerror(-ret));
	return ret;
}

static int instance_make(const char *inst)
{
	char path[512];

	snprintf(path, sizeof(path), TRACEFS "/instances/%s", inst);
	rmdir(path);
	if (mkdir(path, 0755) < 0) {
		fprintf(stderr, "kpatch-guest: mkdir %s: %s\n", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static void instance_remove(const char *inst)
{
	char path[512];

	snprintf(path, sizeof(path), TRACEFS "/instances/%s", inst);
	rmdir(path);
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "kpatch-guest: pin to CPU %d: %s\n", cpu, strerror(errno));
		return -errno;
	}
	return 0;
}

/* The marker text for (cpu, seq), exactly size bytes, last one '\n'. */
static void marker_text(char *buf, int cpu, unsigned int seq, int size)
{
	int n, i;

	n = snprintf(buf, size, "kpatch cpu=%d seq=%08u ", cpu, seq);
	for (i = n; i < size - 1; i++)
		buf[i] = 'a' + (seq + i) % 26;
	buf[size - 1] = '\n';
}

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_INIT	0xcbf29ce484222325ull

/* Marker checking shared by the guest (--tee copy) and the host. */
struct check {
	int cpu;
	int size;
	unsigned int next;	/* next expected seq */
	unsigned long events;	/* data events seen */
	unsigned long markers;
	unsigned long bad;
	unsigned long lost_pages;
	unsigned long pages;
};

static uint32_t rd32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void check_payload(struct check *c, const unsigned char *pl, size_t len)
{
	char want[MAX_MARKER + 1];
	const char *s;
	size_t slen;

	c->events++;
	/* print event: 8 bytes common fields, 8 bytes ip, then the string */
	if (len < 16)
		return;
	s = (const char *)pl + 16;
	slen = strnlen(s, len - 16);
	if (slen < 7 || memcmp(s, "kpatch ", 7))
		return;
	c->markers++;
	marker_text(want, c->cpu, c->next, c->size);
	if (slen != (size_t)c->size || memcmp(s, want, c->size)) {
		if (c->bad++ < 5)
			fprintf(stderr, "kpatch-check: marker %lu: got '%.*s', want '%.40s...'\n",
				c->markers, (int)(slen > 60 ? 60 : slen), s, want);
	}
	c->next++;
}

/* Parse one 4096-byte ring-buffer page. Returns -1 on a malformed page. */
static int check_page(struct check *c, const unsigned char *pg)
{
	uint64_t commit = rd64(pg + 8);
	size_t len = commit & ((1u << 27) - 1), off = 16, end;
	uint32_t h, tl, l;

	c->pages++;
	if (commit & (1u << 31))
		c->lost_pages++;
	if (len > PAGE - 16)
		return -1;
	end = 16 + len;
	while (off + 4 <= end) {
		h = rd32(pg + off);
		tl = h & 31;
		if (tl == 29) {
			if ((h >> 5) == 0)
				break;
			if (off + 8 > end)
				return -1;
			off += 4 + rd32(pg + off + 4);
		} else if (tl == 30 || tl == 31) {
			off += 8;
		} else if (tl == 0) {
			if (off + 8 > end)
				return -1;
			l = rd32(pg + off + 4);
			if (l < 4 || off + 4 + l > end)
				return -1;
			check_payload(c, pg + off + 8, l - 4);
			off += 4 + l;
		} else {
			l = tl * 4;
			if (off + 4 + l > end)
				return -1;
			check_payload(c, pg + off + 4, l);
			off += 4 + l;
		}
	}
	return 0;
}

static int check_buf(struct check *c, const unsigned char *buf, size_t n)
{
	size_t i;
	int bad = 0;

	for (i = 0; i + PAGE <= n; i += PAGE)
		if (check_page(c, buf + i) < 0) {
			fprintf(stderr, "kpatch-check: malformed page %lu\n", c->pages);
			bad = 1;
		}
	return bad;
}

/* ---------------------------------------------------------------- patch 1 */

static void child_splice(int cpu, int wfd)
{
	char path[512];
	int fd, p[2];
	double t;
	ssize_t n;
	char msg[128];

	if (pin(cpu) < 0)
		_exit(1);
	snprintf(path, sizeof(path), IBASE "/per_cpu/cpu%d/trace_pipe_raw", cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pipe(p) < 0) {
		fprintf(stderr, "kpatch-guest: open %s: %s\n", path, strerror(errno));
		_exit(1);
	}
	t = now_s();
	n = splice(fd, NULL, p[1], NULL, PAGE, 0);
	snprintf(msg, sizeof(msg), "%zd %d %.3f\n", n, n < 0 ? errno : 0, now_s() - t);
	if (write(wfd, msg, strlen(msg)) < 0)
		_exit(1);
	_exit(0);
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '-';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '-';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : '?';
}

static int cmd_splice_block(int cpu, double wait_s)
{
	int rp[2], status, i;
	char buf[128] = "", st1, st2;
	ssize_t n = 0;
	pid_t pid;
	double t0;
	bool gone = false;

	if (instance_make(INSTANCE) < 0)
		return 1;
	if (iwrite(INSTANCE, "buffer_percent", "0") < 0 ||
	    iwrite(INSTANCE, "tracing_on", "1") < 0)
		return 1;
	if (pin(cpu) < 0)
		return 1;
	if (iwrite(INSTANCE, "trace_marker", "kpatch one partial page\n") < 0)
		return 1;
	pin(0);
	if (pipe2(rp, O_CLOEXEC | O_NONBLOCK) < 0)
		return 1;
	t0 = now_s();
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		child_splice(cpu, rp[1]);
	close(rp[1]);
	while (now_s() - t0 < wait_s) {
		n = read(rp[0], buf, sizeof(buf) - 1);
		if (n > 0)
			break;
		usleep(20000);
	}
	if (n > 0) {
		long ret, err;
		double secs;

		buf[n] = 0;
		waitpid(pid, &status, 0);
		if (sscanf(buf, "%ld %ld %lf", &ret, &err, &secs) != 3)
			return 1;
		printf("KP: splice-block returned %ld (errno %ld) after %.3f s: not stuck\n",
		       ret, err, secs);
		instance_remove(INSTANCE);
		return 0;
	}
	st1 = proc_state(pid);
	kill(pid, SIGKILL);
	for (i = 0; i < 50; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			gone = true;
			break;
		}
		usleep(20000);
	}
	st2 = gone ? '-' : proc_state(pid);
	printf("KP: splice-block still in splice() after %.1f s: state %c, after SIGKILL %s (state %c)\n",
	       wait_s, st1, gone ? "gone" : "still there", st2);
	return 2;
}

/* ---------------------------------------------------------------- patch 2 */

struct usage {
	double self_s;		/* user + sys of this task */
	unsigned long long busy, total;	/* /proc/stat jiffies */
	unsigned long long pgalloc;
};

static void usage_now(struct usage *u)
{
	struct rusage ru;
	char line[512], name[64];
	unsigned long long v[10], val;
	FILE *f;
	int i, n;

	getrusage(RUSAGE_SELF, &ru);
	u->self_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		    ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	u->busy = u->total = 0;
	f = fopen("/proc/stat", "re");
	if (f) {
		if (fgets(line, sizeof(line), f)) {
			memset(v, 0, sizeof(v));
			n = sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
				   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
			for (i = 0; i < n; i++) {
				u->total += v[i];
				if (i != 3 && i != 4)
					u->busy += v[i];
			}
		}
		fclose(f);
	}
	u->pgalloc = 0;
	f = fopen("/proc/vmstat", "re");
	if (f) {
		while (fscanf(f, "%63s %llu", name, &val) == 2)
			if (!strncmp(name, "pgalloc_", 8))
				u->pgalloc += val;
		fclose(f);
	}
}

static int count_kmem(unsigned long *noretry, unsigned long *other)
{
	char path[512], line[1024];
	FILE *f;

	*noretry = *other = 0;
	snprintf(path, sizeof(path), TRACEFS "/instances/" KMEM_INSTANCE "/trace");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strstr(line, "mm_page_alloc:"))
			continue;
		if (strstr(line, "__GFP_NORETRY"))
			(*noretry)++;
		else
			(*other)++;
	}
	fclose(f);
	return 0;
}

static ssize_t write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		w = write(fd, p + done, n - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += w;
	}
	return done;
}

static int splice_all(int fd, int pfd, size_t n)
{
	ssize_t s;

	while (n) {
		s = splice(pfd, NULL, fd, NULL, n, SPLICE_F_MOVE);
		if (s < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (s == 0)
			return -EIO;
		n -= s;
	}
	return 0;
}

struct stream_opts {
	const char *port;
	int cpu, size, rounds;
	unsigned long markers;
	bool tee, kmem;
};

static int cmd_stream(struct stream_opts *o)
{
	static unsigned char copy[PIPE_BYTES];
	char path[512], text[MAX_MARKER + 1], kb[32];
	struct usage acc = { 0 };
	struct check c = { .cpu = o->cpu, .size = o->size };
	unsigned long nore = 0, other = 0, pages = 0, partial = 0, m, seq = 0;
	unsigned long long bytes = 0, sent = 0;
	uint64_t fnv = FNV_INIT;
	int raw, port, a[2], b[2] = { -1, -1 }, mfd, r, ret;
	double t_splice = 0, t;
	ssize_t s, tn;

	if (instance_make(INSTANCE) < 0)
		return 1;
	/* room for one round of markers, with slack: nothing may be overwritten */
	snprintf(kb, sizeof(kb), "%lu", (o->markers * (o->size + 32)) / 1024 * 2 + 256);
	if (iwrite(INSTANCE, "buffer_size_kb", kb) < 0)
		return 1;
	if (o->kmem) {
		if (instance_make(KMEM_INSTANCE) < 0 ||
		    iwrite(KMEM_INSTANCE, "buffer_size_kb", "8192") < 0 ||
		    iwrite(KMEM_INSTANCE, "tracing_on", "0") < 0 ||
		    iwrite(KMEM_INSTANCE, "events/kmem/mm_page_alloc/filter", "order == 0") < 0 ||
		    iwrite(KMEM_INSTANCE, "events/kmem/mm_page_alloc/enable", "1") < 0)
			return 1;
	}
	port = open(o->port, O_WRONLY | O_CLOEXEC);
	if (port < 0) {
		fprintf(stderr, "kpatch-guest: open %s: %s\n", o->port, strerror(errno));
		return 1;
	}
	if (pipe2(a, O_CLOEXEC) < 0 || fcntl(a[1], F_SETPIPE_SZ, PIPE_BYTES) < 0)
		return 1;
	if (o->tee && (pipe2(b, O_CLOEXEC) < 0 || fcntl(b[1], F_SETPIPE_SZ, PIPE_BYTES) < 0))
		return 1;
	snprintf(path, sizeof(path), IBASE "/per_cpu/cpu%d/trace_pipe_raw", o->cpu);
	raw = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	mfd = open(TRACEFS "/instances/" INSTANCE "/trace_marker", O_WRONLY | O_CLOEXEC);
	if (raw < 0 || mfd < 0) {
		fprintf(stderr, "kpatch-guest: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (pin(o->cpu) < 0)
		return 1;
	for (r = 0; r < o->rounds; r++) {
		struct usage a0, a1;

		iwrite(INSTANCE, "tracing_on", "1");
		for (m = 0; m < o->markers; m++, seq++) {
			marker_text(text, o->cpu, seq, o->size);
			if (write(mfd, text, o->size) != o->size) {
				fprintf(stderr, "kpatch-guest: marker write: %s\n", strerror(errno));
				return 1;
			}
		}
		iwrite(INSTANCE, "tracing_on", "0");
		/* the splice phase: only this is measured */
		if (o->kmem)
			iwrite(KMEM_INSTANCE, "tracing_on", "1");
		usage_now(&a0);
		t = now_s();
		for (;;) {
			s = splice(raw, NULL, a[1], NULL, PIPE_BYTES, SPLICE_F_NONBLOCK);
			if (s < 0 && errno == EINTR)
				continue;
			if (s <= 0)
				break;
			if (o->tee) {
				tn = tee(a[0], b[1], s, 0);
				if (tn != s) {
					fprintf(stderr, "kpatch-guest: tee %zd of %zd: %s\n", tn, s,
						strerror(errno));
					return 1;
				}
			}
			ret = splice_all(port, a[0], s);
			if (ret < 0) {
				fprintf(stderr, "kpatch-guest: splice to port: %s\n", strerror(-ret));
				return 1;
			}
			if (o->tee) {
				size_t got = 0;

				while (got < (size_t)s) {
					tn = read(b[0], copy + got, s - got);
					if (tn <= 0)
						return 1;
					got += tn;
				}
				fnv = fnv1a(fnv, copy, s);
				check_buf(&c, copy, s);
			}
			pages += s / PAGE;
			bytes += s;
			sent += s;
		}
		if (s < 0 && errno != EAGAIN) {
			fprintf(stderr, "kpatch-guest: splice from %s: %s\n", path, strerror(errno));
			return 1;
		}
		t_splice += now_s() - t;
		usage_now(&a1);
		if (o->kmem)
			iwrite(KMEM_INSTANCE, "tracing_on", "0");
		acc.self_s += a1.self_s - a0.self_s;
		acc.busy += a1.busy - a0.busy;
		acc.total += a1.total - a0.total;
		acc.pgalloc += a1.pgalloc - a0.pgalloc;
		/* the last partial page: read() gives a page-sized record */
		for (;;) {
			s = read(raw, copy, PAGE);
			if (s <= 0)
				break;
			if (write_all(port, copy, s) < 0)
				return 1;
			sent += s;
			if (o->tee) {
				fnv = fnv1a(fnv, copy, s);
				check_buf(&c, copy, s);
			}
			partial++;
		}
	}
	if (o->kmem)
		count_kmem(&nore, &other);
	close(port);
	close(raw);
	close(mfd);
	{
		double mib = bytes / 1048576.0, gib = bytes / 1073741824.0;
		long hz = sysconf(_SC_CLK_TCK);

		printf("KP: stream cpu=%d rounds=%d markers=%lu size=%d tee=%d pages=%lu partial=%lu bytes=%llu sent=%llu fnv=%016" PRIx64 "\n",
		       o->cpu, o->rounds, o->markers * o->rounds, o->size, o->tee, pages, partial,
		       bytes, sent, fnv);
		printf("KP: stream cost: splice %.3f s, pgalloc %llu (%.1f per MiB), task cpu %.3f s (%.2f s per GiB), guest busy %.2f s (%.2f s per GiB)\n",
		       t_splice, acc.pgalloc, mib > 0 ? acc.pgalloc / mib : 0, acc.self_s,
		       gib > 0 ? acc.self_s / gib : 0, (double)acc.busy / hz,
		       gib > 0 ? (double)acc.busy / hz / gib : 0);
		if (o->kmem)
			printf("KP: stream kmem: order-0 allocs ring-buffer(__GFP_NORETRY) %lu (%.1f per MiB), other %lu (%.1f per MiB)\n",
			       nore, mib > 0 ? nore / mib : 0, other, mib > 0 ? other / mib : 0);
		if (o->tee)
			printf("KP: stream tee copy: markers %lu bad %lu lost_pages %lu next %u\n",
			       c.markers, c.bad, c.lost_pages, c.next);
	}
	if (o->kmem)
		instance_remove(KMEM_INSTANCE);
	instance_remove(INSTANCE);
	if (o->tee && (c.markers != o->markers * o->rounds || c.bad || c.lost_pages))
		return 1;
	return 0;
}

/*
 * The guest must not power off while QEMU still holds port data it has not
 * written to the host side: wait for the host's "ack" line on PATH.
 */
static int cmd_wait_ack(const char *path, double wait_s)
{
	char line[64];
	double t0 = now_s();
	struct pollfd pfd;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "kpatch-guest: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("KP: waiting for the host\n");
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (now_s() - t0 < wait_s) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = read(fd, line, sizeof(line) - 1);
		if (n > 0 && !strncmp(line, "ack", 3)) {
			printf("KP: host ack after %.2f s\n", now_s() - t0);
			close(fd);
			return 0;
		}
		if (n == 0)
			usleep(100000);
	}
	close(fd);
	printf("KP: no ack from the host within %.0f s\n", wait_s);
	return 1;
}

static int cmd_check(const char *file, int cpu, unsigned long markers, int size, int rounds,
		     long kpages, const char *fnvs)
{
	struct check c = { .cpu = cpu, .size = size };
	unsigned char *buf;
	struct stat st;
	int fd, bad;
	size_t n = 0;
	ssize_t r;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "kpatch-check: %s: %s\n", file, strerror(errno));
		return 1;
	}
	buf = malloc(st.st_size + 1);
	if (!buf)
		return 1;
	while (n < (size_t)st.st_size && (r = read(fd, buf + n, st.st_size - n)) > 0)
		n += r;
	close(fd);
	bad = n % PAGE != 0;
	if (bad)
		fprintf(stderr, "kpatch-check: %zu bytes is not whole pages\n", n);
	bad |= check_buf(&c, buf, n);
	printf("kpatch-check: %zu bytes, %lu pages, %lu events, %lu markers (want %lu), %lu bad, %lu pages with lost events\n",
	       n, c.pages, c.events, c.markers, markers * rounds, c.bad, c.lost_pages);
	if (c.markers != markers * rounds || c.bad || c.lost_pages)
		bad = 1;
	if (kpages >= 0) {
		uint64_t want = strtoull(fnvs, NULL, 16), got;

		if ((size_t)kpages * PAGE > n) {
			printf("kpatch-check: fewer than %ld pages\n", kpages);
			bad = 1;
		} else {
			got = fnv1a(FNV_INIT, buf, kpages * PAGE);
			printf("kpatch-check: fnv of the first %ld pages %016" PRIx64 " (guest's tee copy %016" PRIx64 ") %s\n",
			       kpages, got, want, got == want ? "equal" : "DIFFERENT");
			if (got != want)
				bad = 1;
		}
	}
	free(buf);
	return bad;
}

static void usage(void)
{
	fprintf(stderr, "usage: kpatch-guest splice-block [--cpu N] [--wait S]\n"
		"       kpatch-guest stream --port PATH [--cpu N] [--markers M] [--size B] [--rounds R] [--tee] [--kmem]\n"
		"       kpatch-guest wait-ack --port PATH [--wait S]\n"
		"       kpatch-guest check FILE --cpu N --markers M --size B [--rounds R] [--pages K --fnv X]\n");
}

int main(int argc, char **argv)
{
	struct stream_opts o = { .cpu = 0, .size = 200, .rounds = 1, .markers = 1000 };
	const char *cmd, *file = NULL, *fnvs = "0";
	double wait_s = 5;
	long kpages = -1;
	int i, cpu_set = 0;

	if (argc < 2) {
		usage();
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	cmd = argv[1];
	i = 2;
	if (!strcmp(cmd, "check") && argc > 2)
		file = argv[i++];
	if (!strcmp(cmd, "splice-block"))
		o.cpu = 1;
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--tee")) {
			o.tee = true;
			continue;
		}
		if (!strcmp(a, "--kmem")) {
			o.kmem = true;
			continue;
		}
		if (!v) {
			usage();
			return 1;
		}
		i++;
		if (!strcmp(a, "--cpu")) {
			o.cpu = atoi(v);
			cpu_set = 1;
		} else if (!strcmp(a, "--wait")) {
			wait_s = atof(v);
		} else if (!strcmp(a, "--port")) {
			o.port = v;
		} else if (!strcmp(a, "--markers")) {
			o.markers = strtoul(v, NULL, 10);
		} else if (!strcmp(a, "--size")) {
			o.size = atoi(v);
		} else if (!strcmp(a, "--rounds")) {
			o.rounds = atoi(v);
		} else if (!strcmp(a, "--pages")) {
			kpages = atol(v);
		} else if (!strcmp(a, "--fnv")) {
			fnvs = v;
		} else {
			usage();
			return 1;
		}
	}
	(void)cpu_set;
	if (o.size < 40 || o.size > MAX_MARKER || o.rounds < 1) {
		fprintf(stderr, "kpatch-guest: --size 40..%d, --rounds >= 1\n", MAX_MARKER);
		return 1;
	}
	if (!strcmp(cmd, "splice-block"))
		return cmd_splice_block(o.cpu, wait_s);
	if (!strcmp(cmd, "stream")) {
		if (!o.port) {
			usage();
			return 1;
		}
		return cmd_stream(&o);
	}
	if (!strcmp(cmd, "wait-ack")) {
		if (!o.port) {
			usage();
			return 1;
		}
		return cmd_wait_ack(o.port, wait_s);
	}
	if (!strcmp(cmd, "check") && file)
		return cmd_check(file, o.cpu, o.markers, o.size, o.rounds, kpages, fnvs);
	usage();
	return 1;
}
