// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-e2e-guest: the guest half of the e2e tests and the guest benchmark.
 * Linked statically and put into the test initramfs. It serves one line
 * command at a time from the host over the virtio-serial port "vt-test"
 * (a channel of its own, so that the test never reads the console to
 * synchronise), and answers each with one line, "ok ..." or "err ...":
 *
 *   hello                       -> ok cpus=N hz=TICKS
 *   spawn ARG...                start a trace-agent (for the benchmark)
 *   flood PREFIX N RATE SIZE [BUF]  on every CPU at once, pinned: N
 *                               markers "PREFIX cpuK I" padded to SIZE bytes, RATE
 *                               per second per CPU (0: flat out), into instance BUF
 *                               (default: --instance's; "top": the top level); a
 *                               marker the kernel cuts short is an error (EMSGSIZE)
 *                               -> ok written=W ns=ELAPSED
 *   cpu                         -> ok ticks=UTIME+STIME of the agent
 *   kill                        SIGTERM the agent, wait -> ok status=S cpu_us=U
 *                               (U: its CPU time, when spawned here)
 *   check                       -> ok instance=0|1 tracing_on=V
 *   sh COMMAND...               run /bin/sh -c COMMAND (output to the console)
 *   instance NAME               flood and waiton use instance NAME ("-": the
 *                               top-level buffer) -> ok
 *   waiton SECS                 wait until that buffer's tracing_on reads 1
 *                               (polled every ms) -> ok ms=WAITED | err timeout
 *   ticks NAME...               utime+stime+cutime+cstime summed over every
 *                               process whose comm is NAME (NAME* : a prefix)
 *                               -> ok ticks=T n=PROCESSES
 *   cpustat                     the whole guest's CPU time from /proc/stat, in
 *                               ticks: -> ok busy=USER+NICE+SYSTEM+IRQ+SOFTIRQ
 *                               idle=IDLE+IOWAIT steal=STEAL
 *   ls DIR                      the names in DIR (no . or ..), sorted, on one line
 *                               -> ok NAME... (at most 4000 bytes) | err ...
 *   status NAME                 of the first process whose comm is NAME: Rss
 *                               and Pss (smaps_rollup), VmHWM (kB), voluntary
 *                               and involuntary context switches of all its
 *                               threads -> ok rss=R pss=S hwm=H vcs=V ivcs=I pid=P
 *                               -> ok rc=STATUS
 *   portw MODE SIZE KIB PORT... the raw ceiling of virtio-serial ports, no ftrace
 *                               (bench-peer --kvm's raw-* modes): KIB KiB into each
 *                               named port at once, one thread per port, the Kth
 *                               pinned to CPU K; MODE write: write() of SIZE-byte
 *                               buffers; MODE splice: as trace-agent moves pages,
 *                               splice() from a SIZE-byte pipe into the port, the
 *                               pipe refilled by tee() from one that vmsplice()
 *                               filled once without SPLICE_F_GIFT (pages the port
 *                               cannot steal: it copies each, as it does ftrace's);
 *                               MODE vmsplice: the same, refilled by vmsplice()
 *                               (pinning the pages anew) -> ok written=BYTES ns=NS
 *   wrtsc CPU DELTA             add DELTA ticks to CPU's TSC: IA32_TSC (MSR 0x10) read
 *                               and written through /dev/cpu/CPU/msr (module msr), on
 *                               CPU with the markers "vt-e2e: wrtsc cpuN before" and
 *                               "... after" around it (--instance's buffer)
 *                               -> ok before=TSC written=TSC
 *   quit                        -> ok, exit 0
 *
 * Usage: vt-e2e-guest [--agent-pid PID] [--instance NAME] [--port NAME]
 * Exit: 0 after quit, 1 when the port never appeared or the host left.
 *
 * Or, as a load of its own for test-kvm-vcpus (one known cause of vCPU time,
 * pinned to one CPU, for MS milliseconds, then exit 0; named NAME in comm):
 *   vt-e2e-guest load burn CPU MS NAME         a busy loop
 *   vt-e2e-guest load port CPU MS NAME PORT    read the 16 ports from PORT on in a
 *                                              loop (/dev/port: the kernel's inb;
 *                                              each one an io exit on KVM)
 *   vt-e2e-guest load sleep CPU MS NAME US     sleep US microseconds in a loop, at
 *                                              nice 19: busy loops beside it on
 *                                              CPU delay each wakeup
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRACEFS		"/sys/kernel/tracing"
#define MAX_CPUS	64
#define MAX_MARKER	16000	/* > 4 KiB: larger sub-buffers carry larger events */

static pid_t agent_pid;
static bool agent_is_child;
static const char *instance = "virtio-trace";

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int find_port(const char *name, char *path, size_t size)
{
	char file[PATH_MAX], buf[256];
	struct dirent *de;
	int ret = -ENOENT;
	DIR *d;

	d = opendir("/sys/class/virtio-ports");
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		ssize_t n;
		int fd;

		if (strncmp(de->d_name, "vport", 5) != 0)
			continue;
		snprintf(file, sizeof(file), "/sys/class/virtio-ports/%s/name", de->d_name);
		fd = open(file, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, name) == 0) {
			snprintf(path, size, "/dev/%s", de->d_name);
			ret = 0;
			break;
		}
	}
	closedir(d);
	return ret;
}

static int nr_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > MAX_CPUS ? MAX_CPUS : (int)n;
}

/* What flood and portw threads have in common: first in their structs. */
struct worker {
	pthread_t thread;
	unsigned long long written;
	int err;
};

/*
 * Run @fn on @n workers @stride bytes apart from @base, each a struct that
 * starts with its struct worker, and wait for them all. Return: the first
 * error of one, or 0; *@total: what they wrote.
 */
static int workers_run(void *base, size_t stride, int n, void *(*fn)(void *),
		       unsigned long long *total)
{
	int i, err = 0;

	*total = 0;
	for (i = 0; i < n; i++) {
		struct worker *w = (struct worker *)((char *)base + i * stride);

		if (pthread_create(&w->thread, NULL, fn, w) != 0) {
			w->err = EAGAIN;
			w->thread = 0;
		}
	}
	for (i = 0; i < n; i++) {
		struct worker *w = (struct worker *)((char *)base + i * stride);

		if (w->thread)
			pthread_join(w->thread, NULL);
		*total += w->written;
		if (w->err && !err)
			err = w->err;
	}
	return err;
}

struct flood {
	struct worker wk;
	int cpu;
	const char *prefix;
	const char *buffer;	/* instance name, or NULL for the top level */
	unsigned long n, rate, size;
};

static void *flood_thread(void *arg)
{
	struct flood *f = arg;
	char path[PATH_MAX], text[MAX_MARKER + 1];
	long long t0, next;
	cpu_set_t set;
	unsigned long i;
	int fd;

	CPU_ZERO(&set);
	CPU_SET(f->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		f->wk.err = errno;
		return NULL;
	}
	if (f->buffer)
		snprintf(path, sizeof(path), TRACEFS "/instances/%s/trace_marker", f->buffer);
	else
		snprintf(path, sizeof(path), TRACEFS "/trace_marker");
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		f->wk.err = errno;
		return NULL;
	}
	t0 = now_ns();
	for (i = 0; i < f->n; i++) {
		int len = snprintf(text, sizeof(text), "%s cpu%d %lu ", f->prefix, f->cpu, i);
		ssize_t n;

		if (f->rate) {
			next = t0 + (long long)(i * (1e9 / f->rate));
			/* Sleep only when ahead by a millisecond: batches, not a syscall per marker. */
			if (next - now_ns() > 1000000) {
				struct timespec ts = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };

				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			}
		}
		if ((unsigned long)len < f->size) {
			memset(text + len, 'x', f->size - len);
			len = f->size;
		}
		/* A short write is a marker cut short: the kernel's size limit. */
		n = write(fd, text, len);
		if (n == len)
			f->wk.written++;
		else if (!f->wk.err)
			f->wk.err = n < 0 ? errno : EMSGSIZE;
	}
	close(fd);
	return NULL;
}

