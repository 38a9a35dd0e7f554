// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-fake-agent: a simulated guest agent for testing virtio-trace-collect
 * without a VM. It speaks the agent side of virtio-trace-protocol(5) over
 * stand-in ports and streams the real pages of a fixture directory (the
 * layout vt-capture writes), so that a test knows exactly what was sent.
 *
 * Port modes mirror QEMU's chardevs:
 *   --fifo DIR     -chardev pipe: DIR/NAME.in (host->guest), DIR/NAME.out
 *                  (guest->host), both opened O_RDWR as QEMU does;
 *   --connect DIR  the collector listens on DIR/NAME and we connect;
 *   --listen DIR   we listen on DIR/NAME (QEMU server=on) and accept; a host
 *                  that leaves before START is followed by the next, as with QEMU.
 *
 * Every misbehaviour is one flag, so that a test can ask for exactly one.
 * What it did goes to stderr, one line per fact, prefixed with the name:
 * tests read the figures (pages and bytes per CPU) from there.
 *
 * One thread, one poll() loop: the control port, the data ports (non-
 * blocking) and, in --listen mode, the listening sockets. The slow modes
 * (--probe-delay, --meta-rate) are timers of that loop, so that a slow guest
 * still streams its pages and reads its control port while it dawdles.
 * --timelog FILE writes when each step happened (CLOCK_REALTIME and
 * CLOCK_MONOTONIC), for tests that measure the collector from the guest side.
 * --last-boot-info TEXT answers LASTBOOT_REQ with the fixture as the last
 * boot's trace (its instance name and info text as a hostile guest likes:
 * --last-boot-name); --dump-last-boot FILE writes that bundle and exits
 * (fuzz-lastboot's seeds). --final-cmdlines TEXT: the bundles asked for
 * after STOPPED name the tasks TEXT names, not the fixture's (a kernel whose
 * saved_cmdlines ring let names go while it traced).
 * START with HOLD (record --hold): the pages are made at once but nothing is
 * sent; at STOP the last --ring-pages of them per CPU go out, the first
 * flagged with the lost count of the ones before (as the kernel's first read
 * after overwrites), and the stats text's overrun says how many events were
 * overwritten. --no-hold: an agent older than HOLD (no capability, and a
 * START with flags is malformed). --qmp PATH: it serves QEMU's QMP socket
 * too, relaying the events a test writes into --qmp-events FIFO (fake-qmp.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "fake-qmp.h"
#include "vt_lastboot.h"
#include "vt_grow.h"
#include "vt_le.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_proto.h"

#define FAKE_MAX_CPUS		256
#define FAKE_MAX_DELAYED	64
#define FAKE_MAX_MISSED		16
#define FAKE_MAX_OVERRUN	16
#define CONNECT_WAIT_MS		30000
#define SYNC_IDLE_NS		(5ll * 1000 * 1000 * 1000)
#define WRITE_TIMEOUT_MS	5000
#define HUGE_META_TOTAL		(1ull << 40)
#define GARBAGE_LEN		1500
#define PUMP_PAGES		64

enum port_mode { MODE_NONE, MODE_FIFO, MODE_CONNECT, MODE_LISTEN };
enum evil { EVIL_NONE, EVIL_TEXT, EVIL_CLOCK, EVIL_META, EVIL_ERROR };

struct missed_mark {
	unsigned int cpu;
	uint64_t page;
	long long count;	/* -1: flag only */
};

struct overrun_mark {
	unsigned int cpu;
	uint64_t value;
};

struct fake_opts {
	enum port_mode mode;
	const char *dir;
	const char *fixture;
	const char *name;
	const char *ctl_name;
	const char *prefix;
	unsigned int cpus;
	uint64_t repeat;		/* 0: until STOP */
	uint64_t rate;			/* bytes per second per CPU, 0: no limit */
	int64_t tsc_offset;
	const char *meta_cpu_us;	/* the STATS for every CPU say "meta_cpu_us: this" */
	bool retime;
	long long bad_page;		/* -1: none */
	bool all_bad;			/* every page of every CPU malformed */
	bool absurd_probes;		/* SYNC_REPLY carries pseudo-random TSCs */
	bool probe_shrink;		/* each probe's round trip shorter than the last */
	uint64_t error_flood;		/* unsolicited ERROR frames after START */
	uint64_t notice_flood;		/* NOTICE frames after START */
	bool garbage;
	bool oversize;
	bool huge_meta;
	bool open_meta;			/* --open-meta: META_OPEN taken, open chunks sent */
	uint64_t kallsyms_key;		/* --kallsyms-key: KALLSYMS_KEY, made-up kallsyms */
	bool lie_key;			/* --lie-kallsyms-key: leave kallsyms out of every bundle */
	const char *kallsyms_name;	/* --kallsyms-name: the made-up symbols' prefix */
	bool endless_meta;		/* --endless-meta: open chunks that never end */
	bool hostile_format;		/* --hostile-format: sched_switch's prev_comm at 100000000 */
	bool hostile_print;		/* --hostile-print: softirq_raise prints 100000000 bytes of hex */
	bool withhold_meta;		/* --withhold-meta: META_REQ after START never answered */
	bool truncate_stream;
	bool wrong_subbuf;
	bool stall_stop;
	bool lie_bytes;
	bool external_pages;
	double crash_after;		/* < 0: never */
	long hangup_setup_ms;		/* < 0: never; else the first META_REQ goes unanswered */
	double forget_after;		/* --forget-hello: < 0 never */
	double stats_delay;		/* --stats-delay: the first STATS_REQ's answer, 0 at once */
	long long probe_delay_ms;	/* < 0: answer probes at once */
	long long stop_probe_delay_ms;	/* --probe-delay-after-stop, < 0: none */
	uint64_t meta_rate;		/* control port bytes per second while META goes out, 0: no limit */
	bool silent_hello;
	unsigned int vary_pages;	/* CPU n sends n % vary_pages more pages, 0: none */
	const char *timelog;
	unsigned int port_gap_ms;	/* --port-gap: between one data port's creation and the next */
	bool again;			/* --again: --listen serves one host after another */
	const char *lastboot_info;	/* --last-boot-info: LASTBOOT_REQ is served, with this text */
	const char *final_cmdlines;	/* --final-cmdlines: saved_cmdlines after STOPPED */
	const char *lastboot_name;	/* --last-boot-name: the instance it says, NULL: the asked one */
	const char *dump_lastboot;	/* --dump-last-boot FILE */
	bool no_hold;			/* --no-hold: no HOLD capability */
	bool watch;			/* --triggers: WATCH served */
	uint64_t triggers;		/* and this many TRIGGERs at START */
	uint64_t ring_pages;		/* --ring-pages: what a held ring keeps per CPU */
	const char *qmp;		/* --qmp: QEMU's QMP socket, served (fake-qmp.c) */
	const char *qmp_events;		/* --qmp-events: a FIFO of events to send on it */
	enum evil evil;
	struct missed_mark missed[FAKE_MAX_MISSED];
	unsigned int nr_missed;
	struct overrun_mark overrun[FAKE_MAX_OVERRUN];
	unsigned int nr_overrun;
};

/**
 * struct fake_cpu - one vCPU's data port and what it has sent
 * @raw: the fixture's pages for this CPU (cpuN.raw, whole pages)
 * @nr_raw: pages in @raw
 * @next: global index of the next page to send (across repetitions)
 * @total: pages to send in all, 0 for "until STOP"
 * @cur: the page being written, @cur_len bytes of it, @cur_off written
 */
struct fake_cpu {
	unsigned int cpu;
	int fd;
	int listen_fd;
	uint8_t *raw;
	size_t nr_raw;
	char *stats;
	uint64_t next;
	uint64_t total;
	uint8_t *cur;
	size_t cur_len;
	size_t cur_off;
	bool have_cur;
	bool done;
	bool closed;
	uint64_t pages_sent;
	uint64_t bytes_sent;
	uint64_t events_sent;
	uint64_t held_from;		/* a held STOP: the first page sent */
	uint64_t overwritten;		/* and the events of the pages before it */
};

/* A SYNC_REPLY held back by --probe-delay until @due (CLOCK_MONOTONIC ns). */
struct delayed_probe {
	struct vt_proto_sync s;
	long long due;
};

/*
 * --meta-rate: control port bytes queued behind the trickling META bundle,
 * written at the rate from @t0 on; @meta_end is where the bundle ends.
 */
struct trickle {
	uint8_t *buf;
	size_t len, off, cap;
	size_t meta_end;
	long long t0;
	bool adding;
};

struct fake {
	struct fake_opts o;
	char watched[2 * VT_PROTO_MAX_NAME + 2];	/* WATCH's "system:event" ("" none) */
	struct vt_meta meta;
	struct vt_page_fmt fmt;
	char clock[64];
	int ctl_rfd, ctl_wfd;
	int ctl_listen_fd;
	struct vt_proto_parser *parser;
	uint32_t seq;
	uint8_t frame[VT_PROTO_FRAME_MAX];
	struct fake_cpu cpus[FAKE_MAX_CPUS];
	bool hello_done;
	unsigned int stats_held;	/* --stats-delay: STATS_REQs not answered yet, in order */
	long long stats_due;		/* when they are */
	bool stats_delayed;		/* the one delay was taken */
	bool running;
	bool stopping;
	bool stop_legacy;
	bool hold;			/* START's HOLD: pages go out at STOP */
	bool got_stop;			/* a STOP came: --probe-delay-after-stop applies */
	uint32_t stop_seq;
	bool stopped_sent;
	long long start_ns;
	uint64_t retime_delta;
	uint64_t retime_span;
	uint64_t markers;
	uint64_t host_errors;
	bool quit;
	bool hung_up;			/* --hangup-in-setup has closed the first session */
	long long hangup_at;		/* when it will (0: not yet asked for the bundle) */
	struct delayed_probe delayed[FAKE_MAX_DELAYED];
	unsigned int nr_delayed;
	long long late_burst_ms;	/* the burst's replies held this long, < 0: none */
	unsigned int late_answered;	/* replies of that burst sent */
	uint32_t late_cpu;		/* its vCPU */
	struct trickle slow;
	FILE *timelog;
	struct fake_qmp *qmp;
};

static volatile sig_atomic_t got_signal;

static void say(const struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static long long now_ns(void);

static void say(const struct fake *f, const char *fmt, ...)
{
	static long long t0;
	long long t = now_ns();
	va_list ap;

	if (!t0)
		t0 = t;
	fprintf(stderr, "vt-fake-agent[%s]: ", f->o.name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (+%.3f s)\n", (t - t0) / 1e9);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* --timelog: "EVENT REALTIME_NS MONOTONIC_NS" when something happened. */
static void timelog(const struct fake *f, const char *event)
{
	struct timespec rt;

	if (!f->timelog)
		return;
	clock_gettime(CLOCK_REALTIME, &rt);
	fprintf(f->timelog, "%s %lld %lld\n", event, rt.tv_sec * 1000000000ll + rt.tv_nsec, now_ns());
	fflush(f->timelog);
}

static uint64_t guest_tsc(const struct fake *f)
{
	return __rdtsc() + (uint64_t)f->o.tsc_offset;
}

static int read_whole(const char *path, uint8_t **data, size_t *len)
{
	size_t cap = 0, have = 0;
	uint8_t *buf = NULL;
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ret = vt_grow((void **)&buf, &cap, have + 4096 + 1, 1);
		if (ret < 0)
			goto err_free;
		n = read(fd, buf + have, cap - have - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto err_free;
		}
		if (n == 0)
			break;
		have += n;
	}
	close(fd);
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[have] = '\0';
	*data = buf;
	*len = have;
	return 0;
err_free:
	free(buf);
	close(fd);
	return ret;
}

/* --- the fixture --- */

/* Rewrite "overrun: N" in a stats text; the rest stays verbatim. */
static char *set_overrun(const char *text, uint64_t value)
{
	const char *p = strstr(text, "overrun: ");
	const char *eol;
	char *out;

	while (p && p != text && p[-1] != '\n')
		p = strstr(p + 1, "overrun: ");
	if (!p)
		return NULL;
	eol = strchr(p, '\n');
	if (!eol)
		eol = p + strlen(p);
	if (asprintf(&out, "%.*soverrun: %" PRIu64 "%s", (int)(p - text), text, value, eol) < 0)
		return NULL;
	return out;
}

/*
 * --hostile-format: the fixture's sched:sched_switch with prev_comm at offset
 * 100000000 (issue 37: libtraceevent's sched_switch plugin read there).
 */
static int hostile_format(struct fake *f)
{
	static const char key[] = "char prev_comm[16];\toffset:";
	uint32_t i, j;

	for (i = 0; i < f->meta.nr_systems; i++) {
		struct vt_meta_system *sys = &f->meta.systems[i];

		for (j = 0; strcmp(sys->name, "sched") == 0 && j < sys->nr_events; j++) {
			struct vt_blob *b = &sys->events[j].format;
			char *at, *end, *n;
			size_t len;

			if (strcmp(sys->events[j].name, "sched_switch") || !(at = strstr(b->data, key)))
				continue;
			at += strlen(key);
			end = strchr(at, ';');
			if (!end)
				break;
			len = (at - b->data) + strlen("100000000") + strlen(end);
			n = malloc(len + 1);
			if (!n)
				return -ENOMEM;
			snprintf(n, len + 1, "%.*s100000000%s", (int)(at - b->data), b->data, end);
			free(b->data);
			b->data = n;
			b->len = len;
			say(f, "sched:sched_switch's prev_comm at offset 100000000 (--hostile-format)");
			return 0;
		}
	}
	say(f, "--hostile-format: the fixture has no sched:sched_switch with prev_comm");
	return -ENOENT;
}

/*
 * --hostile-print: the fixture's irq:softirq_raise (no plugin of
 * libtraceevent prints it) prints its vec with __print_hex(REC->vec,
 * 100000000): every field in range, but libtraceevent reads the length it
 * is given.
 */
static int hostile_print(struct fake *f)
{
	static const char print[] = "print fmt: \"vec=%s\", __print_hex(REC->vec, 100000000)\n";
	uint32_t i, j;

	for (i = 0; i < f->meta.nr_systems; i++) {
		struct vt_meta_system *sys = &f->meta.systems[i];

		for (j = 0; strcmp(sys->name, "irq") == 0 && j < sys->nr_events; j++) {
			struct vt_blob *b = &sys->events[j].format;
			char *at, *n;
			size_t keep;

			if (strcmp(sys->events[j].name, "softirq_raise") || !(at = strstr(b->data, "print fmt:")))
				continue;
			keep = at - b->data;
			n = malloc(keep + sizeof(print));
			if (!n)
				return -ENOMEM;
			memcpy(n, b->data, keep);
			memcpy(n + keep, print, sizeof(print));
			free(b->data);
			b->data = n;
			b->len = keep + sizeof(print) - 1;
			say(f, "irq:softirq_raise prints __print_hex(REC->vec, 100000000) (--hostile-print)");
			return 0;
		}
	}
	say(f, "--hostile-print: the fixture has no irq:softirq_raise");
	return -ENOENT;
}

static int load_fixture(struct fake *f)
{
	unsigned int cpu, fcpus = 0, i;
	char path[PATH_MAX];
	size_t len;
	int ret;

	ret = vt_meta_load_dir(&f->meta, f->o.fixture);
	if (ret < 0) {
		say(f, "cannot load the fixture metadata from %s: %s", f->o.fixture, strerror(-ret));
		return ret;
	}
	ret = vt_page_fmt_parse(&f->fmt, f->meta.header_page.data, f->meta.header_page.len);
	if (ret < 0) {
		say(f, "fixture header_page does not parse: %s", strerror(-ret));
		return ret;
	}
	if (f->o.hostile_format) {
		ret = hostile_format(f);
		if (ret < 0)
			return ret;
	}
	if (f->o.hostile_print) {
		ret = hostile_print(f);
		if (ret < 0)
			return ret;
	}
	vt_meta_clock(&f->meta, f->clock, sizeof(f->clock));
	if (!f->clock[0])
		snprintf(f->clock, sizeof(f->clock), "local");
	for (cpu = 0; cpu < FAKE_MAX_CPUS; cpu++) {
		snprintf(path, sizeof(path), "%s/cpu%u.raw", f->o.fixture, cpu);
		if (access(path, R_OK) < 0)
			break;
		fcpus++;
	}
	if (!fcpus) {
		say(f, "fixture %s has no cpu0.raw", f->o.fixture);
		return -ENOENT;
	}
	if (!f->o.cpus)
		f->o.cpus = fcpus;
	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];
		unsigned int from = cpu % fcpus;
		uint8_t *stats;

		c->cpu = cpu;
		c->fd = c->listen_fd = -1;
		snprintf(path, sizeof(path), "%s/cpu%u.raw", f->o.fixture, from);
		ret = read_whole(path, &c->raw, &len);
		if (ret < 0) {
			say(f, "cannot read %s: %s", path, strerror(-ret));
			return ret;
		}
		if (len % f->fmt.subbuf_size) {
			say(f, "%s is not whole %u-byte pages", path, f->fmt.subbuf_size);
			return -EINVAL;
		}
		c->nr_raw = len / f->fmt.subbuf_size;
		snprintf(path, sizeof(path), "%s/cpu%u.stats", f->o.fixture, from);
		if (read_whole(path, &stats, &len) < 0)
			stats = (uint8_t *)strdup("");
		if (!stats)
			return -ENOMEM;
		c->stats = (char *)stats;
		for (i = 0; i < f->o.nr_overrun; i++) {
			char *s;

			if (f->o.overrun[i].cpu != cpu)
				continue;
			s = set_overrun(c->stats, f->o.overrun[i].value);
			if (!s) {
				say(f, "cpu%u: the stats text has no overrun line", cpu);
				return -EINVAL;
			}
			free(c->stats);
			c->stats = s;
			say(f, "cpu%u: stats text says overrun %" PRIu64, cpu, f->o.overrun[i].value);
		}
		c->total = f->o.repeat * c->nr_raw;
		if (f->o.vary_pages)
			c->total += cpu % f->o.vary_pages;
		c->cur = malloc(f->fmt.subbuf_size);
		if (!c->cur || !c->nr_raw) {
			say(f, "cpu%u: no pages in the fixture (or no memory)", cpu);
			return -EINVAL;
		}
		if (from != cpu)
			say(f, "cpu%u serves the fixture's cpu%u pages", cpu, from);
	}
	f->meta.nr_cpus = f->o.cpus;
	f->meta.subbuf_size = f->fmt.subbuf_size;
	if (f->o.kallsyms_key) {
		/* Made-up kallsyms, so that there is something to keep: 1000 text symbols. */
		size_t klen = 0;
		char *ks = malloc(1000 * 48);

		if (!ks)
			return -ENOMEM;
		for (i = 0; i < 1000; i++)
			klen += snprintf(ks + klen, 48, "ffffffff81%06x T %.16s%u\n", i * 16,
					 f->o.kallsyms_name, i);
		free(f->meta.kallsyms.data);
		f->meta.kallsyms = (struct vt_blob){ .data = ks, .len = klen };
		f->meta.kallsyms_key = f->o.kallsyms_key;
	}
	say(f, "fixture %s: %u CPUs in the fixture, serving %u, %u-byte pages, clock %s",
	    f->o.fixture, fcpus, f->o.cpus, f->fmt.subbuf_size, f->clock);
	return 0;
}

/*
 * The first and last event timestamps of the fixture, to move its pages to
 * "now" (--retime) and to lay repetitions end to end.
 */
static void fixture_span(struct fake *f, uint64_t *first, uint64_t *last)
{
	unsigned int cpu;
	size_t i;

	*first = UINT64_MAX;
	*last = 0;
	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];

		for (i = 0; i < c->nr_raw; i++) {
			const uint8_t *page = c->raw + i * f->fmt.subbuf_size;
			struct vt_page_iter it;
			struct vt_event ev;

			if (vt_page_iter_init(&it, &f->fmt, page, f->fmt.subbuf_size) < 0)
				continue;
			while (vt_page_iter_next(&it, &ev) > 0) {
				if (ev.ts < *first)
					*first = ev.ts;
				if (ev.ts > *last)
					*last = ev.ts;
			}
		}
	}
	if (*first == UINT64_MAX)
		*first = *last = 0;
}

