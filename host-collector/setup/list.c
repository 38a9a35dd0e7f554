// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `list`: what can be traced on this host. Libvirt domains with trace
 * channels (running, or only in their definition) come from the libvirt
 * module; QEMU processes that libvirt does not run are found in /proc: a
 * QEMU process whose command line has virtserialport devices named
 * trace-path-cpuN / agent-ctl-path, or whose open files are such ports
 * (ports hot-plugged with `setup --qmp --hotplug` are on no command line).
 * A QEMU is what the kernel says it runs, not what its argv[0] says, and
 * only root's and the invoking user's are taken without --any-user
 * (qemuproc.c); a process with trace ports left out is named, with why.
 *
 * Each guest whose control port is there gets one HELLO, all at once, and
 * the answers are waited for together, at most the --timeout (2 s): an agent
 * answers in milliseconds, a guest without one never. The HELLO carries no
 * capability the agent would act on, and no BYE follows: the agent keeps
 * running as it was. A HELLO nobody read is taken back out of a pipe pair,
 * so that no agent starting later answers it. A port another process has
 * open (a collector recording the guest) is not touched: two readers on a
 * FIFO would steal each other's bytes, and QEMU serves one client per
 * socket. A port is opened once, never through a link, and checked on its
 * descriptor (a FIFO or socket of the QEMU's user or root, a socket's
 * listener the QEMU) before the HELLO: a user who names the ports of their
 * QEMU cannot make root write into another file. What an agent sends is
 * checked by the codec and sanitised.
 *
 * `list` needs the protocol codec (lib/) and the libvirt module, both of
 * which setup/ may use; `record --all` calls list_find() and list_probe().
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "opts.h"
#include "json.h"
#include "list.h"
#include "procfd.h"
#include "qemuproc.h"
#include "text.h"
#include "vt_conn.h"
#include "vt_proto.h"

#define LIST_CTL_NAME		"agent-ctl-path"
#define LIST_DATA_PREFIX	"trace-path-cpu"
#define LIST_DEFAULT_TIMEOUT_MS	2000
#define LIST_MAX_GUESTS		4096
#define LIST_CMDLINE_MAX	(256u << 10)
#define LIST_MAX_CHARDEVS	2048

/* --- QEMU processes in /proc --- */

/* A -chardev of a QEMU command line: its id, backend and path. */
struct list_chardev {
	char id[128];
	char path[4096];
	bool sock;
	bool server;
};

/* "key=value" of a QEMU option string; ",," is a literal ','. */
static bool opt_get(const char *opts, const char *key, char *val, size_t len)
{
	size_t klen = strlen(key), n = 0;
	const char *p = opts;

	while (*p) {
		if (!strncmp(p, key, klen) && p[klen] == '=') {
			for (p += klen + 1; *p && n + 1 < len; p++) {
				if (*p == ',' && p[1] == ',')
					p++;
				else if (*p == ',')
					break;
				val[n++] = *p;
			}
			val[n] = 0;
			return true;
		}
		/* to the next unescaped ',' */
		while (*p && !(*p == ',' && p[1] != ',')) {
			if (*p == ',' && p[1] == ',')
				p++;
			p++;
		}
		if (*p)
			p++;
	}
	return false;
}

/* The word before the first unescaped ',' (a -chardev's backend, a -device's driver). */
static void opt_first(const char *opts, char *val, size_t len)
{
	size_t n = 0;

	while (*opts && *opts != ',' && n + 1 < len)
		val[n++] = *opts++;
	val[n] = 0;
}

/* A trace port name: trace-path-cpuN -> N, agent-ctl-path -> -1, else -2. */
static int port_index(const char *name)
{
	char *end;
	unsigned long v;

	if (!strcmp(name, LIST_CTL_NAME))
		return -1;
	if (strncmp(name, LIST_DATA_PREFIX, strlen(LIST_DATA_PREFIX)))
		return -2;
	v = strtoul(name + strlen(LIST_DATA_PREFIX), &end, 10);
	if (*end || end == name + strlen(LIST_DATA_PREFIX) || v >= COLLECT_MAX_CPUS)
		return -2;
	return (int)v;
}

/*
 * One port found: its name and base path (PATH of the pipe pair PATH.in/
 * .out, or the socket). Counts it once and keeps the directory when every
 * port is DIR/NAME.
 */
struct port_set {
	bool seen[COLLECT_MAX_CPUS + 1];	/* [COLLECT_MAX_CPUS]: the control port */
	char dir[4096];
	bool mixed;
	const char *incoming;	/* -incoming's URI, in the command line's buffer (NULL: none) */
	bool listening;		/* QEMU holds a listening socket bound to -incoming unix:PATH */
};

static void note_port(struct list_guest *g, struct port_set *ps, const char *name, const char *base,
		      bool connects)
{
	int i = port_index(name);
	const char *slash;
	size_t dlen;

	if (i < -1)
		return;
	if (ps->seen[i < 0 ? COLLECT_MAX_CPUS : i])
		return;
	ps->seen[i < 0 ? COLLECT_MAX_CPUS : i] = true;
	if (i < 0) {
		g->ctl_port = true;
		snprintf(g->ctl_path, sizeof(g->ctl_path), "%s", base);
	} else {
		g->data_ports++;
	}
	g->listen = g->listen || connects;
	slash = strrchr(base, '/');
	if (!slash || strcmp(slash + 1, name)) {
		ps->mixed = true;
		return;
	}
	dlen = slash - base;
	if (!ps->dir[0] && dlen < sizeof(ps->dir)) {
		memcpy(ps->dir, base, dlen);
		ps->dir[dlen] = 0;
	} else if (strlen(ps->dir) != dlen || strncmp(ps->dir, base, dlen)) {
		ps->mixed = true;
	}
}

