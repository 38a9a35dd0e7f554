/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Guest/host clock models: the KVM TSC formula and its exact inverse and
 * per-vCPU epochs (tsync-map.c), the probe estimator (tsync-est.c),
 * TIME_SHIFT tables for trace-cmd (tsync-timeshift.c), reading the TSC and
 * the TSC2NSEC arithmetic (tsync-tsc.c). Host-only I/O (the KVM debugfs
 * reader, finding the host TSC rate) is host-collector/hostclock.h's.
 *
 * All TSC values are raw counter ticks. A mapping between the two clocks is
 * always stored in KVM's direction:
 *
 *	guest = ((host * ratio) >> frac_bits) + offset	(128-bit product)
 *
 * ratio == 1 << frac_bits means no scaling. Nothing here prints or exits.
 */
#ifndef VT_TSYNC_H
#define VT_TSYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vt_tracedat.h"

/* Fraction bits KVM uses: VMX (Intel) 48, SVM (AMD) 32. */
#define VT_TSC_FRAC_INTEL	48u
#define VT_TSC_FRAC_AMD		32u
#define VT_TSC_FRAC_MAX		63u

/**
 * struct vt_tsc_map - one guest TSC mapping, KVM's formula
 * @offset: tsc-offset (signed, added after scaling)
 * @ratio: tsc-scaling-ratio; 1 << @frac_bits for no scaling; never 0
 * @frac_bits: tsc-scaling-ratio-frac-bits, at most VT_TSC_FRAC_MAX
 */
struct vt_tsc_map {
	int64_t offset;
	uint64_t ratio;
	uint32_t frac_bits;
};

bool vt_tsc_map_valid(const struct vt_tsc_map *m);
bool vt_tsc_map_scaled(const struct vt_tsc_map *m);
bool vt_tsc_map_equal(const struct vt_tsc_map *a, const struct vt_tsc_map *b);
int vt_tsc_host_to_guest(const struct vt_tsc_map *m, uint64_t host, uint64_t *guest);
int vt_tsc_guest_to_host(const struct vt_tsc_map *m, uint64_t guest, uint64_t *host);

/* Where an epoch's mapping came from, best first. */
enum vt_tsync_source {
	VT_TSYNC_SRC_NONE = 0,
	VT_TSYNC_SRC_KVM,	/* KVM debugfs: exact offset, read at some moment */
	VT_TSYNC_SRC_PROBE,	/* in-band probes: bounded */
	VT_TSYNC_SRC_USER,	/* --tsc-offset: as good as the user */
	VT_TSYNC_SRC_KVM_EVENT,	/* kvm:kvm_write_tsc_offset: exact offset at its exact moment */
};

const char *vt_tsync_source_name(enum vt_tsync_source s);

/* vt_tsync_epoch.flags */
#define VT_TSYNC_EPOCH_DRIFT	(1u << 0)	/* the ratio is a fitted drift */
#define VT_TSYNC_EPOCH_UNSEEN	(1u << 1)	/* the mapping changed at a moment not seen while it
						   held: @error covers the change */

/**
 * struct vt_tsync_epoch - one piece of a vCPU's clock mapping
 * @host_from: first host TSC this mapping holds for (until the next epoch)
 * @map: the mapping
 * @source: where it came from
 * @flags: VT_TSYNC_EPOCH_DRIFT
 * @error: bound on |true guest - mapped guest| in ticks (0: exact)
 * @min_rtt: probes: the smallest round trip behind @error, else 0
 * @first_reply: probes: host TSC of the earliest reply behind it; KVM
 *	debugfs: when the read that gave it ended; else 0
 * @since: the mapping changed to this one at an unknown moment in
 *	(@since, @host_from]: the previous epoch's events in that stretch may be
 *	off (its @error covers them); 0 when the moment is @host_from itself or
 *	unknown altogether (the first epoch)
 */
struct vt_tsync_epoch {
	uint64_t host_from;
	struct vt_tsc_map map;
	enum vt_tsync_source source;
	uint32_t flags;
	uint64_t error;
	uint64_t min_rtt;
	uint64_t first_reply;
	uint64_t since;
};

#define VT_TSYNC_MAX_EPOCHS	16384u

/**
 * struct vt_tsync_cpu - the epochs of one vCPU, in host time order
 * @epochs: the epochs
 * @nr: how many
 * @cap: allocated entries (private)
 */
struct vt_tsync_cpu {
	struct vt_tsync_epoch *epochs;
	uint32_t nr;
	uint32_t cap;
};

int vt_tsync_cpu_update(struct vt_tsync_cpu *c, const struct vt_tsync_epoch *e);
int vt_tsync_cpu_insert(struct vt_tsync_cpu *c, const struct vt_tsync_epoch *e);
const struct vt_tsync_epoch *vt_tsync_cpu_at(const struct vt_tsync_cpu *c, uint64_t host);
uint32_t vt_tsync_cpu_until(const struct vt_tsync_cpu *c, uint64_t host_end);
void vt_tsync_cpu_free(struct vt_tsync_cpu *c);

/**
 * struct vt_tsync_sample - one probe
 * @t1: host TSC read just before the probe was sent
 * @t2: host TSC read just after the reply arrived
 * @g: guest TSC the agent read in between
 * @cpu: the vCPU the agent says it read @g on
 * @want_cpu: the vCPU the probe was meant for
 */
struct vt_tsync_sample {
	uint64_t t1;
	uint64_t t2;
	uint64_t g;
	int32_t cpu;
	int32_t want_cpu;
};

