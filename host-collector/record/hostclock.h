/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host's clocks, read by the collector only: the KVM debugfs reader
 * (kvm.c) and the host TSC rate for TSC2NSEC (tscrate.c). The clock models
 * they feed are lib/vt_tsync.h's.
 */
#ifndef VT_HOSTCLOCK_H
#define VT_HOSTCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vt_tsync.h"

/* KVM debugfs: <debugfs>/kvm/<pid>-<fd>/vcpuN/{tsc-offset,...} */
#define VT_KVM_MAX_VCPUS	4096u

/**
 * struct vt_kvm_vcpu - what debugfs says about one vCPU
 * @id: the N of vcpuN
 * @map: tsc-offset, and the scaling ratio when the files exist
 * @has_scaling: tsc-scaling-ratio and its frac bits were present
 */
struct vt_kvm_vcpu {
	uint32_t id;
	struct vt_tsc_map map;
	bool has_scaling;
};

int vt_kvm_find_vm(const char *debugfs, pid_t pid, char *dir, size_t len);
int vt_kvm_read_vcpu(const char *vmdir, uint32_t id, struct vt_kvm_vcpu *v);
int vt_kvm_read_vm(const char *vmdir, struct vt_kvm_vcpu *v, uint32_t max, uint32_t *nr);

/**
 * struct host_tsc - the host TSC rate and the TSC2NSEC triple that goes with it
 * @khz: TSC ticks per millisecond
 * @mult: ns = (ticks * mult) >> shift
 * @shift: see @mult
 * @method: how @khz was obtained
 */
struct host_tsc {
	uint64_t khz;
	uint32_t mult;
	uint32_t shift;
	char method[64];
};

void host_tsc_rate(struct host_tsc *t);
const char *vt_tsc_rate_method_name(enum vt_tsc_rate_method m);
int vt_tsc2nsec_from_perf(struct vt_tsc2nsec *t);
int vt_tsc2nsec_calibrate(struct vt_tsc2nsec *t, unsigned int ms);
int vt_tsc2nsec_boot(struct vt_tsc2nsec *t, unsigned int calibrate_ms, const char *dir);
int vt_tsc2nsec_get(struct vt_tsc2nsec *t, unsigned int calibrate_ms);

/* Where a boot's calibrated TSC rate is kept (tmpfs: gone at the next boot). */
#ifndef VT_TSC_RATE_DIR
#define VT_TSC_RATE_DIR		"/run/virtio-trace"
#endif

#endif
