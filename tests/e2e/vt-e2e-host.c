// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-e2e-host: the host half of tests/e2e/test-agent-guest.sh and of
 * tests/bench/bench-agent.sh. It drives a trace-agent over its control port,
 * collects the data ports (tests/integration/t-host.c) and drives the guest
 * workload (vt-e2e-guest) over a test port of its own.
 *
 *   vt-e2e-host e2e PORTDIR [MARKERS [CYCLES]]
 *	the agent runs in a guest whose ports are QEMU-listening sockets
 *	PORTDIR/NAME.sock; vt-test.sock reaches vt-e2e-guest. Exact marker
 *	counts per CPU and cycle, nothing lost, sched events on every CPU.
 *   vt-e2e-host bench-guest PORTDIR SECONDS
 *	guest CPU per GiB, splice against --no-splice, and the highest marker
 *	rate without loss; one line per figure, "bench: KEY VALUE...".
 *   vt-e2e-host bench-local AGENT SECONDS
 *	the same splice comparison on this machine with stand-in ports.
 *
 * Exit: 0 pass, 1 fail, 77 skip.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "t-host.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_proto.h"

#define MAX_IDS	256

static int failures;
static int guest_fd = -1;
static char guest_buf[8192];
static size_t guest_have;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("  %s: ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	if (!ok)
		failures++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * One command to vt-e2e-guest and its one-line answer, pumping the agent's
 * ports meanwhile so that the guest never blocks on a full port.
 */
static int guest(struct t_host *h, int timeout_ms, char *reply, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int guest(struct t_host *h, int timeout_ms, char *reply, size_t size, const char *fmt, ...)
{
	double end = now_s() + timeout_ms / 1000.0;
	char line[512];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[len++] = '\n';
	if (vt_proto_write_all(guest_fd, line, len, 5000) < 0) {
		fprintf(stderr, "vt-e2e-host: cannot write to the guest test port\n");
		return -1;
	}
	for (;;) {
		char *nl = memchr(guest_buf, '\n', guest_have);
		struct pollfd pfd = { .fd = guest_fd, .events = POLLIN };

		if (nl) {
			size_t l = nl - guest_buf < (ptrdiff_t)size ? (size_t)(nl - guest_buf) : size - 1;

			memcpy(reply, guest_buf, l);
			reply[l] = '\0';
			guest_have -= nl + 1 - guest_buf;
			memmove(guest_buf, nl + 1, guest_have);
			if (strncmp(reply, "ok", 2) != 0) {
				fprintf(stderr, "vt-e2e-host: guest answered '%s' to '%.*s'\n", reply,
					len - 1, line);
				return -1;
			}
			return 0;
		}
		if (now_s() > end) {
			fprintf(stderr, "vt-e2e-host: no answer from the guest to '%.*s'\n", len - 1, line);
			return -2;
		}
		if (h)
			t_pump(h, 5);
		if (poll(&pfd, 1, h ? 0 : 50) > 0) {
			ssize_t n = read(guest_fd, guest_buf + guest_have, sizeof(guest_buf) - guest_have);

			if (n <= 0) {
				fprintf(stderr, "vt-e2e-host: the guest test port closed\n");
				return -1;
			}
			guest_have += n;
		}
	}
}

static long long field(const char *reply, const char *key)
{
	const char *p = strstr(reply, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int hello(struct t_host *h, int timeout_ms, struct vt_proto_hello *r)
{
	struct vt_proto_hello hl = { .rev_min = VT_PROTO_REV_MIN, .rev_max = VT_PROTO_REV_MAX,
				     .clock = "", .software = "vt-e2e-host" };
	struct vt_proto_msg m;

	if (!t_send(h, vt_proto_enc_hello(h->frame, sizeof(h->frame), VT_PROTO_HELLO, ++h->seq, &hl)))
		return -1;
	if (t_wait(h, VT_PROTO_HELLO_REPLY, 0, timeout_ms, &m) < 0)
		return -1;
	return r ? vt_proto_dec_hello(&m, r) : 0;
}

static int buffer_kb(struct t_host *h, unsigned int kb)
{
	struct vt_proto_buffer_size bs = { .size_kb = kb };

	return t_cmd_ok(h, vt_proto_enc_buffer_size(h->frame, sizeof(h->frame), ++h->seq, &bs));
}

static int bye(struct t_host *h)
{
	return t_cmd_ok(h, vt_proto_enc_empty(h->frame, sizeof(h->frame), VT_PROTO_BYE, ++h->seq));
}

static int format_id(const struct vt_meta_event *e)
{
	const char *id = strstr(e->format.data, "\nID: ");

	return id ? atoi(id + 5) : -1;
}

/* The guest's event ids from its metadata: print, and every event of @sys1 and of @sys2. */
static int guest_ids(struct t_host *h, const char *sys1, int *ids1, unsigned int *nr1,
		     const char *sys2, int *ids2, unsigned int *nr2)
{
	struct vt_proto_meta_rx rx;
	struct vt_proto_meta_chunk c;
	struct vt_proto_msg m;
	struct vt_meta meta;
	uint32_t i, j;
	int r;

	*nr1 = *nr2 = 0;
	if (!t_send(h, vt_proto_enc_meta_req(h->frame, sizeof(h->frame), ++h->seq, 256 << 20)))
		return -1;
	vt_proto_meta_rx_init(&rx, 256 << 20);
	do {
		if (t_wait(h, VT_PROTO_META, 0, 60000, &m) < 0 || vt_proto_dec_meta(&m, &c) < 0) {
			fprintf(stderr, "vt-e2e-host: no META chunk after %zu bytes (agent errors: %d, "
				"last: %s)\n", rx.len, h->errors, h->last_err_text);
			vt_proto_meta_rx_release(&rx);
			return -1;
		}
		r = vt_proto_meta_rx_add(&rx, &c);
	} while (r == 0);
	if (r < 0 || vt_meta_decode(&meta, rx.data, rx.len) < 0) {
		fprintf(stderr, "vt-e2e-host: bad metadata (%d, %zu bytes)\n", r, rx.len);
		vt_proto_meta_rx_release(&rx);
		return -1;
	}
	for (i = 0; i < meta.ftrace.nr_events; i++)
		if (strcmp(meta.ftrace.events[i].name, "print") == 0)
			h->print_id = format_id(&meta.ftrace.events[i]);
	for (i = 0; i < meta.nr_systems; i++) {
		const struct vt_meta_system *sys = &meta.systems[i];
		bool one = strcmp(sys->name, sys1) == 0;

		if (!one && strcmp(sys->name, sys2) != 0)
			continue;
		for (j = 0; j < sys->nr_events && (one ? *nr1 : *nr2) < MAX_IDS; j++) {
			if (one)
				ids1[(*nr1)++] = format_id(&sys->events[j]);
			else
				ids2[(*nr2)++] = format_id(&sys->events[j]);
		}
	}
	printf("  metadata: %zu bytes, %u systems, print id %d, %u %s and %u %s events\n", rx.len,
	       meta.nr_systems, h->print_id, *nr1, sys1, *nr2, sys2);
	vt_meta_free(&meta);
	vt_proto_meta_rx_release(&rx);
	return 0;
}

/* Events of @cpu's stream whose id is in @ids. */
static long count_ids(const struct t_host *h, unsigned int cpu, const int *ids, unsigned int nr)
{
	const struct t_buf *b = &h->cpu[cpu];
	struct vt_page_fmt fmt;
	long count = 0;
	size_t off;

	vt_page_fmt_default(&fmt);
	for (off = 0; off + fmt.subbuf_size <= b->len; off += fmt.subbuf_size) {
		struct vt_page_iter it;
		struct vt_event ev;
		unsigned int i;

		if (vt_page_iter_init(&it, &fmt, b->data + off, fmt.subbuf_size) < 0)
			return -1;
		while (vt_page_iter_next(&it, &ev) == 1)
			for (i = 0; i < nr; i++)
				if (ev.id == ids[i])
					count++;
	}
	return count;
}

static int connect_guest(const char *dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/vt-test.sock", dir);
	guest_fd = t_connect(path, 20000);
	return guest_fd < 0 ? -1 : 0;
}

static int run_e2e(const char *dir, unsigned int markers, unsigned int cycles)
{
	unsigned int n[16];
	int sched_ids[MAX_IDS], irq_ids[MAX_IDS];
	unsigned int nr_sched, nr_irq, cpu, c, k, cpus;
	struct vt_proto_event ev[2] = {
		{ .system = "sched", .event = "*", .filter = "" },
		{ .system = "irq", .event = "*", .filter = "" },
	};
	struct vt_proto_hello hr;
	char reply[512], prefix[64];
	struct t_host h;
	double t0 = now_s(), t;

	printf("trace-agent in a 2-vCPU TCG guest, driven over virtio-serial: exact per-CPU marker "
	       "counts over %u start/stop cycles, nothing lost, sched events on every CPU\n", cycles);
	if (cycles < 1 || cycles > 16)
		return 2;
	if (connect_guest(dir) < 0 || t_host_attach(&h, dir, ".sock", 2, 20000) < 0)
		return 1;
	if (guest(NULL, 30000, reply, sizeof(reply), "hello") < 0)
		return 1;
	cpus = field(reply, "cpus=");
	check(cpus == 2, "the guest has %u CPUs", cpus);
	h.nr_cpus = cpus < 2 ? 1 : 2;
	if (hello(&h, 30000, &hr) < 0) {
		check(false, "HELLO answered");
		return 1;
	}
	check(hr.nr_cpus == 2 && hr.subbuf_size == 4096, "HELLO_REPLY: %u CPUs, %u-byte sub-buffers, "
	      "clock %s, %s", hr.nr_cpus, hr.subbuf_size, hr.clock, hr.software);
	check(buffer_kb(&h, 4096) == 0, "BUFFER_SIZE 4096 KiB");
	check(t_cmd_ok(&h, vt_proto_enc_events(h.frame, sizeof(h.frame), ++h.seq, 0, ev, 2)) == 0,
	      "EVENTS sched:* irq:*");
	if (guest_ids(&h, "sched", sched_ids, &nr_sched, "irq", irq_ids, &nr_irq) < 0) {
		check(false, "META_REQ answered");
		return 1;
	}
	check(h.print_id > 0 && nr_sched > 0 && nr_irq > 0, "event ids from the guest's metadata");
	printf("  setup took %.2f s\n", now_s() - t0);

	for (c = 0; c < cycles; c++) {
		/*
		 * The last cycle writes more than buffer_percent (50% of 4 MiB) holds,
		 * so pages also leave while tracing, not only in the drain at stop.
		 */
		n[c] = c == cycles - 1 && cycles > 1 ? 6 * markers : markers;
		t = now_s();
		if (t_start(&h) < 0) {
			check(false, "cycle %u: START answered OK (%s)", c, h.last_err_text);
			return 1;
		}
		if (guest(&h, 120000, reply, sizeof(reply), "flood vt-e2e-c%u %u 0 0", c, n[c]) < 0) {
			check(false, "cycle %u: the guest wrote its markers", c);
			return 1;
		}
		check(field(reply, "written=") == (long long)n[c] * h.nr_cpus,
		      "cycle %u: guest wrote %lld markers in %.2f s", c, field(reply, "written="),
		      field(reply, "ns=") / 1e9);
		if (t_stop(&h, 60000) < 0) {
			check(false, "cycle %u: STOPPED and every byte of STATS drained", c);
			return 1;
		}
		for (cpu = 0; cpu < h.nr_cpus; cpu++) {
			uint64_t lost = 0, pages = 0;
			bool all = true;

			for (k = 0; k <= c; k++) {
				snprintf(prefix, sizeof(prefix), "vt-e2e-c%u cpu%u ", k, cpu);
				if (t_count_markers(&h, cpu, prefix, k == c ? &lost : NULL, &pages) != (int)n[k])
					all = false;
			}
			snprintf(prefix, sizeof(prefix), "vt-e2e-c%u cpu%u ", c, cpu);
			check(all, "cycle %u cpu%u: %d of %u markers, every earlier cycle's still whole",
			      c, cpu, t_count_markers(&h, cpu, prefix, NULL, NULL), n[c]);
			check(lost == 0 && t_missed_pages(&h, cpu) == 0 && t_stat(&h, cpu, "overrun") == 0,
			      "cycle %u cpu%u: nothing lost (overrun %llu, pages flagged %d)", c, cpu,
			      (unsigned long long)t_stat(&h, cpu, "overrun"), t_missed_pages(&h, cpu));
			printf("  cycle %u cpu%u: %llu bytes, %llu pages, %llu partial reads\n", c, cpu,
			       (unsigned long long)h.bytes[cpu], (unsigned long long)h.pages[cpu],
			       (unsigned long long)h.partial_reads[cpu]);
		}
		printf("  cycle %u took %.2f s (start, markers, stop, drain)\n", c, now_s() - t);
	}
	for (cpu = 0; cpu < h.nr_cpus; cpu++) {
		long s = count_ids(&h, cpu, sched_ids, nr_sched), i = count_ids(&h, cpu, irq_ids, nr_irq);

		check(s > 0, "cpu%u: %ld sched events, %ld irq events", cpu, s, i);
	}
	check(bye(&h) == 0, "BYE answered OK");
	/*
	 * The agent keeps the instance it made for the next recording
	 * (--keep-instance, 60 s by default), put back as it was made: no event
	 * enabled. It answers BYE first and puts the instance back after
	 * (virtio-trace-protocol(5)), so give it 5 s. Its exit removes the
	 * instance (test-agent-guest.sh checks that after the SIGTERM).
	 */
	t = now_s();
	snprintf(reply, sizeof(reply), "no answer to check");
	while (guest(&h, 10000, reply, sizeof(reply), "check") == 0 && field(reply, "events=") != 0 &&
	       now_s() - t < 5)
		usleep(50000);
	check(field(reply, "instance=") == 1 && field(reply, "events=") == 0,
	      "the agent kept its instance, put back with no event enabled (%s, %.2f s after the OK)",
	      reply, now_s() - t);
	guest(&h, 10000, reply, sizeof(reply), "quit");
	t_host_free(&h);
	printf("  host side took %.2f s\n", now_s() - t0);
	return failures ? 1 : 0;
}

/* --- benchmarks --- */

struct session {
	double seconds;		/* wall time: START to drained */
	double cpu_s;		/* agent CPU time */
	uint64_t bytes;		/* received */
	uint64_t written;	/* markers the workload wrote */
	uint64_t overrun;	/* kernel's overrun, all CPUs */
	uint64_t flagged;	/* pages flagged as following lost events */
	double flood_s;		/* how long the workload took to write */
};

/* per_cpu/cpuN/stats overrun counts since the instance was made: keep the last ones. */
static uint64_t overrun_base[T_MAX_CPUS];

static void stream_totals(struct t_host *h, struct session *s)
{
	unsigned int cpu;

	s->bytes = s->overrun = s->flagged = 0;
	for (cpu = 0; cpu < h->nr_cpus; cpu++) {
		uint64_t o = t_stat(h, cpu, "overrun");

		if (o == UINT64_MAX)
			o = overrun_base[cpu];
		s->bytes += h->cpu[cpu].len;
		s->overrun += o - overrun_base[cpu];
		overrun_base[cpu] = o;
		s->flagged += t_missed_pages(h, cpu);
	}
}

static void forget_data(struct t_host *h)
{
	unsigned int cpu;

	for (cpu = 0; cpu < h->nr_cpus; cpu++)
		h->cpu[cpu].len = 0;
}

static uint64_t lost(const struct session *s)
{
	return s->overrun + s->flagged;
}

/* One START..STOP of the guest flood; the agent must be configured. */
static int guest_session(struct t_host *h, long hz, unsigned long n, unsigned long rate,
			 unsigned long size, struct session *s)
{
	long long ticks;
	char reply[512];
	double w;

	forget_data(h);
	if (guest(h, 10000, reply, sizeof(reply), "cpu") < 0)
		return -1;
	ticks = field(reply, "ticks=");
	w = now_s();
	if (t_start(h) < 0)
		return -1;
	if (guest(h, 300000, reply, sizeof(reply), "flood b %lu %lu %lu", n, rate, size) < 0)
		return -1;
	s->written = field(reply, "written=");
	s->flood_s = field(reply, "ns=") / 1e9;
	if (t_stop(h, 120000) < 0)
		return -1;
	s->seconds = now_s() - w;
	if (guest(h, 10000, reply, sizeof(reply), "cpu") < 0)
		return -1;
	s->cpu_s = (double)(field(reply, "ticks=") - ticks) / hz;
	stream_totals(h, s);
	return 0;
}

/* Start an agent in the guest through vt-e2e-guest and configure it. */
static int guest_agent(struct t_host *h, bool no_splice, unsigned int kb)
{
	char reply[512];

	memset(overrun_base, 0, sizeof(overrun_base));
	if (guest(h, 10000, reply, sizeof(reply), "spawn --quiet --no-kallsyms%s",
		  no_splice ? " --no-splice" : "") < 0 || hello(h, 30000, NULL) < 0 ||
	    buffer_kb(h, kb) < 0)
		return -1;
	return 0;
}

/* End it: BYE, SIGTERM; it must exit 0. */
static int guest_agent_end(struct t_host *h)
{
	char reply[512];

	if (bye(h) < 0 || guest(h, 15000, reply, sizeof(reply), "kill") < 0 ||
	    field(reply, "status=") != 0)
		return -1;
	return 0;
}

static void print_row(const char *where, const char *path, const struct session *s)
{
	double gib = s->bytes / (double)(1 << 30);

	printf("bench: %-5s %-10s %9.1f MiB in %6.2f s = %7.1f MiB/s, agent CPU %6.3f s = %6.2f CPU-s/GiB,"
	       " lost %llu\n", where, path, s->bytes / 1048576.0, s->seconds,
	       s->bytes / 1048576.0 / s->seconds, s->cpu_s, gib > 0 ? s->cpu_s / gib : 0,
	       (unsigned long long)lost(s));
	printf("row %s %s %.1f %.2f %.1f %.3f %.2f %llu\n", where, path, s->bytes / 1048576.0,
	       s->seconds, s->bytes / 1048576.0 / s->seconds, s->cpu_s, gib > 0 ? s->cpu_s / gib : 0,
	       (unsigned long long)lost(s));
}

static void print_ratio(const char *where, const struct session *s)
{
	if (s[0].cpu_s > 0 && s[0].bytes && s[1].bytes)
		printf("bench: %s: read+write costs %.2fx the CPU per GiB of splice\n", where,
		       (s[1].cpu_s / s[1].bytes) / (s[0].cpu_s / s[0].bytes));
}

/* Step the rate of 1 KiB markers up until the kernel loses some. Return: the highest lossless. */
static long rate_steps(struct t_host *h, long hz, double seconds, unsigned int kb)
{
	static const unsigned long rates[] = {
		5000, 10000, 15000, 20000, 30000, 40000, 60000, 80000, 120000, 160000,
	};
	unsigned long size = 1024, best = 0, rate = 0;
	const char *why = ", never lost";
	struct session r;
	unsigned int i;

	if (guest_agent(h, false, kb) < 0)
		return -1;
	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		rate = rates[i];
		if (guest_session(h, hz, rate * seconds / 2, rate, size, &r) < 0)
			return -1;
		printf("bench: guest %5u KiB buffer, %6lu/s/CPU asked: %6.0f/s/CPU written (%5.1f MiB/s "
		       "both CPUs), %llu lost\n", kb, rate, r.written / 2.0 / r.flood_s,
		       r.written * size / r.flood_s / 1048576, (unsigned long long)lost(&r));
		if (lost(&r)) {
			why = "";
			break;
		}
		if (r.written / 2.0 / r.flood_s < 0.9 * rate) {
			why = "; the writers could go no faster";
			break;
		}
		best = rate;
	}
	printf("bench: guest highest rate without loss, %u KiB buffer per CPU: %lu 1 KiB markers/s per "
	       "CPU = %.1f MiB/s%s\n", kb, best, 2.0 * best * size / 1048576, why);
	if (guest_agent_end(h) < 0)
		return -1;
	return best;
}

static int run_bench_guest(const char *dir, double seconds)
{
	unsigned long size = 1024, rate, n;
	struct session s[2], r;
	char reply[512];
	struct t_host h;
	unsigned int mode;
	long hz, best;

	printf("bench-agent (guest): the highest rate of 1 KiB markers without loss, and agent CPU per "
	       "GiB, splice against read()+write(), in a 2-vCPU TCG guest\n");
	if (connect_guest(dir) < 0 || t_host_attach(&h, dir, ".sock", 2, 20000) < 0)
		return 1;
	if (guest(NULL, 30000, reply, sizeof(reply), "hello") < 0)
		return 1;
	hz = field(reply, "hz=");

	/* 1. Rate steps, splice, buffer_percent 50, with a small and a large ring buffer. */
	if (rate_steps(&h, hz, seconds, 1024) < 0)
		return 1;
	best = rate_steps(&h, hz, seconds, 16384);
	if (best < 0)
		return 1;
	/* Small markers flat out: what the guest's writers can do at all. */
	if (guest_agent(&h, false, 16384) < 0 || guest_session(&h, hz, 250000 * seconds / 2, 0, 0, &r) < 0 ||
	    guest_agent_end(&h) < 0)
		return 1;
	printf("bench: guest small markers flat out: %.0f/s/CPU, %llu lost\n",
	       r.written / 2.0 / r.flood_s, (unsigned long long)lost(&r));

	/* 2. The same load for both paths: half the highest lossless rate with 16 MiB. */
	rate = best >= 10000 ? best / 2 : 5000;
	n = rate * seconds;
	printf("bench: guest comparison load: %lu 1 KiB markers per CPU at %lu/s/CPU, 16 MiB buffer\n",
	       n, rate);
	for (mode = 0; mode < 2; mode++) {
		if (guest_agent(&h, mode, 16384) < 0 ||
		    guest_session(&h, hz, n, rate, size, &s[mode]) < 0 || guest_agent_end(&h) < 0)
			return 1;
		print_row("guest", mode ? "read+write" : "splice", &s[mode]);
	}
	print_ratio("guest", s);
	guest(&h, 10000, reply, sizeof(reply), "quit");
	t_host_free(&h);
	return 0;
}

/* Host-side flood: one pinned thread per CPU writing into the agent's instance. */
struct lflood {
	pthread_t thread;
	const struct t_host *h;
	unsigned int cpu;
	unsigned long n, rate, size, written;
};

static void *lflood_thread(void *arg)
{
	struct lflood *f = arg;
	char path[512], text[4096];
	double t0 = now_s();
	cpu_set_t set;
	unsigned long i;
	int fd;

	CPU_ZERO(&set);
	CPU_SET(f->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	snprintf(path, sizeof(path), "%s/instances/%s/trace_marker", f->h->tracefs, f->h->instance);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	memset(text, 'x', sizeof(text));
	for (i = 0; i < f->n; i++) {
		int len = snprintf(text, sizeof(text), "b cpu%u %lu ", f->cpu, i);
		double ahead = f->rate ? t0 + (double)i / f->rate - now_s() : 0;

		if (ahead > 0.001)
			usleep(ahead * 1e6);
		text[len] = 'x';
		if (write(fd, text, f->size) == (ssize_t)f->size)
			f->written++;
	}
	close(fd);
	return NULL;
}

static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (t_read_file(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

static int local_session(const char *agent, bool no_splice, unsigned long n, unsigned long rate,
			 unsigned long size, struct session *s)
{
	const char *const extra[] = { "--quiet", no_splice ? "--no-splice" : NULL, NULL };
	struct lflood f[T_MAX_CPUS];
	unsigned int cpu, nr;
	struct t_host h;
	double c0, w;

	memset(overrun_base, 0, sizeof(overrun_base));
	if (t_host_start(&h, agent, extra) < 0 || t_hello(&h) < 0 || buffer_kb(&h, 16384) < 0)
		goto err;
	c0 = proc_cpu_s(h.agent);
	if (t_start(&h) < 0)
		goto err;
	nr = h.nr_cpus < 2 ? h.nr_cpus : 2;
	w = now_s();
	s->written = 0;
	for (cpu = 0; cpu < nr; cpu++) {
		f[cpu] = (struct lflood){ .h = &h, .cpu = cpu, .n = n, .rate = rate, .size = size };
		pthread_create(&f[cpu].thread, NULL, lflood_thread, &f[cpu]);
	}
	for (cpu = 0; cpu < nr; cpu++) {
		/* Keep reading the ports while the writers run. */
		while (pthread_tryjoin_np(f[cpu].thread, NULL) == EBUSY)
			t_pump(&h, 5);
		s->written += f[cpu].written;
	}
	if (t_stop(&h, 60000) < 0)
		goto err;
	s->seconds = now_s() - w;
	s->cpu_s = proc_cpu_s(h.agent) - c0;
	stream_totals(&h, s);
	if (bye(&h) < 0 || t_host_stop_agent(&h, 0) != 0)
		goto err;
	t_host_free(&h);
	return 0;
err:
	fprintf(stderr, "vt-e2e-host: local session failed (%s)\n", h.last_err_text);
	t_host_free(&h);
	return -1;
}

static int run_bench_local(const char *agent, double seconds)
{
	struct session s[2], cal;
	unsigned long size = 1024, rate;
	unsigned int mode;

	printf("bench-agent (host): agent CPU per GiB, splice against read()+write(), on this machine "
	       "with stand-in socket ports and a private instance\n");
	if (access("/sys/kernel/tracing/instances", W_OK) != 0) {
		printf("skip: no writable tracefs at /sys/kernel/tracing\n");
		return 77;
	}
	/* Flat out once, then both paths at 40% of what arrived: a load both carry whole. */
	if (local_session(agent, false, 50000, 0, size, &cal) < 0)
		return 1;
	rate = 0.4 * cal.bytes / cal.seconds / 2 / size;
	printf("bench: host flat out: %.1f MiB/s arrived, %llu lost; comparison load %lu 1 KiB "
	       "markers/s per CPU for %.0f s\n", cal.bytes / 1048576.0 / cal.seconds,
	       (unsigned long long)lost(&cal), rate, seconds);
	for (mode = 0; mode < 2; mode++) {
		if (local_session(agent, mode, rate * seconds, rate, size, &s[mode]) < 0)
			return 1;
		print_row("host", mode ? "read+write" : "splice", &s[mode]);
	}
	print_ratio("host", s);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 3 && strcmp(argv[1], "e2e") == 0)
		return run_e2e(argv[2], argc > 3 ? atoi(argv[3]) : 10000, argc > 4 ? atoi(argv[4]) : 3);
	if (argc >= 3 && strcmp(argv[1], "bench-guest") == 0)
		return run_bench_guest(argv[2], argc > 3 ? atof(argv[3]) : 4);
	if (argc >= 3 && strcmp(argv[1], "bench-local") == 0)
		return run_bench_local(argv[2], argc > 3 ? atof(argv[3]) : 4);
	fprintf(stderr, "usage: vt-e2e-host e2e PORTDIR [MARKERS [CYCLES]]\n"
			"       vt-e2e-host bench-guest PORTDIR [SECONDS]\n"
			"       vt-e2e-host bench-local AGENT [SECONDS]\n");
	return 2;
}
