/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-trace-collect internals.
 *
 * record: engine.c is the one event loop (io_uring: streams, fd watches,
 * timers, signals) and nothing else waits. attach.c opens each guest's ports
 * (or listens for QEMU), session.c drives each guest's agent as a state
 * machine of its own over the control connection (lib/conn.c), stream.c
 * checks every data stream's pages into the spool, sync.c turns clock probes
 * or KVM's offsets into epochs, hostrec.c records host events in a private
 * tracefs instance through the same page path, and main.c holds the run's
 * timers and signals. spool.c alone knows the spool's files, which keep what
 * a killed collector leaves behind recoverable; output.c, inplace.c and
 * manifest.c turn a spool into trace.dat files and manifest.json (recover runs
 * only that last step). Calls go one way: main -> session -> stream, sync,
 * spool; stream and qmp tell their owner through callbacks.
 */
#ifndef COLLECT_H
#define COLLECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_proto.h"
#include "vt_tsync.h"

#define COLLECT_MAX_GUESTS	64
#define COLLECT_MAX_CPUS	256
#define COLLECT_MAX_EVENTS	256
#define COLLECT_MAX_HOST_PIDS	64
#define COLLECT_NAME_MAX	64

/* Exit status, documented in virtio-trace-collect(1). */
#define EXIT_OK		0	/* every guest recorded cleanly */
#define EXIT_FAIL	1	/* nothing usable was written */
#define EXIT_USAGE	2	/* bad command line */
#define EXIT_PARTIAL	3	/* files written, but a guest was dropped or reported problems */

extern int collect_quiet;
extern int collect_verbose;
void collect_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define L_ERR	3
#define L_WARN	4
#define L_INFO	6
#define L_DEBUG	7
#define log_err(...)	collect_log(L_ERR, __VA_ARGS__)
#define log_warn(...)	collect_log(L_WARN, __VA_ARGS__)
#define log_info(...)	collect_log(L_INFO, __VA_ARGS__)
#define log_debug(...)	collect_log(L_DEBUG, __VA_ARGS__)

/*
 * What a guest can make the collector say over and over is rate-limited per
 * guest and kind: the first COLLECT_LOG_BURST messages of a kind are printed,
 * the rest only counted; one summary line with the count follows when the
 * guest ends (session.c), and the count goes into the manifest's problems
 * (the agent's warnings, GMSG_AGENT_NOTICE: into its agent_warnings).
 */
#define COLLECT_LOG_BURST	5
enum guest_msg { GMSG_AGENT_ERROR, GMSG_SYNC, GMSG_AGENT_NOTICE, GMSG_NR };
#define guest_log(g, kind, level, ...)						\
	do {									\
		if (++(g)->msgs[kind] <= COLLECT_LOG_BURST)			\
			collect_log(level, __VA_ARGS__);			\
	} while (0)

/* --- a data stream: one guest vCPU port, or one host CPU --- */

struct engine;

/* Malformed pages kept per CPU as evidence (cpuN.bad); the rest are only counted. */
#define STREAM_BAD_KEEP		16

/**
 * struct stream_budget - what a guest may make the collector keep (--max-size),
 *	shared by its streams and its session
 * @max: bytes, 0 for no limit
 * @used: bytes taken: every good page, every malformed page (kept or only
 *	counted), trailing fragments and metadata bundles
 * @pages: of @used, good pages
 * @bad: of @used, malformed pages
 * @frag: of @used, trailing fragments
 * @meta: of @used, metadata bundles
 * @reached: something did not fit
 */
struct stream_budget {
	uint64_t max;
	uint64_t used;
	uint64_t pages, bad, frag, meta;
	bool reached;
};

enum stream_ev { STREAM_EV_ERROR, STREAM_EV_EOF, STREAM_EV_LIMIT };

/*
 * What cpuN.zst holds (zpre.c): the region's first @raw bytes (@pages pages
 * of @subbuf bytes, with @events, @missed_pages, @lost) as @file bytes of
 * zstd chunks.
 */
struct spool_zsum {
	uint64_t raw, file, pages, events, missed_pages, lost;
	uint32_t subbuf;
};

