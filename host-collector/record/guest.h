/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One traced guest (struct guest) and its parts: the data its session
 * (session.c, session-*.c) drives and its clock (sync.c) keeps. What the
 * session does with it is in session.h; the clock takes the guest from here,
 * not from session.h, and calls no session function (@sync.save).
 */
#ifndef RECORD_GUEST_H
#define RECORD_GUEST_H

/*
 * struct guest is record/'s own: only record/ (whose CPPFLAGS define
 * VT_RECORD_INTERNAL) and its white-box tests, which say so in theirs,
 * may include this; the other folders take what they need from record.h.
 */
#ifndef VT_RECORD_INTERNAL
#error "record/guest.h is record/'s own (struct guest): not for other folders"
#endif

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect.h"
#include "engine.h"
#include "qmp.h"
#include "setup/link.h"
#include "store/spool.h"
#include "vt_proto.h"
#include "vt_tsync.h"

/* A guest's states: session.h says how it goes through them (its state diagram). */
enum guest_state {
	G_NEW, G_HELLO, G_CONFIG, G_META, G_RUNNING, G_STOPPING, G_DRAINING,
	G_FINISHING, G_DONE, G_FAILED,
};

struct guest;
struct sync_check_smp;
struct tscwatch;

/**
 * struct guest_sync - a guest's clock mapping (sync.c): its epochs, the
 *	probes and KVM's offsets they come from, --sync-check's, and when to
 *	sync again; @head, @kvm and @check are what the sync file keeps
 */
struct guest_sync {
	struct spool_sync_head head;	/* method, why, the end and what went wrong */
	struct vt_tsync_cpu cpus[COLLECT_MAX_CPUS];	/* epochs per vCPU */
	uint64_t min_rtt[COLLECT_MAX_CPUS];		/* probes: smallest round trip, ticks */
	uint32_t samples[COLLECT_MAX_CPUS];
	/* plausibility of probe replies (sync.c) */
	uint64_t last_g[COLLECT_MAX_CPUS];	/* the last accepted guest TSC per vCPU */
	char reject_why[160];			/* why the last burst was rejected */
	bool away[COLLECT_MAX_CPUS];		/* its last burst ran on other CPUs: offline */
	/* KVM (sync.c): offsets from debugfs, their changes from events or re-reads */
	char kvm_dir[4096];			/* the VM's debugfs directory, "" if not found */
	struct tscwatch *watch;			/* kvm_write_tsc_offset, NULL: re-reads */
	struct vt_tsc_map kvm_scale[COLLECT_MAX_CPUS];	/* each vCPU's ratio (offset unused) */
	uint64_t kvm_last_read;			/* host TSC when the last debugfs read began */
	uint64_t kvm_saved_ns;			/* CLOCK_MONOTONIC of the last save for a change */
	bool kvm_dirty;				/* changes not saved yet */
	bool kvm_arrived;			/* --incoming: the epochs start at the RESUME */
	struct spool_kvm kvm;
	/* --sync-check: probes beside the exact method, compared once its epochs are in */
	bool checking;				/* the burst running is a check */
	struct sync_check_smp *pend;		/* replies waiting for their epochs */
	size_t nr_pend, cap_pend;
	struct spool_check check;
	/* when to sync again (session-probe.c, session-setup.c) */
	struct engine_timer timer;		/* --sync-interval */
	struct engine_timer kvm_timer;		/* re-reads KVM's offsets */
	struct engine_timer retry_timer;	/* --incoming: the takeover's sync, again */
	unsigned int retries;			/* of the takeover's sync */
	/* saves the sync file (the session's spool_save_sync()): the clock calls no session */
	int (*save)(const struct guest *g);
};

struct recording;

/**
 * struct guest_migration - a live migration seen by this collector: the
 *	guest left (out, on the source's collector) or arrived (in, `record
 *	--incoming` on the destination's); @seen is what the migration file
 *	keeps. Times are host TSC; 0 when not seen.
 */
struct guest_migration {
	bool incoming;			/* --incoming: take the running session over */
	bool migrating;			/* QMP: a migration is under way (setup, active...) */
	bool out;			/* it completed: the guest left this host */
	struct spool_mig_seen seen;	/* what the migration file keeps (0 when not seen) */
	bool session_seen;		/* incoming: SESSION came (its STATS follow) */
	bool streaming;			/* incoming: it said a session records */
	int *early_fds;			/* incoming: data ports opened before the handshake */
	uint64_t quiet_bytes;		/* out: bytes at the last drain check */
	uint64_t quiet_since;		/* out: engine_now_ns() since when nothing came */
};

/**
 * struct guest_req - one request in flight on a guest's control port, and
 *	what to do with its answer
 */
struct guest_req {
	bool active;
	uint32_t seq;
	uint16_t type;			/* what was sent */
	uint16_t want;			/* VT_PROTO_OK or VT_PROTO_HELLO_REPLY */
	void (*done)(struct guest *g, int err);
	struct engine_timer timer;
	uint64_t sent_ns;		/* engine_now_ns() when sent, for -v */
	uint64_t timeout_ns;		/* how long it may go unanswered, 0: for ever */
};