/* Shift a page's clock by @delta: its header and any absolute-timestamp records. */
static void shift_page(const struct vt_page_fmt *fmt, uint8_t *page, uint64_t delta)
{
	uint32_t pos = fmt->data_offset, end, len;

	vt_put_le64(page, vt_get_le64(page) + delta);
	len = vt_get_le32(page + 8) & VT_COMMIT_LEN_MASK;
	end = fmt->data_offset + len;
	if (end > fmt->subbuf_size)
		return;
	while (pos + 4 <= end) {
		uint32_t hdr = vt_get_le32(page + pos);
		uint32_t type = hdr & 31, step;

		if (type >= 1 && type <= VT_TYPE_DATA_MAX) {
			step = 4 + type * 4;
		} else if (type == 0) {
			if (pos + 8 > end)
				return;
			step = 4 + vt_get_le32(page + pos + 4);
		} else if (type == VT_TYPE_PADDING) {
			if (!(hdr >> 5) || pos + 8 > end)
				return;
			step = 4 + vt_get_le32(page + pos + 4);
		} else if (type == VT_TYPE_TIME_EXTEND) {
			step = 8;
		} else {
			uint64_t ts;

			if (pos + 8 > end)
				return;
			ts = ((uint64_t)vt_get_le32(page + pos + 4) << 27) | (hdr >> 5);
			ts = (ts + delta) & ((1ull << 59) - 1);
			vt_put_le32(page + pos, (hdr & 31) | (uint32_t)((ts & ((1u << 27) - 1)) << 5));
			vt_put_le32(page + pos + 4, (uint32_t)(ts >> 27));
			step = 8;
		}
		if (step < 4 || step > end - pos)
			return;
		pos += step;
	}
}

static int mark_missed(const struct vt_page_fmt *fmt, uint8_t *page, long long count)
{
	struct vt_page_info info;
	uint64_t commit;
	uint32_t at;

	if (vt_page_header(fmt, page, fmt->subbuf_size, &info) < 0)
		return -EBADMSG;
	commit = vt_get_le32(page + 8) | VT_COMMIT_MISSED;
	if (count >= 0) {
		at = fmt->data_offset + info.len;
		if (fmt->subbuf_size - at < fmt->commit_size)
			return -ENOSPC;
		if (fmt->commit_size == 8)
			vt_put_le64(page + at, count);
		else
			vt_put_le32(page + at, count);
		commit |= VT_COMMIT_MISSED_STORED;
	}
	vt_put_le32(page + 8, (uint32_t)commit);
	return 0;
}

static uint32_t page_events(const struct vt_page_fmt *fmt, const uint8_t *page)
{
	struct vt_page_iter it;
	struct vt_event ev;
	uint32_t n = 0;

	if (vt_page_iter_init(&it, fmt, page, fmt->subbuf_size) < 0)
		return 0;
	while (vt_page_iter_next(&it, &ev) > 0)
		n++;
	return n;
}

/* Put page @c->next into @c->cur with every requested change applied. */
static void prepare_page(struct fake *f, struct fake_cpu *c)
{
	uint32_t size = f->fmt.subbuf_size;
	uint64_t rep = c->next / c->nr_raw, idx = c->next % c->nr_raw;
	unsigned int i;

	memcpy(c->cur, c->raw + idx * size, size);
	c->cur_len = size;
	c->cur_off = 0;
	c->have_cur = true;
	if (f->o.retime || rep)
		shift_page(&f->fmt, c->cur, f->retime_delta + rep * f->retime_span);
	for (i = 0; i < f->o.nr_missed; i++) {
		const struct missed_mark *m = &f->o.missed[i];

		if (m->cpu != c->cpu || m->page != c->next)
			continue;
		if (mark_missed(&f->fmt, c->cur, m->count) < 0)
			say(f, "cpu%u page %" PRIu64 ": no room to store the lost count", c->cpu, c->next);
		else if (m->count >= 0)
			say(f, "cpu%u page %" PRIu64 ": flagged missed, %lld events lost", c->cpu,
			    c->next, m->count);
		else
			say(f, "cpu%u page %" PRIu64 ": flagged missed, no count", c->cpu, c->next);
	}
	if (f->hold && c->overwritten && c->next == c->held_from &&
	    mark_missed(&f->fmt, c->cur, (long long)c->overwritten) < 0)
		say(f, "cpu%u page %" PRIu64 ": no room to store the overwritten count", c->cpu, c->next);
	if (f->o.all_bad || (c->cpu == 0 && f->o.bad_page >= 0 && c->next == (uint64_t)f->o.bad_page)) {
		uint32_t events = page_events(&f->fmt, c->cur);
		uint32_t commit = (vt_get_le32(c->cur + 8) & ~VT_COMMIT_LEN_MASK) | size;

		vt_put_le32(c->cur + 8, commit);
		if (!f->o.all_bad)
			say(f, "cpu0 page %" PRIu64 ": commit length set to %u, beyond the page (it held %u events)",
		    c->next, size, events);
	}
	if (c->cpu == 0 && f->o.truncate_stream && c->total && c->next + 1 == c->total) {
		c->cur_len = size / 2;
		say(f, "cpu0 page %" PRIu64 ": only %zu of %u bytes will be sent, then the port closes",
		    c->next, c->cur_len, size);
	}
	c->next++;
}

/* --- ports --- */

static int unix_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

/*
 * Connect to a listener that may not exist yet, as QEMU's client mode
 * retries, for up to @wait_ms.
 */
static int unix_connect(const char *path, int wait_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long deadline = now_ns() + wait_ms * 1000000ll;
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		ret = -errno;
		close(fd);
		if ((ret != -ENOENT && ret != -ECONNREFUSED) || now_ns() >= deadline || got_signal)
			return ret;
		usleep(20 * 1000);
	}
}

static int fifo_open(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) < 0) {
		if (mkfifo(path, 0600) < 0 && errno != EEXIST)
			return -errno;
	} else if (!S_ISFIFO(st.st_mode)) {
		return -ENOTSUP;
	}
	/* QEMU opens both ends O_RDWR: an absent peer neither blocks nor gives EOF. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int port_path(const struct fake *f, char *buf, size_t size, const char *name,
		     const char *suffix)
{
	if ((size_t)snprintf(buf, size, "%s/%s%s", f->o.dir, name, suffix) >= size)
		return -ENAMETOOLONG;
	return 0;
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int open_ports(struct fake *f)
{
	char path[PATH_MAX], name[PATH_MAX];
	unsigned int cpu;
	int ret, fd;

	f->ctl_rfd = f->ctl_wfd = f->ctl_listen_fd = -1;
	switch (f->o.mode) {
	case MODE_FIFO:
		if ((ret = port_path(f, path, sizeof(path), f->o.ctl_name, ".in")) < 0 ||
		    (ret = fifo_open(path)) < 0)
			goto err;
		f->ctl_rfd = ret;
		if ((ret = port_path(f, path, sizeof(path), f->o.ctl_name, ".out")) < 0 ||
		    (ret = fifo_open(path)) < 0)
			goto err;
		f->ctl_wfd = ret;
		break;
	case MODE_CONNECT:
		if ((ret = port_path(f, path, sizeof(path), f->o.ctl_name, "")) < 0 ||
		    (ret = unix_connect(path, CONNECT_WAIT_MS)) < 0)
			goto err;
		f->ctl_rfd = f->ctl_wfd = ret;
		break;
	case MODE_LISTEN:
		if ((ret = port_path(f, path, sizeof(path), f->o.ctl_name, "")) < 0 ||
		    (ret = unix_listen(path)) < 0)
			goto err;
		f->ctl_listen_fd = ret;
		break;
	default:
		return -EINVAL;
	}
	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];

		snprintf(name, sizeof(name), "%s%u", f->o.prefix, cpu);
		if (cpu && f->o.port_gap_ms)
			usleep(f->o.port_gap_ms * 1000u);
		switch (f->o.mode) {
		case MODE_FIFO:
			if ((ret = port_path(f, path, sizeof(path), name, ".in")) < 0 ||
			    (ret = fifo_open(path)) < 0)
				goto err;
			close(ret);	/* host->guest on a data port carries nothing */
			if ((ret = port_path(f, path, sizeof(path), name, ".out")) < 0 ||
			    (fd = fifo_open(path)) < 0) {
				ret = ret < 0 ? ret : fd;
				goto err;
			}
			c->fd = fd;
			set_nonblock(fd);
			break;
		case MODE_CONNECT:
			/* A collector may listen on data ports only after HELLO. */
			break;
		default:
			if ((ret = port_path(f, path, sizeof(path), name, "")) < 0 ||
			    (fd = unix_listen(path)) < 0) {
				ret = ret < 0 ? ret : fd;
				goto err;
			}
			c->listen_fd = fd;
			break;
		}
	}
	say(f, "ports ready in %s (%s)", f->o.dir,
	    f->o.mode == MODE_FIFO ? "fifo" : f->o.mode == MODE_CONNECT ? "connect" : "listen");
	return 0;
