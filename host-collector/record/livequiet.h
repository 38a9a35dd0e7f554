/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The live view's own feedback (livequiet.c): the collector's and the
 * view's terminal's host events, which the view leaves out.
 */
#ifndef RECORD_LIVEQUIET_H
#define RECORD_LIVEQUIET_H

#include <stdbool.h>
#include <stddef.h>

struct live_quiet;

struct live_quiet *live_quiet_new(int out_fd);
void live_quiet_free(struct live_quiet *q);
bool live_quiet_has(struct live_quiet *q, int pid);
void live_quiet_note_threads(struct live_quiet *q);
void live_quiet_describe(const struct live_quiet *q, char *buf, size_t len);

#endif
