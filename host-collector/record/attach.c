// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Finding and opening a guest's ports on the host.
 *
 * QEMU's `-chardev pipe,path=P` uses two FIFOs: P.in (host to guest) and
 * P.out (guest to host). They are opened O_RDWR so that opening never blocks
 * and the other side closing never gives EOF. `-chardev socket,path=P,
 * server=on` is a unix socket QEMU listens on: we connect. With --listen the
 * collector listens and QEMU (`server=off`) connects to it. A port is never
 * opened through a link, and is checked on its descriptor, not by its name
 * (setup/qemuproc.c): whoever can write its directory cannot send us to
 * another file.
 *
 * A --listen socket is made where nobody can reach it first: bound in a
 * directory of our own (mode 0700, next to the path), given its mode (0600,
 * or 0660 and its group with --listen-group, its owner with --listen-uid)
 * there, and only then renamed into place, whatever the umask. Who connects
 * is checked (SO_PEERCRED, SO_PEERGROUPS): root, this user, --listen-uid, or
 * a member of --listen-group. The first allowed connection is the guest's;
 * the socket stays open so that any later one is refused and logged, not
 * left to wait. The directory itself must be one only this user or root can
 * write (collect_dir_private()): whoever else can write it takes the socket's
 * name, by renaming ours away or (the sticky bit of a 1777 directory does not
 * stop that) before we bind it, and QEMU connects to them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "collect.h"
#include "recopts.h"
#include "text.h"
#include "setup/link.h"
#include "setup/qemuproc.h"

#define CTL_NAME	"agent-ctl-path"
#define DATA_PREFIX	"trace-path-cpu"
#define PIPE_SIZE	(1 << 20)

static bool exists(const char *path, mode_t type)
{
	struct stat st;

	return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

static int sock_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* The socket file's mode, owner and group for --listen (see the top comment). */
static void listen_perm(const struct record_opts *o, mode_t *mode, uid_t *uid, gid_t *gid)
{
	*mode = o->have_listen_gid ? 0660 : 0600;
	*uid = o->have_listen_uid ? o->listen_uid : (uid_t)-1;
	*gid = o->have_listen_gid ? o->listen_gid : (gid_t)-1;
}

/*
 * Whether the directory of --listen socket @path is one that only this user
 * or root can change. -EPERM, with in @why what is wrong and what to do, when
 * not; -errno when it cannot be looked at.
 */
static int listen_dir_check(const char *path, char *why, size_t size)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], owner[32];
	struct passwd *pw;
	struct stat st;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
				  path) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (stat(dir, &st) < 0)
		return -errno;
	if (collect_dir_private(&st))
		return 0;
	pw = getpwuid(st.st_uid);
	if (pw && strlen(pw->pw_name) < sizeof(owner))
		snprintf(owner, sizeof(owner), "%s", pw->pw_name);
	else
		snprintf(owner, sizeof(owner), "%u", (unsigned int)st.st_uid);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		snprintf(why, size, "--listen: the directory %s (mode %04o, owner %s) belongs to "
			 "another user, who could take the socket's name (first, or by renaming ours "
			 "away) and have QEMU connect to them: use a directory of this user or root "
			 "that only its owner can write (`mkdir -m 0700 DIR`)", dir,
			 (unsigned int)(st.st_mode & 07777), owner);
	else
		snprintf(why, size, "--listen: the directory %s (mode %04o, owner %s) can be "
			 "written by others than its owner and root, who could take the socket's name "
			 "(first, or by renaming ours away) and have QEMU connect to them: use a "
			 "directory only its owner can write (`chmod go-w DIR`, or `mkdir -m 0700 DIR`)",
			 dir, (unsigned int)(st.st_mode & 07777), owner);
	return -EPERM;
}