err:
	say(f, "cannot open port %s: %s", path, strerror(-ret));
	return ret;
}

/* --- control messages --- */

static uint32_t next_seq(struct fake *f)
{
	if (++f->seq == 0)
		f->seq = 1;
	return f->seq;
}

/* --meta-rate: queue @len bytes behind the trickle. */
static int trickle_add(struct fake *f, const void *buf, size_t len)
{
	struct trickle *t = &f->slow;

	if (t->off == t->len) {
		t->off = t->len = t->meta_end = 0;
		t->t0 = now_ns();
	}
	if (vt_grow((void **)&t->buf, &t->cap, t->len + len, 1) < 0)
		return -ENOMEM;
	memcpy(t->buf + t->len, buf, len);
	t->len += len;
	return 0;
}

static int send_raw(struct fake *f, const void *buf, size_t len)
{
	int ret;

	if (f->ctl_wfd < 0)
		return -ENOTCONN;
	/* Nothing overtakes a trickling META: frames stay in order. */
	if (f->slow.adding || f->slow.off < f->slow.len)
		return trickle_add(f, buf, len);
	ret = vt_proto_write_all(f->ctl_wfd, buf, len, WRITE_TIMEOUT_MS);
	if (ret < 0)
		say(f, "control port: write failed: %s", strerror(-ret));
	return ret;
}

static int send_frame(struct fake *f, int len)
{
	if (len < 0) {
		say(f, "cannot encode a frame: %s", strerror(-len));
		return len;
	}
	return send_raw(f, f->frame, len);
}

static int reply_ok(struct fake *f, uint32_t ref)
{
	return send_frame(f, vt_proto_enc_ack(f->frame, sizeof(f->frame), VT_PROTO_OK,
					      next_seq(f), ref));
}

static int reply_err(struct fake *f, uint32_t ref, int err, const char *text)
{
	struct vt_proto_error e = { .ref_seq = ref, .err = err, .text = text };

	say(f, "answering seq %u with ERROR %s: %s", ref, strerror(err), text);
	return send_frame(f, vt_proto_enc_error(f->frame, sizeof(f->frame), next_seq(f), &e));
}

/* A legal text string full of things that must never become a format or a path. */
static void evil_text(char *buf, size_t size)
{
	static const char piece[] = "%n%s%x ../../../etc/passwd /tmp/x \"q\\ \t\x01\x1b[31m ";
	size_t off = 0;

	while (off + sizeof(piece) < size) {
		memcpy(buf + off, piece, sizeof(piece) - 1);
		off += sizeof(piece) - 1;
	}
	buf[off] = '\0';
}

/* "vt-fake-agent VERSION (Linux RELEASE)", the release from the fixture's uname, as the agent says. */
static const char *fake_software(const struct fake *f, char *buf, size_t size)
{
	char path[PATH_MAX], line[256], sys[64], rel[128];
	FILE *in;

	snprintf(buf, size, "vt-fake-agent %s", PACKAGE_VERSION);
	snprintf(path, sizeof(path), "%s/uname", f->o.fixture);
	in = fopen(path, "r");
	if (!in)
		return buf;
	if (fgets(line, sizeof(line), in) && sscanf(line, "%63s %127s", sys, rel) == 2)
		snprintf(buf, size, "vt-fake-agent %s (%s %s)", PACKAGE_VERSION, sys, rel);
	fclose(in);
	return buf;
}

static int send_hello_reply(struct fake *f, const struct vt_proto_msg *msg)
{
	static char software[VT_PROTO_MAX_TEXT];
	static const char evil_clock[] = "../%n/tsc";
	struct vt_proto_hello h, r = { 0 };
	uint16_t rev;
	uint8_t *p;
	int ret, len;

	ret = vt_proto_dec_hello(msg, &h);
	if (ret < 0)
		return reply_err(f, msg->seq, -ret, "malformed HELLO");
	ret = vt_proto_hello_negotiate(&h, &rev);
	if (ret < 0)
		return reply_err(f, msg->seq, -ret, "no common protocol revision");
	r.rev_min = r.rev_max = rev;
	r.nr_cpus = f->o.cpus;
	r.subbuf_size = f->o.wrong_subbuf ? 2 * f->fmt.subbuf_size : f->fmt.subbuf_size;
	r.caps = VT_PROTO_CAP_X86_TSC | VT_PROTO_CAP_SYNC_TSC | VT_PROTO_CAP_META |
		 VT_PROTO_CAP_INSTANCES;
	if (f->o.open_meta || f->o.endless_meta)
		r.caps |= VT_PROTO_CAP_META_FLAGS | VT_PROTO_CAP_META_OPEN;
	if (f->o.kallsyms_key)
		r.caps |= VT_PROTO_CAP_META_FLAGS | VT_PROTO_CAP_KALLSYMS_KEY;
	/* As trace-agent: the setup's bundle without kallsyms, the whole one asked for after START. */
	if (f->o.withhold_meta)
		r.caps |= VT_PROTO_CAP_META_FLAGS;
	if (f->o.lastboot_info)
		r.caps |= VT_PROTO_CAP_LASTBOOT;
	if (!f->o.no_hold)
		r.caps |= VT_PROTO_CAP_HOLD;
	if (f->o.watch)
		r.caps |= VT_PROTO_CAP_WATCH;
	r.clock = f->o.evil == EVIL_CLOCK ? "XXXXXXXXX" : f->clock;
	if (f->o.evil == EVIL_TEXT) {
		evil_text(software, sizeof(software));
		r.software = software;
	} else {
		r.software = fake_software(f, software, sizeof(software));
	}
	len = vt_proto_enc_hello(f->frame, sizeof(f->frame), VT_PROTO_HELLO_REPLY, next_seq(f), &r);
	if (len > 0 && f->o.evil == EVIL_CLOCK) {
		/* The encoder refuses an illegal clock: put it in behind its back. */
		p = memmem(f->frame, len, "XXXXXXXXX", sizeof(evil_clock) - 1);
		if (p)
			memcpy(p, evil_clock, sizeof(evil_clock) - 1);
		say(f, "HELLO_REPLY carries the illegal clock name \"%s\"", evil_clock);
	}
	if (r.subbuf_size != f->fmt.subbuf_size)
		say(f, "HELLO_REPLY says %u-byte sub-buffers; the pages are %u bytes",
		    r.subbuf_size, f->fmt.subbuf_size);
	if (f->o.evil == EVIL_TEXT)
		say(f, "HELLO_REPLY software is %zu bytes of format and path characters",
		    strlen(software));
	f->hello_done = true;
	return send_frame(f, len);
}

static bool fixture_has(const struct fake *f, const char *system, const char *event)
{
	const struct vt_meta_system *s;
	uint32_t i, j;

	for (i = 0; i <= f->meta.nr_systems; i++) {
		s = i < f->meta.nr_systems ? &f->meta.systems[i] : &f->meta.ftrace;
		if (!s->name || fnmatch(system, s->name, 0))
			continue;
		for (j = 0; j < s->nr_events; j++)
			if (!fnmatch(event, s->events[j].name, 0))
				return true;
	}
	return false;
}

static int handle_events(struct fake *f, const struct vt_proto_msg *msg)
{
	static struct vt_proto_event ev[VT_PROTO_MAX_EVENTS];
	static char text[VT_PROTO_MAX_TEXT];
	uint32_t flags;
	char buf[600];
	int n, i;

	n = vt_proto_dec_events(msg, &flags, ev, VT_PROTO_MAX_EVENTS);
	if (n < 0)
		return reply_err(f, msg->seq, -n, "malformed EVENTS");
	if (f->o.evil == EVIL_ERROR) {
		evil_text(text, sizeof(text));
		return reply_err(f, msg->seq, EINVAL, text);
	}
	for (i = 0; i < n; i++) {
		if (!fixture_has(f, ev[i].system, ev[i].event)) {
			snprintf(buf, sizeof(buf), "no event matches %s:%s", ev[i].system, ev[i].event);
			return reply_err(f, msg->seq, ENOENT, buf);
		}
		say(f, "enabled %s:%s%s%s", ev[i].system, ev[i].event, *ev[i].filter ? " if " : "",
		    ev[i].filter);
	}
	return reply_ok(f, msg->seq);
}

static bool clock_offered(const struct fake *f, const char *clock)
{
	const char *list = f->meta.trace_clock.data ? f->meta.trace_clock.data : "";
	size_t len = strlen(clock);
	const char *p;

	for (p = list; (p = strstr(p, clock)); p += len) {
		bool start = p == list || p[-1] == ' ' || p[-1] == '[';
		bool end = !p[len] || p[len] == ' ' || p[len] == ']' || p[len] == '\n';

		if (start && end)
			return true;
	}
	return !strcmp(clock, f->clock);
}

static int handle_config(struct fake *f, const struct vt_proto_msg *msg)
{
	struct vt_proto_buffer_size bs;
	const char *s;
	char buf[400];
	int ret;

	if (f->running || f->stopping)
		return reply_err(f, msg->seq, EBUSY, "stop before changing the configuration");
	switch (msg->type) {
	case VT_PROTO_TRACER:
		ret = vt_proto_dec_string(msg, &s);
		if (ret < 0)
			return reply_err(f, msg->seq, -ret, "malformed TRACER");
		if (strcmp(s, "nop") && !(strcmp(s, "mmiotrace") == 0 &&
					  fixture_has(f, "ftrace", "mmiotrace_rw"))) {
			snprintf(buf, sizeof(buf), "tracer %s is not available", s);
			return reply_err(f, msg->seq, ENOENT, buf);
		}
		say(f, "tracer %s", s);
		break;
	case VT_PROTO_CLOCK:
		ret = vt_proto_dec_string(msg, &s);
		if (ret < 0)
			return reply_err(f, msg->seq, -ret, "malformed CLOCK");
		if (*s && !clock_offered(f, s)) {
			snprintf(buf, sizeof(buf), "trace clock %s is not offered by this kernel", s);
			return reply_err(f, msg->seq, ENOENT, buf);
		}
		say(f, "clock %s", *s ? s : f->clock);
		break;
	case VT_PROTO_BUFFER_SIZE:
		ret = vt_proto_dec_buffer_size(msg, &bs);
		if (ret < 0)
			return reply_err(f, msg->seq, -ret, "malformed BUFFER_SIZE");
		say(f, "buffer %u KiB (sub-buffer %u KiB)", bs.size_kb, bs.subbuf_kb);
		break;
	case VT_PROTO_INSTANCE:
		ret = vt_proto_dec_instance(msg, &s);
		if (ret < 0)
			return reply_err(f, msg->seq, -ret, "malformed INSTANCE");
		say(f, "instance %s", s ? s : "(top level)");
		break;
	}
	return reply_ok(f, msg->seq);
}

/* Append a record with an unsafe system and event name to a bundle. */
static int evil_meta(void **blob, size_t *len)
{
	static const char rec[] = "../../vt-evil\0a/b%n\0name: x\nID: 9999\nformat:\n";
	size_t rlen = sizeof(rec) - 1;
	uint8_t *b;

	b = realloc(*blob, *len + 8 + rlen);
	if (!b)
		return -ENOMEM;
	/* The bundle ends with the END record (tag 0, len 0): insert before it. */
	*len -= 8;
	vt_put_le32(b + *len, 3);	/* an event format record */
	vt_put_le32(b + *len + 4, rlen);
	memcpy(b + *len + 8, rec, rlen);
	*len += 8 + rlen;
	vt_put_le32(b + *len, 0);
	vt_put_le32(b + *len + 4, 0);
	*len += 8;
	*blob = b;
	return 0;
}

/*
 * --wrong-subbuf: the metadata's header_page announces the size HELLO_REPLY
 * claims (twice the real one), as an agent that read the geometry from
 * another buffer than the one it records would: the data field grows.
 */
static int wrong_subbuf_meta(struct fake *f, void **blob, size_t *len)
{
	struct vt_blob real = f->meta.header_page;
	uint32_t real_size = f->meta.subbuf_size;
	char text[1024];
	const char *at;
	int n, ret;

	at = strstr(real.data, "char data;");
	at = at ? strstr(at, "size:") : NULL;
	if (!at)
		return -EBADMSG;
	n = snprintf(text, sizeof(text), "%.*ssize:%u;%s", (int)(at - real.data), real.data,
		     2 * f->fmt.subbuf_size - f->fmt.data_offset, strchr(at, ';') + 1);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -ENAMETOOLONG;
	f->meta.header_page = (struct vt_blob){ .data = text, .len = n };
	f->meta.subbuf_size = 2 * f->fmt.subbuf_size;
	ret = vt_meta_encode(&f->meta, blob, len);
	f->meta.header_page = real;
	f->meta.subbuf_size = real_size;
	return ret;
}

