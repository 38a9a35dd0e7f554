// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-fake-qemu: a process that looks like a QEMU with trace ports to
 * `virtio-trace-collect list` and holds them as QEMU does, with no guest
 * behind them: a guest whose agent never answers. Run a root-owned 0755 copy
 * named qemu-system-x86_64 (list believes /proc/PID/exe, not argv[0]) with
 * QEMU's arguments; of them it only acts on
 * `-chardev pipe,id=ID,path=P`: it opens P.in and P.out O_RDWR (QEMU's way,
 * so that nobody blocks) and reads nothing; and `-incoming unix:PATH`: after
 * the FIFOs, as QEMU does, it listens on PATH (VT_FAKE_INCOMING_DELAY_MS
 * later, default 0: a QEMU slow to get there; -1: never, a QEMU whose guest has
 * arrived). It runs until SIGTERM or SIGINT.
 *
 * Usage: qemu-system-x86_64 [-name NAME] [-chardev pipe,id=ID,path=P]...
 *        [-device virtserialport,chardev=ID,name=NAME]... [-incoming unix:PATH]
 * Prints "vt-fake-qemu: ready N" on stderr once the FIFOs are open, and
 * "vt-fake-qemu: listening" once PATH is.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* -incoming unix:PATH: a listener, as QEMU keeps until the migration's connection. */
static int listen_incoming(int argc, char **argv)
{
	const char *delay = getenv("VT_FAKE_INCOMING_DELAY_MS");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timespec ts;
	long ms;
	int i, fd;

	for (i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-incoming") && !strncmp(argv[i + 1], "unix:", 5))
			break;
	if (i + 1 >= argc)
		return 0;
	ms = delay ? atol(delay) : 0;
	if (ms < 0)
		return 0;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = ms % 1000 * 1000000;
	nanosleep(&ts, NULL);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[i + 1] + 5);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0) {
		perror(sa.sun_path);
		return -1;
	}
	fprintf(stderr, "vt-fake-qemu: listening\n");
	return 0;
}

int main(int argc, char **argv)
{
	char path[4200];
	const char *p, *e;
	sigset_t set;
	int i, n = 0, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "-chardev") || strncmp(argv[i + 1], "pipe,", 5))
			continue;
		p = strstr(argv[i + 1], ",path=");
		if (!p)
			continue;
		p += 6;
		e = strchr(p, ',');
		snprintf(path, sizeof(path), "%.*s.in", e ? (int)(e - p) : (int)strlen(p), p);
		if (open(path, O_RDWR | O_CLOEXEC) < 0) {
			perror(path);
			return 1;
		}
		snprintf(path, sizeof(path), "%.*s.out", e ? (int)(e - p) : (int)strlen(p), p);
		if (open(path, O_RDWR | O_CLOEXEC) < 0) {
			perror(path);
			return 1;
		}
		n++;
	}
	fprintf(stderr, "vt-fake-qemu: ready %d\n", n);
	if (listen_incoming(argc, argv) < 0)
		return 1;
	sigwait(&set, &sig);
	return 0;
}
