/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtio-trace-collect internals.
 *
 * record: attach.c opens each guest's ports, session.c drives its agent over
 * the control port, stream.c moves every data stream's pages into the spool
 * (one thread, io_uring), hostrec.c records host events in a private tracefs
 * instance through the same page path, spool.c keeps what a killed collector
 * leaves behind recoverable, and output.c turns a spool into trace.dat files
 * and manifest.json (recover runs only that last step).
 */
#ifndef COLLECT_H
#define COLLECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
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
extern volatile int collect_signals;	/* SIGINT/SIGTERM received so far */
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

/* --- a data stream: one guest vCPU port, or one host CPU --- */

struct guest;

/**
 * struct stream - one source of whole pages
 * @fd: what the engine reads (a FIFO, a socket, or a host pipe)
 * @label: "guest demo cpu1" or "host cpu0", for messages
 * @cpu: the CPU number in its trace
 * @g: the guest, NULL for a host stream
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
	struct guest *g;
	uint32_t subbuf;
	struct vt_page_fmt fmt;
	uint8_t *rbuf;
	size_t rcap;
	uint8_t *page;
	size_t have;
	int spool_fd;
	int bad_fd;
	int data_fd;
	uint64_t region;
	uint64_t data_len;
	uint64_t written_back;	/* region bytes whose writeback has been started */
	struct engine *engine;	/* the engine serving it (engine_add()), for writeback requests */
	char dir[4096];
	bool inflight;
	bool eof;
	bool closed;
	bool paused;
	/* figures */
	uint64_t bytes;		/* received from the guest */
	uint64_t bytes_session;	/* received since the last START */
	uint64_t pages;		/* good pages spooled */
	uint64_t events;	/* events in them */
	uint64_t bad_pages;	/* kept aside in cpuN.bad */
	uint64_t dropped_pages;	/* beyond --max-size */
	uint64_t missed_pages;	/* pages flagged "events lost before this one" */
	uint64_t lost_events;	/* lost counts stored in page headers */
	bool bad_logged;
	bool size_logged;	/* pages of another size than announced: said once */
};

int stream_init(struct stream *s, int fd, const char *label, unsigned int cpu,
		uint32_t subbuf, const char *spool_dir);
void stream_close(struct stream *s);
int stream_ingest(struct stream *s, const uint8_t *data, size_t len);
int stream_finish(struct stream *s);

/* The io_uring engine: one thread serves every stream and control port. */
struct engine;
struct engine *engine_new(unsigned int entries);
void engine_free(struct engine *e);
int engine_add(struct engine *e, struct stream *s);
int engine_add_ctl(struct engine *e, int fd, bool (*cb)(void *arg, int revents), void *arg);
void engine_remove_ctl(struct engine *e, int fd);
int engine_run(struct engine *e, int timeout_ms);
unsigned int engine_active(const struct engine *e);

/* --- a guest and its agent --- */

enum guest_state {
	G_NEW, G_READY, G_RUNNING, G_STOPPING, G_STOPPED, G_DONE, G_FAILED,
};

struct guest_sync {
	char method[16];	/* "kvm", "probe", "offset", "none" */
	char why[160];
	struct vt_tsync_cpu cpus[COLLECT_MAX_CPUS];	/* epochs per vCPU */
	uint64_t min_rtt[COLLECT_MAX_CPUS];		/* probes: smallest round trip, ticks */
	uint32_t samples[COLLECT_MAX_CPUS];
	uint64_t host_end;
};

/**
 * struct guest - one traced guest
 * @name: from --name, or the directory's base name ([A-Za-z0-9_.-], never a path)
 */
