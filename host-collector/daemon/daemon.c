// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `virtio-trace-collect daemon`: the always-on service. One thread, one
 * poll() loop over a signalfd (children ending, SIGTERM), the control socket
 * and its connections, the panic trigger's events (a pipe the libvirt
 * module's own thread writes: panic.c) and each child's trigger pipe
 * (trig-guest.c: a trigger is taken when it comes, and an idle guest costs
 * no read); discovery once a second; every timer (rotation, a
 * snapshot's "after", a stop that takes too long, a restart's backoff) is
 * checked on each turn of the loop (guests_tick()), which turns every LOOP_MS
 * and wakes sooner for a snapshot's "after" (guests_next_stop()).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon-int.h"
#include "daemon/hostfilter.h"
#include "opts.h"

#define LOOP_MS		200
#define BUDGET_EVERY	5.0

/* What a descriptor in the poll set is: a control connection's slot (0 and up), or one of these. */
enum { SLOT_LISTEN = -1, SLOT_SIGNAL = -2, SLOT_EVENTS = -3, SLOT_GUEST0 = -4, SLOT_FIXED = 3 };

enum { OPT_CONFIG = 256, OPT_STATUS, OPT_KEY0 = 300 };

static const struct opt_def daemon_opts[] = {
	{ "config", OPT_CONFIG, KIND_PATH, "FILE", "the configuration (default\n"
	  DAEMON_CONF_DEFAULT ";\na missing default is no error)", .what = "a file" },
	{ "status", OPT_STATUS, KIND_FLAG, NULL, "ask the running daemon how its guests are, and exit" },
	{ "domains", OPT_KEY0 + 0, KIND_STRING, "all|none|NAME,...", "the guests to follow, as `list`\n"
	  "names them (default all)", .group = "\nConfiguration keys (each overrides the file's):\n" },
	{ "guest", OPT_KEY0 + 1, KIND_STRING, "'NAME DIR'", "also follow a guest whose ports are in\n"
	  "DIR (record --chardev-dir; repeatable)" },
	{ "connect", OPT_KEY0 + 2, KIND_STRING, "URI", "libvirt URI (default: libvirt's default)" },
	{ "libvirt", OPT_KEY0 + 3, KIND_STRING, "yes|no", "look for libvirt's domains (default yes)" },
	{ "mode", OPT_KEY0 + 4, KIND_STRING, "hold|stream", "hold the guest's ring until a snapshot,\n"
	  "or stream segments (default hold)" },
	{ "events", OPT_KEY0 + 5, KIND_STRING, "LIST", "guest events, SYS[:EV],..." },
	{ "host-events", OPT_KEY0 + 6, KIND_STRING, "LIST", "host events, SYS[:EV],..." },
	{ "window", OPT_KEY0 + 7, KIND_STRING, "SEC", "stream mode: seconds per segment (default 60)" },
	{ "budget", OPT_KEY0 + 8, KIND_STRING, "SIZE", "per guest and segment (MiB, or K/M/G; 0 none)" },
	{ "total-budget", OPT_KEY0 + 9, KIND_STRING, "SIZE", "all of the state directory (default 1024)" },
	{ "min-free", OPT_KEY0 + 10, KIND_STRING, "SIZE", "keep this much free on its file system\n"
	  "(default 512)" },
	{ "state-dir", OPT_KEY0 + 11, KIND_STRING, "DIR", "segments, snapshots, the socket (default\n"
	  DAEMON_STATE_DEFAULT ")" },
	{ "before", OPT_KEY0 + 12, KIND_STRING, "SEC", "a snapshot's default seconds before (30)" },
	{ "after", OPT_KEY0 + 13, KIND_STRING, "SEC", "and after its trigger (5)" },
	{ "trigger-panic", OPT_KEY0 + 14, KIND_STRING, "yes|no", "snapshot a guest that panics (libvirt's\n"
	  "crash event, QMP's GUEST_PANICKED; default yes)" },
	{ "trigger-host-filter", OPT_KEY0 + 15, KIND_STRING, "'SYS:EV[ if FILTER]'", "a host event that\n"
	  "the kernel matches seals a snapshot of its\nQEMU's guest, else of every guest\n(repeatable)" },
	{ "stop-timeout", OPT_KEY0 + 16, KIND_STRING, "SEC", "a child's time to stop (default 60)" },
	{ "trigger-host-cooldown", OPT_KEY0 + 17, KIND_STRING, "SEC", "one host-event snapshot per guest\n"
	  "in this time (default 60)" },
	{ "trigger-guest-filter", OPT_KEY0 + 18, KIND_STRING, "'SYS:EV[ if FILTER]'", "snapshot a guest\n"
	  "whose agent sees this event match (its kernel's\n"
	  "filter; one a minute per guest at most)" },
	{ NULL },
};

