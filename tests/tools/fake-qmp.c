// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-fake-agent --qmp PATH [--qmp-events FIFO]: the fake agent (run as a
 * root-owned qemu-system-x86_64, with -qmp unix:PATH,server=on,wait=off on
 * the command line after "--") listens on PATH itself, as QEMU does, so that
 * `record --all` finds the socket's listener to be the QEMU it found. One
 * client at a time, as QEMU's QMP chardev: the greeting, then each command
 * line answered: qmp_capabilities, query-cpus-fast (one vCPU per --cpus, each
 * the fake's own pid as its thread), query-migrate with the object in the
 * environment's VT_FAKE_QMP_MIGRATE when set (a QEMU that a guest migrated
 * into or out of) and anything else {"return": {}}, the command's "id"
 * echoed. Each line a test writes into FIFO is sent to the client verbatim
 * once it has said qmp_capabilities (held until one has), so that a test
 * plays QEMU's events (GUEST_PANICKED, STOP...) when it wants; a line "quit"
 * makes the fake exit once the lines before it are sent, as QEMU quits right
 * after GUEST_PANICKED with its default action (poweroff). What it did goes
 * to stderr, "qmp: ..." lines the tests wait for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake-qmp.h"

#define QMP_BUF		8192

struct fake_qmp {
	const char *name;
	unsigned int cpus;
	int lfd, cfd, efd;
	bool ready;			/* the client said qmp_capabilities */
	bool quit;			/* a line "quit" was reached */
	unsigned int clients;
	char in[QMP_BUF];		/* the client's partial line */
	size_t in_len;
	char ev[QMP_BUF];		/* the FIFO's lines not yet sent */
	size_t ev_len;
};

