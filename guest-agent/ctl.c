// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control loop: one thread, poll() on the control port, the signalfd and
 * the data threads' done eventfd. Commands configure the buffer lazily (the
 * first one that needs a buffer selects the default private instance with
 * tracing off), START turns tracing on and starts the data threads, STOP
 * turns it off and answers STOPPED once every thread has drained.
 *
 * Nothing a host sends can make the agent exit: bad frames are answered with
 * ERROR and skipped. Only SIGTERM, SIGINT and, with --once, the end of a host
 * session end it, and every tracefs change is put back first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "ctl.h"
#include "watch.h"
#include "vt_conn.h"
#include "vt_meta.h"
#include "vt_proto.h"
#include "vt_suggest.h"
#include "vt_tsync.h"

#define HUP_BACKOFF_MS		250
/* A burst ends when no probe came for this long: the collector's probe timeout. */
#define SYNC_PROBE_TIMEOUT_NS	(2ll * 1000 * 1000 * 1000)
/* After a probe, poll without sleeping this long: the next one is usually on its way. */
#define SYNC_SPIN_NS		(2ll * 1000 * 1000)
/*
 * How long a frame may wait for the host to take it. Long: a loaded host
 * (QEMU's I/O thread starved for seconds) must not cost a session, as it
 * did at 5 s while the metadata bundle went out; a host that is gone is
 * found when the port hangs up.
 */
#define WRITE_TIMEOUT_MS	30000

struct ev_cfg {
	char *system;
	char *event;
	char *filter;
};

struct agent {
	const struct agent_opts *o;
	struct tracing t;
	bool have_buffer;
	struct vt_conn *conn;	/* the control port; NULL while it is closed */
	bool running;
	bool stopping;
	uint32_t stop_seq;
	uint64_t resumes;	/* RESUMEs served in this session: the marks' numbers */
	bool quit;
	struct cpu_stream *cpus;
	unsigned int nr_streams;
	int done_fd;
	int sig_fd;
	int io_fd;		/* SIGIO: the host end of the control port came or went */
	/* what the host asked for */
	char *instance;		/* NULL: top-level */
	bool instance_set;
	struct ev_cfg *events;
	unsigned int nr_events;
	uint64_t garbage_reported;
	bool hello_done;
	uint64_t host_caps;		/* the host's HELLO: VT_PROTO_CAP_NOTICE */
	uint32_t flush_ms;		/* FLUSH: partial pages this old go out, 0: never */
	uint32_t budget_kb;		/* BUFFER_BUDGET, or --buffer-budget: ring.c's budget */
	uint32_t ring_kb;		/* the running recording's budget (0: fixed, and held) */
	long long ring_next;		/* when ring_tick() looks next */
	unsigned int notices_sent;	/* to this host */
	bool kallsyms_sent;		/* this session sent kallsyms, with /proc/modules at: */
	uint64_t kallsyms_modules;
	uint64_t meta_cpu_ns;		/* this session's metadata bundles: the control thread's CPU */
	bool boot_read;			/* boot_hash: the FNV-1a hash of boot_id, 0 if none */
	uint64_t boot_hash;
	/* a clock-probe burst, SYNC_BEGIN .. SYNC_END: pinned to the probed CPU */
	bool burst;
	long long burst_last;	/* when SYNC_BEGIN or the last probe came */
	cpu_set_t affinity;	/* what to put back when the burst ends */
	/* what the guest has, found at start-up */
	unsigned int nr_cpus;
	unsigned int subbuf_size;
	char default_clock[64];
	struct watch watch;	/* WATCH: a guest event that sends TRIGGER */
};

/*
 * The connection's hook: a marker in the guest trace for every control
 * message sent or received while tracing. Frames sent are marked before
 * they are written, so that the host's rx marker for one always comes later
 * on the merged timeline.
 */
static void mark(void *arg, bool tx, uint16_t type, uint32_t seq)
{
	struct agent *a = arg;
	char text[128];

	if (!a->have_buffer || !a->running || type == VT_PROTO_SYNC_PROBE ||
	    type == VT_PROTO_SYNC_REPLY)
		return;
	if (vt_proto_marker(text, sizeof(text), tx, type, seq) > 0)
		tracing_marker(&a->t, text);
}

/*
 * The agent's warnings go to the host as NOTICE, when its HELLO takes them:
 * any thread queues them (agent_log_hook), the control thread sends them
 * between other frames, never in a clock-probe burst. At most NOTICE_QUEUE
 * wait: what does not fit is counted, and one more notice says how many.
 * A host gets at most NOTICE_PER_HOST of them. Warnings are kept for a
 * host to come (from start-up, or after a host left) but not while a host
 * that does not take them is served. The guest's own log keeps them all.
 */
#define NOTICE_QUEUE	8
#define NOTICE_PER_HOST	64
#define NOTICE_TEXT	512

static struct {
	pthread_mutex_t lock;
	char text[NOTICE_QUEUE][NOTICE_TEXT];
	unsigned int first, count;
	uint64_t dropped;
	bool sending;		/* the control thread is sending them: a failure there is not queued */
	bool unwanted;		/* the host served now does not take them */
	int wake_fd;
} notices = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1 };

/* A HELLO said whether the host takes notices (@want), or the host left (true). */
static void notices_wanted(bool want)
{
	pthread_mutex_lock(&notices.lock);
	notices.unwanted = !want;
	if (!want)
		notices.count = notices.dropped = 0;
	pthread_mutex_unlock(&notices.lock);
}

static void queue_notice(int level, const char *text)
{
	uint64_t one = 1;

	(void)level;
	pthread_mutex_lock(&notices.lock);
	if (notices.sending || notices.unwanted) {
		pthread_mutex_unlock(&notices.lock);
		return;
	}
	if (notices.count < NOTICE_QUEUE) {
		snprintf(notices.text[(notices.first + notices.count) % NOTICE_QUEUE], NOTICE_TEXT, "%s",
			 text);
		notices.count++;
	} else {
		notices.dropped++;
	}
	pthread_mutex_unlock(&notices.lock);
	/* Wakes the control loop (the done eventfd: it counts the threads again, no harm). */
	if (notices.wake_fd >= 0 && write(notices.wake_fd, &one, sizeof(one)) < 0)
		return;
}

/* The agent may wait, in poll(), up to WRITE_TIMEOUT_MS for the host to take a frame. */
static int send_frame(struct agent *a, int len)
{
	long long t0 = agent_now_ns(), waited;
	int ret = vt_conn_send_wait(a->conn, len, WRITE_TIMEOUT_MS);

	if (ret < 0)
		log_warn_local("control port: cannot send: %s", strerror(-ret));
	/* A host that takes seconds to read is worth a line in the guest's log. */
	waited = (agent_now_ns() - t0) / 1000000;
	if (ret == 0 && waited >= 1000)
		log_warn_local("control port: the host took %lld ms to take a frame", waited);
	return ret;
}

static uint8_t *frame(struct agent *a)
{
	return vt_conn_frame(a->conn);
}

static uint32_t next_seq(struct agent *a)
{
	return vt_conn_next_seq(a->conn);
}

static int reply_ok(struct agent *a, uint32_t ref)
{
	return send_frame(a, vt_proto_enc_ack(frame(a), VT_PROTO_FRAME_MAX, VT_PROTO_OK, next_seq(a),
					       ref));
}