static int sock_listen(const char *path, const struct record_opts *o)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 8];
	const char *slash = strrchr(path, '/');
	struct sockaddr_un sa;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	int fd, ret;

	ret = listen_dir_check(path, dir, sizeof(dir));
	if (ret == -EPERM)
		log_err("%s", dir);
	if (ret < 0)
		return ret;
	listen_perm(o, &mode, &uid, &gid);
	if ((size_t)snprintf(dir, sizeof(dir), "%.*s/.vt-XXXXXX", slash ? (int)(slash - path) : 1,
			     slash ? path : ".") >= sizeof(dir))
		return -ENAMETOOLONG;
	if (slash == path)
		snprintf(dir, sizeof(dir), "/.vt-XXXXXX");
	if (!mkdtemp(dir))
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s/s", dir);
	ret = sock_addr(&sa, tmp);
	if (ret < 0)
		goto out_dir;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto out_dir;
	}
	/* In our 0700 directory, the mode and owner are set before anyone can see the socket. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(tmp, mode) < 0 ||
	    ((uid != (uid_t)-1 || gid != (gid_t)-1) && chown(tmp, uid, gid) < 0) ||
	    listen(fd, 4) < 0) {
		ret = -errno;
		goto out_fd;
	}
	/* Only a stale socket is replaced, never another kind of file. */
	if (exists(path, S_IFSOCK))
		unlink(path);
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		ret = -errno;
		goto out_fd;
	}
	rmdir(dir);
	return fd;
out_fd:
	close(fd);
	unlink(tmp);
out_dir:
	rmdir(dir);
	return ret;
}

/* Every port is read without blocking: the engine polls, then reads. */
static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* A FIFO holds more pages in flight (the default is 64 KiB). */
static void grow_fifo(int fd, const char *path)
{
	if (fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE) < 0)
		log_debug("%s: cannot grow the FIFO: %m", path);
}

/*
 * Open one port of guest @name (its @link) given as a base path P: the pipe pair P.in/P.out, or a
 * socket P, or a single FIFO P (a data port given by its .out path). @wfd
 * gets the host->guest side (control ports only, else NULL).
 *
 * Each file is opened once, never through a link, and its type (and, for a
 * guest `--all` found, its owner and a socket's listener) is checked on the
 * descriptor (setup/qemuproc.c): a link swapped in after any look by path
 * changes nothing. A refusal is logged here, naming the path.
 */
static int open_port(const char *name, const struct guest_link *link, const char *base,
		     bool listen_mode, int *rfd, int *wfd)
{
	const struct qemuproc_owner *want = &link->owner;
	char in[4200], out[4200], why[800];
	int fd = -1, ret;

	if (listen_mode)
		return -EINVAL;		/* attach_listen(): the engine waits for QEMU */
	snprintf(in, sizeof(in), "%s.in", base);
	snprintf(out, sizeof(out), "%s.out", base);
	ret = qemuproc_open_fifo(out, want, &fd, why, sizeof(why));
	if (ret == 0) {
		grow_fifo(fd, out);
		if (wfd) {
			ret = qemuproc_open_fifo(in, want, wfd, why, sizeof(why));
			if (ret == -ENOENT)
				snprintf(why, sizeof(why), "%s exists but %s does not: a pipe chardev "
					 "needs both", out, in);
			if (ret < 0) {
				log_err("guest %s: %s", name, why);
				close(fd);
				return ret;
			}
			/* Control frames are written whole: the engine polls only what it reads. */
			fcntl(*wfd, F_SETFL, fcntl(*wfd, F_GETFL) & ~O_NONBLOCK);
		}
		*rfd = fd;
		return 0;
	}
	if (ret != -ENOENT)
		goto refused;
	ret = qemuproc_connect(base, want, false, &fd, why, sizeof(why));
	if (ret == -EINVAL) {
		/* Not a socket: a single FIFO, a data port given by its .out path. */
		ret = qemuproc_open_fifo(base, want, &fd, why, sizeof(why));
		if (ret == 0)
			grow_fifo(fd, base);
		if (ret == 0 && wfd) {
			snprintf(why, sizeof(why), "%s is a single FIFO: a control port needs %s.in "
				 "and %s.out or a socket", base, base, base);
			close(fd);
			ret = -EINVAL;
		}
	}
	if (ret < 0)
		goto refused;
	set_nonblock(fd);
	*rfd = fd;
	if (wfd)
		*wfd = fd;
	return 0;
refused:
	if (ret != -ENOENT)
		log_err("guest %s: %s", name, why);
	return ret;
}

