// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for `recover`: a whole spool directory, as a killed (or
 * hostile) run may leave it, fed to output_finalise(), which writes the
 * trace.dat files, bad-pages/ and manifest.json from it. Every file of the
 * spool is fuzz input: options, a guest's state, agent, sync, meta.bin,
 * layout, data, cpuN.pages/.bad/.frag/.stats/.sums/.zst/.zsum and inplace,
 * and the host's. Nothing may crash, leak or read out of bounds; every file the
 * finish writes must stay inside the output directory.
 * vt-fuzz-sources: host-collector/store/output.c host-collector/store/finish.c host-collector/store/inplace.c host-collector/store/manifest.c host-collector/store/spool.c host-collector/store/spool-file.c host-collector/dirperm.c host-collector/text.c host-collector/json.c host-collector/store/sysinfo.c lib/pages.c lib/meta.c lib/meta_codec.c lib/tracedat.c lib/tsync-map.c lib/tsync-est.c lib/tsync-timeshift.c lib/tsync-tsc.c lib/grow.c lib/stats-text.c
 * vt-fuzz-libs: -lzstd -lm -lpthread -I host-collector -I host-collector/store -I /usr/include/traceevent
 *
 * Input: records { u8 file; u16 length (little-endian); length bytes }; the
 * file number indexes files[] below, modulo its size (a later record of the
 * same file replaces it). "data" records are a trace's data file, one
 * segment per CPU: the first byte is the CPU (0 or 1), the rest go to
 * CPU * region as the layout file gives it (so the file has the holes a
 * real spool has). Bounded: at most 192 KiB in all (-max_len).
 * vt-fuzz-args: -max_len=196608
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "output.h"
#include "spool.h"

int collect_quiet = 1;
int collect_verbose;
const char *collect_cmd;

void collect_log(int level, const char *fmt, ...)
{
}

const char *collect_msg_name(enum guest_msg kind)
{
	return "?";
}

static const char *const files[] = {
	"options",
	"guest-g/state", "guest-g/agent", "guest-g/sync", "guest-g/meta.bin", "guest-g/layout",
	"guest-g/data", "guest-g/cpu0.pages", "guest-g/cpu1.pages", "guest-g/cpu0.bad",
	"guest-g/cpu0.frag", "guest-g/cpu0.stats", "guest-g/cpu1.stats", "guest-g/cpu0.sums",
	"guest-g/cpu1.sums", "guest-g/inplace",
	"host/meta.bin", "host/layout", "host/data", "host/cpu0.pages", "host/cpu0.stats",
	"host/cpu0.sums",
	"guest-g/cpu0.zst", "guest-g/cpu0.zsum", "guest-g/cpu1.zst", "guest-g/cpu1.zsum",
};
#define NR_FILES (sizeof(files) / sizeof(files[0]))

struct rec {
	const uint8_t *p;
	size_t len;
};

static char out[256], spool[300];

/* Empty a directory tree the finish wrote (it makes no links). */
static void clean(int dirfd)
{
	struct dirent *de;
	DIR *d;

	d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return;
	}
	while ((de = readdir(d))) {
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dirfd, de->d_name, 0) == 0)
			continue;
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			clean(sub);
		unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static void clean_out(void)
{
	int fd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0)
		clean(fd);
}

static void cleanup(void)
{
	clean_out();
	rmdir(out);
}

static int setup(void)
{
	char tmpl[] = "/dev/shm/vt-fuzz-recover.XXXXXX";
	char tmpl2[] = "/tmp/vt-fuzz-recover.XXXXXX";
	char *d = mkdtemp(tmpl);

	if (!d)
		d = mkdtemp(tmpl2);
	if (!d)
		return -errno;
	snprintf(out, sizeof(out), "%s", d);
	snprintf(spool, sizeof(spool), "%s/.spool", out);
	atexit(cleanup);
	return 0;
}

static void put(const char *name, const uint8_t *data, size_t len)
{
	char path[400];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", spool, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, data, len) != (ssize_t)len)
		abort();
	close(fd);
}

/* A data file: each segment at its CPU's place in the layout the spool names. */
static void put_data(const char *trace, const struct rec *segs, unsigned int n)
{
	char dir[400], path[420];
	uint64_t region;
	unsigned int i;
	int fd;

	snprintf(dir, sizeof(dir), "%s/%s", spool, trace);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || spool_data_region(fd, &region) < 0)
		region = 65536;
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	for (i = 0; i < n; i++) {
		if (!segs[i].len)
			continue;
		if (pwrite(fd, segs[i].p + 1, segs[i].len - 1, (off_t)(segs[i].p[0] & 1) * region) < 0)
			break;
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rec recs[NR_FILES];
	struct rec gdata[8], hdata[8];
	unsigned int i, ng = 0, nh = 0;
	static bool ready;
	char dir[400];

	if (!ready) {
		if (setup() < 0)
			abort();
		ready = true;
	}
	memset(recs, 0, sizeof(recs));
	while (size >= 3) {
		unsigned int idx = data[0] % NR_FILES;
		size_t len = data[1] | data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (!strcmp(files[idx], "guest-g/data") && ng < 8)
			gdata[ng++] = (struct rec){ data, len };
		else if (!strcmp(files[idx], "host/data") && nh < 8)
			hdata[nh++] = (struct rec){ data, len };
		else
			recs[idx] = (struct rec){ data, len };
		data += len;
		size -= len;
	}

	if (mkdir(spool, 0755) < 0)
		abort();
	snprintf(dir, sizeof(dir), "%s/guest-g", spool);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/host", spool);
	mkdir(dir, 0755);
	for (i = 0; i < NR_FILES; i++)
		if (recs[i].p)
			put(files[i], recs[i].p, recs[i].len);
	if (ng)
		put_data("guest-g", gdata, ng);
	if (nh)
		put_data("host", hdata, nh);

	i = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (i == (unsigned int)-1)
		abort();
	output_finalise((int)i, out, false, false, true);
	close((int)i);
	clean_out();
	return 0;
}
