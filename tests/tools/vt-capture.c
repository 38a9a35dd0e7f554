// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-capture: record a few seconds of events into a private tracefs instance
 * (vt-capture-<pid>, removed on exit and on SIGINT/SIGTERM) and save them as
 * a fixture directory: cpuN.raw (whole pages back to back, as trace_pipe_raw
 * hands them out), cpuN.stats, and the metadata bundle as plain files.
 * Nothing outside the private instance is changed.
 *
 * -m TEXT: each child also writes TEXT as a marker, and -n COMM names the
 * children COMM (as a task may name itself anything): hostile text for the
 * page payloads and saved_cmdlines, the way a guest's own tasks make it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vt_meta.h"
#include "vt_pages.h"

#define MAX_EVENTS	64

struct capture {
	const char *tracefs;
	const char *out;
	const char *clock;
	const char *events[MAX_EVENTS];
	int nr_events;
	double seconds;
	unsigned int buffer_kb;
	unsigned int meta_flags;
	const char *marker;		/* -m: the children write it too */
	const char *comm;		/* -n: the children's name */
	char name[64];
	char idir[PATH_MAX / 2];
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = sig;
}

static int write_str(const char *path, const char *s, int flags)
{
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != strlen(s))
		ret = -EIO;
	close(fd);
	return ret;
}

static int inst_write(const struct capture *c, const char *file, const char *s, int flags)
{
	char path[PATH_MAX];
	int ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", c->idir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	ret = write_str(path, s, flags);
	if (ret < 0)
		fprintf(stderr, "vt-capture: writing '%s' to %s: %s\n", s, path, strerror(-ret));
	return ret;
}

static int setup(struct capture *c)
{
	char buf[PATH_MAX];
	int i, ret;

	if ((ret = inst_write(c, "tracing_on", "0", O_TRUNC)) < 0)
		return ret;
	snprintf(buf, sizeof(buf), "%u", c->buffer_kb);
	if ((ret = inst_write(c, "buffer_size_kb", buf, O_TRUNC)) < 0 ||
	    (ret = inst_write(c, "trace_clock", c->clock, O_TRUNC)) < 0)
		return ret;
	for (i = 0; i < c->nr_events; i++) {
		if (strchr(c->events[i], ':'))
			snprintf(buf, sizeof(buf), "%s", c->events[i]);
		else
			snprintf(buf, sizeof(buf), "%s:*", c->events[i]);
		ret = inst_write(c, "set_event", buf, O_APPEND);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_requested)
		;
}

/* A child that wakes up a few times and writes markers, then exits. */
static void child(const struct capture *c, const char *marker, int n)
{
	char buf[64];
	int fd, i;

	if (c->comm)
		prctl(PR_SET_NAME, c->comm, 0, 0, 0);
	fd = open(marker, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && c->marker && write(fd, c->marker, strlen(c->marker)) < 0)
		_exit(1);
	for (i = 0; i < 5; i++) {
		snprintf(buf, sizeof(buf), "vt-capture child %d step %d", n, i);
		if (fd >= 0 && write(fd, buf, strlen(buf)) < 0)
			break;
		sleep_ms(3);
	}
	_exit(0);
}

/* A bounded workload: markers, forks, sleeps; stops early on a signal. */
static int workload(const struct capture *c)
{
	char marker[PATH_MAX], buf[64];
	struct timespec t0, now;
	int fd, n = 0;
	pid_t pid;

	snprintf(marker, sizeof(marker), "%s/trace_marker", c->idir);
	fd = open(marker, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "vt-capture: %s: %s\n", marker, strerror(errno));
		return -errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		snprintf(buf, sizeof(buf), "vt-capture tick %d", n);
		if (write(fd, buf, strlen(buf)) < 0)
			break;
		pid = fork();
		if (pid == 0)
			child(c, marker, n);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		sleep_ms(50);
		n++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!stop_requested &&
		 (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 < c->seconds);
	close(fd);
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	char buf[4096];
	ssize_t n;
	int in, out, ret = 0;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			ret = -EIO;
			break;
		}
	if (n < 0)
		ret = -errno;
	close(in);
	close(out);
	return ret;
}

/*
 * Drain one CPU with read() in sub-buffer-sized steps: read() also hands out
 * the last partial page (as a page-sized record), which splice() cannot.
 */
