// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The guests the daemon follows, and their `record` children. Discovery
 * (once a second) says which guests are there: those named with their port
 * directories, and what `list` finds (libvirt's domains with our channels,
 * root's QEMUs by /proc/PID/exe) when the configuration wants them. A guest
 * that appears gets a child; one that goes has its child stopped and reaped.
 * A child that ends on its own is restarted after a backoff that doubles up
 * to five minutes; after DAEMON_CUT_OFF_AFTER in a row the guest is cut off
 * (no more children) until it goes and comes back: one guest that misbehaves
 * costs the others nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon-int.h"
#include "daemon/hostfilter.h"
#include "setup/list.h"
#include "setup/qemuproc.h"

#define MAX_ARGS	(24 + 2 * COLLECT_MAX_EVENTS)
#define HEALTHY_AFTER	60.0	/* a child that ran this long resets the backoff */

/**
 * guests_find() - a guest by name
 * @d: the daemon
 * @name: its name
 *
 * Return: the guest, or NULL.
 */
struct dguest *guests_find(struct daemon *d, const char *name)
{
	unsigned int i;

	for (i = 0; i < d->nr; i++)
		if (!strcmp(d->g[i].name, name))
			return &d->g[i];
	return NULL;
}

static struct dguest *add(struct daemon *d, const char *name, const char *spec, const char *where)
{
	struct dguest *n, *g = guests_find(d, name);

	if (g)
		return g;
	n = realloc(d->g, (d->nr + 1) * sizeof(*n));
	if (!n)
		return NULL;
	d->g = n;
	g = &n[d->nr++];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	snprintf(g->spec, sizeof(g->spec), "%s", spec);
	snprintf(g->where, sizeof(g->where), "%s", where);
	g->next_start = daemon_now();
	g->backoff = DAEMON_BACKOFF_MIN;
	log_info("%s: found (%s %s)", name, spec, where);
	return g;
}

/* A port directory holds a control port: a socket, or the FIFO pair's .in. */
static bool ports_there(const char *dir)
{
	struct stat st;
	bool ok;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = (!fstatat(fd, "agent-ctl-path", &st, AT_SYMLINK_NOFOLLOW) && S_ISSOCK(st.st_mode)) ||
	     (!fstatat(fd, "agent-ctl-path.in", &st, AT_SYMLINK_NOFOLLOW) && S_ISFIFO(st.st_mode));
	close(fd);
	return ok;
}

static bool wanted(const struct daemon_conf *c, const char *name)
{
	const char *p = c->names;
	size_t n = strlen(name);

	if (c->all)
		return true;
	while (*p) {
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return false;
}

/* Once per outage: libvirt could not be asked (@note says why). */
static void log_libvirt_down(const char *note)
{
	static double said;

	if (daemon_now() - said > 60) {
		log_warn("%s; its domains are kept as they were until it answers", note);
		said = daemon_now();
	}
}

/*
 * @g seen in what list found (@l). A QEMU other than the one it migrated out of
 * ends "migrated out"; a new QEMU waiting for its guest to migrate in (that
 * QEMU's by /proc, list.c) gets record --incoming for its first child, as
 * record --all would give it its ports and QMP socket. One with -incoming whose
 * listener is not there yet holds its first child DAEMON_INCOMING_WAIT for it.
 */
static void found(struct dguest *g, const struct list_guest *l)
{
	pid_t qemu = l->owner_known ? l->qemu_pid : 0;
	double now = daemon_now();

	g->present = true;
	if (g->migrated_out && qemu != g->out_qemu) {
		log_info("%s: back in another QEMU (pid %d)", g->name, (int)qemu);
		g->migrated_out = false;
	}
	if (!g->pid && qemu && qemu != g->qemu_pid && l->incoming_opt && !l->incoming) {
		g->incoming_until = now + DAEMON_INCOMING_WAIT;
		g->next_start = g->next_start > g->incoming_until ? g->next_start : g->incoming_until;
	}
	if (!g->pid && qemu && !g->incoming && l->incoming && !l->libvirt && l->chardev_dir[0] &&
	    (qemu != g->qemu_pid || now < g->incoming_until)) {
		g->incoming = true;
		g->next_start = now;
		snprintf(g->ports, sizeof(g->ports), "%s", l->chardev_dir);
		snprintf(g->qmp, sizeof(g->qmp), "%s", l->qmp_path);
		log_info("%s: QEMU %d waits for it to migrate in", g->name, (int)qemu);
	}
	g->qemu_pid = qemu;
}

static void discover_listed(struct daemon *d)
{
	struct list_found f;
	struct dguest *g;
	unsigned int i;

	if (list_find(d->conf.uri[0] ? d->conf.uri : NULL, d->conf.no_libvirt, false, &f) < 0)
		return;
	/*
	 * libvirt not answering (libvirtd restarting) says nothing of its domains: they stay,
	 * their QEMUs are not taken for new guests of their own.
	 */
	if (f.libvirt_note[0] && !d->conf.no_libvirt) {
		log_libvirt_down(f.libvirt_note);
		for (i = 0; i < d->nr; i++)
			if (!strcmp(d->g[i].spec, "domain"))
				d->g[i].present = true;
	}
	for (i = 0; i < f.nr; i++) {
		const struct list_guest *l = &f.g[i];

		if (!l->running || !list_ports_ready(l) || !wanted(&d->conf, l->name) ||
		    !collect_name_ok(l->name))
			continue;
		g = guests_find(d, l->name);
		if (g && strcmp(g->spec, l->libvirt ? "domain" : "qemu"))
			continue;	/* a guest named with its ports comes first */
		g = add(d, l->name, l->libvirt ? "domain" : "qemu", l->libvirt ? l->domain : l->name);
		if (g)
			found(g, l);
	}
	list_free(&f);
}

/* Whether process @pid (a guest's QEMU, 0: not known) still runs, not exiting. */
static bool qemu_runs(pid_t pid)
{
	return pid > 0 && qemuproc_alive(pid);
}

static void stop(struct dguest *g, enum stop_why why)
{
	if (!g->pid || g->stopping != STOP_NONE)
		return;
	kill(g->pid, SIGINT);
	g->stopping = why;
	g->stop_sent = daemon_now();
	g->second_int = false;
}

/**
 * guests_discover() - look for the guests: new ones get a child (by
 * guests_tick()), gone ones have theirs stopped
 * @d: the daemon
 */
void guests_discover(struct daemon *d)
{
	struct dguest *g;
	unsigned int i;

	for (i = 0; i < d->nr; i++)
		d->g[i].present = false;
	for (i = 0; i < d->conf.nr_guests; i++) {
		const struct daemon_conf_guest *c = &d->conf.guests[i];

		if (!ports_there(c->dir))
			continue;
		g = add(d, c->name, "dir", c->dir);
		if (g)
			g->present = true;
	}
	if (d->conf.all || d->conf.names[0])
		discover_listed(d);
	for (i = 0; i < d->nr; i++) {
		g = &d->g[i];
		if (g->present) {
			g->missed = 0;
			continue;
		}
		if (!g->pid || g->stopping != STOP_NONE)
			continue;
		/*
		 * One look that misses a guest whose QEMU still runs is not its end (seen in a
		 * loaded nested guest, once in a recording): the next look decides.
		 */
		if (!g->missed++ && qemu_runs(g->qemu_pid)) {
			log_warn("%s: not found, but its QEMU (pid %d) runs: looking again before "
				 "stopping its recording", g->name, (int)g->qemu_pid);
			g->present = true;
			continue;
		}
		log_info("%s: gone: stopping its recording", g->name);
		stop(g, STOP_GONE);
	}
}

/*
 * Splits a comma-separated list into "-e" words: COLLECT_MAX_EVENTS at most (conf.c refuses
 * more), which leaves MAX_ARGS' 24 for the rest of the line (23 at most, the NULL included).
 */
static unsigned int add_events(char **argv, unsigned int n, char *list)
{
	unsigned int k = 0;
	char *tok, *save;

	for (tok = strtok_r(list, ",", &save); tok && k < COLLECT_MAX_EVENTS;
	     tok = strtok_r(NULL, ",", &save), k++) {
		argv[n++] = "-e";
		argv[n++] = tok;
	}
	return n;
}

/* record's command line for @g, into @out. @events and @size are buffers of the caller's. */
static void child_args(struct daemon *d, struct dguest *g, char **argv, char *out, char *events,
		       char *size, char *all)
{
	const struct daemon_conf *c = &d->conf;
	unsigned int n = 0;

	argv[n++] = "virtio-trace-collect";
	argv[n++] = "record";
	if (!strcmp(g->spec, "dir")) {
		argv[n++] = "--chardev-dir";
		argv[n++] = g->where;
		argv[n++] = "--name";
		argv[n++] = g->name;
	} else if (!strcmp(g->spec, "domain")) {
		argv[n++] = "--domain";
		argv[n++] = g->where;
		if (c->uri[0]) {
			argv[n++] = "--connect";
			argv[n++] = (char *)c->uri;
		}
	} else if (g->incoming && c->mode != MODE_HOLD) {	/* --hold does not follow one */
		argv[n++] = "--chardev-dir";
		argv[n++] = g->ports;
		argv[n++] = "--name";
		argv[n++] = g->name;
		argv[n++] = "--incoming";
		snprintf(all, COLLECT_NAME_MAX + 8, "%d", (int)g->qemu_pid);
		argv[n++] = "--qemu-pid";
		argv[n++] = all;
		if (g->qmp[0]) {
			argv[n++] = "--qmp";
			argv[n++] = g->qmp;
		}
	} else {
		snprintf(all, COLLECT_NAME_MAX + 8, "--all=%s", g->where);
		argv[n++] = all;
		/* The child looks for its QEMU as the daemon found it: libvirt = no asks no libvirt. */
		if (c->no_libvirt)
			argv[n++] = "--no-libvirt";
	}
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n++] = "--quiet";
	if (c->mode == MODE_HOLD) {
		argv[n++] = "--hold";
		/*
		 * A held session is silent: a STATS_REQ every 5 s finds an agent that restarted,
		 * a probe burst a minute follows the clock's drift.
		 */
		argv[n++] = "--sync-interval";
		argv[n++] = DAEMON_HOLD_PROBE;
		argv[n++] = "--alive-interval";
		argv[n++] = DAEMON_HOLD_ALIVE;
	}
	n = add_events(argv, n, events);
	if (c->host_events[0]) {
		argv[n++] = "--host-events";
		argv[n++] = (char *)c->host_events;
	}
	if (c->budget) {
		snprintf(size, 32, "%llu", (unsigned long long)c->budget);
		argv[n++] = "--max-size";
		argv[n++] = size;
	}
	n = trig_guest_args(d, g, argv, n);
	argv[n] = NULL;
}

static void child(const char *exe, char **argv, pid_t parent)
{
	sigset_t mask;
	int fd;

	/*
	 * The stop signals stay blocked, at their default action: a SIGINT that
	 * comes before record takes them through its signalfd waits for it there.
	 * Unblocked, it was discarded (a daemon started from a shell in the
	 * background inherits SIGINT ignored, and the kernel drops an ignored
	 * signal that is not blocked) or fatal. record blocks the same ones.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* A daemon killed outright takes its children with it (they stop cleanly). */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(127);
	setpgid(0, 0);	/* a terminal's ^C is the daemon's to pass on */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		dup2(fd, STDIN_FILENO);
	if (exe[0])
		execv(exe, argv);
	execv("/proc/self/exe", argv);
	_exit(127);
}

static int spawn(struct daemon *d, struct dguest *g)
{
	char out[4200], events[sizeof(d->conf.events)], size[32], all[COLLECT_NAME_MAX + 8];
	char *argv[MAX_ARGS];
	pid_t parent = getpid(), pid;
	int gfd;

	state_budget(d);
	gfd = state_guest_dir(d, g->name);
	if (gfd < 0)
		return gfd;
	close(gfd);
	if (state_rotate(d, g) < 0)
		return -EIO;
	snprintf(out, sizeof(out), "%s/guests/%s/current", d->conf.state_dir, g->name);
	snprintf(events, sizeof(events), "%s", d->conf.events);
	child_args(d, g, argv, out, events, size, all);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid)
		child(d->exe, argv, parent);
	trig_guest_forked(g);
	g->pid = pid;
	g->started = daemon_now();
	g->stopping = STOP_NONE;
	log_info("%s: recording (pid %d) into %s%s", g->name, (int)pid, out,
		 g->incoming && d->conf.mode != MODE_HOLD ?
		 " (record --incoming: it takes the session over when the guest arrives)" : "");
	return 0;
}

