/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The spool (spool.c, its one owner): DIR/.spool/, everything a recording is
 * made from while it runs, so that `recover` can finish what a killed
 * collector started. Its files, names and keys are listed in spool.c.
 */
#ifndef STORE_SPOOL_H
#define STORE_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect.h"
#include "vt_meta.h"
#include "vt_tsync.h"

/* Malformed pages kept per CPU as evidence (cpuN.bad); the rest are only counted. */
#define SPOOL_BAD_KEEP		16

/*
 * The key=value files are each described once, by a table of keys (name,
 * type, where in the struct the file is made from) that both the writer
 * (spool_keys_write()) and the loader (spool_keys_read()) walk: a key renamed
 * in its table is renamed on both sides, and an older spool that no longer
 * loads fails tests/unit/test-spool-keys. Per-CPU keys, lists and lines that
 * hold several values stay hand-written beside the tables.
 */
enum spool_ktype {
	SPOOL_KU64,		/* uint64_t, decimal */
	SPOOL_KU32,		/* uint32_t (or unsigned int), decimal; read: cut to 32 bits */
	SPOOL_KU32_SAT,		/* the same; read: a larger value stops at UINT32_MAX */
	SPOOL_KBOOL,		/* bool, 0 or 1; read: anything but 0 is true */
	SPOOL_KINT,		/* int, signed decimal */
	SPOOL_KS64,		/* int64_t, signed decimal */
	SPOOL_KSTR,		/* char[size], our own text, read as it is */
	SPOOL_KTEXT,		/* char[size], text a guest sent: sanitised on load */
};

/**
 * struct spool_key - one key of a spool file
 * @name: the key as the file spells it
 * @type: how its value is written and read
 * @off: where the value is in the file's struct
 * @size: its size there (for strings, the array's)
 */
struct spool_key {
	const char *name;
	enum spool_ktype type;
	size_t off;
	size_t size;
};

/* A key for @field of struct @st, spelt @name in the file. */
#define SPOOL_KEY(name_, type_, st, field) \
	{ .name = (name_), .type = (type_), .off = offsetof(st, field), \
	  .size = sizeof(((st *)0)->field) }

#define SPOOL_NKEYS(keys)	(sizeof(keys) / sizeof((keys)[0]))

/**
 * struct spool_budget - what a guest may make the collector keep (--max-size),
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
struct spool_budget {
	uint64_t max;
	uint64_t used;
	uint64_t pages, bad, frag, meta;
	bool reached;
};

/* What ingest counted of a CPU's region (cpuN.sums). */
struct spool_sums {
	uint64_t len, pages, events, missed_pages, lost;
};

/* record --hold: the span of a CPU's kept events (cpuN.window), in its trace clock */
struct spool_window {
	uint64_t first_ts;	/* the first good page's timestamp */
	uint64_t end_ts;	/* the last event's */
};

/*
 * What cpuN.zst holds (record/compress.c): the region's first @raw bytes
 * (@pages pages of @subbuf bytes, with @events, @missed_pages, @lost) as
 * @file bytes of zstd chunks.
 */
struct spool_zsum {
	uint64_t raw, file, pages, events, missed_pages, lost;
	uint32_t subbuf;
};

/**
 * struct spool_cpu - one CPU of a spooled trace
 * @agent_bytes: bytes the agent reported sent (its final STATS)
 * @agent_pages: pages likewise
 * @dropped: pages dropped beyond --max-size
 * @bad_pages: malformed pages seen at ingest (the first SPOOL_BAD_KEEP are in cpuN.bad)
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
	bool have_window;
	struct spool_window window;
};

/**
 * struct spool_mig_cpu - one stream at a live migration (the "migration" file)
 * @bytes: bytes this recording received on it
 * @pages: good pages
 * @last_ts: the timestamp of its last good page (guest clock)
 * @marked: a resume mark came (a takeover: record --incoming)
 * @mark_pos: the agent's count of the stream's bytes before the mark
 * @mark_pre: bytes this recording received before the mark
 * @marks: marks seen
 */
struct spool_mig_cpu {
	uint64_t bytes, pages, last_ts;
	bool marked;
	uint64_t mark_pos, mark_pre, marks;
};