static int add_cpu_path(struct guest_link *link, const char *path)
{
	if (link->nr_cpu_paths >= COLLECT_MAX_CPUS)
		return -E2BIG;
	link->cpu_paths[link->nr_cpu_paths] = strdup(path);
	if (!link->cpu_paths[link->nr_cpu_paths])
		return -ENOMEM;
	link->nr_cpu_paths++;
	return 0;
}

/*
 * Data ports in a chardev directory: trace-path-cpuN, from the first not
 * found so far, until one is missing. Called when the guest is attached, and again
 * for a vCPU the agent has but that scan did not find: ports that appear
 * while the guest starts (record --wait) come one by one, and its control
 * port may come before its last data port.
 */
static int scan_dir(struct guest_link *link)
{
	char base[4200], probe[4210];
	unsigned int cpu;
	int ret;

	for (cpu = link->dir_next; cpu < COLLECT_MAX_CPUS; cpu++) {
		snprintf(base, sizeof(base), "%s/" DATA_PREFIX "%u", link->chardev_dir, cpu);
		snprintf(probe, sizeof(probe), "%s.out", base);
		if (!link->listen && !exists(probe, S_IFIFO) && !exists(base, S_IFSOCK))
			break;
		ret = add_cpu_path(link, base);
		if (ret < 0)
			return ret;
		link->dir_next = cpu + 1;
		/* With --listen the guest's vCPU count decides (HELLO); ports are made then. */
		if (link->listen)
			break;
	}
	snprintf(link->ctl_path, sizeof(link->ctl_path), "%s/" CTL_NAME, link->chardev_dir);
	return 0;
}

/**
 * attach_count_ports() - how many data ports a guest has, as far as is known
 * before it is attached and greeted
 * @link: the guest's ports
 *
 * Return: its --cpu paths (or its domain's channels), the data ports in its
 * chardev directory, or 0 when only its HELLO will tell (--listen).
 */
unsigned int attach_count_ports(const struct guest_link *link)
{
	char base[4200], probe[4210];
	unsigned int cpu;

	if (link->nr_cpu_paths || !link->chardev_dir[0] || link->listen)
		return link->nr_cpu_paths;
	for (cpu = 0; cpu < COLLECT_MAX_CPUS; cpu++) {
		snprintf(base, sizeof(base), "%s/" DATA_PREFIX "%u", link->chardev_dir, cpu);
		snprintf(probe, sizeof(probe), "%s.out", base);
		if (!exists(probe, S_IFIFO) && !exists(base, S_IFSOCK))
			break;
	}
	return cpu;
}

/**
 * attach_guest() - open a guest's control port; data ports are opened by
 * session_setup() once the agent said how many CPUs it has
 * @name: the guest's name, for messages
 * @link: its ports, with chardev_dir or ctl_path + cpu_paths filled in
 * @o: options
 * @rfd: set to the control port's read side (-1 with --listen)
 * @wfd: and its write side (@rfd again on a socket)
 * @lfd: --listen: set to the listening socket, else -1
 *
 * Return: 0 or -errno, with a message naming the guest and the path.
 */
