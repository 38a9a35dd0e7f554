/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record --hold, the flight recorder (hold.c): rings that overwrite, read
 * once at the stop; what the guest's agent must offer and what the host's
 * recorder does meanwhile (the kept events' span: stream.c).
 */
#ifndef RECORD_HOLD_H
#define RECORD_HOLD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

uint32_t hold_start_flags(bool hold);
const char *hold_missing(bool hold, uint64_t caps);
void hold_wait(atomic_bool *stopping);
int hold_usage(bool hold, unsigned int live_ms, bool incoming);

#endif