static void cmd_flood(FILE *out, char *args)
{
	static struct flood f[MAX_CPUS];
	static char buffer[128];
	char prefix[128];
	unsigned long n, rate, size;
	unsigned long long total;
	int cpus = nr_cpus(), i, err, nargs;
	const char *buf = strcmp(instance, "-") == 0 ? NULL : instance;
	long long t0;

	nargs = sscanf(args, "%127s %lu %lu %lu %127s", prefix, &n, &rate, &size, buffer);
	if (nargs < 4 || size > MAX_MARKER) {
		fprintf(out, "err usage: flood PREFIX N RATE SIZE [BUFFER]\n");
		return;
	}
	if (nargs == 5)
		buf = strcmp(buffer, "top") == 0 ? NULL : buffer;
	for (i = 0; i < cpus; i++)
		f[i] = (struct flood){ .cpu = i, .prefix = prefix, .buffer = buf,
				       .n = n, .rate = rate, .size = size };
	t0 = now_ns();
	err = workers_run(f, sizeof(f[0]), cpus, flood_thread, &total);
	if (err)
		fprintf(out, "err written=%llu ns=%lld %s\n", total, now_ns() - t0, strerror(err));
	else
		fprintf(out, "ok written=%llu ns=%lld\n", total, now_ns() - t0);
}