/**
 * struct zpre_stream - a stream's compression ahead (zpre.c)
 * @fd: cpuN.zst, -1 when not compressed ahead
 * @avail: region bytes written (the engine stores, the thread loads)
 * @woke: @avail when the thread was last woken for this stream
 * @sum: what cpuN.zst holds so far (@pages and @subbuf filled at the detach)
 * @on: attached; @busy: the thread is on it; @closing: being detached;
 *	@failed: stopped at @sum.raw (the finish does the rest)
 *
 * The thread alone writes @sum while @busy; the detach reads it after @busy
 * is clear, under the lock.
 */
struct zpre_stream {
	int fd;
	atomic_uint_fast64_t avail;
	uint64_t woke;
	struct spool_zsum sum;
	bool on, busy, closing, failed;
};

/**
 * struct stream - one source of whole pages
 * @fd: what the engine reads (a FIFO, a socket, or a host pipe)
 * @label: "guest demo cpu1" or "host cpu0", for messages
 * @cpu: the CPU number in its trace
 * @notify: tells @owner of errors, the end, and a used-up @budget
 * @page: a partial page carried between reads
 * @have: bytes in @page
 * @spool_fd: cpuN.pages in the spool; @bad_fd cpuN.bad, opened on first need
 * @data_fd: the trace's spool "data" file; this CPU's pages go to
 *	@cpu * @region + @data_len (see spool_data_open()), -1 until opened
 */
struct stream {
	int fd;
	char label[96];
	unsigned int cpu;
	void (*notify)(void *owner, struct stream *s, enum stream_ev ev, int err);
	void *owner;
	struct stream_budget *budget;
	uint32_t subbuf;
	struct vt_page_fmt fmt;
	uint8_t *page;
	size_t have;
	int spool_fd;
	int bad_fd;
	int data_fd;
	uint64_t region;
	uint64_t data_len;
	uint64_t written_back;	/* region bytes whose writeback has been started */
	struct engine *engine;	/* the engine serving it (engine_add()), for writeback requests */
	int dir;		/* the trace's spool directory (its owner's fd) */
	bool eof;
	bool closed;
	bool paused;
	bool eager;		/* read as soon as it is readable (being stopped): see engine.c's rest() */
	struct zpre_stream zp;	/* compression ahead of the finish (zpre.c) */
	/* figures */
	uint64_t bytes;		/* received from the guest */
	uint64_t bytes_session;	/* received since the last START */
	uint64_t pages;		/* good pages spooled */
	uint64_t events;	/* events in them */
	uint64_t bad_pages;	/* malformed: the first STREAM_BAD_KEEP kept in cpuN.bad */
	uint64_t bad_kept;	/* of them, in cpuN.bad */
	uint64_t dropped_pages;	/* beyond --max-size */
	uint64_t missed_pages;	/* pages flagged "events lost before this one" */
	uint64_t lost_events;	/* lost counts stored in page headers */
	bool bad_logged;
	bool size_logged;	/* pages of another size than announced: said once */
};

int stream_init(struct stream *s, int fd, const char *label, unsigned int cpu,
		uint32_t subbuf, int spool_dir);
void stream_close(struct stream *s);
int stream_ingest(struct stream *s, const uint8_t *data, size_t len);
int stream_finish(struct stream *s);
int stream_write_all(int fd, const void *buf, size_t len);
bool stream_budget_take(struct stream_budget *b, uint64_t len, uint64_t *what);
void stream_notify(struct stream *s, enum stream_ev ev, int err);

/* --- zpre.c: zstd chunks compressed while the pages stream in --- */
int zpre_start(int level);
void zpre_stop(void);
void zpre_attach(struct stream *s);
void zpre_publish(struct stream *s);
void zpre_detach(struct stream *s);

/* --- engine.c: one thread and one io_uring serve every stream, port and timer --- */

/**
 * struct engine_timer - a timer, embedded in its owner
 * @when: deadline, engine_now_ns() clock
 * @period: 0 for one shot
 * @cb: called when it fires
 * @arg: for @cb
 * @armed: in the engine's list
 */
