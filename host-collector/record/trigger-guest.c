// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --trigger-guest-filter 'SYS:EV[ if FILTER]': the guest decides, in
 * its kernel, which events match. Its agent (WATCH, capability WATCH) puts
 * the event with the filter into an instance of its own and sends TRIGGER
 * for a match, one per TRIG_GUEST_INTERVAL_MS at most. An older agent is
 * recorded as ever, without triggers, and said so.
 *
 * Nothing a guest sends is trusted: a malformed TRIGGER is a protocol error
 * (the caller counts those and cuts a guest off after too many); one that
 * is well-formed but unasked, names another event, goes back in guest time
 * or comes sooner than half the interval after the last one taken is
 * counted and ignored, and the guest goes on being recorded. Each one taken
 * is a line on --trigger-fd (the daemon's pipe: it seals a snapshot of this
 * guest) and in the log.
 *
 * The same descriptor carries QMP's GUEST_PANICKED (qmp.c): "panic NAME
 * ACTION", the first one of a recording only (a recording is one boot of
 * its guest: QMP's RESET ends it), the rest counted in the log. Nothing on
 * the line is the guest's: its name is the host's, the action one of QEMU's
 * words.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "engine.h"
#include "guest.h"
#include "recording.h"
#include "text.h"
#include "trigspec.h"
#include "trigger-guest.h"
#include "vt_conn.h"

/**
 * trig_guest_parse() - --trigger-guest-filter's value
 * @o: record's options
 * @spec: SYS:EV, or SYS:EV if FILTER (the kernel's filter syntax)
 *
 * Return: 0, or -EINVAL after the usage message.
 */
int trig_guest_parse(struct record_opts *o, const char *spec)
{
	int ret = trigspec_parse(spec, &o->trig, "--trigger-guest-filter");

	if (ret == 0)
		o->trig_guest = spec;
	return ret;
}

/**
 * trig_guest_fd() - --trigger-fd's value: an open descriptor, made non-blocking
 * @o: record's options
 * @arg: the descriptor's number
 *
 * Return: 0, or -EINVAL after the usage message.
 */
int trig_guest_fd(struct record_opts *o, const char *arg)
{
	char *end;
	long fd = strtol(arg, &end, 10);
	int fl;

	if (*end || end == arg || fd < 3 || fd > 65535 || (fl = fcntl((int)fd, F_GETFL)) < 0 ||
	    (fl & O_ACCMODE) == O_RDONLY) {
		collect_usage("--trigger-fd '%s': an open descriptor (3 or more) to write to", arg);
		return -EINVAL;
	}
	fcntl((int)fd, F_SETFL, fl | O_NONBLOCK);
	fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	o->trig_fd = (int)fd;
	return 0;
}

/**
 * trig_guest_applies() - does the WATCH step apply to @g?
 * @g: the guest, after HELLO
 *
 * Return: true with --trigger-guest-filter and an agent that has WATCH; an
 * older agent is recorded without it, with a warning.
 */
bool trig_guest_applies(struct guest *g)
{
	if (!g->rec->o->trig_guest)
		return false;
	if (g->agent.caps & VT_PROTO_CAP_WATCH)
		return true;
	log_warn("guest %s: its agent cannot watch a guest event (no WATCH capability: a "
		 "trace-agent older than --trigger-guest-filter): recorded without guest triggers",
		 g->name);
	return false;
}

/**
 * trig_guest_encode() - WATCH, into the connection's frame
 * @g: the guest
 *
 * Return: the frame's length, or -errno.
 */
int trig_guest_encode(struct guest *g)
{
	const struct record_opts *o = g->rec->o;
	struct vt_proto_watch w = { TRIG_GUEST_INTERVAL_MS, o->trig.system, o->trig.event,
				    o->trig.filter };

	g->trig.watching = true;
	return vt_proto_enc_watch(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
				  vt_conn_next_seq(g->ctl.conn), &w);
}

/**
 * trig_guest_rewatched() - the agent's answer to the WATCH sent again after
 * --incoming's takeover
 * @g: the guest, recording on this host
 * @err: 0 (OK), or the agent's -errno (its text in g->reply_text)
 *
 * A refusal costs the triggers, never the recording: the guest records on,
 * its TRIGGERs ignored as unasked.
 */
