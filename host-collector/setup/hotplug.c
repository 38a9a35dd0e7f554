// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `setup --qmp SOCKET --hotplug`: give a running QEMU the trace ports
 * without a reboot, through its QMP socket. For each port (the data ports
 * first, the control port last, so that the guest's agent, which udev
 * starts when agent-ctl-path appears, finds its data ports there) a chardev
 * (chardev-add: a pipe pair or a unix socket QEMU listens on) and a
 * virtserialport on a virtio-serial bus with a free port number. The buses
 * QEMU has are read from QOM; with no room on them, a virtio-serial-pci
 * controller is hot-plugged (a PCI slot that takes hot-plug: QEMU's pc
 * machine has them, q35 only behind a free pcie-root-port). `--remove`
 * takes out what --hotplug added, named by their ids (vt-hp-*): each port
 * with device_del (the control port first) and, once QEMU says
 * DEVICE_DELETED, its chardev with chardev-remove.
 *
 * QMP is QEMU's, one JSON message a line; its replies are read with the
 * bounded JSON reader and every call is bounded in time. QMP serves one
 * client at a time: a collector attached with --qmp keeps others waiting.
 *
 * Whoever serves the socket is trusted with nothing but its own ports: any
 * local user can run a process that speaks QMP. The default directory is
 * named by what the kernel says of the peer (SO_PEERCRED's pid and that
 * process's start time), never by its query-name answer, which is only shown;
 * the FIFOs are made relative to a directory only root (or we) can write,
 * never through a link; a file that is there already is taken only when it
 * is exactly what setup makes and nobody has it open, and is never chowned;
 * --remove deletes only such files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "hotplug.h"
#include "qemuproc.h"
#include "json.h"
#include "libvirt.h"		/* collect_mkdirs() */
#include "procfd.h"
#include "text.h"

#define HP_TIMEOUT_MS		5000
#define HP_DELETE_MS		10000
#define HP_CTL_DELETE_MS	5000
#define HP_LINE_MAX		(1u << 20)
#define HP_MAX_BUSES		64
#define HP_PORTS_PER_CTL	30
#define HP_MAX_VCPUS		1024
#define HP_MAX_DELETED		(HP_MAX_VCPUS + 64)
#define HP_DEFAULT_ROOT		"/run/virtio-trace"
#define HP_CTL_NAME		"agent-ctl-path"
#define HP_DATA_PREFIX		"trace-path-cpu"
/* The ids of what --hotplug adds: --remove takes out these and nothing else. */
#define HP_ID_PREFIX		"vt-hp-"
#define HP_PORT_PREFIX		"vt-hp-port-"
#define HP_SER_PREFIX		"vt-hp-ser"

struct hp_qmp {
	int fd;
	const char *path;
	char *buf;
	size_t have;
	char (*deleted)[128];		/* DEVICE_DELETED device ids seen */
	unsigned int nr_deleted;
};

/* A virtio-serial bus of the running QEMU. */
struct hp_bus {
	char name[128];
	unsigned int max_ports;
	bool used[HP_PORTS_PER_CTL + 1];
};

struct hp_slot {
	unsigned int bus;
	unsigned int nr;
};

static long long hp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* One line from QEMU, NUL-terminated in q->buf; the caller drops it with hp_consume(). */
static int hp_readline(struct hp_qmp *q, long long deadline, size_t *len)
{
	char *nl;
	ssize_t n;
	int left, r;

	for (;;) {
		nl = memchr(q->buf, '\n', q->have);
		if (nl) {
			*nl = 0;
			*len = nl - q->buf;
			return 0;
		}
		if (q->have >= HP_LINE_MAX - 1)
			return -E2BIG;
		left = (int)(deadline - hp_now_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		r = poll(&p, 1, left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = read(q->fd, q->buf + q->have, HP_LINE_MAX - 1 - q->have);
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		if (n > 0)
			q->have += n;
	}
}

static void hp_consume(struct hp_qmp *q, size_t len)
{
	memmove(q->buf, q->buf + len + 1, q->have - len - 1);
	q->have -= len + 1;
}

/* An event: DEVICE_DELETED's device id is kept for hp_wait_deleted(). */
static void hp_event(struct hp_qmp *q, const struct json_value *root)
{
	const char *ev = json_string(json_get(root, "event"));
	const char *dev = json_string(json_get(json_get(root, "data"), "device"));

	if (!ev || strcmp(ev, "DEVICE_DELETED") || !dev || q->nr_deleted >= HP_MAX_DELETED)
		return;
	snprintf(q->deleted[q->nr_deleted++], sizeof(q->deleted[0]), "%s", dev);
}

/*
 * Send one command (a JSON text) and read until its answer; events on the
 * way are noted. @reply (may be NULL) gets the parsed answer, to be freed
 * with json_free(); @err gets QEMU's "desc" of an error.
 * Return: 0, -EIO for an error answer, or -errno.
 */
static int hp_call(struct hp_qmp *q, const char *cmd, struct json_doc **reply, char *err,
		   size_t errlen)
{
	long long deadline = hp_now_ms() + HP_TIMEOUT_MS;
	size_t len = strlen(cmd), off = 0, n;
	struct json_doc *doc;
	const struct json_value *root, *e;
	ssize_t w;
	int ret;

	if (err && errlen)
		err[0] = 0;
	while (off < len) {
		w = write(q->fd, cmd + off, len - off);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (w > 0)
			off += w;
	}
	if (write(q->fd, "\n", 1) != 1)
		return -EIO;
	for (;;) {
		ret = hp_readline(q, deadline, &n);
		if (ret < 0)
			return ret;
		doc = json_parse(q->buf, n, NULL, NULL);
		hp_consume(q, n);
		if (!doc)
			return -EBADMSG;
		root = json_root(doc);
		if (json_get(root, "event")) {
			hp_event(q, root);
			json_free(doc);
			continue;
		}
		e = json_get(root, "error");
		if (e) {
			if (err && errlen)
				collect_sanitize(err, errlen, json_string(json_get(e, "desc")) ?
						 json_string(json_get(e, "desc")) : "error", false);
			json_free(doc);
			return -EIO;
		}
		if (!json_get(root, "return")) {
			json_free(doc);
			continue;	/* the greeting of a reconnect, or anything else */
		}
		if (reply)
			*reply = doc;
		else
			json_free(doc);
		return 0;
	}
}

/* The text of one command: {"execute":CMD,"arguments":{...}}, @args writing the members. */
static char *hp_cmd(const char *cmd, void (*args)(struct jw *w, const void *arg), const void *arg)
{
	char *text = NULL;
	size_t size = 0;
	struct jw w;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	jw_begin(&w, f);
	jw_obj(&w, NULL);
	jw_str(&w, "execute", cmd);
	if (args) {
		jw_obj(&w, "arguments");
		args(&w, arg);
		jw_end(&w, '}');
	}
	jw_end(&w, '}');
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	text[strcspn(text, "\n")] = 0;
	return text;
}

static int hp_exec(struct hp_qmp *q, const char *cmd, void (*args)(struct jw *w, const void *arg),
		   const void *arg, struct json_doc **reply, char *err, size_t errlen)
{
	char *text = hp_cmd(cmd, args, arg);
	int ret;

	if (!text)
		return -ENOMEM;
	ret = hp_call(q, text, reply, err, errlen);
	free(text);
	return ret;
}

static void hp_close(struct hp_qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	free(q->buf);
	free(q->deleted);
	q->buf = NULL;
	q->deleted = NULL;
}

/* Connect, read the greeting, leave capabilities negotiation; @pid, @uid: QEMU's (SO_PEERCRED). */
static int hp_open(struct hp_qmp *q, const char *path, pid_t *pid, uid_t *uid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	size_t n;
	int ret;

	memset(q, 0, sizeof(*q));
	q->fd = -1;
	q->path = path;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("--qmp %s: the path is too long for a unix socket", path);
		return -ENAMETOOLONG;
	}
	q->buf = malloc(HP_LINE_MAX);
	q->deleted = calloc(HP_MAX_DELETED, sizeof(*q->deleted));
	if (!q->buf || !q->deleted) {
		hp_close(q);
		return -ENOMEM;
	}
	strcpy(sa.sun_path, path);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (q->fd < 0 || connect(q->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		log_err("--qmp %s: cannot connect: %s%s", path, strerror(-ret),
			ret == -ENOENT || ret == -ECONNREFUSED ? " (is QEMU running with -qmp "
			"unix:PATH,server=on,wait=off?)" : "");
		hp_close(q);
		return ret;
	}
	*pid = 0;
	*uid = 0;
	if (getsockopt(q->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0) {
		*pid = cred.pid;
		*uid = cred.uid;
	}
	ret = hp_readline(q, hp_now_ms() + HP_TIMEOUT_MS, &n);
	if (ret < 0) {
		log_err("--qmp %s: no QMP greeting within %d s: %s (QEMU serves one QMP client at a "
			"time: is a `record --qmp` or another client connected?)", path,
			HP_TIMEOUT_MS / 1000, strerror(-ret));
		hp_close(q);
		return ret;
	}
	if (!strstr(q->buf, "\"QMP\"")) {
		log_err("--qmp %s: this is not QEMU's QMP (no greeting)", path);
		hp_close(q);
		return -EPROTO;
	}
	hp_consume(q, n);
	ret = hp_call(q, "{\"execute\":\"qmp_capabilities\"}", NULL, NULL, 0);
	if (ret < 0) {
		log_err("--qmp %s: qmp_capabilities: %s", path, strerror(-ret));
		hp_close(q);
	}
	return ret;
}

/* --- the arguments of each command --- */

static void a_path(struct jw *w, const void *arg)
{
	jw_str(w, "path", arg);
}

struct qom_get_args {
	const char *path;
	const char *prop;
};

static void a_qom_get(struct jw *w, const void *arg)
{
	const struct qom_get_args *a = arg;

	jw_str(w, "path", a->path);
	jw_str(w, "property", a->prop);
}

static void a_id(struct jw *w, const void *arg)
{
	jw_str(w, "id", arg);
}

struct chardev_args {
	const char *id;
	const char *path;
	bool unix_socket;
};

static void a_chardev(struct jw *w, const void *arg)
{
	const struct chardev_args *a = arg;

	jw_str(w, "id", a->id);
	jw_obj(w, "backend");
	if (a->unix_socket) {
		jw_str(w, "type", "socket");
		jw_obj(w, "data");
		jw_obj(w, "addr");
		jw_str(w, "type", "unix");
		jw_obj(w, "data");
		jw_str(w, "path", a->path);
		jw_end(w, '}');
		jw_end(w, '}');
		jw_bool(w, "server", true);
		jw_bool(w, "wait", false);
		jw_end(w, '}');
	} else {
		jw_str(w, "type", "pipe");
		jw_obj(w, "data");
		jw_str(w, "device", a->path);
		jw_end(w, '}');
	}
	jw_end(w, '}');
}

struct port_args {
	const char *id;
	const char *bus;
	unsigned int nr;
	const char *chardev;
	const char *name;
};

static void a_port(struct jw *w, const void *arg)
{
	const struct port_args *a = arg;

	jw_str(w, "driver", "virtserialport");
	jw_str(w, "id", a->id);
	jw_str(w, "bus", a->bus);
	jw_u64(w, "nr", a->nr);
	jw_str(w, "chardev", a->chardev);
	jw_str(w, "name", a->name);
}

static void a_controller(struct jw *w, const void *arg)
{
	jw_str(w, "driver", "virtio-serial-pci");
	jw_str(w, "id", arg);
	jw_u64(w, "max_ports", HP_PORTS_PER_CTL + 1);
}

/* --- QOM: the virtio-serial buses and the ports on them --- */

/* qom-list PATH: the reply's array, or NULL. @doc is to be freed. */
static const struct json_value *hp_qom_list(struct hp_qmp *q, const char *path,
					    struct json_doc **doc)
{
	const struct json_value *r;

	*doc = NULL;
	if (hp_exec(q, "qom-list", a_path, path, doc, NULL, 0) < 0)
		return NULL;
	r = json_get(json_root(*doc), "return");
	return json_is(r, JSON_ARRAY) ? r : NULL;
}

/* qom-get PATH PROP as an unsigned number or a string (@s, @len); -errno when neither. */
static int hp_qom_get(struct hp_qmp *q, const char *path, const char *prop, uint64_t *v, char *s,
		      size_t len)
{
	struct qom_get_args a = { .path = path, .prop = prop };
	const struct json_value *r;
	struct json_doc *doc = NULL;
	int ret;

	ret = hp_exec(q, "qom-get", a_qom_get, &a, &doc, NULL, 0);
	if (ret < 0)
		return ret;
	r = json_get(json_root(doc), "return");
	ret = -EBADMSG;
	if (v && json_u64(r, v) == 0)
		ret = 0;
	if (s && json_is(r, JSON_STRING)) {
		collect_sanitize(s, len, json_string(r), false);
		ret = 0;
	}
	json_free(doc);
	return ret;
}

/* Which trace ports a bus carries: trace-path-cpuN sets have[N], agent-ctl-path *ctl. */
struct hp_found {
	bool *have;		/* HP_MAX_VCPUS entries */
	unsigned int nr_data;
	bool ctl;
};

static void hp_note_port(struct hp_found *f, const char *name)
{
	unsigned long n;
	char *end;

	if (!strcmp(name, HP_CTL_NAME)) {
		f->ctl = true;
		return;
	}
	if (strncmp(name, HP_DATA_PREFIX, strlen(HP_DATA_PREFIX)))
		return;
	n = strtoul(name + strlen(HP_DATA_PREFIX), &end, 10);
	if (*end || end == name + strlen(HP_DATA_PREFIX) || n >= HP_MAX_VCPUS || f->have[n])
		return;
	f->have[n] = true;
	f->nr_data++;
}

/* One virtio-serial device at QOM path @dev: its bus, max_ports and used port numbers. */
static int hp_scan_device(struct hp_qmp *q, const char *dev, struct hp_bus *b, struct hp_found *f)
{
	char backend[600], bus[800], port[900], name[128];
	const struct json_value *l, *e;
	struct json_doc *doc;
	uint64_t v;

	memset(b, 0, sizeof(*b));
	snprintf(backend, sizeof(backend), "%s/virtio-backend", dev);
	l = hp_qom_list(q, backend, &doc);
	for (e = l ? l->child : NULL; e; e = e->next) {
		const char *t = json_string(json_get(e, "type"));
		const char *n = json_string(json_get(e, "name"));

		if (t && n && !strcmp(t, "child<virtio-serial-bus>") && strlen(n) < sizeof(b->name)) {
			snprintf(b->name, sizeof(b->name), "%s", n);
			break;
		}
	}
	json_free(doc);
	if (!b->name[0])
		return -ENOENT;
	b->max_ports = 31;
	if (hp_qom_get(q, backend, "max_ports", &v, NULL, 0) == 0 && v <= 65536)
		b->max_ports = v;
	snprintf(bus, sizeof(bus), "%s/%s", backend, b->name);
	l = hp_qom_list(q, bus, &doc);
	for (e = l ? l->child : NULL; e; e = e->next) {
		const char *t = json_string(json_get(e, "type"));
		const char *n = json_string(json_get(e, "name"));

		if (!t || !n || strncmp(n, "child[", 6) || strncmp(t, "link<", 5))
			continue;
		snprintf(port, sizeof(port), "%s/%s", bus, n);
		if (hp_qom_get(q, port, "nr", &v, NULL, 0) == 0 && v <= HP_PORTS_PER_CTL)
			b->used[v] = true;
		if (hp_qom_get(q, port, "name", NULL, name, sizeof(name)) == 0)
			hp_note_port(f, name);
	}
	json_free(doc);
	return 0;
}

/* Every virtio-serial bus QEMU has, with its used ports; the trace ports found. */
static int hp_scan(struct hp_qmp *q, struct hp_bus *buses, unsigned int *nbus, struct hp_found *f,
		   bool *have_hp_ser)
{
	static const char *const roots[] = { "/machine/peripheral", "/machine/peripheral-anon" };
	const struct json_value *l, *e;
	struct json_doc *doc;
	char dev[512];
	unsigned int r;

	*nbus = 0;
	*have_hp_ser = false;
	for (r = 0; r < 2; r++) {
		l = hp_qom_list(q, roots[r], &doc);
		if (!l) {
			json_free(doc);
			log_err("--qmp %s: qom-list %s failed", q->path, roots[r]);
			return -EIO;
		}
		for (e = l->child; e && *nbus < HP_MAX_BUSES; e = e->next) {
			const char *t = json_string(json_get(e, "type"));
			const char *n = json_string(json_get(e, "name"));

			if (!t || !n || strncmp(t, "child<virtio-serial-", 20) ||
			    !strcmp(t, "child<virtio-serial-bus>") || strlen(n) > 256)
				continue;
			if (!strncmp(n, HP_SER_PREFIX, strlen(HP_SER_PREFIX)))
				*have_hp_ser = true;
			snprintf(dev, sizeof(dev), "%s/%s", roots[r], n);
			if (hp_scan_device(q, dev, &buses[*nbus], f) == 0)
				(*nbus)++;
		}
		json_free(doc);
	}
	return 0;
}

/* The ids QEMU has under /machine/peripheral that start with @prefix, into @ids. */
static unsigned int hp_ids(struct hp_qmp *q, const char *prefix, char (*ids)[128], unsigned int max)
{
	const struct json_value *l, *e;
	struct json_doc *doc;
	unsigned int n = 0;

	l = hp_qom_list(q, "/machine/peripheral", &doc);
	for (e = l ? l->child : NULL; e && n < max; e = e->next) {
		const char *name = json_string(json_get(e, "name"));

		if (name && !strncmp(name, prefix, strlen(prefix)) && strlen(name) < 128)
			snprintf(ids[n++], 128, "%s", name);
	}
	json_free(doc);
	return n;
}

/* --- the ports' directory and files --- */

/*
 * Where the ports live, opened once: every file is made, checked and removed
 * relative to @fd. @parent is the default root's fd (-1 with --dir), @leaf
 * the directory's name in it; @made: this run created the directory.
 */
struct hp_dir {
	int fd;
	int parent;
	char leaf[64];
	bool made;
};


/*
 * A directory the ports may live in: a directory, not a link (the caller
 * opened it O_NOFOLLOW), owned by root or by us, that nobody else can write:
 * QEMU opens its FIFOs by path, so whoever could rename them could hand QEMU
 * other files, or us theirs.
 */
static int hp_check_dir(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)) {
		log_err("%s is owned by uid %u with mode %04o: setup --hotplug keeps ports only in "
			"a directory that nobody but root%s can write", path, (unsigned int)st.st_uid,
			(unsigned int)(st.st_mode & 07777), geteuid() ? " and you" : "");
		return -EPERM;
	}
	return 0;
}

/* open @name in @at (a directory, no link followed) and check it; -ENOENT is silent. */
static int hp_open_checked(int at, const char *name, const char *path, int *fd)
{
	int ret;

	*fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0) {
		ret = errno == ELOOP || errno == ENOTDIR ? -ENOTDIR : -errno;
		if (ret != -ENOENT)
			log_err("%s: %s", path, ret == -ENOTDIR ? "not a directory (a link, or "
				"another file): setup --hotplug follows no link" : strerror(-ret));
		return ret;
	}
	ret = hp_check_dir(*fd, path);
	if (ret < 0) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}

static void hp_dir_close(struct hp_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	if (d->parent >= 0)
		close(d->parent);
	d->fd = d->parent = -1;
}

/*
 * Open (and with @create make) the ports' directory: --dir as given, or
 * HP_DEFAULT_ROOT/qemu-PID-START for the QEMU process @pid that serves the
 * socket; @o->dir is set to it. Without @create a directory that is not
 * there is -ENOENT, without a message.
 */
static int hp_dir_open(struct hotplug_opts *o, pid_t pid, bool create, struct hp_dir *d)
{
	unsigned long long start, self;
	int ret;

	d->fd = d->parent = -1;
	d->made = false;
	d->leaf[0] = 0;
	if (o->dir[0]) {
		/* The operator's choice: its parents are theirs, the directory itself is checked. */
		if (create) {
			ret = collect_mkdirs(o->dir);
			if (ret < 0) {
				log_err("cannot create %s: %s", o->dir, strerror(-ret));
				return ret;
			}
		}
		return hp_open_checked(AT_FDCWD, o->dir, o->dir, &d->fd);
	}
	ret = pid > 0 ? qemuproc_start_time(pid, &start) : -ESRCH;
	if (ret == 0)
		ret = qemuproc_start_time(getpid(), &self);
	if (ret < 0) {
		log_err("--qmp %s: cannot tell which process serves it (pid %d: %s): give --dir DIR",
			o->qmp, (int)pid, strerror(-ret));
		return ret;
	}
	/*
	 * SO_PEERCRED names the process that listened: one that started after
	 * us cannot have been it. It left, and its pid is another's now.
	 */
	if (start > self) {
		log_err("--qmp %s: the process that listened on it (pid %d) is gone, and pid %d is "
			"another process now: give --dir DIR", o->qmp, (int)pid, (int)pid);
		return -ESRCH;
	}
	snprintf(d->leaf, sizeof(d->leaf), "qemu-%d-%llu", (int)pid, start);
	snprintf(o->dir, sizeof(o->dir), "%s/%s", HP_DEFAULT_ROOT, d->leaf);
	if (create && mkdir(HP_DEFAULT_ROOT, 0755) < 0 && errno != EEXIST) {
		ret = -errno;
		log_err("cannot create %s: %s%s", HP_DEFAULT_ROOT, strerror(-ret),
			ret == -EACCES ? " (run setup as root, or give --dir DIR)" : "");
		return ret;
	}
	ret = hp_open_checked(AT_FDCWD, HP_DEFAULT_ROOT, HP_DEFAULT_ROOT, &d->parent);
	if (ret < 0)
		return ret;
	if (create) {
		if (mkdirat(d->parent, d->leaf, 0755) == 0)
			d->made = true;
		else if (errno != EEXIST) {
			ret = -errno;
			log_err("cannot create %s: %s%s", o->dir, strerror(-ret),
				ret == -EACCES ? " (run setup as root, or give --dir DIR)" : "");
			hp_dir_close(d);
			return ret;
		}
	}
	ret = hp_open_checked(d->parent, d->leaf, o->dir, &d->fd);
	if (ret < 0) {
		if (d->made)
			unlinkat(d->parent, d->leaf, AT_REMOVEDIR);
		hp_dir_close(d);
	}
	return ret;
}

/* The file name of port @i's file @k (0 .in, 1 .out; -1 the socket). */
static void hp_file_name(unsigned int i, unsigned int vcpus, int k, char *buf, size_t len)
{
	const char *sfx = k < 0 ? "" : k ? ".out" : ".in";

	if (i < vcpus)
		snprintf(buf, len, HP_DATA_PREFIX "%u%s", i, sfx);
	else
		snprintf(buf, len, HP_CTL_NAME "%s", sfx);
}

/* Whom setup gives the FIFOs: QEMU's user @peer, when we may (root) and it is not root. */
static uid_t hp_fifo_uid(uid_t peer)
{
	return geteuid() == 0 && peer ? peer : geteuid();
}

/* "uid N (NAME)" */
static void hp_user(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);
	char name[64];

	collect_sanitize(name, sizeof(name), pw ? pw->pw_name : "?", false);
	snprintf(buf, len, "uid %u (%s)", (unsigned int)uid, name);
}