/* The -device virtserialport (key=value or JSON) of a command line, to its port. */
static void scan_device(const char *arg, struct list_chardev *cd, unsigned int ncd,
			struct list_guest *g, struct port_set *ps)
{
	char drv[64] = "", chardev[128] = "", name[128] = "";
	unsigned int i;

	if (arg[0] == '{') {
		struct json_doc *doc = json_parse(arg, strlen(arg), NULL, NULL);
		const struct json_value *r = doc ? json_root(doc) : NULL;
		const char *s;

		if ((s = json_string(json_get(r, "driver"))))
			snprintf(drv, sizeof(drv), "%s", s);
		if ((s = json_string(json_get(r, "chardev"))))
			snprintf(chardev, sizeof(chardev), "%s", s);
		if ((s = json_string(json_get(r, "name"))))
			snprintf(name, sizeof(name), "%s", s);
		json_free(doc);
	} else {
		opt_first(arg, drv, sizeof(drv));
		opt_get(arg, "chardev", chardev, sizeof(chardev));
		opt_get(arg, "name", name, sizeof(name));
	}
	if (strcmp(drv, "virtserialport") || port_index(name) < -1)
		return;
	for (i = 0; i < ncd; i++) {
		if (strcmp(cd[i].id, chardev) || !cd[i].path[0])
			continue;
		note_port(g, ps, name, cd[i].path, cd[i].sock && !cd[i].server);
		return;
	}
	/* A port whose chardev has no path here (an fd libvirt passed): the fds may say. */
}

/* QEMU's -qmp unix:PATH,server... */
static void scan_qmp(const char *arg, struct list_guest *g)
{
	char path[4096];

	if (strncmp(arg, "unix:", 5))
		return;
	opt_first(arg + 5, path, sizeof(path));
	snprintf(g->qmp_path, sizeof(g->qmp_path), "%s", path);
}

/* -name NAME[,...] or -name guest=NAME,...: a name that can name files. */
static void scan_name(const char *arg, struct list_guest *g)
{
	char name[256];

	if (!opt_get(arg, "guest", name, sizeof(name)))
		opt_first(arg, name, sizeof(name));
	if (collect_name_ok(name))
		snprintf(g->name, sizeof(g->name), "%s", name);
}

static void scan_cmdline(const char *buf, size_t len, struct list_guest *g, struct port_set *ps,
			 struct list_chardev *cd)
{
	const char *a = buf, *next, *end = buf + len;
	unsigned int ncd = 0;
	char val[128];

	/* -chardev first: -device refers to them, in any order. */
	for (a = buf; a < end; a = next) {
		next = a + strlen(a) + 1;
		if (next >= end || strcmp(a, "-chardev") || ncd >= LIST_MAX_CHARDEVS)
			continue;
		struct list_chardev *c = &cd[ncd];

		memset(c, 0, sizeof(*c));
		opt_first(next, val, sizeof(val));
		c->sock = !strcmp(val, "socket");
		if (strcmp(val, "pipe") && !c->sock)
			continue;
		if (!opt_get(next, "id", c->id, sizeof(c->id)))
			continue;
		opt_get(next, "path", c->path, sizeof(c->path));
		c->server = strstr(next, ",server=on") || strstr(next, ",server,") ||
			    (strlen(next) >= 7 && !strcmp(next + strlen(next) - 7, ",server"));
		ncd++;
	}
	for (a = buf; a < end; a = next) {
		next = a + strlen(a) + 1;
		if (next >= end)
			break;
		if (!strcmp(a, "-device"))
			scan_device(next, cd, ncd, g, ps);
		else if (!strcmp(a, "-qmp"))
			scan_qmp(next, g);
		else if (!strcmp(a, "-name"))
			scan_name(next, g);
		else if (!strcmp(a, "-incoming"))
			ps->incoming = next;
	}
}

/* @u, one of QEMU's sockets, is the listener of its -incoming unix:PATH. */
static void scan_incoming(struct port_set *ps, const struct procfd_unix *u)
{
	char path[4096];

	if (u->connected || !ps->incoming || strncmp(ps->incoming, "unix:", 5))
		return;
	opt_first(ps->incoming + 5, path, sizeof(path));
	ps->listening = ps->listening || !strcmp(path, u->path);
}

/* QEMU's open files that are trace ports: FIFOs NAME.in/.out, sockets by /proc/net/unix. */
static void scan_fds(pid_t pid, struct list_guest *g, struct port_set *ps,
		     const struct procfd_unix *u, unsigned int nu)
{
	char dir[64], link[PATH_MAX], fdp[128], base[PATH_MAX];
	struct dirent *de;
	unsigned long inode;
	unsigned int i;
	ssize_t n;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return;		/* not ours to read (another user's QEMU): the command line must do */
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(fdp, sizeof(fdp), "%s/%s", dir, de->d_name);
		n = readlink(fdp, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (sscanf(link, "socket:[%lu]", &inode) == 1) {
			for (i = 0; i < nu; i++)
				if (u[i].inode == inode) {
					const char *b = strrchr(u[i].path, '/');

					scan_incoming(ps, &u[i]);
					if (b)
						note_port(g, ps, b + 1, u[i].path, false);
					break;
				}
			continue;
		}
		if (link[0] != '/' || n < 4)
			continue;
		/* PATH.in or PATH.out of a pipe chardev */
		snprintf(base, sizeof(base), "%s", link);
		if (n > 3 && !strcmp(base + n - 3, ".in"))
			base[n - 3] = 0;
		else if (n > 4 && !strcmp(base + n - 4, ".out"))
			base[n - 4] = 0;
		else
			continue;
		{
			const char *b = strrchr(base, '/');

			if (b)
				note_port(g, ps, b + 1, base, false);
		}
	}
	closedir(d);
}

