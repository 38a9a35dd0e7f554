// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Directories for the ports: mkdir -p, and where setup --domain puts a
 * domain's FIFOs. Kept apart from libvirt.c, which is loaded only when a
 * libvirt domain is named (see libvirt-module.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "collect.h"
#include "libvirt.h"
#include "text.h"

#define LV_DEFAULT_PIPE_ROOT	"/var/lib/virtio-trace"

/**
 * collect_mkdirs() - mkdir -p, 0755 for what is created
 * @dir: the directory
 *
 * Return: 0, -ENOTDIR when a part exists and is not a directory, or -errno.
 */
int collect_mkdirs(const char *dir)
{
	char buf[PATH_MAX];
	size_t i, len = strlen(dir);
	struct stat st;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i])
			continue;
		buf[i] = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (stat(buf, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		buf[i] = i < len ? '/' : 0;
	}
	return 0;
}

/**
 * libvirt_default_dir() - where setup --domain puts a domain's FIFOs by default
 * @buf: filled with LV_DEFAULT_PIPE_ROOT/DOMAIN
 * @len: its size
 * @domain: the domain's name
 *
 * Return: 0, or -EINVAL when the name cannot be a directory name.
 */
int libvirt_default_dir(char *buf, size_t len, const char *domain)
{
	if (!collect_name_ok(domain))
		return -EINVAL;
	snprintf(buf, len, "%s/%s", LV_DEFAULT_PIPE_ROOT, domain);
	return 0;
}
