// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tracefs configuration for the agent. Every file the agent writes is read
 * first and recorded, and tracing_restore() writes the records back in the
 * reverse order; a private instance we created is simply removed. The agent
 * never leaves the guest's tracing changed after bye, SIGTERM or SIGINT.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "agent.h"
#include "vt_pages.h"
#include "vt_suggest.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

struct saved_file {
	char *path;
	char *value;
};

static int read_file(const char *path, char *buf, size_t size)
{
	size_t have = 0;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (have + 1 < size) {
		ssize_t n = read(fd, buf + have, size - 1 - have);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		have += n;
	}
	close(fd);
	buf[have] = '\0';
	return ret < 0 ? ret : (int)have;
}

/**
 * tracing_write_file() - write @value into the tracefs file @path, remembering nothing
 * @path: the file
 * @value: what to write
 *
 * Return: 0, or -errno (-EIO for a short write).
 */
int tracing_write_file(const char *path, const char *value)
{
	size_t len = strlen(value);
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

/**
 * tracing_mount() - find tracefs at @root, mounting it when absent
 * @t: zeroed on entry; filled
 * @root: mount point, usually /sys/kernel/tracing
 *
 * Return: 0 or -errno.
 */
int tracing_mount(struct tracing *t, const char *root)
{
	struct statfs sfs;
	char path[PATH_MAX];
	struct stat st;

	memset(t, 0, sizeof(*t));
	t->root = strdup(root);
	if (!t->root)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/trace_pipe", root);
	if (stat(path, &st) < 0) {
		/* Not mounted yet (an initramfs has no fstab). */
		if (statfs(root, &sfs) < 0 || sfs.f_type != TRACEFS_MAGIC) {
			if (mount("nodev", root, "tracefs", 0, NULL) < 0) {
				log_err("tracefs is not at %s and cannot be mounted there: %m", root);
				return -errno;
			}
			t->mounted = true;
		}
	}
	return 0;
}

/**
 * tracing_unmount() - undo tracing_mount() and free what it holds
 * @t: the tracing state
 */
void tracing_unmount(struct tracing *t)
{
	if (t->mounted && umount(t->root) < 0)
		log_warn("cannot unmount %s: %m", t->root);
	free(t->root);
	t->root = NULL;
}

/*
 * The sub-buffer size of the buffer at @dir, from its own events/header_page:
 * since 6.8 each instance has its own size (buffer_subbuf_size_kb) and its own
 * header_page. Older kernels have none in instances: the top level's (@root)
 * is then the only size there is.
 */
static int header_subbuf(const char *root, const char *dir, unsigned int *size)
{
	struct vt_page_fmt fmt;
	char path[PATH_MAX], buf[1024];
	int n;

	snprintf(path, sizeof(path), "%s/events/header_page", dir);
	n = read_file(path, buf, sizeof(buf));
	if (n == -ENOENT && strcmp(dir, root) != 0) {
		snprintf(path, sizeof(path), "%s/events/header_page", root);
		n = read_file(path, buf, sizeof(buf));
	}
	if (n < 0)
		return n;
	if (vt_page_fmt_parse(&fmt, buf, n) < 0)
		return -EBADMSG;
	*size = fmt.subbuf_size;
	return 0;
}

static void restorable(const char *file, char *value);
static bool is_dir(const char *path);

/* CPUs are numbered from 0; the count is one past the highest cpuN found. */
static unsigned int count_cpus(const char *dir)
{
	char path[PATH_MAX];
	unsigned int n = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/per_cpu", dir);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		unsigned int cpu;
		char extra;

		if (sscanf(de->d_name, "cpu%u%c", &cpu, &extra) == 1 && cpu < AGENT_MAX_CPUS &&
		    cpu + 1 > n)
			n = cpu + 1;
	}
	closedir(d);
	return n;
}

/*
 * Empty a kept instance's ring buffer, as a new instance's is: a session that
 * ended without draining, or a writer of its trace_marker since, left pages.
 */
