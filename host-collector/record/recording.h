/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a guest sees of the `record` it belongs to (record.c makes it): the
 * options, the engine, the host recorder, the live view, the output and
 * spool directories, the host TSC rate, and its share of the open files.
 * The sessions (session*.c) and the clock (sync*.c) take it from here, not
 * from record.h, so that they do not depend on the `record` subcommand.
 */
#ifndef RECORD_RECORDING_H
#define RECORD_RECORDING_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect.h"
#include "engine.h"
#include "recopts.h"
#include "hostclock.h"

struct guest;
struct hostrec;
struct live;

/**
 * struct recording - one `record`: what every guest of it shares, its guests,
 *	the command run beside them, and the timers that end it
 * @o: the options
 * @e: the engine
 * @host: the host recorder, NULL without --host-events
 * @out_fd: the output directory: every file is made relative to it
 * @spool_fd: its .spool directory
 * @out_created: whether this run made the output directory
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
	int spool_fd;			/* out_fd's .spool */
	bool out_created;		/* out_fd was made by this run (removed if nothing is kept) */
	struct live *live;		/* --live, else NULL */
	int kcache_fd;
	struct host_tsc tsc;
	void (*changed)(struct recording *r);
	struct guest **gs;
	unsigned int nr;
	char **command;
	pid_t child;
	bool command_started;
	unsigned int signals;
	bool stopping;
	bool duration_armed;		/* --duration counts (with --wait: from the first start) */
	bool trimmed;			/* what the setups freed went back (settle_memory()) */
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

#endif
