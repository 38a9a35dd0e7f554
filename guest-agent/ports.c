// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Finding the agent's ports. virtio-serial ports are found by name in
 * /sys/class/virtio-ports/vportNpM/name, with the node /dev/vportNpM (or
 * /dev/virtio-ports/NAME when udev made it). They appear asynchronously
 * after the virtio_console module binds, so the agent waits for them.
 *
 * With --port-dir DIR the ports are stand-ins, so that tests and demos run
 * the agent without a VM: DIR/NAME is a FIFO (data ports only) or a unix
 * socket the agent connects to; or DIR holds QEMU's pipe-chardev pair
 * NAME.in/NAME.out, seen from the guest's side (it writes NAME.out and reads
 * NAME.in), which virtio-trace-collect --chardev-dir DIR reads directly.
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
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define SYSFS_PORTS	"/sys/class/virtio-ports"

/**
 * ports_find() - the path of a port, if it exists now
 * @p: where ports are
 * @name: the port name
 * @path: set to the node to open
 * @size: size of @path
 *
 * Return: 0, -ENOENT when the port is not there (yet), or -errno.
 */
int ports_find(const struct ports *p, const char *name, char *path, size_t size)
{
	char file[PATH_MAX], buf[256];
	struct dirent *de;
	struct stat st;
	int ret = -ENOENT;
	DIR *d;

	if (p->dir) {
		if ((size_t)snprintf(path, size, "%s/%s", p->dir, name) >= size)
			return -ENAMETOOLONG;
		if (stat(path, &st) == 0)
			return 0;
		/* QEMU's pipe pair: the guest side writes NAME.out. */
		if ((size_t)snprintf(path, size, "%s/%s.out", p->dir, name) >= size)
			return -ENAMETOOLONG;
		return stat(path, &st) == 0 && S_ISFIFO(st.st_mode) ? 0 : -ENOENT;
	}
	snprintf(path, size, "/dev/virtio-ports/%s", name);
	if (stat(path, &st) == 0)
		return 0;
	d = opendir(SYSFS_PORTS);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		ssize_t n;
		int fd;

		if (strncmp(de->d_name, "vport", 5) != 0)
			continue;
		snprintf(file, sizeof(file), SYSFS_PORTS "/%s/name", de->d_name);
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, name) == 0) {
			snprintf(path, size, "/dev/%s", de->d_name);
			ret = stat(path, &st) == 0 ? 0 : -ENOENT;
			break;
		}
	}
	closedir(d);
	return ret;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/**
 * ports_wait() - wait until the control port and the data ports exist
 * @p: where ports are
 * @nr_cpus: data ports wanted (@p->prefix0 .. @nr_cpus - 1)
 * @timeout_ms: how long to wait
 *
 * Data ports beyond those present are not required: a guest may have fewer
 * ports than CPUs, and the agent serves the CPUs that have one. At least
 * the control port and one data port must appear.
 *
 * Return: the number of CPUs with a data port, or -ETIMEDOUT.
 */
int ports_wait(const struct ports *p, unsigned int nr_cpus, unsigned int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms, next_note = now_ms() + 2000;
	char path[PATH_MAX], name[PATH_MAX];
	unsigned int cpu, have = 0;

	for (;;) {
		bool ctl = ports_find(p, p->ctl_name, path, sizeof(path)) == 0;

		have = 0;
		for (cpu = 0; cpu < nr_cpus; cpu++) {
			snprintf(name, sizeof(name), "%s%u", p->prefix, cpu);
			if (ports_find(p, name, path, sizeof(path)) == 0)
				have++;
		}
		if (ctl && have == nr_cpus)
			return have;
		if (now_ms() >= deadline) {
			if (ctl && have)
				return have;
			log_err("ports did not appear within %u ms: control port %s %s, "
				"%u of %u data ports %sN (look in %s)", timeout_ms, p->ctl_name,
				ctl ? "found" : "missing", have, nr_cpus, p->prefix,
				p->dir ? p->dir : SYSFS_PORTS);
			return -ETIMEDOUT;
		}
		if (now_ms() >= next_note) {
			log_info("waiting for ports: control %s, %u of %u data ports",
				 ctl ? "found" : "missing", have, nr_cpus);
			next_note = now_ms() + 5000;
		}
		usleep(50 * 1000);
	}
}

/**
 * ports_open() - open a port
 * @p: where ports are
 * @name: the port name
 * @control: the control port (read and write) rather than a data port (write)
 * @wfd: for a control port, set to the fd to write to: the same fd, or
 *	 NAME.out of a stand-in pipe pair (whose NAME.in is then the fd returned)
 *
 * Data ports are opened non-blocking: the data threads wait in poll() so that
 * a host that is not reading never blocks a stop.
 *
 * Return: the fd, or -errno.
 */
int ports_open(const struct ports *p, const char *name, bool control, int *wfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[PATH_MAX];
	struct stat st;
	int fd, ret;

	ret = ports_find(p, name, path, sizeof(path));
	if (ret < 0)
		return ret;
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISSOCK(st.st_mode)) {
		if (strlen(path) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		strcpy(sa.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			ret = -errno;
			close(fd);
			return ret;
		}
		if (!control)
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		else
			*wfd = fd;
		return fd;
	}
	if (control && S_ISFIFO(st.st_mode)) {
		size_t len = strlen(path);

		/* A FIFO carries one direction: only a NAME.in/NAME.out pair will do. */
		if (len < 4 || strcmp(path + len - 4, ".out") != 0)
			return -EINVAL;
		*wfd = open(path, O_RDWR | O_CLOEXEC);
		if (*wfd < 0)
			return -errno;
		strcpy(path + len - 4, ".in");
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			close(*wfd);
			return ret;
		}
		return fd;
	}
	fd = open(path, (control ? O_RDWR : O_WRONLY | O_NONBLOCK) | O_CLOEXEC);
	if (control && fd >= 0)
		*wfd = fd;
	if (fd < 0 && errno == ENXIO && S_ISFIFO(st.st_mode)) {
		/* No reader on the FIFO yet: hold it open ourselves, as QEMU would. */
		fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}
