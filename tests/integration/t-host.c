// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The test host: listens on stand-in unix-socket ports, runs a real
 * trace-agent against them, speaks the control protocol and collects every
 * byte the data ports deliver.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t-host.h"
#include "vt_pages.h"

/* CLOCK_MONOTONIC in milliseconds. */
long long t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int t_read_file(const char *path, char *buf, size_t size)
{
	size_t have = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	while (have + 1 < size && (n = read(fd, buf + have, size - 1 - have)) > 0)
		have += n;
	close(fd);
	buf[have] = '\0';
	return have;
}

static int listen_on(const char *dir, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0)
		return -1;
	return fd;
}

static unsigned int tracefs_cpus(const char *tracefs)
{
	char path[512];
	unsigned int n = 0, cpu;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/per_cpu", tracefs);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (sscanf(de->d_name, "cpu%u", &cpu) == 1 && cpu + 1 > n)
			n = cpu + 1;
	closedir(d);
	return n;
}

static bool has_arg(const char *const *args, const char *arg)
{
	for (; args && *args; args++)
		if (!strcmp(*args, arg))
			return true;
	return false;
}

/**
 * t_host_start() - make the ports and run the agent against them
 * @h: zeroed on entry
 * @agent: path of the trace-agent binary
 * @extra_args: more arguments for the agent, NULL-terminated, or NULL; the agent
 *	gets --no-kallsyms unless they hold T_WITH_KALLSYMS, and --once unless
 *	they hold T_SERVE
 *
 * Return: 0, or -1 with a message printed.
 */
int t_host_start(struct t_host *h, const char *agent, const char *const *extra_args)
{
	const char *args[64];
	unsigned int i, n = 0;
	char name[64];

	memset(h, 0, sizeof(*h));
	h->ctl = -1;
	snprintf(h->tracefs, sizeof(h->tracefs), "/sys/kernel/tracing");
	snprintf(h->dir, sizeof(h->dir), "/tmp/vt-test-ports.XXXXXX");
	if (!mkdtemp(h->dir)) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(h->instance, sizeof(h->instance), "vt-test-%d", getpid());
	h->nr_cpus = tracefs_cpus(h->tracefs);
	if (!h->nr_cpus || h->nr_cpus > T_MAX_CPUS) {
		fprintf(stderr, "t_host: no usable per_cpu directories in %s\n", h->tracefs);
		return -1;
	}
	h->ctl_listen = listen_on(h->dir, "agent-ctl-path");
	for (i = 0; i < h->nr_cpus; i++) {
		snprintf(name, sizeof(name), "trace-path-cpu%u", i);
		h->data_listen[i] = listen_on(h->dir, name);
		h->data[i] = -1;
		if (h->data_listen[i] < 0)
			return -1;
	}
	if (h->ctl_listen < 0)
		return -1;
	h->parser = vt_proto_parser_new();

	args[n++] = agent;
	args[n++] = "--port-dir";
	args[n++] = h->dir;
	args[n++] = "--instance";
	args[n++] = h->instance;
	if (!has_arg(extra_args, T_SERVE))
		args[n++] = "--once";
	args[n++] = "--wait";
	args[n++] = "10";
	if (!has_arg(extra_args, T_WITH_KALLSYMS))
		args[n++] = "--no-kallsyms";
	for (i = 0; extra_args && extra_args[i] && n < 62; i++)
		if (strcmp(extra_args[i], T_WITH_KALLSYMS) && strcmp(extra_args[i], T_SERVE))
			args[n++] = extra_args[i];
	args[n] = NULL;
	h->agent = fork();
	if (h->agent < 0)
		return -1;
	if (h->agent == 0) {
		execv(agent, (char *const *)args);
		perror(agent);
		_exit(127);
	}
	return 0;
}

/**
 * t_connect() - connect to a unix socket, retrying until it is there
 * @path: the socket
 * @timeout_ms: how long to retry
 *
 * Return: the connected fd, or -1 with a message printed.
 */
int t_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long end = t_now_ms() + timeout_ms;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "t_host: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		if (t_now_ms() >= end) {
			fprintf(stderr, "t_host: cannot connect to %s: %s\n", path, strerror(errno));
			return -1;
		}
		usleep(20000);
	}
}