int attach_guest(const char *name, struct guest_link *link, const struct record_opts *o,
		 int *rfd, int *wfd, int *lfd)
{
	int ret;

	*rfd = *wfd = *lfd = -1;
	if (link->chardev_dir[0]) {
		ret = scan_dir(link);
		if (ret < 0)
			return ret;
		if (!link->listen && !link->nr_cpu_paths) {
			log_err("guest %s: no data ports in %s (expected %s0.in/.out FIFOs or a %s0 "
				"socket); `virtio-trace-collect setup` prints the QEMU arguments",
				name, link->chardev_dir, DATA_PREFIX, DATA_PREFIX);
			return -ENOENT;
		}
	}
	if (link->listen) {
		char why[PATH_MAX + 512];

		/* Said once for the guest, before any socket (the data ports' are there too). */
		ret = listen_dir_check(link->ctl_path, why, sizeof(why));
		if (ret == -EPERM) {
			log_err("guest %s: %s", name, why);
			return ret;
		}
		*lfd = attach_listen(link->ctl_path, o);
		if (*lfd < 0) {
			log_err("guest %s: cannot listen on %s: %s", name, link->ctl_path,
				strerror(-*lfd));
			return *lfd;
		}
		return 0;
	}
	ret = open_port(name, link, link->ctl_path, link->listen, rfd, wfd);
	if (ret < 0) {
		log_err("guest %s: cannot open the control port %s: %s", name, link->ctl_path,
			strerror(-ret));
		return ret;
	}
	return 0;
}

/**
 * attach_listen() - listen on a socket path for QEMU's chardev (server=off) to
 * connect; the engine waits for it (attach_accept() when readable)
 * @base: the socket path
 * @o: options (--listen-group, --listen-uid)
 *
 * The socket is mode 0600 (0660 with --listen-group) whatever the umask,
 * and nobody can connect before it is.
 *
 * Return: the listening fd (non-blocking) or -errno (-EEXIST: something
 * that is not a socket has the name; -EPERM, logged: its directory is not
 * one only this user or root can write).
 */
int attach_listen(const char *base, const struct record_opts *o)
{
	int lfd = sock_listen(base, o);

	if (lfd < 0)
		return lfd;
	set_nonblock(lfd);
	log_info("waiting for the guest's chardev to connect to %s", base);
	return lfd;
}

/* Whether @want is among the peer's groups (its primary group is checked apart). */
static bool peer_in_group(int c, gid_t want)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);
	unsigned int i;

	if (getsockopt(c, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == want)
			return true;
	return false;
}

/* The peer's command name, for messages (sanitised: a process names itself). */
static void peer_comm(pid_t pid, char *buf, size_t size)
{
	char path[64], raw[64] = "?";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, raw, sizeof(raw) - 1);
		raw[n > 0 ? n : 0] = '\0';
		raw[strcspn(raw, "\n")] = '\0';
		close(fd);
	}
	collect_sanitize(buf, size, raw, false);
}

/* Who connected, in words: "pid 12 (qemu), uid 0, gid 0". */
static void peer_words(int c, char *buf, size_t size)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char comm[64];

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		snprintf(buf, size, "an unknown peer");
		return;
	}
	peer_comm(cr.pid, comm, sizeof(comm));
	snprintf(buf, size, "pid %d (%s), uid %u, gid %u", (int)cr.pid, comm, (unsigned int)cr.uid,
		 (unsigned int)cr.gid);
}

/* Root, this user, --listen-uid, or a member of --listen-group. */
static bool peer_allowed(int c, const struct record_opts *o)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	if (cr.uid == 0 || cr.uid == geteuid() || (o->have_listen_uid && cr.uid == o->listen_uid))
		return true;
	return o->have_listen_gid && (cr.gid == o->listen_gid || peer_in_group(c, o->listen_gid));
}

/**
 * attach_accept() - take QEMU's connection on a listening port
 * @lfd: from attach_listen(); it stays open (attach_refuse() takes what
 *	comes later), closed by whoever owns it at the end
 * @o: options (--listen-group, --listen-uid)
 * @fd: set to the connection (non-blocking); with -EPERM, to the refused
 *	one, which the caller closes once it logged @who (so that the peer
 *	sees its end after the log line)
 * @who: set to who connected, in words, when refused
 * @size: size of @who
 *
 * A peer that is not root, this user, --listen-uid or in --listen-group is
 * refused: the port waits on.
 *
 * Return: 0; -EAGAIN when nothing connected yet; -EPERM when a peer was
 * refused (the caller logs @who and closes @fd); or -errno.
 */
