/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The always-on service (`daemon`) and its client (`snapshot`): one
 * supervisor that follows the guests with trace ports and keeps a `record`
 * child per guest (the same executable), rotating its segments (stream mode)
 * or holding the guest's ring (hold mode), and seals them into snapshots on
 * request. daemon/ calls setup/ (list.c, to find guests; the libvirt module,
 * for the panic trigger's events) and the shared base
 * only: the recordings are made by children, not by calls into record/.
 *
 *   conf.c    the configuration: daemon.conf and the command line
 *   daemon.c  daemon_main(), the event loop, signals
 *   guests.c  discovery, the children, rotation, snapshots' timing
 *   state.c   the state directory: segments, snapshots, the disk budget
 *   ctl.c     the control socket (server) and the snapshot/status client
 *   hostfilter.c  the host-event filter trigger: a private tracefs instance
 *   panic.c   the panic trigger: libvirt's crash events, from a thread of the
 *             libvirt module (setup/libvirt-events.c), through a pipe
 */
#ifndef DAEMON_DAEMON_H
#define DAEMON_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect.h"

#define DAEMON_CONF_DEFAULT	"/etc/virtio-trace/daemon.conf"
#define DAEMON_STATE_DEFAULT	"/var/lib/virtio-trace"
#define DAEMON_SOCKET		"control.sock"
#define DAEMON_MAX_CONF_GUESTS	COLLECT_MAX_GUESTS
#define DAEMON_REASON_MAX	32
#define DAEMON_LINE_MAX		1024

/* Exit status of `snapshot` and `daemon --status` beyond collect.h's. */
#define EXIT_NO_DAEMON	6	/* no daemon answers on the control socket */

enum daemon_mode { MODE_HOLD, MODE_STREAM };

struct daemon_conf_filter;

/**
 * struct daemon_conf_guest - a guest named with its ports (`guest = NAME DIR`)
 * @name: its name
 * @dir: the directory of its ports (record --chardev-dir)
 */
struct daemon_conf_guest {
	char name[COLLECT_NAME_MAX];
	char dir[4096];
};

/**
 * struct daemon_conf - what daemon.conf and the command line say
 * @all: follow every guest that `list` finds
 * @names: with !@all, the names of those to follow (comma-separated), or ""
 * @guests: guests named with their port directories
 * @nr_guests: how many
 * @uri: libvirt URI ("" default)
 * @no_libvirt: leave libvirt out of the discovery
 * @mode: hold or stream
 * @events: guest events, comma-separated (record -e each)
 * @host_events: host events (record --host-events)
 * @window: stream mode: seconds per segment
 * @budget: bytes per guest and segment (record --max-size), 0 none
 * @total_budget: bytes under the state directory, at most
 * @min_free: bytes the file system must keep free
 * @state_dir: the state directory
 * @before: default seconds before the trigger
 * @after: default seconds after the trigger
 * @panic: snapshot on a guest panic
 * @host_filters: host-event filters that trigger a snapshot (hostfilter.c)
 * @nr_host_filters: how many
 * @host_cooldown: seconds between two of one guest's host-event snapshots
 * @stop_timeout: seconds a child may take to stop (then SIGKILL)
 * @trigger_guest: trigger-guest-filter, SYS:EV[ if FILTER] ("" none)
 */
struct daemon_conf {
	bool all;
	char names[4096];
	struct daemon_conf_guest *guests;
	unsigned int nr_guests;
	char uri[1024];
	bool no_libvirt;
	enum daemon_mode mode;
	char events[4096];
	char host_events[4096];
	double window;
	uint64_t budget;
	uint64_t total_budget;
	uint64_t min_free;
	char state_dir[4096];
	double before, after;
	bool panic;
	struct daemon_conf_filter *host_filters;
	unsigned int nr_host_filters;
	double host_cooldown;
	double stop_timeout;
	char trigger_guest[4200];
};

/* conf.c */
void conf_defaults(struct daemon_conf *c);
int conf_set(struct daemon_conf *c, const char *key, const char *val, const char *where);
int conf_load(struct daemon_conf *c, const char *path, bool must_exist);
void conf_free(struct daemon_conf *c);
bool conf_is_key(const char *key);
const char *const *conf_keys(void);

/* daemon.c */
int daemon_main(int argc, char **argv);
double daemon_now(void);

/* ctl.c: the client side */
int snapshot_main(int argc, char **argv);
int ctl_ask(const char *state_dir, const char *request, bool print_lines);

#endif
