/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * KVM's TSC offset writes for one QEMU, as they happen (tscwatch.c): the
 * event kvm:kvm_write_tsc_offset in a private tracefs instance.
 */
#ifndef RECORD_TSCWATCH_H
#define RECORD_TSCWATCH_H

#include <stdbool.h>
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

/**
 * struct tscwatch_stats - how a watch's reads went
 * @reads: tscwatch_read() calls
 * @busy: reads that found a buffer a quarter full (after a calm one)
 * @max_pages: the most pages one CPU gave in one read
 * @max_gap_ns: the longest time between two reads
 * @max_kb: the largest per-CPU buffer, KiB
 */
struct tscwatch_stats {
	uint64_t reads;
	uint64_t busy;
	unsigned int max_pages;
	uint64_t max_gap_ns;
	unsigned int max_kb;
};

struct tscwatch *tscwatch_start(pid_t qemu_pid, const char *tag, char *why, size_t why_len);
struct tscwatch *tscwatch_open(int ifd, const char *name, char *why, size_t why_len);
int tscwatch_read(struct tscwatch *w, struct tscwatch_change **changes, size_t *nr);
bool tscwatch_busy(const struct tscwatch *w);
unsigned int tscwatch_peak(const struct tscwatch *w);
unsigned int tscwatch_buffer_kb(const struct tscwatch *w, unsigned int cpu);
unsigned int tscwatch_grows(const struct tscwatch *w);
void tscwatch_get_stats(const struct tscwatch *w, struct tscwatch_stats *st);
uint64_t tscwatch_from(const struct tscwatch *w);
uint64_t tscwatch_lost(const struct tscwatch *w);
const char *tscwatch_name(const struct tscwatch *w);
void tscwatch_free(struct tscwatch *w);

#endif
