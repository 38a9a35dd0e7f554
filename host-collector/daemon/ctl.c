// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control socket, STATE/control.sock: a stream socket, mode 0600 in the
 * private state directory, and each connection's peer credentials checked
 * (SO_PEERCRED: root or the daemon's own user) whatever the file's mode says.
 * One request a connection, one line:
 *
 *   snapshot NAME BEFORE AFTER REASON   (BEFORE, AFTER: seconds or "-")
 *   status
 *
 * and one answer, after which the daemon closes: "ok PATH" (the snapshot),
 * "ok" and the status lines, or "error TEXT". A snapshot's answer comes when
 * it is sealed, AFTER seconds and the child's stop later.
 *
 * The client side is here too: `snapshot` and `daemon --status`.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/daemon-int.h"
#include "daemon/hostfilter.h"
#include "opts.h"
#include "text.h"
#include "vt_grow.h"

#define ANSWER_MAX	(1 << 20)

static int sock_path(const char *state_dir, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", state_dir, DAEMON_SOCKET) >=
	    sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/**
 * ctl_listen() - make the control socket; a stale one (a daemon killed
 * outright) is removed: the state directory's lock says no daemon runs
 * @d: the daemon, its state directory open and locked
 *
 * Return: 0, or -errno after saying why.
 */
int ctl_listen(struct daemon *d)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int fd, ret;

	ret = sock_path(d->conf.state_dir, &sa);
	if (ret < 0)
		return ret;
	if (!fstatat(d->state_fd, DAEMON_SOCKET, &st, AT_SYMLINK_NOFOLLOW)) {
		if (!S_ISSOCK(st.st_mode)) {
			log_err("%s: exists and is not a socket", sa.sun_path);
			return -EEXIST;
		}
		log_info("removing the stale socket %s", sa.sun_path);
		if (unlinkat(d->state_fd, DAEMON_SOCKET, 0) < 0)
			return -errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	old = umask(0177);
	ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old);
	if (!ret && (fchmodat(d->state_fd, DAEMON_SOCKET, 0600, 0) < 0 || listen(fd, 16) < 0))
		ret = -errno;
	if (ret < 0) {
		log_err("%s: %s", sa.sun_path, strerror(-ret));
		close(fd);
		return ret;
	}
	d->listen_fd = fd;
	return 0;
}

/**
 * ctl_close() - close the socket and its connections, and remove it
 * @d: the daemon
 */
void ctl_close(struct daemon *d)
{
	unsigned int i;

	for (i = 0; i < DAEMON_MAX_CLIENTS; i++) {
		if (d->clients[i] >= 0)
			close(d->clients[i]);
		d->clients[i] = -1;
	}
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlinkat(d->state_fd, DAEMON_SOCKET, 0);
	}
	d->listen_fd = -1;
}

static void drop_client(struct daemon *d, int fd)
{
	unsigned int i, j;

	for (i = 0; i < DAEMON_MAX_CLIENTS; i++)
		if (d->clients[i] == fd)
			d->clients[i] = -1;
	for (i = 0; i < d->nr; i++)
		for (j = 0; j < DAEMON_MAX_WAITERS; j++)
			if (d->g[i].snap.waiters[j] == fd)
				d->g[i].snap.waiters[j] = -1;
	close(fd);
}

/*
 * The whole answer, however long (a status of a thousand guests outgrows the socket's buffer):
 * blocking, but for 2 s at most, so that a client that reads nothing cannot hold the daemon.
 */
static void write_all(int fd, const char *buf, size_t len)
{
	struct timeval tv = { .tv_sec = 2 };
	ssize_t n;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n <= 0) {
			log_debug("control connection: %s", n < 0 ? strerror(errno) : "closed");
			return;
		}
		buf += n;
		len -= n;
	}
}

/**
 * ctl_answer() - answer a connection and close it
 * @d: the daemon
 * @fd: the connection
 * @fmt: the answer
 */
void ctl_answer(struct daemon *d, int fd, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (n > 0)
		write_all(fd, buf, n);
	drop_client(d, fd);
}

/**
 * ctl_accept() - a new connection: taken if its peer is root or our user
 * @d: the daemon
 */