/**
 * struct spool_mig_seen - what a collector saw of a guest's live migrations,
 *	out (on the source's collector) or in (`record --incoming` on the
 *	destination's): the migration file's keys after direction
 * @status: QEMU's last MIGRATION status
 * @resumed: in: the session was taken over
 * @active_tsc, @stop_tsc, @completed_tsc, @resume_tsc, @taken_tsc, @out_tsc:
 *	host TSC of: QMP MIGRATION active, the switchover's STOP, MIGRATION
 *	completed, the destination's RESUME, the takeover, the end of the drain
 * @downtime_ms: QEMU's query-migrate downtime, @total_ms its total time
 * @failures: migrations that failed or were cancelled
 * @resume_no: in: the agent's RESUME number
 * @instance: in: the agent's recorded instance ("" top level)
 * @nr_events: in: events enabled there
 * @ignored: in: stale control messages dropped before the takeover
 * @boot_id: the host's boot: two recordings of one boot share a TSC
 * @rt_ns: the host's wall clock, read together with @rt_tsc, its TSC (for
 *	`join` across two hosts)
 */
struct spool_mig_seen {
	char status[32];
	bool resumed;
	uint64_t active_tsc, stop_tsc, completed_tsc, resume_tsc, taken_tsc, out_tsc;
	uint64_t downtime_ms, total_ms;
	uint32_t failures;
	uint64_t resume_no;
	char instance[256];
	uint32_t nr_events;
	uint64_t ignored;
	char boot_id[40];
	uint64_t rt_ns, rt_tsc;
};

/**
 * struct spool_migration - what a live migration did to a guest's recording
 * @have: the file exists
 * @direction: "out" (the guest left: this recording ends at the switchover),
 *	"in" (record --incoming took the session over), "none" (a migration
 *	began but did not complete)
 * @seen: what the collector saw of it
 * @cpus: per CPU
 */
struct spool_migration {
	bool have;
	char direction[8];
	struct spool_mig_seen seen;
	struct spool_mig_cpu cpus[COLLECT_MAX_CPUS];
};

/**
 * struct spool_kvm - how KVM's TSC offsets were followed (record/sync.c)
 * @changes_from: "events" (kvm:kvm_write_tsc_offset: exact moments),
 *	"reread" (debugfs re-read: a change lies between two reads), "" (not KVM)
 * @why: how, and why not with the events when not
 * @instance: the tracefs instance the events came from, "" if none
 * @changes: offset changes seen
 * @lost: events the instance lost
 * @breaks: events whose previous offset was not the one known (a change not seen)
 * @merged: changes past the epoch limit, merged into an epoch's bound
 * @reordered: pairs of writes stamped out of order, put back by their offsets
 * @mismatch: vCPUs whose debugfs offset at the end disagreed with the events
 * @note: the first of those problems, said plainly, "" if none
 * @host_flags: the host CPU's constant_tsc and nonstop_tsc, "" if unknown
 * @clocksource: the host kernel's clocksource ("tsc" when it trusts its TSC)
 */
struct spool_kvm {
	char changes_from[16];
	char why[200];
	char instance[64];
	uint64_t changes, lost, breaks, merged, mismatch, reordered;
	char note[200];
	char host_flags[32];
	char clocksource[32];
};

/**
 * struct spool_check_iv - --sync-check: one probe burst's replies on one vCPU
 *	within one epoch of the exact method, and whether they agree with it
 * @cpu: the vCPU
 * @burst: which burst (from 0)
 * @n: replies
 * @inside: @offset lies in [@lo, @hi]
 * @t: host TSC of the first of those probes
 * @epoch_from: the epoch's start (host TSC)
 * @offset: the epoch's offset
 * @lo: the lowest offset the replies allow
 * @hi: the highest
 */
struct spool_check_iv {
	uint32_t cpu;
	uint32_t burst;
	uint32_t n;
	bool inside;
	uint64_t t;
	uint64_t epoch_from;
	int64_t offset;
	int64_t lo, hi;
};

/* Intervals listed at most; past them only counted. */
#define SPOOL_CHECK_IVS_MAX	4096u

/**
 * struct spool_check - --sync-check's results
 * @on: the check ran (bursts were due)
 * @bursts: probe bursts checked
 * @replies: replies checked
 * @outside: replies no epoch's offset explains
 * @straddling: replies whose round trip spans an epoch change (checked
 *	against each epoch in force during it)
 * @no_epoch: replies of a vCPU with no epoch at all
 * @unlisted: intervals past SPOOL_CHECK_IVS_MAX
 * @ivs: the intervals
 * @nr_ivs: how many
 */
struct spool_check {
	bool on;
	uint64_t bursts, replies, outside, straddling, no_epoch, unlisted;
	struct spool_check_iv *ivs;
	uint32_t nr_ivs;
};

/**
 * struct spool_agent - what a guest's agent said of itself (HELLO and its
 *	setup's replies): the state file's keys after trace_id
 * @nr_cpus: its vCPUs
 * @subbuf: its ring buffer's sub-buffer size, bytes
 * @clock: its trace clock
 * @software: its name and version (the key "agent")
 * @caps: its capabilities (VT_PROTO_CAP_*), written for people (recover uses none)
 */
