// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --alive-interval: while a guest records, one STATS_REQ every S
 * seconds (session.c's part). A held session (--hold) sends no page, so
 * without it only a clock probe burst finds out that the guest rebooted or
 * its agent restarted; a STATS_REQ costs one frame each way and a handful of
 * STATS. An agent that forgot the session answers ERROR "send HELLO first",
 * which session.c's handler takes as the session's end, as for any request.
 *
 * The STATS that answer a check are not the session's statistics: they are
 * taken here and dropped (the final figures and the drain after STOP are the
 * STOP's alone). The agent answers in order, so the checks owed are answered
 * before anything sent after them, the STOP's STATS included.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "collect.h"
#include "engine.h"
#include "recording.h"
#include "session.h"
#include "session-int.h"
#include "vt_conn.h"

/* A check unanswered this long (or an interval, if longer) is overdue: a warning, once. */
#define ALIVE_BOUND_NS		(10 * NSEC_PER_SEC)

static uint64_t alive_bound_ns(const struct guest *g)
{
	uint64_t every = (uint64_t)(g->rec->o->alive_interval * NSEC_PER_SEC);

	return every > ALIVE_BOUND_NS ? every : ALIVE_BOUND_NS;
}

/**
 * sess_alive_begin() - the guest records: its checks begin, if --alive-interval asks
 * @g: the guest
 */
void sess_alive_begin(struct guest *g)
{
	double s = g->rec->o->alive_interval;

	if (s > 0)
		engine_timer_arm(sess_eng(g), &g->alive.tick, (uint64_t)(s * NSEC_PER_SEC),
				 (uint64_t)(s * NSEC_PER_SEC));
}

/**
 * sess_alive_end() - no more checks (the stop, a migration, a failure)
 * @g: the guest
 *
 * The checks owed stay owed: their answers come before the STOP's.
 */
void sess_alive_end(struct guest *g)
{
	engine_timer_cancel(sess_eng(g), &g->alive.tick);
	engine_timer_cancel(sess_eng(g), &g->alive.late);
}

/**
 * sess_alive_tick() - --alive-interval's timer: send a check when nothing else is under way
 * @arg: the guest
 *
 * Not during a probe burst (a STATS_REQ inside one ends it on the agent's
 * side), a request or a migration (sess_sync_tick()'s conditions), and not
 * while the last check is neither answered nor overdue.
 */
void sess_alive_tick(void *arg)
{
	struct guest *g = arg;
	struct guest_alive *a = &g->alive;
	int len;

	if (g->state != G_RUNNING || g->burst.active || g->req.active || g->mig.migrating ||
	    g->mig.out)
		return;
	if ((a->owed && !a->overdue) || a->owed >= GUEST_ALIVE_MAX_OWED)
		return;
	len = vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_STATS_REQ,
				 vt_conn_next_seq(g->ctl.conn));
	if (len < 0 || sess_send_frame(g, len) < 0)
		return;
	a->seqs[a->owed++] = vt_conn_seq(g->ctl.conn);
	a->overdue = false;
	a->sent_ns = engine_now_ns();
	engine_timer_arm(sess_eng(g), &a->late, alive_bound_ns(g), 0);
}

/**
 * sess_alive_late() - the newest check is overdue: say so once, let the next one go
 * @arg: the guest
 *
 * A loaded guest answers late, not never: this is no failure. A check that
 * an agent which then restarted never answered is followed by one it does.
 */
void sess_alive_late(void *arg)
{
	struct guest *g = arg;
	struct guest_alive *a = &g->alive;

	if (!a->owed || g->state != G_RUNNING)
		return;
	a->overdue = true;
	if (a->warned)
		return;
	a->warned = true;
	log_warn("guest %s: no answer to a liveness check (STATS_REQ) within %.0f s: a loaded "
		 "guest? The checks go on (said once)", g->name, alive_bound_ns(g) / 1e9);
}

/* The oldest check owed (or the one @i) is answered. */
static void answered(struct guest *g, unsigned int i)
{
	struct guest_alive *a = &g->alive;

	if (a->owed == 1)
		log_debug("guest %s: liveness check answered in %.1f ms", g->name,
			  (engine_now_ns() - a->sent_ns) / 1e6);
	memmove(&a->seqs[i], &a->seqs[i + 1], (a->owed - i - 1) * sizeof(a->seqs[0]));
	if (!--a->owed) {
		a->overdue = false;
		engine_timer_cancel(sess_eng(g), &a->late);
	}
}

/**
 * sess_alive_stats() - take a STATS that answers a liveness check
 * @g: the guest
 * @st: the decoded STATS
 *
 * While a check is owed, every STATS is its answer (the agent answers in
 * order): dropped, and the series' LAST answers it.
 *
 * Return: true when @st was a check's, and is not the session's statistics.
 */
bool sess_alive_stats(struct guest *g, const struct vt_proto_stats *st)
{
	if (!g->alive.owed)
		return false;
	if (st->cpu == VT_PROTO_CPU_ALL && (st->flags & VT_PROTO_STATS_LAST))
		answered(g, 0);
	return true;
}

/**
 * sess_alive_refused() - an ERROR that may answer a liveness check
 * @g: the guest
 * @ref_seq: the request the ERROR names
 *
 * "send HELLO first" never comes here: session.c ends the session on it.
 *
 * Return: true when it answered a check (the agent is there, the error is its own).
 */
bool sess_alive_refused(struct guest *g, uint32_t ref_seq)
{
	unsigned int i;

	for (i = 0; ref_seq && i < g->alive.owed; i++)
		if (g->alive.seqs[i] == ref_seq) {
			answered(g, i);
			return true;
		}
	return false;
}