/* What argv[0] claims: only to say why a process that calls itself QEMU is not one. */
static bool claims_qemu(const char *argv0)
{
	const char *b = strrchr(argv0, '/');

	b = b ? b + 1 : argv0;
	return !strncmp(b, "qemu-system-", 12) || !strcmp(b, "qemu-kvm") || !strcmp(b, "kvm");
}

static int read_cmdline(pid_t pid, char *buf, size_t size, size_t *len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*len = 0;
	while (*len < size - 1 && (n = read(fd, buf + *len, size - 1 - *len)) > 0)
		*len += n;
	close(fd);
	buf[*len] = 0;
	return *len ? 0 : -ENOENT;
}

/* A process with trace ports that is not probed, and why (said once, by list or record --all). */
static int note_skipped(struct list_found *f, pid_t pid, const struct list_guest *g, const char *why)
{
	struct list_skipped *t = realloc(f->skipped, (f->nr_skipped + 1) * sizeof(*t));

	if (!t)
		return -ENOMEM;
	f->skipped = t;
	t = &f->skipped[f->nr_skipped++];
	t->pid = pid;
	if (g->name[0])
		snprintf(t->name, sizeof(t->name), "%s", g->name);
	else
		snprintf(t->name, sizeof(t->name), "qemu-%d", (int)pid);
	snprintf(t->why, sizeof(t->why), "%s", why);
	return 0;
}

/* A user's name for messages ("uid 1000 (alice)"). */
static void user_words(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);
	char clean[64];

	if (pw) {
		collect_sanitize(clean, sizeof(clean), pw->pw_name, false);
		snprintf(buf, len, "uid %u (%s)", (unsigned int)uid, clean);
	} else {
		snprintf(buf, len, "uid %u", (unsigned int)uid);
	}
}

/*
 * QEMU processes with trace ports that are not @skip (libvirt's). A QEMU is
 * what /proc/PID/exe says (qemuproc.c), never what argv[0] says; one that
 * only claims to be, and another user's QEMU without @any_user, are noted
 * in f->skipped instead.
 */
static int scan_proc(struct list_found *f, const pid_t *skip, unsigned int nskip, bool any_user)
{
	struct list_chardev *cd;
	struct procfd_unix *u;
	unsigned int nu, i;
	struct dirent *de;
	size_t len = 0;
	char *buf, why[400], who[96];
	DIR *d;
	int ret = 0;

	buf = malloc(LIST_CMDLINE_MAX);
	cd = calloc(LIST_MAX_CHARDEVS, sizeof(*cd));
	d = opendir("/proc");
	if (!buf || !cd || !d) {
		ret = d ? -ENOMEM : -errno;
		goto out;
	}
	u = procfd_read_unix(&nu);
	while ((de = readdir(d)) && f->nr < LIST_MAX_GUESTS) {
		struct list_guest *g, *t;
		struct port_set ps;
		char *end;
		pid_t pid = strtol(de->d_name, &end, 10);
		bool skipped = false;
		uid_t uid = 0;
		int q;

		if (*end || pid <= 0 || pid == getpid())
			continue;
		for (i = 0; i < nskip; i++)
			skipped = skipped || skip[i] == pid;
		if (skipped || read_cmdline(pid, buf, LIST_CMDLINE_MAX, &len) < 0)
			continue;
		/* Not ours to look at (another user's, we are not root), or gone: none of ours. */
		q = qemuproc_identify(pid, &uid, why, sizeof(why));
		if (q < 0 || (q == 0 && !claims_qemu(buf)))
			continue;
		t = realloc(f->g, (f->nr + 1) * sizeof(*f->g));
		if (!t) {
			ret = -ENOMEM;
			break;
		}
		f->g = t;
		g = &f->g[f->nr];
		memset(g, 0, sizeof(*g));
		memset(&ps, 0, sizeof(ps));
		scan_cmdline(buf, len, g, &ps, cd);
		scan_fds(pid, g, &ps, u, nu);
		if (!g->data_ports && !g->ctl_port)
			continue;
		if (q == 0) {
			char claim[200], msg[400];

			collect_sanitize(claim, sizeof(claim), buf, false);
			snprintf(msg, sizeof(msg), "it calls itself %s, but %s: not a QEMU", claim, why);
			ret = note_skipped(f, pid, g, msg);
			if (ret < 0)
				break;
			continue;
		}
		if (!any_user && !qemuproc_user_allowed(uid)) {
			user_words(uid, who, sizeof(who));
			snprintf(why, sizeof(why), "a QEMU of another user, %s: --any-user probes it",
				 who);
			ret = note_skipped(f, pid, g, why);
			if (ret < 0)
				break;
			continue;
		}
		g->qemu_pid = pid;
		g->owner_known = true;
		g->owner = uid;
		g->running = true;
		if (!g->name[0])
			snprintf(g->name, sizeof(g->name), "qemu-%d", (int)pid);
		if (!ps.mixed && ps.dir[0])
			snprintf(g->chardev_dir, sizeof(g->chardev_dir), "%s", ps.dir);
		/*
		 * QEMU closes -incoming's listener once the migration's connection came: a unix
		 * listener still open means the guest has not begun to arrive. Other URIs (tcp,
		 * defer) leave no such sign: -incoming alone says it.
		 */
		g->incoming_opt = ps.incoming;
		g->incoming = ps.incoming && (strncmp(ps.incoming, "unix:", 5) || ps.listening);
		f->nr++;
	}
	free(u);
out:
	if (d)
		closedir(d);
	free(cd);
	free(buf);
	return ret;
}