static void empty_kept(const struct tracing *t)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/trace", t->kept);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		log_warn("cannot empty the kept instance %s: %m", t->kept);
	else
		close(fd);
}

/**
 * tracing_use() - select the buffer to configure: the top level or an instance
 * @t: mounted tracing state; a previous buffer must have been restored
 * @instance: instance name, or NULL for the top-level buffer
 *
 * A private instance is created when it does not exist yet. Without @t->keep
 * tracing_restore() removes it; with it, the instance is kept (@t->kept) and
 * restored like an existing one, and the next session that asks for it uses
 * it again. Choosing another instance removes a kept one first. An instance
 * that was there before is used as it is and restored file by file, like the
 * top level.
 *
 * Return: 0 or -errno.
 */
int tracing_use(struct tracing *t, const char *instance)
{
	char path[PATH_MAX];
	int ret;

	free(t->dir);
	free(t->instance);
	t->dir = t->instance = NULL;
	t->created = t->own = false;
	if (instance) {
		snprintf(path, sizeof(path), "%s/instances/%s", t->root, instance);
		if (t->kept && strcmp(t->kept, path) != 0)
			tracing_drop_kept(t);
		if (mkdir(path, 0755) == 0) {
			t->own = true;
			if (!t->keep)
				t->created = true;
			else if (!t->kept && !(t->kept = strdup(path)))
				return -ENOMEM;
		} else if (errno != EEXIST) {
			return -errno;
		} else if (t->kept) {
			/* Ours, kept from an earlier session and restored since. */
			t->own = true;
			empty_kept(t);
		}
		t->kept_idle = 0;
		t->instance = strdup(instance);
	} else {
		snprintf(path, sizeof(path), "%s", t->root);
	}
	t->dir = strdup(path);
	if (!t->dir || (instance && !t->instance))
		return -ENOMEM;

	ret = header_subbuf(t->root, t->dir, &t->subbuf_size);
	if (ret < 0)
		return ret;
	t->nr_cpus = count_cpus(t->dir);
	return t->nr_cpus ? 0 : -ENODEV;
}

/**
 * tracing_reread_geometry() - read the chosen buffer's sub-buffer size again
 * @t: the tracing state, with a buffer chosen by tracing_use()
 *
 * The size belongs to the buffer (an instance has its own since 6.8) and can
 * change under us (buffer_subbuf_size_kb): callers read it again whenever they
 * choose or reconfigure the buffer, and before they start reading pages.
 *
 * Return: 0, or -errno (-EBADMSG for a header_page without a page layout).
 */
int tracing_reread_geometry(struct tracing *t)
{
	return header_subbuf(t->root, t->dir, &t->subbuf_size);
}

/**
 * tracing_geometry() - what the top level says before any buffer is chosen
 * @t: mounted tracing state
 * @nr_cpus: set to the number of CPUs with a per_cpu directory
 * @subbuf_size: set to the sub-buffer size from events/header_page
 * @clock: set to the top level's current trace clock
 * @size: size of @clock
 *
 * Return: 0, -ENODEV when there is no per_cpu directory, or -errno.
 */
int tracing_geometry(const struct tracing *t, unsigned int *nr_cpus, unsigned int *subbuf_size,
		     char *clock, size_t size)
{
	char path[PATH_MAX], buf[1024];
	int ret;

	ret = header_subbuf(t->root, t->root, subbuf_size);
	if (ret < 0)
		return ret;
	*nr_cpus = count_cpus(t->root);
	snprintf(path, sizeof(path), "%s/trace_clock", t->root);
	ret = read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	restorable("trace_clock", buf);
	snprintf(clock, size, "%s", buf);
	return *nr_cpus ? 0 : -ENODEV;
}