static void qsay(const struct fake_qmp *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void qsay(const struct fake_qmp *q, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vt-fake-agent[%s]: qmp: ", q->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void send_all(struct fake_qmp *q, const char *buf, size_t len)
{
	while (len && q->cfd >= 0) {
		ssize_t n = write(q->cfd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			qsay(q, "client %u: write: %s", q->clients, strerror(errno));
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* The string value of "KEY": "VALUE" in @line, into @out ("" none). */
static void field(const char *line, const char *key, char *out, size_t size)
{
	const char *p = strstr(line, key), *e;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	if (*p++ != '"' || !(e = strchr(p, '"')) || (size_t)(e - p) >= size)
		return;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
}

/* The FIFO's whole lines, to a client that is ready. */
static void relay(struct fake_qmp *q)
{
	char *nl;

	while (q->ready && !q->quit && (nl = memchr(q->ev, '\n', q->ev_len))) {
		size_t len = (size_t)(nl - q->ev) + 1;

		if (len == 5 && !memcmp(q->ev, "quit", 4)) {
			q->quit = true;
			qsay(q, "client %u: quitting, as QEMU powers off", q->clients);
		} else {
			send_all(q, q->ev, len);
			qsay(q, "client %u: sent event %.*s", q->clients,
			     (int)(len - 1 > 160 ? 160 : len - 1), q->ev);
		}
		memmove(q->ev, q->ev + len, q->ev_len - len);
		q->ev_len -= len;
	}
}

static void command(struct fake_qmp *q, const char *line)
{
	char cmd[64], id[64], reply[QMP_BUF], idpart[96] = "";
	size_t n;
	unsigned int i;

	field(line, "\"execute\"", cmd, sizeof(cmd));
	field(line, "\"id\"", id, sizeof(id));
	if (!cmd[0])
		return;
	if (id[0])
		snprintf(idpart, sizeof(idpart), ", \"id\": \"%s\"", id);
	if (!strcmp(cmd, "query-cpus-fast")) {
		n = (size_t)snprintf(reply, sizeof(reply), "{\"return\": [");
		for (i = 0; i < q->cpus && n < sizeof(reply) - 200; i++)
			n += (size_t)snprintf(reply + n, sizeof(reply) - n,
					      "%s{\"cpu-index\": %u, \"thread-id\": %d, \"target\": \"x86_64\"}",
					      i ? ", " : "", i, (int)getpid());
		snprintf(reply + n, sizeof(reply) - n, "]%s}\n", idpart);
	} else if (!strcmp(cmd, "query-migrate") && getenv("VT_FAKE_QMP_MIGRATE")) {
		snprintf(reply, sizeof(reply), "{\"return\": %.4000s%s}\n", getenv("VT_FAKE_QMP_MIGRATE"),
			 idpart);
	} else {
		snprintf(reply, sizeof(reply), "{\"return\": {}%s}\n", idpart);
	}
	send_all(q, reply, strlen(reply));
	if (!strcmp(cmd, "qmp_capabilities") && !q->ready) {
		q->ready = true;
		qsay(q, "client %u: ready", q->clients);
		relay(q);
	}
}

static void drop_client(struct fake_qmp *q, const char *why)
{
	qsay(q, "client %u: %s", q->clients, why);
	close(q->cfd);
	q->cfd = -1;
	q->ready = false;
	q->in_len = 0;
}

static void read_client(struct fake_qmp *q)
{
	char *nl;
	ssize_t n;

	n = read(q->cfd, q->in + q->in_len, sizeof(q->in) - 1 - q->in_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop_client(q, "left");
		return;
	}
	q->in_len += (size_t)n;
	q->in[q->in_len] = '\0';
	while (q->cfd >= 0 && (nl = strchr(q->in, '\n'))) {
		*nl = '\0';
		command(q, q->in);
		q->in_len -= (size_t)(nl + 1 - q->in);
		memmove(q->in, nl + 1, q->in_len + 1);
	}
	if (q->in_len == sizeof(q->in) - 1)
		drop_client(q, "a command line too long");
}

static void accept_client(struct fake_qmp *q)
{
	static const char greeting[] = "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, "
				       "\"major\": 7}, \"package\": \"vt-fake-agent\"}, "
				       "\"capabilities\": [\"oob\"]}}\n";

	q->cfd = accept4(q->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (q->cfd < 0)
		return;
	q->clients++;
	qsay(q, "client %u: connected", q->clients);
	send_all(q, greeting, sizeof(greeting) - 1);
}

static void read_events(struct fake_qmp *q)
{
	ssize_t n = read(q->efd, q->ev + q->ev_len, sizeof(q->ev) - q->ev_len);

	if (n <= 0)
		return;
	q->ev_len += (size_t)n;
	if (!q->ready)
		qsay(q, "%zu bytes of events held: no client ready", q->ev_len);
	relay(q);
	if (q->ev_len == sizeof(q->ev)) {
		qsay(q, "events: a line longer than %zu bytes dropped", sizeof(q->ev));
		q->ev_len = 0;
	}
}

/**
 * fake_qmp_open() - listen on @sock as QEMU's QMP, and read events from @events
 * @name: the fake's name, for its messages
 * @sock: the socket's path (made anew)
 * @events: a FIFO whose lines are relayed to the client, or NULL
 * @cpus: vCPUs that query-cpus-fast lists
 *
 * Return: the server, or NULL after a message.
 */
struct fake_qmp *fake_qmp_open(const char *name, const char *sock, const char *events,
			       unsigned int cpus)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fake_qmp *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->lfd = q->cfd = q->efd = -1;
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		goto err;
	}
	q->name = name;
	q->cpus = cpus ? cpus : 1;
	strcpy(sa.sun_path, sock);
	unlink(sock);
	q->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (q->lfd < 0 || bind(q->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(q->lfd, 4) < 0)
		goto err;
	/* O_RDWR: the test's writers come and go, and the FIFO never reads as ended. */
	if (events && (q->efd = open(events, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		goto err;
	qsay(q, "listening on %s%s%s", sock, events ? ", events from " : "", events ? events : "");
	return q;
err:
	fprintf(stderr, "vt-fake-agent[%s]: --qmp %s: %s\n", name, sock, strerror(errno));
	if (q->lfd >= 0)
		close(q->lfd);
	free(q);
	return NULL;
}

/**
 * fake_qmp_fds() - the descriptors to poll: the listener while no client is
 * connected (QEMU serves one), the client, the events FIFO
 * @q: the server
 * @pfd: room for FAKE_QMP_FDS
 *
 * Return: how many were filled.
 */
unsigned int fake_qmp_fds(const struct fake_qmp *q, struct pollfd *pfd)
{
	unsigned int n = 0;

	if (q->cfd < 0)
		pfd[n++] = (struct pollfd){ .fd = q->lfd, .events = POLLIN };
	else
		pfd[n++] = (struct pollfd){ .fd = q->cfd, .events = POLLIN };
	if (q->efd >= 0)
		pfd[n++] = (struct pollfd){ .fd = q->efd, .events = POLLIN };
	return n;
}

/**
 * fake_qmp_ready() - one of its descriptors polled ready
 * @q: the server
 * @p: the descriptor, from fake_qmp_fds(), with its revents
 */
void fake_qmp_ready(struct fake_qmp *q, const struct pollfd *p)
{
	if (p->fd == q->lfd)
		accept_client(q);
	else if (p->fd == q->cfd)
		read_client(q);
	else if (p->fd == q->efd)
		read_events(q);
}

/**
 * fake_qmp_quit() - whether a line "quit" was reached: the fake exits
 * @q: the server
 *
 * Return: true once it was.
 */
bool fake_qmp_quit(const struct fake_qmp *q)
{
	return q->quit;
}

/**
 * fake_qmp_close() - stop serving
 * @q: the server, or NULL
 */
void fake_qmp_close(struct fake_qmp *q)
{
	if (!q)
		return;
	if (q->cfd >= 0)
		close(q->cfd);
	if (q->efd >= 0)
		close(q->efd);
	close(q->lfd);
	free(q);
}
