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
 *
 * This module knows no guest and no recording (they include it): its callers
 * hand it the option and the agent's capabilities.
 */
#include <errno.h>
#include <poll.h>

#include "collect.h"
#include "hold.h"
#include "vt_proto.h"

#define HOLD_NAP_MS	100	/* the host's readers look for the stop this often */

/**
 * hold_start_flags() - START's flags
 * @hold: --hold
 *
 * Return: VT_PROTO_START_HOLD with --hold, else 0 (an empty START).
 */
uint32_t hold_start_flags(bool hold)
{
	return hold ? VT_PROTO_START_HOLD : 0;
}

/**
 * hold_missing() - why a guest's agent cannot do --hold
 * @hold: --hold
 * @caps: the agent's capabilities (HELLO_REPLY)
 *
 * An older agent would refuse START's flags, or stream as usual: the caller
 * drops the guest as one that refuses the command line's events (a usage
 * error when no guest takes the command line).
 *
 * Return: NULL when it can (or --hold was not asked), else the reason.
 */
const char *hold_missing(bool hold, uint64_t caps)
{
	if (!hold || (caps & VT_PROTO_CAP_HOLD))
		return NULL;
	return "--hold: its agent cannot hold a recording in its ring buffer (no HOLD capability: "
	       "a trace-agent older than --hold); update the guest's trace-agent or record without "
	       "--hold";
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
 * @hold: --hold
 * @live_ms: --live's window (--live-stat's too), 0 without
 * @incoming: a guest is given with --incoming (a migration's destination)
 *
 * A migration's destination takes over a session the source started: a
 * held one would have to be drained by a recorder that never asked for it,
 * so --hold does not follow a migration yet.
 *
 * Return: 0, or -EINVAL after the message.
 */
int hold_usage(bool hold, unsigned int live_ms, bool incoming)
{
	if (!hold)
		return 0;
	if (live_ms) {
		collect_usage("--hold sends nothing until the recording stops: it does not go with "
			      "--live or --live-stat");
		return -EINVAL;
	}
	if (incoming) {
		collect_usage("--hold does not follow a migration: it does not go with --incoming "
			      "(record the destination without --hold)");
		return -EINVAL;
	}
	return 0;
}