struct engine_timer {
	uint64_t when;
	uint64_t period;
	void (*cb)(void *arg);
	void *arg;
	bool armed;
	struct engine_timer *next;
};
struct engine_fd;

#define NSEC_PER_MSEC	1000000ull
#define NSEC_PER_SEC	1000000000ull

uint64_t engine_now_ns(void);
struct engine *engine_new(unsigned int entries);
void engine_free(struct engine *e);
int engine_add(struct engine *e, struct stream *s);
struct engine_fd *engine_add_fd(struct engine *e, int fd, short events,
				bool (*cb)(void *arg, int revents), void *arg);
void engine_fd_enable(struct engine_fd *x, bool on);
void engine_fd_remove(struct engine_fd *x);
void engine_timer_init(struct engine_timer *t, void (*cb)(void *arg), void *arg);
void engine_timer_arm(struct engine *e, struct engine_timer *t, uint64_t delay_ns,
		      uint64_t period_ns);
void engine_timer_cancel(struct engine *e, struct engine_timer *t);
int engine_add_signals(struct engine *e, const sigset_t *mask, void (*cb)(void *arg, int signo),
		       void *arg);
void engine_writeback(struct engine *e, int fd, uint64_t off, uint64_t len);
int engine_run(struct engine *e, int timeout_ms);
int engine_loop(struct engine *e);
void engine_quit(struct engine *e);

/* --- a guest and its agent --- */

/*
 * Every guest goes through these on its own, driven by engine events:
 * attach, hello, configure (the last boot's trace, instance, clock, buffer,
 * tracer, events), meta, then running (START; its first clock sync runs while
 * it records), stopping (STOP sent), draining (STOPPED seen, pages still
 * arriving), finishing (final sync, metadata, bye), done; or failed at any
 * point.
 */
enum guest_state {
	G_NEW, G_HELLO, G_CONFIG, G_META, G_RUNNING, G_STOPPING, G_DRAINING,
	G_FINISHING, G_DONE, G_FAILED,
};

struct guest_sync {
	char method[16];	/* "kvm", "probe", "offset", "none" */
	char why[160];
	struct vt_tsync_cpu cpus[COLLECT_MAX_CPUS];	/* epochs per vCPU */
	uint64_t min_rtt[COLLECT_MAX_CPUS];		/* probes: smallest round trip, ticks */
	uint32_t samples[COLLECT_MAX_CPUS];
	uint64_t host_end;
	/* plausibility of probe replies (sync.c) */
	uint64_t last_g[COLLECT_MAX_CPUS];	/* the last accepted guest TSC per vCPU */
	uint32_t rejected;			/* bursts rejected as implausible */
	char reject_why[160];			/* the last reason */
	bool failed;				/* probes were due but a vCPU got no epoch */
	bool away[COLLECT_MAX_CPUS];		/* its last burst ran on other CPUs: offline */
};

struct guest;
struct collect_run;

/* One request in flight on a guest's control port, and what to do with its answer. */
struct guest_req {
	bool active;
	uint32_t seq;
	uint16_t type;			/* what was sent */
	uint16_t want;			/* VT_PROTO_OK or VT_PROTO_HELLO_REPLY */
	void (*done)(struct guest *g, int err);
	struct engine_timer timer;
	uint64_t sent_ns;		/* engine_now_ns() when sent, for -v */
};

/* A port QEMU connects to (--listen), watched until it did. */
struct guest_port {
	struct guest *g;
	unsigned int cpu;
	int lfd;
	struct engine_fd *watch;
	char base[4200];
};

/* A clock probe burst on one vCPU at a time, driven by replies and a timeout. */
struct guest_burst {
	bool active;
	bool req_pending;		/* SYNC_BEGIN not answered yet */
	const char *when;		/* "start", "interval", "resume", "stop" */
	unsigned int idx;		/* index into the guest's streams */
	uint32_t cpu, k, n, got;
	uint64_t t1;
	int64_t lo, hi;			/* the offsets this vCPU's replies allow so far */
	uint32_t since_narrowed;	/* replies since [lo, hi] last narrowed */
	struct vt_tsync_sample *smp;
	void (*done)(struct guest *g, int err);
	struct engine_timer timer;
	uint64_t sent_ns;		/* engine_now_ns() when sent, for -v */
};

