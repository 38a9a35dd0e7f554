// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ring-read: what moving ring-buffer pages to the data ports costs in a guest,
 * by splice (the agent's way) or through the mmapped ring buffer (Linux 6.10+:
 * trace_pipe_raw mmap and TRACE_MMAP_IOCTL_GET_READER) with write(). For
 * bench-mmap.sh; not a test. Runs inside the guest, statically linked.
 *
 *   ring-read -m splice|mmap [-s SUBBUF_KB] [-b BUFFER_KB] [-r MARKERS_PER_S] [-z SIZE]
 *             [-t SECONDS] [-p PORT_PREFIX]
 *
 * In a private instance "ring-read" (buffer_size_kb -b, buffer_subbuf_size_kb -s),
 * one writer thread per CPU, pinned, writes trace_marker entries of -z bytes at
 * -r per second (0: flat out) for -t seconds, while one reader thread per CPU,
 * pinned to the same CPU, moves whole sub-buffers to /dev/vportXpY named
 * PORT_PREFIX<cpu> (default trace-path-cpu):
 *   splice  trace_pipe_raw -> 1 MiB pipe -> port, non-blocking, poll() when empty
 *   mmap    GET_READER, then write() of the reader sub-buffer's new event data,
 *           poll() when there is none
 * After -t seconds the writers stop, tracing_on goes to 0 and the readers take
 * what is left in whole sub-buffers. One line per CPU and one total:
 *   RING mode=M cpu=N subbuf=B bytes=X pieces=P reader_cpu_us=U us_per_mb=F
 *        written=W overrun=O entries=E read_events=R
 * bytes: what went to the port (whole pages for splice, event data for mmap);
 * us_per_mb: the reader thread's own CPU time (CLOCK_THREAD_CPUTIME_ID, its
 * syscalls and the kernel's copies included, the writers excluded) per MiB of
 * events handed out (read_events x (SIZE + 16), the same basis for both).
 * Loss is the per-CPU stats' overrun. Exit 0, or 1 with a message.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TRACEFS		"/sys/kernel/tracing"
#define INST		TRACEFS "/instances/ring-read"
#define MAX_CPUS	64

/* <linux/trace_mmap.h> (6.10); the build host's headers may predate it. */
struct ring_meta {
	uint32_t meta_page_size;
	uint32_t meta_struct_len;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	struct {
		uint64_t lost_events;
		uint32_t id;
		uint32_t read;
	} reader;
	uint64_t flags;
	uint64_t entries;
	uint64_t overrun;
	uint64_t read;
	uint64_t reserved1;
	uint64_t reserved2;
};
#define RING_GET_READER	_IO('R', 0x20)
#define COMMIT_LEN_MASK	((1u << 27) - 1)

enum mode { M_SPLICE, M_MMAP };

struct reader {
	int cpu;
	int raw_fd;
	int port_fd;
	pthread_t thread;
	uint64_t bytes, pages;
	long long cpu_ns;
	int err;
	const char *err_what;
};

struct writer {
	int cpu;
	pthread_t thread;
	uint64_t written;
	int err;
};

static enum mode mode = M_SPLICE;
static unsigned int subbuf_kb, buffer_kb = 4096, size = 1000, seconds = 4;
static double rate;
static const char *prefix = "trace-path-cpu";
static unsigned int subbuf;
static atomic_bool writers_stop, readers_drain;

static long long now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

static int get(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static unsigned long long stat_field(int cpu, const char *name)
{
	char path[PATH_MAX], buf[4096], *p;

	snprintf(path, sizeof(path), INST "/per_cpu/cpu%d/stats", cpu);
	if (get(path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, name);
	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

/* /dev/vportXpY whose /sys/class/virtio-ports name is @name. */
static int open_port(const char *name)
{
	char path[PATH_MAX], buf[256];
	struct dirent *de;
	int fd = -ENOENT;
	DIR *d;

	d = opendir("/sys/class/virtio-ports");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "vport", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
		if (get(path, buf, sizeof(buf)) < 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, name) == 0) {
			snprintf(path, sizeof(path), "/dev/%s", de->d_name);
			fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd < 0)
				fd = -errno;
			break;
		}
	}
	closedir(d);
	return fd;
}

static int write_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p = (const char *)p + n;
		len -= n;
	}
	return 0;
}

static void wait_data(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	poll(&pfd, 1, 10);
}

static void *run_splice(struct reader *r)
{
	int p[2];
	size_t chunk = 64 * (size_t)subbuf;

	if (pipe2(p, O_CLOEXEC) < 0) {
		r->err = errno;
		r->err_what = "pipe";
		return NULL;
	}
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	for (;;) {
		ssize_t n = splice(r->raw_fd, NULL, p[1], NULL, chunk, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN) {
				r->err = errno;
				r->err_what = "splice from trace_pipe_raw";
				break;
			}
			if (atomic_load(&readers_drain))
				break;
			wait_data(r->raw_fd);
			continue;
		}
		r->bytes += n;
		r->pages += n / subbuf;
		while (n > 0) {
			ssize_t m = splice(p[0], NULL, r->port_fd, NULL, n, SPLICE_F_MOVE);

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0) {
				r->err = m < 0 ? errno : EIO;
				r->err_what = "splice to the port";
				goto out;
			}
			n -= m;
		}
	}
