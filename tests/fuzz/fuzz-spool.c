// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the spool loader: what `recover` (and the finish of
 * every run) reads back from DIR/.spool. A killed or hostile run may leave
 * any bytes in those files, so spool_load_options(), spool_trace_load() (as
 * a guest's and as the host's trace), spool_load_inplace(),
 * spool_data_region() and spool_load_meta() must bound and check everything.
 * vt-fuzz-sources: host-collector/store/spool.c host-collector/store/spool-file.c host-collector/dirperm.c host-collector/text.c lib/meta_codec.c lib/meta.c lib/pages.c lib/tsync-map.c lib/tsync-est.c lib/tsync-timeshift.c lib/tsync-tsc.c lib/grow.c
 * vt-fuzz-libs: -lm -I host-collector -I host-collector/store
 *
 * Input: records { u8 file; u16 length (little-endian); length bytes }, each
 * written as one file of a fresh spool directory (a later record of the same
 * file replaces it). File numbers index files[] below, modulo its size. An
 * input whose first byte is 0xff is also loaded as the host's trace.
 * vt-fuzz-args: -max_len=65536
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "spool.h"

int collect_quiet = 1;
int collect_verbose;
const char *collect_cmd;

void collect_log(int level, const char *fmt, ...)
{
}

/* NULL directory: the spool itself; else the trace's directory. */
static const char *const files[] = {
	"options", "state", "agent", "sync", "cpu0.stats", "cpu1.stats", "cpu0.sums", "cpu1.sums",
	"cpu0.frag", "inplace", "layout", "meta.bin", "cpu63.stats", "cpu63.sums",
};
#define NR_FILES (sizeof(files) / sizeof(files[0]))

static char spool[256], trace[300];
static uint32_t written;	/* files[] the current input wrote */

static void cleanup(void)
{
	char path[400];

	rmdir(trace);
	snprintf(path, sizeof(path), "%s/%s", spool, files[0]);
	unlink(path);
	rmdir(spool);
}

static int setup(void)
{
	char tmpl[] = "/dev/shm/vt-fuzz-spool.XXXXXX";
	char tmpl2[] = "/tmp/vt-fuzz-spool.XXXXXX";
	char *d = mkdtemp(tmpl);

	if (!d)
		d = mkdtemp(tmpl2);
	if (!d)
		return -errno;
	snprintf(spool, sizeof(spool), "%s", d);
	snprintf(trace, sizeof(trace), "%s/guest-f", spool);
	if (mkdir(trace, 0755) < 0)
		return -errno;
	atexit(cleanup);
	return 0;
}

static void put(unsigned int idx, const uint8_t *data, size_t len)
{
	char path[400];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", idx == 0 ? spool : trace, files[idx]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, data, len) != (ssize_t)len)
		abort();
	close(fd);
	written |= 1u << idx;
}

static void clear(void)
{
	char path[400];
	unsigned int i;

	for (i = 0; i < NR_FILES; i++) {
		if (!(written & 1u << i))
			continue;
		snprintf(path, sizeof(path), "%s/%s", i == 0 ? spool : trace, files[i]);
		unlink(path);
	}
	written = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct spool_trace t;
	static bool ready;
	struct spool_options o;
	struct spool_inplace m;
	uint64_t region;
	size_t len;
	bool host = size && data[0] == 0xff;
	int sfd, tfd, ret;
	void *meta;

	if (!ready) {
		if (setup() < 0)
			abort();
		ready = true;
	}
	while (size >= 3) {
		unsigned int idx = data[0] % NR_FILES;

		len = data[1] | data[2] << 8;
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		put(idx, data, len);
		data += len;
		size -= len;
	}

	sfd = open(spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tfd = open(trace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0 || tfd < 0)
		abort();
	spool_load_options(sfd, &o);
	ret = spool_trace_load(tfd, false, &t);
	if (ret == 0 || ret == -EBADMSG) {
		/* What the finish relies on (a file refused or not): bounded counts, terminated strings. */
		if (t.agent.nr_cpus > COLLECT_MAX_CPUS || t.nr_tids > COLLECT_MAX_CPUS ||
		    t.check.nr_ivs > SPOOL_CHECK_IVS_MAX ||
		    strnlen(t.name, sizeof(t.name)) == sizeof(t.name) ||
		    strnlen(t.bad, sizeof(t.bad)) == sizeof(t.bad) || (ret == 0) != !t.bad[0] ||
		    strnlen(t.agent.clock, sizeof(t.agent.clock)) == sizeof(t.agent.clock))
			abort();
	}
	spool_trace_free(&t);
	/* The host's load walks all 256 CPUs' files: too slow for every input. */
	if (host && spool_trace_load(tfd, true, &t) == 0)
		spool_trace_free(&t);
	if (spool_load_inplace(tfd, &m) == 0 && m.nr_cpus > COLLECT_MAX_CPUS)
		abort();
	if (spool_data_region(tfd, &region) == 0 && (!region || region % 65536))
		abort();
	spool_has_inplace(tfd);
	if (spool_load_meta(tfd, &meta, &len) == 0)
		free(meta);
	close(tfd);
	close(sfd);
	clear();
	return 0;
}