/*
 * --endless-meta: asked for an open bundle, open chunks (of the bundle's
 * first bytes, again and again) one past @max_total, never the last.
 */
static int send_endless_meta(struct fake *f, uint64_t max_total)
{
	static uint8_t data[VT_PROTO_META_CHUNK_MAX];
	struct vt_proto_meta_chunk c = { .total = VT_PROTO_META_OPEN, .data = data,
					 .len = sizeof(data) };
	int ret = 0;

	say(f, "META: open chunks that never end (host limit %" PRIu64 ")", max_total);
	for (c.offset = 0; ret >= 0 && c.offset <= max_total; c.offset += c.len)
		ret = send_frame(f, vt_proto_enc_meta(f->frame, sizeof(f->frame), next_seq(f), &c));
	return ret;
}

/* @open: the host takes open chunks (META_REQ_OPEN), and --open-meta sends them. */
static int send_meta(struct fake *f, uint32_t ref, uint64_t max_total, bool open)
{
	uint64_t off = 0, total;
	char buf[200];
	size_t len;
	void *blob;
	int ret;

	if (f->o.wrong_subbuf)
		ret = wrong_subbuf_meta(f, &blob, &len);
	else
		ret = vt_meta_encode(&f->meta, &blob, &len);
	if (ret < 0)
		return reply_err(f, ref, -ret, "cannot encode the metadata");
	if (f->o.evil == EVIL_META) {
		ret = evil_meta(&blob, &len);
		if (ret < 0)
			goto out;
		say(f, "META bundle carries the event \"../../vt-evil\":\"a/b%%n\"");
	}
	total = f->o.huge_meta ? HUGE_META_TOTAL : len;
	if (total > max_total && !f->o.huge_meta) {
		snprintf(buf, sizeof(buf), "metadata is %zu bytes, more than the %" PRIu64 " asked for",
			 len, max_total);
		ret = reply_err(f, ref, EFBIG, buf);
		goto out;
	}
	if (f->o.huge_meta)
		say(f, "META announces a %" PRIu64 "-byte bundle (host limit %" PRIu64 ")",
		    total, max_total);
	f->slow.adding = f->o.meta_rate != 0;
	do {
		struct vt_proto_meta_chunk c = { .total = len, .offset = off,
						 .data = (uint8_t *)blob + off };
		int flen;

		c.len = len - off < VT_PROTO_META_CHUNK_MAX ? len - off : VT_PROTO_META_CHUNK_MAX;
		/* Open: small chunks, so that even a small bundle comes in many. */
		if (open && c.len > 4096)
			c.len = 4096;
		if (open && off + c.len < len)
			c.total = VT_PROTO_META_OPEN;
		flen = vt_proto_enc_meta(f->frame, sizeof(f->frame), next_seq(f), &c);
		/* The encoder refuses a total above the protocol's limit: patch it in. */
		if (flen > 0 && total != len)
			vt_put_le64(f->frame + VT_PROTO_HDR_SIZE, total);
		ret = send_frame(f, flen);
		off += c.len;
	} while (ret >= 0 && off < len);
	if (f->slow.adding) {
		f->slow.adding = false;
		f->slow.meta_end = f->slow.len;
		if (ret >= 0)
			say(f, "META of %zu bytes trickles out at %" PRIu64 " bytes/s (%zu bytes queued)",
			    len, f->o.meta_rate, f->slow.len - f->slow.off);
	} else if (ret >= 0) {
		say(f, "META sent: %zu bytes in %" PRIu64 " chunks%s", len,
		    open ? (uint64_t)(len + 4095) / 4096 :
			   (uint64_t)(len + VT_PROTO_META_CHUNK_MAX - 1) / VT_PROTO_META_CHUNK_MAX,
		    open ? ", all open but the last" : "");
		timelog(f, "meta");
	}
out:
	free(blob);
	return ret;
}

static void send_garbage(struct fake *f)
{
	uint8_t junk[GARBAGE_LEN];
	size_t i;

	/* Nothing in it can be a frame start ('V') or a legacy line ('0'/'1' + '\n'). */
	for (i = 0; i < sizeof(junk); i++) {
		junk[i] = (uint8_t)(i * 37 + 11);
		if (junk[i] == 'V' || junk[i] == '\n')
			junk[i] = 'g';
	}
	memcpy(junk, "garbage %n%s ../../", 19);
	if (send_raw(f, junk, sizeof(junk)) == 0)
		say(f, "sent %zu bytes of garbage on the control port", sizeof(junk));
}

/* --error-flood: that many unsolicited ERROR frames (ref_seq 0), as a guest gone mad. */
static void send_error_flood(struct fake *f)
{
	struct vt_proto_error e = { .ref_seq = 0, .err = EIO, .text = "flooding error" };
	uint64_t i;

	for (i = 0; i < f->o.error_flood; i++)
		if (send_frame(f, vt_proto_enc_error(f->frame, sizeof(f->frame), next_seq(f), &e)) < 0)
			break;
	say(f, "sent %" PRIu64 " unsolicited ERROR frames", i);
}

/* --notice-flood: that many NOTICE frames, each with a control character and an escape in it. */
static void send_notice_flood(struct fake *f)
{
	char text[64];
	uint64_t i;

	for (i = 0; i < f->o.notice_flood; i++) {
		snprintf(text, sizeof(text), "warning %" PRIu64 " \x1b[31mred\ttab", i);
		if (send_frame(f, vt_proto_enc_string(f->frame, sizeof(f->frame), VT_PROTO_NOTICE,
						      next_seq(f), text)) < 0)
			break;
	}
	say(f, "sent %" PRIu64 " NOTICE frames", i);
}

/*
 * --triggers N: N TRIGGERs back to back, well-formed, for the event WATCH
 * named ("fake:unwatched" without one), each later in guest time: a guest
 * whose filter matches far more often than the host takes.
 */
static void send_triggers(struct fake *f)
{
	struct vt_proto_trigger t = { 0, 0, f->watched[0] ? f->watched : "fake:unwatched" };
	uint64_t i;

	for (i = 0; i < f->o.triggers; i++) {
		t.timestamp = guest_tsc(f);
		if (send_frame(f, vt_proto_enc_trigger(f->frame, sizeof(f->frame), next_seq(f), &t)) < 0)
			break;
	}
	say(f, "sent %" PRIu64 " TRIGGER frames for %s", i, t.event);
}

/* WATCH: taken (--triggers), its event remembered for the TRIGGERs. */
static void handle_watch(struct fake *f, const struct vt_proto_msg *msg)
{
	struct vt_proto_watch w;

	if (!f->o.watch) {
		reply_err(f, msg->seq, EPROTO, "message type not for the agent");
		return;
	}
	if (vt_proto_dec_watch(msg, &w) < 0) {
		reply_err(f, msg->seq, EBADMSG, "malformed WATCH");
		return;
	}
	snprintf(f->watched, sizeof(f->watched), "%s:%s", w.system, w.event);
	say(f, "WATCH %s if '%s' every %u ms", f->watched, w.filter, w.interval_ms);
	reply_ok(f, msg->seq);
}

static void send_oversize(struct fake *f)
{
	uint8_t frame[VT_PROTO_HDR_SIZE + 64];
	int len;

	len = vt_proto_enc_ack(frame, sizeof(frame), VT_PROTO_OK, next_seq(f), 0);
	if (len < 0)
		return;
	/* A header announcing more than a frame may hold, then some of the "payload". */
	vt_put_le32(frame + 12, VT_PROTO_MAX_PAYLOAD + 4096);
	memset(frame + VT_PROTO_HDR_SIZE, 'o', sizeof(frame) - VT_PROTO_HDR_SIZE);
	if (send_raw(f, frame, sizeof(frame)) == 0)
		say(f, "sent a header announcing a %u-byte payload", VT_PROTO_MAX_PAYLOAD + 4096);
}

static int send_stats(struct fake *f)
{
	struct vt_proto_stats all = { .cpu = VT_PROTO_CPU_ALL, .text = "" };
	static char evil[VT_PROTO_MAX_TEXT], text[VT_PROTO_MAX_TEXT], alltext[VT_PROTO_MAX_TEXT];
	unsigned int cpu;
	int ret;

	if (f->o.meta_cpu_us) {
		snprintf(alltext, sizeof(alltext), "meta_cpu_us: %s\n", f->o.meta_cpu_us);
		all.text = alltext;
	}

	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];
		struct vt_proto_stats st = {
			.cpu = cpu,
			.pages = c->pages_sent,
			.bytes = c->bytes_sent,
			.text = c->stats,
		};

		if (f->o.lie_bytes && cpu == 0) {
			st.pages++;
			st.bytes += f->fmt.subbuf_size;
			say(f, "cpu0 STATS claims %" PRIu64 " bytes, %u more than sent", st.bytes,
			    f->fmt.subbuf_size);
		}
		if (f->o.evil == EVIL_TEXT) {
			evil_text(evil, 600);
			snprintf(text, sizeof(text), "%s%s", c->stats, evil);
			st.text = text;
		}
		ret = send_frame(f, vt_proto_enc_stats(f->frame, sizeof(f->frame), next_seq(f), &st));
		if (ret < 0)
			return ret;
		all.pages += st.pages;
		all.bytes += st.bytes;
		say(f, "STATS cpu%u pages %" PRIu64 " bytes %" PRIu64, cpu, st.pages, st.bytes);
	}
	all.flags = VT_PROTO_STATS_LAST;
	say(f, "STATS all pages %" PRIu64 " bytes %" PRIu64, all.pages, all.bytes);
	return send_frame(f, vt_proto_enc_stats(f->frame, sizeof(f->frame), next_seq(f), &all));
}

static void start(struct fake *f, const struct vt_proto_msg *msg)
{
	uint64_t first, last;
	unsigned int cpu;

	if (f->running || f->stopping) {
		if (!msg->legacy)
			reply_err(f, msg->seq, EBUSY, "already streaming");
		return;
	}
	f->got_stop = false;
	fixture_span(f, &first, &last);
	f->retime_span = last - first + 1;
	f->retime_delta = f->o.retime ? guest_tsc(f) - first : 0;
	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];

		c->next = 0;
		c->done = c->closed;
		c->have_cur = false;
		c->pages_sent = c->bytes_sent = c->events_sent = 0;
	}
	f->running = true;
	f->stopped_sent = false;
	f->start_ns = now_ns();
	if (f->o.retime)
		say(f, "pages retimed: fixture ts %" PRIu64 " is guest TSC %" PRIu64
		    " (repetitions %" PRIu64 " ticks apart)", first, first + f->retime_delta,
		    f->retime_span);
	say(f, "START: %s %u CPUs, %s", f->hold ? "holding" : "streaming", f->o.cpus,
	    f->o.repeat ? "a fixed number of pages" : "until STOP");
	timelog(f, "start");
	if (!msg->legacy)
		reply_ok(f, msg->seq);
	if (f->o.garbage)
		send_garbage(f);
	if (f->o.oversize)
		send_oversize(f);
	if (f->o.error_flood)
		send_error_flood(f);
	if (f->o.notice_flood)
		send_notice_flood(f);
	if (f->o.triggers)
		send_triggers(f);
}

/*
 * A held STOP: each CPU made all its pages (--repeat's, one pass with
 * --repeat 0) into a ring of --ring-pages; the last of them go out.
 */
static void hold_drain(struct fake *f)
{
	unsigned int cpu;
	uint64_t i;

	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];
		uint64_t made = c->total ? c->total : c->nr_raw;
		char *stats;

		c->total = made;
		c->held_from = made > f->o.ring_pages ? made - f->o.ring_pages : 0;
		c->next = c->held_from;
		c->overwritten = 0;
		for (i = 0; i < c->held_from; i++)
			c->overwritten += page_events(&f->fmt, c->raw + (i % c->nr_raw) *
						      f->fmt.subbuf_size);
		stats = set_overrun(c->stats, c->overwritten);
		if (stats) {
			free(c->stats);
			c->stats = stats;
		}
		say(f, "cpu%u: held %" PRIu64 " of %" PRIu64 " pages, %" PRIu64 " events overwritten",
		    cpu, made - c->held_from, made, c->overwritten);
	}
}

static void stop(struct fake *f, const struct vt_proto_msg *msg)
{
	if (!f->running) {
		if (!msg->legacy)
			reply_err(f, msg->seq, EALREADY, "not streaming");
		return;
	}
	f->running = false;
	f->stopping = true;
	if (f->hold)
		hold_drain(f);
	f->stop_seq = msg->seq;
	f->stop_legacy = msg->legacy;
	f->got_stop = true;
	say(f, "STOP: draining");
	timelog(f, "stop");
}

static bool all_done(const struct fake *f)
{
	unsigned int cpu;

	for (cpu = 0; cpu < f->o.cpus; cpu++)
		if (!f->cpus[cpu].done)
			return false;
	return true;
}

/* Called once every CPU has sent what it will send after a STOP. */
static void finish_stop(struct fake *f)
{
	f->stopping = false;
	if (f->o.stall_stop) {
		if (!f->stopped_sent)
			say(f, "drained; not answering STOP (--stall-stop)");
		f->stopped_sent = true;
		return;
	}
	while (f->stats_held) {		/* the STATS_REQs before the STOP first */
		f->stats_held--;
		send_stats(f);
	}
	send_stats(f);
	if (!f->stop_legacy)
		send_frame(f, vt_proto_enc_ack(f->frame, sizeof(f->frame), VT_PROTO_STOPPED,
					       next_seq(f), f->stop_seq));
	f->stopped_sent = true;
	say(f, "STOPPED sent");
	timelog(f, "stopped");
}