/* Record @file's current value once, before the first change to it. */
static int save_once(struct tracing *t, const char *path, const char *value)
{
	struct saved_file *s;
	unsigned int i;

	for (i = 0; i < t->nr_saved; i++)
		if (strcmp(t->saved[i].path, path) == 0)
			return 0;
	s = realloc(t->saved, (t->nr_saved + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	t->saved = s;
	s[t->nr_saved].path = strdup(path);
	s[t->nr_saved].value = strdup(value);
	if (!s[t->nr_saved].path || !s[t->nr_saved].value) {
		free(s[t->nr_saved].path);
		free(s[t->nr_saved].value);
		return -ENOMEM;
	}
	t->nr_saved++;
	return 0;
}

/*
 * Turn what a tracefs file reads back into what writing restores it:
 * trace_clock and current_tracer lists become the bracketed name,
 * buffer_size_kb "7 (expanded: 1408)" becomes "1408", a filter "none"
 * becomes "0" (which clears a filter).
 */
static void restorable(const char *file, char *value)
{
	const char *base = strrchr(file, '/');
	char *a, *b;

	base = base ? base + 1 : file;
	if (strcmp(base, "trace_clock") == 0 && (a = strchr(value, '[')) && (b = strchr(a, ']'))) {
		*b = '\0';
		memmove(value, a + 1, strlen(a + 1) + 1);
	} else if (strcmp(base, "buffer_size_kb") == 0 && (a = strstr(value, "expanded: "))) {
		memmove(value, a + 10, strlen(a + 10) + 1);
		value[strspn(value, "0123456789")] = '\0';
	} else if (strcmp(base, "filter") == 0 && strncmp(value, "none", 4) == 0) {
		strcpy(value, "0");
	} else {
		value[strcspn(value, "\n")] = '\0';
	}
}

/**
 * tracing_write() - write a file of the selected buffer, remembering its old value
 * @t: the tracing state
 * @file: path relative to the buffer's directory ("tracing_on", "events/sched/enable")
 * @value: what to write
 *
 * Return: 0 or -errno.
 */
int tracing_write(struct tracing *t, const char *file, const char *value)
{
	char path[PATH_MAX], old[4096];
	int ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", t->dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	/* A private instance we created goes away whole: no need to record. */
	if (!t->created) {
		ret = read_file(path, old, sizeof(old));
		if (ret < 0)
			return ret;
		restorable(file, old);
		ret = save_once(t, path, old);
		if (ret < 0)
			return ret;
	}
	return tracing_write_file(path, value);
}

/**
 * tracing_read() - read a file of the selected buffer
 * @t: the tracing state
 * @file: path relative to the buffer's directory
 * @buf: filled with the contents, NUL-terminated
 * @size: size of @buf
 *
 * Return: bytes read, or -errno.
 */
int tracing_read(const struct tracing *t, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", t->dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	return read_file(path, buf, size);
}

static bool word_in(const char *list, const char *word)
{
	size_t len = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		bool start = p == list || p[-1] == ' ' || p[-1] == '[';
		char end = p[len];

		if (start && (end == '\0' || end == ' ' || end == ']' || end == '\n'))
			return true;
		p += len;
	}
	return false;
}

/**
 * tracing_has_clock() - whether the kernel offers a trace clock
 * @t: the tracing state
 * @clock: clock name
 *
 * Return: true when @clock is listed in trace_clock.
 */
bool tracing_has_clock(const struct tracing *t, const char *clock)
{
	char buf[1024];

	return tracing_read(t, "trace_clock", buf, sizeof(buf)) > 0 && word_in(buf, clock);
}

/**
 * tracing_has_tracer() - whether the kernel offers a tracer
 * @t: the tracing state
 * @tracer: tracer name
 *
 * Return: true when @tracer is listed in available_tracers.
 */
bool tracing_has_tracer(const struct tracing *t, const char *tracer)
{
	char buf[1024];

	return tracing_read(t, "available_tracers", buf, sizeof(buf)) > 0 && word_in(buf, tracer);
}

/**
 * tracing_set_clock() - choose the trace clock
 * @t: the tracing state
 * @clock: a clock name, or "" or NULL for the default: x86-tsc when the guest
 *	   has it, else the clock already in use
 * @used: set to the clock in use afterwards
 * @size: size of @used
 *
 * Return: 0, or -ENOENT when @clock does not exist.
 */
int tracing_set_clock(struct tracing *t, const char *clock, char *used, size_t size)
{
	char buf[1024];
	int ret;

	if (!clock || !*clock) {
		if (!tracing_has_clock(t, "x86-tsc"))
			goto report;
		clock = "x86-tsc";
	}
	if (!tracing_has_clock(t, clock))
		return -ENOENT;
	ret = tracing_write(t, "trace_clock", clock);
	if (ret < 0)
		return ret;
report:
	ret = tracing_read(t, "trace_clock", buf, sizeof(buf));
	if (ret < 0)
		return ret;
	restorable("trace_clock", buf);
	snprintf(used, size, "%s", buf);
	return 0;
}

/**
 * tracing_set_tracer() - choose the tracer (mmiotrace needs the top level)
 * @t: the tracing state
 * @tracer: tracer name
 *
 * Return: 0, -ENOENT when the kernel lacks it, -EINVAL for an instance and a
 * tracer other than nop, or -errno.
 */
int tracing_set_tracer(struct tracing *t, const char *tracer)
{
	if (!tracing_has_tracer(t, tracer))
		return -ENOENT;
	if (t->instance && strcmp(tracer, "mmiotrace") == 0)
		return -EINVAL;
	return tracing_write(t, "current_tracer", tracer);
}

/**
 * tracing_record_comms() - make a tracer's entries name their tasks
 * @t: the tracing state
 *
 * The kernel saves task names (saved_cmdlines) only while some trace event is
 * enabled, so a tracer alone (mmiotrace) leaves every task "<...>" in the
 * report. With a tracer other than nop and no event of ours enabled, enable
 * sched:sched_process_exec behind a filter that never matches: names are
 * recorded, no event is. Both writes are put back like every other.
 *
 * Return: 0, also when there is nothing to do or the event does not exist.
 */
int tracing_record_comms(struct tracing *t)
{
	static const char ev[] = "events/sched/sched_process_exec";
	char tracer[64], path[PATH_MAX];
	int ret;

	if (t->nr_enabled || tracing_read(t, "current_tracer", tracer, sizeof(tracer)) <= 0 ||
	    strncmp(tracer, "nop", 3) == 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", t->dir, ev);
	if (!is_dir(path))
		return 0;
	ret = tracing_write(t, "events/sched/sched_process_exec/filter", "common_pid < 0");
	if (ret == 0)
		ret = tracing_write(t, "events/sched/sched_process_exec/enable", "1");
	if (ret < 0)
		log_warn("tracer %.*s: task names will not be recorded (%s)", (int)strcspn(tracer, "\n"),
			 tracer, strerror(-ret));
	return 0;
}

/**
 * tracing_set_buffer_kb() - set the per-CPU buffer and sub-buffer sizes
 * @t: the tracing state
 * @kb: buffer_size_kb, 0 to leave it
 * @subbuf_kb: buffer_subbuf_size_kb, 0 to leave it (kernels >= 6.8)
 *
 * Return: 0, -EOPNOTSUPP when the kernel cannot change the sub-buffer size, or
 * -errno.
 */
int tracing_set_buffer_kb(struct tracing *t, unsigned int kb, unsigned int subbuf_kb)
{
	char val[32];
	int ret;

	if (subbuf_kb) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/buffer_subbuf_size_kb", t->dir);
		if (access(path, W_OK) < 0)
			return -EOPNOTSUPP;
		snprintf(val, sizeof(val), "%u", subbuf_kb);
		ret = tracing_write(t, "buffer_subbuf_size_kb", val);
		if (ret < 0)
			return ret;
		ret = tracing_reread_geometry(t);
		if (ret < 0)
			return ret;
	}
	if (kb) {
		snprintf(val, sizeof(val), "%u", kb);
		ret = tracing_write(t, "buffer_size_kb", val);
		if (ret < 0)
			return ret;
		t->sized = true;
	}
	return 0;
}

/**
 * tracing_buffer_floor() - raise a buffer that the kernel will never expand
 * @t: the tracing state
 *
 * "7 (expanded: 1408)" is a buffer the kernel expands at its first use; a bare
 * "7" is one it will not (see AGENT_BUFFER_FLOOR_KB). Unless the host sized the
 * buffer this session, such a buffer gets AGENT_BUFFER_RAISE_KB per CPU, put
 * back at the end like every other change. "X" (CPUs of different sizes) and
 * larger buffers are left as they are.
 *
 * A buffer that cannot be raised is said and streamed as it is.
 */
void tracing_buffer_floor(struct tracing *t)
{
	char val[64], *end;
	unsigned long kb;
	int ret;

	if (t->sized || tracing_read(t, "buffer_size_kb", val, sizeof(val)) <= 0)
		return;
	kb = strtoul(val, &end, 10);
	if (end == val || (*end && *end != '\n') || kb >= AGENT_BUFFER_FLOOR_KB)
		return;
	log_warn("%s: the buffer is %lu KiB per CPU, which the kernel will not expand (something "
		 "sized another buffer first): %u KiB per CPU for this session",
		 t->instance ? t->instance : "top level", kb, AGENT_BUFFER_RAISE_KB);
	snprintf(val, sizeof(val), "%u", AGENT_BUFFER_RAISE_KB);
	ret = tracing_write(t, "buffer_size_kb", val);
	if (ret < 0)
		log_warn("cannot raise buffer_size_kb to %u: %s; events may be lost",
			 AGENT_BUFFER_RAISE_KB, strerror(-ret));
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Names a peer sends become path components: refuse anything that could
 * leave events/ (the codec already refuses '/', this is the second wall).
 */
static bool component_ok(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/**
 * tracing_enable() - enable events by system and name, each a glob
 * @t: the tracing state
 * @system: system name or glob ("sched", "*")
 * @event: event name or glob
 * @filter: filter expression for each matched event, or "" for none
 * @matched: set to the number of events enabled
 *
 * Return: 0, -ENOENT when nothing matched, -EINVAL when the kernel refused the
 * filter, or -errno.
 */
int tracing_enable(struct tracing *t, const char *system, const char *event,
		   const char *filter, unsigned int *matched)
{
	char path[PATH_MAX], file[PATH_MAX];
	struct dirent *sd, *ed;
	DIR *sdir, *edir;
	int ret = 0;

	*matched = 0;
	if (!component_ok(system) || !component_ok(event))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/events", t->dir);
	sdir = opendir(path);
	if (!sdir)
		return -errno;
	while (ret == 0 && (sd = readdir(sdir))) {
		if (sd->d_name[0] == '.' || fnmatch(system, sd->d_name, 0) != 0)
			continue;
		/* "ftrace" holds the tracers' entries, never enabled as events. */
		if (strcmp(sd->d_name, "ftrace") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", t->dir, sd->d_name);
		if (!is_dir(path))
			continue;
		edir = opendir(path);
		if (!edir)
			continue;
		while ((ed = readdir(edir))) {
			if (ed->d_name[0] == '.' || fnmatch(event, ed->d_name, 0) != 0)
				continue;
			if ((size_t)snprintf(file, sizeof(file), "%s/%s", path, ed->d_name) >=
			    sizeof(file) || !is_dir(file))
				continue;
			if (filter && *filter) {
				snprintf(file, sizeof(file), "events/%s/%s/filter", sd->d_name,
					 ed->d_name);
				ret = tracing_write(t, file, filter);
				if (ret < 0) {
					ret = -EINVAL;
					break;
				}
			}
			snprintf(file, sizeof(file), "events/%s/%s/enable", sd->d_name, ed->d_name);
			ret = tracing_write(t, file, "1");
			if (ret < 0)
				break;
			(*matched)++;
		}
		closedir(edir);
	}
	closedir(sdir);
	if (ret == 0 && *matched == 0)
		return -ENOENT;
	t->nr_enabled += *matched;
	return ret;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/**
 * tracing_suggest_event() - the events closest to one that does not exist
 * @t: the tracing state
 * @system: the system asked for (no glob)
 * @event: the event asked for, "*" for a whole system
 * @buf: set to "did you mean sched:sched_switch?", or "" when nothing is close
 *	(or the name holds a glob)
 * @size: size of @buf
 *
 * A whole system is compared with the systems, an event with every
 * "system:event" of the buffer.
 */
void tracing_suggest_event(const struct tracing *t, const char *system, const char *event,
			   char *buf, size_t size)
{
	char path[PATH_MAX], word[VT_SUGGEST_NAME_MAX], name[VT_SUGGEST_NAME_MAX];
	bool whole = strcmp(event, "*") == 0;
	struct dirent *sd, *ed;
	struct vt_suggest sg;
	DIR *sdir, *edir;

	if (size)
		buf[0] = '\0';
	if (has_glob(system) || (!whole && has_glob(event)))
		return;
	snprintf(word, sizeof(word), whole ? "%s" : "%s:%s", system, event);
	vt_suggest_init(&sg, word);
	snprintf(path, sizeof(path), "%s/events", t->dir);
	sdir = opendir(path);
	if (!sdir)
		return;
	while ((sd = readdir(sdir))) {
		if (sd->d_name[0] == '.' || strcmp(sd->d_name, "ftrace") == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/events/%s", t->dir, sd->d_name) >=
		    sizeof(path) || !is_dir(path))
			continue;
		if (whole) {
			vt_suggest_add(&sg, sd->d_name);
			continue;
		}
		edir = opendir(path);
		if (!edir)
			continue;
		while ((ed = readdir(edir))) {
			/* The system's own files are no events. */
			if (ed->d_name[0] == '.' || !strcmp(ed->d_name, "enable") ||
			    !strcmp(ed->d_name, "filter"))
				continue;
			if ((size_t)snprintf(name, sizeof(name), "%s:%s", sd->d_name, ed->d_name) <
			    sizeof(name))
				vt_suggest_add(&sg, name);
		}
		closedir(edir);
	}
	closedir(sdir);
	vt_suggest_format(&sg, buf, size);
}

/* The closest words of a tracefs list file (available_tracers, trace_clock). */
static void suggest_word(const struct tracing *t, const char *file, const char *word, char *buf,
			 size_t size)
{
	struct tracing top = *t;
	char list[4096], *tok, *save = NULL;
	struct vt_suggest sg;

	if (size)
		buf[0] = '\0';
	top.dir = t->root;	/* the top level lists every clock and tracer */
	if (tracing_read(&top, file, list, sizeof(list)) <= 0)
		return;
	vt_suggest_init(&sg, word);
	for (tok = strtok_r(list, " []\n", &save); tok; tok = strtok_r(NULL, " []\n", &save))
		vt_suggest_add(&sg, tok);
	vt_suggest_format(&sg, buf, size);
}

/**
 * tracing_suggest_tracer() - the tracers closest to one the kernel does not offer
 * @t: the tracing state
 * @tracer: the tracer asked for
 * @buf: set to "did you mean ...?" or ""
 * @size: size of @buf
 */
void tracing_suggest_tracer(const struct tracing *t, const char *tracer, char *buf, size_t size)
{
	suggest_word(t, "available_tracers", tracer, buf, size);
}

/**
 * tracing_suggest_clock() - the trace clocks closest to one the kernel does not offer
 * @t: the tracing state
 * @clock: the clock asked for
 * @buf: set to "did you mean ...?" or ""
 * @size: size of @buf
 */
void tracing_suggest_clock(const struct tracing *t, const char *clock, char *buf, size_t size)
{
	suggest_word(t, "trace_clock", clock, buf, size);
}

/**
 * tracing_disable_all() - disable every event this agent enabled
 * @t: the tracing state
 *
 * Return: 0 or the first -errno.
 */
int tracing_disable_all(struct tracing *t)
{
	unsigned int i;
	int ret = 0, r;

	for (i = t->nr_saved; i-- > 0;) {
		struct saved_file *s = &t->saved[i];
		size_t len = strlen(s->path);

		if (len > 7 && strcmp(s->path + len - 7, "/enable") == 0 && strstr(s->path, "/events/")) {
			r = tracing_write_file(s->path, s->value);
			if (r < 0 && !ret)
				ret = r;
		}
	}
	if (t->created)
		ret = tracing_write(t, "events/enable", "0");
	t->nr_enabled = 0;
	return ret;
}

/**
 * tracing_on() - switch recording on or off for the selected buffer
 * @t: the tracing state
 * @on: the new state
 *
 * Return: 0 or -errno.
 */
int tracing_on(struct tracing *t, bool on)
{
	return tracing_write(t, "tracing_on", on ? "1" : "0");
}

/**
 * tracing_cpu_stats() - read per_cpu/cpuN/stats
 * @t: the tracing state
 * @cpu: the CPU
 * @buf: filled with the text
 * @size: size of @buf
 *
 * Return: bytes read, or -errno.
 */
int tracing_cpu_stats(const struct tracing *t, unsigned int cpu, char *buf, size_t size)
{
	char file[64];

	snprintf(file, sizeof(file), "per_cpu/cpu%u/stats", cpu);
	return tracing_read(t, file, buf, size);
}

/**
 * tracing_marker() - write a marker into the selected buffer
 * @t: the tracing state
 * @text: the marker text
 *
 * Return: 0 or -errno.
 */
int tracing_marker(const struct tracing *t, const char *text)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/trace_marker", t->dir);
	return tracing_write_file(path, text);
}

/**
 * tracing_only_own() - whether all that tracing_restore() would put back is
 * inside an instance the agent made (removed with its rmdir, or kept)
 * @t: the tracing state
 *
 * Return: true when the agent made the buffer's instance and changed nothing
 * outside it; false for the top level or an instance that was there before.
 */
bool tracing_only_own(const struct tracing *t)
{
	size_t len;
	unsigned int i;

	if (!t->own || !t->dir)
		return false;
	len = strlen(t->dir);
	for (i = 0; i < t->nr_saved; i++)
		if (strncmp(t->saved[i].path, t->dir, len) || t->saved[i].path[len] != '/')
			return false;
	return true;
}

/**
 * tracing_drop_kept() - remove the instance the agent kept, if any
 * @t: the tracing state
 *
 * Called when the keeping time is over, before another instance is made,
 * and when the agent exits.
 */
void tracing_drop_kept(struct tracing *t)
{
	if (!t->kept)
		return;
	if (rmdir(t->kept) < 0 && errno != ENOENT)
		log_warn("cannot remove instance %s: %m", t->kept);
	else
		log_debug("removed the kept instance %s", t->kept);
	free(t->kept);
	t->kept = NULL;
	t->kept_idle = 0;
}

/**
 * tracing_restore() - put back everything this agent changed
 * @t: the tracing state
 *
 * Writes every recorded value back in reverse order, then removes a private
 * instance the agent created, or starts the keeping time of one it keeps.
 * Keeps going past errors.
 *
 * Return: 0 or the first -errno.
 */
int tracing_restore(struct tracing *t)
{
	unsigned int i;
	int ret = 0, r;

	for (i = t->nr_saved; i-- > 0;) {
		r = tracing_write_file(t->saved[i].path, t->saved[i].value);
		if (r < 0) {
			log_warn("cannot restore %s to \"%s\": %s", t->saved[i].path,
				 t->saved[i].value, strerror(-r));
			if (!ret)
				ret = r;
		}
		free(t->saved[i].path);
		free(t->saved[i].value);
	}
	free(t->saved);
	t->saved = NULL;
	t->nr_saved = 0;
	t->nr_enabled = 0;
	t->sized = false;
	if (t->created && t->dir) {
		if (rmdir(t->dir) < 0) {
			r = -errno;
			log_warn("cannot remove instance %s: %m", t->dir);
			if (!ret)
				ret = r;
		}
		t->created = false;
	} else if (t->own && t->kept) {
		/* Not created this session, yet ours: the kept instance (tracing_use()). */
		t->kept_idle = agent_now_ns();
	}
	t->own = false;
	free(t->dir);
	free(t->instance);
	t->dir = t->instance = NULL;
	return ret;
}
