// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The KVM debugfs reader: finds a QEMU process's VM under
 * <debugfs>/kvm/<pid>-<fd> and reads each vCPU's tsc-offset and scaling
 * ratio into a struct vt_tsc_map. Host-only I/O, hence not in lib/.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostclock.h"

/* A decimal number with no sign, no leading zeros, nothing after but "\n". */
static int parse_dec(const char *s, bool neg_ok, bool *neg, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	*neg = false;
	if (*p == '-' && neg_ok) {
		*neg = true;
		p++;
	}
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return -EBADMSG;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -EBADMSG;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '\n')
		p++;
	if (*p)
		return -EBADMSG;
	*v = x;
	return 0;
}

/* Read a small debugfs value file: at most 31 bytes, then parse. */
static int read_value(const char *dir, const char *name, bool neg_ok, bool *neg,
		      uint64_t *v)
{
	char path[PATH_MAX], buf[32];
	size_t have = 0;
	ssize_t n;
	int fd, ret = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (have < sizeof(buf)) {
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto err_close_fd;
		}
		if (!n)
			break;
		have += n;
	}
	if (have == sizeof(buf) || !have) {
		ret = -EBADMSG;
		goto err_close_fd;
	}
	buf[have] = '\0';
	if (memchr(buf, '\0', have)) {
		ret = -EBADMSG;
		goto err_close_fd;
	}
	ret = parse_dec(buf, neg_ok, neg, v);
err_close_fd:
	close(fd);
	return ret;
}

/**
 * vt_kvm_find_vm() - find a QEMU process's KVM debugfs directory
 * @debugfs: debugfs root (normally /sys/kernel/debug; tests pass a fixture)
 * @pid: the QEMU process
 * @dir: set to "<debugfs>/kvm/<pid>-<fd>"
 * @len: size of @dir
 *
 * Return: 0, -ENOENT when there is none, -EEXIST when the process has more
 * than one VM, -ENAMETOOLONG, or -errno from opendir().
 */
int vt_kvm_find_vm(const char *debugfs, pid_t pid, char *dir, size_t len)
{
	char kvm[PATH_MAX], prefix[32], found[NAME_MAX + 1] = "";
	struct dirent *d;
	size_t plen;
	DIR *dp;
	int ret = 0;

	if (pid <= 0 || !debugfs || !dir)
		return -EINVAL;
	if ((size_t)snprintf(kvm, sizeof(kvm), "%s/kvm", debugfs) >= sizeof(kvm))
		return -ENAMETOOLONG;
	plen = snprintf(prefix, sizeof(prefix), "%d-", (int)pid);
	dp = opendir(kvm);
	if (!dp)
		return -errno;
	while ((d = readdir(dp))) {
		const char *p = d->d_name + plen;

		if (strncmp(d->d_name, prefix, plen) || !*p)
			continue;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p)
			continue;
		if (found[0]) {
			ret = -EEXIST;
			goto err_closedir;
		}
		snprintf(found, sizeof(found), "%s", d->d_name);
	}
	if (!found[0]) {
		ret = -ENOENT;
		goto err_closedir;
	}
	if ((size_t)snprintf(dir, len, "%s/%s", kvm, found) >= len)
		ret = -ENAMETOOLONG;
err_closedir:
	closedir(dp);
	return ret;
}

/**
 * vt_kvm_read_vcpu() - read one vCPU's TSC mapping
 * @vmdir: the directory vt_kvm_find_vm() found
 * @id: the vCPU
 * @v: filled in; without scaling files the ratio is 1 and frac bits 0
 *
 * tsc-offset is signed; tsc-scaling-ratio must be non-zero and
 * tsc-scaling-ratio-frac-bits at most 63, and one without the other is an
 * error.
 *
 * Return: 0, -ENOENT when the vCPU does not exist, -EBADMSG for a value that
 * does not parse or is out of range, or -errno.
 */
int vt_kvm_read_vcpu(const char *vmdir, uint32_t id, struct vt_kvm_vcpu *v)
{
	char dir[PATH_MAX];
	uint64_t off, ratio, frac;
	bool neg;
	int ret, ret2;

	if (id >= VT_KVM_MAX_VCPUS)
		return -EINVAL;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/vcpu%u", vmdir, id) >= sizeof(dir))
		return -ENAMETOOLONG;
	ret = read_value(dir, "tsc-offset", true, &neg, &off);
	if (ret < 0)
		return ret;
	if ((!neg && off > INT64_MAX) || (neg && off > (uint64_t)INT64_MAX + 1))
		return -EBADMSG;
	memset(v, 0, sizeof(*v));
	v->id = id;
	v->map.offset = neg ? (int64_t)(0 - off) : (int64_t)off;
	v->map.ratio = 1;
	ret = read_value(dir, "tsc-scaling-ratio", false, &neg, &ratio);
	ret2 = read_value(dir, "tsc-scaling-ratio-frac-bits", false, &neg, &frac);
	if (ret == -ENOENT && ret2 == -ENOENT)
		return 0;
	if (ret < 0 || ret2 < 0)
		return ret == -ENOENT || ret2 == -ENOENT ? -EBADMSG : (ret < 0 ? ret : ret2);
	if (!ratio || frac > VT_TSC_FRAC_MAX)
		return -EBADMSG;
	v->map.ratio = ratio;
	v->map.frac_bits = frac;
	v->has_scaling = true;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* "vcpuN" with N decimal, no leading zeros, below VT_KVM_MAX_VCPUS. */
static bool vcpu_name(const char *name, uint32_t *id)
{
	uint64_t v;
	bool neg;

	if (strncmp(name, "vcpu", 4) || parse_dec(name + 4, false, &neg, &v) < 0 ||
	    strchr(name, '\n') || v >= VT_KVM_MAX_VCPUS)
		return false;
	*id = v;
	return true;
}

/**
 * vt_kvm_read_vm() - read every vCPU of a VM
 * @vmdir: the directory vt_kvm_find_vm() found
 * @v: filled in, by increasing vCPU id (ids may have gaps)
 * @max: entries in @v
 * @nr: set to the number filled in
 *
 * A vCPU directory that disappears between the listing and the read is
 * skipped (hot unplug).
 *
 * Return: 0, -ENOSPC when more than @max vCPUs exist, or as
 * vt_kvm_read_vcpu().
 */
int vt_kvm_read_vm(const char *vmdir, struct vt_kvm_vcpu *v, uint32_t max, uint32_t *nr)
{
	uint32_t *ids, n = 0, i, id;
	struct dirent *d;
	DIR *dp;
	int ret = 0;

	*nr = 0;
	ids = malloc(VT_KVM_MAX_VCPUS * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	dp = opendir(vmdir);
	if (!dp) {
		ret = -errno;
		goto err_free_ids;
	}
	while ((d = readdir(dp))) {
		if (!vcpu_name(d->d_name, &id))
			continue;
		if (n == VT_KVM_MAX_VCPUS || n == max) {
			ret = -ENOSPC;
			goto err_closedir;
		}
		ids[n++] = id;
	}
	qsort(ids, n, sizeof(*ids), cmp_u32);
	for (i = 0; i < n; i++) {
		ret = vt_kvm_read_vcpu(vmdir, ids[i], &v[*nr]);
		if (ret == -ENOENT) {
			ret = 0;
			continue;
		}
		if (ret < 0)
			break;
		(*nr)++;
	}
err_closedir:
	closedir(dp);
err_free_ids:
	free(ids);
	return ret;
}