static void sync_reply(struct fake *f, struct vt_proto_sync *s)
{
	static uint64_t x = 0x9e3779b97f4a7c15ull;

	s->tsc = guest_tsc(f);
	if (f->o.absurd_probes) {
		/* xorshift64: anything below 2^62, in no order (fits the estimator's range). */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s->tsc = x >> 2;
	}
	s->ran_on = s->cpu;
	send_frame(f, vt_proto_enc_sync(f->frame, sizeof(f->frame), VT_PROTO_SYNC_REPLY,
					next_seq(f), s));
}

/* How late SYNC_PROBE is answered now, -1: at once (--probe-delay, --probe-delay-after-stop). */
static long long probe_delay(const struct fake *f)
{
	if (f->o.probe_delay_ms >= 0)
		return f->o.probe_delay_ms;
	return f->got_stop ? f->o.stop_probe_delay_ms : -1;
}

/* --probe-delay: hold the reply until the delay has passed (the main loop sends it). */
static void delay_probe(struct fake *f, const struct vt_proto_sync *s)
{
	if (f->nr_delayed >= FAKE_MAX_DELAYED) {
		say(f, "sync: more than %d probes waiting, cpu%u probe %u dropped", FAKE_MAX_DELAYED,
		    s->cpu, s->probe);
		return;
	}
	f->delayed[f->nr_delayed].s = *s;
	f->delayed[f->nr_delayed].due = now_ns() + probe_delay(f) * 1000000ll;
	f->nr_delayed++;
}

/* Send the delayed replies that are due; the poll timeout until the next one (-1: none). */
static int delayed_due(struct fake *f)
{
	long long now = now_ns(), next = -1;
	unsigned int i = 0;

	while (i < f->nr_delayed) {
		struct delayed_probe *d = &f->delayed[i];

		if (d->due <= now) {
			struct vt_proto_sync s = d->s;

			/* In arrival order: the host matches replies by CPU and probe number anyway. */
			memmove(d, d + 1, (f->nr_delayed - i - 1) * sizeof(*d));
			f->nr_delayed--;
			sync_reply(f, &s);
			f->late_answered++;
			if (s.probe == 0 || !(s.probe % 50))
				say(f, "sync: cpu%u probe %u answered late", s.cpu, s.probe);
			continue;
		}
		if (next < 0 || d->due < next)
			next = d->due;
		i++;
	}
	return next < 0 ? -1 : (int)((next - now) / 1000000 + 1);
}

/* --meta-rate: write what the rate allows now; the poll timeout until the next byte (-1: none). */
static int trickle_out(struct fake *f)
{
	struct trickle *t = &f->slow;
	long long el = now_ns() - t->t0;
	uint64_t allowed;
	size_t n;
	int ret;

	if (t->off >= t->len || f->ctl_wfd < 0)
		return -1;
	allowed = (uint64_t)((double)el * f->o.meta_rate / 1e9) + 1;
	if (allowed > t->off) {
		n = allowed - t->off < t->len - t->off ? allowed - t->off : t->len - t->off;
		ret = vt_proto_write_all(f->ctl_wfd, t->buf + t->off, n, WRITE_TIMEOUT_MS);
		if (ret < 0) {
			say(f, "control port: trickled write failed: %s", strerror(-ret));
			f->quit = true;
			return -1;
		}
		if (t->off < t->meta_end && t->off + n >= t->meta_end) {
			say(f, "META sent: its last byte went out (--meta-rate)");
			timelog(f, "meta");
		}
		t->off += n;
		if (t->off >= t->len)
			return -1;
	}
	/* The next byte is due at t0 + off / rate. */
	el = (long long)((double)t->off * 1e9 / f->o.meta_rate) - (now_ns() - t->t0);
	return el <= 0 ? 0 : (int)(el / 1000000 + 1);
}

/* --hangup-in-setup: milliseconds until the hang-up (0: due), or -1 when none is pending. */
static int hangup_ms(const struct fake *f)
{
	long long left;

	if (!f->hangup_at || f->hung_up)
		return -1;
	left = f->hangup_at - now_ns();
	return left <= 0 ? 0 : (int)(left / 1000000 + 1);
}

static void handle(struct fake *f, const struct vt_proto_msg *msg);

/*
 * Answer each probe of a burst at once, waiting for the next in poll(), as
 * issue 13 wants the agent to: a busy loop here made sixteen fakes whose
 * bursts overlap fight the collector for the CPUs.
 */
static void sync_burst(struct fake *f, uint32_t cpu)
{
	long long idle_since = now_ns();
	unsigned int probes = 0;
	uint8_t buf[4096];
	int fl;

	fl = fcntl(f->ctl_rfd, F_GETFL);
	fcntl(f->ctl_rfd, F_SETFL, fl | O_NONBLOCK);
	for (;;) {
		struct vt_proto_msg msg;
		struct vt_proto_sync s;
		ssize_t n;
		int r;

		while ((r = vt_proto_parser_next(f->parser, &msg)) != 0) {
			if (r < 0)
				continue;
			if (msg.type == VT_PROTO_SYNC_PROBE && vt_proto_dec_sync(&msg, &s) == 0) {
				if (f->o.probe_shrink) {
					/* 2 ms less each probe, from 64 ms: far above any jitter. */
					long long d = 64000000ll - 2000000ll * s.probe;
					struct timespec ts = { d / 1000000000, d % 1000000000 };

					if (d > 0)
						nanosleep(&ts, NULL);
				}
				sync_reply(f, &s);
				probes++;
				idle_since = now_ns();
				continue;
			}
			if (msg.type == VT_PROTO_SYNC_END) {
				reply_ok(f, msg.seq);
				timelog(f, "sync_end");
				goto out;
			}
			say(f, "sync: %s during a burst ends it", vt_proto_type_name(msg.type));
			handle(f, &msg);
			goto out;
		}
		n = read(f->ctl_rfd, buf, sizeof(buf));
		if (n > 0) {
			vt_proto_parser_feed(f->parser, buf, n);
			continue;
		}
		if (n == 0) {
			f->quit = true;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && now_ns() - idle_since < SYNC_IDLE_NS && !got_signal) {
			struct pollfd p = { .fd = f->ctl_rfd, .events = POLLIN };

			poll(&p, 1, (int)((SYNC_IDLE_NS - (now_ns() - idle_since)) / 1000000) + 1);
			continue;
		}
		say(f, "sync: no probe for 5 s, burst abandoned");
		break;
	}
out:
	fcntl(f->ctl_rfd, F_SETFL, fl);
	say(f, "sync burst on cpu%u: %u probes answered (guest TSC = host TSC %+" PRId64 ")",
	    cpu, probes, f->o.tsc_offset);
}

/*
 * The fixture as a last boot's trace (vt_lastboot.h): @instance, the
 * --last-boot-info text, the fixture's metadata and every CPU's pages.
 */
static int lastboot_blob(struct fake *f, const char *instance, void **blob, size_t *len)
{
	static struct vt_lastboot lb;
	void *meta;
	size_t mlen;
	unsigned int cpu;
	int ret;

	ret = vt_meta_encode(&f->meta, &meta, &mlen);
	if (ret < 0)
		return ret;
	memset(&lb, 0, sizeof(lb));
	lb.name = f->o.lastboot_name ? f->o.lastboot_name : instance;
	lb.name_len = strlen(lb.name);
	lb.info = f->o.lastboot_info;
	lb.info_len = strlen(lb.info);
	lb.meta = meta;
	lb.meta_len = mlen;
	lb.nr_cpus = f->o.cpus < VT_LASTBOOT_MAX_CPUS ? f->o.cpus : VT_LASTBOOT_MAX_CPUS;
	for (cpu = 0; cpu < lb.nr_cpus; cpu++) {
		lb.cpus[cpu].cpu = cpu;
		lb.cpus[cpu].data = f->cpus[cpu].raw;
		lb.cpus[cpu].len = (uint64_t)f->cpus[cpu].nr_raw * f->fmt.subbuf_size;
	}
	ret = vt_lastboot_encode(&lb, blob, len);
	free(meta);
	return ret;
}

/* LASTBOOT_REQ: the bundle in META chunks, or ERROR without --last-boot-info. */
static void handle_lastboot(struct fake *f, const struct vt_proto_msg *msg)
{
	const char *name;
	size_t len, off = 0;
	void *blob;
	int ret = 0;

	if (vt_proto_dec_string(msg, &name) < 0) {
		reply_err(f, msg->seq, EBADMSG, "malformed LASTBOOT_REQ");
		return;
	}
	if (!f->o.lastboot_info || lastboot_blob(f, name, &blob, &len) < 0) {
		reply_err(f, msg->seq, ENOENT, "no boot-mapped instance");
		return;
	}
	do {
		struct vt_proto_meta_chunk c = { .total = len, .offset = off,
						 .data = (uint8_t *)blob + off };

		c.len = len - off < VT_PROTO_META_CHUNK_MAX ? len - off : VT_PROTO_META_CHUNK_MAX;
		ret = send_frame(f, vt_proto_enc_meta(f->frame, sizeof(f->frame), next_seq(f), &c));
		off += c.len;
	} while (ret >= 0 && off < len);
	say(f, "LASTBOOT_REQ %s: sent the last boot's trace of instance %s, %zu bytes", name,
	    f->o.lastboot_name ? f->o.lastboot_name : name, len);
	free(blob);
}

static void handle(struct fake *f, const struct vt_proto_msg *msg)
{
	struct vt_proto_sync sync;
	struct vt_proto_error e;
	uint64_t max_total;
	uint32_t meta_flags, start_flags;
	uint64_t meta_key;
	const char *text;

	if (!f->hello_done && msg->type != VT_PROTO_HELLO && msg->type != VT_PROTO_BYE &&
	    !msg->legacy) {
		/* trace-agent's words, which the host takes for an agent that restarted. */
		say(f, "%s before HELLO", vt_proto_type_name(msg->type));
		reply_err(f, msg->seq, EPROTO, "send HELLO first");
		return;
	}
	if (hangup_ms(f) >= 0)
		return;		/* hanging up: nothing more is answered */
	if (msg->type == VT_PROTO_META_REQ && f->o.hangup_setup_ms >= 0 && !f->hung_up) {
		say(f, "META_REQ seq %u: not answered, hanging up in %ld ms (--hangup-in-setup)",
		    msg->seq, f->o.hangup_setup_ms);
		f->hangup_at = now_ns() + f->o.hangup_setup_ms * 1000000LL;
		return;
	}
	switch (msg->type) {
	case VT_PROTO_HELLO:
		timelog(f, "hello");
		if (f->o.silent_hello) {
			say(f, "HELLO seq %u: not answering (--silent-hello)", msg->seq);
			break;
		}
		send_hello_reply(f, msg);
		break;
	case VT_PROTO_EVENTS:
		handle_events(f, msg);
		break;
	case VT_PROTO_INSTANCE:
	case VT_PROTO_TRACER:
	case VT_PROTO_CLOCK:
	case VT_PROTO_BUFFER_SIZE:
		handle_config(f, msg);
		break;
	case VT_PROTO_START:
		start_flags = 0;
		if (!msg->legacy && (f->o.no_hold ? vt_proto_dec_empty(msg) :
				     vt_proto_dec_start(msg, &start_flags)) < 0) {
			reply_err(f, msg->seq, EBADMSG, "malformed START");
		} else {
			if (!f->running && !f->stopping)
				f->hold = start_flags & VT_PROTO_START_HOLD;
			start(f, msg);
		}
		break;
	case VT_PROTO_STOP:
		if (!msg->legacy && vt_proto_dec_empty(msg) < 0)
			reply_err(f, msg->seq, EBADMSG, "malformed STOP");
		else
			stop(f, msg);
		break;
	case VT_PROTO_MARKER:
		if (vt_proto_dec_string(msg, &text) < 0) {
			reply_err(f, msg->seq, EBADMSG, "malformed MARKER");
			break;
		}
		f->markers++;
		reply_ok(f, msg->seq);
		break;
	case VT_PROTO_STATS_REQ:
		say(f, "STATS_REQ seq %u", msg->seq);
		if (f->o.stats_delay > 0 && !f->stats_delayed) {
			f->stats_delayed = true;
			f->stats_held = 1;
			f->stats_due = now_ns() + (long long)(f->o.stats_delay * 1e9);
			say(f, "STATS_REQ seq %u held %g s (--stats-delay)", msg->seq, f->o.stats_delay);
		} else if (f->stats_held) {
			f->stats_held++;	/* answered in order, after the one held */
		} else {
			send_stats(f);
		}
		break;
	case VT_PROTO_META_REQ:
		/*
		 * The flags are read, but the whole bundle is always sent; but
		 * for --kallsyms-key (META_FLAGS), without kallsyms when asked
		 * so, when the host gives our key, or always with
		 * --lie-kallsyms-key. A key the host gives is said.
		 */
		if (vt_proto_dec_meta_req_key(msg, &max_total, &meta_flags, &meta_key) < 0) {
			reply_err(f, msg->seq, EBADMSG, "malformed META_REQ");
			break;
		}
		if (meta_key)
			say(f, "META_REQ gives the key %" PRIx64 " (the host has it)", meta_key);
		if (f->o.withhold_meta && f->running && !f->got_stop) {
			say(f, "META_REQ withheld (--withhold-meta)");
			break;
		}
		if (f->o.endless_meta && (meta_flags & VT_PROTO_META_REQ_OPEN)) {
			send_endless_meta(f, max_total);
		} else if (f->o.kallsyms_key && ((meta_flags & VT_PROTO_META_REQ_NO_KALLSYMS) ||
			   f->o.lie_key || (meta_key && meta_key == f->o.kallsyms_key))) {
			struct vt_blob ks = f->meta.kallsyms;
			static char empty[1];

			say(f, "META without kallsyms (%s), key %" PRIx64,
			    meta_flags & VT_PROTO_META_REQ_NO_KALLSYMS ? "NO_KALLSYMS" :
			    meta_key && meta_key == f->o.kallsyms_key ? "the host gave our key" :
			    "--lie-kallsyms-key", f->o.kallsyms_key);
			/* An empty kallsyms record, as an agent may send; none when it lies. */
			f->meta.kallsyms = f->o.lie_key ? (struct vt_blob){ 0 } :
				(struct vt_blob){ .data = empty, .len = 0 };
			send_meta(f, msg->seq, max_total, false);
			f->meta.kallsyms = ks;
		} else if (f->o.final_cmdlines && f->stopped_sent) {
			struct vt_blob cl = f->meta.saved_cmdlines;

			say(f, "META with the --final-cmdlines task names");
			f->meta.saved_cmdlines = (struct vt_blob){ .data = (char *)f->o.final_cmdlines,
								   .len = strlen(f->o.final_cmdlines) };
			send_meta(f, msg->seq, max_total, false);
			f->meta.saved_cmdlines = cl;
		} else {
			send_meta(f, msg->seq, max_total, f->o.open_meta &&
				  (meta_flags & VT_PROTO_META_REQ_OPEN));
		}
		break;
	case VT_PROTO_SYNC_BEGIN:
		if (vt_proto_dec_sync(msg, &sync) < 0 || sync.cpu >= f->o.cpus) {
			reply_err(f, msg->seq, EBADMSG, "malformed SYNC_BEGIN or no such CPU");
			break;
		}
		reply_ok(f, msg->seq);
		if (probe_delay(f) >= 0) {
			/* Probes come back through the main loop, each after the delay. */
			say(f, "sync burst on cpu%u: each reply %lld ms late (--probe-delay%s)", sync.cpu,
			    probe_delay(f), f->o.probe_delay_ms < 0 ? "-after-stop" : "");
			f->late_burst_ms = probe_delay(f);
			f->late_answered = 0;
			f->late_cpu = sync.cpu;
			break;
		}
		sync_burst(f, sync.cpu);
		break;
	case VT_PROTO_SYNC_PROBE:
		if (vt_proto_dec_sync(msg, &sync) < 0)
			break;
		if (probe_delay(f) >= 0)
			delay_probe(f, &sync);
		else
			sync_reply(f, &sync);
		break;
	case VT_PROTO_SYNC_END:
		reply_ok(f, msg->seq);
		timelog(f, "sync_end");
		/* In the words of sync_burst()'s count, which tests read. */
		if (f->late_burst_ms >= 0)
			say(f, "sync burst on cpu%u: %u probes answered, each held %lld ms",
			    f->late_cpu, f->late_answered, f->late_burst_ms);
		f->late_burst_ms = -1;
		break;
	case VT_PROTO_BYE:
		say(f, "host said BYE");
		timelog(f, "bye");
		reply_ok(f, msg->seq);
		f->hello_done = f->running = f->stopping = false;
		/*
		 * A guest's port stays open after BYE; only the host closes a
		 * socket. FIFOs never report a close, so there BYE ends the run.
		 */
		if (f->o.mode == MODE_FIFO)
			f->quit = true;
		break;
	case VT_PROTO_LASTBOOT_REQ:
		handle_lastboot(f, msg);
		break;
	case VT_PROTO_ERROR:
		f->host_errors++;
		if (vt_proto_dec_error(msg, &e) == 0)
			say(f, "host sent ERROR for seq %u: %s", e.ref_seq, strerror(e.err));
		break;
	case VT_PROTO_OK:
		break;
	case VT_PROTO_WATCH:
		handle_watch(f, msg);
		break;
	default:
		reply_err(f, msg->seq, EPROTO, "message type not for the agent");
		break;
	}
}

