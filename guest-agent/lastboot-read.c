// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The previous boot's trace: a persistent, boot-mapped instance (Linux 6.12+,
 * reserve_mem=SIZE:ALIGN:NAME trace_instance=NAME^traceoff@NAME) keeps its ring
 * buffer in memory that survives a warm reboot, and the kernel hands that
 * buffer's contents out again in the next boot. The agent reads them whole,
 * with the instance's metadata, into a vt_lastboot bundle for the host.
 * Reading consumes them: they are shipped once. Then the instance is armed:
 * tracing_on=1 (^traceoff kept it off so that this boot would not overwrite
 * the last one's trace), so that it records this boot for the next crash. That
 * change is the point, and is not put back at BYE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "vt_lastboot.h"
#include "vt_meta.h"

#define LASTBOOT_MAX_BYTES	(256u << 20)	/* all CPUs' pages together */

/* Every page trace_pipe_raw still holds for @cpu, each padded to @subbuf. */
static int read_cpu(const char *idir, unsigned int cpu, uint32_t subbuf, uint64_t room,
		    uint8_t **data, uint64_t *len)
{
	char path[PATH_MAX];
	uint8_t *buf = NULL, *nb;
	uint64_t have = 0, cap = 0;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", idir, cpu);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	for (;;) {
		ssize_t n;

		if (have + subbuf > room) {
			ret = -EFBIG;
			break;
		}
		if (have + subbuf > cap) {
			cap = cap ? 2 * cap : 64 * (uint64_t)subbuf;
			nb = realloc(buf, cap);
			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = read(fd, buf + have, subbuf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			ret = -errno;
			break;
		}
		if (n <= 0)
			break;
		/* A partial page reads short; its commit length says how much counts. */
		memset(buf + have + n, 0, subbuf - n);
		have += subbuf;
	}
	close(fd);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*data = buf;
	*len = have;
	return 0;
}

/* tracing_on=1 in @idir, for good (not through tracing_write(), which restores). */
static void arm(const char *idir, const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/tracing_on", idir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1)
		log_warn("last boot: cannot turn instance %s on: %m", name);
	else
		log_info("last boot: instance %s now records this boot", name);
	if (fd >= 0)
		close(fd);
}

/**
 * lastboot_bundle() - the previous boot's trace of a boot-mapped instance
 * @t: mounted tracing state
 * @name: the instance (trace_instance=NAME...@NAME)
 * @meta_flags: VT_META_* flags
 * @blob: set to the malloc()ed vt_lastboot bundle
 * @len: set to its length
 *
 * On success and on -ENODATA the instance is then armed (see above).
 *
 * Return: 0; -ENOENT when there is no such instance or it is not boot-mapped
 * (no last_boot_info: a kernel before 6.12, or no trace_instance=...@...);
 * -ENODATA when it holds nothing; -EFBIG past LASTBOOT_MAX_BYTES; -errno.
 */
int lastboot_bundle(const struct tracing *t, const char *name, unsigned int meta_flags,
		    void **blob, size_t *len)
{
	static struct vt_lastboot lb;
	char idir[PATH_MAX], path[PATH_MAX], info[4096];
	uint64_t total = 0;
	struct vt_meta m;
	void *mblob = NULL;
	size_t mlen;
	unsigned int cpu;
	struct stat st;
	int n, ret;

	memset(&lb, 0, sizeof(lb));
	snprintf(idir, sizeof(idir), "%s/instances/%s", t->root, name);
	snprintf(path, sizeof(path), "%s/last_boot_info", idir);
	if (stat(idir, &st) < 0 || stat(path, &st) < 0)
		return -ENOENT;
	n = tracing_read(&(struct tracing){ .root = t->root, .dir = idir }, "last_boot_info", info,
			 sizeof(info));
	if (n < 0)
		return n;
	/*
	 * Every event's format: what the last boot had enabled is not known
	 * (set_event says what this boot has).
	 */
	ret = vt_meta_load(&m, t->root, name, meta_flags | VT_META_ALL_EVENTS);
	if (ret < 0)
		return ret;
	ret = vt_meta_encode(&m, &mblob, &mlen);
	if (ret < 0)
		goto out_meta;
	lb.name = name;
	lb.name_len = strlen(name);
	lb.info = info;
	lb.info_len = n;
	lb.meta = mblob;
	lb.meta_len = mlen;
	for (cpu = 0; cpu < m.nr_cpus && cpu < VT_LASTBOOT_MAX_CPUS; cpu++) {
		struct vt_lastboot_cpu *c = &lb.cpus[lb.nr_cpus];
		uint8_t *data = NULL;
		uint64_t dlen = 0;

		ret = read_cpu(idir, cpu, m.subbuf_size, LASTBOOT_MAX_BYTES - total, &data, &dlen);
		if (ret < 0)
			goto out_cpus;
		c->cpu = cpu;
		c->data = data;
		c->len = dlen;
		total += dlen;
		lb.nr_cpus++;
	}
	if (!total) {
		ret = -ENODATA;
		goto out_cpus;
	}
	log_info("last boot: instance %s, %llu bytes of pages on %u CPUs", name,
		 (unsigned long long)total, lb.nr_cpus);
	ret = vt_lastboot_encode(&lb, blob, len);
out_cpus:
	if (ret == 0 || ret == -ENODATA)
		arm(idir, name);
	for (cpu = 0; cpu < lb.nr_cpus; cpu++)
		free((void *)lb.cpus[cpu].data);
	free(mblob);
out_meta:
	vt_meta_free(&m);
	return ret;
}