#define VT_TSYNC_MAX_DRIFT_PPM	1000.0	/* default limit for a fitted drift */

/**
 * struct vt_tsync_est_opts - estimator knobs (zeroed: defaults)
 * @max_drift_ppm: largest |drift| considered; 0 for VT_TSYNC_MAX_DRIFT_PPM
 * @no_drift: never fit drift (an inconsistent set is then -ERANGE)
 */
struct vt_tsync_est_opts {
	double max_drift_ppm;
	bool no_drift;
};

/**
 * struct vt_tsync_estimate - what a set of probes says
 * @host_from: earliest t1 used
 * @host_to: latest t2 used
 * @first_reply: earliest t2 used (after a stop: the first reply of the new offset)
 * @ref_host: the host time the offsets below are given at
 * @offset_lo: lowest guest - host at @ref_host the probes allow
 * @offset_hi: highest guest - host at @ref_host the probes allow
 * @offset: the estimate, guest - host at @ref_host
 * @bound: max(@offset - @offset_lo, @offset_hi - @offset), in ticks
 * @drift_fitted: the probes prove a drift (0 lies outside its interval)
 * @drift_ppm: the drift used (0 unless @drift_fitted)
 * @drift_lo_ppm: lowest drift the probes allow
 * @drift_hi_ppm: highest drift the probes allow
 * @min_rtt: smallest t2 - t1 used
 * @used: probes used
 * @rejected: probes dropped (wrong CPU, t2 < t1, absurd guest time)
 * @consistent: a constant offset (or an offset with drift) fits every probe
 */
struct vt_tsync_estimate {
	uint64_t host_from;
	uint64_t host_to;
	uint64_t first_reply;
	uint64_t ref_host;
	int64_t offset_lo;
	int64_t offset_hi;
	int64_t offset;
	uint64_t bound;
	bool drift_fitted;
	double drift_ppm;
	double drift_lo_ppm;
	double drift_hi_ppm;
	uint64_t min_rtt;
	uint32_t used;
	uint32_t rejected;
	bool consistent;
};

int vt_tsync_estimate(const struct vt_tsync_sample *s, size_t n,
		      const struct vt_tsync_est_opts *o, struct vt_tsync_estimate *e);
int vt_tsync_estimate_split(const struct vt_tsync_sample *s, size_t n,
			    const struct vt_tsync_est_opts *o, struct vt_tsync_estimate *e,
			    size_t max, size_t *nr);
int vt_tsync_estimate_epoch(const struct vt_tsync_estimate *e, struct vt_tsync_epoch *ep);

/**
 * struct vt_tsync_tshift - one guest CPU's TIME_SHIFT samples
 * @nr: samples
 * @times: guest TSC where each sample starts to hold
 * @offsets: offsets trace-cmd adds
 * @scalings: multipliers
 * @frac_bits: shifts after the multiply
 * @max_error: bound on |trace-cmd's host time - exact host time| inside the
 *	covered range, in host ticks
 */
struct vt_tsync_tshift {
	uint32_t nr;
	int64_t *times;
	int64_t *offsets;
	int64_t *scalings;
	int64_t *frac_bits;
	uint64_t max_error;
};

#define VT_TSYNC_TSHIFT_MAX	65536u	/* samples per CPU we produce at most */

bool vt_tsync_needs_interpolate(const struct vt_tsync_cpu *cpus, uint32_t nr_cpus);
int vt_tsync_tshift_build(const struct vt_tsync_epoch *epochs, uint32_t nr, uint64_t host_end,
			  bool interpolate, struct vt_tsync_tshift *ts);
int vt_tsync_tshift_apply(const struct vt_tsync_tshift *ts, bool interpolate, uint64_t guest,
			  uint64_t *host);
void vt_tsync_tshift_view(const struct vt_tsync_tshift *ts, struct vt_tracedat_tshift_cpu *v);
void vt_tsync_tshift_free(struct vt_tsync_tshift *ts);

/* How the host TSC rate was found. */
enum vt_tsc_rate_method {
	VT_TSC_RATE_NONE = 0,
	VT_TSC_RATE_PERF,	/* perf mmap page time_mult/time_shift */
	VT_TSC_RATE_CALIBRATED,	/* measured against CLOCK_MONOTONIC_RAW */
	VT_TSC_RATE_BOOT,	/* measured once in this boot, shared by every recording */
};

/**
 * struct vt_tsc2nsec - host TSC to nanoseconds, trace-cmd's TSC2NSEC option
 * @mult: ns = (tsc * mult) >> shift; below 2^31 (trace-cmd reads an int)
 * @shift: at most 32 (trace-cmd's mul_u64_u32_shr needs it)
 * @offset: written in the option; trace-cmd 3.1.6 to 3.4 ignore it: 0
 * @hz: the rate those stand for, ticks per second
 * @method: where it came from
 */
struct vt_tsc2nsec {
	uint32_t mult;
	uint32_t shift;
	uint64_t offset;
	uint64_t hz;
	enum vt_tsc_rate_method method;
};

int vt_tsc2nsec_fit(struct vt_tsc2nsec *t, uint64_t mult, uint32_t shift);
int vt_tsc2nsec_from_hz(struct vt_tsc2nsec *t, uint64_t hz);
uint64_t vt_tsc2nsec_apply(const struct vt_tsc2nsec *t, uint64_t tsc);

uint64_t vt_tsc_read(void);
int vt_tsc_read_cpu(uint64_t *tsc, uint32_t *cpu);

#endif
