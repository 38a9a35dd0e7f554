// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * WATCH: a guest event, with the kernel's filter, that triggers the host's
 * flight recorder. The event goes into a private instance of the watch's own
 * (not the recorded buffer, whose events the host chose), so the kernel
 * decides which events match and the agent sees only those: it reads the
 * instance's trace_pipe, a line per match, and takes each line's timestamp.
 * The instance's clock is the recorded buffer's, so the time falls on the
 * recording's timeline. The agent rate-limits itself: one TRIGGER per
 * interval at most, the matches in between counted in the next.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "watch.h"

#define WATCH_SUFFIX		"-watch"	/* after the recorded buffer's instance name */
#define WATCH_BUFFER_KB		"64"	/* per CPU: the matches wait here until read */
#define WATCH_READ_MAX		(64 * 1024)	/* bytes read in one turn of the loop */

/* Writes @value into @file under the watch's instance; 0 or -errno. */
static int put(const struct watch *w, const char *file, const char *value)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", w->dir, file);
	return tracing_write_file(path, value);
}

static int make_instance(struct watch *w, const char *root, const char *name)
{
	snprintf(w->dir, sizeof(w->dir), "%s/instances/%s" WATCH_SUFFIX, root, name);
	/* One a killed agent left behind is emptied by removing it. */
	if (mkdir(w->dir, 0750) < 0 && (errno != EEXIST || rmdir(w->dir) < 0 ||
					mkdir(w->dir, 0750) < 0))
		return -errno;
	w->made = true;
	return 0;
}

/**
 * watch_start() - watch @req's event, replacing any earlier watch
 * @w: the watch
 * @root: the tracefs mount
 * @name: the recorded buffer's instance name: the watch's is NAME-watch
 * @req: the host's WATCH
 * @clock: the recorded buffer's trace clock ("" to leave the default)
 * @why: for the ERROR's text
 * @size: of @why
 *
 * Return: 0; -ENOENT for an event the kernel does not have, -EINVAL for a
 * filter it refused, other -errno.
 */
int watch_start(struct watch *w, const char *root, const char *name,
		const struct vt_proto_watch *req, const char *clock, char *why, size_t size)
{
	char file[2 * VT_PROTO_MAX_NAME + 32];
	int ret;

	watch_stop(w);
	ret = make_instance(w, root, name);
	if (ret < 0) {
		snprintf(why, size, "cannot make the instance %s: %s", w->dir, strerror(-ret));
		return ret;
	}
	put(w, "buffer_size_kb", WATCH_BUFFER_KB);
	put(w, "buffer_percent", "0");	/* a match wakes the reader at once */
	if (clock[0])
		put(w, "trace_clock", clock);
	snprintf(file, sizeof(file), "events/%s/%s/filter", req->system, req->event);
	ret = put(w, file, req->filter[0] ? req->filter : "0");
	if (ret == -ENOENT) {
		snprintf(why, size, "no event %s:%s", req->system, req->event);
		goto err_stop;
	}
	if (ret < 0) {
		snprintf(why, size, "the kernel refused the filter '%s' (%s)", req->filter, strerror(-ret));
		ret = -EINVAL;
		goto err_stop;
	}
	snprintf(file, sizeof(file), "events/%s/%s/enable", req->system, req->event);
	ret = put(w, file, "1");
	if (ret < 0) {
		snprintf(why, size, "cannot enable %s:%s: %s", req->system, req->event, strerror(-ret));
		goto err_stop;
	}
	snprintf(file, sizeof(file), "%s/trace_pipe", w->dir);
	w->fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (w->fd < 0) {
		ret = -errno;
		snprintf(why, size, "cannot open trace_pipe: %s", strerror(-ret));
		goto err_stop;
	}
	snprintf(w->name, sizeof(w->name), "%s:%s", req->system, req->event);
	snprintf(w->match, sizeof(w->match), " %s: ", req->event);
	w->interval_ns = req->interval_ms * 1000000ll;
	w->last_ns = 0;
	w->held = w->matches = w->sent = 0;
	w->len = 0;
	w->skip = false;
	return 0;
err_stop:
	watch_stop(w);
	return ret;
}