static const struct opt_cmd daemon_cmd = {
	.name = "daemon",
	.usage = "[--config FILE] [--KEY VALUE]...\n"
"       virtio-trace-collect daemon --status [--state-dir DIR]",
	.about =
"Follow every guest with trace ports (libvirt's domains with the channels\n"
"`setup --domain --apply` adds, QEMUs found as `record --all` finds them, and\n"
"guests named with their ports) and keep a `record` child on each: in hold mode\n"
"one that keeps the guest's ring until a snapshot, in stream mode one per\n"
"segment of --window seconds, the last two kept. `virtio-trace-collect\n"
"snapshot NAME` seals them into STATE/snapshots/, as does a host event that\n"
"matches a --trigger-host-filter. The whole state directory stays under\n"
"--total-budget. Runs in the foreground (systemd's virtio-trace-collect.service);\n"
"SIGTERM stops the children and ends it.\n",
	.tail = "Exit status: 0 stopped by SIGTERM or SIGINT (--status: answered); 1 an error;\n"
"2 usage error or a bad configuration; 6 --status: no daemon answers.\n"
"See virtio-trace-collect-daemon(1).\n",
	.defs = daemon_opts,
	.col = 27,
};

/**
 * daemon_now() - the daemon's clock: monotonic seconds
 *
 * Return: seconds.
 */
double daemon_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The command line: --config and --status here, each key into @c after the file. */
static int parse(struct daemon_conf *c, int argc, char **argv, bool *status)
{
	const char *config = DAEMON_CONF_DEFAULT;
	const char *const *keys = conf_keys();
	bool given = false;
	struct opt_val v;
	int o, i, ret;

	optind = 1;
	while ((o = opt_parse(&daemon_cmd, argc, argv, &v)) != -1) {
		if (o == OPT_HELP)
			return 1;
		if (o == OPT_CONFIG) {
			config = v.s;
			given = true;
		} else if (o == OPT_STATUS) {
			*status = true;
		} else if (o < OPT_KEY0) {
			return -ECANCELED;	/* opt_parse() said why, and its Try line */
		}
	}
	if (optind < argc) {
		collect_usage("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	ret = conf_load(c, config, given);
	if (ret < 0)
		return ret;
	optind = 1;
	while ((o = opt_parse(&daemon_cmd, argc, argv, &v)) != -1) {
		char where[64];

		if (o < OPT_KEY0)
			continue;
		i = o - OPT_KEY0;
		snprintf(where, sizeof(where), "--%s", keys[i]);
		ret = conf_set(c, keys[i], v.s, where);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int signals_open(sigset_t *old)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, old) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

static void reap(struct daemon *d)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		guests_reaped(d, pid, status);
}

static void on_signal(struct daemon *d, int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(d);
		} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			if (!d->stopping)
				log_info("signal %u: stopping the children", si.ssi_signo);
			d->stopping = true;
			guests_stop_all(d);
		}
	}
	reap(d);
}

/* The loop's wait: LOOP_MS, or less when a snapshot's child is due to stop sooner. */
static int loop_wait_ms(const struct daemon *d)
{
	double due = guests_next_stop(d), ms;

	if (!due)
		return LOOP_MS;
	ms = ceil((due - daemon_now()) * 1000);
	return ms <= 0 ? 0 : ms < LOOP_MS ? (int)ms : LOOP_MS;
}

/*
 * Room for @n descriptors in the loop's poll set. Without it the guests' trigger pipes are
 * left out of the set and read on each turn instead (trig_guest_poll()).
 */
static bool poll_room(struct daemon *d, unsigned int n)
{
	struct pollfd *p;
	int *slot;

	if (n <= d->poll_cap)
		return true;
	p = realloc(d->poll_fds, n * sizeof(*p));
	if (!p)
		return false;
	d->poll_fds = p;
	slot = realloc(d->poll_slots, n * sizeof(*slot));
	if (!slot)
		return false;
	d->poll_slots = slot;
	d->poll_cap = n;
	return true;
}

/* The poll set: the signals, the socket and its connections, the panic events, the trigger pipes. */
static unsigned int poll_set(struct daemon *d, int sfd, bool pipes)
{
	struct pollfd *p = d->poll_fds;
	int *slot = d->poll_slots;
	unsigned int n = 0, i;

	p[n].fd = sfd, p[n].events = POLLIN, slot[n++] = SLOT_SIGNAL;
	if (d->listen_fd >= 0)
		p[n].fd = d->listen_fd, p[n].events = POLLIN, slot[n++] = SLOT_LISTEN;
	if (d->events_fd >= 0)
		p[n].fd = d->events_fd, p[n].events = POLLIN, slot[n++] = SLOT_EVENTS;
	for (i = 0; i < DAEMON_MAX_CLIENTS; i++)
		if (d->clients[i] >= 0)
			p[n].fd = d->clients[i], p[n].events = POLLIN, slot[n++] = (int)i;
	for (i = 0; pipes && i < d->nr; i++)
		if (d->g[i].trig.rfd_open)
			p[n].fd = d->g[i].trig.rfd, p[n].events = POLLIN, slot[n++] = SLOT_GUEST0 - (int)i;
	return n;
}