static int by_name(const void *a, const void *b)
{
	const struct list_guest *x = a, *y = b;
	int c;

	if (x->libvirt != y->libvirt)
		return x->libvirt ? -1 : 1;
	c = strcmp(x->libvirt ? x->domain : x->name, y->libvirt ? y->domain : y->name);
	/* Two QEMUs of one -name: the earlier keeps it (list_find()), whatever qsort's order. */
	return c ? c : (x->qemu_pid > y->qemu_pid) - (x->qemu_pid < y->qemu_pid);
}

/**
 * list_find() - the guests with trace ports: libvirt domains, then QEMU processes
 * @uri: the libvirt URI (NULL: libvirt's default)
 * @no_libvirt: leave libvirt out (not asked, its module not loaded)
 * @any_user: also the QEMUs of users other than root and the invoking one
 *	(else they are in f->skipped)
 * @f: filled; list_free() it
 *
 * Return: 0, or -ENOMEM.
 */
int list_find(const char *uri, bool no_libvirt, bool any_user, struct list_found *f)
{
	pid_t *skip = NULL;
	unsigned int i, j, k, nlv = 0;
	int ret;

	memset(f, 0, sizeof(*f));
	if (!no_libvirt) {
		ret = libvirt_list(uri, &f->g, &nlv, f->libvirt_note, sizeof(f->libvirt_note));
		if (ret == -ENOMEM)
			return ret;
		f->nr = nlv;
	}
	skip = calloc(nlv ? nlv : 1, sizeof(*skip));
	if (!skip)
		return -ENOMEM;
	for (i = 0; i < nlv; i++) {
		struct list_guest *g = &f->g[i];
		char why[400];

		skip[i] = g->qemu_pid;
		/* libvirt's word on the domain; the kernel's on whose its QEMU is. */
		g->owner_known = g->qemu_pid &&
				 qemuproc_identify(g->qemu_pid, &g->owner, why, sizeof(why)) == 1;
	}
	ret = scan_proc(f, skip, nlv, any_user);
	free(skip);
	if (ret == -ENOMEM)
		return ret;
	/* A domain's QEMU whose pid libvirt did not give: its ports say whose it is. */
	for (i = nlv, k = nlv; i < f->nr; i++) {
		bool dup = false;

		for (j = 0; j < nlv && f->g[i].ctl_path[0]; j++)
			dup = dup || !strcmp(f->g[i].ctl_path, f->g[j].ctl_path);
		if (dup)
			continue;
		if (k != i)
			f->g[k] = f->g[i];
		k++;
	}
	f->nr = k;
	if (f->nr > 1)
		qsort(f->g, f->nr, sizeof(*f->g), by_name);
	/* Two QEMUs of one -name: the later ones by pid. */
	for (i = 1; i < f->nr; i++)
		if (!f->g[i].libvirt && !strcmp(f->g[i].name, f->g[i - 1].name))
			snprintf(f->g[i].name, sizeof(f->g[i].name), "qemu-%d", (int)f->g[i].qemu_pid);
	return 0;
}

/**
 * list_ports_ready() - whether a guest's ports are there to record from
 * @g: the guest
 *
 * Return: true when it runs with its control port and one data port per
 * vCPU (where the vCPU count is known).
 */
bool list_ports_ready(const struct list_guest *g)
{
	return g->running && g->ctl_port && g->data_ports && (!g->vcpus || g->data_ports == g->vcpus);
}

/**
 * list_keep() - keep only the guests named
 * @f: the list
 * @names: domain names, or the names record would give QEMU processes
 * @n: how many
 */
void list_keep(struct list_found *f, char **names, int n)
{
	unsigned int i, k = 0;
	int j;

	for (i = 0; i < f->nr; i++)
		for (j = 0; j < n; j++)
			if (!strcmp(names[j], f->g[i].libvirt ? f->g[i].domain : f->g[i].name)) {
				f->g[k++] = f->g[i];
				break;
			}
	f->nr = k;
	for (i = 0, k = 0; i < f->nr_skipped; i++)
		for (j = 0; j < n; j++)
			if (!strcmp(names[j], f->skipped[i].name)) {
				f->skipped[k++] = f->skipped[i];
				break;
			}
	f->nr_skipped = k;
}

/**
 * list_free() - release what list_find() found
 * @f: the list
 */
void list_free(struct list_found *f)
{
	free(f->g);
	free(f->skipped);
	memset(f, 0, sizeof(*f));
}

/* --- the HELLO --- */

struct probe {
	struct list_guest *g;
	int rfd, wfd;		/* equal for a socket */
	bool pipe;
	struct vt_conn *conn;
	uint32_t seq;
	bool sent;
	bool done;
};

/*
 * Another process than QEMU and us with a guest's control FIFO open: a
 * collector. Any QEMU process holding it is the guest's own (libvirt's test
 * driver, or a QEMU whose pid is not known).
 */
static bool pid_is_qemu(pid_t pid)
{
	char why[400];
	uid_t uid;

	return qemuproc_identify(pid, &uid, why, sizeof(why)) == 1;
}

