/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * KVM's TSC offset writes for one QEMU, as they happen (tscwatch.c): the
 * event kvm:kvm_write_tsc_offset in a private tracefs instance.
 */
#ifndef RECORD_TSCWATCH_H
#define RECORD_TSCWATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tscwatch;

/**
 * struct tscwatch_change - one kvm_write_tsc_offset
 * @tsc: host TSC when KVM wrote it (the instance's x86-tsc clock)
 * @vcpu: the vCPU's id
 * @prev: the offset until then
 * @next: the offset from then on
 */
struct tscwatch_change {
	uint64_t tsc;
	uint32_t vcpu;
	int64_t prev;
	int64_t next;
};

struct tscwatch *tscwatch_start(pid_t qemu_pid, const char *tag, char *why, size_t why_len);
int tscwatch_read(struct tscwatch *w, struct tscwatch_change **changes, size_t *nr);
uint64_t tscwatch_from(const struct tscwatch *w);
uint64_t tscwatch_lost(const struct tscwatch *w);
const char *tscwatch_name(const struct tscwatch *w);
void tscwatch_free(struct tscwatch *w);

#endif