/*
 * Whether @st is a FIFO exactly as setup makes it for a QEMU run by @uid: a
 * FIFO (the entry itself, no link followed), @uid's, mode 0600, one name.
 * @why (may be NULL) says what differs.
 */
static bool hp_fifo_ours(const struct stat *st, uid_t uid, char *why, size_t len)
{
	char who[96];

	if (!S_ISFIFO(st->st_mode)) {
		if (why)
			snprintf(why, len, "it is %s, not a FIFO", S_ISLNK(st->st_mode) ? "a link" :
				 S_ISDIR(st->st_mode) ? "a directory" : S_ISREG(st->st_mode) ?
				 "a regular file" : S_ISSOCK(st->st_mode) ? "a socket" : "a device");
		return false;
	}
	if (st->st_uid != uid) {
		if (why) {
			hp_user(st->st_uid, who, sizeof(who));
			snprintf(why, len, "it belongs to %s, not to uid %u that setup gives them to", who,
				 (unsigned int)uid);
		}
		return false;
	}
	if ((st->st_mode & 07777) != 0600) {
		if (why)
			snprintf(why, len, "its mode is %04o, not 0600",
				 (unsigned int)(st->st_mode & 07777));
		return false;
	}
	if (st->st_nlink != 1) {
		if (why)
			snprintf(why, len, "it has %lu names (hard links), not one",
				 (unsigned long)st->st_nlink);
		return false;
	}
	return true;
}

