// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * QEMU processes by the kernel's word, and their ports opened without
 * trusting a name.
 *
 * A process chooses its own argv[0] and command line (`exec -a
 * qemu-system-x86_64`), so neither says it is a QEMU. What the kernel says
 * does: /proc/PID/exe is the file it runs. A QEMU runs a file named
 * qemu-system-*, qemu-kvm or kvm that root owns and only root may write: a
 * user cannot make such a file, nor (fs.protected_hardlinks) link one to a
 * name of their own. Its user is whom its credentials name (/proc/PID/status):
 * the first of its real, effective, saved and filesystem uids that is not
 * root, root only when all four are. The owner of /proc/PID is not that
 * word: a process that makes itself non-dumpable (a user's LD_PRELOAD in a
 * real QEMU binary can) gets a /proc/PID that root owns.
 *
 * A QEMU's command line names its ports, and its user chose those names: a
 * user who owns the directory can put a link there to any file, or swap one
 * in between a check and an open. So a port is opened once, O_NOFOLLOW
 * (a link as its last component is refused), and everything is checked on
 * that descriptor before one byte goes out: a FIFO (a socket), owned by the
 * QEMU's user or root, a socket's listener that QEMU itself. A socket is
 * opened O_PATH and connected through /proc/self/fd/N, so that connect()
 * cannot follow a link either. A link in a directory above the port is not
 * refused, but cannot lead anywhere else: a FIFO must be one the QEMU holds
 * open (/proc/PID/fd), a socket's listener the QEMU itself.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "qemuproc.h"
#include "text.h"

/* The file name of a QEMU binary (" (deleted)": upgraded while it runs). */
static bool qemu_name(const char *exe)
{
	const char *b = strrchr(exe, '/');
	char name[NAME_MAX + 1];
	size_t n;

	b = b ? b + 1 : exe;
	snprintf(name, sizeof(name), "%s", b);
	n = strlen(name);
	if (n > 10 && !strcmp(name + n - 10, " (deleted)"))
		name[n - 10] = 0;
	return (!strncmp(name, "qemu-system-", 12) && name[12]) || !strcmp(name, "qemu-kvm") ||
	       !strcmp(name, "kvm");
}