/**
 * struct guest_port - a port QEMU connects to (--listen), watched until it did
 */
struct guest_port {
	struct guest *g;
	unsigned int cpu;
	int lfd;
	bool taken;			/* QEMU connected: later connections are refused */
	struct engine_fd *watch;
	char base[4200];
};

/**
 * struct guest_burst - a clock probe burst on one vCPU at a time, driven by
 *	replies and a timeout
 */
struct guest_burst {
	bool active;
	bool req_pending;		/* SYNC_BEGIN not answered yet */
	const char *when;		/* "start", "interval", "resume", "stop" */
	unsigned int idx;		/* index into the guest's streams */
	uint32_t cpu, k, n, got;
	uint64_t t1;
	int64_t lo, hi;			/* the offsets this vCPU's replies allow so far */
	uint32_t since_narrowed;	/* replies since [lo, hi] last narrowed */
	bool cut;			/* ended early: the vCPUs left are not probed */
	uint64_t max_rtt;		/* the slowest reply's round trip, ticks */
	uint64_t began_ns;		/* engine_now_ns() when it began */
	struct vt_tsync_sample *smp;
	void (*done)(struct guest *g, int err);
	struct engine_timer timer;
	struct engine_timer budget;	/* the final sync's own time ("stop") */
	uint64_t sent_ns;		/* engine_now_ns() when sent, for -v */
};

/**
 * struct guest_ctl - a guest's control port and the connection over it (session.c)
 * @rfd: where its messages are read
 * @wfd: where ours are written (@rfd again on a socket)
 * @lfd: --listen: waiting for QEMU to connect, else -1
 * @taken: QEMU connected to it: later connections are refused
 * @ports: --listen: data ports QEMU has yet to connect
 * @nr_waiting: how many of @ports
 * @accept_timer: how long QEMU may take to connect them
 * @conn: the protocol's connection over @rfd and @wfd
 * @in: the engine's watch on @rfd
 * @out: and on @wfd, enabled while @conn has bytes to write
 * @rx_tsc: host TSC when the control port was last found readable
 */
struct guest_ctl {
	int rfd, wfd;
	int lfd;
	bool taken;
	struct guest_port *ports;
	unsigned int nr_waiting;
	struct engine_timer accept_timer;
	struct vt_conn *conn;
	struct engine_fd *in, *out;
	uint64_t rx_tsc;
};

/**
 * struct guest_stop - stopping a guest's recording (session-stop.c)
 * @seq: the STOP request's sequence number
 * @seen: the agent's STOPPED for it came
 * @deferred: a stop waits for an exchange under way (the full metadata,
 *	--incoming's takeover): set by guest_set_state(), carried out by
 *	guest_take_deferred_stop() (session-life.c)
 * @meta_abandoned: that metadata did not come within DEFERRED_STOP_NS of the
 *	stop: abandoned, and not asked for again at the end
 * @sent_ns: engine_now_ns() when STOP was sent, for -v
 * @timer: --stop-timeout; while the stop is deferred, deferred_stop_ns()
 * @drain_timer: checks the drain while stopping
 */
struct guest_stop {
	uint32_t seq;
	bool seen;
	bool deferred;
	bool meta_abandoned;
	uint64_t sent_ns;
	struct engine_timer timer;
	struct engine_timer drain_timer;
};

/**
 * struct guest_wait - how long a guest may keep `record --wait` waiting (record.c)
 * @until: until when its ports may be missing and HELLO unanswered (0: no
 *	--wait, UINT64_MAX: no limit)
 * @timer: looks for the ports again
 * @link_ready: its domain's channels are known (or it has no domain)
 * @said: "waiting for its ports" was logged
 */
struct guest_wait {
	uint64_t until;
	struct engine_timer timer;
	bool link_ready;
	bool said;
};

/**
 * struct guest_meta - a guest's metadata bundles (session-meta.c)
 * @rx: the bundle being received
 * @len: the size of the bundle spooled last
 * @done: what to do once the bundle in flight is in
 * @req_flags: of the META_REQ in flight (without OPEN)
 * @partial: the setup's metadata left kallsyms out
 * @full: the spooled bundle is a whole one (kallsyms as the agent has them)
 * @asked_ns: when the bundle in flight was asked for (engine_now_ns())
 */
struct guest_meta {
	struct vt_proto_meta_rx rx;
	uint64_t len;
	void (*done)(struct guest *g, int err);
	uint32_t req_flags;
	bool partial;
	bool full;
	uint64_t asked_ns;
};

/**
 * struct guest_stats - what the agent's STATS said, per vCPU (the spool's
 *	"agent" file and cpuN.stats)
 * @text: the kernel's per_cpu stats text, sanitised, or NULL
 * @bytes: bytes it sent
 * @pages: pages it sent
 * @last: the agent said its STATS are all sent (VT_PROTO_STATS_LAST)
 */
struct guest_stats {
	char *text[COLLECT_MAX_CPUS];
	uint64_t bytes[COLLECT_MAX_CPUS];
	uint64_t pages[COLLECT_MAX_CPUS];
	bool last;
};