static int reply_err(struct agent *a, uint32_t ref, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int reply_err(struct agent *a, uint32_t ref, int err, const char *fmt, ...)
{
	struct vt_proto_error e = { .ref_seq = ref, .err = err < 0 ? -err : err };
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	e.text = text;
	log_warn_local("answering seq %u with error: %s (%s)", ref, text, strerror(e.err));
	return send_frame(a, vt_proto_enc_error(frame(a), VT_PROTO_FRAME_MAX, next_seq(a), &e));
}

/* Send the queued warnings to a host that takes them; not in a burst. */
static void send_notices(struct agent *a)
{
	char text[NOTICE_TEXT + 64];
	uint64_t dropped;
	int len;

	if (!a->conn || !a->hello_done || !(a->host_caps & VT_PROTO_CAP_NOTICE) || a->burst)
		return;
	for (;;) {
		pthread_mutex_lock(&notices.lock);
		if (a->notices_sent >= NOTICE_PER_HOST) {
			/* Enough for this host: the rest stays in the guest's log. */
			notices.count = notices.dropped = 0;
			pthread_mutex_unlock(&notices.lock);
			return;
		}
		if (!notices.count && !notices.dropped) {
			pthread_mutex_unlock(&notices.lock);
			return;
		}
		if (notices.count) {
			snprintf(text, sizeof(text), "%s", notices.text[notices.first]);
			notices.first = (notices.first + 1) % NOTICE_QUEUE;
			notices.count--;
		} else {
			dropped = notices.dropped;
			notices.dropped = 0;
			snprintf(text, sizeof(text), "%llu more warnings not sent (the guest's log has them)",
				 (unsigned long long)dropped);
		}
		notices.sending = true;
		pthread_mutex_unlock(&notices.lock);
		a->notices_sent++;
		len = vt_proto_enc_string(frame(a), VT_PROTO_FRAME_MAX, VT_PROTO_NOTICE, next_seq(a), text);
		len = len < 0 ? len : send_frame(a, len);
		pthread_mutex_lock(&notices.lock);
		notices.sending = false;
		pthread_mutex_unlock(&notices.lock);
		if (len < 0)
			return;
	}
}

/* Select the buffer the host asked for (default: the private instance), tracing off. */
static int ensure_buffer(struct agent *a)
{
	const char *inst = a->instance_set ? a->instance : a->o->instance;
	int ret;

	if (a->have_buffer)
		return 0;
	ret = tracing_use(&a->t, inst);
	if (ret < 0) {
		tracing_restore(&a->t);
		return ret;
	}
	a->have_buffer = true;
	return tracing_on(&a->t, false);
}

static void free_events(struct agent *a)
{
	unsigned int i;

	for (i = 0; i < a->nr_events; i++) {
		free(a->events[i].system);
		free(a->events[i].event);
		free(a->events[i].filter);
	}
	free(a->events);
	a->events = NULL;
	a->nr_events = 0;
}

static void stop_threads(struct agent *a, bool abort_now)
{
	unsigned int i;

	for (i = 0; i < a->nr_streams; i++) {
		if (abort_now)
			cpu_abort(&a->cpus[i]);
		else
			cpu_stop(&a->cpus[i]);
	}
}

static void join_threads(struct agent *a)
{
	unsigned int i;

	for (i = 0; i < a->nr_streams; i++)
		cpu_join(&a->cpus[i]);
	free(a->cpus);
	a->cpus = NULL;
	a->nr_streams = 0;
}

/* Put every tracefs change back and forget the session's configuration. */
static void end_session(struct agent *a)
{
	if (a->running || a->stopping) {
		if (a->have_buffer)
			tracing_on(&a->t, false);
		stop_threads(a, true);
		join_threads(a);
		a->running = a->stopping = false;
	}
	if (a->have_buffer) {
		tracing_restore(&a->t);
		a->have_buffer = false;
	}
	free_events(a);
	free(a->instance);
	a->instance = NULL;
	a->instance_set = false;
	a->kallsyms_sent = false;
	a->meta_cpu_ns = 0;
	watch_stop(&a->watch);
}

#define FNV_OFFSET	14695981039346656037ull
#define FNV_PRIME	1099511628211ull

/* FNV-1a of @len bytes at @p, going on from @h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len--)
		h = (h ^ *b++) * FNV_PRIME;
	return h;
}

/*
 * What changes kallsyms while the guest runs: a module loaded or removed.
 * A hash of /proc/modules' names, sizes and addresses (not the use counts,
 * which move all the time); 0 when there is none (no module support).
 */
static uint64_t modules_hash(void)
{
	uint64_t h = FNV_OFFSET;
	char line[512];
	FILE *f;

	f = fopen("/proc/modules", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char name[128], addr[64];
		unsigned long size;

		/* name size refcount deps state address */
		if (sscanf(line, "%127s %lu %*s %*s %*s %63s", name, &size, addr) != 3)
			continue;
		h = fnv1a(h, name, strlen(name));
		h = (h ^ size) * FNV_PRIME;
		h = fnv1a(h, addr, strlen(addr));
	}
	fclose(f);
	return h;
}

/*
 * The key of the guest's kallsyms as it is now: this boot (boot_id, read
 * once) and its modules (@mods, from modules_hash()). 0 when the boot cannot
 * be told apart; then no host can claim to have the same kallsyms.
 */
static uint64_t kallsyms_key(struct agent *a, uint64_t mods)
{
	uint8_t le[8];
	unsigned int i;
	uint64_t h;

	if (!a->boot_read) {
		char id[64] = "";
		FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

		a->boot_read = true;
		if (f && fgets(id, sizeof(id), f) && strlen(id) >= 32)
			a->boot_hash = fnv1a(FNV_OFFSET, id, strcspn(id, "\n"));
		if (f)
			fclose(f);
	}
	if (!a->boot_hash)
		return 0;
	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)(mods >> (8 * i));
	h = fnv1a(a->boot_hash, le, sizeof(le));
	return h ? h : 1;
}

/*
 * Each streamed CPU's steal time as the guest kernel counts it: the 8th
 * value of its `cpuN` line in /proc/stat, in USER_HZ ticks. The host sets
 * it beside the preempted time it measured (report --vcpus), so a CPU
 * whose line is missing or short is left out rather than sent as 0.
 */