static void answer_all(struct daemon *d, struct dguest *g, const char *text)
{
	unsigned int i;

	for (i = 0; i < DAEMON_MAX_WAITERS; i++) {
		if (g->snap.waiters[i] >= 0)
			ctl_answer(d, g->snap.waiters[i], "%s\n", text);
		g->snap.waiters[i] = -1;
	}
	g->snap.active = false;
}

/* When a pending snapshot's child is stopped: its --after over, and the child DAEMON_MIN_AGE old. */
static double snap_stop_due(const struct dguest *g)
{
	double due = g->snap.trigger + g->snap.after;

	return due < g->started + DAEMON_MIN_AGE ? g->started + DAEMON_MIN_AGE : due;
}

/* The child of a pending snapshot has ended (stopped for @why): seal what it wrote, answer. */
static void seal(struct daemon *d, struct dguest *g, int code, enum stop_why why)
{
	double end = g->snap.trigger + g->snap.after;
	char path[4400], text[4500];
	int ret = -EIO;

	if (code == EXIT_OK || code == EXIT_PARTIAL)
		ret = state_seal(d, g, path, sizeof(path));
	if (ret < 0) {
		snprintf(text, sizeof(text), "error %s: the recording could not be sealed (record exited %d%s%s)",
			 g->name, code, ret != -EIO ? ": " : "", ret != -EIO ? strerror(-ret) : "");
		log_err("%s", text + 6);
		hostfilter_unsealed(d, g);
		state_rotate(d, g);
	} else {
		snprintf(text, sizeof(text), "ok %s", path);
		snprintf(g->last_snap, sizeof(g->last_snap), "%s", strrchr(path, '/') + 1);
		snprintf(g->last_reason, sizeof(g->last_reason), "%s", g->snap.reason);
		if (why == STOP_SNAPSHOT)	/* its stop is its time past the window (issue 40) */
			log_info("%s: snapshot %s (%s): sealed %.3f s past its --after time, its record "
				 "stopped %.3f s past it", g->name, path, g->snap.reason,
				 daemon_now() - end, g->stop_sent - end);
		else
			log_info("%s: snapshot %s (%s)", g->name, path, g->snap.reason);
	}
	answer_all(d, g, text);
}