void trig_guest_rewatched(struct guest *g, int err)
{
	const struct record_opts *o = g->rec->o;

	if (err < 0) {
		g->trig.watching = false;
		log_warn("guest %s: --trigger-guest-filter '%s': its agent did not watch again after the "
			 "takeover: %s (%s): recorded on without guest triggers", g->name, o->trig_guest,
			 g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	log_info("guest %s: watching %s:%s again after the takeover", g->name, o->trig.system,
		 o->trig.event);
}

/* Why a well-formed TRIGGER is not taken, or NULL. */
static const char *refuse(const struct guest *g, const struct vt_proto_trigger *t, uint64_t now)
{
	const struct record_opts *o = g->rec->o;
	size_t ls = strlen(o->trig.system);

	/* The agent keeps a watch across a migration: the source's collector asked for it. */
	if (!g->trig.watching && !o->trig_guest && g->mig.seen.resumed)
		return "a watch the host it came from asked for (no --trigger-guest-filter here)";
	if (!g->trig.watching)
		return "no WATCH asked for it";
	if (strncmp(t->event, o->trig.system, ls) || t->event[ls] != ':' ||
	    strcmp(t->event + ls + 1, o->trig.event))
		return "another event than the one watched";
	if (t->timestamp < g->trig.last_ts)
		return "its time is before the last one's";
	if (g->trig.last_ns && now - g->trig.last_ns < TRIG_GUEST_INTERVAL_MS * 1000000ull / 2)
		return "over the rate";
	return NULL;
}

/* One line on --trigger-fd (under PIPE_BUF: written whole, never mixed with another). */
static void pass_on(struct guest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void pass_on(struct guest *g, const char *fmt, ...)
{
	char line[COLLECT_NAME_MAX + VT_PROTO_MAX_NAME + 64];
	va_list ap;
	int n;

	if (g->rec->o->trig_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(line) && write(g->rec->o->trig_fd, line, (size_t)n) != n)
		log_warn("guest %s: the trigger could not be passed on (--trigger-fd: %s)", g->name,
			 strerror(errno));
}

/**
 * trig_guest_got() - a TRIGGER from @g's agent
 * @g: the guest
 * @m: the message
 *
 * Return: 0 (taken, or counted and ignored), -EBADMSG for a malformed one.
 */
int trig_guest_got(struct guest *g, const struct vt_proto_msg *m)
{
	struct vt_proto_trigger t;
	uint64_t now = engine_now_ns();
	const char *why;
	char name[VT_PROTO_MAX_NAME];

	if (vt_proto_dec_trigger(m, &t) < 0)
		return -EBADMSG;
	collect_sanitize(name, sizeof(name), t.event, false);
	why = refuse(g, &t, now);
	if (why) {
		g->trig.ignored++;
		/* The 1st, 2nd, 4th, 8th...: a flood costs a few lines. */
		if (!(g->trig.ignored & (g->trig.ignored - 1)))
			log_warn("guest %s: TRIGGER %s ignored: %s (%" PRIu64 " ignored so far)",
				 g->name, name, why, g->trig.ignored);
		return 0;
	}
	g->trig.taken++;
	g->trig.last_ns = now;
	g->trig.last_ts = t.timestamp;
	g->trig.suppressed += t.suppressed;
	log_info("guest %s: trigger: %s at guest time %" PRIu64 " (%" PRIu32 " more matches held "
		 "back by the agent)", g->name, name, t.timestamp, t.suppressed);
	pass_on(g, "trigger-guest %s %s %" PRIu64 "\n", g->name, name, t.timestamp);
	return 0;
}

/**
 * trig_guest_panic() - QMP's GUEST_PANICKED for @g: "panic NAME ACTION" on
 * --trigger-fd, for the first of this recording
 * @g: the guest
 * @action: QEMU's action, one of its words (qmp.c)
 */
void trig_guest_panic(struct guest *g, const char *action)
{
	g->trig.panics++;
	if (g->trig.panics > 1) {
		/* The 2nd, 4th, 8th...: a guest that keeps saying so costs a few lines. */
		if (!(g->trig.panics & (g->trig.panics - 1)))
			log_warn("guest %s: GUEST_PANICKED again: not passed on (one per recording; "
				 "%" PRIu64 " so far)", g->name, g->trig.panics);
		return;
	}
	pass_on(g, "panic %s %s\n", g->name, action);
}