static void read_steal(struct agent *a, bool at_start)
{
	char line[512];
	unsigned int i;
	FILE *f;

	if (at_start)
		for (i = 0; i < a->nr_streams; i++)
			a->cpus[i].have_steal = false;
	f = fopen("/proc/stat", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[8];
		unsigned int cpu;

		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9' ||
		    sscanf(line + 3, "%u %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
			continue;
		for (i = 0; i < a->nr_streams; i++) {
			struct cpu_stream *s = &a->cpus[i];

			if (s->cpu != cpu)
				continue;
			if (at_start) {
				s->steal0 = s->steal1 = v[7];
				s->have_steal = true;
			} else {
				s->steal1 = v[7];
			}
		}
	}
	fclose(f);
}

/*
 * The steal lines of a CPU's STATS text, after the ring buffer's own
 * `key: value` lines: the host's manifest takes them as they are.
 */
static void steal_text(const struct cpu_stream *s, char *text, size_t size)
{
	long hz = sysconf(_SC_CLK_TCK);
	size_t len = strlen(text);
	uint64_t ticks;

	if (!s->have_steal || hz <= 0 || len >= size)
		return;
	ticks = s->steal1 >= s->steal0 ? s->steal1 - s->steal0 : 0;
	snprintf(text + len, size - len, "steal_ns: %llu\nsteal_ticks: %llu\nuser_hz: %ld\n",
		 (unsigned long long)(ticks * (1000000000ull / (uint64_t)hz)),
		 (unsigned long long)ticks, hz);
}

static int start(struct agent *a, bool hold)
{
	unsigned int cpu;
	char val[32];
	int ret;

	ret = ensure_buffer(a);
	if (ret < 0)
		return ret;
	tracing_buffer_floor(&a->t);
	/* The threads read whole sub-buffers: take the size the buffer has now. */
	ret = tracing_reread_geometry(&a->t);
	if (ret < 0)
		return ret;
	/* When the threads wake (never 0: a blocking splice spins with it on Debian 6.1). */
	if (tracing_read(&a->t, "buffer_percent", val, sizeof(val)) <= 0 ||
	    (unsigned int)atoi(val) != a->o->buffer_percent) {
		snprintf(val, sizeof(val), "%u", a->o->buffer_percent);
		ret = tracing_write(&a->t, "buffer_percent", val);
		if (ret < 0)
			return ret;
	}
	/* Hold: the ring keeps the newest events, overwriting the oldest (put back at the end). */
	if (hold) {
		ret = tracing_write(&a->t, "options/overwrite", "1");
		if (ret < 0)
			return ret;
	}
	a->cpus = calloc(a->t.nr_cpus, sizeof(*a->cpus));
	if (!a->cpus)
		return -ENOMEM;
	for (cpu = 0; cpu < a->t.nr_cpus; cpu++) {
		char name[PATH_MAX], path[PATH_MAX];
		struct ports p = a->o->ports;

		snprintf(name, sizeof(name), "%s%u", p.prefix, cpu);
		if (ports_find(&p, name, path, sizeof(path)) < 0) {
			log_warn("cpu%u has no data port %s: its events are not streamed", cpu, name);
			continue;
		}
		ret = cpu_start(&a->cpus[a->nr_streams], &a->t, &p, cpu, a->done_fd, hold);
		if (ret < 0) {
			log_err("cpu%u: cannot start: %s", cpu, strerror(-ret));
			goto err;
		}
		if (a->o->no_splice)
			a->cpus[a->nr_streams].use_read = true;
		cpu_set_flush(&a->cpus[a->nr_streams], a->flush_ms);
		a->nr_streams++;
	}
	if (!a->nr_streams) {
		ret = -ENODEV;
		goto err;
	}
	tracing_record_comms(&a->t);
	ret = tracing_on(&a->t, true);
	if (ret < 0)
		goto err;
	read_steal(a, true);
	/* A held ring overwrites and is not drained: nothing to grow it for. */
	a->ring_kb = hold ? 0 : a->budget_kb;
	ring_begin(&a->t, a->cpus, a->nr_streams, a->ring_kb);
	a->ring_next = agent_now_ns();
	a->running = true;
	a->resumes = 0;
	log_info("%s %u CPUs from %s, %u-byte sub-buffers", hold ? "holding" : "streaming",
		 a->nr_streams, a->t.dir, a->t.subbuf_size);
	return 0;
err:
	stop_threads(a, true);
	join_threads(a);
	return ret;
}

static void stop(struct agent *a, uint32_t seq)
{
	tracing_on(&a->t, false);
	read_steal(a, false);
	a->running = false;
	a->stopping = true;
	a->stop_seq = seq;
	stop_threads(a, false);
}

static int send_stats(struct agent *a, bool last)
{
	struct vt_proto_stats st = { .cpu = VT_PROTO_CPU_ALL, .text = "" };
	static char text[VT_PROTO_MAX_TEXT];
	unsigned int i;
	int ret;

	for (i = 0; i < a->nr_streams; i++) {
		struct cpu_stream *s = &a->cpus[i];
		struct vt_proto_stats c = {
			.cpu = s->cpu,
			.pages = atomic_load(&s->pages),
			.bytes = atomic_load(&s->bytes),
			.splice_fallbacks = atomic_load(&s->fallbacks),
			.partial_reads = atomic_load(&s->partial_reads),
			.text = text,
		};

		if (tracing_cpu_stats(&a->t, s->cpu, text, sizeof(text) - 1) < 0)
			text[0] = '\0';
		/* While streaming, the steal so far; once stopped, up to the STOP. */
		if (a->running)
			read_steal(a, false);
		steal_text(s, text, sizeof(text) - 1);
		ring_text(s, a->ring_kb, text, sizeof(text) - 1);
		ret = send_frame(a, vt_proto_enc_stats(frame(a), VT_PROTO_FRAME_MAX, next_seq(a), &c));
		if (ret < 0)
			return ret;
		st.pages += c.pages;
		st.bytes += c.bytes;
		st.splice_fallbacks += c.splice_fallbacks;
		st.partial_reads += c.partial_reads;
	}
	st.flags = last ? VT_PROTO_STATS_LAST : 0;
	/* For every CPU: what this session's metadata bundles cost this thread (a newer agent's). */
	snprintf(text, sizeof(text), "meta_cpu_us: %llu\n", (unsigned long long)(a->meta_cpu_ns / 1000));
	st.text = text;
	return send_frame(a, vt_proto_enc_stats(frame(a), VT_PROTO_FRAME_MAX, next_seq(a), &st));
}

/*
 * A data thread that exited on an error (the port went away, a write
 * failed): tell the host, unasked, once per CPU. Its byte count stops at
 * what the port took, and the host names the CPU and the error.
 */
static void tell_failed(struct agent *a)
{
	unsigned int i;

	if (!a->conn)
		return;
	for (i = 0; i < a->nr_streams; i++) {
		struct cpu_stream *s = &a->cpus[i];

		if (!atomic_load(&s->done) || !s->error || s->error_told)
			continue;
		s->error_told = true;
		reply_err(a, 0, s->error, "cpu%u: data path failed after %llu bytes: %s", s->cpu,
			  (unsigned long long)atomic_load(&s->bytes), strerror(-s->error));
	}
}

/* Called when every data thread has exited after a STOP. */
static void finish_stop(struct agent *a)
{
	uint32_t seq;

	a->stopping = false;
	send_stats(a, true);
	/* A legacy stop has seq 0: a legacy host ignores the frames anyway. */
	seq = next_seq(a);
	send_frame(a, vt_proto_enc_ack(frame(a), VT_PROTO_FRAME_MAX, VT_PROTO_STOPPED, seq,
				       a->stop_seq));
	join_threads(a);
	log_info("stopped: every CPU drained");
}

/*
 * META chunks as the bytes come: filled up to VT_PROTO_META_CHUNK_MAX, then
 * sent once more bytes follow, so the last chunk is never empty. @total is
 * the whole length, announced in every chunk; or, for an open bundle,
 * VT_PROTO_META_OPEN in every chunk but the last, and no more than @max bytes.
 */
struct chunker {
	struct agent *a;
	uint64_t total, off, max;
	size_t fill;
	bool open, broken;	/* broken: a send failed, nobody hears an ERROR */
	bool over;		/* an open bundle went over @max */
	uint8_t buf[VT_PROTO_META_CHUNK_MAX];
};

static int chunk_flush(struct chunker *ch, bool last)
{
	struct vt_proto_meta_chunk c = { .total = ch->total, .offset = ch->off, .data = ch->buf,
					 .len = ch->fill };
	struct agent *a = ch->a;
	int ret;

	if (ch->open)
		c.total = last ? ch->off + ch->fill : VT_PROTO_META_OPEN;
	ret = send_frame(a, vt_proto_enc_meta(frame(a), VT_PROTO_FRAME_MAX, next_seq(a), &c));
	ch->broken = ret < 0;
	ch->off += ch->fill;
	ch->fill = 0;
	return ret;
}

static int chunk_emit(void *ctx, const void *data, size_t len)
{
	struct chunker *ch = ctx;
	const uint8_t *p = data;

	if (ch->open && len > ch->max - ch->off - ch->fill) {
		ch->over = true;
		return -EFBIG;
	}
	while (len) {
		size_t n = sizeof(ch->buf) - ch->fill;
		int ret;

		if (!n) {
			ret = chunk_flush(ch, false);
			if (ret < 0)
				return ret;
			n = sizeof(ch->buf);
		}
		if (n > len)
			n = len;
		memcpy(ch->buf + ch->fill, p, n);
		ch->fill += n;
		p += n;
		len -= n;
	}
	return 0;
}

/* @total: the blob's length, or VT_PROTO_META_OPEN with at most @max bytes to come. */
static struct chunker *chunker_new(struct agent *a, uint64_t total, uint64_t max)
{
	struct chunker *ch = malloc(sizeof(*ch));

	if (ch)
		*ch = (struct chunker){ .a = a, .total = total, .max = max,
					.open = total == VT_PROTO_META_OPEN };
	return ch;
}

/* The last chunk (the only one of an empty blob), then the chunker is gone. */
static int chunker_end(struct chunker *ch, int ret)
{
	if (ret >= 0)
		ret = chunk_flush(ch, true);
	free(ch);
	return ret;
}

/*
 * A bundle (kallsyms: 4 MB on a Debian kernel) was read and freed: give the
 * memory back, or an idle agent keeps its size resident until it exits
 * (glibc keeps freed heap that other chunks pin).
 */
static void give_back(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

static int too_big(struct agent *a, uint32_t ref, uint64_t len, uint64_t max_total)
{
	return reply_err(a, ref, EFBIG, "metadata is %llu bytes, more than the %llu asked for",
			 (unsigned long long)len, (unsigned long long)max_total);
}

/*
 * Reading kallsyms is housekeeping (a fifth of a second of an emulated CPU,
 * usually while the guest records): the control thread does it at nice
 * META_NICE, so that the data threads and the guest's own work come first
 * and the recording loses nothing to it. Returns the nice value to put back.
 */
#define META_NICE	10

static int meta_nice_begin(void)
{
	int old;

	errno = 0;
	old = getpriority(PRIO_PROCESS, 0);	/* this thread's */
	if (errno)
		return INT_MIN;
	if (old < META_NICE && setpriority(PRIO_PROCESS, 0, META_NICE) < 0)
		return INT_MIN;
	return old;
}

static void meta_nice_end(int old)
{
	if (old != INT_MIN && setpriority(PRIO_PROCESS, 0, old) < 0)
		log_warn("cannot put the control thread's priority back to nice %d: %m", old);
}

/*
 * META: the bundle is encoded as it is sent, straight from what
 * vt_meta_load() read; kallsyms (4 MB on a Debian kernel) is never copied
 * whole. Asked with META_REQ_OPEN, the agent does not even hold it whole: it
 * goes out in pieces as /proc/kallsyms is read, and the bundle's length is
 * announced in its last chunk.
 */
static int send_meta_now(struct agent *a, uint32_t ref, uint64_t max_total, uint32_t req_flags,
			 uint64_t req_key)
{
	unsigned int flags = a->o->meta_flags;
	uint64_t kallsyms_at = 0, key = 0;
	struct chunker *ch;
	struct vt_meta m;
	int ret, kfd = -1;
	size_t len;

	ret = ensure_buffer(a);
	if (ret < 0)
		return reply_err(a, ref, ret, "cannot select the trace buffer");
	if (req_flags & VT_PROTO_META_REQ_NO_KALLSYMS)
		flags |= VT_META_NO_KALLSYMS;
	if (!(a->o->meta_flags & VT_META_NO_KALLSYMS)) {
		uint64_t mods = modules_hash();

		key = kallsyms_key(a, mods);
		if ((req_flags & VT_PROTO_META_REQ_KALLSYMS_IF_CHANGED) && a->kallsyms_sent &&
		    mods == a->kallsyms_modules)
			flags |= VT_META_NO_KALLSYMS;
		else if (key && req_key == key)
			flags |= VT_META_NO_KALLSYMS;	/* the host kept it: KALLSYMS_UNLESS_KEY */
		else
			kallsyms_at = mods;
	}
	if (!(flags & VT_META_NO_KALLSYMS) && (req_flags & VT_PROTO_META_REQ_OPEN)) {
		kfd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
		if (kfd < 0 && errno != ENOENT)
			return reply_err(a, ref, errno, "cannot open /proc/kallsyms");
		flags |= VT_META_NO_KALLSYMS;
	}
	ret = vt_meta_load(&m, a->t.root, a->t.instance, flags);
	if (ret < 0) {
		if (kfd >= 0)
			close(kfd);
		return reply_err(a, ref, ret, "cannot read the metadata from %s", a->t.root);
	}
	m.kallsyms_key = key;
	if (kfd >= 0) {
		ch = chunker_new(a, VT_PROTO_META_OPEN, max_total);
		ret = ch ? vt_meta_encode_fd(&m, kfd, chunk_emit, ch, NULL) : -ENOMEM;
		close(kfd);
		if (ret == 0) {
			ret = chunker_end(ch, 0);
			if (ret >= 0) {
				a->kallsyms_sent = true;
				a->kallsyms_modules = kallsyms_at;
			}
		} else {
			/* Chunks may have gone: the ERROR tells the host to drop them. */
			if (ch && ch->over)
				ret = reply_err(a, ref, EFBIG, "metadata is over the %llu bytes asked for",
						(unsigned long long)max_total);
			else if (!(ch && ch->broken))
				ret = reply_err(a, ref, ret, "cannot send the metadata with /proc/kallsyms");
			free(ch);
		}
		vt_meta_free(&m);
		give_back();
		return ret;
	}
	ret = vt_meta_encode_to(&m, NULL, NULL, &len);
	ch = ret < 0 || len > max_total ? NULL : chunker_new(a, len, len);
	if (ret == 0 && len > max_total) {
		ret = too_big(a, ref, len, max_total);
	} else if (ret < 0 || !ch) {
		ret = reply_err(a, ref, ret < 0 ? ret : ENOMEM, "cannot encode the metadata");
	} else {
		ret = chunker_end(ch, vt_meta_encode_to(&m, chunk_emit, ch, NULL));
		if (ret >= 0 && m.kallsyms.len) {
			a->kallsyms_sent = true;
			a->kallsyms_modules = kallsyms_at;
		}
	}
	vt_meta_free(&m);
	give_back();
	return ret;
}

/* The calling thread's CPU time, ns (0 if the clock cannot be read). */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* send_meta_now() at nice META_NICE; its CPU time counts in the STATS (meta_cpu_us). */
static int send_meta(struct agent *a, uint32_t ref, uint64_t max_total, uint32_t req_flags,
		     uint64_t req_key)
{
	int old = meta_nice_begin(), ret;
	uint64_t t0 = thread_cpu_ns(), t1;

	ret = send_meta_now(a, ref, max_total, req_flags, req_key);
	t1 = thread_cpu_ns();
	if (t0 && t1 > t0)
		a->meta_cpu_ns += t1 - t0;
	meta_nice_end(old);
	return ret;
}

/* @blob (freed here) in META chunks, or an ERROR when it is over @max_total. */
static int send_chunks(struct agent *a, uint32_t ref, void *blob, size_t len, uint64_t max_total)
{
	struct chunker *ch;
	int ret;

	if (len > max_total) {
		free(blob);
		return too_big(a, ref, len, max_total);
	}
	ch = chunker_new(a, len, len);
	ret = ch ? chunker_end(ch, chunk_emit(ch, blob, len)) : reply_err(a, ref, ENOMEM, "out of memory");
	free(blob);
	give_back();
	return ret;
}

/* LASTBOOT_REQ: the previous boot's trace of a boot-mapped instance, as META chunks. */
static int handle_lastboot(struct agent *a, const struct vt_proto_msg *msg)
{
	const char *name;
	size_t len;
	void *blob;
	int ret;

	ret = vt_proto_dec_string(msg, &name);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "malformed LASTBOOT_REQ");
	if (a->running || a->stopping)
		return reply_err(a, msg->seq, EBUSY, "stop before asking for the last boot's trace");
	ret = lastboot_bundle(&a->t, name, a->o->meta_flags, &blob, &len);
	if (ret == -ENOENT)
		return reply_err(a, msg->seq, ret, "no boot-mapped instance %s (boot with reserve_mem=SIZE:4096:%s "
				 "trace_instance=%s^traceoff@%s, Linux 6.12 or later)", name, name, name, name);
	if (ret == -ENODATA)
		return reply_err(a, msg->seq, ret, "instance %s holds nothing from the last boot "
				 "(it records this boot now)", name);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "cannot read the last boot's trace from %s", name);
	return send_chunks(a, msg->seq, blob, len, VT_PROTO_META_MAX_TOTAL);
}