enum portw_how { PORTW_WRITE, PORTW_TEE, PORTW_VMSPLICE };

struct portw {
	struct worker wk;
	char path[PATH_MAX];
	int cpu;
	enum portw_how how;
	size_t size;
	unsigned long long left;
};

/*
 * Put @len bytes into @pipe: tee()d from @src (filled once from the buffer by
 * portw_thread()), or vmsplice()d from @buf when @src is NULL. Either way no
 * gift: the port cannot steal the pages and copies each, as it does ftrace's.
 */
static int portw_fill(const int *src, int pipe[2], char *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ssize_t n;

	while (iov.iov_len) {
		if (src)
			n = tee(src[0], pipe[1], iov.iov_len, 0);
		else
			n = vmsplice(pipe[1], &iov, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		iov.iov_base = (char *)iov.iov_base + n;
		iov.iov_len -= n;
	}
	return 0;
}

/* Fill @pipe with @len bytes (portw_fill()) and splice them all into @fd. */
static int portw_splice(const int *src, int pipe[2], int fd, char *buf, size_t len)
{
	int err = portw_fill(src, pipe, buf, len);
	ssize_t n;

	while (!err && len) {
		n = splice(pipe[0], NULL, fd, NULL, len, SPLICE_F_MOVE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		len -= n;
	}
	return err;
}

static int pipe_sized(int p[2], size_t size)
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	if (fcntl(p[1], F_SETPIPE_SZ, (int)size) < (int)size)
		return errno ? errno : EINVAL;
	return 0;
}

static void *portw_thread(void *arg)
{
	struct portw *w = arg;
	int fd, pipe[2] = { -1, -1 }, src[2] = { -1, -1 };
	cpu_set_t set;
	char *buf;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	/* Page-aligned: a SIZE-byte pipe holds SIZE / 4096 pages, not one more. */
	if (posix_memalign((void **)&buf, 4096, w->size))
		buf = NULL;
	fd = open(w->path, O_WRONLY | O_CLOEXEC);
	if (!buf || fd < 0) {
		w->wk.err = buf ? errno : ENOMEM;
		goto out;
	}
	memset(buf, 'v', w->size);
	if (w->how != PORTW_WRITE && (w->wk.err = pipe_sized(pipe, w->size)))
		goto out;
	if (w->how == PORTW_TEE && ((w->wk.err = pipe_sized(src, w->size)) ||
				    (w->wk.err = portw_fill(NULL, src, buf, w->size))))
		goto out;
	while (w->left && !w->wk.err) {
		size_t len = w->left < w->size ? w->left : w->size;
		ssize_t n;

		if (w->how != PORTW_WRITE) {
			w->wk.err = portw_splice(w->how == PORTW_TEE ? src : NULL, pipe, fd, buf, len);
			n = w->wk.err ? 0 : (ssize_t)len;
		} else {
			n = write(fd, buf, len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				w->wk.err = n < 0 ? errno : EIO;
		}
		if (n > 0) {
			w->left -= n;
			w->wk.written += n;
		}
	}
out:
	if (src[0] >= 0) {
		close(src[0]);
		close(src[1]);
	}
	if (pipe[0] >= 0) {
		close(pipe[0]);
		close(pipe[1]);
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void cmd_portw(FILE *out, char *args)
{
	static struct portw w[MAX_CPUS];
	char mode[16], *save = NULL, *name;
	enum portw_how how;
	unsigned long long total;
	unsigned long size, kib;
	int cpus = nr_cpus(), nw = 0, err, skip;
	long long t0;

	if (sscanf(args, "%15s %lu %lu %n", mode, &size, &kib, &skip) < 3 || !size || size > (64 << 20) ||
	    (strcmp(mode, "write") && strcmp(mode, "splice") && strcmp(mode, "vmsplice"))) {
		fprintf(out, "err usage: portw write|splice|vmsplice SIZE KIB PORT...\n");
		return;
	}
	how = mode[0] == 'w' ? PORTW_WRITE : mode[0] == 's' ? PORTW_TEE : PORTW_VMSPLICE;
	for (name = strtok_r(args + skip, " ", &save); name && nw < MAX_CPUS;
	     name = strtok_r(NULL, " ", &save), nw++) {
		w[nw] = (struct portw){ .cpu = nw % cpus, .how = how, .size = size,
					.left = kib * 1024ull };
		if (find_port(name, w[nw].path, sizeof(w[nw].path)) < 0) {
			fprintf(out, "err no port %s\n", name);
			return;
		}
	}
	t0 = now_ns();
	err = workers_run(w, sizeof(w[0]), nw, portw_thread, &total);
	fprintf(out, "%s written=%llu ns=%lld%s%s\n", err ? "err" : "ok", total, now_ns() - t0,
		err ? " " : "", err ? strerror(err) : "");
}

static long long agent_ticks(void)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)agent_pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* Fields after "(comm)": state is 3rd, utime 14th, stime 15th. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return ut + st;
}

static void cmd_spawn(FILE *out, char *args)
{
	char *argv[32], *save = NULL, *w;
	int argc = 0;
	pid_t pid;

	argv[argc++] = "trace-agent";
	for (w = strtok_r(args, " ", &save); w && argc < 31; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0) {
		fprintf(out, "err fork: %s\n", strerror(errno));
		return;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	agent_pid = pid;
	agent_is_child = true;
	fprintf(out, "ok pid=%d\n", (int)pid);
}

static void cmd_sh(FILE *out, char *args)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fprintf(out, "err fork: %s\n", strerror(errno));
		return;
	}
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", args, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	fprintf(out, "ok rc=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static void cmd_kill(FILE *out)
{
	long long end = now_ns() + 10000000000ll;
	int status = 0;

	if (agent_pid <= 0) {
		fprintf(out, "err no agent\n");
		return;
	}
	kill(agent_pid, SIGTERM);
	while (now_ns() < end) {
		if (agent_is_child) {
			struct rusage ru;

			if (wait4(agent_pid, &status, WNOHANG, &ru) == agent_pid) {
				fprintf(out, "ok status=%d cpu_us=%lld\n",
					WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
					(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ll +
					ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
				agent_pid = 0;
				return;
			}
		} else if (kill(agent_pid, 0) < 0) {
			fprintf(out, "ok status=unknown\n");
			agent_pid = 0;
			return;
		}
		usleep(10000);
	}
	fprintf(out, "err agent %d did not exit\n", (int)agent_pid);
}

/* The lines of the instance's set_event (the events enabled in it), -1 if it cannot be read. */
static int instance_events(void)
{
	char path[PATH_MAX], buf[4096];
	int fd, lines = 0;
	ssize_t n, i;

	snprintf(path, sizeof(path), TRACEFS "/instances/%s/set_event", instance);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return n < 0 ? -1 : lines;
}

/* Whether the instance exists, its enabled events, and the top level's tracing_on. */
static void cmd_check(FILE *out)
{
	char path[PATH_MAX], val[16] = "?";
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), TRACEFS "/instances/%s", instance);
	fd = open(TRACEFS "/tracing_on", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, val, sizeof(val) - 1);

		val[n > 0 ? n : 0] = '\0';
		val[strcspn(val, "\n")] = '\0';
		close(fd);
	}
	fprintf(out, "ok instance=%d events=%d tracing_on=%s\n", stat(path, &st) == 0,
		instance_events(), val);
}

static void cmd_instance(FILE *out, char *args)
{
	static char name[128];

	if (sscanf(args, "%127s", name) != 1) {
		fprintf(out, "err usage: instance NAME\n");
		return;
	}
	instance = name;
	fprintf(out, "ok\n");
}

static void cmd_waiton(FILE *out, char *args)
{
	char path[PATH_MAX], val[8];
	long long t0 = now_ns(), end;
	double secs = 10;

	sscanf(args, "%lf", &secs);
	end = t0 + (long long)(secs * 1e9);
	if (strcmp(instance, "-") == 0)
		snprintf(path, sizeof(path), TRACEFS "/tracing_on");
	else
		snprintf(path, sizeof(path), TRACEFS "/instances/%s/tracing_on", instance);
	do {
		int fd = open(path, O_RDONLY);
		ssize_t n = -1;

		if (fd >= 0) {
			n = read(fd, val, sizeof(val));
			close(fd);
		}
		if (n > 0 && val[0] == '1') {
			fprintf(out, "ok ms=%.1f\n", (now_ns() - t0) / 1e6);
			return;
		}
		usleep(1000);
	} while (now_ns() < end);
	fprintf(out, "err timeout\n");
}

/* comm of /proc/PID/stat into comm; the rest after ") " into *rest. */
static int read_stat(const char *pid, char *buf, size_t size, char **comm, char **rest)
{
	char path[64], *l, *r;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	l = strchr(buf, '(');
	r = strrchr(buf, ')');
	if (!l || !r || r < l)
		return -1;
	*r = '\0';
	*comm = l + 1;
	*rest = r + 2;
	return 0;
}

static bool comm_matches(const char *comm, char *names)
{
	char copy[512], *save = NULL, *w;

	snprintf(copy, sizeof(copy), "%s", names);
	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		size_t len = strlen(w);

		if (len && w[len - 1] == '*' ? strncmp(comm, w, len - 1) == 0 : strcmp(comm, w) == 0)
			return true;
	}
	return false;
}

