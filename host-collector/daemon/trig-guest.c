// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The guest-filter trigger (trigger-guest-filter = SYS:EV[ if FILTER]): each
 * guest's `record` child asks its agent to watch the event (WATCH: the
 * guest's kernel applies the filter) and writes a line for each trigger it
 * takes to a pipe of its own; the daemon reads it and seals a snapshot of
 * that guest, reason "guest-filter". The pipe is the guest's identity: a
 * guest can only ever trigger its own snapshot, whatever its line says.
 *
 * Rate limits, from the guest outwards: the agent sends one TRIGGER per
 * second at most; record takes one per half second at most and ignores the
 * rest; the daemon seals one guest-filter snapshot per guest per
 * DAEMON_TRIG_GUEST_GAP seconds and counts the triggers in between.
 *
 * The same pipe carries the child's word that QMP said GUEST_PANICKED
 * ("panic NAME ACTION", the panic trigger: panic.c takes it): a child that
 * follows its QEMU's QMP socket holds QEMU's one QMP client, so the daemon
 * learns a QEMU's panic, where no libvirt says it, only from its child.
 * Every child gets the pipe when either trigger is on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon-int.h"
#include "text.h"

static void close_ends(struct dguest *g)
{
	if (g->trig.rfd_open)
		close(g->trig.rfd);
	if (g->trig.wfd_open)
		close(g->trig.wfd);
	g->trig.rfd_open = g->trig.wfd_open = false;
	g->trig.len = 0;
}

/**
 * trig_guest_args() - record's trigger options for @g's next child, and its pipe
 * @d: the daemon
 * @g: the guest
 * @argv: record's command line so far
 * @n: its words
 *
 * The write end is not close-on-exec: the child inherits it, and the daemon
 * closes its own copy once the child is forked (trig_guest_forked()), so
 * that no later child can have it.
 *
 * Return: the words now.
 */
unsigned int trig_guest_args(struct daemon *d, struct dguest *g, char **argv, unsigned int n)
{
	int p[2];

	close_ends(g);
	if (!d->conf.trigger_guest[0] && !d->conf.panic)
		return n;
	if (pipe2(p, O_NONBLOCK) < 0) {
		log_err("%s: no pipe for its guest triggers: %s (none taken from this child)", g->name,
			strerror(errno));
		return n;
	}
	fcntl(p[0], F_SETFD, FD_CLOEXEC);
	g->trig.rfd = p[0];
	g->trig.wfd = p[1];
	g->trig.rfd_open = g->trig.wfd_open = true;
	snprintf(g->trig.fd_arg, sizeof(g->trig.fd_arg), "%d", p[1]);
	if (d->conf.trigger_guest[0]) {
		argv[n++] = "--trigger-guest-filter";
		argv[n++] = d->conf.trigger_guest;
	}
	argv[n++] = "--trigger-fd";
	argv[n++] = g->trig.fd_arg;
	return n;
}

/**
 * trig_guest_forked() - the child has its end of the pipe: close the daemon's
 * @g: the guest
 */
void trig_guest_forked(struct dguest *g)
{
	if (g->trig.wfd_open)
		close(g->trig.wfd);
	g->trig.wfd_open = false;
}

/* One line from @g's child: "trigger-guest NAME SYS:EV TIMESTAMP", or a panic. */
static void one_line(struct daemon *d, struct dguest *g, char *line, double now)
{
	char name[COLLECT_NAME_MAX], event[520], text[600];
	unsigned long long ts;
	int ret;

	if (!strncmp(line, "panic ", 6)) {
		panic_child_line(d, g, line);
		return;
	}
	collect_sanitize(text, sizeof(text), line, false);
	if (sscanf(line, "trigger-guest %63s %519s %llu", name, event, &ts) != 3 ||
	    strcmp(name, g->name)) {
		g->trig.ignored++;
		log_warn("%s: a guest trigger line not understood, ignored: %s", g->name, text);
		return;
	}
	collect_sanitize(text, sizeof(text), event, false);
	if (g->trig.last && now - g->trig.last < DAEMON_TRIG_GUEST_GAP) {
		g->trig.ignored++;
		log_info("%s: guest trigger %s ignored: one snapshot per %.0f s (%llu ignored so far)",
			 g->name, text, DAEMON_TRIG_GUEST_GAP, (unsigned long long)g->trig.ignored);
		return;
	}
	ret = guests_snapshot(d, g, d->conf.before, d->conf.after, "guest-filter", -1);
	if (ret < 0) {
		g->trig.ignored++;
		log_warn("%s: guest trigger %s: no snapshot (%s)", g->name, text, strerror(-ret));
		return;
	}
	g->trig.last = now;
	g->trig.taken++;
	log_info("%s: guest trigger %s at guest time %llu: snapshot (guest-filter)", g->name, text, ts);
}

/* Reads what @g's child wrote; the pipe is closed at its end. */
static void read_one(struct daemon *d, struct dguest *g, double now)
{
	char *nl, *start;
	ssize_t r;

	for (;;) {
		r = read(g->trig.rfd, g->trig.buf + g->trig.len, sizeof(g->trig.buf) - 1 - g->trig.len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		g->trig.len += (size_t)r;
		g->trig.buf[g->trig.len] = '\0';
		for (start = g->trig.buf; (nl = strchr(start, '\n')); start = nl + 1) {
			*nl = '\0';
			one_line(d, g, start, now);
		}
		g->trig.len -= (size_t)(start - g->trig.buf);
		memmove(g->trig.buf, start, g->trig.len);
		if (g->trig.len == sizeof(g->trig.buf) - 1)
			g->trig.len = 0;	/* no line is this long: not ours */
	}
	if (r == 0 || (r < 0 && errno != EAGAIN) || !g->pid)
		close_ends(g);
}

/**
 * trig_guest_reaped() - what @g's child wrote before it ended, read while the
 * daemon still takes it for running: a QEMU that powers off on its panic
 * (QEMU's default action) ends the child a moment after its panic line, and
 * the recording it wrote is that panic's snapshot
 * @d: the daemon
 * @g: the guest whose child has just been reaped
 */
void trig_guest_reaped(struct daemon *d, struct dguest *g)
{
	if (g->trig.rfd_open)
		read_one(d, g, daemon_now());
}

/**
 * trig_guest_ready() - poll() says guest @i's trigger pipe @fd can be read:
 * read it, unless the guest or its pipe changed since the poll set was made
 * (a child reaped in the same turn); what is left is polled again
 * @d: the daemon
 * @i: the guest's index
 * @fd: the descriptor polled
 */
void trig_guest_ready(struct daemon *d, unsigned int i, int fd)
{
	if (i < d->nr && d->g[i].trig.rfd_open && d->g[i].trig.rfd == fd)
		read_one(d, &d->g[i], daemon_now());
}

/**
 * trig_guest_poll() - every child's triggers, read on the loop's turn: only
 * when the poll set had no room for the pipes (no memory); else each pipe is
 * read when poll() says it can be (trig_guest_ready())
 * @d: the daemon
 */
void trig_guest_poll(struct daemon *d)
{
	double now = daemon_now();
	unsigned int i;

	for (i = 0; i < d->nr; i++)
		if (d->g[i].trig.rfd_open)
			read_one(d, &d->g[i], now);
}