/*
 * A clock-probe burst is a mode of the main loop, not a loop of its own:
 * SYNC_BEGIN pins the control thread to the probed CPU, each SYNC_PROBE is
 * answered with the TSC as soon as the main loop sees it, and SYNC_END, any
 * other message, the host going away or SYNC_PROBE_TIMEOUT_NS without a
 * probe end it. For SYNC_SPIN_NS after a probe the main loop polls without
 * sleeping: a responder woken from a sleep showed a ~20 us systematic error
 * (wake-up asymmetry), and the next probe of a burst comes within a round
 * trip. Otherwise it sleeps in poll() like at any other time.
 */
static void burst_begin(struct agent *a, uint32_t cpu)
{
	cpu_set_t set;
	int i;

	if (!a->burst && sched_getaffinity(0, sizeof(a->affinity), &a->affinity) < 0) {
		CPU_ZERO(&a->affinity);
		for (i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &a->affinity);
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		log_warn("sync: cannot run on cpu%u: %m; replies will say where they ran", cpu);
	a->burst = true;
	a->burst_last = agent_now_ns();
}

static void burst_end(struct agent *a)
{
	if (!a->burst)
		return;
	a->burst = false;
	if (sched_setaffinity(0, sizeof(a->affinity), &a->affinity) < 0)
		log_warn("sync: cannot restore the CPU affinity: %m");
}

/* How long the main loop may sleep: -1 (no limit), or ms; ends a burst that timed out. */
static int burst_timeout(struct agent *a)
{
	long long idle;

	if (!a->burst)
		return -1;
	idle = agent_now_ns() - a->burst_last;
	if (idle >= SYNC_PROBE_TIMEOUT_NS) {
		log_warn("sync: no probe for %lld ms, burst abandoned", idle / 1000000);
		burst_end(a);
		return -1;
	}
	if (idle < SYNC_SPIN_NS)
		return 0;
	return (int)((SYNC_PROBE_TIMEOUT_NS - idle + 999999) / 1000000);
}

/* The TSC for a probe; a read that straddled a migration is retried. */
static void answer_probe(struct agent *a, struct vt_proto_sync *s)
{
	int tries = 0;

	while (vt_tsc_read_cpu(&s->tsc, &s->ran_on) == -EAGAIN && ++tries < 8)
		;
	send_frame(a, vt_proto_enc_sync(frame(a), VT_PROTO_FRAME_MAX, VT_PROTO_SYNC_REPLY,
					next_seq(a), s));
	if (a->burst)
		a->burst_last = agent_now_ns();
}

static int handle_events(struct agent *a, const struct vt_proto_msg *msg)
{
	static struct vt_proto_event ev[VT_PROTO_MAX_EVENTS];
	unsigned int i, matched, total = 0;
	uint32_t flags;
	int n, ret;

	n = vt_proto_dec_events(msg, &flags, ev, VT_PROTO_MAX_EVENTS);
	if (n < 0)
		return reply_err(a, msg->seq, n, "malformed EVENTS");
	ret = ensure_buffer(a);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "cannot select the trace buffer");
	if (flags & VT_PROTO_EVENTS_REPLACE)
		tracing_disable_all(&a->t);
	for (i = 0; i < (unsigned int)n; i++) {
		ret = tracing_enable(&a->t, ev[i].system, ev[i].event, ev[i].filter, &matched);
		if (ret == -ENOENT) {
			char hint[VT_SUGGEST_MAX * VT_SUGGEST_NAME_MAX + 32];

			tracing_suggest_event(&a->t, ev[i].system, ev[i].event, hint, sizeof(hint));
			return reply_err(a, msg->seq, ret, "no event matches %s:%s%s%s", ev[i].system,
					 ev[i].event, *hint ? "; " : "", hint);
		}
		if (ret == -EINVAL)
			return reply_err(a, msg->seq, ret, "the kernel refused filter \"%s\" on %s:%s",
					 ev[i].filter, ev[i].system, ev[i].event);
		if (ret < 0)
			return reply_err(a, msg->seq, ret, "cannot enable %s:%s", ev[i].system,
					 ev[i].event);
		total += matched;
	}
	log_info("%u events enabled in %s", total, a->t.dir);
	return reply_ok(a, msg->seq);
}