/**
 * struct guest - one traced guest
 * @name: from --name, or the directory's base name ([A-Za-z0-9_.-], never a path)
 */
struct guest {
	char name[COLLECT_NAME_MAX];
	struct collect_run *run;
	/* how to reach it */
	char chardev_dir[4096];
	char ctl_path[4096];
	char *cpu_paths[COLLECT_MAX_CPUS];
	unsigned int nr_cpu_paths;
	bool listen;
	char domain[256];
	char connect_uri[1024];		/* --connect: the libvirt URI of @domain ("" default) */
	pid_t qemu_pid;
	char qmp_path[4096];		/* --qmp: follow STOP/RESUME */
	struct qmp *qmp;
	uint64_t stop_tsc;		/* host TSC when QEMU stopped it (QMP STOP) */
	uint64_t resume_tsc;		/* host TSC when QEMU resumed it (QMP RESUME) */
	bool resync;			/* RESUME seen: sync again as soon as it can */
	uint32_t vcpu_tids[COLLECT_MAX_CPUS];
	unsigned int nr_vcpu_tids;
	/* control port */
	int ctl_rfd, ctl_wfd;
	int ctl_lfd;			/* --listen: waiting for QEMU to connect, else -1 */
	struct guest_port *ports;	/* --listen: data ports QEMU has yet to connect */
	unsigned int nr_waiting;
	struct engine_timer accept_timer;
	struct vt_conn *conn;
	struct engine_fd *ctl_in, *ctl_out;
	uint64_t rx_tsc;		/* host TSC when the control port was last found readable */
	/* what the agent said */
	struct vt_proto_hello hello;
	char agent_software[128];
	char clock[64];
	uint64_t caps;
	unsigned int nr_cpus;
	uint32_t subbuf;
	/* streams, one per vCPU with a port */
	struct stream *streams;
	unsigned int nr_streams;
	/* state */
	enum guest_state state;
	unsigned int step;		/* where setup is (session.c) */
	bool recorded;			/* it started recording */
	bool synced;			/* and its clock sync after START is done */
	bool meta_partial;		/* the setup's metadata left kallsyms out */
	bool stop_deferred;		/* a stop came while the full metadata was on its way */
	uint64_t stop_ns;		/* engine_now_ns() when STOP was sent, for -v */
	bool meta_full;			/* the spooled bundle is a whole one (kallsyms as the agent has them) */
	bool kcache_tried;		/* kcache_key is what the cache had when first asked */
	uint64_t kcache_key;		/* the key of the cached kallsyms (0: none) */
	bool kcache_hit;		/* kallsyms came from the cache */
	uint32_t meta_req_flags;	/* of the META_REQ in flight (without OPEN, UNLESS_KEY) */
	uint64_t meta_key;		/* its KALLSYMS_UNLESS_KEY key, 0 if none */
	char error[512];
	char agent_error[512];		/* the agent's first unasked ERROR, "" if none */
	char agent_notice[512];		/* the agent's first NOTICE (a warning), "" if none */
	uint64_t trace_id;
	char spool[4096];		/* its spool directory, for messages ("" until made) */
	int spool_fd;			/* and its fd (spool_guest_dir()) */
	struct stream_budget budget;
	struct vt_proto_meta_rx meta_rx;
	uint64_t meta_len;		/* of the bundle spooled last */
	void (*meta_done)(struct guest *g, int err);
	char *stats_text[COLLECT_MAX_CPUS];
	uint64_t agent_bytes[COLLECT_MAX_CPUS];
	uint64_t agent_pages[COLLECT_MAX_CPUS];
	bool stats_last;
	uint32_t stop_seq;
	bool stopped_seen;
	struct guest_req req;
	struct guest_burst burst;
	struct engine_timer stop_timer;		/* --stop-timeout */
	struct engine_timer drain_timer;	/* checks the drain while stopping */
	struct engine_timer kvm_timer;		/* re-reads KVM's offsets */
	struct engine_timer sync_timer;		/* --sync-interval */
	char reply_text[512];
	uint64_t protocol_errors;
	struct guest_sync sync;
	uint64_t msgs[GMSG_NR];		/* guest_log(): messages of each kind */
	bool msgs_summed;		/* their summary line was printed */
};