static void drain_parser(struct fake *f)
{
	struct vt_proto_msg msg;
	int r;

	while (!f->quit && (r = vt_proto_parser_next(f->parser, &msg)) != 0) {
		if (r == 1)
			handle(f, &msg);
		else if (r == -EPROTO && msg.type)
			reply_err(f, msg.seq, EPROTO, "unknown message type");
		else
			say(f, "host sent garbage (%s)", strerror(-r));
	}
}

/* The host's session is over; the next host connects to every port anew. */
static void drop_host(struct fake *f)
{
	unsigned int cpu;

	close(f->ctl_rfd);
	f->ctl_rfd = f->ctl_wfd = -1;
	f->hello_done = false;
	f->start_ns = 0;
	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];

		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		c->closed = c->have_cur = false;
	}
	vt_proto_parser_free(f->parser);
	f->parser = vt_proto_parser_new();
	if (!f->parser)
		f->quit = true;
}

/* --again: the host closed the control port after its session. */
static void next_host(struct fake *f)
{
	say(f, "host closed the control port after its session: listening again (--again)");
	drop_host(f);
}

/* --hangup-in-setup: the first session ends here, on the guest's side, before START. */
static void hang_up(struct fake *f)
{
	say(f, "hanging up on the host in its setup (--hangup-in-setup); listening again");
	f->hung_up = true;
	f->running = f->stopping = false;
	drop_host(f);
}

static void read_ctl(struct fake *f)
{
	uint8_t buf[16384];
	size_t off = 0, fed;
	ssize_t n;

	n = read(f->ctl_rfd, buf, sizeof(buf));
	if ((n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) && f->o.mode == MODE_LISTEN &&
	    !f->running && !f->start_ns && f->ctl_listen_fd >= 0) {
		/* A host that only said HELLO (`list`): QEMU's socket takes the next one. */
		say(f, "host closed the control port before START: listening again");
		close(f->ctl_rfd);
		f->ctl_rfd = f->ctl_wfd = -1;
		f->hello_done = false;
		vt_proto_parser_free(f->parser);
		f->parser = vt_proto_parser_new();
		if (!f->parser)
			f->quit = true;
		return;
	}
	if ((n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) && f->o.again &&
	    f->o.mode == MODE_LISTEN && !f->running && !f->stopping && f->ctl_listen_fd >= 0) {
		next_host(f);
		return;
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		say(f, "host closed the control port");
		f->quit = true;
		return;
	}
	while (n > 0 && off < (size_t)n) {
		fed = vt_proto_parser_feed(f->parser, buf + off, n - off);
		off += fed;
		drain_parser(f);
		if (!fed)
			break;
	}
}

/* --- the data path --- */

/* How many bytes @c may send now under --rate. */
static uint64_t allowance(const struct fake *f, const struct fake_cpu *c)
{
	long long el;

	if (!f->o.rate)
		return UINT64_MAX;
	el = now_ns() - f->start_ns;
	if ((uint64_t)el / 1000 * f->o.rate / 1000000 + f->fmt.subbuf_size <= c->bytes_sent)
		return 0;
	return (uint64_t)el / 1000 * f->o.rate / 1000000 + f->fmt.subbuf_size - c->bytes_sent;
}

static void close_cpu(struct fake *f, struct fake_cpu *c, const char *why)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->closed = true;
	c->done = true;
	say(f, "cpu%u: port closed (%s) after %" PRIu64 " pages, %" PRIu64 " bytes", c->cpu,
	    why, c->pages_sent, c->bytes_sent);
}

/*
 * Write what the port takes, up to PUMP_PAGES pages so that the control
 * port is never starved by a fast reader; under --rate, whole remainders of
 * pages only, so that the writes stay page-sized.
 */
static void pump(struct fake *f, struct fake_cpu *c)
{
	unsigned int budget = PUMP_PAGES;

	if (f->hold && f->running)
		return;		/* the ring keeps them until the stop */
	if (f->o.external_pages && !c->done) {
		c->pages_sent = c->total;
		c->bytes_sent = c->total * f->fmt.subbuf_size;
		c->done = true;
		say(f, "cpu%u: pages left to another writer", c->cpu);
		return;
	}
	while (!c->done && c->fd >= 0 && budget) {
		uint64_t may = allowance(f, c);
		size_t want;
		ssize_t n;

		if (!c->have_cur) {
			if ((c->total && c->next >= c->total) || (!c->total && f->stopping)) {
				c->done = true;
				say(f, "cpu%u: done, %" PRIu64 " pages, %" PRIu64 " bytes", c->cpu,
				    c->pages_sent, c->bytes_sent);
				return;
			}
			prepare_page(f, c);
		}
		want = c->cur_len - c->cur_off;
		if (may < want)
			return;
		n = write(c->fd, c->cur + c->cur_off, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_cpu(f, c, n < 0 ? strerror(errno) : "write returned 0");
			return;
		}
		c->cur_off += n;
		c->bytes_sent += n;
		if (c->cur_off < c->cur_len)
			continue;
		c->have_cur = false;
		budget--;
		if (c->cur_len == f->fmt.subbuf_size) {
			c->pages_sent++;
			c->events_sent += page_events(&f->fmt, c->cur);
			continue;
		}
		close_cpu(f, c, "--truncate-stream");
	}
}

static void accept_on(struct fake *f, int lfd, int *fd, const char *what)
{
	int nfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (nfd < 0)
		return;
	if (*fd >= 0) {
		/* One host at a time, like a virtio port. */
		close(nfd);
		return;
	}
	*fd = nfd;
	say(f, "host connected to %s", what);
}

/* --connect: data ports connect on their own, like separate QEMU chardevs. */
static bool connect_data(struct fake *f)
{
	char path[PATH_MAX], name[PATH_MAX];
	bool missing = false;
	unsigned int cpu;

	for (cpu = 0; cpu < f->o.cpus; cpu++) {
		struct fake_cpu *c = &f->cpus[cpu];

		if (c->fd >= 0 || c->closed)
			continue;
		snprintf(name, sizeof(name), "%s%u", f->o.prefix, cpu);
		if (port_path(f, path, sizeof(path), name, "") < 0)
			continue;
		c->fd = unix_connect(path, 0);
		if (c->fd < 0) {
			c->fd = -1;
			missing = true;
			continue;
		}
		set_nonblock(c->fd);
		say(f, "connected to %s", name);
	}
	return missing;
}

static void on_signal(int sig)
{
	got_signal = sig;
}

/*
 * --forget-hello: the session and the HELLO are forgotten SEC seconds after
 * START, as by an agent restarted in the guest (its ports stay open): what
 * the host asks next is answered "send HELLO first". Return: milliseconds
 * until it is due, or -1.
 */
static int forget_due(struct fake *f)
{
	long long at;

	if (f->o.forget_after < 0 || !f->running)
		return -1;
	at = f->start_ns + (long long)(f->o.forget_after * 1e9);
	if (now_ns() < at)
		return (int)((at - now_ns()) / 1000000 + 1);
	say(f, "forgetting the session and its HELLO (--forget-hello): an agent restarted");
	f->hello_done = f->running = f->stopping = false;
	f->o.forget_after = -1;
	return -1;
}

/* The sooner of two poll() timeouts in ms (-1: none). */
static int sooner(int timeout, int ms)
{
	return ms >= 0 && (timeout < 0 || ms < timeout) ? ms : timeout;
}

/* --stats-delay: the STATS_REQs held, answered when due. Return: ms until then, or -1. */
static int stats_due(struct fake *f)
{
	if (!f->stats_held)
		return -1;
	if (now_ns() < f->stats_due)
		return (int)((f->stats_due - now_ns()) / 1000000 + 1);
	say(f, "answering %u held STATS_REQ (--stats-delay)", f->stats_held);
	for (; f->stats_held; f->stats_held--)
		send_stats(f);
	return -1;
}

static int run(struct fake *f)
{
	struct pollfd pfd[2 + FAKE_QMP_FDS + 2 * FAKE_MAX_CPUS];
	int who[2 + FAKE_QMP_FDS + 2 * FAKE_MAX_CPUS];
	long long crash_at = -1;
	unsigned int cpu, n, i;

	f->parser = vt_proto_parser_new();
	if (!f->parser)
		return -ENOMEM;
	while (!f->quit && !got_signal) {
		int timeout = -1, ret;

		if (f->running && f->o.crash_after >= 0 && crash_at < 0)
			crash_at = f->start_ns + (long long)(f->o.crash_after * 1e9);
		if (hangup_ms(f) == 0)
			hang_up(f);
		if (crash_at >= 0 && now_ns() >= crash_at) {
			say(f, "crashing now (--crash-after): cpu0 sent %" PRIu64 " pages, %" PRIu64
			    " bytes", f->cpus[0].pages_sent, f->cpus[0].bytes_sent);
			fflush(stderr);
			kill(getpid(), SIGKILL);
		}
		if (f->stopping && all_done(f))
			finish_stop(f);
		if (f->o.mode == MODE_CONNECT && connect_data(f))
			timeout = 20;
		n = 0;
		/*
		 * As QEMU's chardev: no accept while the port has its host, the next one
		 * waits in the listen backlog (accepting and closing it raced `record
		 * --all`'s session against its own HELLO probe).
		 */
		if (f->ctl_listen_fd >= 0 && f->ctl_rfd < 0) {
			pfd[n] = (struct pollfd){ .fd = f->ctl_listen_fd, .events = POLLIN };
			who[n++] = -1;
		}
		if (f->ctl_rfd >= 0) {
			pfd[n] = (struct pollfd){ .fd = f->ctl_rfd, .events = POLLIN };
			who[n++] = -2;
		}
		for (i = f->qmp ? fake_qmp_fds(f->qmp, pfd + n) : 0; i > 0; i--)
			who[n++] = -3;
		for (cpu = 0; cpu < f->o.cpus; cpu++) {
			struct fake_cpu *c = &f->cpus[cpu];

			if (c->listen_fd >= 0 && c->fd < 0 && !c->closed) {
				pfd[n] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
				who[n++] = 1000 + cpu;
			}
			if ((f->running || f->stopping) && !c->done && c->fd >= 0) {
				size_t left = c->have_cur ? c->cur_len - c->cur_off : f->fmt.subbuf_size;

				if (allowance(f, c) >= left) {
					pfd[n] = (struct pollfd){ .fd = c->fd, .events = POLLOUT };
					who[n++] = cpu;
				} else {
					timeout = 5;
				}
			}
		}
		if (crash_at >= 0) {
			long long left = (crash_at - now_ns()) / 1000000 + 1;

			if (timeout < 0 || left < timeout)
				timeout = left < 0 ? 0 : (int)left;
		}
		/* The slow modes' timers: late probe replies, the META trickle, and the rest. */
		timeout = sooner(timeout, hangup_ms(f));
		timeout = sooner(timeout, forget_due(f));
		timeout = sooner(timeout, stats_due(f));
		timeout = sooner(timeout, delayed_due(f));
		timeout = sooner(timeout, trickle_out(f));
		ret = poll(pfd, n, timeout);
		if (ret < 0 && errno != EINTR)
			return -errno;
		for (i = 0; ret > 0 && i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (who[i] == -1) {
				accept_on(f, f->ctl_listen_fd, &f->ctl_rfd, f->o.ctl_name);
				f->ctl_wfd = f->ctl_rfd;
			} else if (who[i] == -2) {
				read_ctl(f);
			} else if (who[i] == -3) {
				fake_qmp_ready(f->qmp, &pfd[i]);
				f->quit |= fake_qmp_quit(f->qmp);
			} else if (who[i] >= 1000) {
				accept_on(f, pfd[i].fd, &f->cpus[who[i] - 1000].fd, "a data port");
				if (f->cpus[who[i] - 1000].fd >= 0)
					set_nonblock(f->cpus[who[i] - 1000].fd);
			} else {
				pump(f, &f->cpus[who[i]]);
			}
		}
		/* Ports whose writes are paced by --rate, not by poll(). */
		for (cpu = 0; cpu < f->o.cpus && (f->running || f->stopping); cpu++)
			if (f->o.rate)
				pump(f, &f->cpus[cpu]);
	}
	if (got_signal)
		say(f, "signal %d: exiting", (int)got_signal);
	return 0;
}