static int handle_instance(struct agent *a, const struct vt_proto_msg *msg)
{
	const char *name;
	int ret;

	ret = vt_proto_dec_instance(msg, &name);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "malformed INSTANCE");
	if (a->running || a->stopping)
		return reply_err(a, msg->seq, EBUSY, "cannot change the buffer while streaming");
	if (a->have_buffer) {
		tracing_restore(&a->t);
		a->have_buffer = false;
	}
	free(a->instance);
	a->instance = name ? strdup(name) : NULL;
	a->instance_set = true;
	ret = ensure_buffer(a);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "cannot use the %s buffer", name ? name : "top-level");
	return reply_ok(a, msg->seq);
}

static int handle_config(struct agent *a, const struct vt_proto_msg *msg)
{
	char hint[VT_SUGGEST_MAX * VT_SUGGEST_NAME_MAX + 32];
	struct vt_proto_buffer_size bs;
	const char *s;
	char used[64];
	int ret;

	if (a->running || a->stopping)
		return reply_err(a, msg->seq, EBUSY, "stop before changing %s",
				 vt_proto_type_name(msg->type));
	ret = ensure_buffer(a);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "cannot select the trace buffer");
	switch (msg->type) {
	case VT_PROTO_TRACER:
		ret = vt_proto_dec_string(msg, &s);
		if (ret < 0)
			return reply_err(a, msg->seq, ret, "malformed TRACER");
		ret = tracing_set_tracer(&a->t, s);
		if (ret == -EINVAL)
			return reply_err(a, msg->seq, ret, "tracer %s needs the top-level buffer", s);
		if (ret == -ENOENT) {
			tracing_suggest_tracer(&a->t, s, hint, sizeof(hint));
			return reply_err(a, msg->seq, ret, "tracer %s is not available%s%s", s,
					 *hint ? "; " : "", hint);
		}
		if (ret < 0)
			return reply_err(a, msg->seq, ret, "tracer %s is not available", s);
		break;
	case VT_PROTO_CLOCK:
		ret = vt_proto_dec_string(msg, &s);
		if (ret < 0)
			return reply_err(a, msg->seq, ret, "malformed CLOCK");
		ret = tracing_set_clock(&a->t, s, used, sizeof(used));
		if (ret < 0) {
			if (*s)
				tracing_suggest_clock(&a->t, s, hint, sizeof(hint));
			return reply_err(a, msg->seq, ret, "trace clock %s is not offered by this kernel%s%s",
					 *s ? s : "x86-tsc", *s && *hint ? "; " : "", *s ? hint : "");
		}
		break;
	case VT_PROTO_BUFFER_SIZE:
		ret = vt_proto_dec_buffer_size(msg, &bs);
		if (ret < 0)
			return reply_err(a, msg->seq, ret, "malformed BUFFER_SIZE");
		ret = tracing_set_buffer_kb(&a->t, bs.size_kb, bs.subbuf_kb);
		if (ret < 0)
			return reply_err(a, msg->seq, ret, "cannot set the buffer to %u KiB (sub-buffer %u KiB)",
					 bs.size_kb, bs.subbuf_kb);
		break;
	}
	return reply_ok(a, msg->seq);
}

static uint64_t capabilities(struct agent *a)
{
	uint64_t caps = VT_PROTO_CAP_META | VT_PROTO_CAP_INSTANCES | VT_PROTO_CAP_LASTBOOT |
			VT_PROTO_CAP_META_FLAGS | VT_PROTO_CAP_META_OPEN |
			VT_PROTO_CAP_KALLSYMS_KEY | VT_PROTO_CAP_FLUSH | VT_PROTO_CAP_RESUME |
			VT_PROTO_CAP_HOLD | VT_PROTO_CAP_WATCH | VT_PROTO_CAP_BUFFER_BUDGET;
	struct tracing probe = a->t;
	char path[PATH_MAX];

	/* Probe the top level: it lists every clock and tracer. */
	probe.dir = a->t.root;
	if (tracing_has_clock(&probe, "x86-tsc"))
		caps |= VT_PROTO_CAP_X86_TSC | (vt_tsc_read() ? VT_PROTO_CAP_SYNC_TSC : 0);
	if (tracing_has_tracer(&probe, "mmiotrace"))
		caps |= VT_PROTO_CAP_MMIOTRACE;
	snprintf(path, sizeof(path), "%s/buffer_subbuf_size_kb", a->t.root);
	if (access(path, W_OK) == 0)
		caps |= VT_PROTO_CAP_SUBBUF;
	return caps;
}

