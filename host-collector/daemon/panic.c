// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The panic trigger (trigger-panic = yes): a guest that panics gets a
 * snapshot with the reason "panic", asked through guests_snapshot() as the
 * control socket asks for one. The panics are libvirt's lifecycle events
 * (VIR_DOMAIN_EVENT_CRASHED, which a pvpanic device raises), followed by a
 * thread of the libvirt module (setup/libvirt-events.c) that writes them as
 * lines into a pipe read here, in the daemon's one loop. $VT_DAEMON_EVENTS
 * names a file (a FIFO) to read the same lines from instead of libvirt: the
 * tests' fake event source.
 *
 * A QEMU found without libvirt says its guest's panic only on its QMP
 * socket (GUEST_PANICKED), whose one client is the guest's `record` child:
 * the child passes it on through its trigger pipe (trig-guest.c), and the
 * snapshot's reason is "panic-qmp". The pipe is the guest: the line must
 * name the child's own guest, and nothing on it can name another.
 *
 * Whoever says it, a guest gets one panic snapshot per DAEMON_PANIC_GAP:
 * libvirt and QMP saying the same panic make one snapshot, and a guest that
 * panics again and again (a pvpanic a guest's root can write at will, with
 * QEMU's panic action "run") does not fill the disk. record passes on one
 * GUEST_PANICKED per recording.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon-int.h"
#include "setup/libvirt.h"

#define PANIC_REASON	"panic"
#define PANIC_REASON_QMP	"panic-qmp"
#define LINE_MAX_LEN	600

static char line_buf[LINE_MAX_LEN];
static size_t line_len;

/**
 * panic_open() - start following libvirt's crash events, if the configuration
 * wants panics and libvirt's domains are followed (or $VT_DAEMON_EVENTS names
 * a source); QMP's come through the children's pipes whatever this finds
 * @d: the daemon, its signals already blocked (the libvirt thread inherits that)
 *
 * A failure is logged and leaves the trigger off; the daemon runs on.
 */
void panic_open(struct daemon *d)
{
	const char *fake = getenv("VT_DAEMON_EVENTS");
	int p[2], ret;

	d->events_fd = -1;
	d->events_note[0] = '\0';
	if (!d->conf.panic)
		return;
	if (fake && fake[0]) {
		/* O_RDWR: a FIFO whose writers come and go never reads as its end. */
		d->events_fd = open(fake, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (d->events_fd < 0)
			log_err("panic trigger: %s: %s", fake, strerror(errno));
		else
			snprintf(d->events_note, sizeof(d->events_note), "events from %s", fake);
		return;
	}
	if (!d->conf.all && !d->conf.names[0])
		return;	/* no QEMU is followed: nothing can raise a panic */
	if (d->conf.no_libvirt) {
		/* QEMUs found without libvirt: their children pass on QMP's word (trig-guest.c). */
		snprintf(d->events_note, sizeof(d->events_note), "QMP only (libvirt = no)");
		return;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		log_err("panic trigger: pipe: %s", strerror(errno));
		return;
	}
	ret = libvirt_events_start(d->conf.uri, p[1]);
	if (ret < 0) {
		log_err("panic trigger: libvirt's events cannot be followed: %s", strerror(-ret));
		close(p[0]);
		close(p[1]);
		return;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	d->events_fd = p[0];
	snprintf(d->events_note, sizeof(d->events_note), "libvirt events: connecting");
}

/* A guest named by a libvirt domain: the domain followed as such, else a guest of that name. */
static struct dguest *by_domain(struct daemon *d, const char *dom)
{
	unsigned int i;

	for (i = 0; i < d->nr; i++)
		if (!strcmp(d->g[i].spec, "domain") && !strcmp(d->g[i].where, dom))
			return &d->g[i];
	return collect_name_ok(dom) ? guests_find(d, dom) : NULL;
}

/* @g panicked (@detail: who says so, how): its snapshot, one per DAEMON_PANIC_GAP. */
static void panicked(struct daemon *d, struct dguest *g, const char *reason, const char *detail)
{
	double now = daemon_now();
	int ret;

	if (g->panic.last && now - g->panic.last < DAEMON_PANIC_GAP) {
		g->panic.ignored++;
		log_info("%s: the guest crashed (%s): its panic snapshot was asked for %.1f s ago: not "
			 "another (one per %.0f s; %llu ignored so far)", g->name, detail,
			 now - g->panic.last, DAEMON_PANIC_GAP, (unsigned long long)g->panic.ignored);
		return;
	}
	ret = guests_snapshot(d, g, d->conf.before, d->conf.after, reason, -1);
	if (ret == -ENOTCONN) {
		log_warn("%s: the guest crashed (%s) but no recording runs: no snapshot", g->name, detail);
		return;
	}
	g->panic.last = now;
	g->panic.taken++;
	log_warn("%s: the guest crashed (%s): snapshot asked for (%s; before %.1f s, after %.1f s)",
		 g->name, detail, reason, g->snap.before, g->snap.after);
}

static void crashed(struct daemon *d, const char *detail, const char *dom)
{
	struct dguest *g = by_domain(d, dom);

	if (!g) {
		log_info("domain %s crashed (%s): not a guest followed here", dom, detail);
		return;
	}
	panicked(d, g, PANIC_REASON, detail);
}

/**
 * panic_child_line() - a line of @g's child on its trigger pipe: "panic NAME
 * ACTION", QMP's GUEST_PANICKED (record/trigger-guest.c)
 * @d: the daemon
 * @g: the guest whose child's pipe it came through: the only one it can be of
 * @line: the line, without its newline
 */
void panic_child_line(struct daemon *d, struct dguest *g, const char *line)
{
	static const char *const actions[] = { "pause", "poweroff", "run", "unknown" };
	char name[COLLECT_NAME_MAX], action[16], text[200], detail[64];
	bool known = false;
	unsigned int i;
	char extra;

	if (sscanf(line, "panic %63s %15s %c", name, action, &extra) == 2 && !strcmp(name, g->name))
		for (i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
			known |= !strcmp(action, actions[i]);
	if (!known) {
		collect_sanitize(text, sizeof(text), line, false);
		g->trig.ignored++;
		log_warn("%s: a panic line not understood, ignored: %s", g->name, text);
		return;
	}
	if (!d->conf.panic) {
		log_info("%s: QMP says the guest panicked (action %s): trigger-panic is off", g->name, action);
		return;
	}
	snprintf(detail, sizeof(detail), "QMP GUEST_PANICKED, action %s", action);
	panicked(d, g, PANIC_REASON_QMP, detail);
}

static void one_line(struct daemon *d, char *line)
{
	char *sp;

	if (!strncmp(line, "crashed ", 8) && (sp = strchr(line + 8, ' ')) && sp[1]) {
		*sp = '\0';
		crashed(d, line + 8, sp + 1);
	} else if (!strncmp(line, "connected ", 10)) {
		log_info("panic trigger: following libvirt's lifecycle events at %s", line + 10);
		snprintf(d->events_note, sizeof(d->events_note), "libvirt events: connected");
	} else if (!strncmp(line, "lost ", 5)) {
		/* Said once per loss, not once per attempt while libvirtd is away. */
		if (strncmp(d->events_note, "libvirt events: lost", 20))
			log_warn("panic trigger: libvirt's events: %s (retrying)", line + 5);
		snprintf(d->events_note, sizeof(d->events_note), "libvirt events: lost (%.160s)", line + 5);
	} else if (line[0]) {
		log_warn("panic trigger: an event line not understood: '%.80s'", line);
	}
}

/**
 * panic_read() - the events that came: each crash of a followed guest asks
 * for its snapshot
 * @d: the daemon
 */
void panic_read(struct daemon *d)
{
	char *nl;
	ssize_t n;

	for (;;) {
		n = read(d->events_fd, line_buf + line_len, sizeof(line_buf) - 1 - line_len);
		if (n <= 0)
			break;
		line_len += n;
		line_buf[line_len] = '\0';
		while ((nl = strchr(line_buf, '\n'))) {
			*nl = '\0';
			one_line(d, line_buf);
			line_len -= nl + 1 - line_buf;
			memmove(line_buf, nl + 1, line_len + 1);
		}
		if (line_len == sizeof(line_buf) - 1) {
			log_warn("panic trigger: an event line longer than %zu bytes: dropped", line_len);
			line_len = 0;
		}
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		log_err("panic trigger: the events ended (%s): no more panics are followed",
			n ? strerror(errno) : "end of file");
		panic_close(d);
		snprintf(d->events_note, sizeof(d->events_note), "events ended");
	}
}

/**
 * panic_close() - stop reading the events (the libvirt thread's writes then
 * fail with EPIPE)
 * @d: the daemon
 */
void panic_close(struct daemon *d)
{
	if (d->events_fd >= 0)
		close(d->events_fd);
	d->events_fd = -1;
}