/* A connected unix socket on @path (someone is already QEMU's client there). */
static bool sock_in_use(const char *path, const struct procfd_unix *u, unsigned int nu)
{
	unsigned int i;

	for (i = 0; i < nu; i++)
		if (u[i].connected && !strcmp(u[i].path, path))
			return true;
	return false;
}

/*
 * Whose the guest's ports must be: its QEMU's user or root; a domain whose
 * QEMU is not known, root's or ours. A socket's listener must be the QEMU
 * itself, but libvirt may have made a domain's socket: its user or root.
 */
static void port_owner(const struct list_guest *g, struct qemuproc_owner *w)
{
	w->known = true;
	w->uid = g->owner_known ? g->owner : getuid();
	w->pid = g->owner_known && !g->libvirt ? g->qemu_pid : 0;
}

/*
 * Open the guest's control port: the FIFOs P.out and P.in, or the socket P.
 * Each is opened once, never through a link, and checked on its descriptor
 * (qemuproc.c) before the HELLO; nothing is written here. Return: 0, -EBUSY
 * (a socket that has its client), or -errno with @p->g->why set.
 */
static int open_probe(struct probe *p, const struct procfd_unix *u, unsigned int nu)
{
	struct list_guest *g = p->g;
	struct qemuproc_owner w;
	char in[4200], out[4200];
	int ret;

	p->rfd = p->wfd = -1;
	port_owner(g, &w);
	snprintf(in, sizeof(in), "%s.in", g->ctl_path);
	snprintf(out, sizeof(out), "%s.out", g->ctl_path);
	ret = qemuproc_open_fifo(out, &w, &p->rfd, g->why, sizeof(g->why));
	if (ret == 0) {
		p->pipe = true;
		return qemuproc_open_fifo(in, &w, &p->wfd, g->why, sizeof(g->why));
	}
	if (ret != -ENOENT)
		return ret;
	g->why[0] = 0;
	if (sock_in_use(g->ctl_path, u, nu))
		return -EBUSY;
	ret = qemuproc_connect(g->ctl_path, &w, true, &p->rfd, g->why, sizeof(g->why));
	p->wfd = p->rfd;
	return ret;
}

