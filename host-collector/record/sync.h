/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest's clock (sync.c): KVM's TSC offsets, probe bursts or a given offset
 * turned into epochs.
 */
#ifndef RECORD_SYNC_H
#define RECORD_SYNC_H

#include <stdint.h>

#include "vt_tsync.h"

struct guest;
struct record_opts;

int sync_prepare(struct guest *g, const struct record_opts *o, const char *when);
int sync_probe_result(struct guest *g, unsigned int cpu, const struct vt_tsync_sample *smp,
		      unsigned int n);
void sync_burst_done(struct guest *g, const char *when);
uint64_t sync_host_tsc(void);
int sync_kvm_begin(struct guest *g, const struct record_opts *o);
uint64_t sync_kvm_period_ns(const struct guest *g);
void sync_kvm_tick(struct guest *g);
void sync_kvm_end(struct guest *g);
void sync_reset(struct guest *g, uint64_t at);
void sync_reset_settled(struct guest *g);
void sync_release(struct guest *g);

#endif
