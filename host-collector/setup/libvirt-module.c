// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libvirt support is a module, virtio-trace-collect-libvirt.so, loaded only
 * when --domain is used: libvirt and what it pulls in (GLib, GnuTLS, ...)
 * cost about 10 MiB of resident memory at start-up alone, which every other
 * run of the collector should not pay. The module is looked for in
 * $VT_LIBVIRT_MODULE, next to the running executable (a build tree), then in
 * PKGLIBDIR (installed). It calls back into the executable (logging, names,
 * directories), which exports its symbols for that.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "libvirt.h"
#include "list.h"

#define LV_MODULE	"virtio-trace-collect-libvirt.so"

static void *lv_sym(const char *name)
{
	static void *handle;
	char self[PATH_MAX], path[PATH_MAX + 64], tried[3 * (PATH_MAX + 64)] = "";
	const char *env = getenv("VT_LIBVIRT_MODULE");
	ssize_t n;
	void *sym;

	if (!handle && env && *env) {
		handle = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		snprintf(tried, sizeof(tried), "%s (%s)", env, dlerror());
	}
	if (!handle && (n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/%s", self, LV_MODULE);
			handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			if (!handle && access(path, F_OK) == 0)
				snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s (%s)",
					 tried[0] ? ", " : "", path, dlerror());
		}
	}
	if (!handle) {
		snprintf(path, sizeof(path), "%s/%s", PKGLIBDIR, LV_MODULE);
		handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!handle)
			snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s (%s)",
				 tried[0] ? ", " : "", path, dlerror());
	}
	if (!handle) {
		log_err("libvirt support is not available: cannot load %s: %s", LV_MODULE, tried);
		return NULL;
	}
	sym = dlsym(handle, name);
	if (!sym)
		log_err("%s has no %s: %s", LV_MODULE, name, dlerror());
	return sym;
}

int libvirt_guest_resolve(struct guest_link *l, const char *name, const char *uri)
{
	int (*fn)(struct guest_link *, const char *, const char *) =
		(int (*)(struct guest_link *, const char *, const char *))lv_sym("libvirt_guest_resolve");

	return fn ? fn(l, name, uri) : -ENOSYS;
}

int libvirt_setup_run(struct libvirt_setup *s)
{
	int (*fn)(struct libvirt_setup *) = (int (*)(struct libvirt_setup *))lv_sym("libvirt_setup_run");

	return fn ? fn(s) : -ENOSYS;
}

int libvirt_events_start(const char *uri, int fd)
{
	int (*fn)(const char *, int) = (int (*)(const char *, int))lv_sym("libvirt_events_start");

	return fn ? fn(uri, fd) : -ENOSYS;
}

int libvirt_list(const char *uri, struct list_guest **g, unsigned int *nr, char *note, size_t len)
{
	int (*fn)(const char *, struct list_guest **, unsigned int *, char *, size_t) =
		(int (*)(const char *, struct list_guest **, unsigned int *, char *, size_t))
		lv_sym("libvirt_list");

	*g = NULL;
	*nr = 0;
	if (!fn) {
		snprintf(note, len, "libvirt's domains are not listed: the libvirt module is not "
			 "available");
		return -ENOSYS;
	}
	return fn(uri, g, nr, note, len);
}