struct spool_agent {
	unsigned int nr_cpus;
	uint32_t subbuf;
	char clock[64];
	char software[128];
	uint64_t caps;
};

/**
 * struct spool_figures - what went wrong with a guest's recording and what it
 *	cost: the state file's problems, its budget and its messages
 * @protocol_errors: malformed control messages
 * @error: why its recording failed, "" if it did not
 * @agent_error: the agent's first unasked ERROR, "" if none
 * @agent_notice: the agent's first NOTICE (a warning), "" if none
 * @meta_fetches: metadata bundles asked for and taken
 * @meta_us: the host's time from asking for each bundle to its last chunk, summed, µs
 * @meta_guest_cpu_us: the CPU time the agent says its bundles took (its STATS), µs,
 *	at most the session's time so far; 0 if it did not say
 * @first_page_us: from the control port's connection to the first good page, µs; 0: none came
 * @budget: what it may make the collector keep and what it took (spool_budget_keys)
 * @msgs: guest_log()'s messages of each kind (msgsN)
 */
struct spool_figures {
	uint64_t protocol_errors;
	char error[512];
	char agent_error[512];
	char agent_notice[512];
	uint64_t meta_fetches, meta_us, meta_guest_cpu_us, first_page_us;
	struct spool_budget budget;
	uint64_t msgs[GMSG_NR];
};

/**
 * struct spool_kcache - a guest's kallsyms and the kallsyms cache: the state
 *	file's last keys
 * @hit: its kallsyms came from the cache
 * @vm: its VM's cache entry (kcache_vm_id()), "" if none
 * @why: why its kallsyms are not cached, ""
 */
struct spool_kcache {
	bool hit;
	char vm[COLLECT_NAME_MAX];
	char why[160];
};

/*
 * The state file's plain keys, in its order: name and trace_id, then struct
 * spool_agent's, streams, qemu_pid and max_reached (spool_state_tail_keys),
 * then struct spool_figures' and struct spool_kcache's. streams and qemu_pid
 * are written for people and not read back.
 */
struct spool_state {
	char name[COLLECT_NAME_MAX];
	uint64_t trace_id;
	unsigned int streams;
	int qemu_pid;
	bool max_reached;
};

/**
 * struct spool_sync_head - how a guest's clock was mapped to the host's: the
 *	sync file's keys before KVM's (struct spool_kvm) and the check's
 *	(struct spool_check)
 * @method: "kvm", "probe", "offset", "none"
 * @why: why that method
 * @host_end: host TSC where the mapping ends
 * @rejected: probe bursts rejected as implausible
 * @failed: probes were due but a vCPU got no epoch
 * @final_cut: why the final sync ended early, "" if it did not
 * @reset_tsc: QEMU reset the guest here: later epochs are not applied; 0 if not
 */
struct spool_sync_head {
	char method[16];
	char why[160];
	uint64_t host_end;
	uint32_t rejected;
	bool failed;
	char final_cut[200];
	uint64_t reset_tsc;
};

/* CPUs in the order a writer lists them (its streams'). */
struct spool_idx {
	unsigned int nr;
	uint32_t v[COLLECT_MAX_CPUS];
};

/**
 * struct spool_trace - everything the spool says about one trace (guest or host)
 *
 * Filled by spool_trace_load(); record fills the same struct to write the
 * trace's files (spool_file_save(), spool_agent_save()), which walk the same
 * tables of sections (spool-file.c).
 */
struct spool_trace {
	struct spool_state state;	/* the state file's own keys (name... copied below on load) */
	struct spool_idx streams;	/* written only: the CPUs with a stream, in the writer's order */
	char bad[256];			/* why a file was refused, "" if none was */
	char name[COLLECT_NAME_MAX];
	bool host;
	bool have_state, have_agent, have_sync;
	uint64_t trace_id;
	struct spool_agent agent;	/* nr_cpus at most COLLECT_MAX_CPUS */
	struct spool_figures figures;
	bool max_reached;
	struct spool_kcache kcache;
	uint32_t tids[COLLECT_MAX_CPUS];
	unsigned int nr_tids;
	struct spool_cpu cpus[COLLECT_MAX_CPUS];
	struct spool_sync_head sync_head;
	struct vt_tsync_cpu sync[COLLECT_MAX_CPUS];
	uint64_t min_rtt[COLLECT_MAX_CPUS];
	uint32_t samples[COLLECT_MAX_CPUS];
	struct spool_migration mig;
	struct spool_kvm kvm;
	struct spool_check check;
};

