/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record's options (record-opts.c fills them in): what the services that
 * need only the options (the host recorder, the last boot's file, the
 * ports) read, without the recording around them (record.h).
 */
#ifndef RECORD_RECOPTS_H
#define RECORD_RECOPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect.h"
#include "trigspec.h"

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
	unsigned int budget_kb;		/* --buffer-budget: the guest's ring buffers may grow to */
	bool have_budget;		/* it was given (0 is a budget: fixed sizes) */
	unsigned int subbuf_kb;		/* --subbuf-size: the guest's sub-buffers, 0 to leave them */
	const char *last_boot;		/* --last-boot: the boot-mapped instance, or NULL */
	unsigned int file_version;
	bool compress;
	bool compress_at_end;		/* no compression while recording (stream-compress.c) */
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
	double alive_interval;		/* --alive-interval: a STATS_REQ every S s, 0: none */
	double stop_timeout;
	bool wait;			/* --wait: ports and agent may come later */
	bool all;			/* --all: every guest `list` finds */
	const char *all_uri;		/* --all --connect URI */
	const char *all_names;		/* --all=NAME,...: only these, or NULL */
	bool any_user;			/* --any-user: --all takes every user's QEMUs */
	bool no_libvirt;		/* --no-libvirt: --all asks no libvirt */
	double wait_s;			/* --wait=SEC, 0: no limit */
	unsigned int sync_probes;
	const char *tracefs;
	unsigned int live_ms;		/* --live: the reorder window, 0 without */
	bool live_stat;			/* --live-stat: the per-second vCPU table */
	bool live_lines;		/* --live given: the event lines too */
	bool hold;			/* --hold: overwriting rings, read at the stop (hold.c) */
	const char *trig_guest;		/* --trigger-guest-filter SYS:EV[ if FILTER], or NULL */
	struct trigspec trig;		/* its event and filter, parsed */
	int trig_fd;			/* --trigger-fd: a line per trigger taken, -1 none */
	char cmdline[8192];
	int argc;
	char **argv;
};

#endif