static void cmd_ticks(FILE *out, char *args)
{
	unsigned long long ut, st, cut, cst, total = 0;
	char buf[1024], *comm, *rest;
	struct dirent *de;
	int procs = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d) {
		fprintf(out, "err /proc: %s\n", strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (read_stat(de->d_name, buf, sizeof(buf), &comm, &rest) < 0 ||
		    !comm_matches(comm, args))
			continue;
		/* After "(comm) ": state is field 3; utime..cstime are 14..17. */
		if (sscanf(rest, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
			   &ut, &st, &cut, &cst) != 4)
			continue;
		total += ut + st + cut + cst;
		procs++;
	}
	closedir(d);
	fprintf(out, "ok ticks=%llu n=%d\n", total, procs);
}

/* The first line of /proc/stat: the whole guest's CPU time, in ticks. */
static void cmd_cpustat(FILE *out)
{
	unsigned long long v[8] = { 0 };
	char line[512];
	FILE *f = fopen("/proc/stat", "r");

	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) < 4) {
		fprintf(out, "err /proc/stat: %s\n", f ? "unexpected first line" : strerror(errno));
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	/* user nice system idle iowait irq softirq steal */
	fprintf(out, "ok busy=%llu idle=%llu steal=%llu\n", v[0] + v[1] + v[2] + v[5] + v[6],
		v[3] + v[4], v[7]);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in DIR, sorted, on one line. */
static void cmd_ls(FILE *out, char *args)
{
	char *names[256], line[4001];
	struct dirent *de;
	size_t n = 0, i, len = 0;
	DIR *d = opendir(args);

	if (!d) {
		fprintf(out, "err %s: %s\n", args, strerror(errno));
		return;
	}
	while ((de = readdir(d)) && n < 256) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_names);
	line[0] = '\0';
	for (i = 0; i < n; i++) {
		size_t l = strlen(names[i]);

		if (len + l + 1 < sizeof(line)) {
			snprintf(line + len, sizeof(line) - len, " %s", names[i]);
			len += l + 1;
		}
		free(names[i]);
	}
	fprintf(out, "ok%s\n", line);
}

