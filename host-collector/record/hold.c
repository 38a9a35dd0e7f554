// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --hold: a flight recorder. The guest's agent (START's HOLD flag)
 * and the host's recorder keep their ring buffers in overwrite mode and read
 * nothing while recording: nothing crosses the virtio ports, and the rings
 * keep the newest events, a buffer's worth per CPU. At the stop, tracing goes
 * off and each ring is drained whole, as a stop always drains: the recording
 * is the last window before the stop, in the usual files. The kernel's
 * overrun counts what was overwritten (and the first page read says as
 * much in its lost-events count); the manifest calls it overwritten.
 *
 * The clock needs nothing else: the KVM offsets are followed for the whole
 * recording (tscwatch.c reads its own instance all along), and the probe
 * bursts run at the start and after the stop, around the held events.
 */
#include <errno.h>
#include <poll.h>

#include "collect.h"
#include "hold.h"
#include "record.h"
#include "session.h"
#include "vt_proto.h"

#define HOLD_NAP_MS	100	/* the host's readers look for the stop this often */

/**
 * hold_start_flags() - START's flags for a guest
 * @g: the guest, past its HELLO
 *
 * Return: VT_PROTO_START_HOLD with --hold, else 0 (an empty START).
 */
uint32_t hold_start_flags(const struct guest *g)
{
	return g->rec->o->hold ? VT_PROTO_START_HOLD : 0;
}

/**
 * hold_refused() - refuse a guest whose agent cannot hold, with --hold
 * @g: the guest, its agent's capabilities known (HELLO_REPLY)
 *
 * An older agent would refuse START's flags, or stream as usual: the guest
 * is dropped as one that refuses the command line's events is (a usage
 * error when no guest takes the command line).
 *
 * Return: true when it was refused and failed.
 */
bool hold_refused(struct guest *g)
{
	if (!g->rec->o->hold || (g->agent.caps & VT_PROTO_CAP_HOLD))
		return false;
	g->setup.refused = true;
	session_fail(g, "--hold: its agent (%s) cannot hold a recording in its ring buffer (no HOLD "
		     "capability: a trace-agent older than --hold); update the guest's trace-agent or "
		     "record without --hold", g->agent.software[0] ? g->agent.software : "unknown");
	return true;
}

/**
 * hold_wait() - a host CPU's reader, until the stop: the ring keeps the rest
 * @stopping: set by hostrec_stop()
 */
void hold_wait(atomic_bool *stopping)
{
	while (!atomic_load(stopping))
		poll(NULL, 0, HOLD_NAP_MS);
}

/**
 * hold_usage() - refuse what --hold cannot go with (record's command line)
 * @o: the options read
 *
 * Return: 0, or -EINVAL after the message.
 */
int hold_usage(const struct record_opts *o)
{
	if (!o->hold || !o->live_ms)
		return 0;
	collect_usage("--hold sends nothing until the recording stops: it does not go with --live "
		      "or --live-stat");
	return -EINVAL;
}