void ctl_accept(struct daemon *d)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	unsigned int i;
	int fd;

	fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
	    (cr.uid != 0 && cr.uid != geteuid())) {
		log_warn("control socket: refused a connection from uid %d (pid %d): only root and "
			 "uid %d may use it", (int)cr.uid, (int)cr.pid, (int)geteuid());
		if (write(fd, "error permission denied\n", 24) < 0)
			log_debug("control connection: %s", strerror(errno));
		close(fd);
		return;
	}
	for (i = 0; i < DAEMON_MAX_CLIENTS; i++)
		if (d->clients[i] < 0) {
			d->clients[i] = fd;
			return;
		}
	if (write(fd, "error busy: too many connections\n", 33) < 0)
		log_debug("control connection: %s", strerror(errno));
	close(fd);
}

static const char *guest_state(const struct dguest *g, char *buf, size_t len)
{
	if (g->pid && g->stopping == STOP_NONE)
		return g->snap.active ? "sealing" : "attached";
	if (g->pid)
		return "stopping";
	if (g->cut_off)
		return "cut-off";
	if (g->migrated_out)
		return "migrated-out";
	if (!g->present)
		return "gone";
	snprintf(buf, len, "retry-in-%.0fs", g->next_start - daemon_now() + 0.5);
	return buf;
}

/* "; panics: T taken, I ignored" and the same of guest-filter triggers, those that came (or ""). */
static void guest_counts(const struct dguest *g, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (g->panic.taken || g->panic.ignored)
		n = snprintf(buf, len, "; panics: %llu taken, %llu ignored",
			     (unsigned long long)g->panic.taken, (unsigned long long)g->panic.ignored);
	if ((g->trig.taken || g->trig.ignored) && n < len)
		snprintf(buf + n, len - n, "; guest triggers: %llu taken, %llu ignored",
			 (unsigned long long)g->trig.taken, (unsigned long long)g->trig.ignored);
}

static void status(struct daemon *d, int fd)
{
	size_t cap = 512 + (size_t)d->nr * 1024 + hostfilter_status_size(d), n;
	char *buf = malloc(cap), st[32], counts[128];
	unsigned int i, segs;
	uint64_t bytes;

	if (!buf) {
		ctl_answer(d, fd, "error out of memory\n");
		return;
	}
	n = snprintf(buf, cap, "ok\ndaemon: %s mode, %s, %llu bytes held (total-budget %llu), %u guests\n"
		     "%-20s %-14s %8s %5s %12s  %s\n", d->conf.mode == MODE_HOLD ? "hold" : "stream",
		     d->conf.state_dir, (unsigned long long)state_tree_bytes(d->state_fd, "."),
		     (unsigned long long)d->conf.total_budget, d->nr, "GUEST", "STATE", "PID",
		     "SEGS", "BYTES", "LAST SNAPSHOT (REASON)");
	for (i = 0; i < d->nr && n < cap; i++) {
		const struct dguest *g = &d->g[i];

		bytes = state_guest_bytes(d, g->name, &segs);
		guest_counts(g, counts, sizeof(counts));
		n += snprintf(buf + n, cap - n, "%-20s %-14s %8d %5u %12llu  %s%s%s%s%s%s%s\n", g->name,
			      guest_state(g, st, sizeof(st)), (int)g->pid, segs, (unsigned long long)bytes,
			      g->last_snap[0] ? g->last_snap : "-", g->last_snap[0] ? " (" : "",
			      g->last_reason, g->last_snap[0] ? ")" : "", counts,
			      g->last_error[0] ? "; last problem: " : "", g->last_error);
	}
	if (n < cap)
		n += hostfilter_status(d, buf + n, cap - n);
	if (d->events_note[0] && n < cap)
		n += snprintf(buf + n, cap - n, "panic-trigger: %s\n", d->events_note);
	write_all(fd, buf, n < cap ? n : cap - 1);
	free(buf);
	drop_client(d, fd);
}

/* A reason as a file name's part: letters, digits, '-' and '_', the rest '_'. */
static void reason_word(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < len; i++)
		dst[i] = ((src[i] >= 'a' && src[i] <= 'z') || (src[i] >= 'A' && src[i] <= 'Z') ||
			  (src[i] >= '0' && src[i] <= '9') || src[i] == '-') ? src[i] : '_';
	dst[i] = '\0';
}

static bool seconds(const char *s, double def, double max, double *out)
{
	char *end;

	if (!strcmp(s, "-")) {
		*out = def;
		return true;
	}
	*out = strtod(s, &end);
	return end != s && !*end && *out >= 0 && *out <= max;
}