struct guest {
	char name[COLLECT_NAME_MAX];
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
	bool resync;			/* RESUME seen: sync again now */
	uint64_t stop_tsc;		/* host TSC when QEMU stopped it (QMP STOP) */
	uint64_t resume_tsc;		/* host TSC when QEMU resumed it (QMP RESUME) */
	uint32_t vcpu_tids[COLLECT_MAX_CPUS];
	unsigned int nr_vcpu_tids;
	/* control port */
	int ctl_rfd, ctl_wfd;
	struct vt_proto_parser *parser;
	uint32_t seq;
	uint8_t frame[VT_PROTO_FRAME_MAX];
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
	char error[512];
	uint64_t trace_id;
	char spool[4096];
	uint64_t max_bytes;
	bool max_reached;
	struct vt_proto_meta_rx meta_rx;
	bool meta_done;
	char stats_text[COLLECT_MAX_CPUS][2048];
	uint64_t agent_bytes[COLLECT_MAX_CPUS];
	uint64_t agent_pages[COLLECT_MAX_CPUS];
	uint64_t agent_fallbacks, agent_partial_reads;
	bool stats_last;
	uint32_t stop_seq;
	bool stopped_seen;
	/* waiting for a reply */
	uint32_t want_seq;
	uint16_t want_type;
	bool got_reply;
	int reply_err;
	char reply_text[512];
	uint64_t protocol_errors;
	struct guest_sync sync;
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
	bool top_level;
	double duration;
	char **command;
	uint64_t max_size;
	bool quiet;
	bool keep_spool;
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
size_t attach_discard_stale(int fd);

/* lastboot.c */
int lastboot_fetch(struct guest *g, struct engine *e, const struct collect_opts *o);

/* session.c */
int session_setup(struct guest *g, struct engine *e, const struct collect_opts *o);
int session_start(struct guest *g, struct engine *e);
int session_stop_send(struct guest *g);
int session_stop_wait(struct guest *g, struct engine *e, int timeout_ms);
int session_finish(struct guest *g, struct engine *e, const struct collect_opts *o);
int session_marker(struct guest *g, struct engine *e, const char *text);
int session_fetch_meta(struct guest *g, struct engine *e);
int session_req_ok(struct guest *g, struct engine *e, int len, const char *what);
int session_send(struct guest *g, int len, uint16_t type);
uint32_t session_next_seq(struct guest *g);
void session_feed(struct guest *g, const uint8_t *buf, size_t n,
		  void (*sync_cb)(void *arg, const struct vt_proto_msg *m), void *arg);
void collect_sanitize(char *dst, size_t size, const char *src, bool keep_newlines);
bool collect_name_ok(const char *s);
void session_fail(struct guest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void session_host_marker(bool tx, uint16_t type, uint32_t seq);

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
int sync_guest(struct guest *g, struct engine *e, const struct collect_opts *o, const char *when);
uint64_t sync_host_tsc(void);

/* qmp.c */
struct qmp;
int qmp_attach(struct guest *g, struct engine *e, uint64_t tsc_khz);
void qmp_detach(struct guest *g);

/* hostrec.c */
struct hostrec;
struct hostrec *hostrec_start(const struct collect_opts *o, struct engine *e, const char *spool);
int hostrec_marker(struct hostrec *h, const char *text);
int hostrec_stop(struct hostrec *h);
void hostrec_free(struct hostrec *h);
void hostrec_save_stats(struct hostrec *h);
extern struct hostrec *collect_hostrec;

/* spool.c */
int spool_prepare(const char *out_dir, char *spool, size_t size);
int spool_guest_dir(const char *spool, const char *name, char *dir, size_t size);
int spool_write_file(const char *dir, const char *name, const void *data, size_t len);
int spool_read_file(const char *dir, const char *name, void **data, size_t *len, size_t max);
int spool_save_state(const struct guest *g);
int spool_save_sync(const struct guest *g);
/* A trace's pages: one sparse file, CPU N's at N * region (SPOOL_REGION unless its layout says). */
#define SPOOL_REGION	(32ull << 30)
int spool_data_open(const char *dir, uint64_t *region);
int spool_data_len(int fd, uint64_t region, unsigned int cpu, uint64_t *len);
int spool_data_region(const char *dir, uint64_t *region);

/* output.c */
int output_finalise(const char *out_dir, const struct collect_opts *o, bool recovering);

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
int libvirt_parse_cpus_fast(const char *json, size_t len, uint32_t *tids, unsigned int max,
			    unsigned int *nr);

/* report.c, setup.c */
int report_main(int argc, char **argv);
int setup_main(int argc, char **argv);

#endif
