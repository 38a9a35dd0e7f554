/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record --hold, the flight recorder (hold.c): rings that overwrite, read
 * once at the stop; what the guest's agent must offer, what the host's
 * recorder does meanwhile, and the span of time the kept events cover.
 */
#ifndef RECORD_HOLD_H
#define RECORD_HOLD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct guest;
struct record_opts;

uint32_t hold_start_flags(const struct guest *g);
bool hold_refused(struct guest *g);
void hold_wait(atomic_bool *stopping);
int hold_usage(const struct record_opts *o);

#endif