/* --- options --- */

struct collect_opts {
	const char *out_dir;
	const char *events[COLLECT_MAX_EVENTS];
	unsigned int nr_events;
	const char *filters[COLLECT_MAX_EVENTS];
	const char *tracer;
	const char *host_events;
	pid_t host_pids[COLLECT_MAX_HOST_PIDS];	/* --host-pid: host events of these only */
	unsigned int nr_host_pids;
	const char *clock;
	unsigned int buffer_kb;
	unsigned int subbuf_kb;		/* --subbuf-size: the guest's sub-buffers, 0 to leave them */
	const char *last_boot;		/* --last-boot: the boot-mapped instance, or NULL */
	unsigned int file_version;
	bool compress;
	bool compress_at_end;		/* no compression while recording (zpre.c) */
	bool top_level;
	const char *kcache_dir;		/* --kallsyms-cache, or NULL for the default */
	bool no_kcache;			/* --no-kallsyms-cache */
	double duration;
	char **command;
	uint64_t max_size;
	bool quiet;
	bool keep_spool;
	bool force;		/* replace a recording already in out_dir */
	bool fsync;
	const char *sync;		/* auto, kvm, probe, offset, none */
	int64_t tsc_offset;
	bool have_tsc_offset;
	const char *debugfs;
	double sync_interval;
	double stop_timeout;
	unsigned int sync_probes;
	const char *tracefs;
	char cmdline[8192];
	int argc;
	char **argv;
};

/* attach.c */
int attach_guest(struct guest *g, const struct collect_opts *o);
void detach_guest(struct guest *g);
int attach_open_data(struct guest *g, unsigned int cpu, int *fd);
int attach_listen(const char *base);
int attach_accept(int lfd, const char *base, int *fd);
int attach_data_path(const struct guest *g, unsigned int cpu, char *base, size_t size);
size_t attach_discard_stale(int fd);

/* lastboot.c */
int lastboot_save(struct guest *g, const struct collect_opts *o);

