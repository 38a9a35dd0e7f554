// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Who holds a file open, as the kernel says it in /proc. A process of
 * another user shows its fds to root only: as another user, holders of other
 * users' files are not seen.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procfd.h"

/**
 * procfd_holders() - the processes that have FIFOs open
 * @k: the FIFOs; each @holder is set to the first process found with it open
 *     that is neither us, nor its @skip, nor one @ignore accepts
 * @n: entries in @k
 * @ignore: processes that do not count (NULL: all count)
 *
 * One walk over /proc/PID/fd for all of @k. An fd counts by what it is open
 * on (stat() of the magic link: the open file's device and inode), whatever
 * path it was opened by.
 */
void procfd_holders(struct procfd_key *k, unsigned int n, bool (*ignore)(pid_t pid))
{
	char dir[64], fdp[128];
	struct dirent *de, *fe;
	struct stat st;
	unsigned int i;
	DIR *d, *fds;

	if (!n)
		return;
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		char *end;
		pid_t pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
		fds = opendir(dir);
		while (fds && (fe = readdir(fds))) {
			if (fe->d_name[0] == '.')
				continue;
			snprintf(fdp, sizeof(fdp), "%s/%s", dir, fe->d_name);
			if (stat(fdp, &st) < 0 || !S_ISFIFO(st.st_mode))
				continue;
			for (i = 0; i < n; i++)
				if (st.st_dev == k[i].dev && st.st_ino == k[i].ino && pid != k[i].skip &&
				    !k[i].holder && !(ignore && ignore(pid)))
					k[i].holder = pid;
		}
		if (fds)
			closedir(fds);
	}
	if (d)
		closedir(d);
}

/**
 * procfd_read_unix() - the unix sockets bound to a path, from /proc/net/unix
 * @n: set to the entries returned
 *
 * Return: an array to free(), or NULL (with *@n 0) when it cannot be read.
 */
struct procfd_unix *procfd_read_unix(unsigned int *n)
{
	char line[512], path[256];
	struct procfd_unix *u = NULL, *t;
	unsigned int cap = 0;
	unsigned long inode, st;
	FILE *f = fopen("/proc/net/unix", "re");

	*n = 0;
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		/* Num RefCount Protocol Flags Type St Inode Path */
		if (sscanf(line, "%*s %*s %*s %*s %*s %lx %lu %255s", &st, &inode, path) < 2 ||
		    path[0] != '/')
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			t = realloc(u, cap * sizeof(*u));
			if (!t)
				break;
			u = t;
		}
		u[*n].inode = inode;
		u[*n].connected = st == 3;	/* SS_CONNECTED */
		snprintf(u[*n].path, sizeof(u[*n].path), "%s", path);
		(*n)++;
	}
	fclose(f);
	return u;
}
