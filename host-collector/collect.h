/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What every part of virtio-trace-collect shares: its limits, exit codes and
 * logging. Each module has a header of its own; the folders are the jobs:
 *
 *   record/   the `record` subcommand (record.c; its command line
 *             record-opts.c, its guests' start record-guests.c): one event
 *             engine (engine.c) serving every guest's ports (attach.c) and
 *             data streams (stream.c, which register as readers of their
 *             own), each guest's agent driven as a state machine (session.c:
 *             the connection and dispatch; session-streams.c, -meta.c,
 *             -probe.c, -migrate.c, -setup.c, -stop.c its parts, sharing
 *             record/'s private session-int.h),
 *             clocks (sync.c, sync-kvm.c, sync-check.c, kvm.c, tscrate.c,
 *             qmp.c), host events (hostrec.c), the live view (live.c,
 *             live-view.c, live-tep.c), compression while streaming
 *             (stream-compress.c), the kallsyms cache (kcache.c) and the last
 *             boot's trace (lastboot-file.c). A part's private header
 *             (X-int.h) refuses other folders.
 *   store/    the spool (spool.c, its one owner) and what is made of it:
 *             trace.dat files (finish.c, output.c, inplace.c), manifest.json
 *             (manifest.c), the guest's sysinfo (sysinfo.c); the `recover`
 *             subcommand (recover.c). `record` and `recover` both use it.
 *   setup/    where a guest's ports are: the `setup` subcommand (hotplug.c:
 *             into a running QEMU over QMP), libvirt (a module loaded on
 *             demand), the `list` subcommand (list.c), port directories, QMP
 *             replies. list asks each agent for one HELLO: it speaks the
 *             protocol through lib/'s codec, not record/'s sessions, so that
 *             setup/ stays below record/ (record --all calls list).
 *   report/   the `report` subcommand and its analyses; it reads the files
 *             store/ wrote and sees no recording internals.
 *   check/    the `check` subcommand: what a recording needs on this host
 *             (it reads KVM's offsets through record/kvm.c and asks the agent
 *             through setup/list.c), and a short `record` run as a child,
 *             whose manifest it reads back as JSON.
 *   daemon/   the `daemon` service and its `snapshot` client: it finds the
 *             guests (setup/list.c) and runs one `record` child per guest
 *             (this executable again), rotating, sealing and budgeting their
 *             recording directories; the control socket (daemon/daemon.h).
 *
 * Calls go one way: main -> check -> {record, setup}; main -> record ->
 * {store, setup, report}; main -> report -> store; main -> store, setup.
 * record/ calls report/ for one thing, the vCPU state machine that `report
 * --vcpus` runs (analyze-vcpus.c), which `record --live-stat` runs on live
 * events (livestat.c); report/ never calls record/. main -> daemon ->
 * setup: the daemon runs record as a child, it never calls it. store/ and
 * setup/ call no other folder; nothing calls check/ or daemon/.
 */
#ifndef COLLECT_H
#define COLLECT_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define COLLECT_MAX_GUESTS	1024
#define COLLECT_MAX_CPUS	256
#define COLLECT_MAX_EVENTS	256
#define COLLECT_MAX_HOST_PIDS	64
#define COLLECT_NAME_MAX	64

/* Exit status, documented in virtio-trace-collect(1). */
#define EXIT_OK		0	/* every guest recorded cleanly */
#define EXIT_FAIL	1	/* nothing usable was written */
#define EXIT_USAGE	2	/* bad command line */
#define EXIT_PARTIAL	3	/* files written, but a guest was dropped or reported problems */
#define EXIT_NOT_EXACT	4	/* check: this guest's clock would not be exact (the lines say why) */
#define EXIT_NO_EVENTS	5	/* report: an analysis asked for has none of its events to read */

/* log.c */
extern int collect_quiet;
extern int collect_verbose;
extern const char *collect_cmd;		/* the subcommand running, for messages */
void collect_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void collect_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void collect_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void collect_status_clear(void);
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
 * guest ends (record/session.c), and the count goes into the manifest's
 * problems (the agent's warnings, GMSG_AGENT_NOTICE: into its agent_warnings).
 */
#define COLLECT_LOG_BURST	5
enum guest_msg { GMSG_AGENT_ERROR, GMSG_SYNC, GMSG_AGENT_NOTICE, GMSG_REFUSED, GMSG_NR };
#define guest_log(g, kind, level, ...)						\
	do {									\
		if (++(g)->figures.msgs[kind] <= COLLECT_LOG_BURST)			\
			collect_log(level, __VA_ARGS__);			\
	} while (0)
const char *collect_msg_name(enum guest_msg kind);

/* dirperm.c */
struct stat;
bool collect_dir_private(const struct stat *st);
int collect_open_regular(int dfd, const char *name, int flags);
int collect_read_file(int dfd, const char *name, void **data, size_t *len, size_t max);

#endif
