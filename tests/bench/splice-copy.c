// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * splice-copy: the least a host can do with a data port, for bench-ingest.sh.
 *
 *   splice-copy [-s] IN OUT
 *   splice-copy -p FILE FIFO [RATE [once]]
 *
 * Moves everything from IN (a FIFO, or any pipe) to the file OUT with
 * splice(2), never through user memory, until EOF, with the FIFO made as
 * deep as the collector makes its own (1 MiB). This is the floor the
 * collector's streaming phase is compared with. -s: fsync OUT at the end, as
 * the collector does its trace.dat.
 *
 * -p is the producer for the baselines: FILE (in the page cache) is read in
 * 64 KiB pieces and written to FIFO one 4 KiB page per write(), as
 * vt-fake-agent writes its pages, so that the baselines and the collector are
 * fed alike. With RATE (bytes per second), FILE is sent over and over, whole
 * pages every 20 ms as the budget allows (vt-fake-agent --rate's cadence),
 * until the reader goes away or a signal ends it: bench-streams.sh's baseline.
 * With "once", FILE is sent once at RATE: bench-ingest.sh's paced rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int produce_rate(const char *file, const char *fifo, double rate, int once)
{
	static char buf[1 << 16];
	struct timespec tick = { 0, 20000000 };
	double t0 = now_s(), sent = 0;
	ssize_t len = 0, off = 0, n;
	int in, out;

	in = open(file, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return 1;
	out = open(fifo, O_WRONLY | O_CLOEXEC);
	if (out < 0) {
		close(in);
		return 1;
	}
	for (;;) {
		while ((now_s() - t0) * rate >= sent + 4096) {
			if (off == len) {
				len = read(in, buf, sizeof(buf));
				if (len == 0 && !once && lseek(in, 0, SEEK_SET) == 0)
					len = read(in, buf, sizeof(buf));
				if (len <= 0)
					goto out;
				off = 0;
			}
			n = write(out, buf + off, len - off < 4096 ? len - off : 4096);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				goto out;
			off += n;
			sent += n;
		}
		nanosleep(&tick, NULL);
	}
out:
	close(out);
	close(in);
	return 0;
}

static int produce(const char *file, const char *fifo)
{
	static char buf[1 << 16];
	int in, out, rc = 1;
	ssize_t len, off, n;

	in = open(file, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return 1;
	out = open(fifo, O_WRONLY | O_CLOEXEC);
	if (out < 0)
		goto out_in;
	while ((len = read(in, buf, sizeof(buf))) > 0) {
		for (off = 0; off < len; off += n) {
			n = write(out, buf + off, len - off < 4096 ? len - off : 4096);
			if (n < 0 && errno == EINTR)
				n = 0;
			else if (n <= 0)
				goto out_out;
		}
	}
	rc = len < 0;
out_out:
	close(out);
out_in:
	close(in);
	return rc;
}

int main(int argc, char **argv)
{
	int in, out, rc = 0, sync = 0;
	ssize_t n;

	if (argc == 4 && strcmp(argv[1], "-p") == 0)
		return produce(argv[2], argv[3]);
	if (argc == 5 && strcmp(argv[1], "-p") == 0)
		return produce_rate(argv[2], argv[3], strtod(argv[4], NULL), 0);
	if (argc == 6 && strcmp(argv[1], "-p") == 0 && strcmp(argv[5], "once") == 0)
		return produce_rate(argv[2], argv[3], strtod(argv[4], NULL), 1);
	if (argc == 4 && strcmp(argv[1], "-s") == 0) {
		sync = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: splice-copy [-s] IN OUT | splice-copy -p FILE FIFO [RATE [once]]\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		fprintf(stderr, "splice-copy: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		fprintf(stderr, "splice-copy: %s: %s\n", argv[2], strerror(errno));
		close(in);
		return 1;
	}
	/* The collector makes its data FIFOs 1 MiB deep: the same here. */
	fcntl(in, F_SETPIPE_SZ, 1 << 20);
	/* 1 MiB asks for more than a pipe holds: each call takes what is there. */
	while ((n = splice(in, NULL, out, NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_MORE)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "splice-copy: %s\n", strerror(errno));
			rc = 1;
			break;
		}
	}
	if (sync && !rc && fsync(out) < 0) {
		fprintf(stderr, "splice-copy: %s: %s\n", argv[2], strerror(errno));
		rc = 1;
	}
	if (close(out) < 0 && !rc) {
		fprintf(stderr, "splice-copy: %s: %s\n", argv[2], strerror(errno));
		rc = 1;
	}
	close(in);
	return rc;
}