/**
 * t_host_attach() - connect to ports that a VM's chardevs listen on
 * @h: zeroed on entry
 * @dir: where the sockets are
 * @suffix: appended to each port name (".sock" for run-guest.sh's sockets)
 * @nr_cpus: data ports trace-path-cpu0..@nr_cpus - 1
 * @timeout_ms: how long to wait for the sockets to appear
 *
 * No agent is started here: it runs in the guest. The data ports stay
 * connected across stop and start (a guest closing its port is no EOF here).
 *
 * Return: 0, or -1 with a message printed.
 */
int t_host_attach(struct t_host *h, const char *dir, const char *suffix, unsigned int nr_cpus,
		  int timeout_ms)
{
	char path[512];
	unsigned int i;

	memset(h, 0, sizeof(*h));
	h->attached = true;
	h->ctl = h->ctl_listen = -1;
	snprintf(h->dir, sizeof(h->dir), "%s", dir);
	snprintf(h->tracefs, sizeof(h->tracefs), "/sys/kernel/tracing");
	if (!nr_cpus || nr_cpus > T_MAX_CPUS)
		return -1;
	h->nr_cpus = nr_cpus;
	for (i = 0; i < nr_cpus; i++)
		h->data[i] = h->data_listen[i] = -1;
	h->parser = vt_proto_parser_new();
	if (!h->parser)
		return -1;
	snprintf(path, sizeof(path), "%s/agent-ctl-path%s", dir, suffix);
	h->ctl = t_connect(path, timeout_ms);
	if (h->ctl < 0)
		return -1;
	for (i = 0; i < nr_cpus; i++) {
		snprintf(path, sizeof(path), "%s/trace-path-cpu%u%s", dir, i, suffix);
		h->data[i] = t_connect(path, timeout_ms);
		if (h->data[i] < 0)
			return -1;
	}
	return 0;
}

/**
 * t_host_stop_agent() - end the agent: wait for it, or send @sig first
 * @h: the host
 * @sig: a signal to send, or 0 to wait for the agent to exit by itself
 *
 * Return: the agent's exit status, -2 if it had to be killed after 10 s.
 */
