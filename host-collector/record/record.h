/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The `record` subcommand (record.c): its options, and what every guest of
 * one recording shares.
 */
#ifndef RECORD_RECORD_H
#define RECORD_RECORD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "collect.h"
#include "engine.h"
#include "sync.h"

struct guest;
struct hostrec;
struct live;

struct record_opts {
	const char *out_dir;
	const char *events[COLLECT_MAX_EVENTS];
	unsigned int nr_events;
	const char *filters[COLLECT_MAX_EVENTS];
	const char *tracer;
	const char *host_events;
	bool kvm_sched;			/* --kvm-exits added sched events: vCPU threads' only */
	pid_t host_pids[COLLECT_MAX_HOST_PIDS];	/* --host-pid: host events of these only */
	unsigned int nr_host_pids;
	const char *clock;
	unsigned int buffer_kb;
	unsigned int subbuf_kb;		/* --subbuf-size: the guest's sub-buffers, 0 to leave them */
	const char *last_boot;		/* --last-boot: the boot-mapped instance, or NULL */
	unsigned int file_version;
	bool compress;
	bool compress_at_end;		/* no compression while recording (compress.c) */
	bool top_level;
	uid_t listen_uid;		/* --listen-uid: owns the --listen sockets, may connect */
	bool have_listen_uid;
	gid_t listen_gid;		/* --listen-group: the sockets' group (mode 0660) */
	bool have_listen_gid;
	const char *kcache_dir;		/* --kallsyms-cache, or NULL for the default */
	bool no_kcache;			/* --no-kallsyms-cache */
	double duration;
	char **command;
	uint64_t max_size;
	bool quiet;
	bool keep_spool;
	bool force;		/* replace a recording already in out_dir */
	mode_t file_mode;	/* --mode: the files' mode (0600 unless given) */
	bool fsync;
	const char *sync;		/* auto, kvm, probe, offset, none */
	int64_t tsc_offset;
	bool have_tsc_offset;
	const char *debugfs;
	bool no_kvm_events;		/* --no-kvm-events: KVM offset changes by debugfs re-reads */
	bool sync_check;		/* --sync-check: probes beside the kvm method, as a check */
	double sync_interval;
	double stop_timeout;
	bool wait;			/* --wait: ports and agent may come later */
	bool all;			/* --all: every guest `list` finds */
	const char *all_uri;		/* --all --connect URI */
	const char *all_names;		/* --all=NAME,...: only these, or NULL */
	bool any_user;			/* --any-user: --all takes every user's QEMUs */
	double wait_s;			/* --wait=SEC, 0: no limit */
	unsigned int sync_probes;
	const char *tracefs;
	unsigned int live_ms;		/* --live: the reorder window, 0 without */
	bool live_stat;			/* --live-stat: the per-second vCPU table */
	bool live_lines;		/* --live given: the event lines too */
	bool hold;			/* --hold: overwriting rings, read at the stop (hold.c) */
	char cmdline[8192];
	int argc;
	char **argv;
};

/**
 * struct recording - one `record`: what every guest of it shares, its guests,
 *	the command run beside them, and the timers that end it
 * @o: the options
 * @e: the engine
 * @host: the host recorder, NULL without --host-events
 * @out_fd: the output directory: every file is made relative to it
 * @live: the live view (live.c), NULL without --live
 * @kcache_fd: the kallsyms cache's directory, or -1
 * @tsc: the host TSC rate
 * @changed: called when a guest changed state in a way the recording may care
 *	about (started recording, finished, failed)
 */
struct recording {
	const struct record_opts *o;
	struct engine *e;
	struct hostrec *host;
	int out_fd;
	struct live *live;		/* --live, else NULL */
	int kcache_fd;
	struct sync_tsc tsc;
	void (*changed)(struct recording *r);
	struct guest **gs;
	unsigned int nr;
	char **command;
	pid_t child;
	bool command_started;
	unsigned int signals;
	bool stopping;
	bool duration_armed;		/* --duration counts (with --wait: from the first start) */
	bool status_line;
	uint64_t t0, last_status;
	struct engine_timer duration, status, deadline, end_check, command_grace;
	sigset_t mask;
};

/* What record_fds_claim() found for a guest, for its message. */
struct record_fds {
	uint64_t guest;		/* the open files it needs */
	uint64_t need;		/* the limit every guest would fit in (`ulimit -n`) */
	uint64_t limit;		/* the limit it did not fit in (the soft one, raised if it could be) */
};

int record_fds_claim(struct guest *g, struct record_fds *b);
void record_usage(FILE *f);
int record_main(int argc, char **argv);

#endif