static void loop_once(struct daemon *d, int sfd)
{
	bool pipes = poll_room(d, SLOT_FIXED + DAEMON_MAX_CLIENTS + d->nr);
	unsigned int n, i;
	double now;
	int s;

	if (!pipes && !poll_room(d, SLOT_FIXED + DAEMON_MAX_CLIENTS)) {
		poll(NULL, 0, LOOP_MS);		/* no memory for the set: wait a turn */
		return;
	}
	n = poll_set(d, sfd, pipes);
	if (poll(d->poll_fds, n, loop_wait_ms(d)) > 0) {
		for (i = 0; i < n; i++) {
			if (!d->poll_fds[i].revents)
				continue;
			s = d->poll_slots[i];
			if (s == SLOT_SIGNAL)
				on_signal(d, sfd);
			else if (s == SLOT_LISTEN)
				ctl_accept(d);
			else if (s == SLOT_EVENTS)
				panic_read(d);
			else if (s <= SLOT_GUEST0)
				trig_guest_ready(d, (unsigned int)(SLOT_GUEST0 - s), d->poll_fds[i].fd);
			else if (d->clients[s] == d->poll_fds[i].fd)
				ctl_read(d, s);
		}
	}
	now = daemon_now();
	if (!d->stopping && now - d->last_discovery >= 1.0) {
		d->last_discovery = now;
		guests_discover(d);
	}
	if (!d->stopping && now - d->last_budget >= BUDGET_EVERY) {
		d->last_budget = now;
		state_budget(d);
	}
	hostfilter_tick(d);
	if (!pipes)
		trig_guest_poll(d);
	guests_tick(d);
}

static int run(struct daemon *d)
{
	bool refused = false;
	sigset_t old;
	int sfd, ret;

	sfd = signals_open(&old);
	if (sfd < 0) {
		log_err("signals: %s", strerror(-sfd));
		return EXIT_FAIL;
	}
	ret = state_open(d);
	if (ret < 0)
		goto err_close_sfd;
	ret = hostfilter_open(d);
	if (ret < 0) {
		refused = ret == -EINVAL;	/* the kernel refused a filter: a bad configuration */
		goto err_state;
	}
	ret = ctl_listen(d);
	if (ret < 0)
		goto err_hostfilter;
	panic_open(d);
	log_info("following %s%s in %s mode; state in %s", d->conf.all ? "every guest found" :
		 d->conf.names[0] ? d->conf.names : "no guest found",
		 d->conf.nr_guests ? " and the guests named with their ports" : "",
		 d->conf.mode == MODE_HOLD ? "hold" : "stream", d->conf.state_dir);
	state_budget(d);
	while (!d->stopping || guests_running(d))
		loop_once(d, sfd);
	log_info("stopped");
	free(d->poll_fds);
	free(d->poll_slots);
	panic_close(d);
	ctl_close(d);
err_hostfilter:
	hostfilter_close(d);
err_state:
	state_close(d);
err_close_sfd:
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return refused ? EXIT_USAGE : ret < 0 ? EXIT_FAIL : EXIT_OK;
}

/**
 * daemon_main() - the daemon subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: an exit status.
 */
int daemon_main(int argc, char **argv)
{
	struct daemon d;
	bool status = false;
	ssize_t n;
	int ret, i;

	memset(&d, 0, sizeof(d));
	conf_defaults(&d.conf);
	ret = parse(&d.conf, argc, argv, &status);
	if (ret) {
		conf_free(&d.conf);
		if (ret > 0)
			return EXIT_OK;
		if (ret == -EINVAL)
			opt_try_help();
		return EXIT_USAGE;
	}
	if (status) {
		ret = ctl_ask(d.conf.state_dir, "status\n", true);
		conf_free(&d.conf);
		return ret;
	}
	/*
	 * The children run this very executable: by its path (their name in ps and
	 * in the host's events), or through /proc/self/exe once an upgrade replaced it.
	 */
	n = readlink("/proc/self/exe", d.exe, sizeof(d.exe) - 1);
	d.exe[n > 0 ? n : 0] = '\0';
	d.state_fd = d.guests_fd = d.snaps_fd = d.lock_fd = d.listen_fd = d.events_fd = -1;
	for (i = 0; i < DAEMON_MAX_CLIENTS; i++)
		d.clients[i] = -1;
	ret = run(&d);
	free(d.g);
	conf_free(&d.conf);
	return ret;
}