static void snapshot_req(struct daemon *d, int fd, char *args)
{
	char name[COLLECT_NAME_MAX], b[32], a[32], reason[DAEMON_REASON_MAX + 1], r[200];
	double before, after;
	struct dguest *g;
	int ret;

	if (sscanf(args, "%63s %31s %31s %199s", name, b, a, r) != 4 || !collect_name_ok(name) ||
	    !seconds(b, d->conf.before, 86400, &before) || !seconds(a, d->conf.after, 3600, &after)) {
		ctl_answer(d, fd, "error bad request\n");
		return;
	}
	reason_word(reason, sizeof(reason), r);
	g = guests_find(d, name);
	if (!g) {
		ctl_answer(d, fd, "error %s: no such guest is followed (daemon --status lists them)\n", name);
		return;
	}
	ret = guests_snapshot(d, g, before, after, reason, fd);
	if (ret == -ENOTCONN && g->migrated_out)
		ctl_answer(d, fd, "error %s: migrated out: its recording ended at the switchover "
			   "(guests/%s/previous)\n", name, name);
	else if (ret == -ENOTCONN)
		ctl_answer(d, fd, "error %s: not attached (%s)\n", name,
			   g->last_error[0] ? g->last_error : "no recording runs");
	else if (ret < 0)
		ctl_answer(d, fd, "error %s: too many requests wait for its snapshot\n", name);
	else
		log_info("%s: snapshot asked for (%s; before %.1f s, after %.1f s)", name, reason,
			 before, after);
}

/**
 * ctl_read() - a request on a connection (or its end)
 * @d: the daemon
 * @slot: its slot in d->clients
 */
void ctl_read(struct daemon *d, int slot)
{
	char buf[DAEMON_LINE_MAX], *nl;
	int fd = d->clients[slot];
	ssize_t n;
	unsigned int i, j;

	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0 && errno == EAGAIN)
		return;
	for (i = 0; i < d->nr; i++)
		for (j = 0; j < DAEMON_MAX_WAITERS; j++)
			if (d->g[i].snap.waiters[j] == fd && n > 0)
				n = 0;	/* a waiting client says nothing more: it is gone */
	if (n <= 0) {
		drop_client(d, fd);
		return;
	}
	buf[n] = '\0';
	nl = strchr(buf, '\n');
	if (!nl) {
		ctl_answer(d, fd, "error bad request\n");
		return;
	}
	*nl = '\0';
	if (!strcmp(buf, "status"))
		status(d, fd);
	else if (!strncmp(buf, "snapshot ", 9))
		snapshot_req(d, fd, buf + 9);
	else
		ctl_answer(d, fd, "error unknown request\n");
}

static int read_answer(int fd, char **out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	ssize_t n;

	/* Room for one more byte and the NUL, ANSWER_MAX bytes at most. */
	while (vt_grow_max((void **)&buf, &cap, len + 2, 1, ANSWER_MAX + 1) == 0) {
		n = read(fd, buf + len, cap - 1 - len);
		if (n <= 0)
			break;
		len += n;
	}
	if (!buf)
		return -ENOMEM;
	buf[len] = '\0';
	*out = buf;
	return 0;
}

/* Each line as it came, less what a terminal would act on. */
static void print_lines_of(char *s)
{
	char *nl;

	for (; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		if (nl)
			*nl = '\0';
		collect_line(stdout, "%s", s);
		if (!nl)
			break;
	}
}

/**
 * ctl_ask() - send one request to the daemon and print its answer
 * @state_dir: the daemon's state directory
 * @request: the request line, with its newline
 * @print_lines: print the lines after "ok" (status); else the rest of the "ok" line
 *
 * Return: an exit status: EXIT_OK, EXIT_FAIL (the daemon said "error"),
 * EXIT_NO_DAEMON.
 */