/* Whether a unix socket is bound to the file @st (whatever path names it). */
static bool hp_sock_bound(const struct stat *st)
{
	struct procfd_unix *u;
	unsigned int n, i;
	struct stat s;
	bool bound = false;

	u = procfd_read_unix(&n);
	for (i = 0; i < n && !bound; i++)
		bound = stat(u[i].path, &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino;
	free(u);
	return bound;
}

/*
 * With the unix backend QEMU binds the sockets itself (as @peer): one left by
 * an earlier run makes that fail. Only such a one goes: QEMU's user's, with
 * nothing bound to it any more.
 */
static int hp_clear_sockets(const struct hotplug_opts *o, struct hp_dir *d, uid_t peer)
{
	char name[64], who[96];
	struct stat st;
	unsigned int i;
	bool sock;
	int ret;

	for (i = 0; i <= o->vcpus; i++) {
		hp_file_name(i, o->vcpus, -1, name, sizeof(name));
		if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		sock = S_ISSOCK(st.st_mode);
		if (!sock || st.st_uid != peer || hp_sock_bound(&st)) {
			hp_user(st.st_uid, who, sizeof(who));
			log_err("%s/%s is there already (%s of %s%s): setup --hotplug takes over no "
				"file it did not make: remove it, or give another --dir", o->dir, name,
				sock ? "a socket" : "not a socket", who,
				sock && st.st_uid == peer ? ", and a process listens on it" : "");
			return -EEXIST;
		}
		if (unlinkat(d->fd, name, 0) < 0) {
			ret = -errno;
			log_err("cannot remove the stale socket %s/%s: %s", o->dir, name,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The command name of process @pid, sanitised, into @buf ("?" when it is gone). */
static void hp_comm(pid_t pid, char *buf, size_t len)
{
	char path[64], raw[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, raw, sizeof(raw) - 1);
		close(fd);
	}
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	raw[n] = 0;
	raw[strcspn(raw, "\n")] = 0;
	collect_sanitize(buf, len, raw, false);
}

/*
 * The port FIFOs that are in @d already: each must be what setup makes for
 * @uid (hp_fifo_ours()) and open in no process (another VM's QEMU, a
 * recording). Return: 0, -EEXIST or -EBUSY after a message naming the file
 * and its owner or holder, or -errno.
 */
static int hp_check_fifos(const struct hotplug_opts *o, struct hp_dir *d, uid_t uid)
{
	unsigned int i, nf = 2 * (o->vcpus + 1), nk = 0, *which;
	char name[64], why[160], comm[64];
	struct procfd_key *keys;
	struct stat st;
	int ret = 0;

	keys = calloc(nf, sizeof(*keys));
	which = calloc(nf, sizeof(*which));	/* the file each key is */
	if (!keys || !which) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nf; i++) {
		hp_file_name(i / 2, o->vcpus, i % 2, name, sizeof(name));
		if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			ret = -errno;
			log_err("%s/%s: %s", o->dir, name, strerror(-ret));
			goto out;
		}
		if (!hp_fifo_ours(&st, uid, why, sizeof(why))) {
			log_err("%s/%s is there already and %s: setup --hotplug takes over no file it "
				"did not make: remove it, or give another --dir", o->dir, name, why);
			ret = -EEXIST;
			goto out;
		}
		which[nk] = i;
		keys[nk++] = (struct procfd_key){ .dev = st.st_dev, .ino = st.st_ino };
	}
	procfd_holders(keys, nk, NULL);
	for (i = 0; i < nk; i++) {
		if (!keys[i].holder)
			continue;
		hp_comm(keys[i].holder, comm, sizeof(comm));
		hp_file_name(which[i] / 2, o->vcpus, which[i] % 2, name, sizeof(name));
		log_err("%s/%s is there already and open in process %d (%s): setup --hotplug takes "
			"over no FIFO another process holds (another VM's port, or a recording): give "
			"another --dir", o->dir, name, (int)keys[i].holder, comm);
		ret = -EBUSY;
		goto out;
	}
out:
	free(which);
	free(keys);
	return ret;
}

/* Make the port FIFOs that are not there, 0600, and give them to @uid; @made[] gets them. */
static int hp_mkfifos(const struct hotplug_opts *o, struct hp_dir *d, uid_t uid, bool *made)
{
	unsigned int i, nf = 2 * (o->vcpus + 1);
	struct stat st;
	char name[64];
	mode_t um;
	int fd, ret = 0;

	um = umask(077);
	for (i = 0; i < nf && ret == 0; i++) {
		hp_file_name(i / 2, o->vcpus, i % 2, name, sizeof(name));
		if (mkfifoat(d->fd, name, 0600) < 0) {
			if (errno == EEXIST)
				continue;	/* hp_check_fifos() took it */
			ret = -errno;
			log_err("cannot create the FIFO %s/%s: %s", o->dir, name, strerror(-ret));
			break;
		}
		made[i] = true;
		/* QEMU opens them: they are its user's when it does not run as us. */
		if (uid == geteuid())
			continue;
		fd = openat(d->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			ret = -errno;
		else if (!S_ISFIFO(st.st_mode))
			ret = -EEXIST;	/* only root can write here: not to be */
		else if (fchownat(fd, "", uid, (gid_t)-1, AT_EMPTY_PATH) < 0)
			ret = -errno;
		if (ret < 0)
			log_err("cannot give the FIFO %s/%s to uid %u: %s", o->dir, name,
				(unsigned int)uid, strerror(-ret));
		if (fd >= 0)
			close(fd);
	}
	umask(um);
	return ret;
}

/*
 * The FIFOs (or, with the unix backend, room for the sockets) of the ports,
 * in @d. A file that is there already is taken only when it is what setup
 * makes and no process has it open, and is never chowned: what is made is
 * made here, 0600, and only then given to QEMU's user. All is checked
 * before anything is made. @made[] gets what this run made, for
 * hp_unmake_files().
 */
static int hp_make_files(const struct hotplug_opts *o, struct hp_dir *d, uid_t peer, bool *made)
{
	uid_t uid = hp_fifo_uid(peer);
	int ret;

	if (o->unix_backend)
		return hp_clear_sockets(o, d, peer);
	ret = hp_check_fifos(o, d, uid);
	if (ret < 0)
		return ret;
	return hp_mkfifos(o, d, uid, made);
}

/* Take out again what hp_make_files() made (@made), and the directory if this run made it. */
static void hp_unmake_files(const struct hotplug_opts *o, struct hp_dir *d, const bool *made)
{
	unsigned int i;
	char name[64];

	for (i = 0; made && i < 2 * (o->vcpus + 1); i++) {
		if (!made[i])
			continue;
		hp_file_name(i / 2, o->vcpus, i % 2, name, sizeof(name));
		unlinkat(d->fd, name, 0);
	}
	if (d->made)
		unlinkat(d->parent, d->leaf, AT_REMOVEDIR);
}

/*
 * Remove the ports' FIFOs that setup made for the QEMU run by @peer
 * (hp_fifo_ours()), and the directory when it is empty then. Anything else
 * under a port's name stays, and is named. @n gets the FIFOs removed.
 * Return: 0 (also when the directory is not there), or -errno after a
 * message when it cannot be trusted or found.
 */
static int hp_remove_files(struct hotplug_opts *o, uid_t peer, pid_t pid, unsigned int vcpus,
			   unsigned int *n)
{
	uid_t uid = hp_fifo_uid(peer);
	struct hp_dir d;
	char name[64], why[160];
	struct stat st;
	unsigned int i;
	int k, ret;

	*n = 0;
	ret = hp_dir_open(o, pid, false, &d);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	for (i = 0; i <= vcpus; i++) {
		for (k = 0; k < 2; k++) {
			hp_file_name(i, vcpus, k, name, sizeof(name));
			if (fstatat(d.fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (!hp_fifo_ours(&st, uid, why, sizeof(why))) {
				log_warn("left %s/%s: setup did not make it (%s)", o->dir, name, why);
				continue;
			}
			if (unlinkat(d.fd, name, 0) == 0)
				(*n)++;
		}
	}
	/* Only when empty: a directory the user keeps other files in stays. */
	if (d.parent >= 0)
		unlinkat(d.parent, d.leaf, AT_REMOVEDIR);
	else
		rmdir(o->dir);
	hp_dir_close(&d);
	return 0;
}

/* --- unplugging --- */

static bool hp_deleted(const struct hp_qmp *q, const char *id)
{
	unsigned int i;

	for (i = 0; i < q->nr_deleted; i++)
		if (!strcmp(q->deleted[i], id))
			return true;
	return false;
}

/* Wait until QEMU said DEVICE_DELETED for every id in @ids. Return: how many did not go. */
static unsigned int hp_wait_deleted(struct hp_qmp *q, char (*ids)[128], unsigned int n, int ms)
{
	long long deadline = hp_now_ms() + ms;
	struct json_doc *doc;
	unsigned int i, left;
	size_t len;

	for (;;) {
		for (i = 0, left = 0; i < n; i++)
			left += !hp_deleted(q, ids[i]);
		if (!left || hp_readline(q, deadline, &len) < 0)
			return left;
		doc = json_parse(q->buf, len, NULL, NULL);
		hp_consume(q, len);
		if (doc && json_get(json_root(doc), "event"))
			hp_event(q, json_root(doc));
		json_free(doc);
	}
}

/*
 * device_del each of @ids (in order) and wait for QEMU to delete them, then
 * chardev-remove the chardev of each port (id vt-hp-port-X: chardev vt-hp-X).
 * Return: ports left behind.
 */
static unsigned int hp_unplug_ports(struct hp_qmp *q, char (*ids)[128], unsigned int n)
{
	char err[256], chardev[160];
	unsigned int i, left;

	for (i = 0; i < n; i++)
		if (hp_exec(q, "device_del", a_id, ids[i], NULL, err, sizeof(err)) < 0)
			log_err("--qmp %s: device_del %s: %s", q->path, ids[i], err);
	left = hp_wait_deleted(q, ids, n, HP_DELETE_MS);
	for (i = 0; i < n; i++) {
		if (!hp_deleted(q, ids[i]))
			continue;
		snprintf(chardev, sizeof(chardev), HP_ID_PREFIX "%s", ids[i] + strlen(HP_PORT_PREFIX));
		if (hp_exec(q, "chardev-remove", a_id, chardev, NULL, err, sizeof(err)) < 0)
			log_err("--qmp %s: chardev-remove %s: %s", q->path, chardev, err);
	}
	return left;
}

/* The control port first, then the data ports: the agent (and its unit) stop with the first. */
static void hp_order_ctl_first(char (*ids)[128], unsigned int n)
{
	char tmp[128];
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (strcmp(ids[i], HP_PORT_PREFIX "ctl") || !i)
			continue;
		memcpy(tmp, ids[i], sizeof(tmp));
		memmove(ids[1], ids[0], i * sizeof(ids[0]));
		memcpy(ids[0], tmp, sizeof(tmp));
		return;
	}
}

/*
 * device_del the controllers --hotplug added. One whose unplug QEMU already
 * asked the guest for (a PCI unplug waits for the guest to eject it) is no
 * error. Return: how many are still there after a short wait.
 */
static unsigned int hp_unplug_controllers(struct hp_qmp *q, char (*ctls)[128], unsigned int n)
{
	unsigned int i;
	char err[256];

	for (i = 0; i < n; i++)
		if (hp_exec(q, "device_del", a_id, ctls[i], NULL, err, sizeof(err)) < 0 &&
		    !strstr(err, "already in the process of unplug"))
			log_err("--qmp %s: device_del %s: %s", q->path, ctls[i], err);
	return n ? hp_wait_deleted(q, ctls, n, HP_CTL_DELETE_MS) : 0;
}

static int hp_remove(struct hp_qmp *q, struct hotplug_opts *o, uid_t uid, pid_t pid)
{
	static char ids[HP_MAX_VCPUS + 8][128];
	char ctls[HP_MAX_BUSES][128];
	unsigned int n, nctl, left, files = 0, ctl_left;
	int ret = 0;

	n = hp_ids(q, HP_PORT_PREFIX, ids, sizeof(ids) / sizeof(ids[0]));
	nctl = hp_ids(q, HP_SER_PREFIX, ctls, HP_MAX_BUSES);
	if (!n) {
		ctl_left = hp_unplug_controllers(q, ctls, nctl);
		printf("QEMU %s: no ports that setup --hotplug added: nothing to remove%s\n", o->name,
		       ctl_left ? " (the virtio-serial controller it added waits for the guest to "
		       "eject it)" : nctl ? " (the virtio-serial controller it added is gone now)" : "");
		return 0;
	}
	hp_order_ctl_first(ids, n);
	left = hp_unplug_ports(q, ids, n);
	ctl_left = hp_unplug_controllers(q, ctls, nctl);
	if (ctl_left)
		log_warn("QEMU %s: the guest has not released the hot-plugged virtio-serial "
			 "controller yet (a PCI unplug needs the guest's consent): it goes when the "
			 "guest ejects it", o->name);
	if (!left)
		ret = hp_remove_files(o, uid, pid, n - 1, &files);
	printf("QEMU %s: unplugged %u ports (the control port first: the guest's trace-agent "
	       "stops with it)%s, no reboot%s%s\n", o->name, n - left,
	       nctl ? " and the virtio-serial controller setup added" : "",
	       files ? "; removed their FIFOs in " : "", files ? o->dir : "");
	if (left) {
		log_err("QEMU %s: %u ports were not deleted within %d s", o->name, left,
			HP_DELETE_MS / 1000);
		return -EIO;
	}
	return ret;
}

/* --- plugging --- */

/* Free port numbers, bus after bus: at most 30 per bus, below its max_ports, never 0. */
static unsigned int hp_free_slots(const struct hp_bus *buses, unsigned int nbus,
				  struct hp_slot *slots, unsigned int max)
{
	unsigned int b, nr, last, n = 0;

	for (b = 0; b < nbus && n < max; b++) {
		last = buses[b].max_ports > HP_PORTS_PER_CTL ? HP_PORTS_PER_CTL :
			(buses[b].max_ports ? buses[b].max_ports - 1 : 0);
		for (nr = 1; nr <= last && n < max; nr++)
			if (!buses[b].used[nr])
				slots[n++] = (struct hp_slot){ .bus = b, .nr = nr };
	}
	return n;
}

/* Port @i's names: the guest's port name, and the ids (vt-hp-cpuN / vt-hp-ctl). */
static void hp_names(unsigned int i, unsigned int vcpus, char *name, char *chardev, char *id,
		     size_t len)
{
	if (i < vcpus) {
		snprintf(name, len, HP_DATA_PREFIX "%u", i);
		snprintf(chardev, len, HP_ID_PREFIX "cpu%u", i);
		snprintf(id, len, HP_PORT_PREFIX "cpu%u", i);
	} else {
		snprintf(name, len, HP_CTL_NAME);
		snprintf(chardev, len, HP_ID_PREFIX "ctl");
		snprintf(id, len, HP_PORT_PREFIX "ctl");
	}
}

static int hp_plug(struct hp_qmp *q, struct hotplug_opts *o, uid_t uid, pid_t pid)
{
	static struct hp_slot slots[HP_MAX_VCPUS + 1];
	static struct hp_bus buses[HP_MAX_BUSES];
	static bool have[HP_MAX_VCPUS];
	static char added[HP_MAX_VCPUS + 1][128];
	static bool made[2 * (HP_MAX_VCPUS + 1)];
	char name[128], chardev[128], id[128], path[PATH_MAX], err[256], ctl_id[128], who[96];
	struct hp_dir d = { .fd = -1, .parent = -1 };
	struct hp_found f = { .have = have };
	unsigned int nports = o->vcpus + 1, nbus, nfree, i, nadded = 0, nctl_added = 0;
	bool have_hp_ser;
	int ret;

	ret = hp_scan(q, buses, &nbus, &f, &have_hp_ser);
	if (ret < 0)
		return ret;
	if (f.ctl || f.nr_data) {
		if (f.ctl && f.nr_data == o->vcpus) {
			printf("QEMU %s: it has the trace ports already (%u data ports and "
			       "agent-ctl-path): nothing changed\n", o->name, f.nr_data);
			return 0;
		}
		log_err("QEMU %s has %u trace-path-cpuN ports%s, not the %u and the control port "
			"wanted: `virtio-trace-collect setup --qmp %s --remove` takes out those "
			"--hotplug added", o->name, f.nr_data, f.ctl ? " and agent-ctl-path" : "",
			o->vcpus, q->path);
		return -EEXIST;
	}
	nfree = hp_free_slots(buses, nbus, slots, nports);
	/* No room: hot-plug controllers of our own (a PCI slot that takes hot-plug needed). */
	while (nfree < nports && nbus < HP_MAX_BUSES && !have_hp_ser) {
		snprintf(ctl_id, sizeof(ctl_id), HP_SER_PREFIX "%u", nctl_added);
		if (hp_exec(q, "device_add", a_controller, ctl_id, NULL, err, sizeof(err)) < 0) {
			log_err("QEMU %s: its virtio-serial buses have %u free ports, the trace ports "
				"need %u, and QEMU could not hot-plug a virtio-serial controller: %s",
				o->name, nfree, nports, err);
			log_err("QEMU %s: what to change: start QEMU with a controller that has room, "
				"e.g. -device virtio-serial-pci,id=vtser0,max_ports=31 (`setup --vcpus N` "
				"prints all the arguments), or on q35 with a free hot-pluggable slot, e.g. "
				"-device pcie-root-port,id=vt-rp0,chassis=9", o->name);
			ret = -ENOSPC;
			goto rollback;
		}
		nctl_added++;
		memset(&buses[nbus], 0, sizeof(buses[nbus]));
		snprintf(buses[nbus].name, sizeof(buses[nbus].name), "%s.0", ctl_id);
		buses[nbus].max_ports = HP_PORTS_PER_CTL + 1;
		nbus++;
		nfree = hp_free_slots(buses, nbus, slots, nports);
	}
	if (nfree < nports) {
		log_err("QEMU %s: %u free virtio-serial ports, the trace ports need %u", o->name, nfree,
			nports);
		ret = -ENOSPC;
		goto rollback;
	}
	ret = hp_dir_open(o, pid, true, &d);
	if (ret < 0)
		goto rollback;
	memset(made, 0, sizeof(made));
	ret = hp_make_files(o, &d, uid, made);
	if (ret < 0)
		goto rollback;
	for (i = 0; i < nports; i++) {
		struct chardev_args ca = { .id = chardev, .path = path, .unix_socket = o->unix_backend };
		struct port_args pa = { .id = id, .bus = buses[slots[i].bus].name, .nr = slots[i].nr,
					.chardev = chardev, .name = name };

		hp_names(i, o->vcpus, name, chardev, id, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", o->dir, name);
		if (hp_exec(q, "chardev-add", a_chardev, &ca, NULL, err, sizeof(err)) < 0) {
			log_err("QEMU %s: chardev-add %s (%s): %s", o->name, chardev, path, err);
			ret = -EIO;
			goto rollback;
		}
		if (hp_exec(q, "device_add", a_port, &pa, NULL, err, sizeof(err)) < 0) {
			log_err("QEMU %s: device_add virtserialport %s on %s nr %u: %s", o->name, name,
				pa.bus, pa.nr, err);
			hp_exec(q, "chardev-remove", a_id, chardev, NULL, NULL, 0);
			ret = -EIO;
			goto rollback;
		}
		snprintf(added[nadded++], sizeof(added[0]), "%s", id);
	}
	if (pid)
		snprintf(who, sizeof(who), "%s pid %d", o->name, (int)pid);
	else
		snprintf(who, sizeof(who), "%s", o->name);
	printf("QEMU %s: hot-plugged %u ports (trace-path-cpu0..%u, agent-ctl-path) on "
	       "virtio-serial bus %s%s, ports %u..%u (%s in %s), no reboot\n", who, nports, o->vcpus - 1, buses[slots[0].bus].name,
	       slots[nports - 1].bus != slots[0].bus ? " and up" : "", slots[0].nr,
	       slots[nports - 1].nr, o->unix_backend ? "unix sockets" : "FIFOs", o->dir);
	if (nctl_added)
		printf("QEMU %s: hot-plugged %u virtio-serial controller%s (%s0..) for them\n", o->name,
		       nctl_added, nctl_added == 1 ? "" : "s", HP_SER_PREFIX);
	printf("QEMU %s: the guest's trace-agent starts by itself when agent-ctl-path appears (udev "
	       "rule 90-trace-agent.rules); record with `virtio-trace-collect record --chardev-dir %s "
	       "--name %s`; `setup --qmp %s --remove` unplugs them\n", o->name, o->dir, o->name,
	       q->path);
	hp_dir_close(&d);
	return 0;

rollback:
	if (nadded) {
		hp_order_ctl_first(added, nadded);
		hp_unplug_ports(q, added, nadded);
	}
	for (i = 0; i < nctl_added; i++) {
		snprintf(ctl_id, sizeof(ctl_id), HP_SER_PREFIX "%u", i);
		hp_exec(q, "device_del", a_id, ctl_id, NULL, NULL, 0);
	}
	if (nadded || nctl_added)
		log_err("QEMU %s: what was plugged is taken out again", o->name);
	if (d.fd >= 0)
		hp_unmake_files(o, &d, made);
	hp_dir_close(&d);
	return ret;
}

/**
 * hotplug_run() - `setup --qmp SOCKET --hotplug` or `--remove`
 * @o: what to do; @o->name, @o->dir and @o->vcpus are filled in when empty
 *
 * Prints what it did on stdout. The default directory is
 * /run/virtio-trace/qemu-PID-START, PID and START being the pid (SO_PEERCRED)
 * and start time of the process that serves the socket.
 *
 * Return: 0, or -errno after a message that says what to do.
 */
int hotplug_run(struct hotplug_opts *o)
{
	struct json_doc *doc = NULL;
	struct hp_qmp q;
	unsigned int nr = 0;
	pid_t pid = 0;
	uid_t uid = 0;
	int ret;

	ret = hp_open(&q, o->qmp, &pid, &uid);
	if (ret < 0)
		return ret;
	if (!o->name[0]) {
		const char *n = NULL;

		if (hp_exec(&q, "query-name", NULL, NULL, &doc, NULL, 0) == 0)
			n = json_string(json_get(json_get(json_root(doc), "return"), "name"));
		/*
		 * Whoever serves the socket answers this: the name is only shown, and
		 * suggested to record --name, which makes file names of it (so only a
		 * name that can be one). It never chooses a path here.
		 */
		snprintf(o->name, sizeof(o->name), "%s", n && collect_name_ok(n) ? n : "guest");
		json_free(doc);
		doc = NULL;
	}
	if (o->remove) {
		ret = hp_remove(&q, o, uid, pid);
		hp_close(&q);
		return ret;
	}
	if (!o->vcpus) {
		const struct json_value *e;
		uint64_t cpu;

		if (hp_exec(&q, "query-cpus-fast", NULL, NULL, &doc, NULL, 0) == 0) {
			const struct json_value *arr = json_get(json_root(doc), "return");

			for (e = json_is(arr, JSON_ARRAY) ? arr->child : NULL; e; e = e->next)
				if (json_u64(json_get(e, "cpu-index"), &cpu) == 0 && cpu < HP_MAX_VCPUS &&
				    cpu + 1 > nr)
					nr = cpu + 1;
		}
		json_free(doc);
		if (!nr) {
			log_err("--qmp %s: QEMU did not say how many vCPUs it has (query-cpus-fast): "
				"give --vcpus N", o->qmp);
			hp_close(&q);
			return -EIO;
		}
		o->vcpus = nr;
	}
	ret = hp_plug(&q, o, uid, pid);
	hp_close(&q);
	return ret;
}
