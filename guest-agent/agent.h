/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * trace-agent internals: tracefs configuration (tracing.c), port discovery
 * (ports.c), the per-CPU data threads (cpu.c), the control loop (ctl.c) and
 * the log (log.c). main.c parses options and calls agent_run(); nothing calls
 * back into it.
 */
#ifndef AGENT_H
#define AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define AGENT_MAX_CPUS		1024
#define AGENT_PIPE_SIZE		(1 << 20)
/*
 * Data threads wake when the ring buffer is this full (buffer_percent). The
 * kernel's 50 wakes them late: in bench-peer (4 MiB buffers, 2 TCG vCPUs) a
 * paced writer lost events at 128 MiB/s per CPU with 50, none with 10, and
 * flat out carried 158 MB/s with 10 against 109 with 50.
 */
#define AGENT_BUFFER_PERCENT	10
#define AGENT_DEFAULT_INSTANCE	"virtio-trace"
/*
 * How long an instance the agent made outlives the recording, for the next
 * one (--keep-instance). On 6.1, which has no eventfs, making an instance
 * creates all 9576 files under events/ (90 ms of a TCG guest's CPU) and
 * removing it frees them again: 0.2 s of a 0.46 s paced session in
 * bench-peer. A kept instance costs that once; while it waits, put back as
 * it was made (no event on, nothing records into it), it holds its ring
 * buffer and about 9 MB of slab (6.1).
 */
#define AGENT_KEEP_INSTANCE_S	60
/*
 * A buffer not sized this session that holds less than AGENT_BUFFER_FLOOR_KB
 * per CPU is raised to AGENT_BUFFER_RAISE_KB (the kernel's default size) for
 * the session. The kernel keeps every buffer at a few KiB until its first use,
 * then expands it; but on 6.1 (not 6.12), once anything writes any
 * buffer_size_kb, it expands no buffer again. So a tool that sized an
 * instance of its own early in boot leaves the top level at 7 KiB per CPU,
 * and an mmiotrace session there lost 550-1286 of its first 12600 events
 * (the e1000 BAR's map among them).
 */
#define AGENT_BUFFER_FLOOR_KB	64
/* A stopping data thread not done yet is woken again this often (cpu_rewake()). */
#define CPU_REWAKE_MS		100
#define AGENT_BUFFER_RAISE_KB	1408

/*
 * Now, in ns of CLOCK_MONOTONIC_COARSE, for bounds that need no precision (a
 * sync burst's idle time, the kept instance's keeping time): the coarse clock
 * is read in the vDSO alone, where CLOCK_MONOTONIC on a TCG guest (HPET
 * clocksource) is a syscall and an emulated HPET read, in every empty pass of
 * a burst's busy loop.
 */
static inline long long agent_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* --- log.c: logging to stderr --- */
void agent_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define LOG_ERR_	3
#define LOG_WARN_	4
#define LOG_INFO_	6
#define LOG_DEBUG_	7
#define log_err(...)	agent_log(LOG_ERR_, __VA_ARGS__)
#define log_warn(...)	agent_log(LOG_WARN_, __VA_ARGS__)
#define log_info(...)	agent_log(LOG_INFO_, __VA_ARGS__)
#define log_debug(...)	agent_log(LOG_DEBUG_, __VA_ARGS__)
/* Or-ed into a level: the guest's log only, not agent_log_hook (the host hears it otherwise). */
#define LOG_LOCAL_	0x100
#define log_warn_local(...) agent_log(LOG_WARN_ | LOG_LOCAL_, __VA_ARGS__)
#define log_err_local(...) agent_log(LOG_ERR_ | LOG_LOCAL_, __VA_ARGS__)
extern int agent_verbose;
extern bool agent_quiet;
/* Called with each warning or error logged (not LOG_LOCAL_), from whichever thread logs it. */
extern void (*agent_log_hook)(int level, const char *text);

/* --- tracing.c: every change is recorded so that it can be put back --- */

struct saved_file;

/**
 * struct tracing - one trace buffer (the top level or a private instance)
 * @root: the tracefs mount
 * @dir: the buffer's directory (@root, or @root/instances/NAME)
 * @instance: instance name, NULL for the top-level buffer
 * @created: we created the instance this session and remove it at restore
 * @keep: keep an instance we create between sessions instead (@kept)
 * @kept: the instance directory we made and keep, or NULL; restored like any
 *	existing buffer, emptied when used again, removed by tracing_drop_kept()
 * @kept_idle: when @kept was last restored (agent_now_ns()), 0 in use
 * @own: the chosen buffer is an instance we made (@created, or @kept)
 * @mounted: we mounted tracefs at @root, so we unmount it
 * @nr_cpus: CPUs with a per_cpu directory
 * @subbuf_size: sub-buffer size from the buffer's own events/header_page
 * @sized: the host set buffer_size_kb this session
 */
