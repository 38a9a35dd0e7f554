// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host-event filter trigger: `trigger-host-filter = SYSTEM:EVENT[ if
 * FILTER]`, FILTER in the kernel's own event-filter syntax, so that the
 * kernel decides what matches and the daemon sees only what did. One private
 * tracefs instance (virtio-trace-collect-daemon-PID) holds every filtered
 * event, with the mono clock (the daemon's own, daemon_now()); the event
 * loop reads its per-CPU buffers without blocking on each turn. The instance
 * is made with libtracefs, as record's host events are (hostrec.c), and
 * removed when the daemon stops (SIGTERM and SIGINT included); one left by a
 * daemon that was killed outright is removed by the next one.
 *
 * An event seals a snapshot of the guest whose QEMU process ran it: its
 * common_pid (the kernel's word) is a thread of a QEMU the daemon knows from
 * discovery (/proc/QEMU/task/TID), and that QEMU is still one by
 * /proc/PID/exe. An event from any other process (an exec, a host daemon, a
 * guest named with its port directory, whose QEMU the daemon does not know)
 * seals a snapshot of every followed guest. A storm is one snapshot per
 * guest per cooldown: the events in between are counted, not acted on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tracefs.h>

#include "daemon/daemon-int.h"
#include "daemon/hostfilter.h"
#include "setup/qemuproc.h"
#include "trigspec.h"
#include "vt_pages.h"

#define HF_PREFIX	"virtio-trace-collect-daemon-"
#define HF_BUFFER_KB	"128"	/* per CPU: only matching events land there */
#define HF_PAGES_PER_TICK 64	/* per CPU and loop turn: a storm cannot starve the loop */

/* One filter, and what it did. */
struct hf_filter {
	char sys[COLLECT_NAME_MAX], ev[COLLECT_NAME_MAX];
	const char *spec;
	unsigned int id;
	uint64_t matched, snapshots, held, unowned;
};

/* One guest's cooldown, by name (the guests' table moves). */
struct hf_guest {
	char name[COLLECT_NAME_MAX];
	double until;
	uint64_t snapshots, held, unsealed;
};

struct hostfilter {
	struct tracefs_instance *inst;
	char name[64];
	bool mono;
	struct vt_page_fmt fmt;
	uint8_t *page;
	unsigned long pid_off;
	int *fds;
	unsigned int nr_cpus;
	struct hf_filter f[HOSTFILTER_MAX];
	unsigned int nr;
	struct hf_guest *g;
	unsigned int nr_g;
	uint64_t lost;
	pid_t last_tid;			/* owner()'s last answer, for a storm from one thread */
	char last_owner[COLLECT_NAME_MAX];
	double last_at;
};

/**
 * hostfilter_conf_add() - a trigger-host-filter line: one more filter, or
 * none at all when empty
 * @c: the configuration
 * @what: the key and where it came from, for a refusal (kept for the kernel's, at startup)
 * @val: SYSTEM:EVENT[ if FILTER]
 *
 * Only the form is checked here: the kernel checks the event and the filter
 * when the daemon starts (hostfilter_open()).
 *
 * Return: 0, -EINVAL after saying why, -ENOMEM.
 */
int hostfilter_conf_add(struct daemon_conf *c, const char *what, const char *val)
{
	struct daemon_conf_filter *n;
	struct trigspec t, t2;
	unsigned int i;

	if (!val[0]) {
		free(c->host_filters);
		c->host_filters = NULL;
		c->nr_host_filters = 0;
		return 0;
	}
	if (trigspec_split(val, &t) < 0 || strlen(val) >= sizeof(n->spec)) {
		collect_usage("%s '%s': SYSTEM:EVENT or SYSTEM:EVENT if FILTER (the kernel's event "
			      "filter syntax)", what, val);
		return -EINVAL;
	}
	for (i = 0; i < c->nr_host_filters; i++) {
		trigspec_split(c->host_filters[i].spec, &t2);
		if (!strcmp(t2.system, t.system) && !strcmp(t2.event, t.event)) {
			/* The kernel keeps one filter per event and instance: a second would replace it. */
			collect_usage("%s '%s': %s:%s has a filter already (%s): join the two with || in "
				      "one line", what, val, t.system, t.event, c->host_filters[i].where);
			return -EINVAL;
		}
	}
	if (c->nr_host_filters >= HOSTFILTER_MAX) {
		collect_usage("%s: more than %d host-event filters", what, HOSTFILTER_MAX);
		return -EINVAL;
	}
	n = realloc(c->host_filters, (c->nr_host_filters + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->host_filters = n;
	n += c->nr_host_filters++;
	snprintf(n->spec, sizeof(n->spec), "%s", val);
	snprintf(n->where, sizeof(n->where), "%s", what);
	return 0;
}

/* An instance a daemon that was killed outright left behind. */
static void remove_stale(void)
{
	char **names = tracefs_instances(NULL), *end;
	unsigned int i;

	for (i = 0; names && names[i]; i++) {
		struct tracefs_instance *inst;
		long pid;

		if (strncmp(names[i], HF_PREFIX, strlen(HF_PREFIX)))
			continue;
		pid = strtol(names[i] + strlen(HF_PREFIX), &end, 10);
		if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		inst = tracefs_instance_alloc(NULL, names[i]);
		if (inst && tracefs_instance_destroy(inst) == 0)
			log_info("removed the tracefs instance %s (its daemon, pid %ld, is gone)", names[i], pid);
		tracefs_instance_free(inst);
	}
	tracefs_list_free(names);
}

/* The kernel's words on a refused filter: error_log's last entry, else the filter file. */
static void kernel_says(struct hostfilter *hf, const struct hf_filter *f, char *buf, size_t len)
{
	char *text = tracefs_error_last(hf->inst), *p, *nl;

	if (!text || !text[0]) {
		free(text);
		text = tracefs_event_file_read(hf->inst, f->sys, f->ev, "filter", NULL);
	}
	buf[0] = '\0';
	if (!text)
		return;
	/* "[ 301.9] event filter parse error: error: Field not found\n  Command: ...": the message. */
	p = text[0] == '[' && strstr(text, "] ") ? strstr(text, "] ") + 2 : text;
	nl = strchr(p, '\n');
	if (nl)
		*nl = '\0';
	if (p == text && nl && strstr(nl + 1, "parse_error: "))
		p = strstr(nl + 1, "parse_error: ");	/* no error_log: the filter file's last line */
	collect_sanitize(buf, len, p, false);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	free(text);
}

/* The event's id, and where common_pid is (the same in every event). */
static int read_format(struct hostfilter *hf, struct hf_filter *f)
{
	char *fmt = tracefs_event_file_read(hf->inst, f->sys, f->ev, "format", NULL), *p;
	unsigned long size;
	int ret = -ENOENT;

	if (!fmt)
		return ret;
	p = strstr(fmt, "\nID: ");
	f->id = p ? strtoul(p + 5, NULL, 10) : 0;
	if (f->id && f->id <= UINT16_MAX &&
	    vt_format_field(fmt, strlen(fmt), "common_pid", &hf->pid_off, &size) == 0 && size == 4 &&
	    hf->pid_off < 64)
		ret = 0;
	free(fmt);
	return ret;
}

/* One filter into the instance: the event, its filter, enabled. */
static int add_filter(struct hostfilter *hf, struct hf_filter *f, const struct daemon_conf_filter *c)
{
	struct trigspec t;
	char why[512];

	f->spec = c->spec;
	trigspec_split(c->spec, &t);	/* checked by hostfilter_conf_add() */
	snprintf(f->sys, sizeof(f->sys), "%s", t.system);
	snprintf(f->ev, sizeof(f->ev), "%s", t.event);
	if (read_format(hf, f) < 0) {
		collect_usage("%s '%s': the host kernel has no event %s:%s (see %s/events/%s)", c->where,
			      c->spec, f->sys, f->ev, tracefs_tracing_dir(), f->sys);
		return -EINVAL;
	}
	tracefs_error_clear(hf->inst);
	if (t.filter[0] && tracefs_event_file_write(hf->inst, f->sys, f->ev, "filter", t.filter) < 0) {
		kernel_says(hf, f, why, sizeof(why));
		collect_usage("%s '%s': the kernel refused the filter: %s", c->where, c->spec,
			      why[0] ? why : "it said nothing more (no error_log)");
		return -EINVAL;
	}
	if (tracefs_event_enable(hf->inst, f->sys, f->ev) < 0) {
		kernel_says(hf, f, why, sizeof(why));
		collect_usage("%s '%s': the kernel refused to enable %s:%s%s%s", c->where, c->spec,
			      f->sys, f->ev, why[0] ? ": " : "", why);
		return -EINVAL;
	}
	return 0;
}

/* The page layout and a non-blocking reader on each CPU's buffer. */
static int open_cpus(struct hostfilter *hf)
{
	char *hp = tracefs_instance_file_read(hf->inst, "events/header_page", NULL), path[64];
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int ret = hp ? vt_page_fmt_parse(&hf->fmt, hp, strlen(hp)) : -errno;
	unsigned int cpu;

	free(hp);
	if (ret < 0)
		return ret;
	hf->page = malloc(hf->fmt.subbuf_size);
	hf->fds = calloc(n > 0 ? n : 1, sizeof(*hf->fds));
	if (!hf->page || !hf->fds)
		return -ENOMEM;
	for (cpu = 0; cpu < (unsigned int)(n > 0 ? n : 1); cpu++) {
		int fd;

		snprintf(path, sizeof(path), "per_cpu/cpu%u/trace_pipe_raw", cpu);
		/* Not the record children's: O_CLOEXEC. */
		fd = tracefs_instance_file_open(hf->inst, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0)
			hf->fds[hf->nr_cpus++] = fd;
	}
	return hf->nr_cpus ? 0 : -ENOENT;
}

static int setup(struct hostfilter *hf, const struct daemon_conf *c)
{
	unsigned int i;
	int ret;

	if (tracefs_instance_file_write(hf->inst, "tracing_on", "0") < 0)
		return -errno;
	hf->mono = tracefs_instance_file_write(hf->inst, "trace_clock", "mono") >= 0;
	tracefs_instance_file_write(hf->inst, "buffer_size_kb", HF_BUFFER_KB);
	for (i = 0; i < c->nr_host_filters; i++) {
		ret = add_filter(hf, &hf->f[i], &c->host_filters[i]);
		if (ret < 0)
			return ret;
		hf->nr++;
	}
	ret = open_cpus(hf);
	if (ret < 0) {
		log_err("tracefs instance %s: cannot read its buffers: %s", hf->name, strerror(-ret));
		return ret;
	}
	if (tracefs_instance_file_write(hf->inst, "tracing_on", "1") < 0)
		return -errno;
	return 0;
}

/**
 * hostfilter_open() - make the instance and hand the kernel the filters
 * (nothing without trigger-host-filter)
 * @d: the daemon, its configuration read
 *
 * Return: 0, -EINVAL when the kernel refused an event or a filter (said,
 * with the option and the kernel's words: a usage error), or another
 * -errno after saying why (no tracefs, not root).
 */
int hostfilter_open(struct daemon *d)
{
	struct hostfilter *hf;
	int ret;

	if (!d->conf.nr_host_filters)
		return 0;
	hf = calloc(1, sizeof(*hf));
	if (!hf)
		return -ENOMEM;
	remove_stale();
	snprintf(hf->name, sizeof(hf->name), HF_PREFIX "%d", (int)getpid());
	hf->inst = tracefs_instance_create(hf->name);
	if (!hf->inst) {
		ret = -errno;
		log_err("trigger-host-filter: cannot create the tracefs instance %s: %s (root and a "
			"mounted tracefs are needed)", hf->name, strerror(-ret));
		free(hf);
		return ret;
	}
	d->hf = hf;
	ret = setup(hf, &d->conf);
	if (ret < 0) {
		if (ret != -EINVAL)
			log_err("trigger-host-filter: tracefs instance %s: %s", hf->name, strerror(-ret));
		hostfilter_close(d);
		return ret;
	}
	log_info("host-event triggers: %u filter%s in tracefs instance %s, cooldown %.0f s per guest",
		 hf->nr, hf->nr == 1 ? "" : "s", hf->name, d->conf.host_cooldown);
	return 0;
}

static struct hf_guest *cooldown_of(struct hostfilter *hf, const char *name)
{
	struct hf_guest *n;
	unsigned int i;

	for (i = 0; i < hf->nr_g; i++)
		if (!strcmp(hf->g[i].name, name))
			return &hf->g[i];
	n = realloc(hf->g, (hf->nr_g + 1) * sizeof(*n));
	if (!n)
		return NULL;
	hf->g = n;
	n += hf->nr_g++;
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	return n;
}

/* The followed guest whose QEMU runs thread @tid, or NULL; one answer holds for a second. */
static struct dguest *owner(struct daemon *d, struct hostfilter *hf, pid_t tid)
{
	char path[64], why[200];
	double now = daemon_now();
	unsigned int i;
	uid_t uid;

	if (tid <= 0)
		return NULL;
	if (tid == hf->last_tid && now - hf->last_at < 1.0)
		return hf->last_owner[0] ? guests_find(d, hf->last_owner) : NULL;
	hf->last_tid = tid;
	hf->last_at = now;
	hf->last_owner[0] = '\0';
	for (i = 0; i < d->nr; i++) {
		struct dguest *g = &d->g[i];

		if (g->qemu_pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)g->qemu_pid, (int)tid);
		if (access(path, F_OK) == 0 && qemuproc_identify(g->qemu_pid, &uid, why, sizeof(why)) == 1) {
			snprintf(hf->last_owner, sizeof(hf->last_owner), "%s", g->name);
			return g;
		}
	}
	return NULL;
}

/* Seal a snapshot of @g for @f's event at @when (daemon_now() time), unless it cools down. */
static bool fire(struct daemon *d, struct hf_filter *f, struct dguest *g, pid_t tid, double when)
{
	struct hf_guest *c = cooldown_of(d->hf, g->name);
	double now = daemon_now();
	char reason[DAEMON_REASON_MAX + 1];

	if (!c)
		return false;
	if (g->snap.active || now < c->until) {
		c->held++;
		f->held++;
		return true;
	}
	if (!g->pid)
		return false;	/* no recording runs (yet, or any more): nothing to seal */
	snprintf(reason, sizeof(reason), "host-filter-%s", f->ev);
	if (guests_snapshot(d, g, d->conf.before, d->conf.after, reason, -1) < 0)
		return false;
	/* The window is the event's: it was read up to a loop turn later. */
	if (when > 0 && when <= now && now - when < d->conf.after)
		g->snap.trigger = when;
	c->until = now + d->conf.host_cooldown;
	c->snapshots++;
	f->snapshots++;
	log_info("%s: snapshot asked for by host event %s:%s of pid %d (%s; before %.1f s, after %.1f s)",
		 g->name, f->sys, f->ev, (int)tid, reason, d->conf.before, d->conf.after);
	return true;
}

static void matched(struct daemon *d, struct hf_filter *f, pid_t tid, double when)
{
	struct dguest *g = owner(d, d->hf, tid);
	bool any = false;
	unsigned int i;

	f->matched++;
	if (g) {
		any = fire(d, f, g, tid, when);
	} else {
		for (i = 0; i < d->nr; i++)
			if (d->g[i].present && fire(d, f, &d->g[i], tid, when))
				any = true;
	}
	if (!any)
		f->unowned++;
}

static void read_page(struct daemon *d, struct hostfilter *hf)
{
	struct vt_page_iter it;
	struct vt_page_info info;
	struct vt_event ev;
	unsigned int i;

	if (vt_page_header(&hf->fmt, hf->page, hf->fmt.subbuf_size, &info) == 0 && info.missed)
		hf->lost += info.missed_stored ? info.missed_events : 1;
	if (vt_page_iter_init(&it, &hf->fmt, hf->page, hf->fmt.subbuf_size) < 0)
		return;
	while (vt_page_iter_next(&it, &ev) == 1) {
		int32_t pid;

		if (ev.len < hf->pid_off + 4)
			continue;
		memcpy(&pid, ev.data + hf->pid_off, 4);
		for (i = 0; i < hf->nr; i++)
			if (hf->f[i].id == ev.id) {
				matched(d, &hf->f[i], (pid_t)pid, hf->mono ? ev.ts / 1e9 : 0);
				break;
			}
	}
}

/**
 * hostfilter_tick() - read what matched since the last turn, and act on it
 * @d: the daemon
 */
void hostfilter_tick(struct daemon *d)
{
	struct hostfilter *hf = d->hf;
	unsigned int cpu, n;

	if (!hf || d->stopping)
		return;
	for (cpu = 0; cpu < hf->nr_cpus; cpu++) {
		for (n = 0; n < HF_PAGES_PER_TICK; n++) {
			ssize_t got = read(hf->fds[cpu], hf->page, hf->fmt.subbuf_size);

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				break;
			if ((size_t)got < hf->fmt.subbuf_size)
				memset(hf->page + got, 0, hf->fmt.subbuf_size - got);
			read_page(d, hf);
		}
	}
}

/**
 * hostfilter_status_size() - how many bytes hostfilter_status() may write
 * @d: the daemon
 *
 * Return: bytes, 0 without host-event triggers.
 */
size_t hostfilter_status_size(const struct daemon *d)
{
	return d->hf ? 256 + d->hf->nr * 1300 + d->hf->nr_g * 160 : 0;
}

/**
 * hostfilter_status() - `daemon --status` lines: each filter's counts, each
 * guest's cooldown
 * @d: the daemon
 * @buf: where
 * @len: its size (hostfilter_status_size())
 *
 * Return: bytes written (not counting the NUL).
 */
size_t hostfilter_status(const struct daemon *d, char *buf, size_t len)
{
	const struct hostfilter *hf = d->hf;
	double now = daemon_now();
	size_t n = 0;
	unsigned int i;

	if (!hf || !len)
		return 0;
	n += snprintf(buf + n, len - n, "host-filter: tracefs instance %s, cooldown %.0f s per guest, "
		      "%llu events lost\n", hf->name, d->conf.host_cooldown, (unsigned long long)hf->lost);
	for (i = 0; i < hf->nr && n < len; i++) {
		const struct hf_filter *f = &hf->f[i];

		n += snprintf(buf + n, len - n, "host-filter %s: %llu matched, %llu snapshots, %llu held "
			      "back, %llu with no guest recording\n", f->spec, (unsigned long long)f->matched,
			      (unsigned long long)f->snapshots, (unsigned long long)f->held,
			      (unsigned long long)f->unowned);
	}
	for (i = 0; i < hf->nr_g && n < len; i++) {
		const struct hf_guest *g = &hf->g[i];

		n += snprintf(buf + n, len - n, "host-filter guest %s: %llu snapshots, %llu held back, "
			      "%llu not sealed, cooldown %.0f s left\n", g->name,
			      (unsigned long long)g->snapshots, (unsigned long long)g->held,
			      (unsigned long long)g->unsealed, g->until > now ? g->until - now : 0.0);
	}
	return n < len ? n : len - 1;
}

/**
 * hostfilter_unsealed() - @g's pending snapshot could not be sealed (its child
 * ended on its own first): when a host filter asked for it, its cooldown is
 * given back, and the next matching event asks again of the next child
 * @d: the daemon
 * @g: the guest, g->snap still saying what was asked
 */
void hostfilter_unsealed(struct daemon *d, const struct dguest *g)
{
	static const char pre[] = "host-filter-";
	struct hostfilter *hf = d->hf;
	struct hf_guest *c;
	const char *ev;
	unsigned int i;

	if (!hf || strncmp(g->snap.reason, pre, sizeof(pre) - 1))
		return;
	for (i = 0; i < hf->nr_g && strcmp(hf->g[i].name, g->name); i++)
		;
	if (i == hf->nr_g || !hf->g[i].snapshots)
		return;
	c = &hf->g[i];
	c->until = 0;
	c->snapshots--;
	c->unsealed++;
	ev = g->snap.reason + sizeof(pre) - 1;	/* the event's name, cut as the reason is */
	for (i = 0; i < hf->nr; i++)
		if (!strncmp(hf->f[i].ev, ev, strlen(ev)) && hf->f[i].snapshots) {
			hf->f[i].snapshots--;
			break;
		}
	log_info("%s: its host-filter snapshot was not sealed: no cooldown, the next matching event "
		 "asks again", g->name);
}

/**
 * hostfilter_close() - stop and remove the instance
 * @d: the daemon
 */
void hostfilter_close(struct daemon *d)
{
	struct hostfilter *hf = d->hf;
	unsigned int i;

	if (!hf)
		return;
	tracefs_instance_file_write(hf->inst, "tracing_on", "0");
	for (i = 0; i < hf->nr_cpus; i++)
		close(hf->fds[i]);
	if (tracefs_instance_destroy(hf->inst) < 0)
		log_warn("cannot remove the tracefs instance %s: %m", hf->name);
	tracefs_instance_free(hf->inst);
	free(hf->fds);
	free(hf->page);
	free(hf->g);
	free(hf);
	d->hf = NULL;
}