out:
	close(p[0]);
	close(p[1]);
	return NULL;
}

/*
 * The reader sub-buffer is ours until the next GET_READER. GET_READER takes
 * the reader to the end of what the sub-buffer holds (the kernel assumes the
 * caller reads all of it) and reports that end in reader.read. While the
 * writer is still on it (the buffer holds less than a sub-buffer) the same
 * sub-buffer comes back, grown: the new data is from the previous reader.read
 * to the new one. What is sent here is that new event data each time, not
 * whole pages: an agent mode would have to frame the pieces into pages of its
 * own (a header whose timestamp is the first new event's), which this bench
 * leaves out; it measures the transport.
 */
static void *run_mmap(struct reader *r)
{
	struct ring_meta *meta;
	size_t meta_len, data_len;
	uint8_t *data;
	long pgsz = sysconf(_SC_PAGESIZE);
	uint32_t held = UINT32_MAX, sent = 0;

	meta = mmap(NULL, pgsz, PROT_READ, MAP_SHARED, r->raw_fd, 0);
	if (meta == MAP_FAILED) {
		r->err = errno;
		r->err_what = "mmap of the meta-page";
		return NULL;
	}
	meta_len = meta->meta_page_size;
	data_len = (size_t)meta->subbuf_size * meta->nr_subbufs;
	if (meta->subbuf_size != subbuf) {
		r->err = EPROTO;
		r->err_what = "meta-page sub-buffer size";
		goto out_meta;
	}
	data = mmap(NULL, data_len, PROT_READ, MAP_SHARED, r->raw_fd, meta_len);
	if (data == MAP_FAILED) {
		r->err = errno;
		r->err_what = "mmap of the sub-buffers";
		goto out_meta;
	}
	for (;;) {
		uint32_t id, len, start, end;
		const uint8_t *page;

		if (ioctl(r->raw_fd, RING_GET_READER) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (atomic_load(&readers_drain))
					break;
				wait_data(r->raw_fd);
				continue;
			}
			r->err = errno;
			r->err_what = "TRACE_MMAP_IOCTL_GET_READER";
			break;
		}
		id = meta->reader.id;
		if (id >= meta->nr_subbufs) {
			r->err = EPROTO;
			r->err_what = "reader id";
			break;
		}
		page = data + (size_t)id * subbuf;
		len = *(const volatile uint32_t *)(page + 8) & COMMIT_LEN_MASK;
		if (len > subbuf - 16) {
			r->err = EPROTO;
			r->err_what = "commit length";
			break;
		}
		start = id == held ? sent : 0;
		end = meta->reader.read;
		if (end > len) {
			r->err = EPROTO;
			r->err_what = "reader.read past the commit length";
			break;
		}
		if (end > start) {
			int ret = write_all(r->port_fd, page + 16 + start, end - start);

			if (ret < 0) {
				r->err = -ret;
				r->err_what = "write to the port";
				break;
			}
			r->bytes += end - start;
			r->pages++;
			held = id;
			sent = end;
			continue;
		}
		held = id;
		sent = end;
		if (atomic_load(&readers_drain))
			break;
		wait_data(r->raw_fd);
	}
	munmap(data, data_len);
out_meta:
	munmap(meta, pgsz);
	return NULL;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	long long t0;

	if (pin(r->cpu) < 0) {
		r->err = errno;
		r->err_what = "sched_setaffinity";
		return NULL;
	}
	t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (mode == M_SPLICE)
		run_splice(r);
	else
		run_mmap(r);
	r->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char text[16384];
	long long t0, next;
	int fd;

	if (pin(w->cpu) < 0) {
		w->err = errno;
		return NULL;
	}
	fd = open(INST "/trace_marker", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		w->err = errno;
		return NULL;
	}
	memset(text, 'x', sizeof(text));
	t0 = now_ns(CLOCK_MONOTONIC);
	while (!atomic_load(&writers_stop)) {
		if (rate > 0) {
			next = t0 + (long long)(w->written * (1e9 / rate));
			if (next - now_ns(CLOCK_MONOTONIC) > 1000000) {
				struct timespec ts = { next / 1000000000, next % 1000000000 };

				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			}
		}
		if (write(fd, text, size) == (ssize_t)size)
			w->written++;
	}
	close(fd);
	return NULL;
}

static int nr_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > MAX_CPUS ? MAX_CPUS : (int)n;
}