struct tracing {
	char *root;
	char *dir;
	char *instance;
	bool created;
	bool keep;
	char *kept;
	long long kept_idle;
	bool own;
	bool mounted;
	unsigned int nr_cpus;
	unsigned int subbuf_size;
	struct saved_file *saved;
	unsigned int nr_saved;
	unsigned int nr_enabled;
	bool sized;
};

int tracing_mount(struct tracing *t, const char *root);
int tracing_use(struct tracing *t, const char *instance);
int tracing_reread_geometry(struct tracing *t);
int tracing_geometry(const struct tracing *t, unsigned int *nr_cpus, unsigned int *subbuf_size,
		     char *clock, size_t size);
int tracing_restore(struct tracing *t);
bool tracing_only_own(const struct tracing *t);
void tracing_drop_kept(struct tracing *t);
void tracing_unmount(struct tracing *t);
int tracing_write(struct tracing *t, const char *file, const char *value);
int tracing_write_file(const char *path, const char *value);
int tracing_read(const struct tracing *t, const char *file, char *buf, size_t size);
int tracing_set_clock(struct tracing *t, const char *clock, char *used, size_t size);
bool tracing_has_clock(const struct tracing *t, const char *clock);
bool tracing_has_tracer(const struct tracing *t, const char *tracer);
int tracing_set_tracer(struct tracing *t, const char *tracer);
int tracing_record_comms(struct tracing *t);
int tracing_set_buffer_kb(struct tracing *t, unsigned int kb, unsigned int subbuf_kb);
void tracing_buffer_floor(struct tracing *t);
int tracing_enable(struct tracing *t, const char *system, const char *event,
		   const char *filter, unsigned int *matched);
int tracing_disable_all(struct tracing *t);
void tracing_suggest_event(const struct tracing *t, const char *system, const char *event,
			   char *buf, size_t size);
void tracing_suggest_tracer(const struct tracing *t, const char *tracer, char *buf, size_t size);
void tracing_suggest_clock(const struct tracing *t, const char *clock, char *buf, size_t size);
int tracing_on(struct tracing *t, bool on);
int tracing_cpu_stats(const struct tracing *t, unsigned int cpu, char *buf, size_t size);
int tracing_marker(const struct tracing *t, const char *text);

/* --- ring-size.c and ring.c: each CPU's ring buffer grows with the burst it must hold --- */

/* A recording's CPUs are looked at this often, and this often while one is a quarter full. */
#define RING_TICK_MS		50
#define RING_BUSY_TICK_MS	10
/* The ring is sized to hold a burst this much longer than the one seen so far. */
#define RING_HORIZON_MS		1000
/* A port that took nothing for this long is not read: its CPU does not grow. */
#define RING_IDLE_PORT_MS	1000
/* Fill and drain rates are averaged over about this long (a look may come 10 ms after the last). */
#define RING_AVG_MS		100
/* A growth at least multiplies the size by this: each one stops the buffer a while. */
#define RING_MIN_GROWTH		2

/**
 * struct ring_in - what one look at a CPU measured
 * @cur_kb: its buffer_size_kb now
 * @room_kb: the most it may grow to: the budget less the other CPUs' buffers
 * @unread: bytes the ring holds that the port has not taken (its stats' bytes)
 * @fill_bps: bytes a second the kernel wrote into it since the last look
 * @drain_bps: bytes a second its port took
 * @lost: its stats' overrun grew since the last look
 * @port_idle: the port took nothing for RING_IDLE_PORT_MS
 * @page_bytes: data bytes in a kernel page (the sub-buffer less its header), 0: 4096
 */
struct ring_in {
	unsigned int cur_kb;
	unsigned int room_kb;
	uint64_t unread;
	uint64_t fill_bps;
	uint64_t drain_bps;
	bool lost;
	bool port_idle;
	unsigned int page_bytes;
};

enum ring_why {
	RING_KEEP,		/* it holds what is coming */
	RING_BURST,		/* the backlog would pass 3/4 of it within RING_HORIZON_MS */
	RING_OVERRUN,		/* the kernel overwrote events */
	RING_CAPPED,		/* it grew (or would) but the budget stops it */
	RING_PORT_IDLE,		/* it would, but the port takes nothing */
};

unsigned int ring_size_kb(const struct ring_in *in, enum ring_why *why);