/* A child that ended unasked: keep its segment, restart after a backoff. */
static void failed(struct dguest *g, int code, double now)
{
	if (now - g->started >= HEALTHY_AFTER) {
		g->failures = 0;
		g->backoff = DAEMON_BACKOFF_MIN;
	}
	g->failures++;
	g->next_start = now + g->backoff;
	snprintf(g->last_error, sizeof(g->last_error), "record exited %d", code);
	if (g->failures >= DAEMON_CUT_OFF_AFTER) {
		g->cut_off = true;
		log_err("%s: record ended %u times in a row (last: exit %d): cut off until the guest "
			"goes and comes back", g->name, g->failures, code);
	} else {
		log_warn("%s: record exited %d: restarting in %.0f s", g->name, code, g->backoff);
	}
	g->backoff = g->backoff * 2 > DAEMON_BACKOFF_MAX ? DAEMON_BACKOFF_MAX : g->backoff * 2;
}

/* A child that ended by itself because its guest left this host: a normal end. */
static void migrated_out(struct dguest *g, int code)
{
	g->migrated_out = true;
	g->out_qemu = g->qemu_pid;
	g->failures = 0;
	g->backoff = DAEMON_BACKOFF_MIN;
	g->last_error[0] = '\0';
	log_info("%s: migrated out (record exited %d: QEMU reported the migration completed); no new "
		 "recording while its QEMU (pid %d) stays", g->name, code, (int)g->qemu_pid);
}