/**
 * struct spool_perm - the modes and owner of what a recording writes
 * @file: regular files (0600, or --mode)
 * @dir: directories (@file with x where r is: spool_perm_dir_mode())
 * @uid: owner given to what is made, (uid_t)-1 to leave it
 * @gid: group, likewise
 */
struct spool_perm {
	mode_t file, dir;
	uid_t uid;
	gid_t gid;
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
	bool hold;			/* record --hold: each trace is its rings' last contents */
	bool have_perm;			/* the modes and owner below were recorded */
	struct spool_perm perm;
};

/* An in-place finish under way (the "inplace" marker): where each CPU's pages were. */
struct spool_inplace {
	uint64_t region, head, size0;
	unsigned int nr_cpus;
	uint64_t len[COLLECT_MAX_CPUS];
};

/* A growing text: key=value files of any length, never cut short. */
struct spool_text {
	char *buf;
	size_t len, cap;
	bool oom;
};

enum spool_cpu_file { SPOOL_CPU_PAGES, SPOOL_CPU_BAD, SPOOL_CPU_ZST };

void spool_perm_default(struct spool_perm *p);
mode_t spool_perm_dir_mode(mode_t file);
void spool_perm_set(const struct spool_perm *p);
void spool_perm_get(struct spool_perm *p);
int spool_perm_apply(int fd, bool dir);
int spool_mkdir(int dfd, const char *name, bool exist_ok);
int spool_open_dir(int dfd, const char *name);
int spool_prepare(int out_fd, int *spool_fd);
int spool_guest_dir(int spool_fd, const char *name, int *dir_fd);
int spool_create(int dfd, const char *name, int flags, bool stale);
int spool_write_file(int dir, const char *name, const void *data, size_t len);
int spool_write_file_mode(int dir, const char *name, const void *data, size_t len, mode_t mode);
int spool_replace_file(int dfd, const char *name, const char *tmp, const void *data, size_t len,
		       mode_t mode);
