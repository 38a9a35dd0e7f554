/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of the clock sync share (sync.c: probes and bursts,
 * sync-kvm.c: the kvm method, sync-check.c: --sync-check). Not an interface:
 * nothing outside record/ may call them (record/'s CPPFLAGS define
 * VT_RECORD_INTERNAL, no other folder's do).
 */
#ifndef RECORD_SYNC_INT_H
#define RECORD_SYNC_INT_H

#ifndef VT_RECORD_INTERNAL
#error "sync-int.h is record/'s own: include record/sync.h"
#endif

#include <stdint.h>

#include "sync.h"
#include "vt_tsync.h"

struct guest;
struct record_opts;
struct tscwatch_change;

/* How often the offsets are looked at: the events every 200 ms, debugfs every second. */
#define KVM_POLL_NS		(200 * 1000000ull)
#define KVM_REREAD_NS		(1000 * 1000000ull)
/* ... and again this soon when a read found a buffer a quarter full (tscwatch_busy()). */
#define KVM_BUSY_NS		(20 * 1000000ull)
/* Replies are checked once the instance was read this long after them. */
#define CHECK_SETTLE_NS		(50 * 1000000ull)

/* The index of the epoch in force at @host (the first one for earlier times). */
static inline uint32_t sync_epoch_index(const struct vt_tsync_cpu *c, uint64_t host)
{
	return (uint32_t)(vt_tsync_cpu_at(c, host) - c->epochs);
}

/* sync.c */
int sync_save(const struct guest *g);
void sync_set_method(struct guest *g, const char *method, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* sync-kvm.c */
int sync_kvm(struct guest *g, const struct record_opts *o, const char *when);
void sync_kvm_poll(struct guest *g);
void sync_kvm_apply(struct guest *g, const struct tscwatch_change *ch);

/* sync-check.c */
int sync_check_add(struct guest *g, unsigned int cpu, const struct vt_tsync_sample *smp,
		   unsigned int n);
void sync_check_eval(struct guest *g, uint64_t upto);

#endif