/**
 * guests_reaped() - a child has ended
 * @d: the daemon
 * @pid: the child
 * @status: its wait status
 */
void guests_reaped(struct daemon *d, pid_t pid, int status)
{
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	double now = daemon_now();
	enum stop_why why;
	struct dguest *g = NULL;
	unsigned int i;

	for (i = 0; i < d->nr && !g; i++)
		if (d->g[i].pid == pid)
			g = &d->g[i];
	if (!g)
		return;
	trig_guest_reaped(d, g);	/* its last lines: a panic may ask for this very child's files */
	g->pid = 0;
	g->incoming = false;	/* its takeover is done, or failed: the next child is a plain one */
	why = g->stopping;
	g->stopping = STOP_NONE;
	if (why == STOP_NONE && (code == EXIT_OK || code == EXIT_PARTIAL) &&
	    state_migrated_out(d, g->name))
		migrated_out(g, code);
	if (g->snap.active) {
		seal(d, g, code, why);
		g->next_start = now;
		if (why == STOP_NONE && !g->migrated_out)
			failed(g, code, now);
		return;
	}
	state_rotate(d, g);
	if (why == STOP_NONE && !g->migrated_out)
		failed(g, code, now);
	else if (why == STOP_ROTATE)
		g->next_start = now;
	else
		log_info("%s: recording stopped (exit %d)", g->name, code);
}