/* --- options and main --- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vt-fake-agent (--fifo DIR | --connect DIR | --listen DIR) --fixture DIR [options]\n"
		"  --name NAME            label for messages (default: the port directory's name)\n"
		"  --cpus N               CPUs to serve (default: the fixture's; extra CPUs reuse its pages)\n"
		"  --repeat K             send the fixture pages K times (default 1; 0: until STOP);\n"
		"                         repetitions are shifted in time to follow one another\n"
		"  --rate BYTES[K|M]      per-CPU bytes per second\n"
		"  --external-pages       write no pages: another process writes the fixture pages K\n"
		"                         times into each data port (benchmarks); STATS count them\n"
		"  --retime               move page timestamps to the guest's \"now\" at START\n"
		"  --ring-pages N         START with HOLD: the last N pages per CPU go out at STOP\n"
		"                         (default 4), the rest count as overwritten\n"
		"  --no-hold              an agent older than HOLD: no capability, START's flags refused\n"
		"  --triggers N           serve WATCH (capability WATCH) and send N (may be 0) TRIGGERs\n"
		"                         back to back at START (without it: an agent older than WATCH)\n"
		"  --qmp PATH             listen on PATH as QEMU's QMP socket (-qmp unix:PATH,server=on\n"
		"                         after \"--\" for list): one client at a time, commands answered\n"
		"  --qmp-events FIFO      send each line written into FIFO to the QMP client as an event\n"
		"                         (held until a client said qmp_capabilities); a line \"quit\":\n"
		"                         exit there, as QEMU after a panic that powers it off\n"
		"  --tsc-offset N         guest TSC = host TSC + N (SYNC_REPLY and --retime)\n"
		"  --meta-cpu-us TEXT     the STATS for every CPU say \"meta_cpu_us: TEXT\" (the CPU\n"
		"                         time trace-agent's metadata bundles took; any text, a lie too)\n"
		"  --missed CPU:PAGE[:COUNT]  flag page PAGE of CPU as having lost events\n"
		"  --overrun CPU:N        the stats text of CPU says overrun N\n"
		"  --ctl-name NAME        control port name (agent-ctl-path)\n"
		"  --prefix NAME          data port prefix (trace-path-cpu)\n"
		"  --vary-pages M         CPU n sends n %% M pages more than the others (per-CPU\n"
		"                         figures that differ, to check they are not mixed up)\n"
		"  --port-gap MS          make each data port after the first MS ms after the one\n"
		"                         before (the control port first): ports appearing one\n"
		"                         by one, as a guest's do while it starts\n"
		"  --again                with --listen: a host that closes the control port after its\n"
		"                         session is followed by the next (a guest whose agent serves\n"
		"                         one recording after another, as the daemon's rotation needs)\n"
		"  --timelog FILE         append \"EVENT REALTIME_NS MONOTONIC_NS\" lines when HELLO,\n"
		"                         SYNC_END, START, STOP, BYE arrive and when META,\n"
		"                         STOPPED are sent (events hello sync_end start stop bye\n"
		"                         meta stopped exit)\n"
		"misbehaviour:\n"
		"  --bad-page N           corrupt page N of cpu0 (commit length beyond the page)\n"
		"  --garbage              send garbage on the control port after START\n"
		"  --all-bad              corrupt every page of every CPU (with --repeat 0: a flood)\n"
		"  --absurd-probes        answer SYNC_PROBE with pseudo-random guest TSCs\n"
		"  --probe-shrink         answer each SYNC_PROBE of a burst 2 ms sooner than the\n"
		"                         last, from 64 ms (probes 0-31): each a new shortest\n"
		"  --error-flood N        send N unsolicited ERROR frames after START\n"
		"  --notice-flood N       send N NOTICE frames (warnings) after START\n"
		"  --oversize             announce a frame longer than the maximum after START\n"
		"  --huge-meta            announce a META bundle of 1 TiB\n"
		"  --open-meta            take META_REQ's flags and OPEN: the bundle's chunks\n"
		"                         announce an open total, the last the real one\n"
		"  --endless-meta         as --open-meta, but the open chunks never end (one\n"
		"                         past the host's limit)\n"
		"  --hostile-format       the fixture's sched:sched_switch format with prev_comm\n"
		"                         at offset 100000000\n"
		"  --hostile-print        the fixture's irq:softirq_raise format printing its vec\n"
		"                         with __print_hex(REC->vec, 100000000)\n"
		"  --withhold-meta        say META_FLAGS (the host asks for the whole bundle after\n"
		"                         START, as of trace-agent) and never answer a META_REQ\n"
		"                         that comes after START and before STOP\n"
		"  --last-boot-info TEXT  serve LASTBOOT_REQ: the fixture as the last boot's trace,\n"
		"                         with TEXT as the instance's last_boot_info\n"
		"  --last-boot-name NAME  with --last-boot-info: say it is instance NAME, whatever\n"
		"                         was asked\n"
		"  --dump-last-boot FILE  write that bundle (instance \"boot\") to FILE and exit\n"
		"  --final-cmdlines TEXT  the bundles asked for after STOPPED have TEXT (\"PID COMM\"\n"
		"                         lines) as their saved_cmdlines\n"
		"  --kallsyms-key KEY     made-up kallsyms (1000 text symbols) with key KEY (hex):\n"
		"                         left out when the host asks with that key\n"
		"  --lie-kallsyms-key     with --kallsyms-key: kallsyms left out of every bundle,\n"
		"                         the bundle still saying KEY\n"
		"  --kallsyms-name PREFIX the made-up symbols are PREFIX0, PREFIX1, ...\n"
		"                         (default vt_fake_sym_)\n"
		"  --truncate-stream      end cpu0's data in the middle of its last page and close\n"
		"  --wrong-subbuf         HELLO_REPLY and META claim twice the real sub-buffer size\n"
		"  --stall-stop           never answer STOP\n"
		"  --lie-bytes            STATS claims one page more on cpu0 than was sent\n"
		"  --crash-after SEC      SIGKILL itself SEC seconds after START\n"
		"  --hangup-in-setup MS   with --listen --again: leave the first META_REQ unanswered\n"
		"                         and close every port MS ms later, as an agent restarted\n"
		"                         in the host's setup; the next host is served as usual\n"
		"  --forget-hello SEC     SEC seconds after START, forget the session and the\n"
		"                         HELLO, as an agent restarted in the guest (once)\n"
		"  --stats-delay SEC      answer the first STATS_REQ SEC seconds late (a loaded\n"
		"                         guest); those after it wait for it, in order\n"
		"slow guests (each a timer of the main loop; pages and the control port go on):\n"
		"  --probe-delay MS       answer every SYNC_PROBE MS milliseconds late\n"
		"  --probe-delay-after-stop MS  the same, only for probes after a STOP\n"
		"  --meta-rate BYTES_PER_S  send the META bundle (and whatever follows it on the\n"
		"                         control port) at that many bytes per second\n"
		"  --silent-hello         never answer HELLO; keep the ports open\n"
		"  -- ARG...              ignored: a QEMU-like command line for `virtio-trace-collect\n"
		"                         list` to find in /proc (run a root-owned 0755 copy\n"
		"                         named qemu-system-x86_64: list believes /proc/PID/exe)\n"
		"  --evil-strings[=text|clock|meta|error]  hostile strings (default text)\n"
		"or: vt-fake-agent --knock PATH\n"
		"  connect to the unix socket PATH as a stranger would: exit 0 when the listener\n"
		"  closes it within 5 s, 2 when it cannot connect, 3 when it stays open\n");
}

static int parse_size(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		*v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		*v <<= 20, end++;
	return *end ? -1 : 0;
}

static int parse_args(struct fake_opts *o, int argc, char **argv)
{
	enum { OPT_FIFO = 256, OPT_CONNECT, OPT_LISTEN, OPT_FIXTURE, OPT_NAME, OPT_CPUS, OPT_REPEAT, OPT_RATE,
	       OPT_RETIME, OPT_TSC, OPT_MISSED, OPT_OVERRUN, OPT_CTL, OPT_PREFIX, OPT_BAD, OPT_GARBAGE,
	       OPT_OVERSIZE, OPT_HUGE, OPT_OPEN_META, OPT_ENDLESS_META, OPT_KSKEY, OPT_LIEKEY, OPT_TRUNC, OPT_SUBBUF, OPT_STALL, OPT_LIE, OPT_CRASH, OPT_FORGET, OPT_STATS_DELAY, OPT_EVIL,
	       OPT_EXTERNAL, OPT_PROBE_DELAY, OPT_STOP_PROBE_DELAY, OPT_META_RATE, OPT_SILENT_HELLO, OPT_VARY, OPT_TIMELOG,
	       OPT_ALL_BAD, OPT_ABSURD, OPT_ERROR_FLOOD, OPT_SHRINK, OPT_NOTICE_FLOOD,
	       OPT_LB_INFO, OPT_LB_NAME, OPT_LB_DUMP, OPT_KSNAME, OPT_FINAL_CMDLINES, OPT_PORT_GAP,
	       OPT_HOSTILE_FORMAT, OPT_HOSTILE_PRINT, OPT_WITHHOLD_META, OPT_RING_PAGES, OPT_NO_HOLD,
	       OPT_AGAIN, OPT_TRIGGERS, OPT_QMP, OPT_QMP_EVENTS, OPT_META_CPU, OPT_HANGUP };
	static const struct option lo[] = {
		{ "fifo", required_argument, NULL, OPT_FIFO },
		{ "connect", required_argument, NULL, OPT_CONNECT },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "fixture", required_argument, NULL, OPT_FIXTURE },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "retime", no_argument, NULL, OPT_RETIME },
		{ "ring-pages", required_argument, NULL, OPT_RING_PAGES },
		{ "no-hold", no_argument, NULL, OPT_NO_HOLD },
		{ "triggers", required_argument, NULL, OPT_TRIGGERS },
		{ "tsc-offset", required_argument, NULL, OPT_TSC },
		{ "meta-cpu-us", required_argument, NULL, OPT_META_CPU },
		{ "missed", required_argument, NULL, OPT_MISSED },
		{ "overrun", required_argument, NULL, OPT_OVERRUN },
		{ "ctl-name", required_argument, NULL, OPT_CTL },
		{ "prefix", required_argument, NULL, OPT_PREFIX },
		{ "bad-page", required_argument, NULL, OPT_BAD },
		{ "garbage", no_argument, NULL, OPT_GARBAGE },
		{ "all-bad", no_argument, NULL, OPT_ALL_BAD },
		{ "absurd-probes", no_argument, NULL, OPT_ABSURD },
		{ "probe-shrink", no_argument, NULL, OPT_SHRINK },
		{ "error-flood", required_argument, NULL, OPT_ERROR_FLOOD },
		{ "notice-flood", required_argument, NULL, OPT_NOTICE_FLOOD },
		{ "oversize", no_argument, NULL, OPT_OVERSIZE },
		{ "huge-meta", no_argument, NULL, OPT_HUGE },
		{ "open-meta", no_argument, NULL, OPT_OPEN_META },
		{ "endless-meta", no_argument, NULL, OPT_ENDLESS_META },
		{ "kallsyms-key", required_argument, NULL, OPT_KSKEY },
		{ "last-boot-info", required_argument, NULL, OPT_LB_INFO },
		{ "final-cmdlines", required_argument, NULL, OPT_FINAL_CMDLINES },
		{ "hostile-format", no_argument, NULL, OPT_HOSTILE_FORMAT },
		{ "hostile-print", no_argument, NULL, OPT_HOSTILE_PRINT },
		{ "withhold-meta", no_argument, NULL, OPT_WITHHOLD_META },
		{ "last-boot-name", required_argument, NULL, OPT_LB_NAME },
		{ "dump-last-boot", required_argument, NULL, OPT_LB_DUMP },
		{ "lie-kallsyms-key", no_argument, NULL, OPT_LIEKEY },
		{ "kallsyms-name", required_argument, NULL, OPT_KSNAME },
		{ "truncate-stream", no_argument, NULL, OPT_TRUNC },
		{ "wrong-subbuf", no_argument, NULL, OPT_SUBBUF },
		{ "stall-stop", no_argument, NULL, OPT_STALL },
		{ "lie-bytes", no_argument, NULL, OPT_LIE },
		{ "external-pages", no_argument, NULL, OPT_EXTERNAL },
		{ "crash-after", required_argument, NULL, OPT_CRASH },
		{ "forget-hello", required_argument, NULL, OPT_FORGET },
		{ "stats-delay", required_argument, NULL, OPT_STATS_DELAY },
		{ "evil-strings", optional_argument, NULL, OPT_EVIL },
		{ "probe-delay", required_argument, NULL, OPT_PROBE_DELAY },
		{ "probe-delay-after-stop", required_argument, NULL, OPT_STOP_PROBE_DELAY },
		{ "meta-rate", required_argument, NULL, OPT_META_RATE },
		{ "silent-hello", no_argument, NULL, OPT_SILENT_HELLO },
		{ "vary-pages", required_argument, NULL, OPT_VARY },
		{ "timelog", required_argument, NULL, OPT_TIMELOG },
		{ "port-gap", required_argument, NULL, OPT_PORT_GAP },
		{ "again", no_argument, NULL, OPT_AGAIN },
		{ "hangup-in-setup", required_argument, NULL, OPT_HANGUP },
		{ "qmp", required_argument, NULL, OPT_QMP },
		{ "qmp-events", required_argument, NULL, OPT_QMP_EVENTS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long a, b;
	long long cnt;
	char *end;
	int c, n;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case OPT_FIFO:
		case OPT_CONNECT:
		case OPT_LISTEN:
			if (o->mode != MODE_NONE)
				return -1;
			o->mode = c == OPT_FIFO ? MODE_FIFO : c == OPT_CONNECT ? MODE_CONNECT : MODE_LISTEN;
			o->dir = optarg;
			break;
		case OPT_FIXTURE:
			o->fixture = optarg;
			break;
		case OPT_NAME:
			o->name = optarg;
			break;
		case OPT_CPUS:
			o->cpus = strtoul(optarg, &end, 10);
			if (*end || !o->cpus || o->cpus > FAKE_MAX_CPUS)
				return -1;
			break;
		case OPT_REPEAT:
			o->repeat = strtoull(optarg, &end, 10);
			if (*end)
				return -1;
			break;
		case OPT_RATE:
			if (parse_size(optarg, &o->rate))
				return -1;
			break;
		case OPT_RETIME:
			o->retime = true;
			break;
		case OPT_RING_PAGES:
			o->ring_pages = strtoull(optarg, &end, 10);
			if (*end || !o->ring_pages)
				return -1;
			break;
		case OPT_NO_HOLD:
			o->no_hold = true;
			break;
		case OPT_TRIGGERS:
			o->triggers = strtoull(optarg, &end, 10);
			if (*end || end == optarg)
				return -1;
			o->watch = true;
			break;
		case OPT_META_CPU:
			o->meta_cpu_us = optarg;
			break;
		case OPT_TSC:
			o->tsc_offset = strtoll(optarg, &end, 0);
			if (*end)
				return -1;
			break;
		case OPT_MISSED:
			cnt = -1;
			n = sscanf(optarg, "%llu:%llu:%lld", &a, &b, &cnt);
			if (n < 2 || o->nr_missed >= FAKE_MAX_MISSED || (n == 3 && cnt < 0))
				return -1;
			o->missed[o->nr_missed++] = (struct missed_mark){ a, b, cnt };
			break;
		case OPT_OVERRUN:
			if (sscanf(optarg, "%llu:%llu", &a, &b) != 2 || o->nr_overrun >= FAKE_MAX_OVERRUN)
				return -1;
			o->overrun[o->nr_overrun++] = (struct overrun_mark){ a, b };
			break;
		case OPT_CTL:
			o->ctl_name = optarg;
			break;
		case OPT_PREFIX:
			o->prefix = optarg;
			break;
		case OPT_BAD:
			o->bad_page = strtoll(optarg, &end, 10);
			if (*end || o->bad_page < 0)
				return -1;
			break;
		case OPT_GARBAGE:
			o->garbage = true;
			break;
		case OPT_ALL_BAD:
			o->all_bad = true;
			break;
		case OPT_ABSURD:
			o->absurd_probes = true;
			break;
		case OPT_SHRINK:
			o->probe_shrink = true;
			break;
		case OPT_ERROR_FLOOD:
			o->error_flood = strtoull(optarg, &end, 10);
			if (*end)
				return -1;
			break;
		case OPT_NOTICE_FLOOD:
			o->notice_flood = strtoull(optarg, &end, 10);
			if (*end)
				return -1;
			break;
		case OPT_OVERSIZE:
			o->oversize = true;
			break;
		case OPT_HUGE:
			o->huge_meta = true;
			break;
		case OPT_HOSTILE_FORMAT:
			o->hostile_format = true;
			break;
		case OPT_HOSTILE_PRINT:
			o->hostile_print = true;
			break;
		case OPT_WITHHOLD_META:
			o->withhold_meta = true;
			break;
		case OPT_OPEN_META:
			o->open_meta = true;
			break;
		case OPT_ENDLESS_META:
			o->endless_meta = true;
			break;
		case OPT_KSKEY:
			o->kallsyms_key = strtoull(optarg, NULL, 16);
			break;
		case OPT_LIEKEY:
			o->lie_key = true;
			break;
		case OPT_KSNAME:
			o->kallsyms_name = optarg;
			break;
		case OPT_TRUNC:
			o->truncate_stream = true;
			break;
		case OPT_SUBBUF:
			o->wrong_subbuf = true;
			break;
		case OPT_STALL:
			o->stall_stop = true;
			break;
		case OPT_EXTERNAL:
			o->external_pages = true;
			break;
		case OPT_LIE:
			o->lie_bytes = true;
			break;
		case OPT_CRASH:
			o->crash_after = strtod(optarg, &end);
			if (*end || o->crash_after < 0)
				return -1;
			break;
		case OPT_FORGET:
			o->forget_after = strtod(optarg, &end);
			if (*end || o->forget_after < 0)
				return -1;
			break;
		case OPT_STATS_DELAY:
			o->stats_delay = strtod(optarg, &end);
			if (*end || o->stats_delay < 0)
				return -1;
			break;
		case OPT_EVIL:
			if (!optarg || !strcmp(optarg, "text"))
				o->evil = EVIL_TEXT;
			else if (!strcmp(optarg, "clock"))
				o->evil = EVIL_CLOCK;
			else if (!strcmp(optarg, "meta"))
				o->evil = EVIL_META;
			else if (!strcmp(optarg, "error"))
				o->evil = EVIL_ERROR;
			else
				return -1;
			break;
		case OPT_PROBE_DELAY:
			o->probe_delay_ms = strtoll(optarg, &end, 10);
			if (*end || o->probe_delay_ms < 0 || o->probe_delay_ms > 3600000)
				return -1;
			break;
		case OPT_LB_INFO:
			o->lastboot_info = optarg;
			break;
		case OPT_FINAL_CMDLINES:
			o->final_cmdlines = optarg;
			break;
		case OPT_LB_NAME:
			o->lastboot_name = optarg;
			break;
		case OPT_LB_DUMP:
			o->dump_lastboot = optarg;
			break;
		case OPT_STOP_PROBE_DELAY:
			o->stop_probe_delay_ms = strtoll(optarg, &end, 10);
			if (*end || o->stop_probe_delay_ms < 0 || o->stop_probe_delay_ms > 3600000)
				return -1;
			break;
		case OPT_META_RATE:
			if (parse_size(optarg, &o->meta_rate) || !o->meta_rate)
				return -1;
			break;
		case OPT_SILENT_HELLO:
			o->silent_hello = true;
			break;
		case OPT_VARY:
			o->vary_pages = strtoul(optarg, &end, 10);
			if (*end || !o->vary_pages)
				return -1;
			break;
		case OPT_TIMELOG:
			o->timelog = optarg;
			break;
		case OPT_PORT_GAP:
			o->port_gap_ms = strtoul(optarg, &end, 10);
			if (*end || o->port_gap_ms > 10000)
				return -1;
			break;
		case OPT_AGAIN:
			o->again = true;
			break;
		case OPT_HANGUP:
			o->hangup_setup_ms = strtol(optarg, &end, 10);
			if (*end || o->hangup_setup_ms < 0 || o->hangup_setup_ms > 60000)
				return -1;
			break;
		case OPT_QMP:
			o->qmp = optarg;
			break;
		case OPT_QMP_EVENTS:
			o->qmp_events = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	/* After "--", a QEMU-like command line nobody reads but `list` (in /proc). */
	if ((o->mode == MODE_NONE && !o->dump_lastboot) || !o->fixture ||
	    (optind != argc && strcmp(argv[optind - 1], "--")))
		return -1;
	if ((o->truncate_stream || o->vary_pages) && !o->repeat)
		return -1;
	if (o->qmp_events && !o->qmp)
		return -1;
	return 0;
}

