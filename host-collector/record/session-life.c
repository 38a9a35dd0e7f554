// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's life as data (session.c's part): the states it may go from and
 * to, one row each, and the one function that moves it. A move the table
 * does not hold is our bug, never the guest's doing: it is refused, said as
 * an internal error, and the guest is dropped alone (the others go on).
 *
 * A stop that must wait for an exchange under way (the full metadata after
 * START, or --incoming's takeover) is a transition too: the row that allows
 * it says what it waits for, guest_set_state() marks the stop deferred, and
 * guest_take_deferred_stop() carries it out once the exchange ended.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "collect.h"
#include "session.h"
#include "session-int.h"
#include "vt_proto.h"

static const char *const state_names[] = {
	[G_NEW] = "new", [G_HELLO] = "hello", [G_CONFIG] = "configure", [G_META] = "meta",
	[G_RUNNING] = "running", [G_STOPPING] = "stopping",
	[G_DRAINING] = "draining", [G_FINISHING] = "finishing", [G_DONE] = "done",
	[G_FAILED] = "failed",
};

/**
 * session_state_name() - a guest state, for messages
 * @s: the state
 *
 * Return: its name.
 */
const char *session_state_name(enum guest_state s)
{
	return (unsigned int)s <= G_FAILED ? state_names[s] : "?";
}

/* The full metadata asked for after START is on its way: the agent sends it before it reads a STOP. */
static bool meta_under_way(const struct guest *g)
{
	return g->req.active && g->req.want == VT_PROTO_META;
}

/* --incoming: RESUME is answered at once; the session is taken over, then stopped. */
static bool takeover_under_way(const struct guest *g)
{
	return g->mig.incoming && g->req.active && g->req.want == VT_PROTO_SESSION;
}

/*
 * Every move a guest may make. session.h's diagram is drawn from these rows
 * (tests/unit/test-guest-life checks it): change both together.
 */
const struct guest_transition guest_transitions[] = {
	{ G_NEW, G_HELLO, NULL, false, "the control port is open: HELLO" },
	{ G_HELLO, G_CONFIG, NULL, false, "the agent answered: configure" },
	{ G_HELLO, G_RUNNING, NULL, false, "--incoming: the agent's session taken over" },
	{ G_HELLO, G_STOPPING, takeover_under_way, true, "a stop waits for the takeover, then runs" },
	{ G_CONFIG, G_META, NULL, false, "configured: the setup's metadata" },
	{ G_META, G_RUNNING, NULL, false, "the agent records (START)" },
	{ G_RUNNING, G_STOPPING, meta_under_way, false, "STOP sent (after the metadata under way)" },
	{ G_RUNNING, G_DRAINING, NULL, false, "migrated out: draining its ports" },
	{ G_STOPPING, G_DRAINING, NULL, false, "STOPPED: its last pages" },
	{ G_DRAINING, G_DRAINING, NULL, false, "migrated out while draining" },
	{ G_DRAINING, G_FINISHING, NULL, false, "every byte in: final sync, metadata, BYE" },
	{ G_DRAINING, G_DONE, NULL, false, "migrated out: drained" },
	{ G_FINISHING, G_DRAINING, NULL, false, "migrated out while finishing" },
	{ G_FINISHING, G_DONE, NULL, false, "BYE answered" },
	{ G_NEW, G_FAILED, NULL, false, "dropped" },
	{ G_HELLO, G_FAILED, NULL, false, "dropped" },
	{ G_CONFIG, G_FAILED, NULL, false, "dropped" },
	{ G_META, G_FAILED, NULL, false, "dropped" },
	{ G_RUNNING, G_FAILED, NULL, false, "dropped" },
	{ G_STOPPING, G_FAILED, NULL, false, "dropped" },
	{ G_DRAINING, G_FAILED, NULL, false, "dropped" },
	{ G_FINISHING, G_FAILED, NULL, false, "dropped" },
};
const size_t guest_nr_transitions = sizeof(guest_transitions) / sizeof(guest_transitions[0]);

/**
 * guest_transition_find() - the row that allows a move
 * @from: the state it is in
 * @to: the state it would go to
 *
 * Return: the row, or NULL when the move is not allowed.
 */
const struct guest_transition *guest_transition_find(enum guest_state from, enum guest_state to)
{
	size_t i;

	for (i = 0; i < guest_nr_transitions; i++)
		if (guest_transitions[i].from == from && guest_transitions[i].to == to)
			return &guest_transitions[i];
	return NULL;
}

/**
 * guest_set_state() - move a guest to another state, as guest_transitions[]
 *	allows; with --verbose, say so
 * @g: the guest
 * @to: the state it goes to
 * @why: what made it move, for --verbose
 *
 * A move the table does not hold is refused: an internal error, and the
 * guest is failed (from a state that can still fail).
 *
 * Return: 0 when it moved; -EINPROGRESS when the move is a stop that waits
 * for an exchange under way (g->stop.deferred, guest_take_deferred_stop());
 * -EPERM when refused.
 */
int guest_set_state(struct guest *g, enum guest_state to, const char *why)
{
	const struct guest_transition *t = guest_transition_find(g->state, to);
	enum guest_state from = g->state;

	if (!t || (t->defer_only && !t->waits(g))) {
		log_err("guest %s: internal error: no move from %s to %s (%s): refused", g->name,
			session_state_name(from), session_state_name(to), why ? why : "?");
		if (to != G_FAILED)
			session_fail(g, "internal error: its state cannot go from %s to %s",
				     session_state_name(from), session_state_name(to));
		return -EPERM;
	}
	if (t->waits && t->waits(g)) {
		if (!g->stop.deferred)
			log_debug("guest %s: %s: the stop waits (%s)", g->name, session_state_name(from),
				  t->what);
		g->stop.deferred = true;
		return -EINPROGRESS;
	}
	log_debug("guest %s: %s -> %s (%s)", g->name, session_state_name(from), session_state_name(to),
		  why ? why : t->what);
	g->state = to;
	if (to >= G_STOPPING)
		g->stop.deferred = false;	/* a stop that waited is taken, or has no reason left */
	return 0;
}

/**
 * guest_take_deferred_stop() - the exchange a stop waited for ended: stop now
 * @g: the guest
 *
 * Return: true if a stop was deferred (and is now carried out).
 */
bool guest_take_deferred_stop(struct guest *g)
{
	if (!g->stop.deferred || session_finished(g))
		return false;
	log_debug("guest %s: %s: the stop that waited is taken", g->name, session_state_name(g->state));
	g->stop.deferred = false;
	session_stop(g);
	return true;
}
