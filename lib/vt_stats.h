/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `key: value` lines of a ring buffer's per_cpu/cpuN/stats, and of the
 * agent's STATS text that carries them with lines of its own: the agent
 * reads its ring's, the collector the text a guest sent.
 */
#ifndef VT_STATS_H
#define VT_STATS_H

#include <stdint.h>

const char *vt_stats_line(const char *text, const char *key);
uint64_t vt_stats_u64(const char *text, const char *key);

#endif