/*
 * "trace-agent VERSION (Linux RELEASE)": the kernel's release rides in the
 * free text of HELLO_REPLY, so that `virtio-trace-collect list` can say
 * which kernel a guest runs without fetching the metadata.
 */
static const char *software(void)
{
	static char text[sizeof("trace-agent " PACKAGE_VERSION " (Linux )") + 65];
	struct utsname u;

	if (!text[0]) {
		if (uname(&u) == 0)
			snprintf(text, sizeof(text), "trace-agent %s (%s %.64s)", PACKAGE_VERSION,
				 u.sysname, u.release);
		else
			snprintf(text, sizeof(text), "trace-agent %s", PACKAGE_VERSION);
	}
	return text;
}

static int handle_hello(struct agent *a, const struct vt_proto_msg *msg)
{
	struct vt_proto_hello h, r = { 0 };
	uint16_t rev;
	int ret;

	ret = vt_proto_dec_hello(msg, &h);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "malformed HELLO");
	ret = vt_proto_hello_negotiate(&h, &rev);
	if (ret < 0)
		return reply_err(a, msg->seq, ret, "no common protocol revision (host %u..%u, agent %u..%u)",
				 h.rev_min, h.rev_max, VT_PROTO_REV_MIN, VT_PROTO_REV_MAX);
	r.rev_min = r.rev_max = rev;
	a->host_caps = h.caps;
	a->flush_ms = 0;	/* each host asks for its own */
	a->budget_kb = a->o->buffer_budget_kb;
	a->notices_sent = 0;
	notices_wanted(h.caps & VT_PROTO_CAP_NOTICE);
	r.caps = capabilities(a);
	r.nr_cpus = a->nr_cpus;
	r.subbuf_size = a->subbuf_size;
	r.clock = r.caps & VT_PROTO_CAP_X86_TSC ? "x86-tsc" : a->default_clock;
	r.software = software();
	a->hello_done = true;
	return send_frame(a, vt_proto_enc_hello(frame(a), VT_PROTO_FRAME_MAX, VT_PROTO_HELLO_REPLY,
						next_seq(a), &r));
}

/* The recorded buffer's trace clock: the bracketed word of its trace_clock. */
static void current_clock(struct agent *a, char *clock, size_t size)
{
	char buf[512], *b, *e;

	clock[0] = '\0';
	if (tracing_read(&a->t, "trace_clock", buf, sizeof(buf)) <= 0)
		return;
	b = strchr(buf, '[');
	e = b ? strchr(b, ']') : NULL;
	if (b && e && e - b - 1 < (long)size) {
		memcpy(clock, b + 1, e - b - 1);
		clock[e - b - 1] = '\0';
	}
}

/*
 * RESUME: a new host takes the session over (the guest moved, and the
 * collector on its new host connected). The session goes on untouched: the
 * answer is SESSION, then, while streaming, every CPU's STATS and the
 * agent's with LAST (what each stream carried so far), then a resume mark
 * in every data port, which tells the new host where its bytes stand.
 */
static int handle_resume(struct agent *a, const struct vt_proto_msg *msg)
{
	struct vt_proto_session ss = { .instance = "", .clock = "" };
	char clock[64];
	unsigned int i;
	int ret;

	if (vt_proto_dec_empty(msg) < 0)
		return reply_err(a, msg->seq, EBADMSG, "malformed RESUME");
	if (a->running) {
		current_clock(a, clock, sizeof(clock));
		ss.flags = VT_PROTO_SESSION_STREAMING;
		ss.nr_streams = a->nr_streams;
		ss.subbuf_size = a->t.subbuf_size;
		ss.nr_events = a->t.nr_enabled;
		ss.resume = ++a->resumes;
		ss.instance = a->t.instance ? a->t.instance : "";
		ss.clock = clock;
	} else if (a->stopping) {
		ss.flags = VT_PROTO_SESSION_STOPPING;
	}
	ret = send_frame(a, vt_proto_enc_session(frame(a), VT_PROTO_FRAME_MAX, next_seq(a), &ss));
	if (ret < 0 || !a->running)
		return ret;
	ret = send_stats(a, true);
	for (i = 0; i < a->nr_streams; i++)
		cpu_mark(&a->cpus[i], a->resumes);
	log_info("a new host took the session over (resume %llu): marking %u data ports",
		 (unsigned long long)a->resumes, a->nr_streams);
	return ret;
}
/* BUFFER_BUDGET: what the next recording's ring buffers may grow to (0: they stay). */
static void handle_budget(struct agent *a, const struct vt_proto_msg *msg)
{
	uint32_t kb;

	if (vt_proto_dec_budget(msg, &kb) < 0) {
		reply_err(a, msg->seq, EBADMSG, "malformed BUFFER_BUDGET");
		return;
	}
	if (a->running || a->stopping) {
		reply_err(a, msg->seq, EBUSY, "stop before changing BUFFER_BUDGET");
		return;
	}
	a->budget_kb = kb;
	reply_ok(a, msg->seq);
}

/* FLUSH: partial pages go out after that many ms (0: never). */
static void handle_flush(struct agent *a, const struct vt_proto_msg *msg)
{
	unsigned int i;
	uint32_t ms;

	if (vt_proto_dec_flush(msg, &ms) < 0) {
		reply_err(a, msg->seq, EBADMSG, "malformed FLUSH");
		return;
	}
	/* Taken at once by CPUs already streaming, too. */
	a->flush_ms = ms;
	for (i = 0; i < a->nr_streams; i++)
		cpu_set_flush(&a->cpus[i], ms);
	log_info("partial pages go out after %u ms%s", ms, ms ? "" : " (never)");
	reply_ok(a, msg->seq);
}

/* STOP, or the kernel tool's "0" line: the drain begins (STOPPED says when it is done). */
static void handle_stop(struct agent *a, const struct vt_proto_msg *msg)
{
	if (!msg->legacy && vt_proto_dec_empty(msg) < 0) {
		reply_err(a, msg->seq, EBADMSG, "malformed STOP");
		return;
	}
	if (!a->running) {
		if (!msg->legacy)
			reply_err(a, msg->seq, EALREADY, "not streaming");
		return;
	}
	stop(a, msg->seq);
}

/* MARKER: a line into the trace. */
static void handle_marker(struct agent *a, const struct vt_proto_msg *msg)
{
	const char *text;
	int ret;

	if (vt_proto_dec_string(msg, &text) < 0) {
		reply_err(a, msg->seq, EBADMSG, "malformed MARKER");
		return;
	}
	if (!a->have_buffer || (ret = tracing_marker(&a->t, text)) < 0)
		reply_err(a, msg->seq, a->have_buffer ? ret : ENODEV,
			  "cannot write the marker (is tracing on?)");
	else
		reply_ok(a, msg->seq);
}

/* START (or the kernel tool's "1" line): streaming, or with HOLD a flight recorder that sends at STOP. */
static void handle_start(struct agent *a, const struct vt_proto_msg *msg)
{
	uint32_t flags = 0;
	int ret;

	if (!msg->legacy && vt_proto_dec_start(msg, &flags) < 0) {
		reply_err(a, msg->seq, EBADMSG, "malformed START");
		return;
	}
	if (a->running || a->stopping) {
		if (!msg->legacy)
			reply_err(a, msg->seq, EBUSY, "already streaming");
		return;
	}
	/* The kernel tool's "1\n" streams the top level as the user set it up. */
	if (msg->legacy && !a->have_buffer && !a->instance_set) {
		a->instance_set = true;
		a->instance = NULL;
	}
	ret = start(a, flags & VT_PROTO_START_HOLD);
	if (msg->legacy) {
		if (ret < 0)
			log_err("legacy start failed: %s", strerror(-ret));
	} else if (ret < 0) {
		reply_err(a, msg->seq, ret, "cannot start streaming");
	} else {
		reply_ok(a, msg->seq);
	}
}

