// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The metadata bundle: loading it from a tracefs directory, and saving it to
 * (or loading it from) a directory of plain files, the layout the capture
 * tool writes and the test fixtures use:
 *
 *   header_page header_event kallsyms printk_formats saved_cmdlines
 *   saved_tgids trace_clock uname nr_cpus formats/SYSTEM/EVENT
 *   iommu_groups pci_devices (optional)
 *
 * tracefs files report a size of 0, so every file is read until EOF.
 * vt_meta_encode() and vt_meta_decode() live in another file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_grow.h"

/* Read a whole file, whatever size stat() claims; NUL-terminate it. */
static int read_fd_all(int fd, struct vt_blob *b, size_t max)
{
	size_t cap = 4096, len = 0;
	char *buf, *tmp;
	ssize_t n;

	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= max) {
				free(buf);
				return -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			tmp = realloc(buf, cap + 1);
			if (!tmp) {
				free(buf);
				return -ENOMEM;
			}
			buf = tmp;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return n;
		}
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	free(b->data);
	b->data = buf;
	b->len = len;
	return 0;
}

static int read_path(const char *path, struct vt_blob *b, size_t max)
{
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = read_fd_all(fd, b, max);
	close(fd);
	return ret;
}

/* Like read_path(), but a missing file leaves an empty blob. */
static int read_path_opt(const char *path, struct vt_blob *b, size_t max)
{
	int ret = read_path(path, b, max);

	if (ret == -ENOENT)
		return 0;
	return ret;
}

