/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record --trigger-guest-filter: the guest's agent watches an event with a
 * kernel filter (WATCH) and says when one matches (TRIGGER); record bounds
 * what it takes and hands each trigger on (--trigger-fd: the daemon), and
 * QMP's GUEST_PANICKED with them.
 */
#ifndef RECORD_TRIGGER_GUEST_H
#define RECORD_TRIGGER_GUEST_H

#include <stdbool.h>

#include "recopts.h"
#include "vt_proto.h"

struct guest;

/* The host takes at most one TRIGGER per this, the agent's interval (WATCH). */
#define TRIG_GUEST_INTERVAL_MS	1000u

int trig_guest_parse(struct record_opts *o, const char *spec);
int trig_guest_fd(struct record_opts *o, const char *arg);
bool trig_guest_applies(struct guest *g);
int trig_guest_encode(struct guest *g);
void trig_guest_rewatched(struct guest *g, int err);
int trig_guest_got(struct guest *g, const struct vt_proto_msg *m);
void trig_guest_panic(struct guest *g, const char *action);

#endif