/* WATCH: the event goes into the watch's own instance, with the recorded buffer's clock. */
static void handle_watch(struct agent *a, const struct vt_proto_msg *msg)
{
	struct vt_proto_watch req;
	char clock[64], why[512];
	const char *inst;
	int ret;

	if (vt_proto_dec_watch(msg, &req) < 0) {
		reply_err(a, msg->seq, EBADMSG, "malformed WATCH");
		return;
	}
	if (a->have_buffer)
		current_clock(a, clock, sizeof(clock));
	else
		snprintf(clock, sizeof(clock), "%s", a->default_clock);
	/* Named after the recorded buffer: agents on one tracefs (tests) each have their own. */
	inst = a->instance_set ? a->instance : a->o->instance;
	ret = watch_start(&a->watch, a->t.root, inst ? inst : AGENT_DEFAULT_INSTANCE, &req, clock,
			  why, sizeof(why));
	if (ret < 0) {
		reply_err(a, msg->seq, ret, "watch %s:%s: %s", req.system, req.event, why);
		return;
	}
	log_info("watching %s%s%s: a TRIGGER at most every %u ms", a->watch.name,
		 req.filter[0] ? " if " : "", req.filter, req.interval_ms);
	reply_ok(a, msg->seq);
}

/* The watch's matches: a TRIGGER when one is due (watch.c rate-limits). */
static void send_trigger(struct agent *a)
{
	struct vt_proto_trigger t;

	/* In a probe burst the fd stays readable: read once it ends. */
	if (a->burst || watch_read(&a->watch, agent_now_ns(), &t) <= 0 || !a->conn ||
	    !a->hello_done)
		return;
	send_frame(a, vt_proto_enc_trigger(frame(a), VT_PROTO_FRAME_MAX, next_seq(a), &t));
}

static void handle(struct agent *a, const struct vt_proto_msg *msg)
{
	struct vt_proto_sync sync;
	uint64_t max_total;
	uint32_t meta_flags;
	uint64_t meta_key;

	log_debug("rx %s seq %u len %u%s", vt_proto_type_name(msg->type), msg->seq, msg->len,
		  msg->legacy ? " (legacy line)" : "");
	if (a->burst && msg->type != VT_PROTO_SYNC_PROBE && msg->type != VT_PROTO_SYNC_END &&
	    msg->type != VT_PROTO_SYNC_BEGIN) {
		/* It ends the burst, and is served as usual. */
		log_warn("sync: %s during a burst ends it", vt_proto_type_name(msg->type));
		burst_end(a);
	}
	/* Until HELLO, only HELLO, BYE and the kernel tool's lines make sense. */
	if (!a->hello_done && !msg->legacy && msg->type != VT_PROTO_HELLO &&
	    msg->type != VT_PROTO_BYE && msg->type != VT_PROTO_OK && msg->type != VT_PROTO_ERROR) {
		reply_err(a, msg->seq, EPROTO, "send HELLO first");
		return;
	}
	switch (msg->type) {
	case VT_PROTO_HELLO:
		handle_hello(a, msg);
		break;
	case VT_PROTO_EVENTS:
		handle_events(a, msg);
		break;
	case VT_PROTO_INSTANCE:
		handle_instance(a, msg);
		break;
	case VT_PROTO_LASTBOOT_REQ:
		handle_lastboot(a, msg);
		break;
	case VT_PROTO_TRACER:
	case VT_PROTO_CLOCK:
	case VT_PROTO_BUFFER_SIZE:
		handle_config(a, msg);
		break;
	case VT_PROTO_FLUSH:
		handle_flush(a, msg);
		break;
	case VT_PROTO_BUFFER_BUDGET:
		handle_budget(a, msg);
		break;
	case VT_PROTO_START:
		handle_start(a, msg);
		break;
	case VT_PROTO_STOP:
		handle_stop(a, msg);
		break;
	case VT_PROTO_MARKER:
		handle_marker(a, msg);
		break;
	case VT_PROTO_STATS_REQ:
		if (vt_proto_dec_empty(msg) < 0)
			reply_err(a, msg->seq, EBADMSG, "malformed STATS_REQ");
		else if (!a->have_buffer)
			reply_err(a, msg->seq, ENODEV, "no trace buffer selected yet");
		else
			send_stats(a, true);
		break;
	case VT_PROTO_META_REQ:
		if (vt_proto_dec_meta_req_key(msg, &max_total, &meta_flags, &meta_key) < 0)
			reply_err(a, msg->seq, EBADMSG, "malformed META_REQ");
		else
			send_meta(a, msg->seq, max_total, meta_flags, meta_key);
		break;
	case VT_PROTO_WATCH:
		handle_watch(a, msg);
		break;
	case VT_PROTO_RESUME:
		handle_resume(a, msg);
		break;
	case VT_PROTO_SYNC_BEGIN:
		if (vt_proto_dec_sync(msg, &sync) < 0 || sync.cpu >= a->nr_cpus) {
			reply_err(a, msg->seq, EBADMSG, "malformed SYNC_BEGIN or no such CPU");
			break;
		}
		/* Pinned before the OK: the first probe may follow it at once. */
		burst_begin(a, sync.cpu);
		reply_ok(a, msg->seq);
		break;
	case VT_PROTO_SYNC_END:
		burst_end(a);
		reply_ok(a, msg->seq);
		break;
	case VT_PROTO_SYNC_PROBE:
		/* Outside a burst too: answered, without pinning. */
		if (vt_proto_dec_sync(msg, &sync) == 0)
			answer_probe(a, &sync);
		break;
	case VT_PROTO_BYE:
		log_info("host said bye");
		/*
		 * The OK says the guest's tracing is as it was. All that is left
		 * may be the agent's own instance to remove (0.1 s under TCG,
		 * its events disabled with it): then the host need not wait for
		 * it. The top level (a tracer that took CPUs offline) or an
		 * instance that was there before is put back first.
		 */
		if (a->have_buffer && tracing_only_own(&a->t)) {
			reply_ok(a, msg->seq);
			end_session(a);
		} else {
			end_session(a);
			reply_ok(a, msg->seq);
		}
		if (a->o->once)
			a->quit = true;
		break;
	case VT_PROTO_OK:
	case VT_PROTO_ERROR:
		break;
	default:
		reply_err(a, msg->seq, EPROTO, "message type %u is not for the agent", msg->type);
		break;
	}
}

static void drain_parser(struct agent *a)
{
	struct vt_proto_msg msg;
	int r;

	while ((r = vt_conn_next(a->conn, &msg)) != 0) {
		if (r == 1) {
			handle(a, &msg);
			continue;
		}
		if (r == -EPROTO && msg.type) {
			reply_err(a, msg.seq, EPROTO, "unknown message type %u", msg.type);
			continue;
		}
		/* Garbage: say so once per run of it. */
		if (vt_conn_skipped(a->conn) != a->garbage_reported) {
			a->garbage_reported = vt_conn_skipped(a->conn);
			reply_err(a, 0, -r, "garbage on the control port (%llu bytes skipped so far)",
				  (unsigned long long)a->garbage_reported);
		}
	}
}

static void close_ctl(struct agent *a)
{
	int rfd, wfd;

	if (!a->conn)
		return;
	rfd = vt_conn_rfd(a->conn);
	wfd = vt_conn_wfd(a->conn);
	vt_conn_free(a->conn);
	a->conn = NULL;
	notices_wanted(true);
	if (wfd != rfd)
		close(wfd);
	close(rfd);
}

static int open_ctl(struct agent *a)
{
	int wfd = -1, ret;
	int fd = ports_open(&a->o->ports, a->o->ports.ctl_name, true, &wfd);

	if (fd < 0)
		return fd;
	a->conn = vt_conn_new(fd, wfd);
	if (!a->conn) {
		ret = -errno;
		if (wfd != fd)
			close(wfd);
		close(fd);
		return ret;
	}
	vt_conn_set_hook(a->conn, mark, a);
	a->garbage_reported = 0;
	a->hello_done = false;
	return 0;
}

