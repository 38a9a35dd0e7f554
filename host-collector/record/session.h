/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A traced guest and its agent's session (session.c and its parts,
 * session-*.c): each guest a state machine of its own over its control
 * connection, driven by engine events.
 * Its clock (sync.c), ports (attach.c) and QMP (qmp.c) hang off it; struct
 * guest itself is in guest.h.
 */
#ifndef RECORD_SESSION_H
#define RECORD_SESSION_H

/*
 * struct guest is record/'s own: only record/ (whose CPPFLAGS define
 * VT_RECORD_INTERNAL) and its white-box tests, which say so in theirs,
 * may include this; the other folders take what they need from record.h.
 */
#ifndef VT_RECORD_INTERNAL
#error "record/session.h is record/'s own (struct guest): not for other folders"
#endif

#include <stdbool.h>

#include "guest.h"

/*
 * Every guest goes through its states (enum guest_state, guest.h) on its
 * own, driven by engine events:
 * attach, hello, configure (the last boot's trace, instance, clock, buffer,
 * tracer, events), meta, then running (START; its first clock sync and the
 * full metadata come while it records), stopping (STOP sent), draining
 * (STOPPED seen, pages still arriving), finishing (final sync, metadata,
 * bye), done; or failed at any point. The setup's steps are a table
 * (session-setup.c), and so are the moves between states (session-life.c):
 * every move is made by guest_set_state(), which refuses any other as an
 * internal error. A move marked [may wait] is a stop that waits for an
 * exchange under way (g->stop.deferred); from hello it is taken once the
 * takeover made the guest running.
 *
 * State diagram (guest_transitions[], tests/unit/test-guest-life checks it):
 *   new       -> hello     the control port is open: HELLO
 *   hello     -> configure the agent answered: configure
 *   hello     -> running   --incoming: the agent's session taken over
 *   hello     -> stopping  a stop waits for the takeover, then runs [may wait]
 *   configure -> meta      configured: the setup's metadata
 *   meta      -> running   the agent records (START)
 *   running   -> stopping  STOP sent (after the metadata under way) [may wait]
 *   running   -> draining  migrated out: draining its ports
 *   stopping  -> draining  STOPPED: its last pages
 *   draining  -> draining  migrated out while draining
 *   draining  -> finishing every byte in: final sync, metadata, BYE
 *   draining  -> done      migrated out: drained
 *   finishing -> draining  migrated out while finishing
 *   finishing -> done      BYE answered
 *   new       -> failed    dropped
 *   hello     -> failed    dropped
 *   configure -> failed    dropped
 *   meta      -> failed    dropped
 *   running   -> failed    dropped
 *   stopping  -> failed    dropped
 *   draining  -> failed    dropped
 *   finishing -> failed    dropped
 * (end of the diagram)
 */

int session_begin(struct guest *g);
void session_stop(struct guest *g);
bool session_finished(const struct guest *g);
void session_release(struct guest *g);
void session_dispatch(struct guest *g);
const char *session_state_name(enum guest_state s);
const char *session_doing(const struct guest *g);
void session_fail(struct guest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* session-save.c: the guest's files in its spool directory */
int spool_save_state(const struct guest *g);
int spool_save_sync(const struct guest *g);
int spool_save_agent(const struct guest *g);
int spool_save_migration(const struct guest *g);

#endif
