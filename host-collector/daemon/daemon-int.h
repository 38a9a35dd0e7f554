/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daemon/'s own: the supervisor's state, shared by daemon.c, guests.c,
 * state.c and ctl.c.
 */
#ifndef DAEMON_DAEMON_INT_H
#define DAEMON_DAEMON_INT_H

#include <dirent.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/daemon.h"
#include "text.h"

#define DAEMON_MAX_WAITERS	8
#define DAEMON_MAX_CLIENTS	64
#define DAEMON_BACKOFF_MIN	1.0
#define DAEMON_BACKOFF_MAX	300.0
#define DAEMON_CUT_OFF_AFTER	8	/* failures in a row: the guest is cut off */
/*
 * A child younger than this is not stopped for a rotation or a snapshot yet: one stopped in its
 * setup keeps nothing (record: "ended before its setup finished"). A SIGINT in its first moments
 * was once lost outright (its stop signals unblocked and inherited ignored: guests.c's child(),
 * test-daemon-earlyint).
 */
#define DAEMON_MIN_AGE		3.0
#define DAEMON_SECOND_INT	10.0	/* a stop not done by then gets a second SIGINT */
#define DAEMON_TRIG_GUEST_GAP	60.0	/* one guest-filter snapshot per guest in this */
#define DAEMON_PANIC_GAP	60.0	/* one panic snapshot per guest in this, whoever said it */
/*
 * A gone guest's child gets its second SIGINT sooner: its QEMU has left, no answer to the stop
 * can come, and record waited its whole 10 s for one (a destroyed libvirt domain was detached
 * 14 s later in the daemon's e2e test).
 */
#define DAEMON_GONE_INT		1.0
/*
 * record --hold's --alive-interval: a held session sends nothing, so a guest that rebooted or an
 * agent restarted in it was seen only at the next stop (the snapshot then held nothing of it).
 * A STATS_REQ answered "send HELLO first" ends the child, and a new one starts. It was a probe
 * burst every 5 s (--sync-interval 5: 16 or more round trips per vCPU, the agent busy-polling
 * through them; 11-15 wake-ups a second per child, doc/benchmarks.md); the burst now comes
 * once a minute, for the clock's drift only.
 */
#define DAEMON_HOLD_ALIVE	"5"
#define DAEMON_HOLD_PROBE	"60"
/*
 * A QEMU with -incoming unix:PATH binds PATH after it opened the ports that discovery sees:
 * seen before that (1 run of 5 of test-daemon-migrate), its first child waits this long for
 * the listener, which says the guest is still to come (else it arrived: a plain child).
 */
#define DAEMON_INCOMING_WAIT	5.0

/* Why a child is being stopped: what its exit leads to. */
enum stop_why { STOP_NONE, STOP_ROTATE, STOP_SNAPSHOT, STOP_GONE, STOP_SHUTDOWN };

/**
 * struct snap_req - a snapshot asked for and not yet sealed
 * @active: one is pending
 * @trigger: when it was asked for (daemon_now())
 * @wall: the same, as wall-clock seconds (the directory's name)
 * @before: seconds before the trigger
 * @after: seconds after
 * @reason: why (sanitised: letters, digits, '-', '_')
 * @waiters: control connections waiting for the answer (-1: none)
 */
struct snap_req {
	bool active;
	double trigger;
	time_t wall;
	double before, after;
	char reason[DAEMON_REASON_MAX + 1];
	int waiters[DAEMON_MAX_WAITERS];
};

/**
 * struct dtrig - a guest's guest-filter triggers and its child's panics, the
 *	pipe they come through (trig-guest.c)
 * @rfd: the daemon's end of its child's trigger pipe, valid with @rfd_open
 * @wfd: the child's end, until the child is forked, valid with @wfd_open
 * @fd_arg: record --trigger-fd's value
 * @buf: a partial line
 * @len: its length
 * @last: when the last guest-filter snapshot was asked for (0: never)
 * @taken: triggers that asked for a snapshot
 * @ignored: triggers within DAEMON_TRIG_GUEST_GAP of the last, or not understood
 */
struct dtrig {
	int rfd, wfd;
	bool rfd_open, wfd_open;
	char fd_arg[16];
	char buf[1024];
	size_t len;
	double last;
	uint64_t taken, ignored;
};

/**
 * struct dpanic - a guest's panics (panic.c), from libvirt's crash events and
 *	its child's QMP GUEST_PANICKED alike
 * @last: when its last panic snapshot was asked for (0: never)
 * @taken: panics that asked for a snapshot
 * @ignored: panics within DAEMON_PANIC_GAP of the last one taken (the same
 *	panic said twice, or a guest that keeps panicking)
 */
struct dpanic {
	double last;
	uint64_t taken, ignored;
};

