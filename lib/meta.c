// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The metadata bundle: loading it from a tracefs directory, and saving it to
 * (or loading it from) a directory of plain files, the layout the capture
 * tool writes and the test fixtures use:
 *
 *   header_page header_event kallsyms printk_formats saved_cmdlines
 *   saved_tgids trace_clock uname nr_cpus formats/SYSTEM/EVENT
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