static void drain(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void close_probe(struct probe *p)
{
	/* A HELLO still in the FIFO was not read: take it back, no agent answers it later. */
	if (p->pipe && p->wfd >= 0 && p->sent && !p->done)
		drain(p->wfd);
	vt_conn_free(p->conn);
	p->conn = NULL;
	if (p->wfd >= 0 && p->wfd != p->rfd)
		close(p->wfd);
	if (p->rfd >= 0)
		close(p->rfd);
	p->rfd = p->wfd = -1;
}

static void got_reply(struct probe *p, const struct vt_proto_msg *m)
{
	struct vt_proto_hello h;
	const char *k, *e;
	struct list_guest *g = p->g;

	if (m->type == VT_PROTO_ERROR) {
		p->done = true;
		g->agent = LIST_AGENT_ERROR;
		snprintf(g->why, sizeof(g->why), "the agent refused the HELLO");
		return;
	}
	if (m->type != VT_PROTO_HELLO_REPLY)
		return;		/* something else the agent says (a late answer to another host) */
	p->done = true;
	if (vt_proto_dec_hello(m, &h) < 0) {
		g->agent = LIST_AGENT_ERROR;
		snprintf(g->why, sizeof(g->why), "a malformed HELLO_REPLY");
		return;
	}
	g->agent = LIST_AGENT_ANSWERS;
	g->agent_cpus = h.nr_cpus;
	collect_sanitize(g->software, sizeof(g->software), h.software, false);
	/* "trace-agent 0.1.0 (Linux 6.1.0-28-amd64)": the kernel in parentheses, when there. */
	k = strstr(g->software, " (Linux ");
	if (k) {
		k += strlen(" (Linux ");
		e = strchr(k, ')');
		if (e && (size_t)(e - k) < sizeof(g->kernel)) {
			memcpy(g->kernel, k, e - k);
			g->kernel[e - k] = 0;
		}
	}
}

/**
 * list_probe() - ask every guest whose control port is there for HELLO, at once
 * @f: the guests; each one's agent, software, kernel and why are set
 * @timeout_ms: how long to wait for all the answers together
 */
void list_probe(struct list_found *f, unsigned int timeout_ms)
{
	struct vt_proto_hello hello = {
		.rev_min = VT_PROTO_REV_MIN, .rev_max = VT_PROTO_REV_MAX, .clock = "",
		.software = "virtio-trace-collect " PACKAGE_VERSION " list",
	};
	struct procfd_key *keys;
	struct probe *p;
	struct pollfd *pfd;
	struct procfd_unix *u;
	unsigned int i, k, n = 0, nu, left;
	struct timespec t0, now;
	struct stat st;
	int ret, ms;

	p = calloc(f->nr + 1, sizeof(*p));
	pfd = calloc(f->nr + 1, sizeof(*pfd));
	keys = calloc(f->nr + 1, sizeof(*keys));
	if (!p || !pfd || !keys)
		goto out;
	u = procfd_read_unix(&nu);
	/* Open every control port first (nothing written), then see who else holds the FIFOs. */
	for (i = 0; i < f->nr; i++) {
		struct list_guest *g = &f->g[i];

		if (!list_ports_ready(g))
			continue;
		if (g->listen) {
			snprintf(g->why, sizeof(g->why), "QEMU connects to its ports: record --listen");
			continue;
		}
		memset(&p[n], 0, sizeof(p[n]));
		p[n].g = g;
		ret = open_probe(&p[n], u, nu);
		if (ret == -EBUSY) {
			g->agent = LIST_AGENT_BUSY;
			close_probe(&p[n]);
			continue;
		}
		if (ret < 0) {
			g->agent = LIST_AGENT_ERROR;
			if (!g->why[0])
				snprintf(g->why, sizeof(g->why), "cannot open its control port: %s",
					 strerror(-ret));
			close_probe(&p[n]);
			continue;
		}
		if (p[n].pipe && fstat(p[n].rfd, &st) == 0)
			keys[n] = (struct procfd_key){ .dev = st.st_dev, .ino = st.st_ino,
						      .skip = g->qemu_pid };
		n++;
	}
	free(u);
	/* Who else has each pipe port open: a recording collector (we are not counted). */
	procfd_holders(keys, n, pid_is_qemu);
	for (i = 0, k = 0; i < n; i++) {
		struct list_guest *g = p[i].g;

		if (p[i].pipe && keys[i].holder) {
			g->agent = LIST_AGENT_BUSY;
			g->busy_pid = keys[i].holder;
			close_probe(&p[i]);
			continue;
		}
		if (k != i) {
			p[k] = p[i];
			keys[k] = keys[i];
		}
		p[k].conn = vt_conn_new(p[k].rfd, p[k].wfd);
		if (!p[k].conn) {
			close_probe(&p[k]);
			continue;
		}
		if (p[k].pipe)
			drain(p[k].rfd);	/* stale bytes of an earlier session */
		p[k].seq = vt_conn_next_seq(p[k].conn);
		ret = vt_conn_send(p[k].conn, vt_proto_enc_hello(vt_conn_frame(p[k].conn),
								VT_PROTO_FRAME_MAX, VT_PROTO_HELLO,
								p[k].seq, &hello));
		p[k].sent = true;
		if (ret < 0) {
			g->agent = LIST_AGENT_ERROR;
			snprintf(g->why, sizeof(g->why), "cannot write to its control port: %s",
				 strerror(-ret));
			close_probe(&p[k]);
			continue;
		}
		g->agent = LIST_AGENT_SILENT;
		k++;
	}
	n = k;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct vt_proto_msg m;

		for (i = 0, left = 0; i < n; i++) {
			pfd[i] = (struct pollfd){ .fd = -1 };
			if (p[i].done || !p[i].conn)
				continue;
			vt_conn_flush(p[i].conn);
			pfd[i].fd = p[i].rfd;
			pfd[i].events = POLLIN;
			left++;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (int)timeout_ms - (int)((now.tv_sec - t0.tv_sec) * 1000 +
					     (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (!left || ms <= 0)
			break;
		if (poll(pfd, n, ms > 50 ? 50 : ms) < 0 && errno != EINTR)
			break;
		for (i = 0; i < n; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ret = vt_conn_read(p[i].conn);
			while (!p[i].done && vt_conn_next(p[i].conn, &m) > 0)
				got_reply(&p[i], &m);
			if (ret < 0 && ret != -EAGAIN && !p[i].done) {
				p[i].done = true;
				p[i].g->agent = LIST_AGENT_ERROR;
				snprintf(p[i].g->why, sizeof(p[i].g->why), "the port closed: %s",
					 strerror(-ret));
			}
		}
	}
	for (i = 0; i < n; i++) {
		if (p[i].g->agent == LIST_AGENT_SILENT)
			snprintf(p[i].g->why, sizeof(p[i].g->why), "no answer within %.1f s",
				 timeout_ms / 1000.0);
		close_probe(&p[i]);
	}
out:
	free(keys);
	free(pfd);
	free(p);
}

/* --- the `list` subcommand --- */

enum { OPT_JSON = 256, OPT_NO_LIBVIRT, OPT_NO_PROBE, OPT_NAMES, OPT_TIMEOUT, OPT_ANY_USER };

/* list's command line: the one declaration its parsing and --help read (opts.h). */
static const struct opt_def list_opts[] = {
	{ "connect", 'C', KIND_STRING, "URI", "libvirt URI (default: libvirt's default)" },
	{ "any-user", OPT_ANY_USER, KIND_FLAG, NULL, "also the QEMUs of other users (their ports "
	  "must still\nbe that user's or root's)" },
	{ "json", OPT_JSON, KIND_FLAG, NULL, "one JSON document instead of the table" },
	{ "no-libvirt", OPT_NO_LIBVIRT, KIND_FLAG, NULL, "leave libvirt's domains out" },
	{ "no-probe", OPT_NO_PROBE, KIND_FLAG, NULL, "do not ask the agents: only the ports (quick)" },
	{ "names", OPT_NAMES, KIND_FLAG, NULL, "only the names of the libvirt domains that have "
	  "trace\nchannels, one a line (shell completion); implies\n--no-probe" },
	{ "timeout", OPT_TIMEOUT, KIND_SECONDS, "SEC", "wait this long for the agents' answers "
	  "(default 2)", .min = 1, .max = 60 },
	{ NULL },
};

static const struct opt_cmd list_cmd = {
	.name = "list",
	.usage = "[--json] [--connect URI] [--no-libvirt]\n"
"                                 [--no-probe] [--names] [--timeout SEC]\n"
"                                 [--any-user] [NAME]...",
	.about =
"List the guests on this host that have trace ports: libvirt domains whose\n"
"definition or running domain has the channels `setup --domain` adds, and QEMU\n"
"processes with trace-path-cpuN and agent-ctl-path ports (on their command line,\n"
"or hot-plugged). For each: whether the ports are there, and whether a\n"
"trace-agent answers on them (one HELLO each, all at once, at most --timeout),\n"
"its version and the guest's kernel. A port another process has open (a\n"
"recording) is not touched: it shows as busy. With NAMEs, only the guests of\n"
"those names (a domain's, or the name record would give a QEMU: its -name, else\n"
"qemu-PID) are listed and asked.\n"
"\n"
"A QEMU is a process whose executable (/proc/PID/exe) is a QEMU binary\n"
"(qemu-system-*, qemu-kvm, kvm) that root owns and only root may write: what\n"
"its command line says it is does not count. Only root's QEMUs and the\n"
"invoking user's (SUDO_UID under sudo) are asked, unless --any-user; the others\n"
"are named in a note. A port is opened only if it is a FIFO or socket of the\n"
"QEMU's user or root, never through a symbolic link.\n",
	.tail = "Exit status: 0 listed (also when there is nothing); 1 an error; 2 usage error.\n",
	.defs = list_opts,
};

static const char *agent_state(const struct list_guest *g)
{
	switch (g->agent) {
	case LIST_AGENT_ANSWERS: return "answers";
	case LIST_AGENT_SILENT: return "silent";
	case LIST_AGENT_BUSY: return "busy";
	case LIST_AGENT_ERROR: return "error";
	default: return "unknown";
	}
}

/* "trace-agent 0.1.0" of "trace-agent 0.1.0 (Linux ...)". */
static void short_software(const struct list_guest *g, char *buf, size_t len)
{
	const char *k = strstr(g->software, " (");

	snprintf(buf, len, "%.*s", k ? (int)(k - g->software) : (int)strlen(g->software), g->software);
}

static void ports_text(const struct list_guest *g, char *buf, size_t len)
{
	if (!g->running)
		snprintf(buf, len, "defined (%u), off", g->defined_ports);
	else if (!g->data_ports && !g->ctl_port)
		snprintf(buf, len, "defined (%u) only", g->defined_ports);
	else if (list_ports_ready(g))
		snprintf(buf, len, "%u vCPU%s + control", g->data_ports, g->data_ports == 1 ? "" : "s");
	else
		snprintf(buf, len, "incomplete: %u data%s", g->data_ports, g->ctl_port ? " + control" :
			 ", no control");
}

static void agent_text(const struct list_guest *g, bool probed, char *buf, size_t len)
{
	char sw[128];

	switch (g->agent) {
	case LIST_AGENT_ANSWERS:
		short_software(g, sw, sizeof(sw));
		snprintf(buf, len, "%s", sw);
		break;
	case LIST_AGENT_SILENT:
		snprintf(buf, len, "no answer");
		break;
	case LIST_AGENT_BUSY:
		if (g->busy_pid)
			snprintf(buf, len, "busy (pid %d)", (int)g->busy_pid);
		else
			snprintf(buf, len, "busy");
		break;
	case LIST_AGENT_ERROR:
		snprintf(buf, len, "error");
		break;
	default:
		snprintf(buf, len, "%s", probed && list_ports_ready(g) && !g->listen ? "?" : "-");
	}
}

/* What to do next, one line per guest that needs something. */
static void print_hint(const struct list_guest *g)
{
	const char *n = g->libvirt ? g->domain : g->name;

	if (g->libvirt && !g->running)
		collect_line(stdout, "  %s: not running: `virsh start %s`; or, once it runs, "
			     "`virtio-trace-collect setup --domain %s --apply --live` needs no reboot",
			     n, n, n);
	else if (g->libvirt && !g->data_ports && !g->ctl_port)
		collect_line(stdout, "  %s: the channels are in its definition only (next boot): "
			     "`virtio-trace-collect setup --domain %s --apply --live` plugs them in now",
			     n, n);
	else if (!list_ports_ready(g))
		collect_line(stdout, "  %s: its ports are incomplete (%u data ports for %u vCPUs%s)", n,
			     g->data_ports, g->vcpus, g->ctl_port ? "" : ", no agent-ctl-path");
	else if (g->agent == LIST_AGENT_SILENT)
		collect_line(stdout, "  %s: %s: is trace-agent installed and running in the guest? (in the "
			     "guest: `systemctl status trace-agent`, `ls /dev/virtio-ports/`)", n, g->why);
	else if (g->agent == LIST_AGENT_BUSY)
		collect_line(stdout, "  %s: another process has its control port open%s: a recording is "
			     "running", n, g->busy_pid ? "" : " (a client is connected)");
	else if (g->agent == LIST_AGENT_ERROR || g->why[0])
		collect_line(stdout, "  %s: %s", n, g->why);
}

static void print_table(const struct list_found *f, bool probed)
{
	char from[64], ports[64], agent[160];
	unsigned int i, w = 4;

	for (i = 0; i < f->nr; i++) {
		size_t l = strlen(f->g[i].libvirt ? f->g[i].domain : f->g[i].name);

		if (l > w && l < 40)
			w = l;
	}
	if (f->nr)
		collect_line(stdout, "%-*s  %-16s  %-20s  %-24s  %s", w, "NAME", "FROM", "PORTS", "AGENT",
			     "KERNEL");
	for (i = 0; i < f->nr; i++) {
		const struct list_guest *g = &f->g[i];

		if (g->libvirt)
			snprintf(from, sizeof(from), "libvirt%s", g->running ? "" : " (off)");
		else
			snprintf(from, sizeof(from), "qemu pid %d", (int)g->qemu_pid);
		ports_text(g, ports, sizeof(ports));
		agent_text(g, probed, agent, sizeof(agent));
		collect_line(stdout, "%-*s  %-16s  %-20s  %-24s  %s", w,
			     g->libvirt ? g->domain : g->name, from, ports, agent,
			     g->kernel[0] ? g->kernel : "-");
	}
	for (i = 0; i < f->nr; i++)
		print_hint(&f->g[i]);
	if (!f->nr)
		collect_line(stdout, "no guest with trace ports%s: `virtio-trace-collect setup --domain NAME "
			     "--apply --live` or `setup --qmp SOCKET --hotplug` gives a running guest "
			     "its ports", f->libvirt_note[0] ? "" : " (libvirt domains and QEMU processes)");
	if (f->libvirt_note[0])
		collect_line(stdout, "note: %s", f->libvirt_note);
	for (i = 0; i < f->nr_skipped; i++)
		collect_line(stdout, "note: pid %d (%s) has trace ports and is left out: %s",
			     (int)f->skipped[i].pid, f->skipped[i].name, f->skipped[i].why);
}

static void print_json(const struct list_found *f, bool probed)
{
	unsigned int i;
	struct jw w;

	jw_begin(&w, stdout);
	jw_obj(&w, NULL);
	jw_arr(&w, "guests");
	for (i = 0; i < f->nr; i++) {
		const struct list_guest *g = &f->g[i];

		jw_obj(&w, NULL);
		jw_str(&w, "name", g->libvirt ? g->domain : g->name);
		jw_str(&w, "record_name", g->name[0] ? g->name : NULL);
		jw_str(&w, "source", g->libvirt ? "libvirt" : "qemu");
		if (g->libvirt) {
			jw_str(&w, "domain", g->domain);
			jw_str(&w, "uri", g->uri[0] ? g->uri : NULL);
		}
		jw_bool(&w, "running", g->running);
		if (g->qemu_pid)
			jw_u64(&w, "qemu_pid", g->qemu_pid);
		else
			jw_null(&w, "qemu_pid");
		jw_u64(&w, "vcpus", g->vcpus);
		jw_obj(&w, "ports");
		jw_u64(&w, "data", g->data_ports);
		jw_bool(&w, "control", g->ctl_port);
		jw_bool(&w, "ready", list_ports_ready(g));
		if (g->libvirt)
			jw_u64(&w, "defined", g->defined_ports);
		jw_bool(&w, "qemu_connects", g->listen);
		jw_str(&w, "control_path", g->ctl_path[0] ? g->ctl_path : NULL);
		jw_str(&w, "chardev_dir", g->chardev_dir[0] ? g->chardev_dir : NULL);
		jw_end(&w, '}');
		jw_str(&w, "qmp", g->qmp_path[0] ? g->qmp_path : NULL);
		jw_obj(&w, "agent");
		jw_str(&w, "state", probed ? agent_state(g) : "unknown");
		jw_str(&w, "software", g->software[0] ? g->software : NULL);
		jw_str(&w, "kernel", g->kernel[0] ? g->kernel : NULL);
		if (g->agent_cpus)
			jw_u64(&w, "cpus", g->agent_cpus);
		if (g->busy_pid)
			jw_u64(&w, "busy_pid", g->busy_pid);
		jw_str(&w, "why", g->why[0] ? g->why : NULL);
		jw_end(&w, '}');
		jw_end(&w, '}');
	}
	jw_end(&w, ']');
	jw_arr(&w, "skipped");
	for (i = 0; i < f->nr_skipped; i++) {
		jw_obj(&w, NULL);
		jw_u64(&w, "pid", f->skipped[i].pid);
		jw_str(&w, "name", f->skipped[i].name);
		jw_str(&w, "why", f->skipped[i].why);
		jw_end(&w, '}');
	}
	jw_end(&w, ']');
	jw_str(&w, "libvirt_note", f->libvirt_note[0] ? f->libvirt_note : NULL);
	jw_end(&w, '}');
}

/**
 * list_main() - the list subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: an exit status.
 */
int list_main(int argc, char **argv)
{
	bool json = false, no_libvirt = false, probe = true, names = false, any_user = false;
	unsigned int timeout_ms = LIST_DEFAULT_TIMEOUT_MS, i;
	const char *uri = NULL;
	struct list_found f;
	struct opt_val v;
	int c;

	optind = 1;
	while ((c = opt_parse(&list_cmd, argc, argv, &v)) != -1) {
		switch (c) {
		case 'C':
			uri = v.s;
			break;
		case OPT_ANY_USER:
			any_user = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_NO_LIBVIRT:
			no_libvirt = true;
			break;
		case OPT_NO_PROBE:
			probe = false;
			break;
		case OPT_NAMES:
			names = true;
			probe = false;
			break;
		case OPT_TIMEOUT:
			timeout_ms = (unsigned int)(v.d * 1000 + 0.5);
			break;
		case OPT_HELP:
			return EXIT_OK;
		default:
			return EXIT_USAGE;	/* opt_parse() said why */
		}
	}
	if (names && json) {
		collect_usage("--names or --json, not both");
		opt_try_help();
		return EXIT_USAGE;
	}
	if (list_find(uri, no_libvirt, any_user, &f) < 0) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	if (optind < argc)
		list_keep(&f, argv + optind, argc - optind);
	if (names) {
		for (i = 0; i < f.nr; i++)
			if (f.g[i].libvirt)
				collect_line(stdout, "%s", f.g[i].domain);
	} else {
		if (probe)
			list_probe(&f, timeout_ms);
		if (json)
			print_json(&f, probe);
		else
			print_table(&f, probe);
	}
	list_free(&f);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		log_err("write error");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