static void remove_guest(struct daemon *d, unsigned int i)
{
	struct dguest *g = &d->g[i];

	if (g->snap.active) {
		char text[200];

		snprintf(text, sizeof(text), "error %s: the guest is gone", g->name);
		answer_all(d, g, text);
	}
	log_info("%s: detached", g->name);
	memmove(g, g + 1, (d->nr - i - 1) * sizeof(*g));
	d->nr--;
}

static void tick_one(struct daemon *d, struct dguest *g, double now)
{
	if (g->pid && g->stopping != STOP_NONE) {
		double second = g->stopping == STOP_GONE ? DAEMON_GONE_INT : DAEMON_SECOND_INT;

		if (!g->second_int && now - g->stop_sent > second && second < d->conf.stop_timeout) {
			log_warn("%s: record (pid %d) has not stopped in %.0f s: a second SIGINT (it keeps "
				 "what it has)", g->name, (int)g->pid, second);
			kill(g->pid, SIGINT);
			g->second_int = true;
		}
		if (now - g->stop_sent > d->conf.stop_timeout) {
			log_err("%s: record (pid %d) did not stop within %.0f s: SIGKILL", g->name,
				(int)g->pid, d->conf.stop_timeout);
			kill(g->pid, SIGKILL);
			g->stop_sent = now + 3600;	/* once */
		}
		return;
	}
	if (g->pid) {
		if (now - g->started < DAEMON_MIN_AGE)
			return;
		if (g->snap.active && now >= snap_stop_due(g))
			stop(g, STOP_SNAPSHOT);
		else if (d->conf.mode == MODE_STREAM && now - g->started >= d->conf.window)
			stop(g, STOP_ROTATE);
		return;
	}
	if (g->present && !d->stopping && !g->cut_off && !g->migrated_out && now >= g->next_start) {
		int ret = spawn(d, g);

		if (ret < 0) {
			log_err("%s: cannot start record: %s", g->name, strerror(-ret));
			g->next_start = now + DAEMON_BACKOFF_MAX;
		}
	}
}

/**
 * guests_tick() - what is due: rotations, snapshots' ends, stops that take
 * too long, children to start; guests gone and stopped leave the table
 * @d: the daemon
 */