/* Sum "NAME: value" lines of FILE into *sum; 0 when at least one was found. */
static int sum_field(const char *file, const char *name, long *sum)
{
	char line[256];
	size_t len = strlen(name);
	int found = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, len) == 0 && line[len] == ':') {
			*sum += atol(line + len + 1);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

/*
 * Rss and Pss come from smaps_rollup (a page-table walk): before 6.2 the
 * VmRSS of status lags by up to 64 page events per thread. Context switches
 * are summed over every thread: status alone has the main thread's.
 */
static void cmd_status(FILE *out, char *args)
{
	char buf[1024], path[300], *comm, *rest, name[64];
	long rss = 0, pss = 0, hwm = 0, vcs = 0, ivcs = 0;
	struct dirent *de, *te;
	DIR *d, *td;

	if (sscanf(args, "%63s", name) != 1 || !(d = opendir("/proc"))) {
		fprintf(out, "err usage: status NAME\n");
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (read_stat(de->d_name, buf, sizeof(buf), &comm, &rest) < 0 || strcmp(comm, name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/smaps_rollup", de->d_name);
		sum_field(path, "Rss", &rss);
		sum_field(path, "Pss", &pss);
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		sum_field(path, "VmHWM", &hwm);
		snprintf(path, sizeof(path), "/proc/%s/task", de->d_name);
		td = opendir(path);
		while (td && (te = readdir(td))) {
			if (te->d_name[0] < '0' || te->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/status", de->d_name, te->d_name);
			sum_field(path, "voluntary_ctxt_switches", &vcs);
			sum_field(path, "nonvoluntary_ctxt_switches", &ivcs);
		}
		if (td)
			closedir(td);
		fprintf(out, "ok rss=%ld pss=%ld hwm=%ld vcs=%ld ivcs=%ld pid=%s\n", rss, pss, hwm, vcs,
			ivcs, de->d_name);
		closedir(d);
		return;
	}
	closedir(d);
	fprintf(out, "err no process %s\n", name);
}

/* A marker into --instance's buffer (or the top level), from the CPU this thread runs on. */
static void marker(const char *text)
{
	char path[256];
	int fd;

	if (strcmp(instance, "-") == 0)
		snprintf(path, sizeof(path), TRACEFS "/trace_marker");
	else
		snprintf(path, sizeof(path), TRACEFS "/instances/%s/trace_marker", instance);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0)
		perror("vt-e2e-guest: trace_marker");
	close(fd);
}

/* The guest's own TSC moved: KVM changes the vCPU's offset (kvm_write_tsc_offset). */
static void cmd_wrtsc(FILE *out, char *args)
{
	char path[64], text[64];
	cpu_set_t set, old;
	uint64_t tsc;
	long long delta;
	int cpu, fd;

	if (sscanf(args, "%d %lld", &cpu, &delta) != 2 || cpu < 0 || cpu >= MAX_CPUS) {
		fprintf(out, "err usage: wrtsc CPU DELTA\n");
		return;
	}
	snprintf(path, sizeof(path), "/dev/cpu/%d/msr", cpu);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(out, "err %s: %s\n", path, strerror(errno));
		return;
	}
	/* On that CPU: its markers are stamped by the TSC that moves. */
	sched_getaffinity(0, sizeof(old), &old);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(out, "err cannot run on cpu%d: %s\n", cpu, strerror(errno));
		close(fd);
		return;
	}
	snprintf(text, sizeof(text), "vt-e2e: wrtsc cpu%d before", cpu);
	marker(text);
	if (pread(fd, &tsc, sizeof(tsc), 0x10) != sizeof(tsc)) {
		fprintf(out, "err rdmsr 0x10: %s\n", strerror(errno));
		goto out;
	}
	if (pwrite(fd, &(uint64_t){ tsc + (uint64_t)delta }, sizeof(tsc), 0x10) != sizeof(tsc))
		fprintf(out, "err wrmsr 0x10: %s\n", strerror(errno));
	else
		fprintf(out, "ok before=%llu written=%llu\n", (unsigned long long)tsc,
			(unsigned long long)(tsc + (uint64_t)delta));
	snprintf(text, sizeof(text), "vt-e2e: wrtsc cpu%d after", cpu);
	marker(text);
out:
	sched_setaffinity(0, sizeof(old), &old);
	close(fd);
}

/* vt-e2e-guest load KIND CPU MS NAME [ARG]: see the top. */
static int load(int argc, char **argv)
{
	unsigned long long n = 0;
	unsigned char buf[16];
	int cpu, fd = -1;
	long long end;
	unsigned int arg;
	cpu_set_t set;

	if (argc < 6 || (strcmp(argv[2], "burn") && argc < 7)) {
		fprintf(stderr, "usage: vt-e2e-guest load burn|port|sleep CPU MS NAME [PORT|US]\n");
		return 2;
	}
	cpu = atoi(argv[3]);
	end = now_ns() + atoll(argv[4]) * 1000000ll;
	arg = argc > 6 ? (unsigned int)strtoul(argv[6], NULL, 0) : 0;
	prctl(PR_SET_NAME, argv[5]);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		perror("sched_setaffinity");
		return 1;
	}
	/* Not ioperm() and inb: under nested SVM in TCG the port check faulted (SIGSEGV). */
	if (!strcmp(argv[2], "port") && (fd = open("/dev/port", O_RDONLY)) < 0) {
		perror("/dev/port");
		return 1;
	}
	if (!strcmp(argv[2], "sleep"))
		setpriority(PRIO_PROCESS, 0, 19);
	while (now_ns() < end) {
		if (fd >= 0) {
			if (pread(fd, buf, sizeof(buf), arg) != (ssize_t)sizeof(buf)) {
				perror("/dev/port");
				return 1;
			}
			n += sizeof(buf);
		} else if (!strcmp(argv[2], "sleep")) {
			usleep(arg);
			n++;
		} else {
			n++;
		}
	}
	fprintf(stderr, "vt-e2e-guest load %s: %llu on cpu%d\n", argv[2], n, cpu);
	return 0;
}