/* --dump-last-boot FILE: the bundle LASTBOOT_REQ "boot" would get, for a fuzzing seed. */
static int dump_lastboot(struct fake *f)
{
	FILE *out;
	size_t len;
	void *blob;

	if (!f->o.lastboot_info)
		f->o.lastboot_info = "ffffffff81000000\t[kernel]\n";
	if (lastboot_blob(f, "boot", &blob, &len) < 0)
		return 1;
	out = fopen(f->o.dump_lastboot, "we");
	if (!out || fwrite(blob, 1, len, out) != len || fclose(out) != 0) {
		fprintf(stderr, "vt-fake-agent: cannot write %s\n", f->o.dump_lastboot);
		free(blob);
		return 1;
	}
	free(blob);
	say(f, "wrote the last boot's bundle to %s, %zu bytes", f->o.dump_lastboot, len);
	return 0;
}

/*
 * --knock PATH: connect to a unix socket as a stranger would and say what
 * became of it: no connection (exit 2), closed by the listener within 5 s
 * (exit 0), or left open (exit 3). Nothing is sent.
 */
static int knock(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd p;
	long long t0 = now_ns();
	char byte;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return 2;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "knock: %s: cannot connect: %s\n", path, strerror(errno));
		return 2;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 5000) == 1) {
		if (read(fd, &byte, 1) <= 0) {
			fprintf(stderr, "knock: %s: connected, closed by the listener after %lld ms\n",
				path, (now_ns() - t0) / 1000000);
			close(fd);
			return 0;
		}
		fprintf(stderr, "knock: %s: connected and spoken to: taken as the guest\n", path);
	} else {
		fprintf(stderr, "knock: %s: connected and still open after 5 s\n", path);
	}
	close(fd);
	return 3;
}

int main(int argc, char **argv)
{
	static struct fake f;
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned int cpu;
	int ret;

	f.o.ctl_name = "agent-ctl-path";
	f.o.prefix = "trace-path-cpu";
	f.o.repeat = 1;
	f.o.ring_pages = 4;
	f.o.bad_page = -1;
	f.o.crash_after = -1;
	f.o.hangup_setup_ms = -1;
	f.o.forget_after = -1;
	f.o.probe_delay_ms = -1;
	f.o.stop_probe_delay_ms = -1;
	f.late_burst_ms = -1;
	f.o.kallsyms_name = "vt_fake_sym_";
	if (argc == 3 && !strcmp(argv[1], "--knock"))
		return knock(argv[2]);
	if (parse_args(&f.o, argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	if (f.o.hangup_setup_ms >= 0 && (f.o.mode != MODE_LISTEN || !f.o.again)) {
		fprintf(stderr, "vt-fake-agent: --hangup-in-setup needs --listen and --again\n");
		return 2;
	}
	if (!f.o.name && !f.o.dir)
		f.o.name = "fake";
	if (!f.o.name) {
		const char *slash = strrchr(f.o.dir, '/');

		f.o.name = slash && slash[1] ? slash + 1 : f.o.dir;
	}
	if (f.o.timelog) {
		f.timelog = fopen(f.o.timelog, "ae");
		if (!f.timelog) {
			fprintf(stderr, "vt-fake-agent: cannot open %s: %s\n", f.o.timelog, strerror(errno));
			return 1;
		}
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	ret = load_fixture(&f);
	if (ret < 0)
		return 1;
	if (f.o.dump_lastboot)
		return dump_lastboot(&f);
	if (f.o.qmp) {
		f.qmp = fake_qmp_open(f.o.name, f.o.qmp, f.o.qmp_events, f.o.cpus);
		if (!f.qmp)
			return 1;
	}
	ret = open_ports(&f);
	if (ret < 0)
		return 1;
	say(&f, "pid %d serving", (int)getpid());
	ret = run(&f);
	for (cpu = 0; cpu < f.o.cpus; cpu++)
		say(&f, "total cpu%u pages %" PRIu64 " bytes %" PRIu64 " events %" PRIu64, cpu,
		    f.cpus[cpu].pages_sent, f.cpus[cpu].bytes_sent, f.cpus[cpu].events_sent);
	say(&f, "exit: %u markers, %" PRIu64 " ERRORs from the host%s%s", (unsigned int)f.markers,
	    f.host_errors, ret < 0 ? ", " : "", ret < 0 ? strerror(-ret) : "");
	timelog(&f, "exit");
	if (f.timelog)
		fclose(f.timelog);
	free(f.slow.buf);
	fake_qmp_close(f.qmp);
	vt_proto_parser_free(f.parser);
	vt_meta_free(&f.meta);
	return ret < 0 ? 1 : 0;
}