void guests_tick(struct daemon *d)
{
	double now = daemon_now();
	unsigned int i;

	for (i = d->nr; i-- > 0;) {
		struct dguest *g = &d->g[i];

		if (!g->present && !g->pid && (!d->stopping || !g->snap.active)) {
			/* One with a snapshot stays in --status ("gone"): a crashed domain's, say. */
			if ((!g->last_snap[0] && !g->migrated_out) || d->stopping) {
				remove_guest(d, i);
				continue;
			}
			if (!g->kept)
				log_info("%s: detached (kept in --status for its %s)", g->name,
					 g->migrated_out ? "migration" : "last snapshot");
		}
		g->kept = !g->present && !g->pid;
		if (!g->present)
			g->cut_off = false;
		tick_one(d, g, now);
	}
}

/**
 * guests_next_stop() - when the next snapshot's child is due to be stopped
 * @d: the daemon
 *
 * The loop wakes then rather than at its next turn (up to LOOP_MS later): a
 * snapshot's time past its --after is the child's stop, not the loop's.
 *
 * Return: daemon_now() time of the earliest, or 0 when none is pending.
 */
double guests_next_stop(const struct daemon *d)
{
	double next = 0;
	unsigned int i;

	for (i = 0; i < d->nr; i++) {
		const struct dguest *g = &d->g[i];
		double due;

		if (!g->pid || g->stopping != STOP_NONE || !g->snap.active)
			continue;
		due = snap_stop_due(g);
		if (!next || due < next)
			next = due;
	}
	return next;
}

/**
 * guests_stop_all() - stop every child (SIGTERM to the daemon); pending
 * snapshots are told so
 * @d: the daemon
 */
void guests_stop_all(struct daemon *d)
{
	unsigned int i;

	for (i = 0; i < d->nr; i++) {
		struct dguest *g = &d->g[i];
		char text[200];

		if (g->snap.active) {
			snprintf(text, sizeof(text), "error %s: the daemon is stopping", g->name);
			answer_all(d, g, text);
		}
		if (g->pid && g->stopping == STOP_NONE)
			stop(g, STOP_SHUTDOWN);
		g->present = false;
	}
}

/**
 * guests_running() - whether any child is still running
 * @d: the daemon
 *
 * Return: true if one is.
 */
bool guests_running(const struct daemon *d)
{
	unsigned int i;

	for (i = 0; i < d->nr; i++)
		if (d->g[i].pid)
			return true;
	return false;
}

/**
 * guests_snapshot() - ask for a snapshot of @g: its child is stopped @after
 * seconds from now, and its recording sealed (guests_reaped())
 * @d: the daemon
 * @g: the guest
 * @before: seconds before now that it should hold
 * @after: seconds after
 * @reason: why (already sanitised)
 * @client: the control connection to answer
 *
 * A guest whose child is already stopping because the guest went (a domain
 * destroyed on its crash, whose crash event came after discovery saw it gone)
 * gets its snapshot too: that child's recording is sealed when it ends.
 *
 * Return: 0, -ENOTCONN when no child records the guest (or it is stopping for
 * the daemon's end), -EBUSY when too many wait.
 */
int guests_snapshot(struct daemon *d, struct dguest *g, double before, double after,
		    const char *reason, int client)
{
	struct snap_req *s = &g->snap;
	unsigned int i;

	(void)d;
	/* A child stopping because its guest went still ends with its files: a crash races that. */
	if (!g->pid || (g->stopping != STOP_NONE && g->stopping != STOP_ROTATE && g->stopping != STOP_GONE))
		return -ENOTCONN;
	if (!s->active) {
		memset(s, 0, sizeof(*s));
		s->active = true;
		s->trigger = daemon_now();
		s->wall = time(NULL);
		s->before = before;
		s->after = after;
		snprintf(s->reason, sizeof(s->reason), "%s", reason);
		for (i = 0; i < DAEMON_MAX_WAITERS; i++)
			s->waiters[i] = -1;
	} else if (before > s->before) {
		s->before = before;	/* one snapshot answers both */
	}
	for (i = 0; i < DAEMON_MAX_WAITERS; i++)
		if (s->waiters[i] < 0) {
			s->waiters[i] = client;
			return 0;
		}
	return -EBUSY;
}