/**
 * watch_stop() - end the watch and remove its instance
 * @w: the watch (one never started is left as it is)
 */
void watch_stop(struct watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (w->made && rmdir(w->dir) < 0)
		log_warn_local("cannot remove %s: %m", w->dir);
	w->made = false;
}

/*
 * The time of a trace_pipe line: "COMM-PID [CPU] FLAGS SECS.USECS: EVENT: ..."
 * (or a clock's counts, without a dot). False for a line that is not an
 * event of ours (a lost-events line, a marker written into the instance).
 */
static bool line_time(const struct watch *w, const char *line, uint64_t *ts)
{
	const char *at = strstr(line, w->match), *p, *dot = NULL;
	uint64_t v = 0, frac = 0;
	unsigned int digits = 0;

	if (!at || at == line)
		return false;
	/* Back over the timestamp and the ':' after it. */
	p = at;
	if (p[-1] != ':')
		return false;
	for (p -= 2; p >= line && ((*p >= '0' && *p <= '9') || *p == '.'); p--)
		if (*p == '.')
			dot = p;
	for (p++; *p != ':'; p++) {
		if (*p == '.')
			continue;
		if (v > UINT64_MAX / 10)
			return false;
		if (dot && p > dot) {
			if (digits < 9)
				frac = frac * 10 + (uint64_t)(*p - '0'), digits++;
		} else {
			v = v * 10 + (uint64_t)(*p - '0');
		}
	}
	if (!dot) {
		*ts = v;
		return true;
	}
	for (; digits < 9; digits++)
		frac *= 10;
	*ts = v * 1000000000ull + frac;
	return true;
}

/* One line: a match; the first one after the interval is the next trigger. */
static void one_line(struct watch *w, const char *line, long long now, struct vt_proto_trigger *t,
		     bool *fire)
{
	uint64_t ts;

	if (!line_time(w, line, &ts))
		return;
	w->matches++;
	if (*fire || (w->last_ns && now - w->last_ns < w->interval_ns)) {
		w->held++;
		return;
	}
	*fire = true;
	w->last_ns = now;
	t->timestamp = ts;
	t->suppressed = (uint32_t)(w->held > UINT32_MAX ? UINT32_MAX : w->held);
	t->event = w->name;
	w->held = 0;
}

/**
 * watch_read() - read the matches that are in
 * @w: a started watch
 * @now: agent_now_ns()
 * @t: filled when the return is 1 (@t->event points into @w)
 *
 * Return: 1 when a TRIGGER is to go out, 0 when none, -errno when the
 * instance cannot be read (the watch is then stopped).
 */
int watch_read(struct watch *w, long long now, struct vt_proto_trigger *t)
{
	size_t total = 0, start;
	bool fire = false;
	char *nl;
	ssize_t n;

	while (w->fd >= 0 && total < WATCH_READ_MAX) {
		n = read(w->fd, w->buf + w->len, sizeof(w->buf) - 1 - w->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			int ret = n < 0 ? -errno : -EIO;

			log_warn("watch %s: cannot read its instance: %s", w->name, strerror(-ret));
			watch_stop(w);
			return ret;
		}
		total += (size_t)n;
		w->len += (size_t)n;
		w->buf[w->len] = '\0';
		for (start = 0; (nl = strchr(w->buf + start, '\n')); start = (size_t)(nl - w->buf) + 1) {
			*nl = '\0';
			if (!w->skip)
				one_line(w, w->buf + start, now, t, &fire);
			w->skip = false;
		}
		memmove(w->buf, w->buf + start, w->len - start);
		w->len -= start;
		if (w->len == sizeof(w->buf) - 1) {	/* a line longer than the buffer */
			w->buf[w->len] = '\0';
			one_line(w, w->buf, now, t, &fire);
			w->len = 0;
			w->skip = true;
		}
	}
	if (fire)
		w->sent++;
	return fire;
}

/**
 * watch_active() - is a watch running?
 * @w: the watch
 *
 * Return: true while its instance is read.
 */
bool watch_active(const struct watch *w)
{
	return w->fd >= 0;
}
