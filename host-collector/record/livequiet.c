// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The processes whose host events the live view leaves out: the collector
 * itself and the terminal that shows the view. Each line the view prints
 * wakes the terminal, which redraws and sleeps again, and both show up as
 * host sched_switch and sched_wakeup events that the view then prints, and
 * so on: 54,610 host events against 7,925 guest events in 6 s, before.
 *
 * The terminal is the process that holds the master side of the view's
 * pseudo-terminal: the kernel says which in /proc/PID/fdinfo/FD of a
 * /dev/ptmx descriptor ("tty-index:"). A task belongs to a process by its
 * Tgid (/proc/TID/status), looked up once per task and cached. Our own
 * threads are also noted as the view goes (/proc/self/task): one that ended
 * before its events were printed has no Tgid left to ask.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "livequiet.h"

#define QUIET_MAX_PROCS		8	/* us and the terminal's holders */
#define QUIET_CACHE		4096u	/* tasks whose process is known, by pid (a power of two) */
#define QUIET_OWN_MAX		4096u	/* our own threads noted */

struct live_quiet {
	pid_t procs[QUIET_MAX_PROCS];
	char names[QUIET_MAX_PROCS][17];
	unsigned int nr;
	struct {
		int pid;		/* 0: empty */
		int tgid;		/* -1: unknown (gone) */
	} cache[QUIET_CACHE];
	int own[QUIET_OWN_MAX];
	unsigned int nr_own;
};

/* The Tgid of task @pid, -1 if it is gone. */
static int tgid_of(int pid)
{
	char path[64], line[128];
	int tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static void add_proc(struct live_quiet *q, pid_t pid)
{
	char path[64];
	unsigned int i;
	ssize_t n;
	int fd;

	for (i = 0; i < q->nr; i++)
		if (q->procs[i] == pid)
			return;
	if (q->nr == QUIET_MAX_PROCS)
		return;
	q->procs[q->nr] = pid;
	q->names[q->nr][0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, q->names[q->nr], 16) : -1;
	if (fd >= 0)
		close(fd);
	q->names[q->nr][n > 0 ? n : 0] = '\0';
	q->names[q->nr][strcspn(q->names[q->nr], "\n")] = '\0';
	q->nr++;
}

/* The processes that hold the master of pseudo-terminal @index open. */
static void find_ptmx_holders(struct live_quiet *q, unsigned int index)
{
	char path[300], link[64], line[128];
	struct dirent *de, *fe;
	DIR *d, *fds;

	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		fds = opendir(path);
		while (fds && (fe = readdir(fds))) {
			unsigned int idx;
			ssize_t n;
			FILE *f;

			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, fe->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strcmp(link, "/dev/ptmx") && strcmp(link, "/dev/pts/ptmx"))
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%s", pid, fe->d_name);
			f = fopen(path, "re");
			while (f && fgets(line, sizeof(line), f))
				if (sscanf(line, "tty-index: %u", &idx) == 1 && idx == index)
					add_proc(q, (pid_t)pid);
			if (f)
				fclose(f);
		}
		if (fds)
			closedir(fds);
	}
	if (d)
		closedir(d);
}

static bool is_own(const struct live_quiet *q, int pid)
{
	unsigned int i;

	for (i = 0; i < q->nr_own; i++)
		if (q->own[i] == pid)
			return true;
	return false;
}

/**
 * live_quiet_note_threads() - note the collector's threads that exist now
 * @q: the set
 *
 * Called as the view goes, so that the events of a thread that has ended
 * since are still known as ours.
 */
void live_quiet_note_threads(struct live_quiet *q)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	while (d && (de = readdir(d)) && q->nr_own < QUIET_OWN_MAX) {
		int tid = atoi(de->d_name);

		if (tid > 0 && !is_own(q, tid))
			q->own[q->nr_own++] = tid;
	}
	if (d)
		closedir(d);
}

/**
 * live_quiet_new() - the processes whose host events the view leaves out
 * @out_fd: the view's output: when it is a pseudo-terminal, its master's
 *	holders (the terminal emulator, tmux, sshd) are left out too
 *
 * Return: the set, or NULL with errno set.
 */
struct live_quiet *live_quiet_new(int out_fd)
{
	struct live_quiet *q = calloc(1, sizeof(*q));
	unsigned int index;
	const char *tty;

	if (!q)
		return NULL;
	add_proc(q, getpid());
	live_quiet_note_threads(q);
	tty = isatty(out_fd) ? ttyname(out_fd) : NULL;
	if (tty && sscanf(tty, "/dev/pts/%u", &index) == 1)
		find_ptmx_holders(q, index);
	return q;
}

/**
 * live_quiet_free() - free the set
 * @q: the set, or NULL
 */
void live_quiet_free(struct live_quiet *q)
{
	free(q);
}

/**
 * live_quiet_has() - whether a host task belongs to a process left out
 * @q: the set
 * @pid: the task (a thread id, as events give it)
 *
 * Return: true for a task of the collector or of the view's terminal.
 */
bool live_quiet_has(struct live_quiet *q, int pid)
{
	unsigned int h = ((unsigned int)pid * 2654435761u) & (QUIET_CACHE - 1), i;

	if (pid <= 0)
		return false;
	if (q->cache[h].pid != pid) {
		q->cache[h].pid = pid;
		q->cache[h].tgid = tgid_of(pid);
		if (q->cache[h].tgid < 0 && is_own(q, pid))
			q->cache[h].tgid = getpid();	/* one of ours, ended since */
	}
	for (i = 0; i < q->nr; i++)
		if (q->cache[h].tgid == q->procs[i])
			return true;
	return false;
}

/**
 * live_quiet_describe() - the processes left out, in words
 * @q: the set
 * @buf: where to write "pid 123 (virtio-trace-co), pid 45 (tmux: server)"
 * @len: its size
 */
void live_quiet_describe(const struct live_quiet *q, char *buf, size_t len)
{
	size_t n = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < q->nr && n < len; i++)
		n += snprintf(buf + n, len - n, "%spid %d (%s)", i ? ", " : "", (int)q->procs[i],
			      q->names[i]);
}