int attach_accept(int lfd, const struct record_opts *o, int *fd, char *who, size_t size)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	*fd = c;
	if (!peer_allowed(c, o)) {
		peer_words(c, who, size);
		return -EPERM;
	}
	return 0;
}

/**
 * attach_refuse() - refuse a connection to a port whose guest is connected
 * @lfd: the listening fd (attach_accept() took the guest's connection)
 * @fd: set to the refused connection, which the caller closes once it
 *	logged @who
 * @who: set to who connected, in words
 * @size: size of @who
 *
 * Return: 0 when one was refused (the caller logs @who and closes @fd),
 * -EAGAIN when none waited, or -errno.
 */
int attach_refuse(int lfd, int *fd, char *who, size_t size)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	peer_words(c, who, size);
	*fd = c;
	return 0;
}

/**
 * attach_data_path() - the base path of a vCPU's data port
 * @link: the guest's ports
 * @cpu: the vCPU
 * @base: filled
 * @size: its size
 *
 * Return: 0, or -ENOENT when the guest has no port for @cpu.
 */
int attach_data_path(const struct guest_link *link, unsigned int cpu, char *base, size_t size)
{
	if (link->listen && link->chardev_dir[0])
		snprintf(base, size, "%s/" DATA_PREFIX "%u", link->chardev_dir, cpu);
	else if (cpu < link->nr_cpu_paths)
		snprintf(base, size, "%s", link->cpu_paths[cpu]);
	else
		return -ENOENT;
	return 0;
}

/**
 * attach_open_data() - open the data port of one vCPU; a chardev directory is
 * looked at again for a port its first scan did not find
 * @name: the guest's name, for messages
 * @link: its ports
 * @cpu: the vCPU
 * @fd: set to the fd to read
 *
 * Return: 0, -ENOENT when the guest has no port for @cpu, or -errno.
 */
int attach_open_data(const char *name, struct guest_link *link, unsigned int cpu, int *fd)
{
	char base[4200];
	int ret;

	if (cpu >= link->nr_cpu_paths && link->chardev_dir[0] && !link->listen) {
		unsigned int had = link->nr_cpu_paths;

		ret = scan_dir(link);
		if (ret < 0)
			return ret;
		if (link->nr_cpu_paths > had)
			log_info("guest %s: data ports %u..%u appeared after its first %u", name,
				 had, link->nr_cpu_paths - 1, had);
	}
	ret = attach_data_path(link, cpu, base, sizeof(base));
	return ret < 0 ? ret : open_port(name, link, base, link->listen, fd, NULL);
}

/**
 * attach_discard_stale() - throw away bytes left in a port by an earlier session
 * @fd: a port (non-blocking, as attach opens them)
 *
 * A FIFO keeps what nobody read; a half page from a previous run would shift
 * every page after it.
 *
 * Return: bytes discarded.
 */
size_t attach_discard_stale(int fd)
{
	char buf[65536];
	size_t total = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	return total;
}

/**
 * detach_guest() - close the control port and free the port list
 * @link: the guest's ports
 * @rfd: the control port's read side, set to -1 when closed
 * @wfd: its write side, likewise
 * @lfd: the listening socket, likewise
 */
void detach_guest(struct guest_link *link, int *rfd, int *wfd, int *lfd)
{
	unsigned int i;

	if (*lfd >= 0) {
		close(*lfd);
		unlink(link->ctl_path);
	}
	*lfd = -1;
	if (*wfd >= 0 && *wfd != *rfd)
		close(*wfd);
	if (*rfd >= 0)
		close(*rfd);
	*rfd = *wfd = -1;
	for (i = 0; i < link->nr_cpu_paths; i++)
		free(link->cpu_paths[i]);
	link->nr_cpu_paths = 0;
	link->dir_next = 0;
}