/**
 * struct dguest - one guest the daemon follows
 * @name: its name (a file name: collect_name_ok())
 * @spec: how record finds it: "dir", "domain" or "qemu"
 * @where: the port directory, or the name for record --domain / --all
 * @present: seen by the last discovery
 * @missed: discoveries in a row that did not see it while its child ran
 * @qemu_pid: its QEMU process, as discovery found it (0: not known, a guest named with its ports)
 * @pid: its record child, 0 if none
 * @started: when the child started
 * @stopping: why the child is being stopped (STOP_NONE: it is not)
 * @stop_sent: when SIGINT went
 * @second_int: the second SIGINT went (record then keeps what it has and ends)
 * @next_start: the earliest time a new child may start (backoff)
 * @backoff: the current backoff, seconds
 * @failures: children in a row that ended on their own
 * @cut_off: failed too often: no child until it disappears and returns
 * @prev_start: when the previous segment started (0: none)
 * @prev_end: when it ended
 * @snap: a pending snapshot
 * @last_snap: the last snapshot's directory name ("" none)
 * @last_reason: and why it was taken
 * @last_error: the last problem, in words ("" none)
 * @trig: its guest-filter triggers, and its child's panics (trig-guest.c)
 * @panic: its panics
 * @kept: gone and detached, kept for its last snapshot (until it comes back)
 * @incoming: its QEMU waits for it to migrate in (list_guest's @incoming when it was
 *	found): the first child takes the session over, record --incoming
 * @ports: with @incoming, the port directory (record --chardev-dir)
 * @qmp: with @incoming, QEMU's QMP socket ("" none)
 * @migrated_out: its last child ended with the guest migrated out (the recording's
 *	manifest says so): no child while the same QEMU (@out_qemu) stays
 * @out_qemu: the QEMU it left
 * @incoming_until: its QEMU has -incoming but no listener yet: the first child waits
 *	until then for one (DAEMON_INCOMING_WAIT)
 */
struct dguest {
	char name[COLLECT_NAME_MAX];
	char spec[8];
	char where[4096];
	bool present;
	unsigned int missed;
	pid_t qemu_pid;
	pid_t pid;
	double started;
	enum stop_why stopping;
	double stop_sent;
	bool second_int;
	double next_start;
	double backoff;
	unsigned int failures;
	bool cut_off;
	double prev_start, prev_end;
	struct snap_req snap;
	char last_snap[256];
	char last_reason[DAEMON_REASON_MAX + 1];
	char last_error[256];
	struct dtrig trig;
	struct dpanic panic;
	bool kept;
	bool incoming;
	char ports[4096];
	char qmp[4096];
	bool migrated_out;
	pid_t out_qemu;
	double incoming_until;
};

/**
 * struct daemon - the supervisor
 * @conf: its configuration
 * @exe: the executable to run as `record` children
 * @state_fd: the state directory, opened once (every path is relative to it)
 * @guests_fd: STATE/guests
 * @snaps_fd: STATE/snapshots
 * @lock_fd: STATE/daemon.lock, flock()ed while the daemon runs
 * @listen_fd: the control socket
 * @clients: control connections (-1: free slot)
 * @g: the guests followed
 * @nr: how many
 * @stopping: SIGTERM or SIGINT came: stop the children and leave
 * @last_discovery: when guests were last looked for
 * @last_budget: when the budget was last checked
 * @hf: the host-event filter trigger, NULL if none (hostfilter.c)
 * @events_fd: the panic trigger's events (panic.c), -1 none
 * @events_note: how they flow, for --status ("" not followed)
 * @poll_fds: the loop's poll set (daemon.c), with room for @poll_cap
 * @poll_slots: what each of its descriptors is
 * @poll_cap: its room
 */
struct daemon {
	struct daemon_conf conf;
	char exe[4096];
	int state_fd, guests_fd, snaps_fd, lock_fd;
	int listen_fd;
	int clients[DAEMON_MAX_CLIENTS];
	struct dguest *g;
	unsigned int nr;
	bool stopping;
	double last_discovery, last_budget;
	struct hostfilter *hf;
	int events_fd;
	char events_note[200];
	struct pollfd *poll_fds;
	int *poll_slots;
	unsigned int poll_cap;
};

/* guests.c */
void guests_discover(struct daemon *d);
void guests_tick(struct daemon *d);
void guests_reaped(struct daemon *d, pid_t pid, int status);
void guests_stop_all(struct daemon *d);
bool guests_running(const struct daemon *d);
double guests_next_stop(const struct daemon *d);
struct dguest *guests_find(struct daemon *d, const char *name);
int guests_snapshot(struct daemon *d, struct dguest *g, double before, double after,
		    const char *reason, int client);

/* trig-guest.c */
unsigned int trig_guest_args(struct daemon *d, struct dguest *g, char **argv, unsigned int n);
void trig_guest_forked(struct dguest *g);
void trig_guest_ready(struct daemon *d, unsigned int i, int fd);
void trig_guest_poll(struct daemon *d);
void trig_guest_reaped(struct daemon *d, struct dguest *g);

/* state.c */
DIR *state_opendir(int fd);
int state_open(struct daemon *d);
void state_close(struct daemon *d);
int state_guest_dir(struct daemon *d, const char *name);
int state_rotate(struct daemon *d, struct dguest *g);
int state_seal(struct daemon *d, struct dguest *g, char *path, size_t len);
bool state_migrated_out(struct daemon *d, const char *name);
void state_budget(struct daemon *d);
uint64_t state_guest_bytes(struct daemon *d, const char *name, unsigned int *segments);
uint64_t state_tree_bytes(int at, const char *name);
int state_remove_tree(int at, const char *name);

/* panic.c: the panic trigger */
void panic_open(struct daemon *d);
void panic_child_line(struct daemon *d, struct dguest *g, const char *line);
void panic_read(struct daemon *d);
void panic_close(struct daemon *d);

/* ctl.c: the server side */
int ctl_listen(struct daemon *d);
void ctl_close(struct daemon *d);
void ctl_accept(struct daemon *d);
void ctl_read(struct daemon *d, int slot);
void ctl_answer(struct daemon *d, int fd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