static int join(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s/%s", a, b);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

static void blob_free(struct vt_blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

static void system_free(struct vt_meta_system *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_events; i++) {
		free(s->events[i].name);
		blob_free(&s->events[i].format);
	}
	free(s->events);
	free(s->name);
	s->events = NULL;
	s->name = NULL;
	s->nr_events = 0;
}

/**
 * vt_meta_free() - release everything a bundle owns
 * @m: the bundle; zeroed afterwards, so freeing twice is harmless
 */
void vt_meta_free(struct vt_meta *m)
{
	uint32_t i;

	blob_free(&m->header_page);
	blob_free(&m->header_event);
	system_free(&m->ftrace);
	for (i = 0; i < m->nr_systems; i++)
		system_free(&m->systems[i]);
	free(m->systems);
	blob_free(&m->kallsyms);
	blob_free(&m->printk_formats);
	blob_free(&m->saved_cmdlines);
	blob_free(&m->saved_tgids);
	blob_free(&m->trace_clock);
	blob_free(&m->uname);
	blob_free(&m->iommu_groups);
	blob_free(&m->pci_devices);
	memset(m, 0, sizeof(*m));
}

static bool name_ok(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len < VT_META_MAX_NAME && !strchr(name, '/') &&
	       strcmp(name, ".") && strcmp(name, "..");
}

static struct vt_meta_system *find_system(struct vt_meta *m, const char *system, bool create)
{
	struct vt_meta_system *s;
	uint32_t i;

	if (!strcmp(system, "ftrace"))
		return &m->ftrace;
	for (i = 0; i < m->nr_systems; i++)
		if (!strcmp(m->systems[i].name, system))
			return &m->systems[i];
	if (!create)
		return NULL;
	if (m->nr_systems >= VT_META_MAX_SYSTEMS) {
		errno = E2BIG;
		return NULL;
	}
	s = realloc(m->systems, (m->nr_systems + 1) * sizeof(*s));
	if (!s)
		return NULL;
	m->systems = s;
	s = &m->systems[m->nr_systems];
	memset(s, 0, sizeof(*s));
	s->name = strdup(system);
	if (!s->name)
		return NULL;
	m->nr_systems++;
	return s;
}

static uint32_t count_events(const struct vt_meta *m)
{
	uint32_t i, n = m->ftrace.nr_events;

	for (i = 0; i < m->nr_systems; i++)
		n += m->systems[i].nr_events;
	return n;
}

/**
 * vt_meta_add_event() - add one event format to a bundle
 * @m: the bundle
 * @system: the event system ("ftrace" goes to @m->ftrace)
 * @name: the event name
 * @format: the format file's text (need not be NUL-terminated)
 * @len: its length
 *
 * Return: 0, -EINVAL for a bad name or an oversized format, -EEXIST when the
 * event is already there, -E2BIG past the bundle limits, -ENOMEM.
 */
int vt_meta_add_event(struct vt_meta *m, const char *system, const char *name,
		      const char *format, size_t len)
{
	struct vt_meta_system *s;
	struct vt_meta_event *ev;
	uint32_t i;

	if (!name_ok(system) || !name_ok(name) || len > VT_META_MAX_FORMAT)
		return -EINVAL;
	if (count_events(m) >= VT_META_MAX_EVENTS)
		return -E2BIG;
	s = find_system(m, system, true);
	if (!s)
		return errno == E2BIG ? -E2BIG : -ENOMEM;
	for (i = 0; i < s->nr_events; i++)
		if (!strcmp(s->events[i].name, name))
			return -EEXIST;
	if (!s->name) {
		/* The ftrace system is embedded; name it on first use. */
		s->name = strdup("ftrace");
		if (!s->name)
			return -ENOMEM;
	}
	ev = realloc(s->events, (s->nr_events + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	s->events = ev;
	ev = &s->events[s->nr_events];
	ev->name = strdup(name);
	ev->format.data = malloc(len + 1);
	if (!ev->name || !ev->format.data) {
		free(ev->name);
		free(ev->format.data);
		return -ENOMEM;
	}
	memcpy(ev->format.data, format, len);
	ev->format.data[len] = '\0';
	ev->format.len = len;
	s->nr_events++;
	return 0;
}

/* Add the format file at @path as SYSTEM:EVENT. */
static int add_format_file(struct vt_meta *m, const char *path, const char *system,
			   const char *event)
{
	struct vt_blob b = { 0 };
	int ret;

	ret = read_path(path, &b, VT_META_MAX_FORMAT);
	if (ret < 0)
		return ret;
	ret = vt_meta_add_event(m, system, event, b.data, b.len);
	blob_free(&b);
	return ret;
}

static int dir_filter(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/*
 * Add every event of @system found under @events (tracefs layout
 * EVENTS/SYSTEM/EVENT/format, or with @flat the fixture layout
 * EVENTS/SYSTEM/EVENT), in name order so that files come out the same
 * on every run.
 */
static int add_system_dir(struct vt_meta *m, const char *events, const char *system, bool flat)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent **names;
	int i, n, ret = 0;

	ret = join(dir, sizeof(dir), events, system);
	if (ret < 0)
		return ret;
	n = scandir(dir, &names, dir_filter, alphasort);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		const char *ev = names[i]->d_name;
		struct stat st;

		if (ret < 0)
			continue;
		if (join(path, sizeof(path), dir, ev) < 0) {
			ret = -ENAMETOOLONG;
			continue;
		}
		if (!flat) {
			/* Skip "enable" and "filter": events are directories. */
			if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
				continue;
			if (strlen(path) + sizeof("/format") > sizeof(path)) {
				ret = -ENAMETOOLONG;
				continue;
			}
			strcat(path, "/format");
		}
		ret = add_format_file(m, path, system, ev);
		if (ret == -ENOENT && !flat)
			ret = 0;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

/* Every system under @events; ftrace too when @flat (the fixture layout). */
static int add_all_systems(struct vt_meta *m, const char *events, bool flat)
{
	char path[PATH_MAX];
	struct dirent **names;
	int i, n, ret = 0;

	n = scandir(events, &names, dir_filter, alphasort);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		const char *sys = names[i]->d_name;
		struct stat st;

		if (ret < 0 || (!flat && !strcmp(sys, "ftrace")))
			continue;
		if (join(path, sizeof(path), events, sys) < 0 ||
		    stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		ret = add_system_dir(m, events, sys, flat);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

/* The events an instance's set_event lists ("system:event" per line). */
static int add_enabled_events(struct vt_meta *m, const char *events, const char *idir)
{
	char path[PATH_MAX];
	struct vt_blob list = { 0 };
	char *line, *save = NULL;
	int ret;

	ret = join(path, sizeof(path), idir, "set_event");
	if (ret < 0)
		return ret;
	ret = read_path(path, &list, VT_META_MAX_BLOB);
	if (ret < 0)
		return ret;
	for (line = strtok_r(list.data, "\n", &save); line && ret >= 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		int n;

		if (!colon)
			continue;
		*colon = '\0';
		/* ftrace formats are all loaded already. */
		if (!strcmp(line, "ftrace") || !name_ok(line) || !name_ok(colon + 1))
			continue;
		n = snprintf(path, sizeof(path), "%s/%s/%s/format", events, line, colon + 1);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			ret = -ENAMETOOLONG;
			break;
		}
		ret = add_format_file(m, path, line, colon + 1);
		if (ret == -EEXIST)
			ret = 0;
	}
	blob_free(&list);
	return ret;
}

/* The highest N of the cpuN entries of @dir, plus one. */
static int count_cpus(const char *dir, const char *suffix, uint32_t *nr)
{
	struct dirent *d;
	DIR *dp;

	dp = opendir(dir);
	if (!dp)
		return -errno;
	*nr = 0;
	while ((d = readdir(dp))) {
		unsigned long cpu;
		char *end;

		if (strncmp(d->d_name, "cpu", 3) || d->d_name[3] < '0' || d->d_name[3] > '9')
			continue;
		cpu = strtoul(d->d_name + 3, &end, 10);
		if (strcmp(end, suffix) || cpu >= VT_META_MAX_CPUS)
			continue;
		if (cpu + 1 > *nr)
			*nr = cpu + 1;
	}
	closedir(dp);
	return 0;
}

static int set_uname(struct vt_meta *m)
{
	struct utsname u;
	char buf[4 * sizeof(u.release) + 4];
	int n;

	if (uname(&u) < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%s %s %s %s", u.sysname, u.release, u.version,
		     u.machine);
	if (n < 0)
		return -EINVAL;
	blob_free(&m->uname);
	m->uname.data = strdup(buf);
	if (!m->uname.data)
		return -ENOMEM;
	m->uname.len = strlen(buf);
	return 0;
}

static int set_subbuf(struct vt_meta *m)
{
	struct vt_page_fmt fmt;
	int ret;

	ret = vt_page_fmt_parse(&fmt, m->header_page.data, m->header_page.len);
	if (ret < 0)
		return ret;
	m->subbuf_size = fmt.subbuf_size;
	return 0;
}

static int cmp_group(const struct dirent **a, const struct dirent **b)
{
	return strtoul((*a)->d_name, NULL, 10) < strtoul((*b)->d_name, NULL, 10) ? -1 :
	       strtoul((*a)->d_name, NULL, 10) > strtoul((*b)->d_name, NULL, 10);
}

static int numeric_name(const struct dirent *d)
{
	return d->d_name[0] >= '0' && d->d_name[0] <= '9' &&
	       strspn(d->d_name, "0123456789") == strlen(d->d_name);
}

static int dev_name(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Append to @b, bounded by VT_META_MAX_SYSINFO (the rest is left out). */
static int blob_append(struct vt_blob *b, const char *s)
{
	size_t n = strlen(s);
	char *p;

	if (b->len + n > VT_META_MAX_SYSINFO)
		return 0;
	p = realloc(b->data, b->len + n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p + b->len, s, n + 1);
	b->data = p;
	b->len += n;
	return 0;
}

/* One group's line: "GROUP TYPE DEVICE...". */
static int add_group(struct vt_blob *b, const char *root, const char *group)
{
	char path[PATH_MAX], line[512];
	struct vt_blob type = { 0 };
	struct dirent **devs = NULL;
	int i, n, ret;

	snprintf(path, sizeof(path), "%s/%s/type", root, group);
	if (read_path(path, &type, 64) < 0 || !type.len)
		blob_free(&type);
	else
		type.data[strcspn(type.data, " \n")] = '\0';
	snprintf(line, sizeof(line), "%s %s", group, type.data && type.data[0] ? type.data : "-");
	blob_free(&type);
	ret = blob_append(b, line);
	snprintf(path, sizeof(path), "%s/%s/devices", root, group);
	n = scandir(path, &devs, dev_name, alphasort);
	for (i = 0; i < n; i++) {
		if (ret == 0 && strlen(devs[i]->d_name) < sizeof(line) - 2) {
			snprintf(line, sizeof(line), " %s", devs[i]->d_name);
			ret = blob_append(b, line);
		}
		free(devs[i]);
	}
	free(devs);
	return ret < 0 ? ret : blob_append(b, "\n");
}

/* The IOMMU group topology and the PCI device list: for the report's analyses. */
static int load_sysinfo(struct vt_meta *m)
{
	static const char root[] = "/sys/kernel/iommu_groups";
	struct dirent **groups = NULL;
	int i, n, ret = 0;

	n = scandir(root, &groups, numeric_name, cmp_group);
	if (n >= 0) {
		/* Present, even empty: "no groups" differs from "not known". */
		ret = blob_append(&m->iommu_groups, "");
		if (ret == 0 && !m->iommu_groups.data)
			ret = (m->iommu_groups.data = strdup("")) ? 0 : -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (ret == 0)
			ret = add_group(&m->iommu_groups, root, groups[i]->d_name);
		free(groups[i]);
	}
	free(groups);
	if (ret < 0)
		return ret;
	ret = read_path_opt("/proc/bus/pci/devices", &m->pci_devices, VT_META_MAX_SYSINFO);
	return ret == -EFBIG || ret == -EMSGSIZE ? 0 : ret;
}

static int load_tracefs(struct vt_meta *m, const char *tracefs, const char *idir,
			unsigned int flags)
{
	char events[PATH_MAX], path[PATH_MAX], ievents[PATH_MAX];
	struct stat st;
	int ret;

	ret = join(events, sizeof(events), tracefs, "events");
	if (ret < 0)
		return ret;
	/*
	 * The page layout is the instance's own: since 6.8 an instance has its
	 * own sub-buffer size and its own events/header_page. Older kernels
	 * have only the top level's.
	 */
	ret = join(ievents, sizeof(ievents), idir, "events/header_page");
	if (ret < 0)
		return ret;
	if (stat(ievents, &st) == 0)
		ret = join(ievents, sizeof(ievents), idir, "events");
	else
		ret = join(ievents, sizeof(ievents), tracefs, "events");
	if (ret < 0)
		return ret;
	if ((ret = join(path, sizeof(path), ievents, "header_page")) < 0 ||
	    (ret = read_path(path, &m->header_page, VT_META_MAX_FORMAT)) < 0 ||
	    (ret = join(path, sizeof(path), ievents, "header_event")) < 0 ||
	    (ret = read_path(path, &m->header_event, VT_META_MAX_FORMAT)) < 0 ||
	    (ret = set_subbuf(m)) < 0)
		return ret;
	ret = add_system_dir(m, events, "ftrace", false);
	if (ret < 0 && ret != -ENOENT)
		return ret;
	if (flags & VT_META_ALL_EVENTS)
		ret = add_all_systems(m, events, false);
	else
		ret = add_enabled_events(m, events, idir);
	if (ret < 0)
		return ret;
	if (!(flags & VT_META_NO_KALLSYMS)) {
		ret = read_path_opt("/proc/kallsyms", &m->kallsyms, VT_META_MAX_BLOB);
		if (ret < 0)
			return ret;
	}
	if (!(flags & VT_META_NO_SYSINFO)) {
		ret = load_sysinfo(m);
		if (ret < 0)
			return ret;
	}
	if ((ret = join(path, sizeof(path), tracefs, "printk_formats")) < 0 ||
	    (ret = read_path_opt(path, &m->printk_formats, VT_META_MAX_BLOB)) < 0 ||
	    (ret = join(path, sizeof(path), tracefs, "saved_cmdlines")) < 0 ||
	    (ret = read_path_opt(path, &m->saved_cmdlines, VT_META_MAX_BLOB)) < 0 ||
	    (ret = join(path, sizeof(path), tracefs, "saved_tgids")) < 0 ||
	    (ret = read_path_opt(path, &m->saved_tgids, VT_META_MAX_BLOB)) < 0 ||
	    (ret = join(path, sizeof(path), idir, "trace_clock")) < 0 ||
	    (ret = read_path(path, &m->trace_clock, VT_META_MAX_FORMAT)) < 0 ||
	    (ret = set_uname(m)) < 0 ||
	    (ret = join(path, sizeof(path), idir, "per_cpu")) < 0)
		return ret;
	return count_cpus(path, "", &m->nr_cpus);
}

/**
 * vt_meta_load() - build a bundle from a tracefs directory
 * @m: the bundle, overwritten (not freed first)
 * @tracefs: the tracefs mount point, e.g. /sys/kernel/tracing
 * @instance: an instance name, or NULL or "" for the top-level buffer
 * @flags: VT_META_ALL_EVENTS, VT_META_NO_KALLSYMS
 *
 * Reads header_page and header_event (the instance's own where it has them:
 * its sub-buffer size can differ from the top level's), every events/ftrace format, the formats of
 * the events the instance has enabled (its set_event; every system with
 * VT_META_ALL_EVENTS), /proc/kallsyms, printk_formats, saved_cmdlines,
 * saved_tgids, the instance's trace_clock, uname(2), and counts the
 * instance's per_cpu directories. A missing optional file (kallsyms,
 * printk_formats, saved_cmdlines, saved_tgids) leaves an empty blob.
 *
 * Return: 0, or -errno (the bundle is then empty); -EBADMSG for a
 * header_page that does not describe a page layout.
 */
int vt_meta_load(struct vt_meta *m, const char *tracefs, const char *instance,
		 unsigned int flags)
{
	char idir[PATH_MAX];
	int n, ret;

	memset(m, 0, sizeof(*m));
	if (instance && *instance) {
		if (!name_ok(instance))
			return -EINVAL;
		n = snprintf(idir, sizeof(idir), "%s/instances/%s", tracefs, instance);
	} else {
		n = snprintf(idir, sizeof(idir), "%s", tracefs);
	}
	if (n < 0 || (size_t)n >= sizeof(idir))
		return -ENAMETOOLONG;
	ret = load_tracefs(m, tracefs, idir, flags);
	if (ret < 0)
		vt_meta_free(m);
	return ret;
}

/**
 * vt_meta_clock() - the selected clock of a trace_clock text
 * @m: the bundle
 * @buf: receives the name between the brackets ("[x86-tsc] local" -> "x86-tsc")
 * @size: size of @buf
 *
 * Return: @buf, or NULL when there is no bracketed name or it does not fit.
 */
const char *vt_meta_clock(const struct vt_meta *m, char *buf, size_t size)
{
	const char *open, *close;
	size_t len;

	if (!m->trace_clock.data || !size)
		return NULL;
	open = memchr(m->trace_clock.data, '[', m->trace_clock.len);
	if (!open)
		return NULL;
	close = memchr(open, ']', m->trace_clock.len - (open - m->trace_clock.data));
	if (!close)
		return NULL;
	len = close - open - 1;
	if (len == 0 || len >= size)
		return NULL;
	memcpy(buf, open + 1, len);
	buf[len] = '\0';
	return buf;
}

/* --- The bundle as a directory of plain files --- */

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

static int save_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[PATH_MAX];
	int fd, ret;

	ret = join(path, sizeof(path), dir, name);
	if (ret < 0)
		return ret;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, data, len);
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int save_system(const char *formats, const struct vt_meta_system *s)
{
	char dir[PATH_MAX];
	uint32_t i;
	int ret;

	if (!s->nr_events)
		return 0;
	if ((ret = join(dir, sizeof(dir), formats, s->name)) < 0 || (ret = make_dir(dir)) < 0)
		return ret;
	for (i = 0; i < s->nr_events; i++) {
		ret = save_file(dir, s->events[i].name, s->events[i].format.data,
				s->events[i].format.len);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/**
 * vt_meta_save_dir() - write a bundle as a directory of plain files
 * @m: the bundle
 * @dir: the directory, created when missing; existing files are replaced
 *
 * The layout is the one vt_meta_load_dir() reads: header_page, header_event,
 * kallsyms, printk_formats, saved_cmdlines, saved_tgids, trace_clock, uname,
 * nr_cpus (decimal) and formats/SYSTEM/EVENT.
 *
 * Return: 0 or -errno.
 */
int vt_meta_save_dir(const struct vt_meta *m, const char *dir)
{
	const struct { const char *name; const struct vt_blob *b; } files[] = {
		{ "header_page", &m->header_page },
		{ "header_event", &m->header_event },
		{ "kallsyms", &m->kallsyms },
		{ "printk_formats", &m->printk_formats },
		{ "saved_cmdlines", &m->saved_cmdlines },
		{ "saved_tgids", &m->saved_tgids },
		{ "trace_clock", &m->trace_clock },
		{ "uname", &m->uname },
		{ "iommu_groups", &m->iommu_groups },
		{ "pci_devices", &m->pci_devices },
	};
	char formats[PATH_MAX], num[16];
	uint32_t i;
	int ret;

	ret = make_dir(dir);
	if (ret < 0)
		return ret;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		ret = save_file(dir, files[i].name, files[i].b->data ? files[i].b->data : "",
				files[i].b->len);
		if (ret < 0)
			return ret;
	}
	snprintf(num, sizeof(num), "%u\n", m->nr_cpus);
	if ((ret = save_file(dir, "nr_cpus", num, strlen(num))) < 0 ||
	    (ret = join(formats, sizeof(formats), dir, "formats")) < 0 ||
	    (ret = make_dir(formats)) < 0 ||
	    (ret = save_system(formats, &m->ftrace)) < 0)
		return ret;
	for (i = 0; i < m->nr_systems; i++) {
		ret = save_system(formats, &m->systems[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int load_dir(struct vt_meta *m, const char *dir)
{
	const struct { const char *name; struct vt_blob *b; bool required; } files[] = {
		{ "header_page", &m->header_page, true },
		{ "header_event", &m->header_event, true },
		{ "kallsyms", &m->kallsyms, false },
		{ "printk_formats", &m->printk_formats, false },
		{ "saved_cmdlines", &m->saved_cmdlines, false },
		{ "saved_tgids", &m->saved_tgids, false },
		{ "trace_clock", &m->trace_clock, false },
		{ "uname", &m->uname, false },
		{ "iommu_groups", &m->iommu_groups, false },
		{ "pci_devices", &m->pci_devices, false },
	};
	char path[PATH_MAX];
	struct vt_blob num = { 0 };
	unsigned long n;
	char *end;
	uint32_t i;
	int ret;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		ret = join(path, sizeof(path), dir, files[i].name);
		if (ret < 0)
			return ret;
		ret = files[i].required ? read_path(path, files[i].b, VT_META_MAX_BLOB) :
					  read_path_opt(path, files[i].b, VT_META_MAX_BLOB);
		if (ret < 0)
			return ret;
	}
	ret = set_subbuf(m);
	if (ret < 0)
		return ret;
	ret = join(path, sizeof(path), dir, "formats");
	if (ret < 0)
		return ret;
	ret = add_all_systems(m, path, true);
	if (ret < 0 && ret != -ENOENT)
		return ret;

	ret = join(path, sizeof(path), dir, "nr_cpus");
	if (ret < 0)
		return ret;
	ret = read_path(path, &num, 32);
	if (ret == -ENOENT)
		return count_cpus(dir, ".raw", &m->nr_cpus);
	if (ret < 0)
		return ret;
	n = strtoul(num.data, &end, 10);
	ret = (end == num.data || n == 0 || n > VT_META_MAX_CPUS) ? -EBADMSG : 0;
	m->nr_cpus = n;
	blob_free(&num);
	return ret;
}

/**
 * vt_meta_load_dir() - load a bundle saved by vt_meta_save_dir()
 * @m: the bundle, overwritten (not freed first)
 * @dir: the directory
 *
 * header_page and header_event are required; other files may be missing.
 * Without an nr_cpus file the CPU count comes from the cpuN.raw files.
 *
 * Return: 0, or -errno (the bundle is then empty).
 */
int vt_meta_load_dir(struct vt_meta *m, const char *dir)
{
	int ret;

	memset(m, 0, sizeof(*m));
	ret = load_dir(m, dir);
	if (ret < 0)
		vt_meta_free(m);
	return ret;
}

/* --- Task names (saved_cmdlines) --- */

struct cmdline {
	long pid;
	const char *comm;
	size_t len;
	size_t order;		/* among equal pids, the first one given wins */
};

static int cmdline_cmp(const void *a, const void *b)
{
	const struct cmdline *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Parse "PID COMM" lines into @v (grown as needed). A line without a positive
 * pid or without a name is dropped.
 */
static int parse_cmdlines(const char *text, size_t len, struct cmdline **v, size_t *n,
			  size_t *cap)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *line = p, *s;
		const char *eol = nl ? nl : end;
		long pid = 0;

		p = nl ? nl + 1 : end;
		for (s = line; s < eol && *s >= '0' && *s <= '9' && pid < INT_MAX; s++)
			pid = pid * 10 + (*s - '0');
		if (s == line || s >= eol || *s != ' ' || pid <= 0 || pid > INT_MAX || s + 1 == eol)
			continue;
		if (vt_grow((void **)v, cap, *n + 1, sizeof(**v)) < 0)
			return -ENOMEM;
		(*v)[*n] = (struct cmdline){ pid, s + 1, eol - s - 1, *n };
		(*n)++;
	}
	return 0;
}

/**
 * vt_meta_merge_cmdlines() - add task names to a bundle's saved_cmdlines
 * @m: the bundle
 * @text: "PID COMM" lines, as in the kernel's saved_cmdlines
 * @len: length of @text
 *
 * A pid the bundle names already keeps its name: merge the best source first.
 * The result is sorted by pid, one line per pid; lines without a positive pid
 * and a name are dropped.
 *
 * Return: 0, -E2BIG past VT_META_MAX_BLOB, -ENOMEM.
 */
int vt_meta_merge_cmdlines(struct vt_meta *m, const char *text, size_t len)
{
	struct cmdline *v = NULL;
	size_t n = 0, cap = 0, i, out = 0;
	char *buf = NULL;
	int ret;

	ret = parse_cmdlines(m->saved_cmdlines.data ? m->saved_cmdlines.data : "",
			     m->saved_cmdlines.len, &v, &n, &cap);
	if (ret == 0)
		ret = parse_cmdlines(text ? text : "", text ? len : 0, &v, &n, &cap);
	if (ret < 0)
		goto out_free;
	qsort(v, n, sizeof(*v), cmdline_cmp);
	for (i = 0; i < n; i++)
		if (!i || v[i].pid != v[i - 1].pid)
			out += 12 + v[i].len;
	if (out > VT_META_MAX_BLOB) {
		ret = -E2BIG;
		goto out_free;
	}
	buf = malloc(out + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out_free;
	}
	out = 0;
	for (i = 0; i < n; i++) {
		if (i && v[i].pid == v[i - 1].pid)
			continue;
		out += sprintf(buf + out, "%ld ", v[i].pid);
		memcpy(buf + out, v[i].comm, v[i].len);
		out += v[i].len;
		buf[out++] = '\n';
	}
	buf[out] = '\0';
	blob_free(&m->saved_cmdlines);
	m->saved_cmdlines.data = buf;
	m->saved_cmdlines.len = out;
out_free:
	free(v);
	return ret;
}

/* Append "TID COMM\n" for one /proc/PID/task/TID/comm; a vanished task is skipped. */
static int scan_one_comm(const char *path, const char *tid, char **buf, size_t *len,
			 size_t *cap)
{
	char comm[64];
	ssize_t n;
	size_t i, need;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	if (comm[n - 1] == '\n')
		n--;
	/*
	 * The kernel's own names are TASK_COMM_LEN - 1 bytes at most; /proc
	 * gives workers more ("kworker/u8:3-ext4-rsv-conversion"), which break
	 * trace-cmd report's columns.
	 */
	if (n > VT_COMM_MAX)
		n = VT_COMM_MAX;
	if (n == 0)
		return 0;
	/* A name may hold any byte (prctl): keep each entry on one line. */
	for (i = 0; i < (size_t)n; i++)
		if (comm[i] == '\n')
			comm[i] = '?';
	need = strlen(tid) + 1 + n + 1;
	if (*len + need + 1 > *cap) {
		size_t ncap = (*cap ? *cap * 2 : 16384) + need;
		char *t;

		if (ncap > VT_META_MAX_BLOB)
			return -E2BIG;
		t = realloc(*buf, ncap);
		if (!t)
			return -ENOMEM;
		*buf = t;
		*cap = ncap;
	}
	*len += sprintf(*buf + *len, "%s ", tid);
	memcpy(*buf + *len, comm, n);
	*len += n;
	(*buf)[(*len)++] = '\n';
	(*buf)[*len] = '\0';
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/**
 * vt_meta_scan_comms() - the names of the tasks that exist now
 * @proc: the procfs mount, usually /proc
 * @out: receives "TID COMM\n" for every thread of every process
 *
 * The kernel's saved_cmdlines holds only the tasks that were switched out
 * after an event (saved_cmdlines_size of them), so tasks that sleep through a
 * recording's start are missing from it. Thread ids are those of @proc's pid
 * namespace: they match the trace's pids only in the host's namespace.
 * Tasks that end while the scan runs are skipped.
 *
 * Return: 0, or -errno (@out is then untouched).
 */
int vt_meta_scan_comms(const char *proc, struct vt_blob *out)
{
	char path[PATH_MAX];
	struct dirent *pd, *td;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	DIR *pdir, *tdir;
	int ret = 0;

	pdir = opendir(proc);
	if (!pdir)
		return -errno;
	while (ret == 0 && (pd = readdir(pdir))) {
		if (!all_digits(pd->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s/task", proc, pd->d_name) >= (int)sizeof(path))
			continue;
		tdir = opendir(path);
		if (!tdir)
			continue;
		while (ret == 0 && (td = readdir(tdir))) {
			char comm[PATH_MAX];

			if (!all_digits(td->d_name))
				continue;
			if (snprintf(comm, sizeof(comm), "%s/%s/comm", path, td->d_name) >=
			    (int)sizeof(comm))
				continue;
			ret = scan_one_comm(comm, td->d_name, &buf, &len, &cap);
		}
		closedir(tdir);
	}
	closedir(pdir);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	if (!buf) {
		buf = strdup("");
		if (!buf)
			return -ENOMEM;
	}
	free(out->data);
	out->data = buf;
	out->len = len;
	return 0;
}

/* --- Text that will be printed: control characters and invalid UTF-8 --- */

/*
 * The length of the UTF-8 character at @p (at most @left bytes), 0 when it
 * is not one: a stray continuation byte, an overlong form, a surrogate, a
 * code point past U+10FFFF, or a sequence cut short. Sets @cp.
 */
static size_t utf8_char(const unsigned char *p, size_t left, uint32_t *cp)
{
	size_t n, i;
	uint32_t c = p[0], min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, c &= 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, c &= 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/**
 * vt_text_clean() - make text safe to print on a terminal, in place
 * @s: the text (need not be NUL-terminated; a NUL in it is a control
 *	character like the others)
 * @len: its length
 * @keep: the control characters that are part of the text's layout and
 *	stay ("\n", "\t\n", or "")
 * @replaced: when not NULL, increased by the characters replaced
 *
 * A control character (C0 but those in @keep, DEL, C1 U+0080 to U+009F)
 * becomes one '?', and so does each byte that does not start a valid UTF-8
 * character; everything else, valid UTF-8 included, is kept as it is. The
 * text never grows. A NUL-terminated @s stays so when its terminator is at
 * @len.
 *
 * Return: the new length.
 */
size_t vt_text_clean(char *s, size_t len, const char *keep, uint64_t *replaced)
{
	unsigned char *p = (unsigned char *)s;
	size_t in = 0, out = 0, n;
	uint64_t count = 0;
	uint32_t cp;

	while (in < len) {
		n = utf8_char(p + in, len - in, &cp);
		if (!n) {
			p[out++] = '?';
			in++;
			count++;
			continue;
		}
		if ((cp < 0x20 && !(cp && strchr(keep, (int)cp))) || (cp >= 0x7f && cp <= 0x9f)) {
			p[out++] = '?';
			in += n;
			count++;
			continue;
		}
		if (out != in)
			memmove(p + out, p + in, n);
		out += n;
		in += n;
	}
	if (out < len)
		p[out] = '\0';
	if (replaced)
		*replaced += count;
	return out;
}

/* The blob cleaned in place, its length and terminator updated. */
static void clean_blob(struct vt_blob *b, const char *keep, uint64_t *replaced)
{
	if (!b->data)
		return;
	b->len = vt_text_clean(b->data, b->len, keep, replaced);
	b->data[b->len] = '\0';
}

/*
 * A format file holds a control character only where a guest put it: the
 * kernel writes names, fields and the print format as printable text,
 * tab-separated lines.
 */
static bool format_ok(const struct vt_blob *f)
{
	const unsigned char *p = (const unsigned char *)f->data;
	size_t i = 0, n;
	uint32_t cp;

	while (i < f->len) {
		n = utf8_char(p + i, f->len - i, &cp);
		if (!n || (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7f && cp <= 0x9f))
			return false;
		i += n;
	}
	return true;
}

/*
 * The format's words as libtraceevent's tokenizer cuts them: a run of
 * letters, digits and '_' is one item; spaces and tabs separate; a newline
 * and every other character are tokens of their own. Quotes are not
 * special here (stricter: a quoted "offset:" is checked too).
 */
struct ftok {
	const char *p, *end;
	const char *s;		/* the token */
	size_t len;
};

static bool item_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool next_tok(struct ftok *t)
{
	while (t->p < t->end && (*t->p == ' ' || *t->p == '\t'))
		t->p++;
	if (t->p >= t->end)
		return false;
	t->s = t->p;
	if (item_char(*t->p))
		while (t->p < t->end && item_char(*t->p))
			t->p++;
	else
		t->p++;
	t->len = t->p - t->s;
	return true;
}

static bool tok_is(const struct ftok *t, const char *word)
{
	return t->len == strlen(word) && !memcmp(t->s, word, t->len);
}

/*
 * "offset" or "size" then ':' then a plain decimal number that fits an int
 * (libtraceevent keeps them in ints, read with strtoul(..., 0): a sign, a
 * hex or octal spelling, or junk is refused rather than guessed at).
 */
static int tok_number(struct ftok *t, uint64_t *v)
{
	size_t i;

	if (!next_tok(t) || !tok_is(t, ":") || !next_tok(t) || !t->len || t->len > 10 ||
	    (t->len > 1 && t->s[0] == '0'))
		return -EBADMSG;
	*v = 0;
	for (i = 0; i < t->len; i++) {
		if (t->s[i] < '0' || t->s[i] > '9')
			return -EBADMSG;
		*v = *v * 10 + (t->s[i] - '0');
	}
	return *v > INT_MAX ? -ERANGE : 0;
}

/* The largest constant index REC->f[N] may have in a print format. */
#define PRINT_INDEX_MAX		4096

static const char *skip_space(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
		p++;
	return p;
}

/* Past a quoted string starting at @p (its quote), as libtraceevent reads one: '\\' escapes. */
static const char *skip_quote(const char *p, const char *end)
{
	char q = *p++;

	while (p < end && *p != q)
		p += *p == '\\' ? 2 : 1;
	return p < end ? p + 1 : end;
}

/* Whether [p, end) is spaces, @word, spaces. */
static bool just(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	p = skip_space(p, end);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
		end--;
	return (size_t)(end - p) == n && !memcmp(p, word, n);
}

/* sizeof() of a type of 1 to 8 bytes, as libtraceevent evaluates it; end of it in *@next. */
static bool small_sizeof(const char *p, const char *end, const char **next)
{
	static const char *const types[] = { "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
					     "char", "short", "int", "long", "unsigned char",
					     "unsigned short", "unsigned int", "unsigned long" };
	const char *close;
	size_t i;

	p = skip_space(p, end);
	if ((size_t)(end - p) < 7 || memcmp(p, "sizeof", 6))
		return false;
	p = skip_space(p + 6, end);
	if (p >= end || *p != '(' || !(close = memchr(p, ')', end - p)))
		return false;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (just(p + 1, close, types[i])) {
			*next = close + 1;
			return true;
		}
	return false;
}

/* A length bounded by a 16-bit __data_loc word: __get_dynamic_array_len(x), maybe "/ N". */
static bool dyn_len_text(const char *p, const char *end)
{
	static const char *const names[] = { "__get_dynamic_array_len", "__get_rel_dynamic_array_len" };
	const char *close;
	size_t i, n;

	p = skip_space(p, end);
	for (i = 0; i < 2; i++) {
		n = strlen(names[i]);
		if ((size_t)(end - p) > n && !memcmp(p, names[i], n) && !item_char(p[n]))
			break;
	}
	if (i == 2)
		return false;
	p = skip_space(p + n, end);
	if (p >= end || *p != '(' || !(close = memchr(p, ')', end - p)))
		return false;
	for (p++; p < close; p++)
		if (!item_char(*p) && *p != ' ')
			return false;
	p = skip_space(close + 1, end);
	if (p == end)
		return true;
	if (*p++ != '/')
		return false;
	if (small_sizeof(p, end, &p))
		return skip_space(p, end) == end;
	p = skip_space(p, end);
	if (p == end || *p < '1' || *p > '9')
		return false;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return skip_space(p, end) == end;
}

/*
 * The arguments of the call whose '(' is at @p: their starts and ends (up to
 * @max), split at the commas outside brackets and quotes. Return: how many,
 * or -1 when the call does not close.
 */
static int call_args(const char *p, const char *end, const char **a, const char **e, int max)
{
	int depth = 0, n = 0;
	const char *start = ++p;

	while (p < end) {
		if (*p == '"' || *p == '\'') {
			p = skip_quote(p, end);
			continue;
		}
		if (*p == '(' || *p == '[' || *p == '{')
			depth++;
		if ((*p == ')' || *p == ']' || *p == '}') && depth-- == 0) {
			if (n < max) {
				a[n] = start;
				e[n] = p;
			}
			return n + 1;
		}
		if (*p == ',' && !depth) {
			if (n < max) {
				a[n] = start;
				e[n] = p;
			}
			n++;
			start = p + 1;
		}
		p++;
	}
	return -1;
}

/*
 * Whether a print format's arguments (from "print fmt:" to the end) read only
 * what the fields, a 16-bit __data_loc word or a small constant bound:
 * libtraceevent (1.7) reads __print_hex(), __print_hex_str() and
 * __print_array() for whatever length they are given and REC->f[i] at any
 * i, and those can come from the record, which the guest writes too.
 */
static bool print_bounded(const char *p, const char *end)
{
	while (p < end) {
		const char *a[3], *e[3], *w;
		bool hex, arr;
		int n;

		if (*p == '"' || *p == '\'') {
			p = skip_quote(p, end);
			continue;
		}
		if (*p == '[') {
			unsigned long v = 0;
			int digits = 0;

			p = skip_space(p + 1, end);
			while (p < end && *p >= '0' && *p <= '9' && digits++ < 5)
				v = v * 10 + (*p++ - '0');
			p = skip_space(p, end);
			if (!digits || v > PRINT_INDEX_MAX || p >= end || *p != ']')
				return false;
			continue;
		}
		if (!item_char(*p)) {
			p++;
			continue;
		}
		for (w = p; p < end && item_char(*p); p++)
			;
		hex = (p - w == 11 && !memcmp(w, "__print_hex", 11)) ||
		      (p - w == 15 && !memcmp(w, "__print_hex_str", 15));
		arr = p - w == 13 && !memcmp(w, "__print_array", 13);
		if (!hex && !arr)
			continue;
		w = skip_space(p, end);
		if (w >= end || *w != '(')
			return false;
		n = call_args(w, end, a, e, 3);
		if (n < (hex ? 2 : 3) || !dyn_len_text(a[1], e[1]))
			return false;
		if (arr && !just(a[2], e[2], "1") && !just(a[2], e[2], "2") &&
		    !just(a[2], e[2], "4") && !just(a[2], e[2], "8") &&
		    !(small_sizeof(a[2], e[2], &w) && skip_space(w, e[2]) == e[2]))
			return false;
		/* Its arguments are looked into as the rest is. */
	}
	return true;
}

/**
 * vt_meta_format_check() - whether every field of an event format lies
 * inside the largest event a sub-buffer can hold
 * @format: an events/SYSTEM/EVENT/format text (need not be NUL-terminated)
 * @len: its length
 * @max_event: the largest event payload, in bytes (vt_meta_max_event())
 *
 * Every "offset:N; size:N;" pair outside the print format's line is read
 * as libtraceevent reads it; a reader that trusts the offsets (libtraceevent's
 * plugins, trace-cmd report) then never reaches past @max_event bytes from
 * an event's start. A __data_loc or __rel_loc field's fixed part is its
 * 4-byte offset/length word. The print format's arguments may not read a
 * length or index the record gives: __print_hex(), __print_hex_str() and
 * __print_array() take a __data_loc length (__get_dynamic_array_len(), maybe
 * divided), __print_array() an element of 1, 2, 4 or 8 bytes, and an index
 * [N] is a constant up to 4096.
 *
 * Return: 0; -ERANGE when a field lies past @max_event (or a number does not
 * fit an int), or the print format reads an unbounded length or index;
 * -EBADMSG when an offset or size is not a plain decimal number, or a
 * dynamic field's fixed part is not 4 bytes.
 */
int vt_meta_format_check(const char *format, size_t len, uint32_t max_event)
{
	struct ftok t = { .p = format, .end = format + len };
	bool line_start = true, dynamic = false, have_off = false, have_size = false;
	uint64_t off = 0, size = 0;
	int ret;

	while (next_tok(&t)) {
		bool first = line_start;

		line_start = tok_is(&t, "\n");
		if (line_start) {
			dynamic = have_off = have_size = false;
			continue;
		}
		if (first && tok_is(&t, "print")) {
			/* The print format: its arguments bounded; it holds no field. */
			const char *eol = memchr(t.p, '\n', t.end - t.p);

			if (!print_bounded(t.p, t.end))
				return -ERANGE;
			t.p = eol ? eol : t.end;
			continue;
		}
		if (tok_is(&t, "__data_loc") || tok_is(&t, "__rel_loc")) {
			dynamic = true;
		} else if (tok_is(&t, "offset") || tok_is(&t, "size")) {
			bool is_off = t.s[0] == 'o';
			struct ftok peek = t;

			/* A field named "offset" or "size" is followed by ';', not ':'. */
			if (!next_tok(&peek) || !tok_is(&peek, ":"))
				continue;
			ret = tok_number(&t, is_off ? &off : &size);
			if (ret < 0)
				return ret;
			if (is_off)
				have_off = true;
			else
				have_size = true;
			if ((have_off ? off : 0) + (have_size ? size : 0) > max_event)
				return -ERANGE;
			if (dynamic && have_size && size != 4)
				return -EBADMSG;
		}
	}
	return 0;
}

/**
 * vt_meta_max_event() - the largest event payload a bundle's sub-buffers hold
 * @m: the bundle
 *
 * Return: the sub-buffer's data size less the 8-byte header of an event
 * with a length word; 0 when its header_page cannot be read.
 */
uint32_t vt_meta_max_event(const struct vt_meta *m)
{
	struct vt_page_fmt fmt;

	if (!m->header_page.data ||
	    vt_page_fmt_parse(&fmt, m->header_page.data, m->header_page.len) < 0 ||
	    fmt.subbuf_size < fmt.data_offset + 8)
		return 0;
	return fmt.subbuf_size - fmt.data_offset - 8;
}

static void note_dropped(char *buf, size_t size, const struct vt_meta_system *s,
			 const struct vt_meta_event *ev)
{
	snprintf(buf, size, "%s:%s", s->name ? s->name : "ftrace", ev->name);
}

/* "system:event" added to the list @buf of @n names, or "..." once it is full. */
static void list_dropped(char *buf, size_t size, uint32_t n, const struct vt_meta_system *s,
			 const struct vt_meta_event *ev)
{
	size_t len = strlen(buf);
	char name[2 * VT_META_MAX_NAME + 2];

	note_dropped(name, sizeof(name), s, ev);
	if (len >= 3 && !strcmp(buf + len - 3, "..."))
		return;
	if (len + strlen(name) + 2 + 5 < size)
		snprintf(buf + len, size - len, "%s%s", n ? ", " : "", name);
	else
		snprintf(buf + len, size - len, "%s...", n ? ", " : "");
}

/*
 * Leave out the formats of @s that are not format_ok() or (@bounds) not
 * vt_meta_format_check() against @max_event; count them into @c.
 */
static void drop_formats(struct vt_meta_system *s, bool bounds, uint32_t max_event,
			 struct vt_meta_clean *c)
{
	uint32_t i, kept = 0;

	for (i = 0; i < s->nr_events; i++) {
		struct vt_meta_event *ev = &s->events[i];
		bool text = format_ok(&ev->format);

		if (text && (!bounds ||
			     vt_meta_format_check(ev->format.data, ev->format.len, max_event) == 0)) {
			s->events[kept++] = *ev;
			continue;
		}
		if (!text) {
			if (!c->formats_dropped++)
				note_dropped(c->first_dropped, sizeof(c->first_dropped), s, ev);
		} else {
			list_dropped(c->out_of_bounds, sizeof(c->out_of_bounds),
				     c->formats_out_of_bounds++, s, ev);
		}
		free(ev->name);
		blob_free(&ev->format);
	}
	s->nr_events = kept;
}

static void sanitize(struct vt_meta *m, bool bounds, struct vt_meta_clean *c)
{
	uint32_t i, max_event;

	memset(c, 0, sizeof(*c));
	clean_blob(&m->saved_cmdlines, "\n", &c->replaced);
	clean_blob(&m->kallsyms, "\t\n", &c->replaced);
	clean_blob(&m->printk_formats, "\n", &c->replaced);
	clean_blob(&m->saved_tgids, "\n", &c->replaced);
	clean_blob(&m->uname, "", &c->replaced);
	clean_blob(&m->trace_clock, "\n", &c->replaced);
	clean_blob(&m->iommu_groups, "\t\n", &c->replaced);
	clean_blob(&m->pci_devices, "\t\n", &c->replaced);
	max_event = vt_meta_max_event(m);
	drop_formats(&m->ftrace, bounds, max_event, c);
	for (i = 0; i < m->nr_systems; i++)
		drop_formats(&m->systems[i], bounds, max_event, c);
}

/**
 * vt_meta_sanitize() - make a guest's bundle safe for whoever prints it
 * @m: the bundle (decoded from a guest)
 * @c: filled with what was done
 *
 * Task names (saved_cmdlines), kallsyms (symbol and module names),
 * printk_formats, uname, trace_clock and the sysinfo texts have their
 * control characters and invalid UTF-8 replaced (vt_text_clean(): the
 * layout's tabs and newlines stay). An event format holding a control
 * character or invalid UTF-8 (in its name line or its print format) is
 * left out whole: its events then print as unknown, never the guest's bytes.
 * So is one that fails vt_meta_format_check() against the largest event its
 * sub-buffers hold, counted apart: libtraceevent's plugins and trace-cmd
 * report read a field where its format says, and libtraceevent reads the
 * length a print format gives, unchecked.
 * The pages' contents (markers, strings in events) are not the bundle's and
 * are not changed.
 */
void vt_meta_sanitize(struct vt_meta *m, struct vt_meta_clean *c)
{
	sanitize(m, true, c);
}

/**
 * vt_meta_sanitize_own() - vt_meta_sanitize() for the host's own bundle:
 * its texts cleaned and formats with control characters left out, its
 * formats' bounds trusted (its kernel wrote them and the pages they
 * describe; kvm_emulate_insn's __print_hex() of the record's length is
 * the kernel's own)
 * @m: the bundle
 * @c: filled with what was done
 */
void vt_meta_sanitize_own(struct vt_meta *m, struct vt_meta_clean *c)
{
	sanitize(m, false, c);
}