/**
 * struct ring_cpu - one CPU's buffer as ring.c grows it (the main thread's)
 * @start_kb: its size at START: never less than that
 * @kb: its size now
 * @grows: times it grew
 * @capped: the budget stopped a growth
 * @why: the last growth's reason and figures
 *
 * The kernel stops the whole buffer while it resizes one CPU (trace.c,
 * __tracing_resize_ring_buffer(): tracing_stop_tr()): an event of any CPU
 * that comes then is refused, and no counter says so. @paused_us adds up
 * how long those writes took, the bound of that window.
 */
struct ring_cpu {
	unsigned int start_kb;
	unsigned int kb;
	unsigned int grows;
	bool capped;
	bool idle_said;
	uint64_t paused_us;	/* the resizes' time: the kernel records nothing then */
	long long last_ns, drained_ns;
	uint64_t last_sent, last_unread, last_overrun;
	uint64_t fill_bps, drain_bps;	/* averaged over about RING_AVG_MS */
	char why[160];
};

/* --- lastboot.c: the previous boot's trace of a boot-mapped instance --- */

int lastboot_bundle(const struct tracing *t, const char *name, unsigned int meta_flags,
		    void **blob, size_t *len);

/* --- ports.c --- */

/**
 * struct ports - where the agent's ports are
 * @dir: --port-dir stand-ins, or NULL for virtio-serial ports
 * @prefix: data port prefix ("trace-path-cpu")
 * @ctl_name: control port name ("agent-ctl-path")
 */
struct ports {
	const char *dir;
	const char *prefix;
	const char *ctl_name;
};

int ports_find(const struct ports *p, const char *name, char *path, size_t size);
int ports_wait(const struct ports *p, unsigned int nr_cpus, unsigned int timeout_ms);
int ports_open(const struct ports *p, const char *name, bool control, int *wfd);

/* --- cpu.c: one thread per CPU moves pages from trace_pipe_raw to its port --- */

/**
 * struct cpu_stream - one CPU's data path
 * @cpu: the CPU, and the port trace-path-cpu@cpu
 * @raw_fd: per_cpu/cpuN/trace_pipe_raw
 * @port_fd: the data port, non-blocking
 * @pipe: the 1 MiB pipe between the two splices
 * @wake_fd: eventfd, written to stop or abort the thread
 */
struct cpu_stream {
	unsigned int cpu;
	unsigned int subbuf_size;
	int raw_fd;
	int port_fd;
	int pipe[2];
	int wake_fd;
	int done_fd;		/* caller's eventfd, written once when the thread exits */
	pthread_t thread;
	atomic_bool done;
	bool running;
	atomic_bool stopping;	/* drain what is left, then exit */
	atomic_bool aborting;	/* exit now */
	bool use_read;		/* splice into the port failed: read() + write() */
	bool hold;		/* START's HOLD: nothing read until the stop's drain */
	char *buf;		/* one sub-buffer, for read() paths */
	int error;		/* the thread's, valid once done */
	bool error_told;	/* the host was sent it (main thread only) */
	atomic_uint_fast64_t pages;
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t fallbacks;
	atomic_uint_fast64_t partial_reads;
	atomic_uint flush_ms;	/* FLUSH: a partial page goes out when nothing whole came for this long */
	atomic_uint_fast64_t mark_req;	/* a RESUME's number: write a resume mark (0: none) */
	uint64_t marks;			/* marks written (the thread's) */
	uint64_t steal0, steal1;	/* /proc/stat steal ticks at START and at STOP */
	bool have_steal;		/* steal0 was read (the main thread's) */
	struct ring_cpu ring;		/* its buffer's size and growth (the main thread's) */
};

int cpu_start(struct cpu_stream *s, const struct tracing *t, const struct ports *p,
	      unsigned int cpu, int done_fd, bool hold);
void cpu_set_flush(struct cpu_stream *s, unsigned int ms);
void cpu_stop(struct cpu_stream *s);
void cpu_rewake(struct cpu_stream *s);
void cpu_abort(struct cpu_stream *s);
void cpu_mark(struct cpu_stream *s, uint64_t resume);
int cpu_join(struct cpu_stream *s);

/* ring.c, on the streams of a recording */
void ring_begin(struct tracing *t, struct cpu_stream *cpus, unsigned int nr, unsigned int budget_kb);
int ring_tick(struct tracing *t, struct cpu_stream *cpus, unsigned int nr, unsigned int budget_kb);
void ring_text(const struct cpu_stream *s, unsigned int budget_kb, char *text, size_t size);

#endif
