// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-fake-qemu: a process that looks like a QEMU with trace ports to
 * `virtio-trace-collect list` and holds them as QEMU does, with no guest
 * behind them: a guest whose agent never answers. Run a root-owned 0755 copy
 * named qemu-system-x86_64 (list believes /proc/PID/exe, not argv[0]) with
 * QEMU's arguments; of them it only acts on
 * `-chardev pipe,id=ID,path=P`: it opens P.in and P.out O_RDWR (QEMU's way,
 * so that nobody blocks) and reads nothing. It runs until SIGTERM or SIGINT.
 *
 * Usage: qemu-system-x86_64 [-name NAME] [-chardev pipe,id=ID,path=P]...
 *        [-device virtserialport,chardev=ID,name=NAME]...
 * Prints "vt-fake-qemu: ready N" on stderr once the FIFOs are open.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
	sigwait(&set, &sig);
	return 0;
}