int t_host_stop_agent(struct t_host *h, int sig)
{
	long long end = t_now_ms() + 10000;
	int status;

	if (h->agent <= 0)
		return -1;
	if (sig)
		kill(h->agent, sig);
	while (t_now_ms() < end) {
		pid_t r = waitpid(h->agent, &status, WNOHANG);

		if (r == h->agent) {
			h->agent = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		t_pump(h, 50);
	}
	kill(h->agent, SIGKILL);
	waitpid(h->agent, &status, 0);
	h->agent = 0;
	return -2;
}

void t_host_free(struct t_host *h)
{
	char path[512];
	unsigned int i;

	if (h->agent > 0)
		t_host_stop_agent(h, SIGTERM);
	if (h->attached) {
		for (i = 0; i < h->nr_cpus; i++) {
			if (h->data[i] >= 0)
				close(h->data[i]);
			free(h->cpu[i].data);
		}
		if (h->ctl >= 0)
			close(h->ctl);
		vt_proto_parser_free(h->parser);
		free(h->ctl_in.data);
		return;
	}
	for (i = 0; i < h->nr_cpus; i++) {
		if (h->data[i] >= 0)
			close(h->data[i]);
		close(h->data_listen[i]);
		free(h->cpu[i].data);
		snprintf(path, sizeof(path), "%s/trace-path-cpu%u", h->dir, i);
		unlink(path);
	}
	if (h->ctl >= 0)
		close(h->ctl);
	close(h->ctl_listen);
	snprintf(path, sizeof(path), "%s/agent-ctl-path", h->dir);
	unlink(path);
	rmdir(h->dir);
	vt_proto_parser_free(h->parser);
	free(h->ctl_in.data);
	/* An instance the agent failed to remove would be a test failure; clean anyway. */
	snprintf(path, sizeof(path), "%s/instances/%s", h->tracefs, h->instance);
	rmdir(path);
}

static void append(struct t_buf *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2 + 65536;
		b->data = realloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

/**
 * t_pump() - accept connections, read the data ports (unless paused) and the
 * control port, for at most @timeout_ms
 * @h: the host
 * @timeout_ms: how long to wait for something
 *
 * Return: the number of fds that had something, 0 on timeout.
 */
int t_pump(struct t_host *h, int timeout_ms)
{
	struct pollfd pfd[2 + 2 * T_MAX_CPUS];
	static uint8_t buf[1 << 16];
	unsigned int i, n = 0;
	int r;

	pfd[n++] = (struct pollfd){ .fd = h->ctl >= 0 ? h->ctl : h->ctl_listen, .events = POLLIN };
	for (i = 0; i < h->nr_cpus; i++) {
		int fd = h->data[i] >= 0 ? (h->paused ? -1 : h->data[i]) : h->data_listen[i];

		pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	r = poll(pfd, n, timeout_ms);
	if (r <= 0)
		return 0;
	if (pfd[0].revents) {
		if (h->ctl < 0) {
			h->ctl = accept4(h->ctl_listen, NULL, NULL, SOCK_CLOEXEC);
		} else {
			ssize_t got = read(h->ctl, buf, sizeof(buf));

			if (got > 0) {
				append(&h->ctl_in, buf, got);
			} else {
				close(h->ctl);
				h->ctl = -1;
			}
		}
	}
	for (i = 0; i < h->nr_cpus; i++) {
		if (!pfd[1 + i].revents)
			continue;
		if (h->data[i] < 0) {
			h->data[i] = accept4(h->data_listen[i], NULL, NULL, SOCK_CLOEXEC);
			continue;
		}
		ssize_t got = read(h->data[i], buf, sizeof(buf));

		if (got > 0) {
			append(&h->cpu[i], buf, got);
		} else {
			/* The agent closed the port (a stop); a start connects again. */
			close(h->data[i]);
			h->data[i] = -1;
		}
	}
	return r;
}

uint32_t t_send(struct t_host *h, int len)
{
	if (len < 0 || t_send_raw(h, h->frame, len) < 0)
		return 0;
	return h->seq;
}

int t_send_raw(struct t_host *h, const void *buf, size_t len)
{
	long long end = t_now_ms() + 5000;

	while (h->ctl < 0 && t_now_ms() < end)
		t_pump(h, 50);
	if (h->ctl < 0) {
		fprintf(stderr, "t_host: the agent never connected its control port\n");
		return -1;
	}
	return vt_proto_write_all(h->ctl, buf, len, 5000);
}

static void note(struct t_host *h, const struct vt_proto_msg *m)
{
	struct vt_proto_stats st;
	struct vt_proto_error e;
	const char *text;

	if (m->type == VT_PROTO_STATS && vt_proto_dec_stats(m, &st) == 0) {
		if (st.cpu < T_MAX_CPUS) {
			snprintf(h->stats_text[st.cpu], sizeof(h->stats_text[0]), "%s", st.text);
			h->pages[st.cpu] = st.pages;
			h->bytes[st.cpu] = st.bytes;
			h->partial_reads[st.cpu] = st.partial_reads;
		} else {
			h->fallbacks_total = st.splice_fallbacks;
		}
	}
	if (m->type == VT_PROTO_ERROR && vt_proto_dec_error(m, &e) == 0) {
		h->errors++;
		h->last_err = e.err;
		snprintf(h->last_err_text, sizeof(h->last_err_text), "%s", e.text);
	}
	if (m->type == VT_PROTO_NOTICE && vt_proto_dec_string(m, &text) == 0) {
		h->notices++;
		snprintf(h->last_notice, sizeof(h->last_notice), "%s", text);
	}
}

/*
 * The next control message. The parser holds one frame: feed it from what
 * t_pump() read only when it has nothing whole left (a 64 KiB read holds many
 * frames; dropping what does not fit would lose messages).
 */
static int next_msg(struct t_host *h, struct vt_proto_msg *m)
{
	for (;;) {
		int r = vt_proto_parser_next(h->parser, m);
		size_t fed;

		if (r != 0)
			return r;
		if (h->ctl_off >= h->ctl_in.len) {
			h->ctl_in.len = h->ctl_off = 0;
			return 0;
		}
		fed = vt_proto_parser_feed(h->parser, h->ctl_in.data + h->ctl_off,
					   h->ctl_in.len - h->ctl_off);
		if (!fed)
			return 0;
		h->ctl_off += fed;
	}
}

/**
 * t_wait() - pump until a message of @type (acknowledging @ref_seq, if not 0)
 * @h: the host
 * @type: message type wanted
 * @ref_seq: for OK, ERROR and STOPPED: the seq it must refer to; 0 for any
 * @timeout_ms: how long
 * @out: when not NULL, the message (payload valid until the next call)
 *
 * An ERROR referring to @ref_seq ends the wait with -1.
 *
 * Return: 0, -1 on an error reply, -2 on timeout.
 */
int t_wait(struct t_host *h, uint16_t type, uint32_t ref_seq, int timeout_ms,
	   struct vt_proto_msg *out)
{
	long long end = t_now_ms() + timeout_ms;
	struct vt_proto_msg m;

	for (;;) {
		int r;

		while ((r = next_msg(h, &m)) != 0) {
			uint32_t ref = 0;

			if (r < 0)
				continue;
			note(h, &m);
			if (m.len >= 4 && (m.type == VT_PROTO_OK || m.type == VT_PROTO_ERROR ||
					   m.type == VT_PROTO_STOPPED))
				ref = m.payload[0] | m.payload[1] << 8 | m.payload[2] << 16 |
				      (uint32_t)m.payload[3] << 24;
			if (m.type == VT_PROTO_ERROR && ref_seq && ref == ref_seq && type != VT_PROTO_ERROR)
				return -1;
			if (m.type == type && (!ref_seq || ref == ref_seq)) {
				if (out)
					*out = m;
				return 0;
			}
		}
		if (t_now_ms() >= end)
			return -2;
		t_pump(h, 20);
	}
}

int t_cmd_ok(struct t_host *h, int len)
{
	uint32_t seq = t_send(h, len);

	if (!seq)
		return -1;
	return t_wait(h, VT_PROTO_OK, seq, 10000, NULL);
}

int t_hello(struct t_host *h)
{
	struct vt_proto_hello hello = { .rev_min = VT_PROTO_REV_MIN, .rev_max = VT_PROTO_REV_MAX,
					.caps = h->hello_caps, .clock = "", .software = "t-host" };
	uint32_t seq = t_send(h, vt_proto_enc_hello(h->frame, sizeof(h->frame), VT_PROTO_HELLO,
						  ++h->seq, &hello));

	return seq ? t_wait(h, VT_PROTO_HELLO_REPLY, 0, 10000, NULL) : -1;
}

int t_events(struct t_host *h, const char *system, const char *event)
{
	struct vt_proto_event ev = { .system = system, .event = event, .filter = "" };

	return t_cmd_ok(h, vt_proto_enc_events(h->frame, sizeof(h->frame), ++h->seq, 0, &ev, 1));
}

int t_start(struct t_host *h)
{
	return t_start_flags(h, 0);
}

/* START with flags (VT_PROTO_START_HOLD), answered OK; the streams start counting here. */
int t_start_flags(struct t_host *h, uint32_t flags)
{
	unsigned int i;

	for (i = 0; i < h->nr_cpus; i++)
		h->base[i] = h->cpu[i].len;
	return t_cmd_ok(h, vt_proto_enc_start(h->frame, sizeof(h->frame), ++h->seq, flags));
}

int t_stop(struct t_host *h, int timeout_ms)
{
	uint32_t seq = t_send(h, vt_proto_enc_empty(h->frame, sizeof(h->frame), VT_PROTO_STOP,
						     ++h->seq));
	int r;

	if (!seq)
		return -1;
	r = t_wait(h, VT_PROTO_STOPPED, seq, timeout_ms, NULL);
	if (r < 0)
		return r;
	return t_drain(h, 10000);
}

/**
 * t_drain() - read the data ports until each has delivered what STATS said
 * @h: the host
 * @timeout_ms: how long
 *
 * A port's bytes can arrive after STOPPED: the agent's write returns before
 * the host reads. The per-CPU byte counts in STATS say when all is in.
 *
 * Return: 0, or -2 on timeout.
 */
int t_drain(struct t_host *h, int timeout_ms)
{
	long long end = t_now_ms() + timeout_ms;

	for (;;) {
		unsigned int i, short_cpus = 0;

		for (i = 0; i < h->nr_cpus; i++)
			short_cpus += h->cpu[i].len - h->base[i] < h->bytes[i];
		if (!short_cpus)
			return 0;
		if (t_now_ms() >= end)
			return -2;
		t_pump(h, 50);
	}
}

/**
 * t_count_markers() - count print events whose text starts with @prefix
 * @h: the host
 * @cpu: the CPU whose stream to read
 * @prefix: marker text prefix
 * @lost: when not NULL, add the lost-event counts stored in page headers
 * @pages: when not NULL, set to the number of pages
 *
 * Return: the count, or -1 when the stream is not whole pages or a page is bad.
 */
int t_count_markers(const struct t_host *h, unsigned int cpu, const char *prefix,
		    uint64_t *lost, uint64_t *pages)
{
	const struct t_buf *b = &h->cpu[cpu];
	size_t plen = strlen(prefix), off;
	struct vt_page_fmt fmt;
	int id = t_print_id(h), count = 0;

	vt_page_fmt_default(&fmt);
	if (h->subbuf)
		fmt.subbuf_size = h->subbuf;
	if (b->len % fmt.subbuf_size)
		return -1;
	if (pages)
		*pages = b->len / fmt.subbuf_size;
	for (off = 0; off < b->len; off += fmt.subbuf_size) {
		struct vt_page_info info;
		struct vt_page_iter it;
		struct vt_event ev;
		int r;

		if (vt_page_header(&fmt, b->data + off, fmt.subbuf_size, &info) < 0 ||
		    vt_page_iter_init(&it, &fmt, b->data + off, fmt.subbuf_size) < 0)
			return -1;
		if (lost)
			*lost += info.missed_events;
		while ((r = vt_page_iter_next(&it, &ev)) == 1)
			if (ev.id == id && ev.len > 16 + plen && memcmp(ev.data + 16, prefix, plen) == 0)
				count++;
		if (r < 0)
			return -1;
	}
	return count;
}

/**
 * t_stat() - a figure from the last STATS text of a CPU ("overrun", "entries")
 * @h: the host
 * @cpu: the CPU
 * @key: the key before the colon
 *
 * Return: the value, or UINT64_MAX when absent.
 */
uint64_t t_stat(const struct t_host *h, unsigned int cpu, const char *key)
{
	const char *p = h->stats_text[cpu];
	size_t klen = strlen(key);

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':')
			return strtoull(p + klen + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return UINT64_MAX;
}

int t_print_id(const struct t_host *h)
{
	char path[512], buf[512];
	const char *id;

	if (h->print_id > 0)
		return h->print_id;
	snprintf(path, sizeof(path), "%s/events/ftrace/print/format", h->tracefs);
	if (t_read_file(path, buf, sizeof(buf)) <= 0 || !(id = strstr(buf, "ID: ")))
		return -1;
	return atoi(id + 4);
}

/**
 * t_write_markers() - write @n markers "PREFIX first..first+n-1" on @cpu
 * @h: the host
 * @cpu: the CPU to write them from (so they land in its buffer)
 * @prefix: marker text prefix
 * @first: number of the first marker
 * @n: how many
 *
 * Return: the number written, or -errno.
 */
int t_write_markers(const struct t_host *h, unsigned int cpu, const char *prefix,
		    unsigned int first, unsigned int n)
{
	cpu_set_t old, set;
	char path[512], text[128];
	unsigned int i;
	int fd, done = 0;

	snprintf(path, sizeof(path), "%s/instances/%s/trace_marker", h->tracefs, h->instance);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	sched_getaffinity(0, sizeof(old), &old);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (i = 0; i < n; i++) {
		int len = snprintf(text, sizeof(text), "%s %u", prefix, first + i);

		if (write(fd, text, len) == len)
			done++;
	}
	sched_setaffinity(0, sizeof(old), &old);
	close(fd);
	return done;
}

/**
 * t_missed_pages() - pages of a CPU's stream flagged as following lost events
 * @h: the host
 * @cpu: the CPU
 *
 * Return: the number of such pages.
 */
int t_missed_pages(const struct t_host *h, unsigned int cpu)
{
	const struct t_buf *b = &h->cpu[cpu];
	struct vt_page_fmt fmt;
	size_t off;
	int n = 0;

	vt_page_fmt_default(&fmt);
	if (h->subbuf)
		fmt.subbuf_size = h->subbuf;
	for (off = 0; off + fmt.subbuf_size <= b->len; off += fmt.subbuf_size) {
		struct vt_page_info info;

		if (vt_page_header(&fmt, b->data + off, fmt.subbuf_size, &info) == 0 && info.missed)
			n++;
	}
	return n;
}