/* session.c */
int session_begin(struct guest *g);
void session_stop(struct guest *g);
bool session_finished(const struct guest *g);
void session_release(struct guest *g);
void session_dispatch(struct guest *g);
const char *session_state_name(enum guest_state s);
void collect_sanitize(char *dst, size_t size, const char *src, bool keep_newlines);
bool collect_name_ok(const char *s);
bool collect_name_reserved(const char *s);
void session_fail(struct guest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *collect_msg_name(enum guest_msg kind);

/* sync.c */
/**
 * struct sync_tsc - the host TSC rate and the TSC2NSEC triple that goes with it
 * @khz: TSC ticks per millisecond
 * @mult: ns = (ticks * mult) >> shift
 * @shift: see @mult
 * @method: how @khz was obtained
 */
struct sync_tsc {
	uint64_t khz;
	uint32_t mult;
	uint32_t shift;
	char method[64];
};
void sync_tsc_rate(struct sync_tsc *t);
int sync_prepare(struct guest *g, const struct collect_opts *o, const char *when);
int sync_probe_result(struct guest *g, unsigned int cpu, const struct vt_tsync_sample *smp,
		      unsigned int n);
void sync_burst_done(struct guest *g, const char *when);
uint64_t sync_host_tsc(void);

/**
 * struct collect_run - what every guest of one `record` shares
 * @o: the options
 * @e: the engine
 * @host: the host recorder, NULL without --host-events
 * @tsc: the host TSC rate
 * @changed: called when a guest changed state in a way its owner may care
 *	about (started recording, finished, failed)
 */
struct collect_run {
	const struct collect_opts *o;
	struct engine *e;
	struct hostrec *host;
	int kcache_fd;			/* the kallsyms cache's directory, or -1 */
	struct sync_tsc tsc;
	void (*changed)(struct collect_run *r);
	void *arg;
};

/* qmp.c */
struct qmp;
/* What QMP tells the guest's owner: vCPU threads known (in g), a resume, a reset (@detail: why). */
enum qmp_ev { QMP_EV_CPUS, QMP_EV_RESUME, QMP_EV_RESET };
int qmp_attach(struct guest *g, struct engine *e, uint64_t tsc_khz,
	       void (*event)(struct guest *g, enum qmp_ev ev, const char *detail));
void qmp_detach(struct guest *g);

/* hostrec.c */
struct hostrec;
struct hostrec *hostrec_start(const struct collect_opts *o, struct engine *e, int spool_fd);
int hostrec_marker(struct hostrec *h, const char *text);
int hostrec_stop(struct hostrec *h);
void hostrec_free(struct hostrec *h);
void hostrec_save_stats(struct hostrec *h);
bool hostrec_drained(const struct hostrec *h);

/* spool.c: the one owner of the spool's files, names and keys (see its top comment) */

/* What ingest counted of a CPU's region (cpuN.sums). */
struct spool_sums {
	uint64_t len, pages, events, missed_pages, lost;
};

/**
 * struct spool_cpu - one CPU of a spooled trace
 * @agent_bytes: bytes the agent reported sent (its final STATS)
 * @agent_pages: pages likewise
 * @dropped: pages dropped beyond --max-size
 * @bad_pages: malformed pages seen at ingest (the first STREAM_BAD_KEEP are in cpuN.bad)
 * @frag_bytes: a trailing fragment kept aside (cpuN.frag)
 * @stats: the kernel's per_cpu stats text, sanitised, or NULL
 * @have_sums: @sums holds what ingest counted
 */
struct spool_cpu {
	uint64_t agent_bytes, agent_pages;
	uint64_t dropped;
	uint64_t bad_pages;
	uint64_t frag_bytes;
	char *stats;
	bool have_sums;
	struct spool_sums sums;
	bool have_zsum;
	struct spool_zsum zsum;
};

/**
 * struct spool_trace - everything the spool says about one trace (guest or host)
 *
 * Filled by spool_trace_load(); the collector writes the same files with
 * spool_save_state(), spool_save_agent(), spool_save_sync(), ...
 */
struct spool_trace {
	char name[COLLECT_NAME_MAX];
	bool host;
	bool have_state, have_agent, have_sync;
	uint64_t trace_id;
	unsigned int nr_cpus;
	uint32_t subbuf;
	char clock[64];
	char agent[128];
	char error[512];
	char agent_error[512];
	char agent_notice[512];
	uint64_t protocol_errors;
	bool max_reached;
	bool kcache_hit;		/* kallsyms came from the kallsyms cache */
	struct stream_budget budget;	/* max, used and its parts, as the state file says */
	uint64_t msgs[GMSG_NR];
	uint32_t sync_rejected;
	bool sync_failed;
	uint32_t tids[COLLECT_MAX_CPUS];
	unsigned int nr_tids;
	struct spool_cpu cpus[COLLECT_MAX_CPUS];
	char sync_method[16];
	char sync_why[160];
	uint64_t host_end;
	struct vt_tsync_cpu sync[COLLECT_MAX_CPUS];
	uint64_t min_rtt[COLLECT_MAX_CPUS];
	uint32_t samples[COLLECT_MAX_CPUS];
};

/* The run's options (.spool/options). */
struct spool_options {
	unsigned int version;
	bool compress;
	uint64_t host_trace_id;
	uint64_t tsc_khz;
	uint32_t tsc_mult, tsc_shift;
	char tsc_method[64];
	char cmdline[8192];
};

/* An in-place finish under way (the "inplace" marker): where each CPU's pages were. */
struct spool_inplace {
	uint64_t region, head, size0;
	unsigned int nr_cpus;
	uint64_t len[COLLECT_MAX_CPUS];
};

enum spool_cpu_file { SPOOL_CPU_PAGES, SPOOL_CPU_BAD, SPOOL_CPU_ZST };

int spool_open_dir(int dfd, const char *name);
int spool_prepare(int out_fd, int *spool_fd);
int spool_guest_dir(int spool_fd, const char *name, int *dir_fd);
int spool_create(int dfd, const char *name, int flags, bool stale);
int spool_write_file(int dir, const char *name, const void *data, size_t len);
int spool_write_file_mode(int dir, const char *name, const void *data, size_t len, mode_t mode);
int spool_replace_file(int dfd, const char *name, const char *tmp, const void *data, size_t len,
		       mode_t mode);
int spool_read_file(int dir, const char *name, void **data, size_t *len, size_t max);
int spool_save_options(int spool, const struct spool_options *o);
int spool_load_options(int spool, struct spool_options *o);
int spool_save_state(const struct guest *g);
int spool_save_sync(const struct guest *g);
int spool_save_agent(const struct guest *g);
int spool_save_stats(int dir, unsigned int cpu, const char *text);
int spool_save_sums(int dir, unsigned int cpu, const struct spool_sums *sums);
int spool_save_frag(int dir, unsigned int cpu, const void *data, size_t len);
int spool_save_meta(int dir, const void *data, size_t len);
int spool_encode_meta(int dir, const struct vt_meta *m);
int spool_load_meta(int dir, void **data, size_t *len);
int spool_save_inplace(int dir, const struct spool_inplace *m);
int spool_load_inplace(int dir, struct spool_inplace *m);
bool spool_has_inplace(int dir);
int spool_open_cpu(int dir, unsigned int cpu, enum spool_cpu_file kind, int flags);
int spool_save_zsum(int dir, unsigned int cpu, const struct spool_zsum *z);
void spool_remove_zst(int dir, unsigned int cpu);
int spool_scratch_open(int dir);
int spool_trace_load(int dir, bool host, struct spool_trace *t);
void spool_trace_free(struct spool_trace *t);
bool spool_trace_dir_name(const char *name);
int spool_remove(int out_fd, const char *out_dir);
/* A trace's pages: one sparse file, CPU N's at N * region (SPOOL_REGION unless its layout says). */
#define SPOOL_REGION	(32ull << 30)
int spool_data_open(int dir, uint64_t *region);
int spool_data_len(int fd, uint64_t region, unsigned int cpu, uint64_t *len);
int spool_data_region(int dir, uint64_t *region);
int spool_data_fd(int dir);
int spool_data_rename(int dir, int out_fd, const char *file);

/* --- kcache.c: guests' kallsyms kept between recordings of one boot --- */

int kcache_open(const char *dir, bool create);
int kcache_key(int dfd, const char *name, uint64_t *key);
int kcache_load(int dfd, const char *name, uint64_t key, struct vt_blob *out);
int kcache_store(int dfd, const char *name, uint64_t key, const struct vt_blob *ks);

/* output.c */
int output_open_dir(const char *out_dir, bool create, bool *created);
int output_previous(int out_fd, const char *out_dir, bool force);
int output_finalise(int out_fd, const char *out_dir, const struct collect_opts *o, bool recovering);

/* libvirt.c */
struct _virConnect;
/**
 * struct libvirt_setup - what `setup --domain` does to a persistent definition
 * @domain: the domain's name
 * @uri: the libvirt URI, NULL or "" for libvirt's default
 * @remove: take away what an earlier apply added, instead of adding
 * @unix_backend: unix channels (QEMU listens) instead of pipe FIFOs
 * @dir: where the chardevs live; "" with @unix_backend: paths libvirt chooses
 * @vcpus: set to the definition's vCPU count
 * @changed: set when the definition was redefined
 */
struct libvirt_setup {
	const char *domain;
	const char *uri;
	bool remove;
	bool unix_backend;
	char dir[4096];
	unsigned int vcpus;
	bool changed;
};
int libvirt_guest_resolve(struct guest *g, const char *uri);
int libvirt_guest_from_conn(struct _virConnect *conn, struct guest *g, const char *uri);
int libvirt_setup_run(struct libvirt_setup *s);
int libvirt_setup_conn(struct _virConnect *conn, struct libvirt_setup *s);
int libvirt_default_dir(char *buf, size_t len, const char *domain);
int collect_mkdirs(const char *dir);
int qmp_parse_cpus_fast(const char *json, size_t len, uint32_t *tids, unsigned int max,
			    unsigned int *nr);

/* report.c, setup.c */
int report_main(int argc, char **argv);
int setup_main(int argc, char **argv);

#endif
