/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of a guest's session share (session.c and session-*.c:
 * connection and dispatch, streams, metadata, probe bursts, migration out,
 * setup, stop). They were static functions of one file; they are not an
 * interface, and nothing outside record/ may call them: record/'s CPPFLAGS
 * define VT_RECORD_INTERNAL, no other folder's do.
 */
#ifndef RECORD_SESSION_INT_H
#define RECORD_SESSION_INT_H

#ifndef VT_RECORD_INTERNAL
#error "session-int.h is record/'s own: include record/session.h"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "qmp.h"
#include "session.h"
#include "vt_proto.h"

/*
 * The final sync (at the stop) has a few seconds of its own, apart from the
 * delivery of pages: past them the burst ends with the replies it has, so a
 * guest slow to answer probes never holds a stop whose pages are in.
 */
#define FINAL_SYNC_NS		(3 * NSEC_PER_SEC)
#define ACCEPT_TIMEOUT_NS	(120 * NSEC_PER_SEC)
#define DRAIN_CHECK_NS		(20 * NSEC_PER_MSEC)
#define META_LIMIT		(128ull << 20)

/* Setup, one step after the other (g->setup.step). */
enum {
	ST_HELLO, ST_LASTBOOT, ST_INSTANCE, ST_CLOCK, ST_BUFFER, ST_BUDGET, ST_TRACER, ST_EVENTS, ST_FLUSH,
	ST_WATCH, ST_META, ST_STREAMS, ST_START, ST_SYNC, ST_RUNNING,
};

/**
 * struct guest_transition - a move a guest may make (session-life.c)
 * @from: the state it is in
 * @to: the state it may go to
 * @waits: NULL, or while this holds the move waits (a stop deferred until an
 *	exchange under way ends: g->stop.deferred, guest_take_deferred_stop())
 * @defer_only: the move is only ever deferred: when the stop is taken the
 *	guest is in another state
 * @what: what the move means, for --verbose and session.h's diagram
 */
struct guest_transition {
	enum guest_state from, to;
	bool (*waits)(const struct guest *g);
	bool defer_only;
	const char *what;
};

/* session-life.c: the allowed moves and the one function that makes them */
extern const struct guest_transition guest_transitions[];
extern const size_t guest_nr_transitions;
const struct guest_transition *guest_transition_find(enum guest_state from, enum guest_state to);
int guest_set_state(struct guest *g, enum guest_state to, const char *why);
bool guest_take_deferred_stop(struct guest *g);

/* session.c: the connection: requests, replies, dispatch */
struct engine *sess_eng(const struct guest *g);
void sess_changed(struct guest *g);
void sess_burst_abort(struct guest *g);
void sess_ctl_close(struct guest *g);
void sess_msgs_summary(struct guest *g);
void sess_conn_hook(void *arg, bool tx, uint16_t type, uint32_t seq);
int sess_send_frame(struct guest *g, int len);
bool sess_ctl_writable(void *arg, int revents);
void sess_req_timeout(void *arg);
int sess_request(struct guest *g, int len, uint16_t want, void (*done)(struct guest *g, int err));
void sess_check_drained(struct guest *g);
void sess_drain_tick(void *arg);
bool sess_ctl_readable(void *arg, int revents);

/* session-streams.c: the data streams */
int sess_open_streams(struct guest *g);
int sess_take_connection(struct guest *g, int lfd, const char *path, bool taken, int *fd);
void sess_listen_streams(struct guest *g);

/* session-meta.c: the metadata bundle and the kallsyms cache */
void sess_fetch_meta(struct guest *g, uint32_t flags, void (*done)(struct guest *g, int err));
bool sess_kallsyms_from_cache(struct guest *g);

/* session-probe.c: the clock probe bursts */
void sess_burst_timeout(void *arg);
void sess_burst_budget(void *arg);
void sess_got_reply(struct guest *g, const struct vt_proto_msg *m);
void sess_burst_run(struct guest *g, const char *when, void (*done)(struct guest *g, int err));
void sess_running_burst_done(struct guest *g, int err);
void sess_kvm_tick(void *arg);
void sess_sync_tick(void *arg);
void sess_resumed(struct guest *g);

/* session-alive.c: --alive-interval's checks */
void sess_alive_begin(struct guest *g);
void sess_alive_end(struct guest *g);
void sess_alive_tick(void *arg);
void sess_alive_late(void *arg);
bool sess_alive_stats(struct guest *g, const struct vt_proto_stats *st);
bool sess_alive_refused(struct guest *g, uint32_t ref_seq);

/* session-migrate.c: migration out */
void sess_mig_clock(struct guest *g);
void sess_migrated_done(struct guest *g);
void sess_migrated_check(struct guest *g);
void sess_qmp_event(void *guest, enum qmp_ev ev, const char *detail);

/* session-setup.c: the setup and --incoming's takeover */
void sess_setup_next(struct guest *g);
const char *sess_step_what(unsigned int step);

/* session-stop.c: the stop */
void sess_finish(struct guest *g);
void sess_reset_done(void *arg);
void sess_qemu_end_done(void *arg);
void sess_watch_qemu(struct guest *g, struct engine *e);
void sess_unwatch_qemu(struct guest *g);
void sess_stop_timeout(void *arg);

#endif