int main(int argc, char **argv)
{
	static struct reader rd[MAX_CPUS];
	static struct writer wr[MAX_CPUS];
	char path[PATH_MAX], val[64], buf[1024];
	unsigned long long tbytes = 0, tpages = 0, twritten = 0, tover = 0;
	long long tcpu = 0;
	double tmb = 0;
	int c, cpus = nr_cpus(), i, rc = 0;
	const char *m = "splice";

	while ((c = getopt(argc, argv, "m:s:b:r:z:t:p:")) != -1) {
		switch (c) {
		case 'm':
			m = optarg;
			if (strcmp(m, "mmap") == 0)
				mode = M_MMAP;
			else if (strcmp(m, "splice") != 0)
				goto usage;
			break;
		case 's': subbuf_kb = atoi(optarg); break;
		case 'b': buffer_kb = atoi(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 'z': size = atoi(optarg); break;
		case 't': seconds = atoi(optarg); break;
		case 'p': prefix = optarg; break;
		default: goto usage;
		}
	}
	if (size < 1 || size > 16000 || !seconds)
		goto usage;
	if (mkdir(INST, 0755) < 0 && errno != EEXIST) {
		perror("ring-read: mkdir " INST);
		return 1;
	}
	if (subbuf_kb) {
		snprintf(val, sizeof(val), "%u", subbuf_kb);
		if (put(INST "/buffer_subbuf_size_kb", val) < 0) {
			fprintf(stderr, "ring-read: cannot set buffer_subbuf_size_kb to %s\n", val);
			rc = 1;
			goto out;
		}
	}
	snprintf(val, sizeof(val), "%u", buffer_kb);
	put(INST "/buffer_size_kb", val);
	put(INST "/buffer_percent", "10");
	put(INST "/trace_clock", "x86-tsc");
	get(INST "/events/header_page", buf, sizeof(buf));
	{
		char *p = strstr(buf, "char data;");

		p = p ? strstr(p, "size:") : NULL;
		subbuf = p ? 16 + atoi(p + 5) : 4096;
	}
	put(INST "/tracing_on", "1");
	for (i = 0; i < cpus; i++) {
		rd[i].cpu = wr[i].cpu = i;
		snprintf(path, sizeof(path), INST "/per_cpu/cpu%d/trace_pipe_raw", i);
		/* Non-blocking: a blocking GET_READER waits in ring_buffer_wait(). */
		rd[i].raw_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		snprintf(val, sizeof(val), "%s%d", prefix, i);
		rd[i].port_fd = open_port(val);
		if (rd[i].raw_fd < 0 || rd[i].port_fd < 0) {
			fprintf(stderr, "ring-read: cpu%d: cannot open %s or the port %s\n", i, path, val);
			rc = 1;
			goto out;
		}
	}
	for (i = 0; i < cpus; i++)
		pthread_create(&rd[i].thread, NULL, reader_main, &rd[i]);
	for (i = 0; i < cpus; i++)
		pthread_create(&wr[i].thread, NULL, writer_main, &wr[i]);
	sleep(seconds);
	atomic_store(&writers_stop, true);
	for (i = 0; i < cpus; i++)
		pthread_join(wr[i].thread, NULL);
	put(INST "/tracing_on", "0");
	usleep(200000);
	atomic_store(&readers_drain, true);
	for (i = 0; i < cpus; i++)
		pthread_join(rd[i].thread, NULL);
	for (i = 0; i < cpus; i++) {
		unsigned long long over = stat_field(i, "overrun: ");
		unsigned long long rev = stat_field(i, "read events: ");
		double mb = rev * (size + 16.0) / 1048576.0;

		printf("RING mode=%s cpu=%d subbuf=%u bytes=%llu pieces=%llu reader_cpu_us=%lld "
		       "us_per_mb=%.1f written=%llu overrun=%llu entries=%llu read_events=%llu%s%s\n",
		       m, i, subbuf, (unsigned long long)rd[i].bytes, (unsigned long long)rd[i].pages,
		       rd[i].cpu_ns / 1000, mb > 0 ? rd[i].cpu_ns / 1e3 / mb : 0,
		       (unsigned long long)wr[i].written, over, stat_field(i, "entries: "), rev,
		       rd[i].err ? " error=" : "", rd[i].err ? rd[i].err_what : "");
		if (rd[i].err)
			rc = 1;
		tbytes += rd[i].bytes;
		tpages += rd[i].pages;
		tcpu += rd[i].cpu_ns;
		twritten += wr[i].written;
		tover += over;
		tmb += mb;
	}
	printf("RING mode=%s cpu=all subbuf=%u bytes=%llu pieces=%llu reader_cpu_us=%lld us_per_mb=%.1f "
	       "events_mb=%.1f written=%llu overrun=%llu seconds=%u rate=%g size=%u\n",
	       m, subbuf, tbytes, tpages, tcpu / 1000, tmb > 0 ? tcpu / 1e3 / tmb : 0, tmb, twritten,
	       tover, seconds, rate, size);
out:
	for (i = 0; i < cpus; i++) {
		if (rd[i].raw_fd > 0)
			close(rd[i].raw_fd);
		if (rd[i].port_fd > 0)
			close(rd[i].port_fd);
	}
	rmdir(INST);
	return rc;
usage:
	fprintf(stderr, "usage: ring-read -m splice|mmap [-s SUBBUF_KB] [-b BUFFER_KB] [-r RATE] "
		"[-z SIZE] [-t SECONDS] [-p PORT_PREFIX]\n");
	return 2;
}