/**
 * struct guest_kcache - a guest's kallsyms and its VM's entry in the kallsyms
 *	cache (kcache.c)
 * @saved: what the state file says of it
 * @tried: @saved.vm and @key are what the cache had when first asked
 * @key: the key of its VM's cached kallsyms (0: none)
 * @guest_key: the kallsyms key its last bundle reported (0: none)
 * @held_key: the key of the kallsyms the spooled bundle holds (0: unknown)
 * @final_key_check: the final bundle was asked without kallsyms: its key decides
 */
struct guest_kcache {
	struct spool_kcache saved;
	bool tried;
	uint64_t key;
	uint64_t guest_key;
	uint64_t held_key;
	bool final_key_check;
};

/**
 * struct guest - one traced guest
 * @name: from --name, or the directory's base name ([A-Za-z0-9_.-], never a path)
 */
/* How far a guest's setup went (session-setup.c). */
struct guest_setup {
	unsigned int step;		/* the step it is at */
	bool hello_timed_out;		/* its failure gets the hints of an absent agent */
	bool recorded;			/* it started recording */
	bool refused;			/* it refused the command line's events, tracer or clock */
	bool accepted;			/* it took them (its setup went past them) */
	bool synced;			/* and its clock sync after START is done */
	uint64_t connected_ns;		/* engine_now_ns() when its control port connected */
};

/**
 * struct guest_trig - record --trigger-guest-filter: the agent's TRIGGERs (trigger-guest.c)
 * @watching: a WATCH was sent (cleared when the agent refuses the one sent again
 *	after --incoming's takeover)
 * @last_ns: when the last TRIGGER was taken (engine_now_ns()), 0 none
 * @last_ts: its guest timestamp: a later one is not before it
 * @taken: TRIGGERs passed on
 * @ignored: TRIGGERs dropped: over the rate, unasked, another event, time going back
 * @suppressed: matches the agent said it held back (its own rate limit)
 * @panics: QMP's GUEST_PANICKED events (the first passed on)
 */
struct guest_trig {
	bool watching;
	uint64_t last_ns;
	uint64_t last_ts;
	uint64_t taken, ignored, suppressed;
	uint64_t panics;
};

/* Liveness checks sent and not yet answered, at most: past them no more are sent. */
#define GUEST_ALIVE_MAX_OWED	4

/**
 * struct guest_alive - record --alive-interval: a STATS_REQ now and then while
 *	the guest records, so that an agent that restarted (it answers "send
 *	HELLO first") is found in a silent session (session-alive.c)
 * @tick: every --alive-interval
 * @late: the newest check's answer is overdue when it fires
 * @seqs: the checks sent and not answered, oldest first: the agent answers in
 *	order, so the next STATS series with LAST (or an ERROR naming one) is
 *	the oldest's, never the stop's
 * @owed: how many of @seqs
 * @overdue: the newest check went unanswered past its bound: the next may go
 * @warned: the one warning of an overdue answer was given
 * @sent_ns: engine_now_ns() when the newest check was sent
 */
struct guest_alive {
	struct engine_timer tick;
	struct engine_timer late;
	uint32_t seqs[GUEST_ALIVE_MAX_OWED];
	unsigned int owed;
	bool overdue;
	bool warned;
	uint64_t sent_ns;
};

struct guest {
	char name[COLLECT_NAME_MAX];
	struct recording *rec;		/* the `record` it belongs to */
	struct guest_link link;		/* how to reach it */
	struct guest_qemu qemu;		/* what its QEMU said (QMP) */
	struct guest_migration mig;	/* live migration, out or in */
	struct guest_ctl ctl;		/* its control port */
	struct guest_wait wait;		/* record --wait */
	/* what the agent said */
	struct vt_proto_hello hello;
	struct spool_agent agent;	/* and what of it the state file keeps */
	/* streams, one per vCPU with a port */
	struct stream *streams;
	unsigned int nr_streams;
	/* state */
	enum guest_state state;
	struct guest_setup setup;	/* how far its setup went */
	struct guest_kcache kcache;	/* its kallsyms and the kallsyms cache */
	uint64_t trace_id;
	char spool[4096];		/* its spool directory, for messages ("" until made) */
	int spool_fd;			/* and its fd (spool_guest_dir()) */
	struct guest_meta meta;		/* its metadata bundles */
	struct guest_stats stats;	/* the agent's STATS */
	struct guest_stop stop;		/* STOP and the drain after it */
	struct guest_req req;
	struct guest_burst burst;
	struct guest_alive alive;	/* --alive-interval */
	char reply_text[512];
	struct guest_sync sync;
	uint64_t status_bytes;		/* bytes received at the last status line (record.c) */
	uint64_t fds;			/* its share of the open-file limit (record_fds_claim()) */
	unsigned int live_idx;		/* --live: its trace in the live view (live.c) */
	struct spool_figures figures;	/* its problems, budget and messages (guest_log()) */
	bool msgs_summed;		/* their summary line was printed */
	struct guest_trig trig;		/* --trigger-guest-filter (trigger-guest.c) */
};

#endif