void spool_tprintf(struct spool_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void spool_keys_write(struct spool_text *t, const struct spool_key *keys, size_t n,
		      const void *obj);
void spool_keys_write_line(struct spool_text *t, const struct spool_key *keys, size_t n,
			   const void *obj);
void spool_keys_read(const char *text, const struct spool_key *keys, size_t n, void *obj);
bool spool_keys_read_line(const char *text, const struct spool_key *keys, size_t n, void *obj);
/*
 * Indexed keys, NAMEi=value (a vCPU's or a message kind's figure): each name
 * spelled here once, for the writer and the loader.
 */
#define SPOOL_IKEY_DROPPED	"dropped"	/* state: a vCPU's pages --max-size dropped */
#define SPOOL_IKEY_BAD		"bad"		/* state: a vCPU's malformed pages */
#define SPOOL_IKEY_MSGS		"msgs"		/* state: messages of a kind (GMSG_*) */
#define SPOOL_IKEY_BYTES	"bytes"		/* agent: what the agent says a vCPU sent */
#define SPOOL_IKEY_PAGES	"pages"		/* agent: pages, likewise */
void spool_ikey_write(struct spool_text *t, const char *name, unsigned int i, uint64_t v);
uint64_t spool_ikey_read(const char *text, const char *name, unsigned int i);
/* Each file's table (spool.c): the file, then the struct it describes. */
extern const struct spool_key spool_options_keys[];	/* options: struct spool_options */
extern const size_t spool_options_nkeys;
extern const struct spool_key spool_state_keys[];	/* state: struct spool_state */
extern const size_t spool_state_nkeys;
extern const struct spool_key spool_agent_keys[];	/* state, next: struct spool_agent */
extern const size_t spool_agent_nkeys;
extern const struct spool_key spool_state_tail_keys[];	/* state, next: struct spool_state */
extern const size_t spool_state_tail_nkeys;
extern const struct spool_key spool_figures_keys[];	/* state, next: struct spool_figures */
extern const size_t spool_figures_nkeys;
extern const struct spool_key spool_kcache_keys[];	/* state, next: struct spool_kcache */
extern const size_t spool_kcache_nkeys;
extern const struct spool_key spool_budget_keys[];	/* state, after droppedN: struct spool_budget */
extern const size_t spool_budget_nkeys;
extern const struct spool_key spool_sync_keys[];	/* sync: struct spool_sync_head */
extern const size_t spool_sync_nkeys;
extern const struct spool_key spool_kvm_keys[];		/* sync, next: struct spool_kvm */
extern const size_t spool_kvm_nkeys;
extern const struct spool_key spool_check_keys[];	/* sync, next: struct spool_check */
extern const size_t spool_check_nkeys;
extern const struct spool_key spool_migration_keys[];	/* migration: struct spool_migration */
extern const size_t spool_migration_nkeys;
extern const struct spool_key spool_mig_seen_keys[];	/* migration, next: struct spool_mig_seen */
extern const size_t spool_mig_seen_nkeys;
extern const struct spool_key spool_inplace_keys[];	/* inplace: struct spool_inplace */
extern const size_t spool_inplace_nkeys;
extern const struct spool_key spool_sums_keys[];	/* cpuN.sums, one line: struct spool_sums */
extern const size_t spool_sums_nkeys;
extern const struct spool_key spool_zsum_keys[];	/* cpuN.zsum, one line: struct spool_zsum */
extern const size_t spool_zsum_nkeys;
int spool_text_save(struct spool_text *t, int dir, const char *name);
int spool_save_options(int spool, const struct spool_options *o);
int spool_load_options(int spool, struct spool_options *o);
int spool_save_stats(int dir, unsigned int cpu, const char *text);
int spool_save_sums(int dir, unsigned int cpu, const struct spool_sums *sums);
int spool_save_window(int dir, unsigned int cpu, const struct spool_window *w);
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

/*
 * A trace's key=value files (state, agent, sync, migration), each described
 * once as a list of sections (spool-file.c) that spool_file_save() and
 * spool_file_load() both walk, over struct spool_trace.
 */
enum spool_sec_kind {
	SPOOL_SEC_KEYS,		/* key=value lines: @keys over the struct at @off */
	SPOOL_SEC_LIST,		/* NAME=a,b,c: uint32_t at @off, how many (unsigned int) at @count */
	SPOOL_SEC_INDEXED,	/* NAMEi=value for each key of @keys, index by index */
	SPOOL_SEC_CSV,		/* NAMEi=v,v,...: the values of @keys in order, a line an index */
	SPOOL_SEC_RECORDS,	/* "NAME k=v k=v" lines: @keys over a record (@get, @put) */
	SPOOL_SEC_PER_CPU,	/* @sub's sections for each CPU below @count, in turn */
};

/* @idx/@count: no list of indices, no count: all @max of them. */
#define SPOOL_NONE	((size_t)-1)

/**
 * struct spool_section - one part of a spool file
 * @name: as errors name it; the key of LIST, INDEXED (the first key's
 *	name is used for each key) and CSV lines, the first word of RECORDS
 * @kind: how it is encoded
 * @off: where its data is in struct spool_trace (element 0 of an array)
 * @elem: an array element's size (INDEXED, CSV), a record's (RECORDS)
 * @keys: its keys, over the element or record (KEYS: over the struct at @off)
 * @nkeys: how many
 * @min: RECORDS: keys a line needs (older writers wrote fewer)
 * @max: elements or indices at most
 * @idx: the struct spool_idx of the indices written, SPOOL_NONE for 0..@max-1
 * @count: the unsigned int bounding what is read (LIST: what is written),
 *	SPOOL_NONE for @max
 * @get: RECORDS: the record @i (of @cpu's, within PER_CPU); false past the last
 * @put: RECORDS: keep a record read: 0, 1 to stop quietly, or -errno
 * @sub: PER_CPU: its sections
 * @nsub: how many
 */
struct spool_section {
	const char *name;
	enum spool_sec_kind kind;
	size_t off, elem;
	const struct spool_key *keys;
	size_t nkeys, min, max, idx, count;
	bool (*get)(const struct spool_trace *t, unsigned int cpu, size_t i, void *rec);
	int (*put)(struct spool_trace *t, const void *rec);
	const struct spool_section *sub;
	size_t nsub;
};

/**
 * struct spool_file - a spool file: its name, its sections in order
 * @name: the file's name
 * @secs: its sections
 * @nsecs: how many
 * @max: the largest file read
 */
struct spool_file {
	const char *name;
	const struct spool_section *secs;
	size_t nsecs, max;
};

extern const struct spool_file spool_state_file, spool_agent_file, spool_sync_file,
	spool_migration_file;
int spool_file_save(int dir, const struct spool_file *f, const struct spool_trace *t);
int spool_file_text(const struct spool_file *f, const struct spool_trace *t,
		    struct spool_text *text);
int spool_file_load(int dir, const struct spool_file *f, struct spool_trace *t);
int spool_file_parse(const struct spool_file *f, const char *text, size_t len,
		     struct spool_trace *t);
int spool_agent_save(int dir, const struct spool_trace *t);
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

#endif