int ctl_ask(const char *state_dir, const char *request, bool print_lines)
{
	struct sockaddr_un sa;
	char *ans = NULL, *nl;
	int fd, ret;

	if (sock_path(state_dir, &sa) < 0) {
		collect_usage("%s: too long for a socket's path", state_dir);
		return EXIT_USAGE;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = errno;
		log_err("%s: %s%s", sa.sun_path, strerror(ret), ret == ENOENT || ret == ECONNREFUSED ?
			" (is the daemon running? systemctl status virtio-trace-collect)" : "");
		if (fd >= 0)
			close(fd);
		return ret == EACCES || ret == EPERM ? EXIT_FAIL : EXIT_NO_DAEMON;
	}
	/* A refusal may come before the request is read: its answer still counts. */
	if ((send(fd, request, strlen(request), MSG_NOSIGNAL) < 0 && errno != EPIPE &&
	     errno != ECONNRESET) || read_answer(fd, &ans) < 0) {
		log_err("%s: %s", sa.sun_path, strerror(errno));
		close(fd);
		free(ans);
		return EXIT_FAIL;
	}
	close(fd);
	nl = strchr(ans, '\n');
	if (nl)
		*nl = '\0';
	if (!strncmp(ans, "ok", 2) && (!ans[2] || ans[2] == ' ')) {
		if (print_lines && nl)
			print_lines_of(nl + 1);
		else if (ans[2])
			collect_line(stdout, "%s", ans + 3);
		ret = EXIT_OK;
	} else {
		log_err("%s", !strncmp(ans, "error ", 6) ? ans + 6 : ans[0] ? ans : "no answer from the daemon");
		ret = EXIT_FAIL;
	}
	free(ans);
	return ret;
}

enum { OPT_BEFORE = 256, OPT_AFTER, OPT_REASON, OPT_STATE_DIR };

static const struct opt_def snapshot_opts[] = {
	{ "before", OPT_BEFORE, KIND_SECONDS, "SEC", "hold this much before now (default: the\n"
	  "daemon's `before`)", .min = 0, .max = 86400 },
	{ "after", OPT_AFTER, KIND_SECONDS, "SEC", "and this much after (default: its `after`)",
	  .min = 0, .max = 3600 },
	{ "reason", OPT_REASON, KIND_STRING, "TEXT", "why, in the snapshot's name and snapshot.json\n"
	  "(letters, digits, '-', '_'; default request)" },
	{ "state-dir", OPT_STATE_DIR, KIND_PATH, "DIR", "the daemon's state directory (default\n"
	  DAEMON_STATE_DEFAULT ")", .what = "a directory" },
	{ NULL },
};

static const struct opt_cmd snapshot_cmd = {
	.name = "snapshot",
	.usage = "DOMAIN [--before SEC] [--after SEC] [--reason TEXT]\n"
"                                     [--state-dir DIR]",
	.about =
"Ask the running daemon (virtio-trace-collect-daemon(1)) for a snapshot of\n"
"DOMAIN: it waits --after seconds, stops the guest's recording and moves it\n"
"(with the segment before it, when --before reaches there) to\n"
"STATE/snapshots/DOMAIN-YYYYmmdd-HHMMSS-REASON/, and a new recording starts.\n"
"Prints the snapshot's directory when it is sealed.\n",
	.tail = "Exit status: 0 sealed (its path printed); 1 the daemon refused or could not\n"
"seal it (the message says why); 2 usage error; 6 no daemon answers.\n",
	.defs = snapshot_opts,
};

/**
 * snapshot_main() - the snapshot subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: an exit status.
 */
int snapshot_main(int argc, char **argv)
{
	const char *state = DAEMON_STATE_DEFAULT, *reason = "request";
	char before[32] = "-", after[32] = "-", req[DAEMON_LINE_MAX];
	struct opt_val v;
	int o;

	optind = 1;
	while ((o = opt_parse(&snapshot_cmd, argc, argv, &v)) != -1) {
		switch (o) {
		case OPT_BEFORE:
			snprintf(before, sizeof(before), "%.3f", v.d);
			break;
		case OPT_AFTER:
			snprintf(after, sizeof(after), "%.3f", v.d);
			break;
		case OPT_REASON:
			reason = v.s;
			break;
		case OPT_STATE_DIR:
			state = v.s;
			break;
		case OPT_HELP:
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind >= argc)
		collect_usage("which guest? (snapshot DOMAIN)");
	else if (argc - optind > 1)
		collect_usage("one guest, not %d", argc - optind);
	else if (!collect_name_ok(argv[optind]))
		collect_usage("'%s' is not a guest name", argv[optind]);
	if (optind != argc - 1 || !collect_name_ok(argv[optind])) {
		opt_try_help();
		return EXIT_USAGE;
	}
	if (!reason[0] || strlen(reason) > DAEMON_REASON_MAX || strpbrk(reason, " \t\n")) {
		collect_usage("--reason '%s': 1 to %d characters, no blanks", reason, DAEMON_REASON_MAX);
		opt_try_help();
		return EXIT_USAGE;
	}
	snprintf(req, sizeof(req), "snapshot %s %s %s %s\n", argv[optind], before, after, reason);
	return ctl_ask(state, req, false);
}
