// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libvirt's domain lifecycle events, for the daemon's panic trigger (part of
 * the libvirt module). A thread of its own runs libvirt's default event loop
 * and holds a read-only connection with keepalive; it writes one line per
 * thing the daemon wants to know into a pipe that the daemon's poll() loop
 * reads (daemon/panic.c), so the daemon itself stays one thread that never
 * waits for libvirt. A connection that closes (libvirtd restarted, or
 * silent past the keepalive) is opened again after a backoff of 1 s that
 * doubles up to LVE_BACKOFF_MAX.
 *
 * The lines (each one write() under PIPE_BUF, so whole):
 *   "connected URI"            events flow
 *   "lost WHY"                 no connection: retrying in a while
 *   "crashed DETAIL DOMAIN"    VIR_DOMAIN_EVENT_CRASHED; DETAIL is panicked,
 *                              crashloaded or other; DOMAIN is the rest of
 *                              the line
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "collect.h"
#include "libvirt.h"

#define LVE_BACKOFF_MAX		30	/* seconds between two attempts to connect, at most */
#define LVE_KEEPALIVE_S		5	/* a ping after this many quiet seconds, */
#define LVE_KEEPALIVE_N		3	/* and the connection is closed after this many unanswered */

struct lve {
	char uri[1024];
	int fd;
	volatile int closed;
};

static void lve_quiet(void *data, virErrorPtr err)
{
	(void)data;
	(void)err;
}

static void lve_say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lve_say(int fd, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* A daemon that has gone: EPIPE (SIGPIPE is ignored there), nothing more to do. */
	while (write(fd, line, n) < 0 && errno == EINTR)
		;
}

static const char *lve_errmsg(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->message ? e->message : "unknown error";
}

static int lve_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
	const struct lve *l = opaque;
	const char *name = virDomainGetName(dom);
	const char *what = "other";

	(void)conn;
	if (event != VIR_DOMAIN_EVENT_CRASHED || !name || strchr(name, '\n') || strlen(name) > 256)
		return 0;
	if (detail == VIR_DOMAIN_EVENT_CRASHED_PANICKED)
		what = "panicked";
	else if (detail == VIR_DOMAIN_EVENT_CRASHED_CRASHLOADED)
		what = "crashloaded";
	lve_say(l->fd, "crashed %s %s", what, name);
	return 0;
}

static void lve_closed(virConnectPtr conn, int reason, void *opaque)
{
	struct lve *l = opaque;

	(void)conn;
	(void)reason;
	l->closed = 1;
}

/* Wakes the loop once a second, so that a closed connection is seen at once. */
static void lve_tick(int timer, void *opaque)
{
	(void)timer;
	(void)opaque;
}

/* One connection's life: 0 once it was up and then closed, -1 if it never came up. */
static int lve_session(struct lve *l)
{
	const char *uri = l->uri[0] ? l->uri : NULL;
	virConnectPtr conn;
	int id;

	conn = virConnectOpenReadOnly(uri);
	if (!conn) {
		lve_say(l->fd, "lost cannot connect to %s: %s", l->uri[0] ? l->uri : "libvirt's default URI",
			lve_errmsg());
		return -1;
	}
	l->closed = 0;
	if (virConnectSetKeepAlive(conn, LVE_KEEPALIVE_S, LVE_KEEPALIVE_N) < 0 ||
	    virConnectRegisterCloseCallback(conn, lve_closed, l, NULL) < 0) {
		lve_say(l->fd, "lost cannot watch the connection: %s", lve_errmsg());
		virConnectClose(conn);
		return -1;
	}
	id = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
					      VIR_DOMAIN_EVENT_CALLBACK(lve_lifecycle), l, NULL);
	if (id < 0) {
		lve_say(l->fd, "lost cannot subscribe to lifecycle events: %s", lve_errmsg());
		virConnectUnregisterCloseCallback(conn, lve_closed);
		virConnectClose(conn);
		return -1;
	}
	lve_say(l->fd, "connected %s", l->uri[0] ? l->uri : "(libvirt's default URI)");
	while (!l->closed && virConnectIsAlive(conn) == 1)
		if (virEventRunDefaultImpl() < 0)
			break;
	lve_say(l->fd, "lost the connection closed (libvirtd restarted or stopped answering)");
	virConnectDomainEventDeregisterAny(conn, id);
	virConnectUnregisterCloseCallback(conn, lve_closed);
	virConnectClose(conn);
	return 0;
}

static void *lve_run(void *arg)
{
	struct lve *l = arg;
	unsigned int backoff = 1;

	for (;;) {
		if (lve_session(l) == 0)
			backoff = 1;
		sleep(backoff);
		backoff = backoff * 2 > LVE_BACKOFF_MAX ? LVE_BACKOFF_MAX : backoff * 2;
	}
	return NULL;
}

/**
 * libvirt_events_start() - follow libvirt's domain lifecycle events in a
 * thread of their own, as lines written to @fd (the file's comment)
 * @uri: the libvirt URI, NULL or "" for libvirt's default
 * @fd: where the lines go (a pipe's write end, kept open by the thread)
 *
 * The thread runs with every signal blocked, for as long as the process: the
 * caller's signalfd() must get them all. Call it once per process.
 *
 * Return: 0, or -errno.
 */
int libvirt_events_start(const char *uri, int fd)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	struct lve *l;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	snprintf(l->uri, sizeof(l->uri), "%s", uri ? uri : "");
	l->fd = fd;
	virSetErrorFunc(NULL, lve_quiet);
	if (virEventRegisterDefaultImpl() < 0 || virEventAddTimeout(1000, lve_tick, NULL, NULL) < 0) {
		free(l);
		return -EIO;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&t, &attr, lve_run, l);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		free(l);
	return ret;
}
