/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record --live (live.c): the host's and the guests' events printed as they
 * arrive, merged in time order through a reorder window, in trace-cmd
 * report's line format, by a thread of their own that taps the pages the
 * streams spool.
 */
#ifndef RECORD_LIVE_H
#define RECORD_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vt_tsync.h"

struct live;
struct livestat_ops;
struct host_tsc;

#define LIVE_WINDOW_MS		500u	/* --live without =MS */
#define LIVE_WINDOW_MAX_MS	60000u

unsigned int live_flush_ms(unsigned int window_ms);
struct live *live_new(unsigned int window_ms, const struct host_tsc *tsc, FILE *out);
int live_add_trace(struct live *l, const char *file, bool host);
void live_set_dir(struct live *l, unsigned int trace, int spool_dir);
int live_set_stat(struct live *l, const struct livestat_ops *ops, bool lines);
int live_set_vcpus(struct live *l, unsigned int trace, const uint32_t *tids, unsigned int nr);
int live_start(struct live *l);
void live_page(struct live *l, unsigned int trace, unsigned int cpu, const uint8_t *page,
	       uint32_t size, uint32_t events);
void live_meta(struct live *l, unsigned int trace);
void live_clock(struct live *l, unsigned int trace, const struct vt_tsync_cpu *cpus,
		unsigned int nr_cpus, uint64_t host_end);
void live_end(struct live *l);

#endif
