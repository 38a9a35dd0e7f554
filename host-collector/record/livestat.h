/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record --live-stat (livestat.c): once a second of host time, each guest's
 * vCPUs' time over that second, from the host's events as the live view
 * merges them, by report --vcpus' own state machine.
 */
#ifndef RECORD_LIVESTAT_H
#define RECORD_LIVESTAT_H

#include <stdint.h>
#include <stdio.h>

struct livestat;
struct tep_handle;
struct tep_record;

struct livestat *livestat_new(FILE *out, uint64_t per_sec, uint64_t per_us);
void livestat_free(struct livestat *ls);
int livestat_add_guest(struct livestat *ls, const char *name, const uint32_t *tids, unsigned int nr);
unsigned int livestat_vcpus(const struct livestat *ls);
void livestat_host(struct livestat *ls, struct tep_handle *tep, struct tep_record *rec, int cpu);

/*
 * What the live view calls, through pointers: live.c (linked by tests that
 * need no analysis) does not pull report --vcpus' analysis in; record.c,
 * which asks for the table, does.
 */
struct livestat_ops {
	struct livestat *(*new)(FILE *out, uint64_t per_sec, uint64_t per_us);
	void (*free)(struct livestat *ls);
	int (*add_guest)(struct livestat *ls, const char *name, const uint32_t *tids,
			 unsigned int nr);
	void (*host)(struct livestat *ls, struct tep_handle *tep, struct tep_record *rec, int cpu);
	unsigned int (*vcpus)(const struct livestat *ls);
};

extern const struct livestat_ops livestat_ops;

#endif