/* The host went away: a stand-in socket is gone for good, a virtio port waits. */
static void host_gone(struct agent *a)
{
	burst_end(a);
	/* Its triggers would wait on a port nobody reads: the watch ends with the host. */
	watch_stop(&a->watch);
	if (a->o->ports.dir) {
		log_info("host closed the control port");
		end_session(a);
		close_ctl(a);
		if (a->o->once)
			a->quit = true;
	} else {
		/* A half frame from the old host must not prefix the next host's first. */
		vt_conn_reset_rx(a->conn);
	}
}

/*
 * An unconnected virtio port polls as HUP, so poll() cannot wait for the host.
 * virtio_console sends SIGIO to the port's owner when the host end connects
 * or goes (VIRTIO_CONSOLE_PORT_OPEN): sleep until then instead of waking
 * every HUP_BACKOFF_MS, with HOST_WAIT_MS as a fallback.
 */
#define HOST_WAIT_MS	5000

static void wait_host(struct agent *a, int limit_ms)
{
	struct pollfd p[2] = { { .fd = a->io_fd, .events = POLLIN },
			       { .fd = a->sig_fd, .events = POLLIN } };
	int fd = vt_conn_rfd(a->conn);
	struct pollfd c = { .fd = fd, .events = POLLIN };
	struct signalfd_siginfo si;
	int fl = fcntl(fd, F_GETFL);

	if (a->io_fd < 0 || fl < 0 || fcntl(fd, F_SETOWN, getpid()) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_ASYNC) < 0) {
		poll(NULL, 0, HUP_BACKOFF_MS);
		return;
	}
	while (read(a->io_fd, &si, sizeof(si)) > 0)
		;
	/* Armed now: a host that connected before this has no SIGIO to give. */
	if (poll(&c, 1, 0) == 1 && !(c.revents & POLLHUP))
		return;
	poll(p, 2, limit_ms >= 0 && limit_ms < HOST_WAIT_MS ? limit_ms : HOST_WAIT_MS);
}

/*
 * How long the main loop may sleep for the kept instance: -1 (no limit), or
 * ms until its keeping time is over; removes it once it is.
 */
static int keep_timeout(struct agent *a)
{
	long long left;

	if (!a->t.kept || !a->t.kept_idle)
		return -1;
	left = a->t.kept_idle + a->o->keep_s * 1000000000LL - agent_now_ns();
	if (left <= 0) {
		tracing_drop_kept(&a->t);
		return -1;
	}
	return (int)((left + 999999) / 1000000);
}

/* A data thread still has a resume mark to write (it is woken until it did). */
static bool marks_pending(struct agent *a)
{
	unsigned int k;

	for (k = 0; k < a->nr_streams; k++)
		if (atomic_load(&a->cpus[k].mark_req) && !atomic_load(&a->cpus[k].done))
			return true;
	return false;
}

/* Until ring_tick() looks again: while a recording streams and may grow, -1 otherwise. */
static int ring_timeout(struct agent *a)
{
	long long left;

	if (!a->running || !a->ring_kb)
		return -1;
	left = a->ring_next - agent_now_ns();
	return left > 0 ? (int)((left + 999999) / 1000000) : 0;
}

static void ring_due(struct agent *a)
{
	if (ring_timeout(a) == 0)
		a->ring_next = agent_now_ns() +
			       ring_tick(&a->t, a->cpus, a->nr_streams, a->ring_kb) * 1000000LL;
}

/* The shorter of two poll() timeouts, where -1 is none. */
static int min_timeout(int a, int b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/**
 * agent_run() - serve the control port until told to quit
 * @o: options
 *
 * Return: 0 for a clean exit (a signal, or bye with --once), or -errno.
 */
int agent_run(const struct agent_opts *o)
{
	static struct agent a;
	struct signalfd_siginfo si;
	struct pollfd pfd[4];
	sigset_t mask;
	int ret;

	a.o = o;
	a.watch.fd = -1;
	ret = tracing_mount(&a.t, o->tracefs);
	if (ret < 0)
		return ret;
	agent_log_hook = queue_notice;
	ret = tracing_geometry(&a.t, &a.nr_cpus, &a.subbuf_size, a.default_clock,
			       sizeof(a.default_clock));
	if (ret < 0) {
		log_err("cannot read the ring-buffer layout under %s: %s", o->tracefs, strerror(-ret));
		goto out_unmount;
	}
	ret = ports_wait(&o->ports, a.nr_cpus, o->wait_ms);
	if (ret < 0)
		goto out_unmount;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	a.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	/* SIGIO blocked in every thread (they inherit it) and read from a signalfd of its own. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGIO);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	a.io_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	a.done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (a.sig_fd < 0 || a.done_fd < 0) {
		ret = -errno;
		goto out_unmount;
	}
	notices.wake_fd = a.done_fd;
	log_info("ready: %u CPUs, %u-byte sub-buffers, control port %s", a.nr_cpus, a.subbuf_size,
		 o->ports.ctl_name);

	a.t.keep = o->keep_s > 0;
	a.budget_kb = o->buffer_budget_kb;	/* the kernel tool's "1" line has no HELLO */
	while (!a.quit) {
		int timeout = min_timeout(burst_timeout(&a), keep_timeout(&a)), n;
		unsigned int k;

		send_notices(&a);
		if (a.stopping || marks_pending(&a)) {
			for (k = 0; k < a.nr_streams; k++)
				cpu_rewake(&a.cpus[k]);
			timeout = min_timeout(timeout, CPU_REWAKE_MS);
		}

		if (!a.conn && (ret = open_ctl(&a)) < 0) {
			if (!o->ports.dir) {
				log_err("cannot open the control port: %s", strerror(-ret));
				goto out;
			}
			timeout = HUP_BACKOFF_MS;	/* the stand-in host is not listening yet */
		}
		pfd[0] = (struct pollfd){ .fd = a.sig_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = a.done_fd, .events = POLLIN };
		/* Unused slots have fd -1, which poll() skips. */
		pfd[2] = (struct pollfd){ .fd = a.conn ? vt_conn_rfd(a.conn) : -1, .events = POLLIN };
		pfd[3] = (struct pollfd){ .fd = a.watch.fd, .events = POLLIN };
		n = poll(pfd, 4, min_timeout(timeout, ring_timeout(&a)));
		if (n < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		ring_due(&a);
		if (n <= 0)
			continue;
		if (pfd[3].revents)
			send_trigger(&a);
		if (pfd[0].revents & POLLIN) {
			if (read(a.sig_fd, &si, sizeof(si)) == sizeof(si))
				log_info("signal %u: restoring tracefs and exiting", si.ssi_signo);
			break;
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t v;
			unsigned int i, done = 0;

			if (read(a.done_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_debug("done eventfd: %m");
			for (i = 0; i < a.nr_streams; i++)
				done += atomic_load(&a.cpus[i].done);
			tell_failed(&a);
			if (a.stopping && done == a.nr_streams)
				finish_stop(&a);
		}
		if (a.conn && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR))) {
			int r = vt_conn_read(a.conn);

			if (r > 0) {
				drain_parser(&a);
			} else if (r != -EAGAIN) {
				host_gone(&a);
				/* An unconnected virtio port polls as HUP: do not spin. */
				if (a.conn)
					wait_host(&a, keep_timeout(&a));
			}
		}
	}
	ret = 0;
out:
	/* Nobody will hear them now, and done_fd is closed below. */
	agent_log_hook = NULL;
	notices.wake_fd = -1;
	end_session(&a);
	tracing_drop_kept(&a.t);
	close_ctl(&a);
	close(a.sig_fd);
	if (a.io_fd >= 0)
		close(a.io_fd);
	close(a.done_fd);
out_unmount:
	agent_log_hook = NULL;
	notices.wake_fd = -1;
	tracing_unmount(&a.t);
	return ret;
}
