/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whether this host's /dev/kvm can run a stock guest (kvmcheck.c). */
#ifndef SETUP_KVMCHECK_H
#define SETUP_KVMCHECK_H

#include <stdbool.h>
#include <stddef.h>

#define KVMCHECK_DEVICE		"/dev/kvm"

/**
 * struct kvmcheck - what kvmcheck_run() found
 * @usable: /dev/kvm created a VM and is served by a hardware vendor module
 * @module: the vendor module behind it (kvm_intel, kvm_amd, kvm_pvm), or ""
 * @reason: when not @usable, why, in one sentence for the user
 */
struct kvmcheck {
	bool usable;
	char module[16];
	char reason[512];
};

int kvmcheck_run(const char *device, const char *sysfs, const char *cpuinfo, struct kvmcheck *k);

#endif