int main(int argc, char **argv)
{
	const char *port = "vt-test";
	char path[PATH_MAX], line[4096];
	size_t have = 0;
	int fd, i;
	FILE *out;

	if (argc > 1 && !strcmp(argv[1], "load"))
		return load(argc, argv);
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--agent-pid") == 0)
			agent_pid = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--instance") == 0)
			instance = argv[i + 1];
		else if (strcmp(argv[i], "--port") == 0)
			port = argv[i + 1];
	}
	for (i = 0; find_port(port, path, sizeof(path)) < 0; i++) {
		if (i == 1000) {
			fprintf(stderr, "vt-e2e-guest: no virtio port named %s\n", port);
			return 1;
		}
		usleep(10000);
	}
	fd = open(path, O_RDWR);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	out = fdopen(dup(fd), "w");
	if (!out)
		return 1;
	setvbuf(out, NULL, _IOLBF, 0);
	for (;;) {
		char *nl, *args;
		ssize_t n;

		nl = memchr(line, '\n', have);
		if (!nl) {
			if (have == sizeof(line))
				have = 0;	/* an overlong line: drop it */
			n = read(fd, line + have, sizeof(line) - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return 1;
			if (n == 0) {
				/* The host end is not connected (yet): a virtio port reads 0. */
				usleep(50000);
				continue;
			}
			have += n;
			continue;
		}
		*nl = '\0';
		args = strchr(line, ' ');
		if (args)
			*args++ = '\0';
		else
			args = line + strlen(line);
		if (strcmp(line, "hello") == 0)
			fprintf(out, "ok cpus=%d hz=%ld\n", nr_cpus(), sysconf(_SC_CLK_TCK));
		else if (strcmp(line, "flood") == 0)
			cmd_flood(out, args);
		else if (strcmp(line, "spawn") == 0)
			cmd_spawn(out, args);
		else if (strcmp(line, "cpu") == 0)
			fprintf(out, "ok ticks=%lld\n", agent_ticks());
		else if (strcmp(line, "kill") == 0)
			cmd_kill(out);
		else if (strcmp(line, "check") == 0)
			cmd_check(out);
		else if (strcmp(line, "sh") == 0)
			cmd_sh(out, args);
		else if (strcmp(line, "instance") == 0)
			cmd_instance(out, args);
		else if (strcmp(line, "waiton") == 0)
			cmd_waiton(out, args);
		else if (strcmp(line, "ticks") == 0)
			cmd_ticks(out, args);
		else if (strcmp(line, "status") == 0)
			cmd_status(out, args);
		else if (strcmp(line, "cpustat") == 0)
			cmd_cpustat(out);
		else if (strcmp(line, "ls") == 0)
			cmd_ls(out, args);
		else if (strcmp(line, "wrtsc") == 0)
			cmd_wrtsc(out, args);
		else if (strcmp(line, "portw") == 0)
			cmd_portw(out, args);
		else if (strcmp(line, "quit") == 0) {
			fprintf(out, "ok\n");
			fclose(out);
			return 0;
		} else
			fprintf(out, "err unknown command %s\n", line);
		have -= nl + 1 - line;
		memmove(line, nl + 1, have);
	}
}
