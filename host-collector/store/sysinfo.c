// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The guest's system information that the analyses need besides the trace:
 * its IOMMU group topology and its PCI device list, carried in the metadata
 * bundle (optional records that older collectors skip). The spool is removed
 * once the trace.dat is written, so output.c hands the bundle here and the
 * files land next to the trace:
 *
 *   DIR/guest-NAME.sysinfo/iommu_groups   "GROUP TYPE DEVICE..." per line
 *   DIR/guest-NAME.sysinfo/pci_devices    the guest's /proc/bus/pci/devices
 *
 * The bundle kept in the output is the last one the agent sent (the collector
 * fetches it again at STOP), so the snapshot is the guest's view at the end of
 * the recording. Both files came from the guest: readers bound and check them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "spool.h"
#include "sysinfo.h"

static int put_file(int dfd, const char *name, const struct vt_blob *b)
{
	size_t done = 0;
	ssize_t n;
	int fd, ret = 0;

	/* An earlier file of ours is replaced; a link or anything else is refused. */
	fd = spool_create(dfd, name, O_WRONLY, true);
	if (fd < 0)
		return fd;
	while (done < b->len) {
		n = write(fd, b->data + done, b->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		done += n;
	}
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

/**
 * sysinfo_path() - the sysinfo directory of a trace file
 * @buf: where to write it
 * @size: size of @buf
 * @dir: the output directory
 * @trace_file: "guest-NAME.dat" or "host.dat"
 *
 * Return: 0 or -ENAMETOOLONG.
 */
int sysinfo_path(char *buf, size_t size, const char *dir, const char *trace_file)
{
	size_t n = strlen(trace_file);
	int len;

	if (n > 4 && !strcmp(trace_file + n - 4, ".dat"))
		n -= 4;
	len = snprintf(buf, size, "%s/%.*s.sysinfo", dir, (int)n, trace_file);
	return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : 0;
}

/**
 * sysinfo_save() - keep a bundle's system information next to its trace
 * @out_fd: the output directory
 * @trace_file: the trace's file name in @dir
 * @m: the decoded bundle
 *
 * Writes nothing when the bundle carries neither record (an older agent).
 *
 * Return: 0 or -errno.
 */
int sysinfo_save(int out_fd, const char *trace_file, const struct vt_meta *m)
{
	char name[256];
	int dfd, ret = 0;

	if (!m->iommu_groups.data && !m->pci_devices.data)
		return 0;
	ret = sysinfo_path(name, sizeof(name), ".", trace_file);
	if (ret < 0)
		return ret;
	dfd = spool_mkdir(out_fd, name + 2, true);
	if (dfd < 0)
		return dfd;
	if (m->iommu_groups.data)
		ret = put_file(dfd, "iommu_groups", &m->iommu_groups);
	if (ret == 0 && m->pci_devices.data)
		ret = put_file(dfd, "pci_devices", &m->pci_devices);
	close(dfd);
	return ret;
}

/**
 * sysinfo_load() - read one sysinfo file of a trace, bounded
 * @dir: the output directory
 * @trace_file: the trace's file name
 * @name: "iommu_groups" or "pci_devices"
 * @b: set to the contents (NUL-terminated); left empty when missing
 *
 * Return: 0 (also when missing: @b->data is then NULL), or -errno.
 */
int sysinfo_load(const char *dir, const char *trace_file, const char *name, struct vt_blob *b)
{
	char path[4500];
	struct stat st;
	ssize_t n;
	int fd, ret;

	b->data = NULL;
	b->len = 0;
	ret = sysinfo_path(path, sizeof(path) - 64, dir, trace_file);
	if (ret < 0)
		return ret;
	strcat(path, "/");
	strcat(path, name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > VT_META_MAX_SYSINFO) {
		ret = -EBADMSG;
		goto err_close_fd;
	}
	b->data = malloc(st.st_size + 1);
	if (!b->data) {
		ret = -ENOMEM;
		goto err_close_fd;
	}
	while (b->len < (size_t)st.st_size) {
		n = read(fd, b->data + b->len, st.st_size - b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		b->len += n;
	}
	b->data[b->len] = '\0';
err_close_fd:
	close(fd);
	return ret;
}