/* The process's user from its status (see the top comment). */
static int status_uid(int dfd, uid_t *uid)
{
	unsigned long u[4];
	char buf[4096], *l;
	ssize_t n;
	int fd, i;

	fd = openat(dfd, "status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	l = strstr(buf, "\nUid:");
	if (!l || sscanf(l + 5, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
		return -EIO;
	*uid = 0;
	for (i = 0; i < 4 && !*uid; i++)
		*uid = (uid_t)u[i];
	return 0;
}

/**
 * qemuproc_identify() - whether a process is a QEMU, and whose
 * @pid: the process
 * @uid: set to its user (its uids in /proc/PID/status) when it is one
 * @why: set to why it is not (sanitised: the file name is the user's)
 * @len: size of @why
 *
 * Both answers come through one open of /proc/PID, so a pid reused in
 * between gives an error, not another process's word.
 *
 * Return: 1 a QEMU, 0 not one (@why says why), or -errno (gone, or not ours
 * to look at: /proc/PID/exe of another user needs root).
 */
int qemuproc_identify(pid_t pid, uid_t *uid, char *why, size_t len)
{
	char path[32], exe[PATH_MAX], clean[256];
	struct stat est;
	ssize_t n;
	int dfd, ret;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	n = readlinkat(dfd, "exe", exe, sizeof(exe) - 1);
	if (n < 0 || fstatat(dfd, "exe", &est, 0) < 0) {
		ret = -errno;
		goto out;
	}
	exe[n] = 0;
	collect_sanitize(clean, sizeof(clean), exe, false);
	if (!qemu_name(exe)) {
		snprintf(why, len, "it runs %s, not a QEMU binary", clean);
		ret = 0;
	} else if (est.st_uid != 0 || (est.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(why, len, "it runs %s, which %s", clean, est.st_uid ?
			 "root does not own" : "others than root may write");
		ret = 0;
	} else {
		ret = status_uid(dfd, uid);
		ret = ret < 0 ? ret : 1;
	}
out:
	close(dfd);
	return ret;
}

/**
 * qemuproc_user_allowed() - whether a QEMU of @uid is probed without
 * --any-user: root's, or the invoking user's (SUDO_UID under sudo)
 * @uid: the QEMU's user
 *
 * Return: true when it is.
 */
bool qemuproc_user_allowed(uid_t uid)
{
	const char *s = getenv("SUDO_UID");
	unsigned long v;
	char *end;

	if (uid == 0 || uid == getuid())
		return true;
	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	return !errno && !*end && v == (unsigned long)uid;
}

/* Whether process @pid has the file @st open (its /proc/PID/fd, the kernel's word). */
static bool holds(pid_t pid, const struct stat *st)
{
	char dir[40], fdp[80];
	struct dirent *de;
	struct stat fst;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d && !found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(fdp, sizeof(fdp), "%s/%s", dir, de->d_name);
		found = stat(fdp, &fst) == 0 && fst.st_dev == st->st_dev && fst.st_ino == st->st_ino;
	}
	if (d)
		closedir(d);
	return found;
}

/* The type and owner of an opened port, against what is wanted. */
static int check_fd(int fd, mode_t type, const char *path, const struct qemuproc_owner *want,
		    char *why, size_t len)
{
	const char *clean = path;	/* made safe where it is printed (text.c) */
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(why, len, "%s: %s", clean, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, len, "%s is a symbolic link: a port is never opened through one", clean);
		return -ELOOP;
	}
	if ((st.st_mode & S_IFMT) != type) {
		snprintf(why, len, "%s is not a %s", clean, type == S_IFIFO ? "FIFO" : "socket");
		return -EINVAL;
	}
	if (want && want->known && st.st_uid != 0 && st.st_uid != want->uid) {
		snprintf(why, len, "%s belongs to uid %u, not to the QEMU's user (uid %u) or root",
			 clean, (unsigned int)st.st_uid, (unsigned int)want->uid);
		return -EPERM;
	}
	/* A QEMU holds its FIFOs open: one it does not is another's, whatever led to it. */
	if (want && want->known && want->pid && type == S_IFIFO && !holds(want->pid, &st)) {
		snprintf(why, len, "%s is not a FIFO the QEMU (pid %d) has open", clean,
			 (int)want->pid);
		return -EPERM;
	}
	return 0;
}

/**
 * qemuproc_open_fifo() - open one FIFO of a port for reading and writing,
 * never through a link, and check it before anything is written
 * @path: the FIFO (P.in or P.out of `-chardev pipe,path=P`)
 * @want: whose it must be (NULL or not known: any owner; an operator's path)
 * @fd: set to the descriptor (O_RDWR, non-blocking, close-on-exec)
 * @why: set to a sentence naming @path when refused or failed
 * @len: size of @why
 *
 * Return: 0, or -errno: -ELOOP a link, -EINVAL not a FIFO, -EPERM another
 * user's, or open's error.
 */
int qemuproc_open_fifo(const char *path, const struct qemuproc_owner *want, int *fd, char *why,
		       size_t len)
{
	const char *clean = path;	/* made safe where it is printed (text.c) */
	int f, ret;

	/* O_NONBLOCK: no open waits (a FIFO's does not; a device's might); O_NOCTTY: no terminal. */
	f = open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (f < 0) {
		ret = -errno;
		if (ret == -ELOOP)
			snprintf(why, len, "%s is a symbolic link: a port is never opened through one",
				 clean);
		else
			snprintf(why, len, "cannot open %s: %s", clean, strerror(-ret));
		return ret;
	}
	ret = check_fd(f, S_IFIFO, path, want, why, len);
	if (ret < 0) {
		close(f);
		return ret;
	}
	*fd = f;
	return 0;
}

/**
 * qemuproc_connect() - connect to a port's socket, never through a link,
 * and check who listens before anything is written
 * @path: the socket (`-chardev socket,path=P,server=on`)
 * @want: whose it must be: the file its user's or root's, the listener
 *	@want->pid (or, pid 0, a process of its user or root); NULL or not
 *	known: anyone (an operator's path)
 * @nonblock: a non-blocking socket
 * @fd: set to the connected socket (close-on-exec)
 * @why: set to a sentence naming @path when refused or failed
 * @len: size of @why
 *
 * Return: 0, or -errno: -ELOOP a link, -EINVAL not a socket, -EPERM
 * another user's or another process listens, or connect's error.
 */
int qemuproc_connect(const char *path, const struct qemuproc_owner *want, bool nonblock, int *fd,
		     char *why, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t cl = sizeof(struct ucred);
	struct ucred cr;
	const char *clean = path;	/* made safe where it is printed (text.c) */
	int pfd, s, ret;

	pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0) {
		ret = -errno;
		snprintf(why, len, "cannot open %s: %s", clean, strerror(-ret));
		return ret;
	}
	ret = check_fd(pfd, S_IFSOCK, path, want, why, len);
	if (ret < 0)
		goto out_pfd;
	/* The socket this descriptor is, not whatever the name leads to by now. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pfd);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (s < 0) {
		ret = -errno;
		snprintf(why, len, "%s: no socket: %s", clean, strerror(-ret));
		goto out_pfd;
	}
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		ret = -errno;
		snprintf(why, len, "cannot connect to %s: %s", clean, strerror(-ret));
		goto out_s;
	}
	if (want && want->known) {
		if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
			ret = -errno;
			snprintf(why, len, "%s: who listens is unknown: %s", clean, strerror(-ret));
			goto out_s;
		}
		if (want->pid ? cr.pid != want->pid : cr.uid != 0 && cr.uid != want->uid) {
			ret = -EPERM;
			snprintf(why, len, "%s: pid %d (uid %u) listens there, not the QEMU (pid %d, "
				 "uid %u)", clean, (int)cr.pid, (unsigned int)cr.uid, (int)want->pid,
				 (unsigned int)want->uid);
			goto out_s;
		}
	}
	close(pfd);
	*fd = s;
	return 0;
out_s:
	close(s);
out_pfd:
	close(pfd);
	return ret;
}

/*
 * /proc/@pid/stat into @buf; *@fields is its text from field 3 (the state) on. The command
 * name (field 2) may hold anything, ')' too: fields count from the last ')'.
 * Returns 0, -errno when it cannot be opened, -EIO when it reads nothing, -EBADMSG.
 */
static int read_stat(pid_t pid, char *buf, size_t size, char **fields)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EBADMSG;
	*fields = p + 2;
	return 0;
}

/**
 * qemuproc_start_time() - when a process started: field 22 of /proc/PID/stat
 * @pid: the process
 * @start: set to its start, in clock ticks after boot
 *
 * With the pid it names one process of this boot: a pid is reused, a pid and
 * start time are not.
 *
 * Return: 0, or -errno (-EBADMSG: a line that does not parse).
 */
int qemuproc_start_time(pid_t pid, unsigned long long *start)
{
	char buf[1024], *p;
	unsigned int field;
	int ret;

	ret = read_stat(pid, buf, sizeof(buf), &p);
	if (ret < 0)
		return ret;
	for (field = 3; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", start) != 1)
		return -EBADMSG;
	return 0;
}

/**
 * qemuproc_alive() - whether a process runs and is not on its way out
 * @pid: the process
 *
 * A process that exits (the kernel's PF_EXITING in field 9 of /proc/PID/stat)
 * or has exited (a zombie, state Z or X) is no longer there for anyone: its
 * memory, command line and files go first.
 *
 * Return: true when it runs.
 */
bool qemuproc_alive(pid_t pid)
{
	char buf[1024], state, *p;
	unsigned long flags;

	if (read_stat(pid, buf, sizeof(buf), &p) < 0 ||
	    sscanf(p, "%c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return false;
	return state != 'Z' && state != 'X' && !(flags & 0x4);	/* PF_EXITING */
}