static int drain_cpu(const struct capture *c, uint32_t cpu, uint32_t subbuf, long *pages)
{
	char in[PATH_MAX], out[PATH_MAX];
	uint8_t *page;
	ssize_t n;
	int ifd, ofd, ret = 0;

	snprintf(in, sizeof(in), "%s/per_cpu/cpu%u/trace_pipe_raw", c->idir, cpu);
	snprintf(out, sizeof(out), "%s/cpu%u.raw", c->out, cpu);
	page = malloc(subbuf);
	if (!page)
		return -ENOMEM;
	ifd = open(in, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (ifd < 0) {
		ret = -errno;
		goto out_free;
	}
	ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (ofd < 0) {
		ret = -errno;
		goto out_in;
	}
	*pages = 0;
	for (;;) {
		n = read(ifd, page, subbuf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		/* Keep the file a sequence of whole pages. */
		memset(page + n, 0, subbuf - n);
		if (write(ofd, page, subbuf) != (ssize_t)subbuf) {
			ret = -EIO;
			break;
		}
		(*pages)++;
	}
	close(ofd);
out_in:
	close(ifd);
out_free:
	free(page);
	return ret;
}

static int save(struct capture *c)
{
	char from[PATH_MAX], to[PATH_MAX];
	struct vt_meta m;
	long pages = 0;
	uint32_t cpu;
	int ret;

	ret = vt_meta_load(&m, c->tracefs, c->name, c->meta_flags);
	if (ret < 0) {
		fprintf(stderr, "vt-capture: loading metadata: %s\n", strerror(-ret));
		return ret;
	}
	ret = vt_meta_save_dir(&m, c->out);
	if (ret < 0)
		fprintf(stderr, "vt-capture: saving metadata to %s: %s\n", c->out, strerror(-ret));
	for (cpu = 0; cpu < m.nr_cpus && ret == 0; cpu++) {
		ret = drain_cpu(c, cpu, m.subbuf_size, &pages);
		if (ret < 0) {
			fprintf(stderr, "vt-capture: cpu%u: %s\n", cpu, strerror(-ret));
			break;
		}
		printf("cpu%u %ld pages\n", cpu, pages);
		snprintf(from, sizeof(from), "%s/per_cpu/cpu%u/stats", c->idir, cpu);
		snprintf(to, sizeof(to), "%s/cpu%u.stats", c->out, cpu);
		ret = copy_file(from, to);
	}
	vt_meta_free(&m);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vt-capture -o DIR [-t TRACEFS] [-e SYSTEM[:EVENT]]... [-c CLOCK]\n"
		"                  [-d SECONDS] [-b BUFFER_KB] [-k] [-a] [-m TEXT] [-n COMM]\n"
		"  -k  include /proc/kallsyms    -a  formats of every event system\n"
		"  -m  the children write TEXT as a marker too   -n  and are named COMM\n");
}

static int parse_args(struct capture *c, int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "o:t:e:c:d:b:kam:n:h")) != -1) {
		switch (opt) {
		case 'o':
			c->out = optarg;
			break;
		case 't':
			c->tracefs = optarg;
			break;
		case 'e':
			if (c->nr_events >= MAX_EVENTS)
				return -1;
			c->events[c->nr_events++] = optarg;
			break;
		case 'c':
			c->clock = optarg;
			break;
		case 'd':
			c->seconds = atof(optarg);
			break;
		case 'b':
			c->buffer_kb = atoi(optarg);
			break;
		case 'k':
			c->meta_flags &= ~VT_META_NO_KALLSYMS;
			break;
		case 'a':
			c->meta_flags |= VT_META_ALL_EVENTS;
			break;
		case 'm':
			c->marker = optarg;
			break;
		case 'n':
			c->comm = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	return c->out && optind == argc && c->seconds >= 0 && c->buffer_kb > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct capture c = {
		.tracefs = "/sys/kernel/tracing", .clock = "x86-tsc", .seconds = 2,
		.buffer_kb = 2048, .meta_flags = VT_META_NO_KALLSYMS,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	int ret;

	if (parse_args(&c, argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	if (!c.nr_events) {
		c.events[c.nr_events++] = "sched";
		c.events[c.nr_events++] = "irq";
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (mkdir(c.out, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "vt-capture: %s: %s\n", c.out, strerror(errno));
		return 1;
	}
	snprintf(c.name, sizeof(c.name), "vt-capture-%d", (int)getpid());
	snprintf(c.idir, sizeof(c.idir), "%s/instances/%s", c.tracefs, c.name);
	if (mkdir(c.idir, 0755) < 0) {
		fprintf(stderr, "vt-capture: cannot create instance %s: %s\n", c.idir,
			strerror(errno));
		return errno == ENOENT || errno == EACCES || errno == EPERM ? 77 : 1;
	}
	printf("instance %s\n", c.name);
	fflush(stdout);
	ret = setup(&c);
	if (ret == 0)
		ret = inst_write(&c, "tracing_on", "1", O_TRUNC);
	if (ret == 0)
		ret = workload(&c);
	inst_write(&c, "tracing_on", "0", O_TRUNC);
	if (ret == 0 && !stop_requested)
		ret = save(&c);
	if (rmdir(c.idir) < 0)
		fprintf(stderr, "vt-capture: removing %s: %s\n", c.idir, strerror(errno));
	if (stop_requested) {
		fprintf(stderr, "vt-capture: stopped by signal %d\n", (int)stop_requested);
		return 1;
	}
	return ret < 0 ? 1 : 0;
}
